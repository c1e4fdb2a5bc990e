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

import functools
import inspect
import math
from typing import Callable, NamedTuple, Optional

import jax.numpy as jnp
import numpy as np

from . import profiles as prof
from .mechanism import (
    FamilyBlock,
    ForceBlock,
    JointInfo,
    LoadBlock,
    Mechanism,
    Params,
    UserFunction,
)
from .planar.joints import FAMILIES

__all__ = ["Model", "Built"]

GROUND = "ground"
_FAMILY_ORDER = ("coincident", "angle", "line", "distance")


class Built(NamedTuple):
    """Result of `Model.build()`: unpack as `mech, params, q0, v0 = model.build()`."""

    mechanism: Mechanism
    params: Params
    q0: object
    v0: object


def _vec2(x, what):
    a = np.asarray(x, dtype=float)
    if a.shape != (2,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: expected a finite 2-vector (x, y), got {x!r}")
    return a


def _rot(th):
    c, s = math.cos(th), math.sin(th)
    return np.array([[c, -s], [s, c]])


def _positive(x, what):
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {x!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{what} must be positive and finite, got {v!r}")
    return v


def _finite(x, what):
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {x!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite, got {v!r}")
    return v


def _nparams(fn):
    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return -1


def _recorded(method):
    """Record a successful public builder call (outermost only) so that the model can be
    written to and re-read from a JSON model file (see `jaxmbs.io`)."""
    sig = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        self._depth += 1
        try:
            out = method(self, *args, **kwargs)
        finally:
            self._depth -= 1
        if self._depth == 0:
            bound = sig.bind(self, *args, **kwargs)
            call = {k: v for k, v in bound.arguments.items() if k != "self"}
            self._calls.append((method.__name__, call))
        return out

    return wrapper


class Model:
    """Builder of a planar mechanism.

    Args:
      gravity: (2,) gravitational acceleration in m/s^2, default (0, -9.81).
    """

    def __init__(self, gravity=(0.0, -9.81)):
        self.gravity = _vec2(gravity, "gravity")
        self._bodies = {}  # name -> dict
        self._particles = {}
        self._names = {GROUND}
        self._inst = {k: [] for k in _FAMILY_ORDER}  # family -> list of instance dicts
        self._joints = []  # dicts: name, kind, fi, fj, parts [(family, idx)], driver, point_ref
        self._springs, self._torsions, self._loads = [], [], []
        self._user_constraints, self._user_forces = [], []
        self._joint_kind = {}
        self._calls, self._depth = [], 0  # recorded builder calls, for jaxmbs.io model files

    # ------------------------------------------------------------------ frames
    def _new_name(self, name, what):
        if not isinstance(name, str) or not name:
            raise ValueError(f"{what} name must be a non-empty string, got {name!r}")
        if "." in name:
            raise ValueError(f"{what} name {name!r} must not contain '.'")
        if name in self._names:
            raise ValueError(f"duplicate name {name!r}: every body, particle, joint and force needs its own name")
        self._names.add(name)
        return name

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
        known = ", ".join([GROUND, *self._bodies, *self._particles])
        raise ValueError(f"{owner}: unknown body {name!r}; known bodies: {known}")

    def _local(self, body, owner, at=None, point=None, which=""):
        """Local coordinates of a point given globally (at=) or locally (point=)."""
        kind, q = self._frame(body, owner)
        if point is not None:  # a local point overrides the shared global `at` for this body
            s = _vec2(point, f"{owner}: point{which}")
        elif at is not None:
            s = _rot(q[2]).T @ (_vec2(at, f"{owner}: at") - q[:2])
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
        self._inst[family].append(dict(fi=fi, fj=fj, owner=owner, **fields))
        return (family, len(self._inst[family]) - 1)

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

    def _axis(self, owner, body_i, axis, axis_i):
        if axis_i is not None:
            u = _vec2(axis_i, f"{owner}: axis_i")
        else:
            u = _rot(self._frame(body_i, owner)[1][2]).T @ _vec2(axis, f"{owner}: axis")
        nrm = np.linalg.norm(u)
        if nrm < 1e-12:
            raise ValueError(f"{owner}: zero-length axis {u}; give a nonzero direction vector")
        return u / nrm

    def _line_value(self, bi, bj, si, sj, w_local):
        _, qi = self._frame(bi, "")
        d = self._global(bj, sj) - self._global(bi, si)
        return float((_rot(qi[2]) @ w_local) @ d)

    @_recorded
    def add_weld(self, name, body_i, body_j, at=None, point_i=None, point_j=None) -> str:
        """Rigid connection: coincident points and fixed relative angle (3 equations)."""
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
        si = self._local(body_i, owner, at_i, point_i, "_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j")
        d0 = float(np.linalg.norm(self._global(bj := body_j, sj) - self._global(body_i, si)))
        if d0 < 1e-12:
            raise ValueError(
                f"{owner}: the two points coincide in the initial configuration; a distance "
                "constraint needs distinct points (use add_revolute for coincident points)"
            )
        if length is None:
            profile = prof.constant(d0)
        else:
            profile = prof.as_profile(length)
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
        profile = prof.as_profile(profile)
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
        profile = prof.as_profile(profile)
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
        part = self._add_inst("angle", relative_to, body, name, profile=prof.as_profile(profile))
        self._add_joint(name, "driver", relative_to, body, [part], driver=True)
        return name

    @_recorded
    def add_constraint(self, name, fn: Callable, params=None) -> str:
        """User constraint Phi(q, t) = 0 (or fn(q, t, params) when params is given).

        fn: JAX function returning a (k,) array; Jacobian and gamma come from autodiff.
        params: optional array of parameters (a Params leaf under params.user[name]).
        """
        self._new_name(name, "constraint")
        if not callable(fn):
            raise ValueError(f"constraint {name!r}: fn must be a function Phi(q, t[, params])")
        self._user_constraints.append(dict(name=name, fn=fn, params=params))
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
        si = self._local(body_i, owner, at_i, point_i, "_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j")
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
        owner = f"load {name!r}"
        self._new_name(name, "force")
        kind, _ = self._frame(body, owner)
        if body == GROUND:
            raise ValueError(f"{owner}: a load on the ground does nothing; give a body")
        s = self._local(body, owner, at, point, "")
        if control is not None and (not isinstance(control, int) or control < 0):
            raise ValueError(f"{owner}: control must be a non-negative integer channel, got {control!r}")
        if fn is not None and not callable(fn):
            raise ValueError(f"{owner}: fn must be a JAX function f(t) -> (fx, fy, torque)")
        self._loads.append(dict(name=name, f=body, point=s, force=_vec2(force, f"{owner}: force"),
                                torque=_finite(torque, f"{owner}: torque"), local=bool(local),
                                control=-1 if control is None else control, fn=fn))
        return name

    @_recorded
    def add_force(self, name, fn: Callable, params=None) -> str:
        """User generalised force Q(q, v, t, u) (or fn(q, v, t, u, params)) -> (n,) array."""
        self._new_name(name, "force")
        if not callable(fn):
            raise ValueError(f"force {name!r}: fn must be a function Q(q, v, t, u[, params])")
        self._user_forces.append(dict(name=name, fn=fn, params=params))
        return name

    # ------------------------------------------------------------------- build
    def build(self) -> Built:
        """Validate and return (mechanism, params, q0, v0)."""
        if not self._bodies and not self._particles:
            raise ValueError("the model has no bodies; add one with add_body or add_particle")
        fidx = self._index
        keys = []
        bnames, pnames = tuple(self._bodies), tuple(self._particles)
        for i, b in enumerate(bnames):
            keys += [(f"{b}.mass", ("mass", None, None, i, None)),
                     (f"{b}.inertia", ("inertia", None, None, i, None)),
                     (f"{b}.cg", ("cg", None, None, i, None))]
        for i, p in enumerate(pnames):
            keys.append((f"{p}.mass", ("particle_mass", None, None, i, None)))
        keys.append(("gravity", ("gravity", None, None, None, None)))

        # constraint families, in fixed order
        families, jparams, row, where = [], {}, 0, {}
        for fam in _FAMILY_ORDER:
            insts = self._inst[fam]
            if not insts:
                continue
            _, rows_per, fields, driven = FAMILIES[fam]
            p = {f: jnp.asarray(np.array([x[f] for x in insts], float)) for f in fields}
            if driven:
                pr = [x["profile"] for x in insts]
                p["coef"] = jnp.asarray(np.array([x.coef for x in pr], float))
                p["amp"] = jnp.asarray(np.array([x.amp for x in pr], float))
                p["omega"] = jnp.asarray(np.array([x.omega for x in pr], float))
                p["phase"] = jnp.asarray(np.array([x.phase for x in pr], float))
            jparams[fam] = p
            ufn = tuple((k, x["profile"].fn) for k, x in enumerate(insts) if x["profile"].fn is not None)
            families.append(FamilyBlock(fam, tuple(fidx(x["fi"]) for x in insts),
                                        tuple(fidx(x["fj"]) for x in insts), row, rows_per,
                                        tuple(x["owner"] for x in insts), ufn))
            for k in range(len(insts)):
                where[(fam, k)] = tuple(range(row + k * rows_per, row + (k + 1) * rows_per))
            row += len(insts) * rows_per

        q0, v0 = self._initial_state()
        user_params = {}
        ucons = []
        for uc in self._user_constraints:
            if uc["params"] is not None:
                user_params[uc["name"]] = jnp.asarray(uc["params"], float)
            args = (jnp.asarray(q0), jnp.asarray(0.0))
            args += (user_params[uc["name"]],) if uc["params"] is not None else ()
            try:
                out = np.asarray(uc["fn"](*args))
            except Exception as e:  # noqa: BLE001 - report the user's error with context
                raise ValueError(f"constraint {uc['name']!r}: calling fn(q, t{', params' if uc['params'] is not None else ''}) "
                                 f"failed at the initial state: {e}") from e
            if out.ndim != 1 or out.size == 0:
                raise ValueError(f"constraint {uc['name']!r}: fn must return a 1-D array of rows, got shape {out.shape}")
            ucons.append(UserFunction(uc["name"], uc["fn"], uc["params"] is not None, row, out.size))
            where[("user", uc["name"])] = tuple(range(row, row + out.size))
            if uc["params"] is not None:
                keys.append((f"{uc['name']}.params", ("user", uc["name"], None, None, None)))
            row += out.size

        joints = []
        for j in self._joints:
            rows = tuple(r for part in j["parts"] for r in where[part])
            joints.append(JointInfo(j["name"], j["kind"], fidx(j["bi"]), fidx(j["bj"]), rows,
                                    j["point_ref"], j["driver"]))
            for fam, k in j["parts"]:
                for field in FAMILIES[fam][2]:
                    keys.append((f"{j['name']}.{field}" if len(j["parts"]) == 1 or fam in ("coincident", "line")
                                 else f"{j['name']}.{fam}.{field}", ("joints", fam, field, k, None)))
                if FAMILIES[fam][3]:
                    label = {"angle": "angle", "line": "offset", "distance": "length"}[fam]
                    if j["driver"]:
                        for f in ("coef", "amp", "omega", "phase"):
                            keys.append((f"{j['name']}.{f}", ("joints", fam, f, k, None)))
                    elif j["kind"] in ("distance", "prismatic", "weld"):
                        keys.append((f"{j['name']}.{label}", ("joints", fam, "coef", k, 0)))
        for uc in ucons:
            joints.append(JointInfo(uc.name, "constraint", 0, 0, where[("user", uc.name)]))

        # forces
        fparams = {}
        if self._springs:
            S = self._springs
            fparams["spring"] = {f: jnp.asarray(np.array([s[f] for s in S], float))
                                 for f in ("point_i", "point_j", "k", "c", "length", "force")}
        if self._torsions:
            T = self._torsions
            fparams["torsion"] = {f: jnp.asarray(np.array([s[f] for s in T], float))
                                  for f in ("k", "c", "angle", "torque")}
        if self._loads:
            L = self._loads
            fparams["load"] = {f: jnp.asarray(np.array([s[f] for s in L], float))
                               for f in ("point", "force", "torque")}
        for fam, items in (("spring", self._springs), ("torsion", self._torsions), ("load", self._loads)):
            for k, s in enumerate(items):
                for f in fparams[fam]:
                    keys.append((f"{s['name']}.{f}", ("forces", fam, f, k, None)))
        springs = ForceBlock("spring", tuple(fidx(s["fi"]) for s in self._springs),
                             tuple(fidx(s["fj"]) for s in self._springs),
                             tuple(s["name"] for s in self._springs))
        torsions = ForceBlock("torsion", tuple(fidx(s["fi"]) for s in self._torsions),
                              tuple(fidx(s["fj"]) for s in self._torsions),
                              tuple(s["name"] for s in self._torsions))
        loads = LoadBlock(tuple(fidx(s["f"]) for s in self._loads), tuple(s["name"] for s in self._loads),
                          tuple(s["control"] for s in self._loads), tuple(s["local"] for s in self._loads),
                          tuple((k, s["fn"]) for k, s in enumerate(self._loads) if s["fn"] is not None))
        uforces = []
        for uf in self._user_forces:
            if uf["params"] is not None:
                user_params[uf["name"]] = jnp.asarray(uf["params"], float)
                keys.append((f"{uf['name']}.params", ("user", uf["name"], None, None, None)))
            uforces.append(UserFunction(uf["name"], uf["fn"], uf["params"] is not None))
        n_controls = max([s["control"] + 1 for s in self._loads] + [0])

        mech = Mechanism(bnames, pnames, tuple(families), tuple(ucons), tuple(joints), springs,
                         torsions, loads, tuple(uforces), n_controls, tuple(keys))
        B = self._bodies
        params = Params(
            mass=jnp.asarray(np.array([B[b]["mass"] for b in bnames], float).reshape(-1)),
            inertia=jnp.asarray(np.array([B[b]["inertia"] for b in bnames], float).reshape(-1)),
            cg=jnp.asarray(np.array([B[b]["cg"] for b in bnames], float).reshape(-1, 2)),
            particle_mass=jnp.asarray(np.array([self._particles[p]["mass"] for p in pnames], float).reshape(-1)),
            gravity=jnp.asarray(self.gravity),
            joints=jparams, forces=fparams, user=user_params,
        )
        return Built(mech, params, jnp.asarray(q0), jnp.asarray(v0))

    def _initial_state(self):
        q = [b["q"] for b in self._bodies.values()] + [p["q"] for p in self._particles.values()]
        v = [b["v"] for b in self._bodies.values()] + [p["v"] for p in self._particles.values()]
        return np.concatenate(q).astype(float), np.concatenate(v).astype(float)
