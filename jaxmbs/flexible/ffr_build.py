"""Builder methods for floating-frame-of-reference (FFR) bodies (mixed into `jaxmbs.Model`).

`add_ffr_beam` adds a straight elastic beam described by its reference frame and m modes
of a small finite-element model (`jaxmbs.flexible.ffr`); `Model.add_revolute`,
`Model.add_weld` and `Model.add_load` (dead forces) accept its name and attach at material
points of its centre line. `ffr_data` returns what `jaxmbs.flexible.ffr.centerline` and
`curvature` need to draw the deformed body and read its strains.
"""
from __future__ import annotations

import numpy as np

from ..core import build as B
from ..core.build import GROUND, recorded


class _Lazy:
    """`jaxmbs.flexible.ffr`, imported on first use: importing it registers its families,
    which `jaxmbs/__init__.py` does after the planar, spatial and beam packages (their
    registration order is the order of nodes in q)."""

    def __getattr__(self, name):
        from . import ffr
        return getattr(ffr, name)


_ffr = _Lazy()

__all__ = ["FfrBuilder"]


def _array(x, what):
    """x as a float array, or ValueError naming `what` (text, bool, ragged input)."""
    if isinstance(x, (bool, np.bool_, str, bytes)) or x is None:
        raise ValueError(f"{what} must be an array of numbers, got {x!r}")
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be an array of numbers, got {x!r}") from None


class FfrBuilder:
    """Mixin for `jaxmbs.Model` (needs `_new_name`, `_names`, `_section`, `_local`,
    `_frame`, `_add_inst`, `_add_joint`)."""

    def _init_ffr(self):
        self._ffr = {}        # FFR body name -> dict (q, v, m, Phi, fe, params, ...)
        self._ffr_loads = []  # dead loads at material points ('ffr_load' instances)

    @recorded
    def add_ffr_beam(self, name, start, end, section=None, elements=8, modes=4, basis="clamped",
                     velocity=(0.0, 0.0), angular_velocity=0.0) -> str:
        """Add a straight elastic beam from `start` to `end` as a floating-frame-of-reference
        body: the large motion of a reference frame plus the small elastic deformation
        spanned by `modes` mode shapes of an Euler-Bernoulli finite-element model of the beam
        (`jaxmbs.flexible.ffr`). The cheap alternative to `add_beam` (ANCF) when the
        deformation is small: m + 3 coordinates, modes far above the retained ones removed
        (larger stable steps), no geometric stiffening (a linear elastic model in the frame).

        Args:
          start, end: (2,) end points of the undeformed centre line, m. The reference frame
            starts at `start` with its x axis along the beam.
          section: dict with E (Pa), rho (kg/m^3), A (m^2), I (m^4), optional Rayleigh
            damping alpha (1/s) and beta (s) (modal damping alpha rho Mff + beta E Kff).
          elements: elements of the finite-element model the modes come from (>= 1).
          modes: retained modes m, 1..MAX_MODES (8).
          basis: 'clamped' (cantilever modes, the frame clamped to the start's
            cross-section), 'pinned' (pinned-pinned modes, the frame's x axis through both
            ends: a connecting rod), 'free' (free-interface modes: mean axes) or
            'craig_bampton' (the frame clamped at the start; the end's 3 static constraint
            modes and m - 3 fixed-fixed modes; m >= 3).
          velocity: (2,) initial velocity of the frame's origin, m/s; angular_velocity: rad/s.
        Coordinates '<name>.x', '.y', '.theta', '.eta1'.. '.eta<m>' (a mode's largest nodal
        displacement is 1 m per unit eta). Params leaves '<name>.rho', '.E', '.alpha',
        '.beta' (exact gradients: the modes do not depend on them) and the shape integrals
        '<name>.vol', '.s0', '.S1', '.J0', '.j1', '.c0', '.Mff', '.Gff', '.Kff' (per unit
        density / Young's modulus; fixed by the section at build time).
        Joints: `add_revolute`, `add_weld` with `at` on the centre line (the material point
        there) or `point_i` / `point_j` = (distance from `start`, 0) m; `add_load` (a dead
        force, global axes) likewise. Every other planar joint, driver, spring, load or
        contact acts on the reference frame (points given in its coordinates: fixed to the
        frame, not to the material), e.g. `drive_angle` turns a 'clamped' beam's root.
        Returns the name.
        """
        self._new_name(name, "body")
        owner = f"FFR beam {name!r}"
        a = B.vector(start, 2, f"{owner}: start")
        b = B.vector(end, 2, f"{owner}: end")
        # (the body's rules; A and I become shape integrals, not Params leaves: > 0)
        sec = self._section(owner, section, rules={**_ffr.FfrBody.rules, "area": "> 0", "I": "> 0"})
        n, length, d = self._straight(owner, a, b, elements)
        if basis not in _ffr.BASES:
            raise ValueError(f"{owner}: basis must be one of {_ffr.BASES}, got {basis!r}")
        lo = 3 if basis == "craig_bampton" else 1
        ndof = 3 * (n + 1) - {"clamped": 3, "pinned": 3, "free": 3, "craig_bampton": 6}[basis]
        hi = min(_ffr.MAX_MODES, ndof + (3 if basis == "craig_bampton" else 0))
        if isinstance(modes, bool) or not isinstance(modes, (int, np.integer)) or not lo <= modes <= hi:
            raise ValueError(f"{owner}: modes must be an integer in [{lo}, {hi}] for basis {basis!r} "
                             f"and {n} elements, got {modes!r} (more elements allow more modes, up "
                             f"to MAX_MODES = {_ffr.MAX_MODES})")
        m = int(modes)
        fe = _ffr.beam_fe(length, n, sec["A"], sec["I"])
        Phi = _ffr.modal_basis(fe, basis, m)
        ints = _ffr.shape_integrals(fe, Phi)
        theta = float(np.arctan2(d[1], d[0]))
        v0 = B.vector(velocity, 2, f"{owner}: velocity")
        w0 = B.finite(angular_velocity, f"{owner}: angular_velocity")
        self._ffr[name] = dict(
            q=np.r_[a, theta, np.zeros(m)], v=np.r_[v0, w0, np.zeros(m)], m=m, Phi=Phi, fe=fe,
            length=length, elements=n, basis=basis,
            params=dict(rho=sec["rho"], E=sec["E"], alpha=sec["alpha"], beta=sec["beta"], **ints,
                        **dict(zip(("draw_points", "draw_shape"), _ffr.draw_rows(length, n, Phi)))))
        return name

    @recorded
    def add_ffr_body(self, name, nodes, mass, stiffness, modes=4, basis="free", interface=None,
                     position=(0.0, 0.0), angle=0.0, velocity=(0.0, 0.0), angular_velocity=0.0,
                     alpha=0.0, beta=0.0, outline=None) -> str:
        """Add an elastic body of any planar shape as a floating-frame-of-reference body with
        modes of your own finite-element model (plane-stress, truss, lumped masses, ...):
        the reference frame's motion plus the small deformation spanned by `modes` modes.

        Args:
          nodes: (n, 2) the model's nodes in body coordinates (m) of the undeformed body;
            the frame's origin is the body coordinates' origin.
          mass: (n, n) kg, the mass matrix of one displacement component (it acts alike
            on x and y: a lumped diagonal or a consistent one), symmetric positive definite.
          stiffness: (2n, 2n) N/m on the dofs (u_0, v_0, u_1, v_1, ...), symmetric, the
            three rigid-body motions in its null space.
          modes: retained modes m, 1..MAX_MODES (8).
          basis: 'free' (free-interface elastic modes: mean axes) or 'craig_bampton' (the
            static constraint modes of the `interface` nodes (a list of node indices) and
            fixed-interface modes, the rigid-body motion projected out: 2 len(interface) - 3
            <= m).
          position: (2,) m and angle (rad) of the body frame; velocity (2,) m/s and
            angular_velocity rad/s of the frame initially.
          alpha (1/s), beta (s): Rayleigh damping of the elastic coordinates.
          outline: node indices drawn as a polyline by `jaxmbs.plot` (at most
            DRAW_POINTS = 17; default: the nodes in order, when there are at most 17).
        Coordinates and Params leaves as `add_ffr_beam`'s; here '<name>.rho' and '.E' are
        dimensionless factors (1) on the given mass and stiffness. Joints: `add_revolute`,
        `add_weld` and `add_load` with `at` (global, initial) or `point_i` / `point_j` (body
        coordinates) on a node (a weld holds the node's position and the frame's angle: the
        model's nodes carry no rotation); other planar joints, drivers, springs and loads act
        on the reference frame. Returns the name.
        """
        self._new_name(name, "body")
        owner = f"FFR body {name!r}"
        X0 = _array(nodes, f"{owner}: nodes")
        if X0.ndim != 2 or X0.shape[1] != 2 or X0.shape[0] < 2 or not np.all(np.isfinite(X0)):
            raise ValueError(f"{owner}: nodes must be an (n, 2) array of finite body coordinates (m), "
                             f"n >= 2; got shape {np.shape(X0)}")
        n = X0.shape[0]
        Ms = _array(mass, f"{owner}: mass")
        K = _array(stiffness, f"{owner}: stiffness")
        if Ms.shape != (n, n) or not np.all(np.isfinite(Ms)) or not np.allclose(Ms, Ms.T) or \
                np.min(np.linalg.eigvalsh(0.5 * (Ms + Ms.T))) <= 0:
            raise ValueError(f"{owner}: mass must be a symmetric positive definite ({n}, {n}) matrix (kg) "
                             f"of one displacement component; got shape {Ms.shape}")
        if K.shape != (2 * n, 2 * n) or not np.all(np.isfinite(K)) or not np.allclose(K, K.T):
            raise ValueError(f"{owner}: stiffness must be a symmetric ({2 * n}, {2 * n}) matrix (N/m) on the "
                             f"dofs (u_0, v_0, u_1, ...); got shape {K.shape}")
        if basis not in _ffr.FE_BASES:
            raise ValueError(f"{owner}: basis must be one of {_ffr.FE_BASES}, got {basis!r}")
        itf = ()
        if basis == "craig_bampton":
            try:
                itf = tuple(int(i) for i in interface)
            except TypeError:
                itf = ()
            if len(itf) < 2 or len(set(itf)) != len(itf) or not all(0 <= i < n for i in itf):
                raise ValueError(f"{owner}: interface must list >= 2 distinct node indices in [0, {n}) for "
                                 f"basis 'craig_bampton', got {interface!r}")
        lo = 2 * len(itf) - 3 if itf else 1
        hi = min(_ffr.MAX_MODES, 2 * n - 3)
        if isinstance(modes, bool) or not isinstance(modes, (int, np.integer)) or not lo <= modes <= hi:
            raise ValueError(f"{owner}: modes must be an integer in [{lo}, {hi}] for basis {basis!r} and "
                             f"{n} nodes, got {modes!r}")
        m = int(modes)
        outline = tuple(range(n)) if outline is None else tuple(int(i) for i in outline)
        if not 2 <= len(outline) <= _ffr.DRAW_POINTS or not all(0 <= i < n for i in outline):
            raise ValueError(f"{owner}: outline must list 2 to {_ffr.DRAW_POINTS} node indices in [0, {n}) "
                             f"(the polyline drawn); got {len(outline)} entries")
        from ..core.validate import check_rule

        damp = {key: check_rule(val, _ffr.FfrBody.rules[key], f"{owner}: {key}", unit)
                for key, val, unit in (("alpha", alpha, "1/s"), ("beta", beta, "s"))}
        a = B.vector(position, 2, f"{owner}: position")
        th = B.finite(angle, f"{owner}: angle")
        v0 = B.vector(velocity, 2, f"{owner}: velocity")
        w0 = B.finite(angular_velocity, f"{owner}: angular_velocity")
        Phi = _ffr.fe_basis(X0, Ms, K, basis, m, itf)
        ints = _ffr.fe_shape_integrals(X0, Ms, K, Phi)
        S = Phi.reshape(n, 2, m)
        pts = list(outline) + [outline[-1]] * (_ffr.DRAW_POINTS - len(outline))
        self._ffr[name] = dict(
            q=np.r_[a, th, np.zeros(m)], v=np.r_[v0, w0, np.zeros(m)], m=m, Phi=Phi, nodes=X0,
            shapes=S, basis=basis, kind="fe",
            params=dict(rho=1.0, E=1.0, **damp, **ints, draw_points=X0[pts], draw_shape=S[pts]))
        return name

    def ffr_data(self, name) -> dict:
        """What `jaxmbs.flexible.ffr.centerline` / `curvature` need of FFR body `name`:
        dict length (m), elements, basis, Phi (ndof, m) (the modes on the finite-element
        dofs (u, v, phi) per node)."""
        if name not in self._ffr:
            known = ", ".join(self._ffr) or "none (add one with add_ffr_beam)"
            raise ValueError(f"unknown FFR body {name!r}; FFR bodies: {known}")
        d = self._ffr[name]
        if d.get("kind") == "fe":
            return dict(nodes=d["nodes"], basis=d["basis"], Phi=d["Phi"])
        return dict(length=d["length"], elements=d["elements"], basis=d["basis"], Phi=d["Phi"])

    # ------------------------------------------------------------------ attachment
    def _is_ffr(self, name):
        return name in getattr(self, "_ffr", {})

    def _ffr_marker(self, body, owner, at, point, which):
        """(point (2,), shape (2, MAX_MODES), slope (MAX_MODES,)) of the attachment of
        `body` (an FFR body: a material point of its centre line; else the rigid point)."""
        M = _ffr.MAX_MODES
        if not self._is_ffr(body):
            return self._local(body, owner, at, point, which), np.zeros((2, M)), np.zeros(M)
        d = self._ffr[body]
        q = d["q"]
        if point is not None:
            s = B.vector(point, 2, f"{owner}: point{which}")
        elif at is not None:
            c, sn = np.cos(q[2]), np.sin(q[2])
            s = np.array([[c, sn], [-sn, c]]) @ (B.vector(at, 2, f"{owner}: at") - q[:2])
        else:
            s = np.zeros(2)
        if d.get("kind") == "fe":  # a node of a general finite-element model
            dist = np.linalg.norm(d["nodes"] - s[None, :], axis=1)
            k = int(np.argmin(dist))
            size = float(np.ptp(d["nodes"], axis=0).max())
            if dist[k] > 1e-9 * size:
                raise ValueError(f"{owner}: the point on FFR body {body!r} must be one of its nodes; the "
                                 f"nearest, node {k}, is {dist[k]:.3g} m away from {s.tolist()} (body "
                                 "coordinates)")
            shape = np.zeros((2, M))
            shape[:, : d["m"]] = d["shapes"][k]
            return d["nodes"][k].copy(), shape, np.zeros(M)
        L = d["length"]
        tol = 1e-9 * L
        if abs(s[1]) > tol or not -tol <= s[0] <= L + tol:
            raise ValueError(f"{owner}: the point on FFR beam {body!r} must lie on its centre line "
                             f"(body coordinates (x, 0) with 0 <= x <= {L:g} m from its start); got "
                             f"{s.tolist()} (give `at` on the beam or point{which}=(x, 0))")
        x = float(np.clip(s[0], 0.0, L))
        N, slope, _ = _ffr.beam_rows([x], L, d["elements"])
        shape = np.zeros((2, M))
        psi = np.zeros(M)
        shape[:, : d["m"]] = N[0] @ d["Phi"]
        psi[: d["m"]] = slope[0] @ d["Phi"]
        return np.array([x, 0.0]), shape, psi

    def _ffr_angle0(self, body):
        return self._ffr[body]["q"][2] if self._is_ffr(body) else self._frame(body, "")[1][2]

    def _ffr_joint(self, name, kind, body_i, body_j, at, point_i, point_j):
        """A revolute joint or weld where body_i or body_j is an FFR body."""
        owner = f"{kind} {name!r}"
        self._new_name(name, "joint")
        for b in (body_i, body_j):
            if not self._is_ffr(b):
                fk, _ = self._frame(b, owner)
                if kind == "weld" and fk == "particle":
                    raise ValueError(f"{owner}: {b!r} is a particle, which has no orientation; "
                                     "a particle cannot be welded; use add_revolute")
        if body_i == body_j:
            raise ValueError(f"{owner}: connects {body_i!r} to itself; give two different bodies")
        si, Si, pi = self._ffr_marker(body_i, owner, at, point_i, "_i")
        sj, Sj, pj = self._ffr_marker(body_j, owner, at, point_j, "_j")
        p1 = self._add_inst("ffr_point", body_i, body_j, name, point_i=si, point_j=sj,
                            shape_i=Si, shape_j=Sj)
        parts = [p1]
        if kind == "weld":
            th0 = self._ffr_angle0(body_j) - self._ffr_angle0(body_i)
            parts.append(self._add_inst("ffr_angle", body_i, body_j, name, angle=th0,
                                        slope_i=pi, slope_j=pj))
        self._add_joint(name, kind, body_i, body_j, parts, point_ref=p1)
        return name

    def _ffr_load(self, name, body, force, torque, at, point, local, control, fn):
        owner = f"load {name!r}"
        self._new_name(name, "force")
        if (B.finite(torque, f"{owner}: torque") != 0.0 or local or control is not None
                or fn is not None):
            raise ValueError(f"{owner}: on the FFR beam {body!r} only a dead force (global axes) "
                             "is supported: give force and at/point, without torque, local, "
                             "control or fn")
        s, S, _ = self._ffr_marker(body, owner, at, point, "")
        self._ffr_loads.append(dict(name=name, fi=GROUND, fj=body, force=B.vector(force, 2, f"{owner}: force"),
                                    point=s, shape=S))
        return name

    # ---------------------------------------------------------------- build hooks
    def _ffr_nodes(self):
        return [dict(name=nm, node=f"ffr2d_m{d['m']}", body=f"ffr2d_body_m{d['m']}", q=d["q"],
                     v=d["v"], params=d["params"]) for nm, d in self._ffr.items()]

    def _ffr_forces(self):
        return {"ffr_load": [dict(x) for x in self._ffr_loads]} if self._ffr_loads else {}
