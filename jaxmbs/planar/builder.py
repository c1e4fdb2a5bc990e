"""The model builder: eager Python that validates everything and returns
(Mechanism, Params, q0, v0).

    m = jaxmbs.Model(gravity=(0, -9.81))
    m.add_body("crank", mass=0.36, inertia=..., position=(0.075, 0), cg=(0, 0))
    m.add_revolute("O", "ground", "crank", at=(0, 0))
    mech, params, q0, v0 = m.build()

Points may be given in global coordinates in the initial configuration (`at=`) or in
body coordinates (`point_i=`, `point_j=`). All inputs in SI units (m, kg, kg m^2, rad, s, N).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from .. import profiles as prof
from ..core import build as B
from ..core.build import GROUND, BuilderBase
from ..core.build import recorded as _recorded
from ..core.mechanism import FamilyBlock, ForceBlock, Mechanism, NodeBlock, Params
from ..flexible.build import BeamBuilder
from ..flexible.ffr_build import FfrBuilder
from . import families as _planar_families  # noqa: F401  (registers the planar families)

__all__ = ["Model", "Built"]

_CONTACT_FAMILIES = ("circle_line", "circle_circle", "circle_profile", "circle_terrain")


class Built(NamedTuple):
    """Result of `Model.build()`: unpack as `mech, params, q0, v0 = model.build()`."""

    mechanism: Mechanism
    params: Params
    q0: object
    v0: object


def _vec2(x, what):
    return B.vector(x, 2, what)


def _rot(th):
    c, s = math.cos(th), math.sin(th)
    return np.array([[c, -s], [s, c]])


_positive = B.positive
_finite = B.finite


class Model(FfrBuilder, BeamBuilder, BuilderBase):
    """Builder of a planar mechanism.

    Args:
      gravity: (2,) gravitational acceleration in m/s^2, default (0, -9.81).
    """

    def __init__(self, gravity=(0.0, -9.81)):
        self._init_base()
        self.gravity = _vec2(gravity, "gravity")
        self._bodies = {}  # name -> dict
        self._particles = {}
        self._inst = {}  # constraint family -> list of instance dicts (rows in registry order)
        self._joints = []  # dicts: name, kind, fi, fj, parts [(family, idx)], driver, point_ref
        self._springs, self._torsions, self._loads = [], [], []
        self._joint_kind = {}
        self._init_args = dict(gravity=self.gravity)
        self._cams = []  # cam joints: dicts name, fi, fj, curve_i, curve_j, s_i, s_j
        self._contacts = {k: [] for k in _CONTACT_FAMILIES}  # contact family -> instances
        self._rotating = None  # rotating reference frame: dict(name, profile)
        self._init_beams()  # planar ANCF beams (jaxmbs.flexible.build)
        self._init_ffr()  # floating-frame (modal) bodies (jaxmbs.flexible.ffr_build)

    # ------------------------------------------------------------------ frames
    @_recorded
    def add_body(self, name, mass, inertia, position=(0.0, 0.0), angle=0.0, cg=(0.0, 0.0),
                 velocity=(0.0, 0.0), angular_velocity=0.0) -> str:
        """Add a rigid body with coordinates (x, y, theta) of its reference frame.

        Args:
          mass: kg (> 0). inertia: kg m^2 about the centre of gravity (> 0).
          position: (2,) initial position of the reference point, m. angle: initial theta, rad.
          cg: (2,) centre of gravity in body coordinates, m (the reference point need not be the CG).
          velocity: (2,) initial reference-point velocity, m/s. angular_velocity: rad/s.
        Returns the name.
        """
        self._new_name(name, "body")
        self._bodies[name] = dict(
            mass=_positive(mass, f"body {name!r}: mass"),
            inertia=_positive(inertia, f"body {name!r}: inertia"),
            q=np.r_[_vec2(position, f"body {name!r}: position"), _finite(angle, f"body {name!r}: angle")],
            v=np.r_[_vec2(velocity, f"body {name!r}: velocity"),
                    _finite(angular_velocity, f"body {name!r}: angular_velocity")],
            cg=_vec2(cg, f"body {name!r}: cg"),
        )
        return name

    @_recorded
    def add_particle(self, name, mass, position, velocity=(0.0, 0.0)) -> str:
        """Add a point mass with coordinates (x, y). mass: kg (> 0); position m; velocity m/s."""
        self._new_name(name, "particle")
        self._particles[name] = dict(
            mass=_positive(mass, f"particle {name!r}: mass"),
            q=_vec2(position, f"particle {name!r}: position"),
            v=_vec2(velocity, f"particle {name!r}: velocity"),
        )
        return name

    def _frame(self, name, owner):
        if name == GROUND:
            return ("ground", np.zeros(3))
        if name in self._bodies:
            return ("body", self._bodies[name]["q"])
        if name in self._particles:
            return ("particle", np.r_[self._particles[name]["q"], 0.0])
        if name in self._shear_node:  # a shear beam's node (x, y, theta): a planar frame
            return ("body", self._shear_node[name])
        if name in self._ffr:  # an FFR beam's reference frame (x, y, theta)
            return ("body", self._ffr[name]["q"][:3])
        known = ", ".join([GROUND, *self._bodies, *self._particles, *self._shear_node, *self._ffr])
        raise ValueError(f"{owner}: unknown body {name!r}; known bodies: {known}")

    def _local(self, body, owner, at=None, point=None, which="", at_name="at", point_name=None):
        """Local coordinates of a point given globally (at=) or locally (point=); at_name /
        point_name: the arguments' names in error messages."""
        kind, q = self._frame(body, owner)
        if point is not None:  # a local point overrides the shared global `at` for this body
            s = _vec2(point, f"{owner}: {point_name or 'point' + which}")
        elif at is not None:
            s = _rot(q[2]).T @ (_vec2(at, f"{owner}: {at_name}") - q[:2])
        else:
            s = np.zeros(2)
        if kind == "particle" and np.linalg.norm(s) > 1e-12 * (1 + np.linalg.norm(q)):
            raise ValueError(
                f"{owner}: a particle has no orientation, so its attachment point must be the "
                f"particle itself; got a point {s} away from particle {body!r}"
            )
        if kind == "particle":
            s = np.zeros(2)
        return s

    def _global(self, body, s):
        _, q = self._frame(body, "")
        return q[:2] + _rot(q[2]) @ s

    def _two(self, owner, body_i, body_j):
        ki, _ = self._frame(body_i, owner)
        kj, _ = self._frame(body_j, owner)
        if body_i == body_j:
            raise ValueError(f"{owner}: connects {body_i!r} to itself; give two different bodies")
        return ki, kj

    def _index(self, name):
        if name == GROUND:
            return 0
        if name in self._bodies:
            return 1 + list(self._bodies).index(name)
        return 1 + len(self._bodies) + list(self._particles).index(name)

    def _add_inst(self, family, fi, fj, owner, **fields):
        fields.setdefault("profile", prof.constant(0.0))
        lst = self._inst.setdefault(family, [])
        lst.append(dict(fi=fi, fj=fj, owner=owner, **fields))
        return (family, len(lst) - 1)

    def _add_joint(self, name, kind, bi, bj, parts, driver=False, point_ref=()):
        self._joints.append(dict(name=name, kind=kind, bi=bi, bj=bj, parts=parts,
                                 driver=driver, point_ref=point_ref))
        self._joint_kind[name] = (kind, bi, bj, parts)

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
            part = self._add_inst("line", bi, bj, name, point_i=g["point_i"], point_j=g["point_j"],
                                  direction=g["axis"], profile=profile)
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
        from .joints import cam

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

    # ------------------------------------------------------------------ forces
    @_recorded
    def add_spring(self, name, body_i, body_j, k, c=0.0, length=None, force=0.0, at_i=None,
                   at_j=None, point_i=None, point_j=None) -> str:
        """Translational spring-damper-actuator between two points.

        k: N/m (>= 0); c: N s/m (>= 0); length: free length, m (default: the distance in
        the initial configuration, computed now); force: constant actuator tension, N.
        """
        owner = f"spring {name!r}"
        self._new_name(name, "force")
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at_i, point_i, "_i", "at_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j", "at_j")
        d0 = float(np.linalg.norm(self._global(body_j, sj) - self._global(body_i, si)))
        if d0 < 1e-12:
            raise ValueError(f"{owner}: the two points coincide in the initial configuration; "
                             "a spring needs distinct end points")
        k, c = _finite(k, f"{owner}: k"), _finite(c, f"{owner}: c")
        if k < 0 or c < 0:
            raise ValueError(f"{owner}: stiffness k and damping c must be >= 0, got k={k}, c={c}")
        L = d0 if length is None else _finite(length, f"{owner}: length")
        self._springs.append(dict(name=name, fi=body_i, fj=body_j, point_i=si, point_j=sj, k=k, c=c,
                                  length=L, force=_finite(force, f"{owner}: force")))
        return name

    @_recorded
    def add_torsion_spring(self, name, body_i, body_j, k, c=0.0, angle=None, torque=0.0) -> str:
        """Rotational spring-damper-actuator on theta_j - theta_i.

        k: N m/rad; c: N m s/rad; angle: free relative angle, rad (default: the initial one);
        torque: constant actuator torque, N m (acts -torque on body_j).
        """
        owner = f"torsion spring {name!r}"
        self._new_name(name, "force")
        ki, kj = self._two(owner, body_i, body_j)
        self._require_bodies(owner, (ki, kj), (body_i, body_j), "it cannot carry a torsion spring")
        th0 = self._frame(body_j, owner)[1][2] - self._frame(body_i, owner)[1][2]
        k, c = _finite(k, f"{owner}: k"), _finite(c, f"{owner}: c")
        if k < 0 or c < 0:
            raise ValueError(f"{owner}: stiffness k and damping c must be >= 0, got k={k}, c={c}")
        self._torsions.append(dict(name=name, fi=body_i, fj=body_j, k=k, c=c,
                                   angle=th0 if angle is None else _finite(angle, f"{owner}: angle"),
                                   torque=_finite(torque, f"{owner}: torque")))
        return name

    @_recorded
    def add_load(self, name, body, force=(0.0, 0.0), torque=0.0, at=None, point=None,
                 local=False, control=None, fn=None) -> str:
        """Applied force (N) at a point and torque (N m) on a body.

        force: (2,) in global coordinates, or in body coordinates if local=True.
        control: index of a control input u[control] that scales force and torque.
        fn: JAX function f(t) -> (fx, fy, torque) (global) added to the constant part.
        """
        if self._is_ffr(body):
            return self._ffr_load(name, body, force, torque, at, point, local, control, fn)
        owner = f"load {name!r}"
        self._new_name(name, "force")
        kind, _ = self._frame(body, owner)
        if body == GROUND:
            raise ValueError(f"{owner}: a load on the ground does nothing; give a body")
        s = self._local(body, owner, at, point, "")
        if control is not None and (isinstance(control, bool) or not isinstance(control, int)
                                    or control < 0):
            raise ValueError(f"{owner}: control must be a non-negative integer channel, got {control!r}")
        if fn is not None and not callable(fn):
            raise ValueError(f"{owner}: fn must be a JAX function f(t) -> (fx, fy, torque)")
        if not isinstance(local, (bool, np.bool_)):
            raise ValueError(f"{owner}: local must be True (force in body axes) or False "
                             f"(global axes), got {local!r}")
        self._loads.append(dict(name=name, f=body, point=s, force=_vec2(force, f"{owner}: force"),
                                torque=_finite(torque, f"{owner}: torque"), local=bool(local),
                                control=-1 if control is None else control, fn=fn))
        return name

    # ------------------------------------------------------- contact, rotating frame
    @_recorded
    def add_circle_line_contact(self, name, body_i, body_j, radius, k, normal=(0.0, 1.0),
                                at_i=None, at_j=None, point_i=None, point_j=None,
                                normal_i=None, exponent=1.5, damping=None, restitution=None,
                                impact_velocity=None, damping_model="lankarani-nikravesh",
                                friction=0.0, slip_velocity=1e-3) -> str:
        """Penalty contact of a circle on body_j with an (infinite) line fixed in body_i.

        The line passes through at_i (global, initial configuration; default body_i's
        reference point) or point_i (body_i coordinates), with unit normal `normal`
        (global, initial) or normal_i (body_i coordinates) pointing to the side where the
        circle is. The circle's centre is at_j (global) or point_j (body_j coordinates;
        default its reference point); radius in m (> 0). Penetration d = radius -
        normal . (centre - line point).

        Contact law (all contacts): normal force F_n = max(k d^n (1 + damping d_dot), 0) for
        penetration d > 0 (zero when separated, never pulling), d_dot its rate (m/s,
        positive when closing); elastic potential k d^(n+1)/(n+1) counted in the potential
        energy. k: N/m^n (> 0); exponent n >= 1 (1.5: Hertz; 1: linear penalty);
        damping: hysteresis factor chi in s/m (default 0), or restitution e in (0, 1] with
        impact_velocity (m/s) and damping_model 'lankarani-nikravesh' (chi = 3(1-e^2)/(4v))
        or 'hunt-crossley' (chi = 3(1-e)/(2v)); friction: Coulomb coefficient mu (>= 0),
        regularised F_t = -mu F_n tanh(v_t / slip_velocity) (slip_velocity in m/s) against
        the slip velocity v_t of the material points at the contact point.
        Params keys: '<name>.k', '.exponent', '.damping', '.mu', '.v_eps', '.radius',
        '.point_i', '.point_j', '.normal'. Diagnostics: `jaxmbs.core.equations.force_outputs`.
        """
        owner = f"contact {name!r}"
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at_i, point_i, "_i", "at_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j", "at_j")
        nl = self._axis(owner, body_i, normal, normal_i, "normal")
        law = B.contact_law(owner, k, exponent, damping, restitution, impact_velocity,
                                damping_model, friction, slip_velocity)
        self._new_name(name, "force")
        self._contacts["circle_line"].append(dict(
            name=name, fi=body_i, fj=body_j, point_i=si, point_j=sj, normal=nl,
            radius=_positive(radius, f"{owner}: radius"), **law))
        return name

    @_recorded
    def add_circle_circle_contact(self, name, body_i, body_j, radius_i, radius_j, k, at_i=None,
                                  at_j=None, point_i=None, point_j=None, exponent=1.5,
                                  damping=None, restitution=None, impact_velocity=None,
                                  damping_model="lankarani-nikravesh", friction=0.0,
                                  slip_velocity=1e-3) -> str:
        """Penalty contact between a circle on body_i and a circle on body_j (external).

        Centres at_i / at_j (global, initial) or point_i / point_j (body coordinates;
        default the reference points); radius_i, radius_j in m (> 0). Penetration
        d = radius_i + radius_j - |C_j - C_i|. Contact-law arguments as in
        add_circle_line_contact.
        """
        owner = f"contact {name!r}"
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at_i, point_i, "_i", "at_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j", "at_j")
        law = B.contact_law(owner, k, exponent, damping, restitution, impact_velocity,
                                damping_model, friction, slip_velocity)
        self._new_name(name, "force")
        self._contacts["circle_circle"].append(dict(
            name=name, fi=body_i, fj=body_j, point_i=si, point_j=sj,
            radius_i=_positive(radius_i, f"{owner}: radius_i"),
            radius_j=_positive(radius_j, f"{owner}: radius_j"), **law))
        return name

    def _ground_contact(self, owner, name, body, radius, at, point, law):
        if body == GROUND:
            raise ValueError(f"{owner}: the circle must be on a body or particle, not the ground")
        self._frame(body, owner)
        s = self._local(body, owner, at, point, "")
        return dict(name=name, fi=GROUND, fj=body, point_j=s,
                    radius=_positive(radius, f"{owner}: radius"), **law)

    @_recorded
    def add_circle_profile_contact(self, name, body, radius, profile, k, at=None, point=None,
                                   exponent=1.5, damping=None, restitution=None,
                                   impact_velocity=None, damping_model="lankarani-nikravesh",
                                   friction=0.0, slip_velocity=1e-3) -> str:
        """Penalty contact of a circle on `body` with the ground profile y = profile(x).

        profile: JAX function of a scalar x (m) returning the ground height (m), twice
        differentiable (its slope and curvature come from autodiff). Centre at `at`
        (global, initial) or `point` (body coordinates); radius m (> 0).
        Approximation: the ground is replaced by its tangent line at the centre's x, so
        d = radius - (C_y - f(C_x)) / sqrt(1 + f'(C_x)^2) along the normal (-f', 1)/|.|;
        accurate when the profile's radius of curvature is much larger than `radius`.
        Contact-law arguments as in add_circle_line_contact.
        """
        owner = f"contact {name!r}"
        if not callable(profile):
            raise ValueError(f"{owner}: profile must be a JAX function f(x) -> height (m); "
                             "for sampled heights use add_circle_terrain_contact")
        law = B.contact_law(owner, k, exponent, damping, restitution, impact_velocity,
                                damping_model, friction, slip_velocity)
        try:
            float(profile(jnp.asarray(0.0)))
        except Exception as e:  # noqa: BLE001 - report the user's error with context
            raise ValueError(f"{owner}: calling profile(x) on a scalar x failed: {e}") from e
        d = self._ground_contact(owner, name, body, radius, at, point, law)
        d["fn"] = profile
        self._new_name(name, "force")
        self._contacts["circle_profile"].append(d)
        return name

    @_recorded
    def add_circle_terrain_contact(self, name, body, radius, xs, ys, k, at=None, point=None,
                                   exponent=1.5, damping=None, restitution=None,
                                   impact_velocity=None, damping_model="lankarani-nikravesh",
                                   friction=0.0, slip_velocity=1e-3) -> str:
        """Penalty contact of a circle on `body` with sampled ground terrain.

        xs (N,) strictly increasing sample abscissae (m), ys (N,) heights (m), N >= 3,
        both Params leaves ('<name>.xs', '<name>.ys'); interpolated by a C^1 cubic Hermite
        curve whose slopes are those of the parabola through each sample and its neighbours
        (exact for quadratic terrain), continued beyond the ends by the end tangent lines.
        All terrain contacts of a model need the same N. Contact geometry as in
        add_circle_profile_contact.
        """
        owner = f"contact {name!r}"
        try:
            xs = np.asarray(xs, float)
            ys = np.asarray(ys, float)
        except (TypeError, ValueError):
            raise ValueError(f"{owner}: xs and ys must be 1-D arrays of numbers (m), got "
                             f"xs={xs!r}, ys={ys!r}") from None
        if xs.ndim != 1 or xs.shape != ys.shape or xs.size < 3:
            raise ValueError(f"{owner}: xs and ys must be 1-D arrays of equal length >= 3, got "
                             f"shapes {xs.shape} and {ys.shape}")
        if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
            raise ValueError(f"{owner}: xs and ys must be finite")
        if np.any(np.diff(xs) <= 0):
            raise ValueError(f"{owner}: xs must be strictly increasing")
        others = self._contacts["circle_terrain"]
        if others and others[0]["xs"].size != xs.size:
            raise ValueError(f"{owner}: {xs.size} terrain samples, but contact "
                             f"{others[0]['name']!r} has {others[0]['xs'].size}; all terrain "
                             "contacts of a model need the same number of samples (resample, "
                             "e.g. with numpy.interp)")
        law = B.contact_law(owner, k, exponent, damping, restitution, impact_velocity,
                                damping_model, friction, slip_velocity)
        d = self._ground_contact(owner, name, body, radius, at, point, law)
        d.update(xs=xs, ys=ys)
        self._new_name(name, "force")
        others.append(d)
        return name

    @_recorded
    def add_rotating_frame(self, omega, name="frame") -> str:
        """Declare that the model is written in a frame turning about the origin with angular
        velocity omega(t) (rad/s, counter-clockwise): adds the centrifugal, Coriolis and
        Euler pseudo-forces (and the Euler torque -J omega_dot) on every body and particle.

        omega: number, jaxmbs profile (its coefficients become Params leaves
        '<name>.coef' / '.amp' / '.omega' / '.phase') or JAX function f(t); omega_dot by
        differentiation. Gravity and all other data stay as given, in frame coordinates.
        The centrifugal potential -m omega^2 |r_G|^2 / 2 is part of the potential energy, so
        for constant omega the energy reported is the Jacobi integral.
        """
        owner = f"rotating frame {name!r}"
        if self._rotating is not None:
            raise ValueError(f"{owner}: the model already has a rotating frame "
                             f"{self._rotating['name']!r}; give one only")
        self._new_name(name, "force")
        self._rotating = dict(name=name, profile=prof.as_profile(omega, f"{owner}: omega"))
        return name

    # ------------------------------------------------------------------- build
    # (the one build() is BuilderBase's; these are its hooks)
    RIGID_BODIES = ("planar_rigid", "particle2d")
    VALUE_KEYS = {("distance", "distance"): "length", ("prismatic", "line"): "offset",
                  ("prismatic", "angle"): "angle", ("weld", "angle"): "angle"}

    def _has_bodies(self):
        return bool(self._bodies or self._particles or self._beams or self._shear_beams or self._ffr)

    def _node_specs(self):
        nodes = [dict(name=b, node="planar_rigid", body="planar_rigid", q=d["q"], v=d["v"],
                      params=dict(mass=d["mass"], inertia=d["inertia"], cg=d["cg"]))
                 for b, d in self._bodies.items()]
        nodes += [dict(name=p, node="particle2d", body="particle2d", q=d["q"], v=d["v"],
                       params=dict(mass=d["mass"])) for p, d in self._particles.items()]
        return nodes + self._beam_nodes() + self._ffr_nodes()

    def _extra_rows(self, nblocks, fidx_map, q0, v0, families, jparams, where, row):
        # extra (massless) coordinates after all nodes, one scalar block: cam curve
        # parameters, then the arc lengths of sliding joints along beams
        fidx = fidx_map.__getitem__
        nq_nodes, nv_nodes, extra_names = len(q0), len(v0), ()
        if self._cams:
            nq = len(q0)
            cam_blk, jparams["cam"], cam_where, extra_names, cam_q = self._cam_block(row, fidx, nq)
            families.append(cam_blk)
            where.update(cam_where)
            row += 3 * len(self._cams)
            q0 = np.r_[q0, cam_q]
            v0 = np.r_[v0, np.zeros(len(cam_q))]
            v0[nq:] = self._cam_rates(cam_blk, jparams["cam"], q0, v0)
        if self._sliders:
            blocks, sl_where, nrows, names, sq, sv = self._slider_blocks(row, fidx, nblocks, len(q0))
            for blk, p in blocks:
                families.append(blk)
                jparams[blk.kind] = p
            where.update(sl_where)
            row += nrows
            extra_names += names
            q0, v0 = np.r_[q0, sq], np.r_[v0, sv]
        if extra_names:
            nblocks.append(NodeBlock("scalar", extra_names, nq_nodes, nv_nodes, -1))
        return row, q0, v0

    def _force_instances(self):
        forces = {"spring": [dict(s) for s in self._springs],
                  "torsion": [dict(s) for s in self._torsions]}
        forces.update({k: [dict(x) for x in v] for k, v in self._contacts.items()})
        loads = [dict(name=s["name"], fi=GROUND, fj=s["f"], point=s["point"], force=s["force"],
                      torque=s["torque"], fn=s["fn"], control=s["control"], local=s["local"])
                 for s in self._loads]
        if loads:
            loads[0]["static_block"] = lambda items: (tuple(x["control"] for x in items),
                                                      tuple(x["local"] for x in items))
        forces["load"] = loads
        forces.update(self._beam_forces())
        forces.update(self._ffr_forces())
        return forces

    def _extra_forces(self, fblocks, fparams, keys):
        if self._rotating is None:
            return
        r = self._rotating
        pr = r["profile"]
        nf = len(self._bodies) + len(self._particles)
        fparams["rotating_frame"] = {
            "coef": jnp.asarray(np.array([pr.coef], float)),
            "amp": jnp.asarray(np.array([pr.amp], float)),
            "omega": jnp.asarray(np.array([pr.omega], float)),
            "phase": jnp.asarray(np.array([pr.phase], float)),
        }
        fns = ((0, pr.fn),) if pr.fn is not None else ()
        rot = ForceBlock("rotating_frame", (0,) * nf, tuple(range(1, nf + 1)), (r["name"],) * nf, fns)
        load_at = [i for i, b in enumerate(fblocks) if b.kind == "load"]
        fblocks.insert(load_at[0] if load_at else len(fblocks), rot)
        keys += [(f"{r['name']}.{f}", ("forces", "rotating_frame", f, 0, None))
                 for f in ("coef", "amp", "omega", "phase")]

    def _n_controls(self):
        return max([s["control"] + 1 for s in self._loads] + [0])
