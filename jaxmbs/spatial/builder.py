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
the ground) come from `jaxmbs.flexible.build_cables.CableBuilder`.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import profiles as prof
from ..core import build as B
from ..core import families as F
from ..core.build import GROUND, BuilderBase, recorded
from ..flexible.build_cables import CableBuilder
from . import families as _families  # noqa: F401  (registers the spatial families)
from . import forces as _forces  # noqa: F401
from .build_forces import ForceMethods
from .build_joints import JointMethods
from .inputs import _inertia, _orientation, _R_from_quat, _unit3, _vec3

__all__ = ["SpatialModel"]

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


class SpatialModel(JointMethods, ForceMethods, CableBuilder, BuilderBase):
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
        self._init_beams()  # spatial ANCF cables (jaxmbs.flexible.build_cables.CableBuilder)

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

    def _add_joint(self, name, kind, bi, bj, parts, driver=False, point_ref=(), geo=None,
                   refs=None):
        """refs: {geometry name: Same} of the parts' fields that hold geo's values."""
        self._joints.append(dict(name=name, kind=kind, bi=bi, bj=bj, parts=parts,
                                 driver=driver, point_ref=point_ref))
        self._joint_geo[name] = dict(kind=kind, bi=bi, bj=bj, **(geo or {}), refs=refs or {})


    # ------------------------------------------------- joint coordinates (armature, ...)
    def _geo(self, joint, *names):
        """The geometry values `names` of a joint, each the `Same` of the joint part's
        field that holds it where there is one (a feature on the joint then reads that
        one Params leaf instead of a copy), else the value."""
        geo = self._joint_geo[joint]
        return [geo["refs"].get(n, geo[n]) for n in names]

    def _joint_coordinate(self, owner, joint, motion=None, allow=("angle", "displacement"),
                          shared=False):
        """(kind 'hinge' | 'slide', body_i, body_j, fields, c0) of a joint's coordinate:
        a revolute's angle, a prismatic's displacement, or either of a cylindrical's
        (motion 'angle' / 'displacement'). fields: f_i, g_i, f_j (rotation), a_i, point_i,
        point_j (translation), with shared=True each the `Same` of the joint part's field
        that holds it where there is one (for instances built by `build`: forces,
        drivers); c0: the initial value of a_i . (P_j - P_i)."""
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
        if shared:  # (the joint parts' fields where they hold the value)
            fields.update({k: geo["refs"][k] for k in fields if k in geo["refs"]})
        return ("hinge" if motion == "angle" else "slide"), bi, bj, fields, c0


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
        lims = forces.get("joint_limit", [])
        if lims:
            lims[0]["static_block"] = lambda items: (tuple(x["kind"] for x in items),)
        return forces

    def _frame_state(self, name):
        """(X (7,), V (6,)) of a frame in the initial state (the ground: identity, rest)."""
        if name == GROUND:
            return np.r_[np.zeros(3), 1.0, 0.0, 0.0, 0.0], np.zeros(6)
        n = next(n for n in self._nodes if n["name"] == name)
        return np.asarray(n["q"], float), np.asarray(n["v"], float)

    def _rotor_block(self, nblocks, fidx, q0, v0, families, jparams, where, row, aliases):
        """The joint_rotor family block (one extra coordinate per armature, the rotor
        nodes' q entries) and the rotors' initial rates (consistent with the bodies'
        initial velocities: the rows' velocity equations solved for sdot). The joint's
        geometry is read from the joint's parts (`Same` fields, `FamilyBlock.shared`)."""
        from ..core.mechanism import FamilyBlock

        fam = F.constraint_family("joint_rotor")
        R = self._rotors
        blk_nodes = next(b for b in nblocks if b.kind == "rotor")
        cols = tuple((blk_nodes.q0 + i,) for i in range(len(R)))
        items = [r["fields"] for r in R]
        own = aliases.own_params("joints", "joint_rotor", items, fam.fields)
        shared = aliases.shared("joints", "joint_rotor", items, fam.fields)
        p = {f: jnp.asarray(np.array([aliases.value(x[f]) for x in items], float))
             for f in fam.fields}  # (every value, for the initial rates)
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
                                    tuple(r["name"] for r in R), (), cols, static, shared))
        jparams["joint_rotor"] = own
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

    def _extra_rows(self, nblocks, fidx, q0, v0, families, jparams, where, row, aliases=None):
        if self._rotors:
            row, v0 = self._rotor_block(nblocks, fidx, q0, v0, families, jparams, where, row,
                                        aliases)
        return row, q0, v0

    def _generated_constraints(self, nblocks):
        return self._coupling_constraints(nblocks)

    def _n_controls(self):
        return max([x["control"] + 1 for x in self._forces.get("load3", [])
                    + self._forces.get("joint_actuator", [])] + [0])
