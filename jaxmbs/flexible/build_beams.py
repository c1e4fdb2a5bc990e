"""The planar beam builder methods (mixed into `jaxmbs.Model`): joints and loads at beam
nodes and material points, welds to rigid bodies, sliders along beams."""
from __future__ import annotations

import numpy as np

from ..core import build as B
from ..core.build import GROUND, Same, recorded
from .build import SHEAR_FACTOR, SHEAR_KEYS, _BeamMethods


class BeamBuilder(_BeamMethods):
    """Mixin: planar ANCF beams for `jaxmbs.Model` (`_BeamMethods` plus welds with one
    slope row)."""

    @recorded
    def add_node_weld(self, name, node, other=GROUND, xi=0.0, xi_other=0.0) -> str:
        """Clamp a beam to `other` (the ground, default, or another beam) where they are in
        the initial configuration: the position (2 rows, r - r_other = const, m) and the
        slope's direction (1 row: the angle between the two slopes, or of the slope with
        the ground's x axis, stays its initial one; the slope's length, the axial strain,
        stays free). With the ground: a cantilever's clamped end.

        Args: node, other, xi, xi_other as `add_node_pin`: a beam node, or with xi in
          [0, 1] the material point xi of the element that starts at it; the ground or a
          beam node, with xi_other likewise (the ground: 0).
        Nodes on both sides (xi = xi_other = 0): families 'ancf_point' + 'ancf_slope',
        Params leaves f'{name}.point' (the constant offset (2,), m) and f'{name}.angle'
        (rad); a material point and the ground: 'beam_point' + 'beam_slope' (as
        `add_beam_body_weld` to the ground), Params leaves f'{name}.point_i' (m),
        '.axis_i' (the initial unit slope), '.xi' (both rows read the one leaf; the element's
        length is its node's leaf '<node>.length'); material points of two elements:
        'beam_beam_point' + 'beam_beam_slope', Params leaves f'{name}.point' (m),
        f'{name}.angle' (rad, from `other`'s initial slope to `node`'s), '.xi_i', '.xi_j'
        (i: `other`, j: `node`; the elements' lengths: their nodes' leaves). Reaction reported: the force on
        `node`'s side (N) and its moment. A node of a shear beam (`add_shear_beam`, a
        planar frame) is clamped by `add_weld` at its position (its position and its
        cross-section angle theta, 3 rows; `other` may then also be a rigid body; xi and
        xi_other must be 0).
        """
        if node in self._shear_node:
            if xi != 0.0 or xi_other != 0.0:
                raise ValueError(f"weld {name!r}: {node!r} is a shear-beam node; xi and xi_other "
                                 "apply to ANCF beams only (give 0)")
            return self.add_weld(name, other, node, at=self._shear_node[node][:2])
        qi, qj = self._attach(name, "weld", node, other)
        owner = f"weld {name!r}"
        x = B.finite(xi, f"{owner}: xi")
        xo = B.finite(xi_other, f"{owner}: xi_other")
        angle = lambda u, w: float(np.arctan2(u[1], u[0]) - np.arctan2(w[1], w[0]))
        if x == 0.0 and xo == 0.0:
            p1 = self._add_inst("ancf_point", other, node, name, point=qj[:2] - qi[:2])
            p2 = self._add_inst("ancf_slope", other, node, name, angle=angle(qj[2:], qi[2:]))
            self._add_joint(name, "node_weld", other, node, [p1, p2])
            return name
        fi, fj, p1, at, t, to = self._material_pin(owner, name, node, other, x, xo)
        if fi == GROUND:
            at = {k: Same("joints", p1, k) for k in at}  # (the pin's material point)
            p2 = self._add_inst("beam_slope", GROUND, fj, name, axis_i=t / np.linalg.norm(t), **at)
            self._add_joint(name, "beam_body_weld", GROUND, fj, [p1, p2])
        else:
            at = {k: Same("joints", p1, k) for k in at}
            p2 = self._add_inst("beam_beam_slope", fi, fj, name, angle=angle(t, to), **at)
            self._add_joint(name, "beam_weld", fi, fj, [p1, p2])
        return name

    @recorded
    def add_shear_beam(self, name, start, end, elements=8, section=None) -> tuple:
        """Add a straight shear-deformable (geometrically exact Simo-Reissner /
        Timoshenko) planar beam from `start` to `end` (`jaxmbs.flexible.reissner`): linear
        elements with one-point (reduced) integration, free of shear locking; nodes
        (x, y, theta), theta the absolute angle of the cross-section.

        Args:
          start, end: (2,) end points of the undeformed centre line, m.
          elements: number of elements n (>= 1); the beam gets n + 1 nodes. The element
            converges in O(h^2): about 20 elements give 1e-3 on a cantilever's deflection.
          section: dict with E (Pa), rho (kg/m^3), A (m^2), I (m^4, about the bending
            axis) and exactly one of G (shear modulus, Pa) or nu (Poisson's ratio:
            G = E / (2 (1 + nu))); optional k (shear correction factor, default 5/6, a
            rectangle) and Rayleigh damping alpha (1/s) and beta (s) as in `add_beam`.
            E A (N) is the axial, k G A (N) the shear, E I (N m^2) the bending stiffness,
            rho A (kg/m) the mass and rho I (kg m) the rotary inertia per length.
        Returns the node names (f'{name}.n0', ..., f'{name}.n{n}'), node 0 at `start`;
        coordinates '<node>.x', '.y', '.theta', Params leaves '<node>.rho', '.area', '.E',
        '.G', '.I', '.shear_factor', '.length', '.alpha', '.beta', '.line_load' (the element
        from node k to node k + 1). The nodes are planar frames: join them with
        `add_revolute`, `add_weld`, ... (to rigid bodies, particles, the ground or other
        nodes) or `add_node_pin` / `add_node_weld`, load them with `add_load` /
        `add_node_load` (a torque is a moment on the cross-section) and
        `add_beam_line_load`. The initial state is the undeformed, resting beam (theta =
        the direction angle of end - start).
        """
        self._new_name(name, "beam")
        owner = f"beam {name!r}"
        a = B.vector(start, 2, f"{owner}: start")
        b = B.vector(end, 2, f"{owner}: end")
        sec = self._section(owner, section, SHEAR_KEYS, ("k",))
        if "nu" in sec:
            if not -1.0 < sec["nu"] <= 0.5:
                raise ValueError(f"{owner}: section['nu'] must lie in (-1, 0.5], got {sec['nu']}")
            sec["G"] = sec["E"] / (2.0 * (1.0 + sec.pop("nu")))
        sec["k"] = sec.get("k", SHEAR_FACTOR)  # (G and k checked by _section: their rules)
        n, length, d = self._straight(owner, a, b, elements)
        th = float(np.arctan2(d[1], d[0]))
        nodes = tuple(f"{name}.n{k}" for k in range(n + 1))
        for nd in nodes:
            self._names.add(nd)
        q = [np.r_[a + (b - a) * k / n, th] for k in range(n + 1)]
        self._shear_beams[name] = dict(nodes=nodes, q=q, section=sec, length=length / n,
                                       line_load=np.zeros((n + 1, 2)))
        for nd, qk in zip(nodes, q):
            self._shear_node[nd] = qk
        return nodes

    @recorded
    def add_beam_body_weld(self, name, node, body, xi=0.0, at=None, point=None, axis=None,
                           axis_i=None) -> str:
        """Clamp a beam to a rigid body or the ground: the pin of `add_beam_body_pin` (2 rows)
        plus the beam's slope at the material point kept along a direction fixed in the body
        (1 row; the slope's length, the axial strain, stays free). The direction: `axis_i`
        in body coordinates, or `axis` its global direction in the initial configuration;
        default: the beam's initial slope there. A particle has no orientation: refused."""
        owner, elem, x, L, t, s = self._beam_body(name, "beam-body weld", node, body, xi, at, point)
        self._require_bodies(owner, (self._frame(body, owner)[0],), (body,),
                             "use add_beam_body_pin")
        u = self._axis(owner, body, t if axis is None else axis, axis_i)
        p1 = self._add_inst("beam_point", body, elem, name, point_i=s, xi=x, length=L)
        p2 = self._add_inst("beam_slope", body, elem, name, axis_i=u, xi=Same("joints", p1, "xi"),
                            length=Same("joints", p1, "length"))
        self._add_joint(name, "beam_body_weld", body, elem, [p1, p2])
        return name


    @recorded
    def add_node_torque(self, name, node, torque, xi=0.0) -> str:
        """A torque (moment about z, N m; positive counter-clockwise) on a beam node, or on
        the material point xi in [0, 1] of the element that starts at `node`. Its
        generalised force is M dtheta/dq with theta = atan2(y_x, x_x) the angle of the
        slope there (Q = M (-y_x, x_x) / |r_x|^2 on a node's slope); in the plane a moment
        is the same dead or following. Treated as non-conservative (its potential -M theta
        is multi-valued once theta winds past +-pi): no potential, its power M theta_dot
        counted in the work `simulate` integrates. Params leaves f'{name}.torque', '.force'
        (0, a follower force), '.xi' (family 'beam_follower'; the element's length is its
        node's leaf '<node>.length'). On a node of a
        shear beam (xi = 0 only): `add_load`'s torque on the node's cross-section angle."""
        if node in self._shear_node and xi == 0.0:
            return self.add_load(name, node, torque=torque)  # a moment on the cross-section
        self._new_name(name, "force")
        owner = f"torque {name!r}"
        self._node(node, owner)
        M = B.finite(torque, f"{owner}: torque")
        self._node_loads.append(self._follower(owner, name, node, xi, force=np.zeros(2), torque=M))
        return name

    @recorded
    def add_beam_slider(self, name, beam, body, s=None, point=None, at=None, prismatic=False,
                        axis=None) -> str:
        """A sliding joint along a beam (point on the deformed centre line, 2 rows): a point
        of `body` (a rigid body, a particle or the ground) stays on the centre line of
        `beam` and slides along it without friction; the bead-on-a-wire of a flexible
        rail, or (with the ground) a beam sliding through a fixed sleeve (Sugiyama,
        Escalona and Shabana 2003). Adds one extra, massless coordinate f'{name}.s' (m):
        the undeformed arc length from the beam's first node at which the point sits
        (family 'beam_slider'; the element changes with s, continuously: ANCF elements
        are C1). The body keeps its rotation free, unless prismatic=True.

        Args:
          beam: the beam's name (`add_beam`).
          body: a body, a particle or the ground.
          point: (2,) the point in body coordinates (m); or at: (2,) its global position
            in the initial configuration (m); default: the body's reference point (a
            particle: its position; the ground: refused, give at=).
          s: its initial arc length along the beam (m, in [0, beam length]); default: the
            projection of the point onto the beam's initial, straight centre line, which
            must then lie on it (within 1e-9 of its length).
          prismatic: True adds one row (family 'beam_slider_angle'): a direction fixed in
            the body stays along the beam's deformed tangent at s, so the body turns with
            the beam (a prismatic joint on a flexible guide; a rigid body or the ground,
            not a particle). axis: (2,) that direction, global, in the initial
            configuration (default: the beam's direction; it must be along it). Params
            leaf f'{name}.axis_j' (body coordinates).
        The initial rate of s is the tangential part of the point's initial velocity
        (the beam starts at rest); call `jaxmbs.assemble` if the point does not start on
        the beam. The point must stay within the beam (0 <= s <= its length): beyond its
        ends the end elements' cubics are extrapolated and nothing stops it. Reaction
        reported: the force on `body` (N, normal to the beam's tangent: frictionless) and
        its moment. Params leaves f'{name}.point_j'; with prismatic=True also '.axis_j'
        (the element length is the beam's first node's leaf '<beam>.n0.length'; the slider
        takes the beam's elements as equally long).
        """
        self._new_name(name, "joint")
        owner = f"slider {name!r}"
        if beam not in self._beams:
            known = ", ".join(self._beams) or "none (add one with add_beam)"
            raise ValueError(f"{owner}: unknown beam {beam!r}; beams: {known}")
        kind, qb = self._frame(body, owner)
        if kind == "ground" and at is None and point is None:
            raise ValueError(f"{owner}: give the ground's point with at= (global, m)")
        sj = self._local(body, owner, at, point)
        P = qb[:2] + np.array([[np.cos(qb[2]), -np.sin(qb[2])], [np.sin(qb[2]), np.cos(qb[2])]]) @ sj
        d = self._beams[beam]
        r0, u = d["q"][0][:2], d["q"][0][2:]
        total = d["length"] * (len(d["nodes"]) - 1)
        if s is None:
            s0 = float((P - r0) @ u)
            off = float(np.linalg.norm(P - r0 - s0 * u))
            if off > 1e-9 * total:
                raise ValueError(f"{owner}: the point {P} is {off:.3g} m off the centre line of beam "
                                 f"{beam!r}; put it on the beam or give s (and call jaxmbs.assemble)")
        else:
            s0 = B.finite(s, f"{owner}: s")
        if not -1e-9 * total <= s0 <= total * (1 + 1e-9):
            raise ValueError(f"{owner}: s = {s0} m lies outside beam {beam!r} (0 .. {total} m)")
        vb = self._bodies[body]["v"] if kind == "body" else (
            np.r_[self._particles[body]["v"], 0.0] if kind == "particle" else np.zeros(3))
        vP = vb[:2] + vb[2] * np.array([-(P - qb[:2])[1], (P - qb[:2])[0]])
        if not isinstance(prismatic, (bool, np.bool_)):
            raise ValueError(f"{owner}: prismatic must be True or False, got {prismatic!r}")
        if not prismatic and axis is not None:
            raise ValueError(f"{owner}: axis is for prismatic=True")
        axis_j = None
        if prismatic:
            if kind == "particle":
                raise ValueError(f"{owner}: {body!r} is a particle, which has no orientation; "
                                 "give prismatic=False or a rigid body")
            ax = u if axis is None else B.vector(axis, 2, f"{owner}: axis")
            nax = float(np.linalg.norm(ax))
            if not nax > 0 or abs(ax[0] * u[1] - ax[1] * u[0]) > 1e-9 * nax:
                raise ValueError(f"{owner}: axis {ax} is not along beam {beam!r}'s direction {u}; "
                                 "give a direction along the beam (or None)")
            c, sn = np.cos(qb[2]), np.sin(qb[2])
            axis_j = np.array([[c, sn], [-sn, c]]) @ (ax / nax)
        self._sliders.append(dict(name=name, beam=beam, body=body, point_j=sj, axis_j=axis_j,
                                  s=min(max(s0, 0.0), total), sd=float(vP @ u)))
        i = len(self._sliders) - 1
        m = sum(x["axis_j"] is not None for x in self._sliders[:i])  # (its angle row's instance)
        parts = [("beam_slider", i)] + ([("beam_slider_angle", m)] if prismatic else [])
        self._add_joint(name, "beam_slider", GROUND, body, parts)
        return name

    def _slider_blocks(self, row, fidx, nblocks, ncoord):
        """Build-time data of the 'beam_slider' family and, for prismatic sliders, of
        'beam_slider_angle': ([(FamilyBlock, params)], {part: rows}, rows used, extra
        names, extra q0, extra v0), the extra coordinates s numbered from ncoord. Each
        instance's extra_cols are (its s, the q columns of its beam's nodes, the last node
        repeated up to the widest beam of the block); an angle row reads its slider's."""
        import jax.numpy as jnp

        from ..core.mechanism import FamilyBlock

        S = self._sliders
        nb = next(b for b in nblocks if b.kind == self._beam_families["node"])
        col = {n: nb.q0 + 4 * i for i, n in enumerate(nb.names)}
        nmax = max(len(self._beams[x["beam"]]["nodes"]) for x in S)
        cols = []
        for i, x in enumerate(S):
            nodes = self._beams[x["beam"]]["nodes"]
            nodes = nodes + (nodes[-1],) * (nmax - len(nodes))
            cols.append((ncoord + i,) + tuple(col[n] + a for n in nodes for a in range(4)))
        out, where, row0 = [], {}, row
        # (the element length is the beam's first node's Params leaf: read, not copied)
        first = tuple(nb.names.index(self._beams[x["beam"]]["nodes"][0]) for x in S)
        body = self._beam_families["body"]
        for fam, field, r in (("beam_slider", "point_j", 2), ("beam_slider_angle", "axis_j", 1)):
            idx = [i for i, x in enumerate(S) if x[field] is not None]
            if not idx:
                continue
            p = {field: jnp.asarray(np.array([S[i][field] for i in idx], float))}
            shared = (("length", (("bodies", body, "length"),), tuple(first[i] for i in idx)),)
            static = (tuple(len(self._beams[S[i]["beam"]]["nodes"]) - 1 for i in idx),)
            out.append((FamilyBlock(fam, (0,) * len(idx), tuple(fidx(S[i]["body"]) for i in idx), row, r,
                                    tuple(S[i]["name"] for i in idx), (), tuple(cols[i] for i in idx),
                                    static, shared), p))
            where.update({(fam, i if fam == "beam_slider" else m): tuple(range(row + r * m, row + r * m + r))
                          for m, i in enumerate(idx)})
            row += r * len(idx)
        return (out, where, row - row0, tuple(f"{x['name']}.s" for x in S),
                np.array([x["s"] for x in S]), np.array([x["sd"] for x in S]))
