"""The force methods of the spatial builder (`jaxmbs.SpatialModel`): joint springs and actuators, armature, springs, bushings, loads and contacts."""
from __future__ import annotations

import numpy as np

from ..core import build as B
from ..core.build import GROUND, recorded
from . import families as _families  # noqa: F401  (registers the spatial families)
from . import forces as _forces  # noqa: F401
from .inputs import _orientation, _quat_from_R, _R_from_quat, _unit3, _vec3


class ForceMethods:
    """Forces on joint coordinates and between bodies, loads and penalty contacts."""

    @recorded
    def add_armature(self, name, joint, inertia, motion=None) -> str:
        """Armature (reflected rotor inertia) on a joint coordinate x: adds the kinetic
        energy inertia * xdot^2 / 2 (kg m^2 on a revolute's angle, kg on a prismatic's
        displacement; cylindrical: motion 'angle' or 'displacement'), exactly as MuJoCo's
        joint `armature` (inertia added to the joint-space mass matrix, no velocity terms).

        Represented exactly in redundant coordinates by a rotor: one extra coordinate s
        with mass `inertia` (node family 'rotor', named `name`) and one row keeping s equal
        to the joint coordinate (family 'joint_rotor'; its multiplier, reported as the
        joint `name`'s reaction, is the rotor's inertial torque / force). Parameter
        '<name>.inertia'."""
        owner = f"armature {name!r}"
        kind, bi, bj, fields, c0 = self._joint_coordinate(owner, joint, motion, shared=True)
        a = B.positive(inertia, f"{owner}: inertia")
        self._new_name(name, "joint")
        self._rotors.append(dict(name=name, kind=kind, fi=bi, fj=bj,
                                 fields=dict(fields, offset=c0), inertia=a))
        self._add_joint(name, "armature", bi, bj, [("joint_rotor", len(self._rotors) - 1)])
        return name

    @recorded
    def add_axial_spring(self, name, joint, k, c=0.0, length=0.0, force=0.0, motion=None) -> str:
        """Spring-damper-actuator on a prismatic (or cylindrical) joint's displacement s (m,
        from the initial configuration, along the axis): F = k (s - length) + c sdot + force
        acting -F on body_j along the axis (+F on body_i). k N/m, c N s/m, force N."""
        owner = f"axial spring {name!r}"
        kind, bi, bj, fields, c0 = self._joint_coordinate(owner, joint, motion or "displacement",
                                                          allow=("displacement",), shared=True)
        k, c = B.finite(k, f"{owner}: k"), B.finite(c, f"{owner}: c")
        if k < 0 or c < 0:
            raise ValueError(f"{owner}: stiffness k and damping c must be >= 0, got k={k}, c={c}")
        L, f0 = B.finite(length, f"{owner}: length"), B.finite(force, f"{owner}: force")
        self._new_name(name, "force")
        self._add_force("axial3", name=name, fi=bi, fj=bj, a_i=fields["a_i"],
                        point_i=fields["point_i"], point_j=fields["point_j"], offset=c0, k=k, c=c,
                        length=L, force=f0)
        return name

    @recorded
    def add_joint_actuator(self, name, joint, control=None, gear=1.0, gain=1.0,
                           bias=(0.0, 0.0, 0.0), ctrlrange=None, forcerange=None, offset=0.0,
                           motion=None) -> str:
        """Actuator on a joint coordinate x (a revolute's angle, rad, a prismatic's
        displacement, m; both from the initial configuration; cylindrical: motion), in
        MuJoCo's form for joint transmissions:

          L = gear (x + offset), Ldot = gear xdot,
          u_c = clip(u[control], ctrlrange) (0 without a control channel),
          F = clip((g0 + g1 L + g2 Ldot) u_c + b0 + b1 L + b2 Ldot, forcerange),

        and the joint gets the generalised force gear * F (torque N m on body_j about the
        axis, or force N along it; the opposite on body_i). gain: g0 or (g0, g1, g2);
        bias: (b0, b1, b2); ctrlrange / forcerange: (low, high) or None (unlimited);
        offset: the value of the coordinate in the initial configuration in your
        convention (e.g. MuJoCo's qpos there). A motor is gain=1, a position servo
        gain=kp, bias=(0, -kp, -kv), a velocity servo gain=kv, bias=(0, 0, -kv)."""
        owner = f"joint actuator {name!r}"
        kind, bi, bj, fields, c0 = self._joint_coordinate(owner, joint, motion, shared=True)
        if control is not None and (isinstance(control, bool) or not isinstance(control, int)
                                    or control < 0):
            raise ValueError(f"{owner}: control must be a non-negative integer channel or None, "
                             f"got {control!r}")
        gr = B.finite(gear, f"{owner}: gear")
        g = np.asarray(gain, float).reshape(-1) if np.ndim(gain) else np.array([float(gain), 0, 0])
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"{owner}: gain must be a number or (g0, g1, g2), got {gain!r}")
        b = _vec3(bias, f"{owner}: bias")

        def rng(x, what):
            if x is None:
                return np.array([-np.inf, np.inf])
            a = np.asarray(x, float)
            if a.shape != (2,) or np.any(np.isnan(a)) or not a[0] <= a[1]:
                raise ValueError(f"{owner}: {what} must be (low, high) with low <= high, got {x!r}")
            return a
        off = B.finite(offset, f"{owner}: offset")
        self._new_name(name, "force")
        self._add_force("joint_actuator", name=name, fi=bi, fj=bj, **fields,
                        offset=off if kind == "hinge" else off - c0, gear=gr, gain=g, bias=b,
                        ctrlrange=rng(ctrlrange, "ctrlrange"), forcerange=rng(forcerange, "forcerange"),
                        control=-1 if control is None else control, kind=kind)
        return name

    @recorded
    def add_joint_limit(self, name, joint, range, inertia, solref=(0.02, 1.0),
                        solimp=(0.9, 0.95, 0.001, 0.5, 2.0), margin=0.0, offset=0.0,
                        reference_inertia=None, motion=None) -> str:
        """Limits lower <= y <= upper on a joint position y = x + offset (x: a revolute's
        angle, rad, or a prismatic's displacement, m, from the initial configuration;
        cylindrical: motion), each side a unilateral compliant law that follows MuJoCo's
        soft joint limit (MuJoCo's `range` with solref, solimp, margin):

          a side acts while dist < margin (dist = y - lower, or upper - y); with the
          violation r = dist - margin and v = +ydot (lower) or -ydot (upper), the
          reference acceleration a_ref = -B v - K d(r) r and R = (1 - d) / d / I_ref,
          it pushes the joint back with f = max(0, a_ref / (1 / inertia + R)), never
          pulling;

        d(r): MuJoCo's impedance of solimp = (dmin, dmax, width, midpoint, power);
        K = 1 / (dmax^2 timeconst^2 dampratio^2), B = 2 / (dmax timeconst) from
        solref = (timeconst s, dampratio) (or the direct form (-stiffness, -damping):
        K = stiffness / dmax^2, B = damping / dmax). inertia: the joint's effective
        inertia (kg m^2 for an angle, kg for a displacement: 1 / the joint's diagonal
        entry of the inverse joint-space mass matrix, armature included);
        reference_inertia I_ref: the one that scales MuJoCo's regulariser, MuJoCo's
        1 / dof_invweight0 (at qpos0, without armature; default: inertia). range:
        (lower, upper), lower < upper, in the convention of offset (the coordinate's
        value in the initial configuration in your convention, e.g. MuJoCo's qpos there;
        default 0: measured from the initial configuration); None leaves a side open
        (-inf / inf too, but model files hold finite numbers: save_model needs None).

        The approximation: MuJoCo's force is (a_ref - a0) / (A + R) with a0 the joint's
        acceleration from all other forces and A its current inverse inertia; this law
        takes a0 = 0 and A = 1 / inertia. An impact on the limit is close to MuJoCo's; a
        joint resting on its limit under a steady load sinks about 1 / (1 - d) times
        deeper than in MuJoCo (jaxmbs.spatial.limits). An angle wraps at +-pi from the
        initial configuration: the limit is right while the joint stays within half a
        revolution of it. MuJoCo clamps timeconst to at least 2 timesteps (its
        integrator safety); `from_mjcf` applies that clamp with the file's timestep.
        Force family 'joint_limit' (parameters '<name>.range', '.stiffness', ...)."""
        from .limits import solref_gains

        owner = f"joint limit {name!r}"
        kind, bi, bj, fields, c0 = self._joint_coordinate(owner, joint, motion, shared=True)
        if isinstance(range, (str, bytes)) or np.ndim(range) != 1 or len(range) != 2:
            raise ValueError(f"{owner}: range must be (lower, upper), got {range!r}")
        lo, hi = range
        try:
            lo = -np.inf if lo is None else float(lo)
            hi = np.inf if hi is None else float(hi)
        except (TypeError, ValueError):
            raise ValueError(f"{owner}: range must be two numbers (lower, upper), got {range!r}") from None
        if np.isnan(lo) or np.isnan(hi) or not lo < hi or (np.isinf(lo) and np.isinf(hi)):
            raise ValueError(f"{owner}: range must be (lower, upper) with lower < upper and at "
                             f"least one side finite (None or +-inf: open), got {range!r}")
        m_eff = B.positive(inertia, f"{owner}: inertia")
        m_ref = m_eff if reference_inertia is None else B.positive(
            reference_inertia, f"{owner}: reference_inertia")
        si = np.asarray(solimp, float).reshape(-1)
        if si.shape != (5,) or not np.all(np.isfinite(si)) or not (
                0 < si[0] < 1 and 0 < si[1] < 1 and si[2] >= 0 and 0 < si[3] < 1 and si[4] >= 1):
            raise ValueError(f"{owner}: solimp must be (dmin, dmax, width, midpoint, power) with "
                             f"dmin, dmax, midpoint in (0, 1), width >= 0, power >= 1, got {solimp!r}")
        sr = np.asarray(solref, float).reshape(-1)
        if sr.shape != (2,) or not np.all(np.isfinite(sr)) or not (
                (sr[0] > 0 and sr[1] > 0) or (sr[0] <= 0 and sr[1] <= 0 and np.any(sr < 0))):
            raise ValueError(f"{owner}: solref must be (timeconst, dampratio), both > 0, or the "
                             f"direct form (-stiffness, -damping), both <= 0, got {solref!r}")
        K, Bg = solref_gains(sr, si[1])
        mg = B.finite(margin, f"{owner}: margin")
        off = B.finite(offset, f"{owner}: offset")
        self._new_name(name, "force")
        self._add_force("joint_limit", name=name, fi=bi, fj=bj, **fields,
                        offset=off if kind == "hinge" else off - c0, range=np.array([lo, hi]),
                        margin=mg, stiffness=K, damping=Bg, solimp=si, inertia=m_eff, reference_inertia=m_ref,
                        kind=kind)
        return name

    @recorded
    def add_joint_coupling(self, name, joint1, joint2=None, polycoef=(0.0, 1.0, 0.0, 0.0, 0.0),
                           offset1=0.0, offset2=0.0, motion1=None, motion2=None) -> str:
        """Couple two joint coordinates (1 row, exact), MuJoCo's joint equality:

          x1 + offset1 = c0 + c1 y + c2 y^2 + c3 y^3 + c4 y^4,  y = x2 + offset2,

        x1, x2: the coordinates of joint1 and joint2 (revolute angle in (-pi, pi] or
        prismatic displacement, from the initial configuration; cylindrical: motion1 /
        motion2). Without joint2: x1 + offset1 = c0 (a locked joint). polycoef: up to 5
        coefficients (Params leaf '<name>.params'). A user constraint underneath
        (Jacobian and gamma by autodiff); its multiplier is reported as the reaction
        'generalized' of `name`. The angle wraps at +-pi from the initial configuration,
        so the coupling is exact while each coupled revolute turns less than half a
        revolution either way."""
        owner = f"joint coupling {name!r}"
        spec1 = self._joint_coordinate(owner, joint1, motion1)
        spec2 = None if joint2 is None else self._joint_coordinate(owner, joint2, motion2)
        c = np.asarray(polycoef, float).reshape(-1)
        if c.size == 0 or c.size > 5 or not np.all(np.isfinite(c)):
            raise ValueError(f"{owner}: polycoef must be 1 to 5 finite numbers, got {polycoef!r}")
        c = np.r_[c, np.zeros(5 - c.size)]
        o1, o2 = B.finite(offset1, f"{owner}: offset1"), B.finite(offset2, f"{owner}: offset2")
        self._new_name(name, "constraint")
        self._couplings.append(dict(name=name, specs=(spec1, spec2), polycoef=c, offsets=(o1, o2)))
        return name

    # ------------------------------------------------------------------ forces
    def _add_force(self, family, **inst):
        self._forces.setdefault(family, []).append(inst)

    @recorded
    def add_spring(self, name, body_i, body_j, k, c=0.0, length=None, force=0.0, at_i=None,
                   at_j=None, point_i=None, point_j=None) -> str:
        """Translational spring-damper-actuator between two points (coil-over): k N/m
        (>= 0), c N s/m (>= 0), free length m (default: the initial distance), constant
        actuator tension force N."""
        owner = f"spring {name!r}"
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at_i, point_i, "_i", "at_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j", "at_j")
        d0 = float(np.linalg.norm(self._global_point(body_j, sj) - self._global_point(body_i, si)))
        k, c = B.finite(k, f"{owner}: k"), B.finite(c, f"{owner}: c")
        if k < 0 or c < 0:
            raise ValueError(f"{owner}: stiffness k and damping c must be >= 0, got k={k}, c={c}")
        L = d0 if length is None else B.finite(length, f"{owner}: length")
        self._new_name(name, "force")
        self._add_force("spring3", name=name, fi=body_i, fj=body_j, point_i=si, point_j=sj,
                        k=k, c=c, length=L, force=B.finite(force, f"{owner}: force"))
        return name

    @recorded
    def add_torsion_spring(self, name, joint, k, c=0.0, angle=0.0, torque=0.0) -> str:
        """Torsion spring-damper-actuator on a revolute (or cylindrical) joint's rotation
        theta (rad, from the initial configuration, in (-pi, pi]): torque
        T = k (theta - angle) + c thetadot + torque acting -T on body_j about the axis.
        k N m/rad, c N m s/rad, torque N m."""
        owner = f"torsion spring {name!r}"
        if joint not in self._joint_geo or self._joint_geo[joint]["kind"] not in ("revolute", "cylindrical"):
            raise ValueError(f"{owner}: {joint!r} is not a revolute or cylindrical joint of this model")
        geo = self._joint_geo[joint]
        k, c = B.finite(k, f"{owner}: k"), B.finite(c, f"{owner}: c")
        if k < 0 or c < 0:
            raise ValueError(f"{owner}: stiffness k and damping c must be >= 0, got k={k}, c={c}")
        a0, t0 = B.finite(angle, f"{owner}: angle"), B.finite(torque, f"{owner}: torque")
        self._new_name(name, "force")
        f_i, g_i, f_j = self._geo(joint, "f_i", "g_i", "f_j")
        self._add_force("torsion3", name=name, fi=geo["bi"], fj=geo["bj"], f_i=f_i,
                        g_i=g_i, f_j=f_j, k=k, c=c, angle=a0, torque=t0)
        return name

    @recorded
    def add_bushing(self, name, body_i, body_j, k_translation, k_rotation, c_translation=0.0,
                    c_rotation=0.0, at=None, point_i=None, point_j=None, orientation=None) -> str:
        """Bushing: six-axis linear spring-damper between coincident, aligned markers on
        body_i and body_j at `at` (global initial) with axes `orientation` (quaternion or
        rotation matrix, global; default the global axes). k_translation N/m,
        k_rotation N m/rad, c_translation N s/m, c_rotation N m s/rad: numbers or (3,)
        per marker axis (>= 0)."""
        owner = f"bushing {name!r}"
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        qm = _orientation(orientation, f"{owner}: orientation")
        Rm = _R_from_quat(qm)
        Ri, Rj = self._frame(body_i, owner)[2], self._frame(body_j, owner)[2]
        vals = {}
        for key, arg, x in (("k_t", "k_translation", k_translation), ("k_r", "k_rotation", k_rotation),
                            ("c_t", "c_translation", c_translation), ("c_r", "c_rotation", c_rotation)):
            msg = f"{owner}: {arg} must be a number or 3 numbers (one per marker axis), finite and >= 0, got {x!r}"
            if isinstance(x, (bool, np.bool_, str, bytes)) or x is None:
                raise ValueError(msg)
            try:
                a = np.broadcast_to(np.asarray(x, float), (3,)).copy()
            except (TypeError, ValueError):
                raise ValueError(msg) from None
            if not np.all(np.isfinite(a)) or np.any(a < 0):
                raise ValueError(msg)
            vals[key] = a
        self._new_name(name, "force")
        self._add_force("bushing", name=name, fi=body_i, fj=body_j, point_i=si, point_j=sj,
                        r_i=_quat_from_R(Ri.T @ Rm), r_j=_quat_from_R(Rj.T @ Rm), **vals)
        return name

    @recorded
    def add_load(self, name, body, force=(0.0, 0.0, 0.0), torque=(0.0, 0.0, 0.0), at=None,
                 point=None, local=False, control=None, fn=None) -> str:
        """Applied force (3,) N at a point and torque (3,) N m on a body.

        local: False (global axes), True (both in body axes), or 'force' / 'torque' (that
        one in body axes). control: index of a control input u[control] scaling force and
        torque. fn: JAX function f(t) -> (6,) (force, torque; global axes) added."""
        owner = f"load {name!r}"
        if body == GROUND:
            raise ValueError(f"{owner}: a load on the ground does nothing; give a body")
        self._frame(body, owner)
        s = self._local(body, owner, at, point, "")
        B.control_channel(control, owner)
        if fn is not None and not callable(fn):
            raise ValueError(f"{owner}: fn must be a JAX function f(t) -> (fx, fy, fz, tx, ty, tz)")
        if local not in (True, False, "force", "torque"):
            raise ValueError(f"{owner}: local must be True, False, 'force' or 'torque', got {local!r}")
        f = _vec3(force, f"{owner}: force")
        tq = _vec3(torque, f"{owner}: torque")
        self._new_name(name, "force")
        self._add_force("load3", name=name, fi=GROUND, fj=body, point=s, force=f, torque=tq,
                        fn=fn, control=-1 if control is None else control,
                        floc=local in (True, "force"), tloc=local in (True, "torque"))
        return name

    @recorded
    def add_sphere_plane_contact(self, name, plane_body, sphere_body, radius, k,
                                 plane_point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0), center=None,
                                 center_local=None, exponent=1.5, damping=None,
                                 restitution=None, impact_velocity=None,
                                 damping_model="lankarani-nikravesh", friction=0.0,
                                 slip_velocity=1e-3) -> str:
        """Penalty contact of a sphere on sphere_body (centre `center` global initial or
        center_local; radius m) with the infinite plane of plane_body through plane_point
        with unit normal `normal` (global initial), the sphere on its + side. Contact law
        and friction arguments as in jaxmbs.Model.add_circle_line_contact (friction
        regularised as -mu F_n v_t / sqrt(|v_t|^2 + slip_velocity^2))."""
        owner = f"contact {name!r}"
        self._two(owner, plane_body, sphere_body)
        sj = self._local(sphere_body, owner, center, center_local, "", "center", "center_local")
        si = self._local(plane_body, owner, _vec3(plane_point, f"{owner}: plane_point"), None, "")
        ni = self._to_local(plane_body, _unit3(normal, f"{owner}: normal"))
        law = B.contact_law(owner, k, exponent, damping, restitution, impact_velocity,
                                damping_model, friction, slip_velocity)
        r = B.positive(radius, f"{owner}: radius")
        self._new_name(name, "force")
        self._add_force("sphere_plane", name=name, fi=plane_body, fj=sphere_body, point_i=si,
                        normal_i=ni, point_j=sj, radius=r, **law)
        return name

    @recorded
    def add_sphere_sphere_contact(self, name, body_i, body_j, radius_i, radius_j, k,
                                  at_i=None, at_j=None, point_i=None, point_j=None,
                                  exponent=1.5, damping=None, restitution=None,
                                  impact_velocity=None, damping_model="lankarani-nikravesh",
                                  friction=0.0, slip_velocity=1e-3) -> str:
        """Penalty contact between a sphere on body_i and one on body_j (external);
        centres at_i / at_j (global initial) or point_i / point_j (body coordinates)."""
        owner = f"contact {name!r}"
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at_i, point_i, "_i", "at_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j", "at_j")
        law = B.contact_law(owner, k, exponent, damping, restitution, impact_velocity,
                                damping_model, friction, slip_velocity)
        ri, rj = B.positive(radius_i, f"{owner}: radius_i"), B.positive(radius_j, f"{owner}: radius_j")
        self._new_name(name, "force")
        self._add_force("sphere_sphere", name=name, fi=body_i, fj=body_j, point_i=si,
                        point_j=sj, radius_i=ri, radius_j=rj, **law)
        return name
