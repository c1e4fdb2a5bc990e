"""The saddle-point system of a tree-structured mechanism in linear time (Baraff 1996).

In absolute coordinates every joint couples the velocities of at most a few nodes (its
two frames, a joint rotor's coordinate), so the KKT matrix

    H = [M  J^T]      M block diagonal over nodes, J one block per (joint, node) pair
        [J   0 ]

has the sparsity of the graph whose vertices are the *nodes* (velocity blocks: a rigid
body's 6 or 3 velocities, a particle's, a rotor's 1) and the *joints* (the rows of one
joint, however many families they come from), with an edge where a joint's rows touch a
node. For a mechanism without closed loops this graph is a forest, and a block LDL^T
elimination that takes the leaves first creates no fill: each vertex's pivot block is

    D_u = H_uu - sum over children c of  H_uc D_c^-1 H_cu

(positive definite for a node, negative definite for a joint), factorised by a small
dropping Cholesky (element-wise, no LAPACK). The work is linear in the number of bodies
and the program is a sequence of small fixed-size block operations. Rows that depend on
the others within a joint are dropped (multiplier 0), as `SchurCholesky` drops them; a
dropped row that does not hold sets SINGULAR.

Derivatives: `jax.lax.custom_linear_solve` with the KKT product as the operator, so the
factorisation is never differentiated (forward and reverse mode give the derivative of
the exact KKT solution).
"""
from __future__ import annotations

import functools
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import status as st
from ..core._tree import static_class
from ..core.options import Rule, Validated, real
from .schur import SchurCholesky, _dense_apply, _dense_factor, _unrolled_apply, _unrolled_factor, schur_tol

__all__ = ["TreeSchur", "TreePlan", "tree_plan", "for_mechanism"]



class TreePlan:
    """Static elimination data of one mechanism (NumPy, built once per mechanism by
    `tree_plan`; compared by identity).

    Attributes: n (n_vel), m (rows); units: per vertex ('v', velocity columns) for a node
    or ('r', rows) for a joint; order: vertices leaves first (post-order of each
    component, its root last); parent (vertex -> parent vertex or -1); children (vertex ->
    tuple of child vertices)."""

    def __init__(self, units, order, parent, n, m):
        self.units = units
        self.order = order
        self.parent = parent
        self.n, self.m = n, m
        # level: 0 for leaves, 1 + the children's highest level above them
        level = np.zeros(len(units), np.int64)
        for u in order:
            p = parent[u]
            if p >= 0:
                level[p] = max(level[p], level[u] + 1)
        # groups: vertices of one level, kind and size, processed as one stacked operation
        key = lambda u: (int(level[u]), units[u][0], units[u][1].size)
        gkeys = sorted({key(u) for u in order})
        gid = {k: i for i, k in enumerate(gkeys)}
        members = [[] for _ in gkeys]
        for u in order:
            members[gid[key(u)]].append(u)
        where = {}
        for g, us in enumerate(members):
            for i, u in enumerate(us):
                where[u] = (g, i)
        self.groups = [(k[1], k[2], np.stack([units[u][1] for u in us]))
                       for k, us in zip(gkeys, members)]
        self.signs = [1.0 if k[1] == "v" else -1.0 for k in gkeys]
        # subgroups: the members of a group whose parents are in one group
        self.subgroups, self.sub_of = [], [[] for _ in gkeys]
        for g, us in enumerate(members):
            by_parent = {}
            for i, u in enumerate(us):
                if parent[u] >= 0:
                    pg, pi = where[int(parent[u])]
                    by_parent.setdefault(pg, []).append((i, pi))
            for pg, pairs in sorted(by_parent.items()):
                pos, ppos = (np.array(a, np.int64) for a in zip(*pairs))
                self.sub_of[g].append(len(self.subgroups))
                self.subgroups.append((g, pg, pos, ppos))
        # stacked identities of the nodes of each size (see _node_blocks)
        self.probes = {}
        for kind, size, idx in self.groups:
            if kind == "v":
                E = self.probes.setdefault(size, np.zeros((n, size)))
                E[idx.reshape(-1), np.tile(np.arange(size), idx.shape[0])] = 1.0
        # where each entry of the stacked solution goes in (qdd, lam)
        dest = np.concatenate([(idx if kind == "v" else n + idx).reshape(-1)
                               for kind, _, idx in self.groups])
        self.inverse = np.argsort(dest)
        rows = [idx.reshape(-1) for kind, _, idx in self.groups if kind == "r"]
        self.row_inverse = np.argsort(np.concatenate(rows)) if rows else np.zeros((0,), np.int64)

    def __repr__(self):
        nv = sum(1 for k, _ in self.units if k == "v")
        return f"TreePlan({nv} nodes, {len(self.units) - nv} joints, n={self.n}, m={self.m})"


def _node_units(mech):
    """Velocity columns of every node (one entry per node instance) and a column -> node
    map."""
    from ..core import families as F

    units, col_node = [], np.full(mech.n_vel + 1, -1, np.int64)
    for nb in mech.nodes:
        nv = F.node_family(nb.kind).nv
        for i in range(nb.size):
            cols = nb.v0 + i * nv + np.arange(nv)
            col_node[cols] = len(units)
            units.append(cols)
    return units, col_node


def _why_not(mech):
    """Why the tree elimination does not apply to `mech` (None when it does)."""
    from ..core import families as F

    if mech.user_constraints or mech.velocity_constraints or mech.nonholonomic_rows:
        return "it has user, velocity or nonholonomic constraint rows"
    if any(F.body_family(b.kind).coupled for b in mech.bodies):
        return "a body family couples the mass of several nodes (beam elements)"
    n_mass = sum(mech.nodes[b.node].size * F.node_family(mech.nodes[b.node].kind).nv
                 for b in mech.bodies)
    if n_mass != mech.n_vel:
        return "it has massless coordinates (cam curve parameters)"
    return None


def _build(mech):
    from ..core import families as F
    from ..core.equations import _extra_vcols

    why = _why_not(mech)
    if why:
        return None, why
    nodes, col_node = _node_units(mech)
    n_nodes = len(nodes)
    # joints: the rows between one set of framed nodes (the two sides of a joint, all its
    # families together), and the nodes they touch (a joint rotor's coordinate too)
    rows_of, touch, grounded = {}, {}, {}
    for fam in mech.families:
        kind = F.constraint_family(fam.kind).frame
        vc = mech.frame_vcols(kind)
        for k in range(fam.size):
            rows = fam.row0 + k * fam.rows_per + np.arange(fam.rows_per)
            cols = np.concatenate([vc[fam.frames_i[k]], vc[fam.frames_j[k]]])
            sides = frozenset(int(col_node[c]) for c in cols if c < mech.n_vel)
            if fam.extra_cols:
                cols = np.concatenate([cols, _extra_vcols(mech, np.asarray(fam.extra_cols[k]))])
            rows_of.setdefault(sides, []).append(rows)
            touch.setdefault(sides, set()).update(int(col_node[c]) for c in cols if c < mech.n_vel)
            grounded[sides] = grounded.get(sides, False) or 0 in (fam.frames_i[k], fam.frames_j[k])
    units = [("v", c) for c in nodes]
    adj = [set() for _ in range(n_nodes)]
    ground_joints = set()
    for sides, rows in rows_of.items():
        r = len(units)
        if not touch[sides]:
            return None, "a joint touches no node (rows on the ground alone)"
        units.append(("r", np.sort(np.concatenate(rows))))
        adj.append(set(touch[sides]))
        if grounded[sides]:
            ground_joints.add(r)
        for v in touch[sides]:
            adj[v].add(r)
    # components, each a tree (vertices - 1 edges) with at most one joint to the ground
    # (two would close a loop through the ground); the root is that joint (its pivot
    # block then collects its bodies: a grounded joint as a leaf would have a zero pivot)
    # or else a node
    comp = np.full(len(units), -1, np.int64)
    comps = []
    for start in range(len(units)):
        if comp[start] >= 0:
            continue
        comp[start] = len(comps)
        members, stack = [], [start]
        while stack:
            u = stack.pop()
            members.append(u)
            for w in adj[u]:
                if comp[w] < 0:
                    comp[w] = len(comps)
                    stack.append(w)
        comps.append(members)
    order, parent = [], np.full(len(units), -1, np.int64)
    for members in comps:
        n_edges = sum(len(adj[u]) for u in members if units[u][0] == "r")
        grounds = [u for u in members if u in ground_joints]
        if n_edges != len(members) - 1 or len(grounds) > 1:
            return None, "its joints close kinematic loops (the joint graph is not a tree)"
        root = grounds[0] if grounds else min(u for u in members if units[u][0] == "v")
        seen = {root}
        stack, post = [(root, iter(sorted(adj[root])))], []
        while stack:
            u, it = stack[-1]
            nxt = next((w for w in it if w not in seen), None)
            if nxt is None:
                post.append(u)
                stack.pop()
                continue
            seen.add(nxt)
            parent[nxt] = u
            stack.append((nxt, iter(sorted(adj[nxt]))))
        order += post
    return TreePlan(units, tuple(order), parent, mech.n_vel, mech.n_constraints), None


@functools.lru_cache(maxsize=64)
def _cached(mech):
    return _build(mech)


def tree_plan(mech):
    """The `TreePlan` of a mechanism, or None when the elimination does not apply: closed
    loops, user / velocity / nonholonomic rows, massless coordinates, coupled (beam)
    masses. `tree_plan.why(mech)` says which."""
    return _cached(mech)[0]


tree_plan.why = lambda mech: _cached(mech)[1]


def _factor_stack(Ds, tol):
    """Dropping Cholesky factors of a stack of small SPD matrices (k, n, n)."""
    if Ds.shape[-1] <= 12:
        return "u", jax.vmap(lambda D: _unrolled_factor(D, tol))(Ds)
    return "d", jax.vmap(lambda D: _dense_factor(D, tol))(Ds)


def _solve_stack(f, Bs):
    kind, fac = f
    if kind == "u":
        return jax.vmap(_unrolled_apply)(fac, Bs)
    return jax.vmap(_dense_apply)(fac[0], fac[1], Bs)


def _dropped_stack(f):
    kind, fac = f
    return fac[2] if kind == "u" else fac[1]


def _node_blocks(plan, M, dtype):
    """{size: M E (n, size)}: M is block diagonal over nodes, so M applied to the stacked
    identities E of all nodes of one size holds each such node's diagonal block in that
    node's rows (one cheap product per node size, no dense M)."""
    out = {}
    for size, E in plan.probes.items():
        out[size] = jax.lax.stop_gradient(M.apply(jnp.asarray(E, dtype)))
    return out


def _gather_diag(plan, g, ME, dtype):
    kind, n, idx = plan.groups[g]
    if kind == "v":
        return ME[n][idx]
    return jnp.zeros((idx.shape[0], n, n), dtype)


def _coupling(plan, s, jac):
    """H_(u, parent u) of the vertices of subgroup s, stacked (k, n_u, n_parent)."""
    g, pg, pos, ppos = plan.subgroups[s]
    kind, _, idx = plan.groups[g]
    idx, pidx = idx[pos], plan.groups[pg][2][ppos]
    if kind == "r":
        return jac[idx[:, :, None], pidx[:, None, :]]
    return jnp.swapaxes(jac[pidx[:, :, None], idx[:, None, :]], 1, 2)


def _factor(plan, M, jac, tol):
    """Leaves-first block elimination, one stacked operation per group of vertices of
    equal level, kind and size: per group its factor (of D for nodes, of -D for joints);
    per subgroup (same parent group) W = D^-1 H_(u, parent) and H_(u, parent)."""
    ME = _node_blocks(plan, M, jac.dtype)
    acc = [_gather_diag(plan, g, ME, jac.dtype) for g in range(len(plan.groups))]
    fac, W, up = [None] * len(plan.groups), [None] * len(plan.subgroups), [None] * len(plan.subgroups)
    for g in range(len(plan.groups)):
        sign = plan.signs[g]
        fac[g] = _factor_stack(sign * acc[g], tol)
        for s in plan.sub_of[g]:
            _, pg, pos, ppos = plan.subgroups[s]
            up[s] = _coupling(plan, s, jac)
            part = (fac[g][0], jax.tree_util.tree_map(lambda a: a[pos], fac[g][1]))
            W[s] = sign * _solve_stack(part, up[s])
            acc[pg] = acc[pg].at[ppos].add(-jnp.einsum("kup,kuq->kpq", up[s], W[s]))
    return fac, W, up


def _sweep(plan, fac, W, rhs):
    """x = H^-1 rhs from the factors (forward leaves to roots, back roots to leaves)."""
    y = []
    for g, (kind, _, idx) in enumerate(plan.groups):
        y.append(rhs[idx] if kind == "v" else rhs[plan.n + idx])
    y = list(y)
    for g in range(len(plan.groups)):
        for s in plan.sub_of[g]:
            _, pg, pos, ppos = plan.subgroups[s]
            y[pg] = y[pg].at[ppos].add(-jnp.einsum("kup,ku->kp", W[s], y[g][pos]))
    x = [None] * len(plan.groups)
    for g in reversed(range(len(plan.groups))):
        xg = plan.signs[g] * _solve_stack(fac[g], y[g])
        for s in plan.sub_of[g]:
            _, pg, pos, ppos = plan.subgroups[s]
            xg = xg.at[pos].add(-jnp.einsum("kup,kp->ku", W[s], x[pg][ppos]))
        x[g] = xg
    flat = jnp.concatenate([xg.reshape(-1) for xg in x])
    return flat[plan.inverse]


def _dropped(plan, fac):
    """(m,) bool: the rows each joint's factor dropped."""
    parts = [_dropped_stack(fac[g]).reshape(-1) for g, (kind, _, _) in enumerate(plan.groups)
             if kind == "r"]
    flat = jnp.concatenate(parts) if parts else jnp.zeros((0,), bool)
    return flat[plan.row_inverse]


def _plan_rule():
    return Rule(lambda x: x is None or isinstance(x, TreePlan),
                "None or the TreePlan of a mechanism (set by for_mechanism)")


@static_class
class TreeSchur(Validated):
    """The KKT system solved by a block elimination along the mechanism's joint tree, in
    time linear in the number of bodies (see the module docstring). Needs the mechanism's
    `TreePlan`: `simulate`, `accelerations` and the stabilisers bind it
    (`for_mechanism`); on a mechanism it does not apply to (closed loops, user rows,
    massless coordinates, beam elements) `for_mechanism` falls back to SchurCholesky with
    a warning naming the reason.

    tol: pivot tolerance of the dropped (dependent) rows, relative to the pivot's
    diagonal (default sqrt(machine epsilon), as `SchurCholesky`).
    """

    OPTIONS = {"tol": real(0.0, open_lo=True, optional=True), "plan": _plan_rule()}
    tol: float | None = None
    plan: Any = None

    def for_mechanism(self, mech):
        plan = tree_plan(mech)
        if plan is None:
            _warn_fallback(tree_plan.why(mech))
            return SchurCholesky(tol=self.tol)
        return self if self.plan is plan else TreeSchur(self.tol, plan)

    def solve(self, M, jac, Q, gamma, check=True):
        """(qdd (n,), lam (m,), status) of M qdd + jac^T lam = Q, jac qdd = gamma."""
        plan = self.plan
        if plan is None:
            raise ValueError("TreeSchur.solve needs the mechanism's plan: pass the solver to "
                             "simulate / accelerations (which bind it), or bind it yourself "
                             "with solver.for_mechanism(mech)")
        if not hasattr(jac, "shape") or jac.shape != (plan.m, plan.n):
            raise ValueError(f"TreeSchur: jac of shape {getattr(jac, 'shape', None)} does not "
                             f"match the plan's ({plan.m}, {plan.n}): bind the solver to this "
                             "mechanism (solver.for_mechanism(mech))")
        n = plan.n
        tol = schur_tol(Q.dtype, self.tol)
        sg = jax.lax.stop_gradient
        fac, W, _ = _factor(plan, M, sg(jac), tol)

        def matvec(x):
            return jnp.concatenate([M.apply(x[:n]) + jac.T @ x[n:], jac @ x[:n]])

        b = jnp.concatenate([Q, gamma])
        x = jax.lax.custom_linear_solve(matvec, b, lambda _, r: _sweep(plan, fac, W, r),
                                        symmetric=True)
        qdd, lam = x[:n], x[n:]
        dropped = _dropped(plan, fac)
        bad = jnp.zeros((), bool)
        if check is not False:
            Jq = sg(jac) @ sg(qdd)
            scale = jnp.abs(sg(jac)) @ jnp.abs(sg(qdd)) + jnp.abs(sg(gamma)) + jnp.finfo(Q.dtype).tiny
            bad = jnp.any(dropped & (jnp.abs(Jq - sg(gamma)) > tol * scale)) & jnp.asarray(check)
        return qdd, lam, jnp.where(bad, st.SINGULAR, st.OK).astype(jnp.int32)


@functools.cache
def _warn_fallback(why):
    warnings.warn(f"TreeSchur: the tree elimination does not apply because {why}; solving "
                  "with SchurCholesky instead (dense Schur complement: cubic in the rows)",
                  RuntimeWarning, stacklevel=4)


def for_mechanism(solver, mech):
    """`solver` bound to `mech` where it needs the mechanism's structure (`TreeSchur`);
    every other solver unchanged."""
    bind = getattr(solver, "for_mechanism", None)
    return solver if bind is None else bind(mech)
