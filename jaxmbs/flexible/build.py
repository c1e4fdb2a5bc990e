"""Builder methods for planar ANCF beams (mixed into `jaxmbs.Model`).

`add_beam` meshes a straight beam into nodes '<beam>.n0' .. '<beam>.n<elements>' of the
node family 'ancf2d_node' (coordinates '<beam>.n<k>.x', '.y', '.x_x', '.y_x'); the
section and material of element k are the Params leaves '<beam>.n<k>.rho', '.area',
'.E', '.I', '.length' (the element from node k to node k + 1), its Rayleigh damping
'.alpha', '.beta' and its distributed load '.line_load' (`add_beam_line_load`). `add_node_pin`,
`add_node_weld`, `add_node_load` (dead or follower forces, at nodes or material points)
and `add_node_torque` attach nodes (`add_node_pin`, `add_node_weld`: also material points
xi of elements, families 'beam_beam_point' and 'beam_beam_slope' between two beams) to the
ground or to other beams and load them; `add_beam_body_pin` and
`add_beam_body_weld` attach a node, or any material point xi of an element, to a rigid
body, a particle or the ground (constraint families 'beam_point' and 'beam_slope' on the
frame kind 'planar_beam'); `add_beam_slider` lets a body point slide along a beam's
deformed centre line (family 'beam_slider', an extra coordinate; prismatic=True adds
'beam_slider_angle').

`add_shear_beam` meshes a straight shear-deformable (Simo-Reissner / Timoshenko) beam
into nodes '<beam>.n<k>' of the node family 'reissner2d_node' (coordinates '.x', '.y',
'.theta': the cross-section's angle) with the Params leaves of `add_beam` plus '.G' (Pa)
and '.shear_factor' (`jaxmbs.flexible.reissner`). Its nodes are planar frames, so
`add_revolute`, `add_weld` and the other planar joints, springs and loads take them by
name; `add_node_pin`, `add_node_weld` and dead `add_node_load`s on them forward to
`add_revolute`, `add_weld` and `add_load`, and `add_beam_line_load` loads them too.

`CableBuilder` (mixed into `jaxmbs.SpatialModel`) is the same in 3D: spatial ANCF cables
of the node family 'ancf3d_node' (coordinates '<beam>.n<k>.x', '.y', '.z', '.x_x', '.y_x',
'.z_x'; `jaxmbs.flexible.ancf3d`), (3,) vectors where the planar methods take (2,) ones,
a spherical `add_beam_body_pin` (family 'beam3d_point'), `add_beam_body_weld` (a cable
welded to a rigid body or the ground: 'beam3d_point' + 'beam3d_slope', the slope's
direction fixed in the body; a cable has no torsion) and, with follower=True, a
tangential follower force F_t (a number) in `add_node_load` (family 'beam3d_follower'; a
cable has no cross-section frame for a normal component). The methods common to both
live in `_BeamMethods`, parametrised by the class attributes `_beam_dim` and
`_beam_families`.
"""
from __future__ import annotations

import numpy as np

from ..core import build as B
from ..core.build import GROUND, Same, recorded

__all__ = ["SECTION_KEYS", "DAMPING_KEYS", "SHEAR_KEYS", "SHEAR_FACTOR"]



SECTION_KEYS = ("E", "rho", "A", "I")
# the Params field of each section key: its rule is the body family's (`AncfBeam.rules`,
# `ReissnerBeam.rules`), the one that Mechanism.replace and the PARAMS flag apply
SECTION_FIELDS = {"E": "E", "rho": "rho", "A": "area", "I": "I", "alpha": "alpha",
                  "beta": "beta", "G": "G", "k": "shear_factor"}
SECTION_UNITS = {"E": "Pa", "rho": "kg/m^3", "A": "m^2", "I": "m^4", "alpha": "1/s",
                 "beta": "s", "G": "Pa", "k": "dimensionless"}
DAMPING_KEYS = ("alpha", "beta")  # optional section keys, default 0
SHEAR_KEYS = ("G", "nu")  # a shear beam's section: exactly one of them
SHEAR_FACTOR = 5.0 / 6.0  # default shear correction factor k (a rectangle)


class _BeamMethods:
    """The beam methods shared by the planar and the spatial builder (needs `_new_name`,
    `_names`, `_add_inst`, `_add_joint`, `_frame`, `_local` of the builder). Vectors are
    (d,) with d = `_beam_dim`; `_beam_families` names the families."""

    _beam_dim = 2
    _beam_families = dict(node="ancf2d_node", body="ancf2d_beam", point="ancf_point",
                          load="ancf_load", body_point="beam_point", beam_pin="beam_beam_point",
                          point_load="beam_load", follower="beam_follower")

    def _init_beams(self):
        self._beams = {}       # beam name -> dict(nodes, q, section, length)
        self._beam_node = {}   # node name -> (beam, k)
        self._node_loads = []  # dicts: family ('ancf_load', 'beam_follower', ...), its fields
        self._shear_beams = {}  # shear beam name -> dict(nodes, q, section, length, line_load)
        self._shear_node = {}   # shear beam node name -> its initial (x, y, theta) (3,)
        self._sliders = []     # sliding joints along planar beams (BeamBuilder.add_beam_slider)

    @recorded
    def add_beam(self, name, start, end, elements=8, section=None) -> tuple:
        """Add a straight ANCF beam from `start` to `end`: in the plane (`jaxmbs.Model`) an
        Euler-Bernoulli beam, in space (`jaxmbs.SpatialModel`) a cable (axial strain and
        isotropic bending, no torsion).

        Args:
          start, end: (2,) planar / (3,) spatial end points of the undeformed centre line, m.
          elements: number of elements n (>= 1); the beam gets n + 1 nodes.
          section: dict with E (Pa, Young's modulus), rho (kg/m^3), A (m^2, area) and
            I (m^4, second moment of area about the bending axis; in 3D about any axis
            of the section): EA (N) is the axial,
            EI (N m^2) the bending stiffness, rho A (kg/m) the mass per length; optional
            Rayleigh damping alpha (1/s, mass-proportional: -alpha M qdot) and beta (s,
            stiffness-proportional, strain-rate form: viscous axial force beta EA
            eps_dot and moment beta EI kappa_dot), default 0. A mode of frequency omega
            then has the damping ratio zeta = alpha / (2 omega) + beta omega / 2. Params
            leaves '<name>.n<k>.alpha', '.beta'.
        Returns the node names (f'{name}.n0', ..., f'{name}.n{n}'), node 0 at `start`.
        The initial state is the undeformed, resting beam (slopes = the unit direction).
        """
        self._new_name(name, "beam")
        owner = f"beam {name!r}"
        dim = self._beam_dim
        a = B.vector(start, dim, f"{owner}: start")
        b = B.vector(end, dim, f"{owner}: end")
        sec = self._section(owner, section)
        n, length, d = self._straight(owner, a, b, elements)
        nodes = tuple(f"{name}.n{k}" for k in range(n + 1))
        for nd in nodes:
            self._names.add(nd)
        q = [np.r_[a + (b - a) * k / n, d] for k in range(n + 1)]
        self._beams[name] = dict(nodes=nodes, q=q, section=sec, length=length / n,
                                 line_load=np.zeros((n + 1, dim)))
        for k, nd in enumerate(nodes):
            self._beam_node[nd] = (name, k)
        return nodes

    def _section(self, owner, section, extra_keys=(), optional=(), rules=None):
        """The validated section dict: SECTION_KEYS (> 0), the damping keys (>= 0, default
        0), the keys `optional` (returned only when given) and one of `extra_keys` when
        given (a shear beam's G or nu); ValueError naming the beam otherwise. Each value
        obeys the rule of its Params field (`SECTION_FIELDS`) in `rules` (default: the
        beam families' rules), the rule that Mechanism.replace applies to it."""
        if not isinstance(section, dict):
            raise ValueError(f"{owner}: section must be a dict with keys {SECTION_KEYS} "
                             f"(Pa, kg/m^3, m^2, m^4), got {section!r}")
        missing = [k for k in SECTION_KEYS if k not in section]
        if extra_keys and sum(k in section for k in extra_keys) != 1:
            missing.append(" or ".join(extra_keys) + " (exactly one)")
        extra = [k for k in section if k not in SECTION_KEYS + DAMPING_KEYS + tuple(extra_keys)
                 + tuple(optional)]
        if missing or extra:
            raise ValueError(f"{owner}: section needs exactly the keys {SECTION_KEYS + tuple(extra_keys)} "
                             f"(and optionally {DAMPING_KEYS + tuple(optional)}); missing {missing}, "
                             f"unknown {extra}")
        from ..core.validate import check_rule
        from .reissner import ReissnerBeam

        if rules is None:
            rules = ReissnerBeam.rules  # (the ANCF beam's rules and G, shear_factor)
        sec = {}
        for k in SECTION_KEYS + DAMPING_KEYS + tuple(extra_keys) + tuple(optional):
            if k not in section and k not in DAMPING_KEYS:
                continue
            what, value = f"{owner}: section[{k!r}]", section.get(k, 0.0)
            rule = rules.get(SECTION_FIELDS.get(k))
            sec[k] = (check_rule(value, rule, what, SECTION_UNITS[k]) if rule
                      else B.finite(value, what))
        return sec

    @staticmethod
    def _straight(owner, a, b, elements):
        """(number of elements n, the beam's length m, unit direction (d,)) of a straight
        beam from a to b; ValueError for a bad element count or coincident ends."""
        if isinstance(elements, bool) or not isinstance(elements, (int, np.integer)) or elements < 1:
            raise ValueError(f"{owner}: elements must be an integer >= 1, got {elements!r}")
        length = float(np.linalg.norm(b - a))
        if not length > 0:
            raise ValueError(f"{owner}: start and end coincide; give a beam of positive length")
        return int(elements), length, (b - a) / length

    def _node(self, node, owner, allow_ground=False):
        if allow_ground and node == GROUND:
            return np.r_[np.zeros(self._beam_dim), np.eye(self._beam_dim)[0]]
        if node not in self._beam_node:
            known = ", ".join(self._beam_node) or "none (add one with add_beam)"
            raise ValueError(f"{owner}: unknown beam node {node!r}"
                             f"{' (or ground)' if allow_ground else ''}; beam nodes: {known}")
        beam, k = self._beam_node[node]
        return self._beams[beam]["q"][k]

    def _attach(self, name, what, node, other):
        """Take the joint name; the initial coordinates (2d,) of `other` (ground: r = 0,
        r_x = (1, 0(, 0))) and of `node`, ValueError naming the joint for unknown nodes."""
        self._new_name(name, "joint")
        owner = f"{what} {name!r}"
        qj = self._node(node, owner)
        qi = self._node(other, owner, allow_ground=True)
        if other == node:
            raise ValueError(f"{owner}: connects {node!r} to itself")
        return qi, qj

    @recorded
    def add_node_pin(self, name, node, other=GROUND, xi=0.0, xi_other=0.0) -> str:
        """Pin a beam to `other` (the ground, default, or another beam) where they are in
        the initial configuration: planar a revolute joint (2 rows), in space a spherical
        joint (3 rows), r - r_other = const (m). The slopes stay free.

        Args:
          node: a beam node; with xi in [0, 1] the material point xi of the element that
            starts at `node` (0: the node itself, 1: the next node; the last node of a
            beam takes xi = 0 only).
          other: the ground, or a beam node (of the same or another beam).
          xi_other: the material point of the element that starts at `other` (as xi; the
            ground: must be 0).
        Nodes on both sides (xi = xi_other = 0): family 'ancf_point' ('ancf3d_point');
        a material point and the ground: 'beam_point' ('beam3d_point', as
        `add_beam_body_pin` to the ground); material points of two elements:
        'beam_beam_point' ('beam3d_beam_point'), Params leaves f'{name}.point' (the
        constant offset (d,), m), '.xi_i', '.xi_j' (i: `other`, j: `node`; the elements'
        lengths are their nodes' leaves '<node>.length'). Reaction reported: the force on `node`'s side (N) and its moment.
        A node of a shear beam (`add_shear_beam`, a planar frame) is pinned by
        `add_revolute` at its position (`other` may then also be a rigid body or a particle;
        xi and xi_other must be 0).
        """
        if node in self._shear_node:
            if xi != 0.0 or xi_other != 0.0:
                raise ValueError(f"pin {name!r}: {node!r} is a shear-beam node; xi and xi_other "
                                 "apply to ANCF beams only (give 0)")
            return self.add_revolute(name, other, node, at=self._shear_node[node][:2])
        qi, qj = self._attach(name, "pin", node, other)
        owner = f"pin {name!r}"
        d = self._beam_dim
        x = B.finite(xi, f"{owner}: xi")
        xo = B.finite(xi_other, f"{owner}: xi_other")
        fam = self._beam_families
        if x == 0.0 and xo == 0.0:
            part = self._add_inst(fam["point"], other, node, name, point=qj[:d] - qi[:d])
            self._add_joint(name, "node_pin", other, node, [part])
            return name
        fi, fj, part, _, _, _ = self._material_pin(owner, name, node, other, x, xo)
        self._add_joint(name, "beam_body_pin" if fi == GROUND else "beam_pin", fi, fj, [part])
        return name

    def _material_pin(self, owner, name, node, other, xi, xi_other):
        """The pin rows of a joint at the material point xi of the element starting at
        `node` and the ground ('beam_point') or the material point xi_other of the element
        starting at `other` ('beam_beam_point'): (frame i: the ground or `other`'s element,
        frame j: `node`'s element, the part, the material point fields (xi, length; or
        xi_i, xi_j, length_i, length_j), the initial slope r_x (d,) at xi, that at xi_other
        (None with the ground)). ValueError naming the joint for xi_other with the
        ground."""
        fam = self._beam_families
        elem, x, L, P, t = self._material_point(owner, node, xi)
        if other == GROUND:
            if xi_other != 0.0:
                raise ValueError(f"{owner}: xi_other is for a beam node; the ground has none (give 0)")
            part = self._add_inst(fam["body_point"], GROUND, elem, name, point_i=P, xi=x, length=L)
            return GROUND, elem, part, dict(xi=x, length=L), t, None
        oelem, xo, Lo, Po, to = self._material_point(owner, other, xi_other, "xi_other")
        at = dict(xi_i=xo, xi_j=x, length_i=Lo, length_j=L)
        part = self._add_inst(fam["beam_pin"], oelem, elem, name, point=P - Po, **at)
        return oelem, elem, part, at, t, to

    def _material_point(self, owner, node, xi, arg="xi"):
        """(element's first node, xi, the element's length (a `Same` of its Params leaf
        '<node>.length', for the instances that need it), initial position P (d,), initial
        slope r_x (d,)) of the material point xi of the element starting at `node`; the last
        node of a beam (no element starts there) is xi = 1 of the element before it."""
        from .ancf import shape_functions

        self._node(node, owner)
        x = B.finite(xi, f"{owner}: {arg}")
        if not 0.0 <= x <= 1.0:
            raise ValueError(f"{owner}: {arg} must lie in [0, 1] (0: the node, 1: the next node), got {x}")
        beam, k = self._beam_node[node]
        d = self._beams[beam]
        if k == len(d["nodes"]) - 1:
            if x != 0.0:
                raise ValueError(f"{owner}: {node!r} is the last node of beam {beam!r} and starts no "
                                 f"element; give {arg} = 0 (the node) or the node before it with {arg} "
                                 "in [0, 1]")
            k, x = k - 1, 1.0
        L = d["length"]
        e = np.concatenate([d["q"][k], d["q"][k + 1]]).reshape(4, self._beam_dim)
        S, dS, _ = (np.asarray(a) for a in shape_functions(np.asarray(x), np.asarray(L)))
        # (the element's length is its first node's Params leaf: instances read that one)
        return d["nodes"][k], x, Same("bodies", d["nodes"][k], "length"), S @ e, dS @ e / L

    def _beam_body(self, name, what, node, body, xi, at, point):
        """Take the joint name; the material point and the body's point (body coordinates:
        `point`, else the global `at`, else where the material point is initially)."""
        self._new_name(name, "joint")
        owner = f"{what} {name!r}"
        elem, x, L, P, t = self._material_point(owner, node, xi)
        self._frame(body, owner)
        s = self._local(body, owner, P if at is None and point is None else at, point)
        return owner, elem, x, L, t, s

    @recorded
    def add_beam_body_pin(self, name, node, body, xi=0.0, at=None, point=None) -> str:
        """Pin a beam to a rigid body, a particle or the ground (planar: a revolute, 2
        rows; in space: a spherical joint, 3 rows): the material point xi in [0, 1] of the
        element that starts at beam node `node` (xi = 0: the node itself, 1: the next node;
        the last node of a beam takes xi = 0 only) coincides with a point of `body` (m).
        The body's point: `point` (d,) in body coordinates (m), or `at` (d,) its global
        position in the initial configuration (m); default: where the material point is
        initially. The beam's slope stays free. Reaction reported: force on the beam
        element (N) and its moment about the element's first node."""
        owner, elem, x, L, _, s = self._beam_body(name, "beam-body pin", node, body, xi, at, point)
        part = self._add_inst(self._beam_families["body_point"], body, elem, name, point_i=s,
                              xi=x, length=L)
        self._add_joint(name, "beam_body_pin", body, elem, [part])
        return name

    @recorded
    def add_node_load(self, name, node, force, follower=False, xi=0.0) -> str:
        """A force ((2,) planar / (3,) spatial, N; a cable's follower force: a number) on a
        beam node, or on the material point xi of the element that starts at `node` (xi = 0:
        the node itself, 1: the next node).

        follower=False (default): a dead (constant, non-following) force in global axes,
        conservative (potential -F . r). At a node (xi = 0; the last node of a beam is
        its own xi = 0): Params leaf f'{name}.force' (family 'ancf_load', 3D
        'ancf3d_load'); between nodes (0 < xi <= 1): generalised force S(xi)^T F on the
        element's nodes, potential -F . r(xi), Params leaves f'{name}.force', '.xi'
        (family 'beam_load', 3D 'beam3d_load'; planar and spatial; the element's length is
        its node's leaf '<node>.length', as for every material point below).
        follower=True, planar beams: a follower force given in the deformed
        cross-section frame at the point, force = (F_t, F_n): F_t along the unit tangent
        t = r_x / |r_x|, F_n along the normal n = z x t, so it turns with the beam (a
        tangential compressive tip force of a cantilever along +x is (-P, 0): Beck's
        column). On a node of a shear beam (`add_shear_beam`, xi = 0 only) the load is
        `add_load`'s, follower=True giving its components in the node's axes (the
        cross-section's normal and the section line; they differ from the centre line's
        tangent and normal by the shear angle). Non-conservative: no potential; its power Q . v is counted in the work
        `simulate` integrates. Params leaves f'{name}.force', '.torque' (0), '.xi'
        (family 'beam_follower').
        follower=True, spatial cables: a tangential follower force, force = F_t (a number,
        N; a (3,) vector is refused): f = F_t t along the unit tangent t = r_x / |r_x| of
        the deformed centre line at the point (F_t > 0 along increasing x: at a cable's
        last node a tension), Q = S(xi)^T f. A cable has no cross-section frame, so there
        is no normal component. Non-conservative as the planar one. Params leaves
        f'{name}.force_t', '.xi' (family 'beam3d_follower').
        """
        if node in self._shear_node and xi == 0.0:
            # a planar frame's load: dead (global axes) or following the cross-section
            # (body axes of the node: its normal (cos theta, sin theta) and the section line)
            return self.add_load(name, node, force=force, local=bool(follower))
        self._new_name(name, "force")
        owner = f"load {name!r}"
        self._node(node, owner)
        if not isinstance(follower, (bool, np.bool_)):
            raise ValueError(f"{owner}: follower must be True (force in the cross-section frame, "
                             f"turning with the beam) or False (dead, global axes), got {follower!r}")
        if follower and self._beam_dim == 3:
            if np.ndim(force) != 0:
                raise ValueError(f"{owner}: a cable's follower force is a number F_t (N, along the "
                                 "deformed tangent; a cable has no cross-section frame for other "
                                 f"components), got {force!r}; give follower=False for a dead (3,) force")
            Ft = B.finite(force, f"{owner}: force")
            self._node_loads.append(self._follower(owner, name, node, xi, force_t=Ft))
            return name
        f = B.vector(force, self._beam_dim, f"{owner}: force")
        if follower:
            self._node_loads.append(self._follower(owner, name, node, xi, force=f, torque=0.0))
            return name
        x = B.finite(xi, f"{owner}: xi")
        if x != 0.0:  # between nodes: the element's shape functions carry it
            elem, x, L, _, _ = self._material_point(owner, node, x)
            self._node_loads.append(dict(family=self._beam_families["point_load"], name=name,
                                         fi=GROUND, fj=elem, force=f, xi=x, length=L))
            return name
        self._node_loads.append(dict(family=self._beam_families["load"], name=name, fi=GROUND,
                                     fj=node, force=f))
        return name

    def _follower(self, owner, name, node, xi, **fields):
        """The follower-load instance ('beam_follower': fields force, torque;
        'beam3d_follower': force_t) at the material point xi of `node`."""
        elem, x, L, _, _ = self._material_point(owner, node, xi)
        return dict(family=self._beam_families["follower"], name=name, fi=GROUND, fj=elem,
                    **fields, xi=x, length=L)

    @recorded
    def add_beam_line_load(self, name, beam, load) -> str:
        """A dead distributed load `load` ((2,) planar / (3,) spatial) N per metre of
        undeformed length, global axes
        (fixed direction, not following the beam), uniform over every element of `beam`;
        its generalised forces are integral S^T load dx per element. It adds to the beam's
        Params leaves '<beam>.n<k>.line_load' (k, d) (several such loads sum there)."""
        self._new_name(name, "force")
        owner = f"line load {name!r}"
        beams = {**self._beams, **self._shear_beams}
        if beam not in beams:
            known = ", ".join(beams) or "none (add one with add_beam)"
            raise ValueError(f"{owner}: unknown beam {beam!r}; beams: {known}")
        d = beams[beam]
        d["line_load"] = d["line_load"] + B.vector(load, self._beam_dim, f"{owner}: load")[None, :]
        d["line_load"][-1] = 0.0  # the last node starts no element
        return name

    # ---------------------------------------------------------------- build hooks
    def _beam_nodes(self):
        fam = self._beam_families
        return (self._mesh_nodes(self._beams, fam["node"], fam["body"], {})
                + self._mesh_nodes(self._shear_beams, "reissner2d_node", "reissner2d_beam",
                                   dict(G="G", shear_factor="k")))

    @staticmethod
    def _mesh_nodes(beams, node, body, extra):
        """Node dicts of meshed beams (node and body family, initial q, v = 0) with the
        Params of the element that starts at each node (length 0 on a beam's last node);
        extra: Params field -> section key, beyond the common ones."""
        out = []
        for d in beams.values():
            s = d["section"]
            n = len(d["nodes"])
            for k, nd in enumerate(d["nodes"]):
                params = dict(rho=s["rho"], area=s["A"], E=s["E"], I=s["I"],
                              length=0.0 if k == n - 1 else d["length"], alpha=s["alpha"],
                              beta=s["beta"], line_load=d["line_load"][k],
                              **{f: s[key] for f, key in extra.items()})
                out.append(dict(name=nd, node=node, body=body, q=d["q"][k],
                                v=np.zeros_like(d["q"][k]), params=params))
        return out

    def _beam_forces(self):
        fam = self._beam_families
        out = {fam["load"]: [], fam["point_load"]: [], fam["follower"]: []}
        for x in self._node_loads:
            out[x["family"]].append({k: v for k, v in x.items() if k != "family"})
        return out
