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

import jax.numpy as jnp
import numpy as np

from .. import profiles as prof
from ..core.build import GROUND, BuilderBase
from ..core.build import recorded as _recorded
from ..core.mechanism import Built, ForceBlock, NodeBlock
from ..flexible.build_beams import BeamBuilder
from ..flexible.ffr_build import FfrBuilder
from . import families as _planar_families  # noqa: F401  (registers the planar families)
from .build_forces import ForceMethods
from .build_joints import JointMethods, _finite, _positive, _rot, _vec2

__all__ = ["Model", "Built"]

_CONTACT_FAMILIES = ("circle_line", "circle_circle", "circle_profile", "circle_terrain")




class Model(JointMethods, ForceMethods, FfrBuilder, BeamBuilder, BuilderBase):
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

    def _extra_rows(self, nblocks, fidx_map, q0, v0, families, jparams, where, row, aliases=None):
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
