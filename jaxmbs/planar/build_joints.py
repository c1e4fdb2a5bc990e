"""The joint and driver methods of the planar builder (`jaxmbs.Model`)."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import profiles as prof
from ..core import build as B
from ..core.build import GROUND, Same
from ..core.build import recorded as _recorded
from ..core.mechanism import FamilyBlock
from .geometry import rot2


def _vec2(x, what):
    return B.vector(x, 2, what)


_positive = B.positive
_finite = B.finite


_rot = rot2


class JointMethods:
    """Joints between planar bodies and particles, drivers, cams, gears and rolling."""

    # ------------------------------------------------------------------ joints
    @_recorded
    def add_revolute(self, name, body_i, body_j, at=None, point_i=None, point_j=None) -> str:
        """Pin joint: a point of body_i coincides with a point of body_j (2 equations).

        at: (2,) the joint's global position in the initial configuration (m);
        point_i / point_j: the point in body_i / body_j coordinates (m), overriding `at`
        for that body.
        Reaction reported: force on body_j from body_i (N).
        """
        if self._is_ffr(body_i) or self._is_ffr(body_j):
            return self._ffr_joint(name, "revolute", body_i, body_j, at, point_i, point_j)
        owner = f"revolute {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at, point_i, "_i")
        sj = self._local(body_j, owner, at, point_j, "_j")
        part = self._add_inst("coincident", body_i, body_j, name, point_i=si, point_j=sj)
        self._add_joint(name, "revolute", body_i, body_j, [part], point_ref=part)
        return name

    def _require_bodies(self, owner, kinds, bodies, hint):
        for k, b in zip(kinds, bodies):
            if k == "particle":
                raise ValueError(f"{owner}: {b!r} is a particle, which has no orientation; {hint}")

    @_recorded
    def add_prismatic(self, name, body_i, body_j, axis=(1.0, 0.0), at=None, point_i=None,
                      point_j=None, axis_i=None) -> str:
        """Slider: body_j translates along an axis fixed in body_i, no relative rotation (2 eqs).

        axis: (2,) slide direction in global coordinates in the initial configuration, or
        axis_i: the direction in body_i coordinates. at / point_i / point_j: a point on the
        axis (m). Reactions reported: normal force and moment on body_j.
        """
        owner = f"prismatic {name!r}"
        self._new_name(name, "joint")
        ki, kj = self._two(owner, body_i, body_j)
        self._require_bodies(owner, (ki, kj), (body_i, body_j),
                             "use add_point_on_line for a particle on a line")
        u = self._axis(owner, body_i, axis, axis_i)
        si = self._local(body_i, owner, at, point_i, "_i")
        sj = self._local(body_j, owner, at, point_j, "_j")
        n = np.array([-u[1], u[0]])
        p1 = self._add_inst("line", body_i, body_j, name, point_i=si, point_j=sj, direction=n,
                            profile=prof.constant(self._line_value(body_i, body_j, si, sj, n)))
        th0 = self._frame(body_j, owner)[1][2] - self._frame(body_i, owner)[1][2]
        p2 = self._add_inst("angle", body_i, body_j, name, profile=prof.constant(th0))
        self._add_joint(name, "prismatic", body_i, body_j, [p1, p2], point_ref=p1)
        self._joint_kind[name] += (dict(point_i=si, point_j=sj, axis=u),)
        return name

    @_recorded
    def add_point_on_line(self, name, body_i, body_j, axis=(1.0, 0.0), at=None, point_i=None,
                          point_j=None, axis_i=None) -> str:
        """A point of body_j stays on a line fixed in body_i (1 equation); rotation free.

        axis / axis_i: line direction (global initial / body_i coordinates); at / point_i: a
        point of the line; point_j: the point of body_j (m). Works for particles.
        """
        owner = f"point-on-line {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        u = self._axis(owner, body_i, axis, axis_i)
        si = self._local(body_i, owner, at, point_i, "_i")
        sj = self._local(body_j, owner, None if point_j is not None else at, point_j, "_j")
        n = np.array([-u[1], u[0]])
        p1 = self._add_inst("line", body_i, body_j, name, point_i=si, point_j=sj, direction=n,
                            profile=prof.constant(0.0))
        self._add_joint(name, "point_on_line", body_i, body_j, [p1], point_ref=p1)
        return name

    def _axis(self, owner, body_i, axis, axis_i, what="axis"):
        if axis_i is not None:
            u = _vec2(axis_i, f"{owner}: {what}_i")
        else:
            u = _rot(self._frame(body_i, owner)[1][2]).T @ _vec2(axis, f"{owner}: {what}")
        nrm = np.linalg.norm(u)
        if nrm < 1e-12:
            raise ValueError(f"{owner}: zero-length {what} {u}; give a nonzero direction vector")
        return u / nrm

    def _line_value(self, bi, bj, si, sj, w_local):
        _, qi = self._frame(bi, "")
        d = self._global(bj, sj) - self._global(bi, si)
        return float((_rot(qi[2]) @ w_local) @ d)

    @_recorded
    def add_weld(self, name, body_i, body_j, at=None, point_i=None, point_j=None) -> str:
        """Rigid connection: coincident points and fixed relative angle (3 equations)."""
        if self._is_ffr(body_i) or self._is_ffr(body_j):
            return self._ffr_joint(name, "weld", body_i, body_j, at, point_i, point_j)
        owner = f"weld {name!r}"
        self._new_name(name, "joint")
        ki, kj = self._two(owner, body_i, body_j)
        self._require_bodies(owner, (ki, kj), (body_i, body_j),
                             "a particle cannot be welded; use add_revolute")
        si = self._local(body_i, owner, at, point_i, "_i")
        sj = self._local(body_j, owner, at, point_j, "_j")
        p1 = self._add_inst("coincident", body_i, body_j, name, point_i=si, point_j=sj)
        th0 = self._frame(body_j, owner)[1][2] - self._frame(body_i, owner)[1][2]
        p2 = self._add_inst("angle", body_i, body_j, name, profile=prof.constant(th0))
        self._add_joint(name, "weld", body_i, body_j, [p1, p2], point_ref=p1)
        return name

    @_recorded
    def add_distance(self, name, body_i, body_j, at_i=None, at_j=None, point_i=None,
                     point_j=None, length=None) -> str:
        """Massless rod: |P_j - P_i| = length (1 equation).

        at_i / at_j (global, initial) or point_i / point_j (local): the two points, m.
        length: m, a number or a profile (a linear actuator); default: the initial distance.
        Reaction reported: rod force along P_i -> P_j on body_j (the multiplier is the
        rod's compression in N: positive pushes the points apart).
        """
        owner = f"distance {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at_i, point_i, "_i", "at_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j", "at_j")
        d0 = float(np.linalg.norm(self._global(bj := body_j, sj) - self._global(body_i, si)))
        if d0 < 1e-12:
            raise ValueError(
                f"{owner}: the two points coincide in the initial configuration; a distance "
                "constraint needs distinct points (use add_revolute for coincident points)"
            )
        if length is None:
            profile = prof.constant(d0)
        else:
            profile = prof.as_profile(length, f"{owner}: length")
            if profile.fn is None and profile == prof.constant(profile.coef[0]):
                _positive(profile.coef[0], f"{owner}: length")
        p1 = self._add_inst("distance", body_i, bj, name, point_i=si, point_j=sj, profile=profile)
        self._add_joint(name, "distance", body_i, body_j, [p1], point_ref=p1,
                        driver=profile.fn is not None or any(profile.coef[1:]) or profile.amp != 0)
        return name

    # ----------------------------------------------------------------- drivers
    @_recorded
    def drive_joint(self, name, joint, profile) -> str:
        """Prescribe a joint's relative motion as a function of time (1 equation).

        revolute: theta_j - theta_i = f(t) (rad); prismatic: displacement of body_j's point
        along the axis from body_i's point = f(t) (m). profile: number, jaxmbs profile or
        JAX function f(t). Effort reported: torque (N m) / force (N) that the driver applies
        to body_j in the direction of increasing f.
        """
        owner = f"driver {name!r}"
        self._new_name(name, "driver")
        if joint not in self._joint_kind:
            raise ValueError(f"{owner}: unknown joint {joint!r}; known: {', '.join(self._joint_kind)}")
        kind, bi, bj, parts, *extra = self._joint_kind[joint]
        profile = prof.as_profile(profile, f"{owner}: profile")
        if kind == "revolute":
            self._require_bodies(owner, (self._frame(bi, owner)[0], self._frame(bj, owner)[0]),
                                 (bi, bj), "an angle cannot be driven; drive a coordinate instead")
            part = self._add_inst("angle", bi, bj, name, profile=profile)
        elif kind == "prismatic":
            g = extra[0]
            pts = {f: Same("joints", parts[0], f) for f in ("point_i", "point_j")}  # (the joint's)
            part = self._add_inst("line", bi, bj, name, **pts, direction=g["axis"], profile=profile)
        else:
            raise ValueError(f"{owner}: joint {joint!r} is a {kind}; only revolute and prismatic "
                             "joints can be driven (use drive_coordinate or add_distance(length=f))")
        self._add_joint(name, "driver", bi, bj, [part], driver=True)
        return name

    @_recorded
    def drive_coordinate(self, name, body, coordinate, profile) -> str:
        """Prescribe an absolute coordinate ('x', 'y' of the reference point, m; 'theta', rad)
        of a body as f(t) (1 equation). Effort: force/torque applied along that coordinate."""
        owner = f"driver {name!r}"
        self._new_name(name, "driver")
        kind, _ = self._frame(body, owner)
        if body == GROUND:
            raise ValueError(f"{owner}: the ground cannot be driven")
        profile = prof.as_profile(profile, f"{owner}: profile")
        if coordinate == "theta":
            self._require_bodies(owner, (kind,), (body,), "it has no angle to drive")
            part = self._add_inst("angle", GROUND, body, name, profile=profile)
        elif coordinate in ("x", "y"):
            w = np.array([1.0, 0.0]) if coordinate == "x" else np.array([0.0, 1.0])
            part = self._add_inst("line", GROUND, body, name, point_i=np.zeros(2),
                                  point_j=np.zeros(2), direction=w, profile=profile)
        else:
            raise ValueError(f"{owner}: coordinate must be 'x', 'y' or 'theta', got {coordinate!r}")
        self._add_joint(name, "driver", GROUND, body, [part], driver=True)
        return name

    @_recorded
    def drive_angle(self, name, body, profile, relative_to=GROUND) -> str:
        """Prescribe theta_body - theta_relative_to = f(t) (rad); effort: torque on body (N m)."""
        owner = f"driver {name!r}"
        self._new_name(name, "driver")
        self._two(owner, relative_to, body)
        kinds = (self._frame(relative_to, owner)[0], self._frame(body, owner)[0])
        self._require_bodies(owner, kinds, (relative_to, body), "it has no angle to drive")
        part = self._add_inst("angle", relative_to, body, name, profile=prof.as_profile(profile, f"{owner}: profile"))
        self._add_joint(name, "driver", relative_to, body, [part], driver=True)
        return name

    @_recorded
    def add_cam(self, name, body_i, body_j, curve_i, curve_j, s_i=None, s_j=None) -> str:
        """Cam (curve-on-curve) joint: curve_i fixed in body_i and curve_j fixed in body_j
        stay in permanent, frictionless tangent contact (3 equations). Adds two extra,
        massless coordinates to q, the curve parameters '<name>.s_i' and '<name>.s_j'.

        curve_i, curve_j: `jaxmbs.curves` curves in body coordinates (m), or tuples
          ('circle', center, radius), ('line', point, direction), ('polynomial',
          coefficients), ('spline', points) -- see `jaxmbs.planar.curves`.
        s_i, s_j: initial curve parameters; by default the contact (or, for a gap, the
          closest approach with parallel tangents) in the initial configuration, found now.
          If the curves do not touch there, call `jaxmbs.assemble` before simulating.
        Reactions reported: 'force' (2,) on body_j at the contact point (N) and
        'normal_force' () = force . n_i (N), n_i the right-hand unit normal of curve_i
        (outward for a counter-clockwise closed curve): positive while body_i pushes body_j.
        The curve numbers are Params leaves '<name>.data_i', '<name>.data_j'.
        """
        from . import curves as _cv

        owner = f"cam {name!r}"
        self._new_name(name, "joint")
        ki, kj = self._two(owner, body_i, body_j)
        self._require_bodies(owner, (ki, kj), (body_i, body_j), "a curve needs a body (or the ground)")
        ci, cj = _cv.as_curve(curve_i, f"{owner}: curve_i"), _cv.as_curve(curve_j, f"{owner}: curve_j")
        si = None if s_i is None else _finite(s_i, f"{owner}: s_i")
        sj = None if s_j is None else _finite(s_j, f"{owner}: s_j")
        si, sj = _cv.initial_parameters(ci, cj, self._frame(body_i, owner)[1],
                                        self._frame(body_j, owner)[1], si, sj)
        self._cams.append(dict(name=name, fi=body_i, fj=body_j, curve_i=ci, curve_j=cj, s_i=si, s_j=sj))
        self._add_joint(name, "cam", body_i, body_j, [("cam", len(self._cams) - 1)])
        return name

    def _cam_block(self, row, fidx, ncoord):
        """Build-time data of the cam family: (FamilyBlock, params, rows per instance,
        extra names, extra q0) with the extra coordinates numbered from ncoord."""
        C = self._cams
        k = len(C)
        Di = max(len(c["curve_i"].data) for c in C)
        Dj = max(len(c["curve_j"].data) for c in C)
        pad = lambda d, D: np.r_[d, np.zeros(D - len(d))]
        p = {"data_i": jnp.asarray(np.array([pad(c["curve_i"].data, Di) for c in C])),
             "data_j": jnp.asarray(np.array([pad(c["curve_j"].data, Dj) for c in C]))}
        extra_cols = tuple((ncoord + 2 * i, ncoord + 2 * i + 1) for i in range(k))
        static = (tuple(c["curve_i"].code for c in C), tuple(c["curve_j"].code for c in C))
        blk = FamilyBlock("cam", tuple(fidx(c["fi"]) for c in C), tuple(fidx(c["fj"]) for c in C),
                          row, 3, tuple(c["name"] for c in C), (), extra_cols, static)
        names = tuple(f"{c['name']}.{w}" for c in C for w in ("s_i", "s_j"))
        q_extra = np.array([c[w] for c in C for w in ("s_i", "s_j")], float)
        where = {("cam", i): tuple(range(row + 3 * i, row + 3 * i + 3)) for i in range(k)}
        return blk, p, where, names, q_extra

    def _cam_rates(self, blk, p, q0, v0):
        """Initial (s_i_dot, s_j_dot) consistent with the bodies' initial velocities: the
        least-squares solution of the cam rows' velocity equations (numpy, build time)."""
        from .joints import Cam

        cam = Cam().evaluate

        cols = np.asarray(blk.extra_cols)
        qe, ve = np.append(q0, 0.0), np.append(v0, 0.0)
        fc = np.array([[len(q0)] * 3] + [[3 * b, 3 * b + 1, 3 * b + 2] for b in range(len(self._bodies))])
        Xi, Xj = qe[fc[list(blk.frames_i)]], qe[fc[list(blk.frames_j)]]
        Vi, Vj = ve[fc[list(blk.frames_i)]], ve[fc[list(blk.frames_j)]]
        S = qe[cols]
        _, Gi, Gj, _, Gs = cam(p, jnp.asarray(Xi), jnp.asarray(Xj), jnp.asarray(Vi), jnp.asarray(Vj),
                               jnp.asarray(S), jnp.zeros_like(jnp.asarray(S)), blk.static)
        rhs = -(np.einsum("krc,kc->kr", np.asarray(Gi), Vi) + np.einsum("krc,kc->kr", np.asarray(Gj), Vj))
        return np.concatenate([np.linalg.lstsq(np.asarray(Gs)[i], rhs[i], rcond=None)[0]
                               for i in range(len(self._cams))])

    # ------------------------------------------- gears, rolling and nonholonomic rows
    def _two_bodies(self, owner, body_i, body_j, hint):
        ki, kj = self._two(owner, body_i, body_j)
        self._require_bodies(owner, (ki, kj), (body_i, body_j), hint)
        return ki, kj

    @_recorded
    def add_gear(self, name, body_i, body_j, ratio) -> str:
        """Gear pair: theta_j - ratio * theta_i = const (1 equation; the constant is the
        initial value).

        ratio: signed speed ratio omega_j / omega_i (-): an external pair of pitch radii
        r_i, r_j has ratio = -r_i / r_j, an internal (ring) pair +r_i / r_j. The angles are
        absolute, so both gears must turn about axes that do not rotate (pivots on the
        ground or on a translating body); mount each gear with add_revolute. For gears on
        a rotating carrier use add_constraint with the relative angles.
        Params keys: '<name>.ratio', '<name>.offset' (rad). Reaction: the moment on
        body_j (N m) that the meshing transmits ('moment').
        """
        owner = f"gear {name!r}"
        self._new_name(name, "joint")
        self._two_bodies(owner, body_i, body_j, "a gear needs a rotating body")
        if GROUND in (body_i, body_j):
            raise ValueError(f"{owner}: a gear meshing with the ground locks the other gear; "
                             "give two bodies (use add_rack_pinion / add_rolling_disc for a "
                             "fixed rack or track)")
        tau = _finite(ratio, f"{owner}: ratio")
        if tau == 0.0:
            raise ValueError(f"{owner}: ratio must be nonzero (omega_j / omega_i)")
        off = self._frame(body_j, owner)[1][2] - tau * self._frame(body_i, owner)[1][2]
        part = self._add_inst("gear", body_i, body_j, name, ratio=tau, offset=off)
        self._add_joint(name, "gear", body_i, body_j, [part])
        return name

    def _pitch_line(self, owner, body_i, body_j, radius, axis, at, point_i, point_j, axis_i):
        """Local pitch-line point and axis on body_i (axis oriented so that the disc centre
        on body_j lies on its +perp(axis) side), local centre on body_j, radius, offset."""
        r = _positive(radius, f"{owner}: radius")
        u = self._axis(owner, body_i, axis, axis_i)
        sj = self._local(body_j, owner, None, point_j, "_j")
        Pj = self._global(body_j, sj)
        Ri = _rot(self._frame(body_i, owner)[1][2])
        if at is None and point_i is None:  # the contact point below the centre
            si = Ri.T @ (Pj - r * (Ri @ np.array([-u[1], u[0]])) - self._frame(body_i, owner)[1][:2])
        else:
            si = self._local(body_i, owner, at, point_i, "_i")
        d = Pj - self._global(body_i, si)
        if (Ri @ np.array([-u[1], u[0]])) @ d < 0:
            u = -u
        th = self._frame(body_j, owner)[1][2] - self._frame(body_i, owner)[1][2]
        off = float((Ri @ u) @ d + r * th)
        return dict(point_i=si, point_j=sj, axis=u, radius=r, offset=off)

    @_recorded
    def add_rack_pinion(self, name, rack, pinion, radius, axis=(1.0, 0.0), at=None,
                        point_i=None, point_j=None, axis_i=None) -> str:
        """Rack and pinion: s - r theta = const (1 equation), s the displacement of the
        pinion centre along the rack relative to the rack, theta the pinion's angle
        relative to the rack (exact no-slip of the pitch circle on the pitch line).

        rack: body (or 'ground') carrying the straight pitch line; pinion: body turning
        about its centre point_j (body coordinates, default its reference point, m).
        radius: pitch radius r, m (> 0). axis / axis_i: pitch-line direction (global
        initial / rack coordinates); at / point_i: a point of the pitch line (global
        initial / rack coordinates), default the contact point r below the centre.
        The pinion must be kept in mesh by other joints (e.g. revolute to the ground and a
        prismatic rack). Params keys '<name>.radius', '.axis', '.point_i', '.point_j',
        '.offset' (m). Reaction: the tangential tooth force on the pinion.
        """
        owner = f"rack-pinion {name!r}"
        self._new_name(name, "joint")
        ki, kj = self._two(owner, rack, pinion)
        self._require_bodies(owner, (kj,), (pinion,), "a pinion must be a rotating body")
        if ki == "particle":
            raise ValueError(f"{owner}: the rack {rack!r} is a particle; give a body or 'ground'")
        f = self._pitch_line(owner, rack, pinion, radius, axis, at, point_i, point_j, axis_i)
        part = self._add_inst("rack_pinion", rack, pinion, name, **f)
        self._add_joint(name, "rack_pinion", rack, pinion, [part], point_ref=part)
        return name

    @_recorded
    def add_rolling_disc(self, name, track, disc, radius, axis=(1.0, 0.0), at=None,
                         point_i=None, point_j=None, axis_i=None) -> str:
        """Disc rolling without slip on a straight line (2 equations): its centre stays at
        distance radius from the line, and x_c . u + r theta = const (the no-slip row of
        add_rack_pinion).

        track: body or 'ground' carrying the line; disc: body with centre point_j (body
        coordinates, default its reference point, m). radius: m (> 0). axis / axis_i:
        line direction (global initial / track coordinates); at / point_i: a point of the
        line, default the point r below the disc centre (perpendicular to axis). The disc
        may start off the line: call jaxmbs.assemble. Params keys '<name>.radius',
        '.axis', '.point_i', '.point_j', '.offset'. Reaction on the disc: contact force
        (normal and friction, N) and its moment about the centre.
        """
        owner = f"rolling disc {name!r}"
        self._new_name(name, "joint")
        ki, kj = self._two(owner, track, disc)
        self._require_bodies(owner, (kj,), (disc,), "a rolling disc must be a rotating body")
        if ki == "particle":
            raise ValueError(f"{owner}: the track {track!r} is a particle; give a body or 'ground'")
        f = self._pitch_line(owner, track, disc, radius, axis, at, point_i, point_j, axis_i)
        part = self._add_inst("rolling", track, disc, name, **f)
        self._add_joint(name, "rolling_disc", track, disc, [part], point_ref=part)
        return name

    @_recorded
    def add_knife_edge(self, name, body, at=None, point=None, axis=(1.0, 0.0), axis_local=None,
                       surface=GROUND) -> str:
        """Knife edge / wheel that cannot slide sideways (1 nonholonomic equation, velocity
        level only): the blade point's velocity across the blade vanishes,

            -sin(theta + alpha) pdot_x + cos(theta + alpha) pdot_y = 0

        (alpha: the blade axis angle in body coordinates; relative to the material point of
        `surface` under the blade when surface is a moving body).

        at / point: blade point, global initial / body coordinates (m; default the reference
        point). axis / axis_local: blade direction, global initial / body coordinates.
        It constrains velocities, not positions: assemble leaves it to the velocity step,
        dof() counts configuration freedoms (see constraint_report's 'velocity_dof').
        Params keys '<name>.point_j', '<name>.axis'. Reaction: the lateral force (N).
        """
        owner = f"knife edge {name!r}"
        self._new_name(name, "joint")
        ks, kb = self._two(owner, surface, body)
        self._require_bodies(owner, (kb,), (body,), "a knife edge needs an oriented body")
        if ks == "particle":
            raise ValueError(f"{owner}: the surface {surface!r} is a particle; give a body or 'ground'")
        s = self._local(body, owner, at, point, "")
        a = self._axis(owner, body, axis, axis_local)
        part = self._add_inst("knife_edge", surface, body, name, point_j=s, axis=a)
        self._add_joint(name, "knife_edge", surface, body, [part], point_ref=part)
        return name
