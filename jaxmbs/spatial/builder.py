"""The spatial (3D) model builder: eager Python that validates everything and returns
(Mechanism, Params, q0, v0), like `jaxmbs.Model` for planar mechanisms.

    m = jaxmbs.SpatialModel(gravity=(0, 0, -9.81))
    m.add_body("crank", mass=0.12, inertia=(1e-4, 1e-4, 1e-5), position=..., orientation=...)
    m.add_revolute("A", "ground", "crank", at=(0, 0.1, 0.12), axis=(1, 0, 0))
    mech, params, q0, v0 = m.build()

Coordinates of a body: position r (3,) of its reference point and a unit quaternion
(w, x, y, z) (q has 7 entries per body); velocity coordinates: rdot (3,) in global axes
and the angular velocity omega (3,) in BODY axes (v has 6 entries per body). Points are
given globally in the initial configuration (`at=`) or in body coordinates
(`point_i=`, `point_j=`); axes likewise (`axis=` global, `axis_i=` / `axis_j=` body).
All inputs in SI units (m, kg, kg m^2, rad, s, N).

Flexible cables (spatial ANCF: position and slope per node, `jaxmbs.flexible.ancf3d`):
`add_beam`, `add_node_pin`, `add_node_weld`, `add_node_load`, `add_beam_line_load`, the
spherical `add_beam_body_pin` and `add_beam_body_weld` (a cable welded to a rigid body or
the ground) come from `jaxmbs.flexible.build.CableBuilder`.
"""
from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from .. import profiles as prof
from ..core import build as B
from ..core import families as F
from ..core.build import GROUND, BuilderBase, recorded
from ..flexible.build import CableBuilder
from . import families as _families  # noqa: F401  (registers the spatial families)
from . import forces as _forces  # noqa: F401
from .geometry import perp_pair

__all__ = ["SpatialModel"]

def _vec3(x, what):
    return B.vector(x, 3, what)


def _unit3(x, what):
    return B.unit(x, 3, what)


def _quat_from_R(R):
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    if t > 0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = [0.0] * 4
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q = np.asarray(q)
    return q / np.linalg.norm(q)


def _R_from_quat(p):
    w, x, y, z = p
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _orientation(x, what):
    """Unit quaternion from None (identity), a quaternion (4,) (w, x, y, z) or a rotation
    matrix (3, 3) whose columns are the body axes in global coordinates."""
    if x is None:
        return np.array([1.0, 0.0, 0.0, 0.0])
    if isinstance(x, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{what}: give a unit quaternion (w, x, y, z) or a 3x3 rotation matrix, "
                         f"got {x!r}")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: give a unit quaternion (w, x, y, z) or a 3x3 rotation matrix, "
                         f"got {x!r}") from None
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: must be finite, got {x!r}")
    if a.shape == (4,):
        n = np.linalg.norm(a)
        if abs(n - 1.0) > 1e-6:
            raise ValueError(f"{what}: a quaternion (w, x, y, z) must have unit norm, got "
                             f"|q| = {n:.6g}")
        return a / n
    if a.shape == (3, 3):
        if np.max(np.abs(a.T @ a - np.eye(3))) > 1e-6 or np.linalg.det(a) < 0:
            raise ValueError(f"{what}: a rotation matrix must be orthonormal with det +1")
        return _quat_from_R(a)
    raise ValueError(f"{what}: give a unit quaternion (w, x, y, z) or a 3x3 rotation matrix, "
                     f"got shape {a.shape}")


def _inertia(x, what):
    """Inertia tensor (3, 3) from a scalar (isotropic), (3,) principal moments (body
    axes) or a full symmetric (3, 3); must be positive definite and satisfy the triangle
    inequalities of a physical body."""
    if isinstance(x, (bool, np.bool_)):
        raise ValueError(f"{what}: must be a number, 3 principal moments or a 3x3 tensor")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: must be a number, 3 principal moments or a 3x3 tensor, "
                         f"got {x!r}") from None
    if a.shape == ():
        J = a * np.eye(3)
    elif a.shape == (3,):
        J = np.diag(a)
    elif a.shape == (3, 3):
        J = a
    else:
        raise ValueError(f"{what}: must be a number, 3 principal moments or a 3x3 tensor, got "
                         f"shape {a.shape}")
    if not np.all(np.isfinite(J)):
        raise ValueError(f"{what}: must be finite, got {x!r}")
    if np.max(np.abs(J - J.T)) > 1e-12 * max(1.0, np.max(np.abs(J))):
        raise ValueError(f"{what}: the inertia tensor must be symmetric")
    ev = np.linalg.eigvalsh(J)
    if not ev[0] > 0:
        raise ValueError(f"{what}: the inertia tensor must be positive definite, eigenvalues {ev}")
    if ev[2] > ev[0] + ev[1] + 1e-12 * ev[2]:
        raise ValueError(f"{what}: principal moments {ev} violate the triangle inequality "
                         "(I3 <= I1 + I2) of a physical body")
    return J


def _coordinate_fn(spec, starts):
    """JAX function q -> the joint coordinate of spec (kind, body_i, body_j, fields, c0)
    (`SpatialModel._joint_coordinate`): the angle atan2(g_i . f_j, f_i . f_j) for 'hinge',
    a_i . (P_j - P_i) - c0 for 'slide'; starts: body name -> index of its r in q (None for
    the ground)."""
    from .geometry import quat_to_R

    kind, bi, bj, fl, c0 = spec
    fl = {k: jnp.asarray(v, float) for k, v in fl.items()}
    si, sj = starts[bi], starts[bj]

    def frame(q, k):
        if k is None:
            return jnp.zeros(3, q.dtype), jnp.eye(3, dtype=q.dtype)
        return q[k:k + 3], quat_to_R(q[k + 3:k + 7])

    def fn(q):
        ri, Ri = frame(q, si)
        rj, Rj = frame(q, sj)
        if kind == "hinge":
            fj = Rj @ fl["f_j"]
            return jnp.arctan2((Ri @ fl["g_i"]) @ fj, (Ri @ fl["f_i"]) @ fj)
        d = rj + Rj @ fl["point_j"] - ri - Ri @ fl["point_i"]
        return (Ri @ fl["a_i"]) @ d - c0

    return fn


class SpatialModel(CableBuilder, BuilderBase):
    """Builder of a spatial (3D) mechanism.

    Args:
      gravity: (3,) gravitational acceleration in m/s^2, default (0, 0, -9.81).
    """

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self._init_base()
        self.gravity = _vec3(gravity, "gravity")
        self._init_args = dict(gravity=self.gravity)
        self._nodes = []  # dicts (layout_nodes format)
        self._inst = {}  # constraint family -> instances
        self._joints = []
        self._joint_geo = {}  # joint name -> dict(kind, bi, bj, geometry)
        self._forces = {}  # force family -> instances
        self._rotors = []  # armatures: dicts (name, kind, fi, fj, fields, inertia)
        self._couplings = []  # joint couplings: dicts (name, specs, polycoef, offsets)
        self._init_beams()  # spatial ANCF cables (jaxmbs.flexible.build.CableBuilder)

    # ------------------------------------------------------------------ frames
    @recorded
    def add_body(self, name, mass, inertia, position=(0.0, 0.0, 0.0), orientation=None,
                 cg=(0.0, 0.0, 0.0), velocity=(0.0, 0.0, 0.0), angular_velocity=None,
                 angular_velocity_body=None) -> str:
        """Add a rigid body with coordinates (r, quaternion) of its reference frame.

        Args:
          mass: kg (> 0). inertia: kg m^2 about the centre of gravity in body axes: a
            number (isotropic), (3,) principal moments or a symmetric (3, 3) tensor
            (products of inertia allowed), positive definite.
          position: (3,) initial position of the reference point, m. orientation: unit
            quaternion (w, x, y, z) or rotation matrix (columns: body axes in global
            coordinates); default the global axes.
          cg: (3,) centre of gravity in body coordinates, m.
          velocity: (3,) initial reference-point velocity, m/s (global axes).
          angular_velocity: (3,) initial angular velocity in GLOBAL axes, rad/s, or
          angular_velocity_body: the same in body axes (give at most one).
        Returns the name.
        """
        owner = f"body {name!r}"
        m = B.positive(mass, f"{owner}: mass")
        J = _inertia(inertia, f"{owner}: inertia")
        p = _orientation(orientation, f"{owner}: orientation")
        R = _R_from_quat(p)
        if angular_velocity is not None and angular_velocity_body is not None:
            raise ValueError(f"{owner}: give angular_velocity (global axes) or "
                             "angular_velocity_body (body axes), not both")
        if angular_velocity_body is not None:
            w = _vec3(angular_velocity_body, f"{owner}: angular_velocity_body")
        elif angular_velocity is not None:
            w = R.T @ _vec3(angular_velocity, f"{owner}: angular_velocity")
        else:
            w = np.zeros(3)
        r = _vec3(position, f"{owner}: position")
        v = _vec3(velocity, f"{owner}: velocity")
        c = _vec3(cg, f"{owner}: cg")
        self._new_name(name, "body")
        self._nodes.append(dict(name=name, node="spatial_rigid", body="spatial_rigid",
                                q=np.r_[r, p], v=np.r_[v, w],
                                params=dict(mass=m, inertia=J, cg=c)))
        return name

    @recorded
    def add_particle(self, name, mass, position, velocity=(0.0, 0.0, 0.0)) -> str:
        """Add a point mass with coordinates (x, y, z). mass kg (> 0); position m;
        velocity m/s."""
        owner = f"particle {name!r}"
        m = B.positive(mass, f"{owner}: mass")
        r = _vec3(position, f"{owner}: position")
        v = _vec3(velocity, f"{owner}: velocity")
        self._new_name(name, "particle")
        self._nodes.append(dict(name=name, node="particle3d", body="particle3d", q=r, v=v,
                                params=dict(mass=m)))
        return name

    def _frame(self, name, owner):
        """(kind, r (3,), R (3, 3)) of a frame in the initial configuration."""
        if name == GROUND:
            return "ground", np.zeros(3), np.eye(3)
        for n in self._nodes:
            if n["name"] == name:
                if n["node"] == "particle3d":
                    return "particle", n["q"][:3], np.eye(3)
                return "body", n["q"][:3], _R_from_quat(n["q"][3:7])
        known = ", ".join([GROUND] + [n["name"] for n in self._nodes])
        raise ValueError(f"{owner}: unknown body {name!r}; known bodies: {known}")

    def _two(self, owner, body_i, body_j):
        ki = self._frame(body_i, owner)[0]
        kj = self._frame(body_j, owner)[0]
        if body_i == body_j:
            raise ValueError(f"{owner}: connects {body_i!r} to itself; give two different bodies")
        return ki, kj

    def _oriented(self, owner, *bodies):
        for b in bodies:
            if self._frame(b, owner)[0] == "particle":
                raise ValueError(f"{owner}: {b!r} is a particle, which has no orientation; "
                                 "use a spherical joint or a body")

    def _local(self, body, owner, at=None, point=None, which="", at_name="at", point_name=None):
        kind, r, R = self._frame(body, owner)
        if point is not None:
            s = _vec3(point, f"{owner}: {point_name or 'point' + which}")
        elif at is not None:
            s = R.T @ (_vec3(at, f"{owner}: {at_name}") - r)
        else:
            s = np.zeros(3)
        if kind == "particle":
            if np.linalg.norm(s) > 1e-12 * (1 + np.linalg.norm(r)):
                raise ValueError(f"{owner}: a particle has no orientation, so its attachment "
                                 f"point must be the particle itself; got a point {s} away "
                                 f"from particle {body!r}")
            s = np.zeros(3)
        return s

    def _global_point(self, body, s):
        _, r, R = self._frame(body, "")
        return r + R @ s

    def _dir_local(self, body, owner, axis=None, axis_local=None, what="axis"):
        """Unit direction in body coordinates from a global initial (axis) or local one."""
        _, _, R = self._frame(body, owner)
        if axis_local is not None:
            return _unit3(axis_local, f"{owner}: {what}_local")
        if axis is None:
            raise ValueError(f"{owner}: give the {what} (global, initial configuration) or "
                             f"{what}_i / {what}_j in body coordinates")
        return R.T @ _unit3(axis, f"{owner}: {what}")

    def _to_local(self, body, u_global):
        return self._frame(body, "")[2].T @ u_global

    def _add_inst(self, family, fi, fj, owner, **fields):
        fields.setdefault("profile", prof.constant(0.0))
        lst = self._inst.setdefault(family, [])
        lst.append(dict(fi=fi, fj=fj, owner=owner, **fields))
        return (family, len(lst) - 1)

    def _add_joint(self, name, kind, bi, bj, parts, driver=False, point_ref=(), geo=None):
        self._joints.append(dict(name=name, kind=kind, bi=bi, bj=bj, parts=parts,
                                 driver=driver, point_ref=point_ref))
        self._joint_geo[name] = dict(kind=kind, bi=bi, bj=bj, **(geo or {}))

    def _axis_frames(self, owner, bi, bj, axis, axis_i, axis_j):
        """Axis h_i (body i), h_j (body j) and perpendicular f_i, g_i (body i), f_j, g_j
        (body j, equal to f_i, g_i at the initial configuration)."""
        if axis_i is not None:
            hi = _unit3(axis_i, f"{owner}: axis_i")
        else:
            hi = self._dir_local(bi, owner, axis)
        Ri, Rj = self._frame(bi, owner)[2], self._frame(bj, owner)[2]
        hg = Ri @ hi
        if axis_j is not None:
            hj = _unit3(axis_j, f"{owner}: axis_j")
            if np.linalg.norm(np.cross(Rj @ hj, hg)) > 1e-9:
                raise ValueError(f"{owner}: axis_i and axis_j are not parallel in the initial "
                                 "configuration; call jaxmbs.assemble after building, or give "
                                 "one global axis")
        else:
            hj = Rj.T @ hg
        fi, gi = perp_pair(hi)
        fj, gj = Rj.T @ (Ri @ fi), Rj.T @ (Ri @ gi)
        return dict(h_i=hi, f_i=fi, g_i=gi, h_j=hj, f_j=fj, g_j=gj)

    def _points(self, owner, bi, bj, at, point_i, point_j):
        si = self._local(bi, owner, at, point_i, "_i")
        sj = self._local(bj, owner, at, point_j, "_j")
        return si, sj

    def _dot2_value(self, bi, bj, a_i, si, sj):
        _, ri, Ri = self._frame(bi, "")
        d = self._global_point(bj, sj) - self._global_point(bi, si)
        return float((Ri @ a_i) @ d)

    # ------------------------------------------------------------------ joints
    @recorded
    def add_spherical(self, name, body_i, body_j, at=None, point_i=None, point_j=None) -> str:
        """Ball joint: a point of body_i coincides with a point of body_j (3 equations).

        at: (3,) global position in the initial configuration, m; point_i / point_j: the
        point in body coordinates, m (override `at` for that body).
        Reaction: 'force' (3,) on body_j (N, global axes), 'moment' (3,) (zero up to
        round-off for a ball joint)."""
        owner = f"spherical {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        part = self._add_inst("sph", body_i, body_j, name, point_i=si, point_j=sj)
        self._add_joint(name, "spherical", body_i, body_j, [part], point_ref=part,
                        geo=dict(point_i=si, point_j=sj))
        return name

    @recorded
    def add_revolute(self, name, body_i, body_j, at=None, axis=None, point_i=None,
                     point_j=None, axis_i=None, axis_j=None) -> str:
        """Revolute (hinge): coincident points and parallel axes (5 equations); body_j
        turns relative to body_i about the axis.

        at / point_i / point_j: a point of the axis (m); axis: (3,) global direction in the
        initial configuration, or axis_i / axis_j in body coordinates.
        Reaction: force (3,) and moment (3,) on body_j about the joint point (global)."""
        owner = f"revolute {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        ax = self._axis_frames(owner, body_i, body_j, axis, axis_i, axis_j)
        p1 = self._add_inst("sph", body_i, body_j, name, point_i=si, point_j=sj)
        p2 = self._add_inst("dot1", body_i, body_j, name, a_i=ax["f_i"], b_j=ax["h_j"])
        p3 = self._add_inst("dot1", body_i, body_j, name, a_i=ax["g_i"], b_j=ax["h_j"])
        self._add_joint(name, "revolute", body_i, body_j, [p1, p2, p3], point_ref=p1,
                        geo=dict(point_i=si, point_j=sj, **ax))
        return name

    @recorded
    def add_universal(self, name, body_i, body_j, at=None, axis_i=None, axis_j=None,
                      point_i=None, point_j=None, axis_i_local=None, axis_j_local=None) -> str:
        """Universal (Cardan) joint: coincident points and an axis of body_i perpendicular
        to an axis of body_j (4 equations).

        axis_i, axis_j: (3,) global directions in the initial configuration (must be
        perpendicular), or axis_i_local / axis_j_local in body coordinates."""
        owner = f"universal {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        ai = self._dir_local(body_i, owner, axis_i, axis_i_local, "axis_i")
        aj = self._dir_local(body_j, owner, axis_j, axis_j_local, "axis_j")
        Ri, Rj = self._frame(body_i, owner)[2], self._frame(body_j, owner)[2]
        if abs((Ri @ ai) @ (Rj @ aj)) > 1e-9:
            raise ValueError(f"{owner}: the two axes must be perpendicular in the initial "
                             f"configuration (their dot product is {(Ri @ ai) @ (Rj @ aj):.3g})")
        p1 = self._add_inst("sph", body_i, body_j, name, point_i=si, point_j=sj)
        p2 = self._add_inst("dot1", body_i, body_j, name, a_i=ai, b_j=aj)
        self._add_joint(name, "universal", body_i, body_j, [p1, p2], point_ref=p1,
                        geo=dict(point_i=si, point_j=sj, a_i=ai, b_j=aj))
        return name

    def _line_parts(self, owner, name, bi, bj, si, sj, ax):
        """Point of body_j on the axis line of body_i: f_i . d = c1, g_i . d = c2."""
        parts = []
        for a in (ax["f_i"], ax["g_i"]):
            c = self._dot2_value(bi, bj, a, si, sj)
            parts.append(self._add_inst("dot2", bi, bj, name, a_i=a, point_i=si, point_j=sj,
                                        profile=prof.constant(c)))
        return parts

    @recorded
    def add_cylindrical(self, name, body_i, body_j, at=None, axis=None, point_i=None,
                        point_j=None, axis_i=None, axis_j=None) -> str:
        """Cylindrical joint: body_j slides along and turns about an axis fixed in body_i
        (4 equations: parallel axes, and body_j's point on the axis line)."""
        owner = f"cylindrical {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        ax = self._axis_frames(owner, body_i, body_j, axis, axis_i, axis_j)
        p1 = self._add_inst("dot1", body_i, body_j, name, a_i=ax["f_i"], b_j=ax["h_j"])
        p2 = self._add_inst("dot1", body_i, body_j, name, a_i=ax["g_i"], b_j=ax["h_j"])
        parts = [p1, p2] + self._line_parts(owner, name, body_i, body_j, si, sj, ax)
        self._add_joint(name, "cylindrical", body_i, body_j, parts, point_ref=parts[2],
                        geo=dict(point_i=si, point_j=sj, **ax))
        return name

    @recorded
    def add_prismatic(self, name, body_i, body_j, at=None, axis=None, point_i=None,
                      point_j=None, axis_i=None, axis_j=None) -> str:
        """Prismatic (slider): body_j translates along an axis fixed in body_i without
        relative rotation (5 equations)."""
        owner = f"prismatic {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        ax = self._axis_frames(owner, body_i, body_j, axis, axis_i, axis_j)
        p1 = self._add_inst("dot1", body_i, body_j, name, a_i=ax["f_i"], b_j=ax["h_j"])
        p2 = self._add_inst("dot1", body_i, body_j, name, a_i=ax["g_i"], b_j=ax["h_j"])
        lines = self._line_parts(owner, name, body_i, body_j, si, sj, ax)
        p5 = self._add_inst("dot1", body_i, body_j, name, a_i=ax["f_i"], b_j=ax["g_j"])
        parts = [p1, p2] + lines + [p5]
        self._add_joint(name, "prismatic", body_i, body_j, parts, point_ref=lines[0],
                        geo=dict(point_i=si, point_j=sj, **ax))
        return name

    @recorded
    def add_weld(self, name, body_i, body_j, at=None, point_i=None, point_j=None) -> str:
        """Rigid connection: coincident points and fixed relative orientation (6 eqs)."""
        owner = f"weld {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        Ri, Rj = self._frame(body_i, owner)[2], self._frame(body_j, owner)[2]
        E = np.eye(3)
        loc_j = [Rj.T @ (Ri @ E[k]) for k in range(3)]
        p1 = self._add_inst("sph", body_i, body_j, name, point_i=si, point_j=sj)
        parts = [p1] + [self._add_inst("dot1", body_i, body_j, name, a_i=E[a], b_j=loc_j[b])
                        for a, b in ((0, 1), (1, 2), (2, 0))]
        self._add_joint(name, "weld", body_i, body_j, parts, point_ref=p1,
                        geo=dict(point_i=si, point_j=sj))
        return name

    @recorded
    def add_distance(self, name, body_i, body_j, at_i=None, at_j=None, point_i=None,
                     point_j=None, length=None) -> str:
        """Massless rod with ball joints at both ends: |P_j - P_i| = length (1 equation).

        length: m, a number or a profile (a linear actuator); default: the initial
        distance. The multiplier is the rod's compression (N)."""
        owner = f"distance {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at_i, point_i, "_i", "at_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j", "at_j")
        d0 = float(np.linalg.norm(self._global_point(body_j, sj) - self._global_point(body_i, si)))
        if d0 < 1e-12:
            raise ValueError(f"{owner}: the two points coincide in the initial configuration; "
                             "a distance constraint needs distinct points (use add_spherical)")
        profile = prof.constant(d0) if length is None else prof.as_profile(length, f"{owner}: length")
        if length is not None and profile.fn is None and profile == prof.constant(profile.coef[0]):
            B.positive(profile.coef[0], f"{owner}: length")
        part = self._add_inst("dist3", body_i, body_j, name, point_i=si, point_j=sj, profile=profile)
        driver = profile.fn is not None or any(profile.coef[1:]) or profile.amp != 0
        self._add_joint(name, "distance", body_i, body_j, [part], point_ref=part, driver=driver)
        return name

    @recorded
    def add_point_on_line(self, name, body_i, body_j, at=None, axis=None, point_i=None,
                          point_j=None, axis_i=None) -> str:
        """A point of body_j stays on a line fixed in body_i (2 equations); rotation free.
        at / point_i: a point of the line; point_j: the point of body_j (default the same
        global point `at`); axis / axis_i: line direction."""
        owner = f"point-on-line {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        hi = _unit3(axis_i, f"{owner}: axis_i") if axis_i is not None else \
            self._dir_local(body_i, owner, axis)
        fi, gi = perp_pair(hi)
        parts = self._line_parts(owner, name, body_i, body_j, si, sj, dict(f_i=fi, g_i=gi))
        self._add_joint(name, "point_on_line", body_i, body_j, parts, point_ref=parts[0],
                        geo=dict(point_i=si, point_j=sj, h_i=hi, f_i=fi, g_i=gi))
        return name

    @recorded
    def add_point_on_plane(self, name, body_i, body_j, at=None, normal=None, point_i=None,
                           point_j=None, normal_i=None) -> str:
        """A point of body_j stays on a plane fixed in body_i (1 equation). at / point_i: a
        point of the plane; point_j: the point of body_j; normal / normal_i: the plane's
        normal (global initial / body_i coordinates)."""
        owner = f"point-on-plane {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        n = _unit3(normal_i, f"{owner}: normal_i") if normal_i is not None else \
            self._dir_local(body_i, owner, normal, what="normal")
        c = self._dot2_value(body_i, body_j, n, si, sj)
        part = self._add_inst("dot2", body_i, body_j, name, a_i=n, point_i=si, point_j=sj,
                              profile=prof.constant(c))
        self._add_joint(name, "point_on_plane", body_i, body_j, [part], point_ref=part)
        return name

    @recorded
    def add_point_on_cylinder(self, name, body_i, body_j, radius=None, at=None, axis=None,
                              point_i=None, point_j=None, axis_i=None) -> str:
        """A point of body_j stays on a cylinder fixed in body_i (1 equation): its distance
        from the cylinder's axis equals `radius` (a bead on a cylindrical surface).

        at / point_i: a point of the axis (global initial / body_i coordinates, m); axis /
        axis_i: the axis direction; point_j: the point of body_j (body_j coordinates; default
        body_j's reference point); radius (m): default the point's initial distance from the
        axis. The multiplier is the normal force on body_j, outward positive (N)."""
        owner = f"point-on-cylinder {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at, point_i, "_i")
        sj = self._local(body_j, owner, None, point_j, "_j")
        a = _unit3(axis_i, f"{owner}: axis_i") if axis_i is not None else \
            self._dir_local(body_i, owner, axis)
        d = self._global_point(body_j, sj) - self._global_point(body_i, si)
        A = self._frame(body_i, owner)[2] @ a
        rho = float(np.linalg.norm(d - np.dot(A, d) * A))
        if radius is None:
            if rho < 1e-12:
                raise ValueError(f"{owner}: the point lies on the axis in the initial "
                                 "configuration; give a radius and a point off the axis")
            radius = rho
        B.positive(radius, f"{owner}: radius")
        part = self._add_inst("cyl_point", body_i, body_j, name, point_i=si, a_i=a, point_j=sj,
                              radius=float(radius))
        self._add_joint(name, "point_on_cylinder", body_i, body_j, [part], point_ref=part)
        return name

    @recorded
    def add_parallel_axes(self, name, body_i, body_j, axis=None, axis_i=None, axis_j=None) -> str:
        """An axis of body_j stays parallel to an axis of body_i (2 equations)."""
        owner = f"parallel axes {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        ax = self._axis_frames(owner, body_i, body_j, axis, axis_i, axis_j)
        parts = [self._add_inst("dot1", body_i, body_j, name, a_i=ax["f_i"], b_j=ax["h_j"]),
                 self._add_inst("dot1", body_i, body_j, name, a_i=ax["g_i"], b_j=ax["h_j"])]
        self._add_joint(name, "parallel_axes", body_i, body_j, parts)
        return name

    @recorded
    def add_perpendicular_axes(self, name, body_i, body_j, axis_i=None, axis_j=None,
                               axis_i_local=None, axis_j_local=None) -> str:
        """An axis of body_i stays perpendicular to an axis of body_j (1 equation)."""
        owner = f"perpendicular axes {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        ai = self._dir_local(body_i, owner, axis_i, axis_i_local, "axis_i")
        aj = self._dir_local(body_j, owner, axis_j, axis_j_local, "axis_j")
        part = self._add_inst("dot1", body_i, body_j, name, a_i=ai, b_j=aj)
        self._add_joint(name, "perpendicular_axes", body_i, body_j, [part])
        return name

    # ----------------------------------------------------------------- drivers
    @recorded
    def drive_joint(self, name, joint, profile, motion=None) -> str:
        """Prescribe a joint's relative motion as a function of time (1 equation).

        revolute (motion 'angle'): the rotation of body_j relative to body_i about the
        axis, rad, measured from the initial configuration (f(0) = 0 keeps the initial
        pose); prismatic (motion 'displacement'): the displacement of body_j's point
        along the axis from its initial position, m; cylindrical: motion 'angle' or
        'displacement'. profile: number, jaxmbs profile or JAX function f(t). Effort
        reported: torque (N m) / force (N) the driver applies to body_j in the direction
        of increasing f."""
        owner = f"driver {name!r}"
        if joint not in self._joint_geo:
            raise ValueError(f"{owner}: unknown joint {joint!r}; known: {', '.join(self._joint_geo)}")
        geo = self._joint_geo[joint]
        kind, bi, bj = geo["kind"], geo["bi"], geo["bj"]
        default = {"revolute": "angle", "prismatic": "displacement"}.get(kind)
        motion = motion or default
        if kind not in ("revolute", "prismatic", "cylindrical") or motion is None:
            raise ValueError(f"{owner}: joint {joint!r} is a {kind}; only revolute, prismatic and "
                             "cylindrical joints can be driven (use add_distance(length=f) or "
                             "add_constraint for other motions)")
        if motion not in ("angle", "displacement") or (kind == "revolute" and motion != "angle") \
                or (kind == "prismatic" and motion != "displacement"):
            raise ValueError(f"{owner}: motion {motion!r} does not apply to a {kind}")
        profile = prof.as_profile(profile, f"{owner}: profile")
        self._new_name(name, "driver")
        if motion == "angle":
            part = self._add_inst("rot_driver", bi, bj, name, f_i=geo["f_i"], g_i=geo["g_i"],
                                  f_j=geo["f_j"], profile=profile)
        else:
            c0 = self._dot2_value(bi, bj, geo["h_i"], geo["point_i"], geo["point_j"])
            if profile.fn is None:
                profile = profile._replace(coef=(profile.coef[0] + c0,) + tuple(profile.coef[1:]))
            else:
                fn = profile.fn
                profile = profile._replace(coef=(c0,) + tuple(profile.coef[1:]), fn=fn)
            part = self._add_inst("dot2", bi, bj, name, a_i=geo["h_i"], point_i=geo["point_i"],
                                  point_j=geo["point_j"], profile=profile)
        self._add_joint(name, "driver", bi, bj, [part], driver=True)
        return name

    @recorded
    def drive_point(self, name, body, profile, at=None, point=None, axis=(0.0, 0.0, 1.0)) -> str:
        """Prescribe the displacement of a body point along a fixed global axis from its
        initial position, f(t) in m (1 equation): axis . (P(t) - P(0)) = f(t), e.g. the
        vertical wheel travel of a suspension. at / point: the point (global initial /
        body coordinates). Effort: the force (N) applied to the body along the axis."""
        owner = f"driver {name!r}"
        self._frame(body, owner)
        if body == GROUND:
            raise ValueError(f"{owner}: the ground cannot be driven")
        s = self._local(body, owner, at, point, "")
        a = _unit3(axis, f"{owner}: axis")
        profile = prof.as_profile(profile, f"{owner}: profile")
        c0 = float(a @ self._global_point(body, s))
        profile = profile._replace(coef=(profile.coef[0] + c0,) + tuple(profile.coef[1:]))
        self._new_name(name, "driver")
        part = self._add_inst("dot2", GROUND, body, name, a_i=a, point_i=np.zeros(3),
                              point_j=s, profile=profile)
        self._add_joint(name, "driver", GROUND, body, [part], driver=True)
        return name

    # ------------------------------------------------- joint coordinates (armature, ...)
    def _joint_coordinate(self, owner, joint, motion=None, allow=("angle", "displacement")):
        """(kind 'hinge' | 'slide', body_i, body_j, fields, c0) of a joint's coordinate:
        a revolute's angle, a prismatic's displacement, or either of a cylindrical's
        (motion 'angle' / 'displacement'). fields: f_i, g_i, f_j (rotation), a_i, point_i,
        point_j (translation); c0: the initial value of a_i . (P_j - P_i)."""
        if joint not in self._joint_geo:
            known = ", ".join(k for k, g in self._joint_geo.items()
                              if g["kind"] in ("revolute", "prismatic", "cylindrical"))
            raise ValueError(f"{owner}: unknown joint {joint!r}; revolute, prismatic and "
                             f"cylindrical joints of this model: {known or 'none'}")
        geo = self._joint_geo[joint]
        kind = geo["kind"]
        default = {"revolute": "angle", "prismatic": "displacement"}.get(kind)
        motion = motion or default
        if kind not in ("revolute", "prismatic", "cylindrical") or motion is None:
            raise ValueError(f"{owner}: joint {joint!r} is a {kind}; give a revolute, a prismatic "
                             "or a cylindrical joint (with motion='angle' or 'displacement')")
        if motion not in ("angle", "displacement") or (kind == "revolute" and motion != "angle") \
                or (kind == "prismatic" and motion != "displacement"):
            raise ValueError(f"{owner}: motion {motion!r} does not apply to the {kind} {joint!r}")
        if motion not in allow:
            raise ValueError(f"{owner}: needs a joint {' or '.join(allow)}, got the {motion} of "
                             f"the {kind} {joint!r}")
        bi, bj = geo["bi"], geo["bj"]
        c0 = self._dot2_value(bi, bj, geo["h_i"], geo["point_i"], geo["point_j"])
        fields = dict(f_i=geo["f_i"], g_i=geo["g_i"], f_j=geo["f_j"], a_i=geo["h_i"],
                      point_i=geo["point_i"], point_j=geo["point_j"])
        return ("hinge" if motion == "angle" else "slide"), bi, bj, fields, c0

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
        kind, bi, bj, fields, c0 = self._joint_coordinate(owner, joint, motion)
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
                                                          allow=("displacement",))
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
        kind, bi, bj, fields, c0 = self._joint_coordinate(owner, joint, motion)
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

    # ------------------------------------------------------- rolling (nonholonomic)
    @recorded
    def add_rolling_disc(self, name, disc, radius, axle=None, center=None, axle_local=None,
                         center_local=None, surface=GROUND, plane_point=(0.0, 0.0, 0.0),
                         plane_normal=(0.0, 0.0, 1.0)) -> str:
        """A thin disc (wheel) rolling without slip on a plane: 1 holonomic row (the disc
        touches the plane) and 2 nonholonomic rows (its contact point has no velocity in
        the plane relative to the surface).

        disc: body; radius: m; axle / axle_local: the disc's axis (global initial / body);
        center / center_local: its centre (global initial / body; default the reference
        point); surface: 'ground' or a body carrying the plane through plane_point with
        unit normal plane_normal (global initial coordinates), the disc on its + side.
        Reaction: 'force' (3,) on the disc at its centre and 'moment'."""
        owner = f"rolling disc {name!r}"
        self._two(owner, surface, disc)
        self._oriented(owner, disc)
        r = B.positive(radius, f"{owner}: radius")
        sj = self._local(disc, owner, center, center_local, "", "center", "center_local")
        aj = self._dir_local(disc, owner, axle, axle_local, "axle")
        si = self._local(surface, owner, _vec3(plane_point, f"{owner}: plane_point"), None, "")
        ni = self._to_local(surface, _unit3(plane_normal, f"{owner}: plane_normal"))
        self._new_name(name, "joint")
        fields = dict(point_i=si, n_i=ni, point_j=sj, a_j=aj, radius=r)
        p1 = self._add_inst("disc_contact", surface, disc, name, **fields)
        p2 = self._add_inst("disc_no_slip", surface, disc, name, **fields)
        self._add_joint(name, "rolling_disc", surface, disc, [p1, p2], point_ref=p1)
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
        self._add_force("torsion3", name=name, fi=geo["bi"], fj=geo["bj"], f_i=geo["f_i"],
                        g_i=geo["g_i"], f_j=geo["f_j"], k=k, c=c, angle=a0, torque=t0)
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
        if control is not None and (isinstance(control, bool) or not isinstance(control, int)
                                    or control < 0):
            raise ValueError(f"{owner}: control must be a non-negative integer channel, got {control!r}")
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

    # ------------------------------------------------------------------- build
    def _force_instances(self):
        forces = {k: [dict(x) for x in v] for k, v in self._forces.items()}
        forces.update(self._beam_forces())
        loads = forces.get("load3", [])
        if loads:
            loads[0]["static_block"] = lambda items: (tuple(x["control"] for x in items),
                                                      tuple(x["floc"] for x in items),
                                                      tuple(x["tloc"] for x in items))
        acts = forces.get("joint_actuator", [])
        if acts:
            acts[0]["static_block"] = lambda items: (tuple(x["control"] for x in items),
                                                     tuple(x["kind"] for x in items))
        return forces

    def _frame_state(self, name):
        """(X (7,), V (6,)) of a frame in the initial state (the ground: identity, rest)."""
        if name == GROUND:
            return np.r_[np.zeros(3), 1.0, 0.0, 0.0, 0.0], np.zeros(6)
        n = next(n for n in self._nodes if n["name"] == name)
        return np.asarray(n["q"], float), np.asarray(n["v"], float)

    def _rotor_block(self, nblocks, fidx, q0, v0, families, jparams, where, row):
        """The joint_rotor family block (one extra coordinate per armature, the rotor
        nodes' q entries) and the rotors' initial rates (consistent with the bodies'
        initial velocities: the rows' velocity equations solved for sdot)."""
        from ..core.mechanism import FamilyBlock

        fam = F.constraint_family("joint_rotor")
        R = self._rotors
        blk_nodes = next(b for b in nblocks if b.kind == "rotor")
        cols = tuple((blk_nodes.q0 + i,) for i in range(len(R)))
        p = {f: jnp.asarray(np.array([r["fields"][f] for r in R], float)) for f in fam.fields}
        static = (tuple(r["kind"] for r in R),)
        Xi, Vi = map(np.array, zip(*[self._frame_state(r["fi"]) for r in R]))
        Xj, Vj = map(np.array, zip(*[self._frame_state(r["fj"]) for r in R]))
        z = jnp.zeros((len(R), 1))
        _, Gi, Gj, _, Gs = fam.evaluate(p, jnp.asarray(Xi), jnp.asarray(Xj), jnp.asarray(Vi),
                                        jnp.asarray(Vj), z, z, static)
        rate = -(np.einsum("krc,kc->kr", np.asarray(Gi), Vi)
                 + np.einsum("krc,kc->kr", np.asarray(Gj), Vj))[:, 0] / np.asarray(Gs)[:, 0, 0]
        v0 = np.array(v0, float)
        v0[blk_nodes.v0: blk_nodes.v0 + len(R)] = rate
        families.append(FamilyBlock("joint_rotor", tuple(fidx[r["fi"]] for r in R),
                                    tuple(fidx[r["fj"]] for r in R), row, 1,
                                    tuple(r["name"] for r in R), (), cols, static))
        jparams["joint_rotor"] = p
        for k in range(len(R)):
            where[("joint_rotor", k)] = (row + k,)
        return row + len(R), v0

    def _coupling_constraints(self, nblocks):
        """User-constraint entries (fn(q, t, polycoef)) of the joint couplings."""
        if not self._couplings:
            return []
        starts = {GROUND: None}
        for b in nblocks:
            if b.kind == "spatial_rigid":
                starts.update({n: b.q0 + 7 * i for i, n in enumerate(b.names)})
        out = []
        for cp in self._couplings:
            f1 = _coordinate_fn(cp["specs"][0], starts)
            f2 = None if cp["specs"][1] is None else _coordinate_fn(cp["specs"][1], starts)
            o1, o2 = cp["offsets"]

            def fn(q, t, c, f1=f1, f2=f2, o1=o1, o2=o2):
                y = 0.0 if f2 is None else f2(q) + o2
                rhs = c[0] + y * (c[1] + y * (c[2] + y * (c[3] + y * c[4])))
                return jnp.atleast_1d(f1(q) + o1 - rhs)

            out.append(dict(name=cp["name"], fn=fn, params=cp["polycoef"]))
        return out

    # ------------------------------------------------------------------- build
    # (the one build() is BuilderBase's; these are its hooks)
    RIGID_BODIES = ("spatial_rigid", "particle3d")
    VALUE_KEYS = {("distance", "dist3"): "length"}

    def _has_bodies(self):
        return bool(self._nodes or self._beams)

    def _node_specs(self):
        rotor_nodes = [dict(name=r["name"], node="rotor", body="rotor", q=np.zeros(1),
                            v=np.zeros(1), params=dict(inertia=r["inertia"])) for r in self._rotors]
        return self._nodes + self._beam_nodes() + rotor_nodes

    def _extra_rows(self, nblocks, fidx, q0, v0, families, jparams, where, row):
        if self._rotors:
            row, v0 = self._rotor_block(nblocks, fidx, q0, v0, families, jparams, where, row)
        return row, q0, v0

    def _generated_constraints(self, nblocks):
        return self._coupling_constraints(nblocks)

    def _n_controls(self):
        return max([x["control"] + 1 for x in self._forces.get("load3", [])
                    + self._forces.get("joint_actuator", [])] + [0])
