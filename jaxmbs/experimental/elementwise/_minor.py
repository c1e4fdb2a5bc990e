"""Batch-minor vectorisation of per-member programs whose arrays have many entries.

`elementwise_vmap` writes a member's program out scalar by scalar: ideal for a few bodies,
but the program (and XLA's compile time, which is mostly LLVM's, per kernel) grows with
every scalar; a chain of 64 bodies does not fit. `minor_vmap` keeps the member's arrays as
arrays and appends the batch axis LAST: a value of shape S becomes an array of shape
S + (batch,), so the batch is the contiguous axis of every array and each operation of the
member's program is one operation over all members. The program has as many operations as
the member's jaxpr, whatever the number of bodies; families of joints, bodies and forces
stay vectorised; data movement (slices, gathers of rows, scatter-adds) moves contiguous
runs of `batch` numbers instead of the strided tiny axes of `jax.vmap`'s batch-major
layout.

Rules: element-wise primitives apply as they are; broadcasts, reshapes, slices,
transposes, concatenations, reductions, dynamic slices with member-independent starts,
gathers and scatters with member-independent indices get the batch axis appended to their
parameters; `dot_general` is a broadcast product and a sum over the contracted axes (no
batch-first output, no transpose); `scan`, `cond`, call-like primitives and
`custom_linear_solve` are interpreted (layouts read in `_jaxpr.py`). Any other primitive
goes through `jax.vmap` of itself with the batch axis last on both sides: JAX's own
batching rule, correct on every release (maybe with a transpose).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ...core._rare import RARE_SCOPE
from . import _jaxpr as J
from . import _numpy_eval
from ._barriers import _shared_barriers
from ._interp import _ELEMENTWISE, _member_program
from ._trig import _sincos, once_per_value

__all__ = ["minor_vmap"]
_DEBUG = False


_HALVING = {"reduce_sum": lax.add, "reduce_max": lax.max, "reduce_min": lax.min,
            "reduce_and": lax.bitwise_and, "reduce_or": lax.bitwise_or, "reduce_prod": lax.mul}


def _halving(x, axes, op):
    """Reduce x over `axes` (none of them the last, batch axis) by halving: op of the two
    halves, repeatedly, each an element-wise operation on contiguous runs of the batch
    axis. (XLA:CPU reduces over major axes with a strided inner loop: 57 % of a
    chain's step time, against a few percent this way.) Sums in a pairwise order."""
    for ax in sorted(axes, reverse=True):
        while x.shape[ax] > 1:
            n = x.shape[ax]
            h = n // 2
            a = lax.slice_in_dim(x, 0, h, axis=ax)
            b = lax.slice_in_dim(x, h, 2 * h, axis=ax)
            y = op(a, b)
            if n % 2:
                y = lax.concatenate([y, lax.slice_in_dim(x, 2 * h, n, axis=ax)], ax)
                # (the odd one out joins the next round)
            x = y
        x = lax.squeeze(x, (ax,))
    return x


class _B:
    """A batched value: `a` has the member's shape + (batch,)."""
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a


def _is_b(x):
    return isinstance(x, _B)


class _Minor:
    def __init__(self, batch):
        self.batch = batch
        self._trig: dict = {}  # id(x) -> (x, (sin x, cos x)): float64 sin and cos written once

    def sincos(self, x):
        """(sin x, cos x) of a float64 batched array through `_sincos`, once per array: the
        polynomial serves both (a member's sin and cos of one angle are two equations;
        written apart, each was the whole polynomial and its conditional)."""
        return once_per_value(self._trig, x, _sincos)

    def nested(self, fn):
        """fn, run with a cache of its own: values traced inside a loop body or a branch
        must not serve the enclosing trace."""
        def run(*a):
            saved, self._trig = self._trig, {}
            try:
                return fn(*a)
            finally:
                self._trig = saved
        return run

    # -- helpers -----------------------------------------------------------------
    def bat(self, x):
        """x as a batched array (member shape + (batch,))."""
        if _is_b(x):
            return x.a
        x = jnp.asarray(x)
        return lax.broadcast_in_dim(x, x.shape + (self.batch,), tuple(range(x.ndim)))

    def fit(self, x, shape):
        """x (an operand of an element-wise operation whose member shape is `shape`) as an
        array of shape + (batch,), or a member-independent scalar as it is; None if the
        shapes do not line up (then the caller falls back to jax.vmap)."""
        if not _is_b(x):
            if jnp.ndim(x) == 0:
                return x
            x = _B(self.bat(x))
        a = x.a
        if a.shape[:-1] == shape:
            return a
        if a.ndim == 1:  # a member scalar among arrays
            return lax.broadcast_in_dim(a, shape + (self.batch,), (len(shape),))
        if a.ndim == len(shape) + 1 and all(d in (1, s) for d, s in zip(a.shape, shape)):
            return lax.broadcast_in_dim(a, shape + (self.batch,), tuple(range(a.ndim)))
        return None

    def read(self, env, v):
        return J.literal_value(v) if J.is_literal(v) else env[v]

    def run(self, jaxpr, consts, args):
        env = dict(zip(jaxpr.constvars, consts))
        env.update(zip(jaxpr.invars, args))
        eqns = J.live_eqns(jaxpr)
        shared = _shared_trig(eqns, env)
        done: dict = {}
        for eqn in eqns:
            site = shared.get(id(eqn))
            if site is not None and _is_b(env.get(site.group.root)):
                outs = [self.shared_trig(site, env, done)]
            else:
                outs = self.eqn(eqn, [self.read(env, v) for v in eqn.invars])
            for v, o in zip(eqn.outvars, outs):
                env[v] = o
        return [self.read(env, v) for v in jaxpr.outvars]

    def shared_trig(self, site, env, done):
        """The value of a sin / cos equation of `_shared_trig`: its entries gathered from the
        sine and cosine of its group's table (the root's entries every site of the group
        reads, then the known constants among them), written once per group."""
        g = site.group
        if g not in done:
            a = env[g.root].a
            flat = a.reshape((-1, self.batch))
            parts = [_rows(flat, g.entries)] if len(g.entries) else []
            if len(g.consts):
                c = jnp.asarray(np.asarray(g.consts, np.float64), a.dtype)
                parts.append(lax.broadcast_in_dim(c, (len(g.consts), self.batch), (0,)))
            table = parts[0] if len(parts) == 1 else lax.concatenate(parts, 0)
            done[g] = self.sincos(table)
        s, c = done[g]
        out = _rows(s if site.sin else c, site.rows.reshape(-1))
        return _B(out.reshape(site.shape + (self.batch,)))

    def run_closed(self, closed, args):
        jaxpr, consts = J.closed(closed)
        return self.run(jaxpr, consts, args)

    # -- one equation --------------------------------------------------------------
    def eqn(self, eqn, ins):
        prim, p, name = eqn.primitive, eqn.params, eqn.primitive.name
        if not any(_is_b(x) for x in ins) and name not in J.CALL_PRIMITIVES and name not in (
                "scan", "cond", "while", "custom_linear_solve"):
            r = prim.bind(*ins, **p)  # member-independent: as it is
            return r if prim.multiple_results else [r]
        if name in J.CALL_PRIMITIVES:
            return self.run_closed(J.callee(eqn), ins)
        if name == "custom_linear_solve":
            solve, args = J.linear_solve_parts(eqn, ins)
            return self.run_closed(solve, args)
        if name == "scan":
            return self.scan(eqn, ins)
        if name == "cond":
            return self.cond(eqn, ins)
        rule = getattr(self, "r_" + name.replace("-", "_"), None)
        if rule is not None:
            out = rule(eqn, ins, p)
            if out is not None:
                return out
        if name == "optimization_barrier":
            return list(ins)
        if name in _ELEMENTWISE:
            shape = tuple(eqn.outvars[0].aval.shape)
            args = [self.fit(x, shape) for x in ins]
            if any(a is None for a in args):
                return self.fallback(eqn, ins)
            dt = eqn.outvars[0].aval.dtype
            if (name in ("sin", "cos") and dt == np.float64 and p.get("accuracy") is None):
                s, c = self.sincos(args[0])
                return [_B(s if name == "sin" else c)]
            return [_B(prim.bind(*args, **p))]
        return self.fallback(eqn, ins)

    def fallback(self, eqn, ins):
        """jax.vmap of the primitive itself, batch axis last in and out."""
        prim, p = eqn.primitive, eqn.params
        if _DEBUG:
            print("minor_vmap fallback:", prim.name, [tuple(v.aval.shape) for v in eqn.invars],
                  [_is_b(x) for x in ins])
        axes = tuple(-1 if _is_b(x) else None for x in ins)
        vals = [x.a if _is_b(x) else x for x in ins]
        f = lambda *a: prim.bind(*a, **p)
        out = jax.vmap(f, in_axes=axes, out_axes=-1, axis_size=self.batch)(*vals)
        return [_B(o) for o in out] if prim.multiple_results else [_B(out)]

    # -- shape and data movement ---------------------------------------------------
    def r_broadcast_in_dim(self, eqn, ins, p):
        x = ins[0]
        if len(ins) != 1:
            return None
        shape, dims = tuple(p["shape"]), tuple(p["broadcast_dimensions"])
        return [_B(lax.broadcast_in_dim(x.a, shape + (self.batch,), dims + (len(shape),)))]

    def r_reshape(self, eqn, ins, p):
        if p.get("dimensions") is not None or len(ins) != 1:
            return None
        return [_B(lax.reshape(ins[0].a, tuple(p["new_sizes"]) + (self.batch,)))]

    def r_squeeze(self, eqn, ins, p):
        return [_B(lax.squeeze(ins[0].a, tuple(p["dimensions"])))]

    def r_transpose(self, eqn, ins, p):
        perm = tuple(p["permutation"])
        return [_B(lax.transpose(ins[0].a, perm + (len(perm),)))]

    def r_slice(self, eqn, ins, p):
        st, lim = tuple(p["start_indices"]), tuple(p["limit_indices"])
        strides = p.get("strides")
        strides = None if strides is None else tuple(strides) + (1,)
        return [_B(lax.slice(ins[0].a, st + (0,), lim + (self.batch,), strides))]

    def r_rev(self, eqn, ins, p):
        return [_B(lax.rev(ins[0].a, tuple(p["dimensions"])))]

    def r_concatenate(self, eqn, ins, p):
        return [_B(lax.concatenate([self.bat(x) for x in ins], p["dimension"]))]

    def r_pad(self, eqn, ins, p):
        x, pv = ins
        if _is_b(pv):
            return None
        cfg = tuple(tuple(c) for c in p["padding_config"]) + ((0, 0, 0),)
        return [_B(lax.pad(self.bat(x), pv, cfg))]

    def r_select_n(self, eqn, ins, p):
        shape = tuple(eqn.outvars[0].aval.shape)
        pred, *cases = ins
        cases = [self.fit(c, shape) for c in cases]
        if any(c is None for c in cases):
            return None
        cases = [c if jnp.ndim(c) else self.bat(jnp.broadcast_to(c, shape)) for c in cases]
        pred = self.fit(pred, shape)
        if pred is None:
            return None
        return [_B(lax.select_n(pred, *cases))]

    def r_dynamic_slice(self, eqn, ins, p):
        x, *starts = ins
        if any(_is_b(s) for s in starts):
            return None
        sizes = tuple(p["slice_sizes"]) + (self.batch,)
        return [_B(lax.dynamic_slice(self.bat(x), list(starts) + [np.int32(0)], sizes))]

    def r_dynamic_update_slice(self, eqn, ins, p):
        x, u, *starts = ins
        if any(_is_b(s) for s in starts):
            return None
        return [_B(lax.dynamic_update_slice(self.bat(x), self.bat(u),
                                            list(starts) + [np.int32(0)]))]

    def r_gather(self, eqn, ins, p):
        x, idx = ins
        if _is_b(idx):
            return None
        dn = p["dimension_numbers"]
        out_rank = len(eqn.outvars[0].aval.shape)
        try:
            dn = dn._replace(offset_dims=tuple(dn.offset_dims) + (out_rank,))
        except (AttributeError, ValueError):
            return None
        q = dict(p, dimension_numbers=dn, slice_sizes=tuple(p["slice_sizes"]) + (self.batch,))
        return [_B(eqn.primitive.bind(x.a, idx, **q))]

    def _scatter(self, eqn, ins, p):
        x, idx, u = ins
        if _is_b(idx):
            return None
        dn = p["dimension_numbers"]
        u_rank = len(eqn.invars[2].aval.shape)
        try:
            dn = dn._replace(update_window_dims=tuple(dn.update_window_dims) + (u_rank,))
        except (AttributeError, ValueError):
            return None
        q = dict(p, dimension_numbers=dn)
        return [_B(eqn.primitive.bind(self.bat(x), idx, self.bat(u), **q))]

    r_scatter = _scatter
    r_scatter_add = _scatter

    # -- reductions and products ---------------------------------------------------
    def _reduce(self, eqn, ins, p):
        op = _HALVING.get(eqn.primitive.name)
        if op is None:
            return [_B(eqn.primitive.bind(ins[0].a, **p))]  # (axes < the batch axis)
        return [_B(_halving(ins[0].a, tuple(p["axes"]), op))]

    r_reduce_sum = r_reduce_max = r_reduce_min = r_reduce_and = r_reduce_or = _reduce
    r_reduce_prod = r_argmax = r_argmin = _reduce

    def r_stack(self, eqn, ins, p):
        axis = p["axis"]
        rank = len(eqn.outvars[0].aval.shape)
        axis = axis + rank if axis < 0 else axis
        shape = tuple(eqn.invars[0].aval.shape)
        args = [self.fit(x, shape) for x in ins]
        if any(a is None or jnp.ndim(a) == 0 and shape for a in args):
            return None
        args = [a if jnp.ndim(a) == len(shape) + 1 else self.bat(a) for a in args]
        return [_B(jnp.stack(args, axis))]

    def _cumulative(self, eqn, ins, p):
        return [_B(eqn.primitive.bind(ins[0].a, **p))]  # (axis < the batch axis)

    r_cumsum = r_cumprod = r_cummax = r_cummin = r_cumlogsumexp = _cumulative

    def r_dot_general(self, eqn, ins, p):
        """A broadcast product and a sum over the contracted axes: batch axis stays last."""
        (lc, rc), (lb, rb) = p["dimension_numbers"]
        dtype = eqn.outvars[0].aval.dtype
        lhs, rhs = [self.bat(x).astype(dtype) for x in ins]
        lr, rr = lhs.ndim - 1, rhs.ndim - 1
        lf = [d for d in range(lr) if d not in lc and d not in lb]
        rf = [d for d in range(rr) if d not in rc and d not in rb]
        L = jnp.transpose(lhs, list(lb) + lf + list(lc) + [lr])
        R = jnp.transpose(rhs, list(rb) + rf + list(rc) + [rr])
        nb, nlf, nrf, nc = len(lb), len(lf), len(rf), len(lc)
        bs, lfs, rfs, cs = (L.shape[:nb], L.shape[nb:nb + nlf], R.shape[nb:nb + nrf],
                            L.shape[nb + nlf:nb + nlf + nc])
        L = L.reshape(bs + lfs + (1,) * nrf + cs + (self.batch,))
        R = R.reshape(bs + (1,) * nlf + rfs + cs + (self.batch,))
        prod = L * R
        axes = tuple(range(nb + nlf + nrf, nb + nlf + nrf + nc))
        return [_B(_halving(prod, axes, lax.add) if axes else prod)]

    # -- small dense factorisations, written out over the batch axis ----------------
    # (jax.vmap of the primitives with the batch axis last runs XLA:CPU's batched LAPACK
    # call member by member: 6 solves with the 17 x 17 Schur complement of the spatial
    # slider-crank and its 3 x 3 inertia Cholesky made its RK4 step 0.2 ms per member;
    # written out, every entry is one operation over the contiguous batch axis)
    _FACTOR_MAX = 64  # larger matrices go through the jax.vmap fallback

    def r_cholesky(self, eqn, ins, p):
        """Lower Cholesky factor (zeros above the diagonal) from the lower triangle, entry
        by entry as in `elementwise_vmap` (a matrix that is not positive definite gives
        NaN entries, as LAPACK's does)."""
        a = ins[0]
        shape = tuple(eqn.invars[0].aval.shape)
        if len(shape) != 2 or shape[0] > self._FACTOR_MAX:
            return None
        A = self.bat(a)
        m = shape[0]
        L = [[None] * m for _ in range(m)]
        zero = jnp.zeros((self.batch,), A.dtype)
        for j in range(m):
            for i in range(j, m):
                r = A[i, j]
                for k in range(j):
                    r = r - L[i][k] * L[j][k]
                L[i][j] = jnp.sqrt(r) if i == j else r / L[j][j]
        rows = [jnp.stack([L[i][j] if j <= i else zero for j in range(m)]) for i in range(m)]
        return [_B(jnp.stack(rows))]

    def r_triangular_solve(self, eqn, ins, p):
        """X with T X = B (left_side) or X T = B, T triangular (transpose_a, lower,
        unit_diagonal as lax.linalg.triangular_solve): substitution row by row, each row an
        operation over (columns of B, batch)."""
        a, b = ins
        sa, sb = tuple(eqn.invars[0].aval.shape), tuple(eqn.invars[1].aval.shape)
        if len(sa) != 2 or len(sb) != 2 or sa[0] > self._FACTOR_MAX or p.get("conjugate_a"):
            return None
        T, Bm = self.bat(a), self.bat(b)  # (m, m, batch), (rows, cols, batch)
        if p["transpose_a"]:
            T = jnp.swapaxes(T, 0, 1)
        lower = p["lower"] != bool(p["transpose_a"])
        if not p["left_side"]:  # X T = B  <=>  T^T X^T = B^T
            T, lower, Bm = jnp.swapaxes(T, 0, 1), not lower, jnp.swapaxes(Bm, 0, 1)
        m = T.shape[0]
        X = [None] * m
        for i in (range(m) if lower else range(m - 1, -1, -1)):
            r = Bm[i]
            for j in (range(i) if lower else range(i + 1, m)):
                r = r - T[i, j][None, :] * X[j]
            X[i] = r if p["unit_diagonal"] else r / T[i, i][None, :]
        out = jnp.stack(X)
        return [_B(out if p["left_side"] else jnp.swapaxes(out, 0, 1))]

    # -- control flow ----------------------------------------------------------------
    def cond(self, eqn, ins):
        index, branches, ops = J.cond_parts(eqn, ins)
        if not _is_b(index):
            flags = [_is_b(o) for o in ops]
            vals = [o.a if _is_b(o) else o for o in ops]

            def branch(b):
                def fn(*o):
                    args = [_B(a) if f else a for a, f in zip(o, flags)]
                    return [self.bat(r) for r in self.run_closed(b, args)]
                return fn
            fns = [self.nested(branch(b)) for b in branches]
            flat = lax.switch(lax.convert_element_type(index, np.int32), fns, *vals)
            return [_B(o) for o in flat]
        if len(branches) == 2 and J.in_scope(eqn, RARE_SCOPE):
            # (see jaxmbs.core._rare: branch 1 alone is rarely taken; one batch-wide conditional)
            flags = [_is_b(o) for o in ops]

            def fn(which):
                def f(sel, *o):
                    args = [_B(a) if fl else a for a, fl in zip(o, flags)]
                    return [x.a for x in self.select_branches(
                        eqn, sel, [self.run_closed(branches[k], args) for k in which])]
                return f
            flat = lax.cond(jnp.any(index.a != 0), self.nested(fn((0, 1))),
                            self.nested(fn((0,))), index.a,
                            *[o.a if fl else o for o, fl in zip(ops, flags)])
            return [_B(o) for o in flat]
        return self.select_branches(eqn, index.a, [self.run_closed(b, ops) for b in branches])

    def select_branches(self, eqn, sel, results):
        """Every branch's results, chosen per member by the (batch,) index sel (one
        branch's results: those, batched)."""
        if len(results) == 1:
            return [_B(self.bat(r)) for r in results[0]]
        sel = (lax.convert_element_type(sel, np.bool_) if len(results) == 2
               else lax.clamp(np.int32(0), lax.convert_element_type(sel, np.int32),
                              np.int32(len(results) - 1)))
        out = []
        for k, v in enumerate(eqn.outvars):
            cases = [self.bat(r[k]) for r in results]
            s = sel.reshape((1,) * len(v.aval.shape) + (self.batch,))
            out.append(_B(lax.select_n(jnp.broadcast_to(s, cases[0].shape), *cases)))
        return out

    def scan(self, eqn, ins):
        nc, ncar, body = J.scan_layout(eqn)
        p = eqn.params
        length = int(p["length"])
        consts, carry, xs = ins[:nc], ins[nc:nc + ncar], ins[nc + ncar:]
        carry = [self.bat(c) for c in carry]  # (carries batched from the start: a fixed point)
        xs_b = [_is_b(x) for x in xs]
        xs_v = [x.a if _is_b(x) else x for x in xs]

        def f(c, x):
            xin = [_B(a) if b else a for a, b in zip(x, xs_b)]
            out = self.run_closed(body, list(consts) + [_B(a) for a in c] + xin)
            return [self.bat(o) for o in out[:ncar]], [self.bat(o) for o in out[ncar:]]

        c_fin, ys = lax.scan(self.nested(f), carry, xs_v, length=length, reverse=p["reverse"],
                             unroll=p.get("unroll", 1))
        return [_B(c) for c in c_fin] + [_B(y) for y in ys]


# data movement whose entries come from one operand (or several, for concatenate), the
# other operands (indices, starts) known at trace time
_SELECTION = {"slice": (0,), "squeeze": (0,), "reshape": (0,), "expand_dims": (0,),
              "transpose": (0,), "rev": (0,), "broadcast_in_dim": (0,), "gather": (0,),
              "dynamic_slice": (0,), "concatenate": None, "copy": (0,), "copy_p": (0,)}


class _Group:
    __slots__ = ("root", "entries", "consts")


class _Site:
    __slots__ = ("group", "rows", "shape", "sin")


def _rows(x, idx):
    """x[idx] along the leading axis for static integer idx (a slice where idx is a range)."""
    idx = np.asarray(idx, np.int64)
    if idx.size and np.array_equal(idx, np.arange(idx[0], idx[0] + idx.size)):
        return lax.slice_in_dim(x, int(idx[0]), int(idx[0]) + idx.size, axis=0)
    return jnp.take(x, idx, axis=0)


def _shared_trig(eqns, env):
    """{id(eqn): _Site} for the float64 sin / cos equations of one jaxpr scope whose
    arguments are entries selected (slices, gathers with known indices, reshapes,
    concatenations with known constants, ...) from one computed array, the group's root.

    Why: a planar mechanism's family core evaluates the rotation of a body wherever a joint,
    a force or the mass matrix uses it, each time from its own selection of the
    coordinates: four sine-cosine pairs of 16 angles per stage of a 16-body chain for 16
    distinct angles, each a ~40-operation polynomial per entry (`_sincos`). XLA merges
    identical expressions only. Written once per root and gathered: chains of 8 to 64
    bodies, RK4, 1.12-1.22x the steps/s with Projection, 1.04-1.10x with Baumgarte, the
    same results (docs/dev/performance.md#shared-trig).

    The selections are evaluated on arrays of entry ids (`_numpy_eval`, float64 ids: exact
    below 2**53); a site whose selection cannot be evaluated at trace time keeps its own
    equation, and a group whose table would be no smaller than its sites is not formed."""
    trig = [e for e in eqns if e.primitive.name in ("sin", "cos")
            and np.dtype(e.outvars[0].aval.dtype) == np.float64
            and e.params.get("accuracy") is None]
    if len(trig) < 2:
        return {}
    prod = {v: e for e in eqns for v in e.outvars}
    roots: dict = {}  # root var -> base id (ids of a root: base .. base + size - 1)
    next_id = [1.0]
    consts: dict = {}  # known value -> id (negative)
    memo: dict = {}
    size = lambda v: int(np.prod(v.aval.shape, dtype=np.int64))

    kmemo: dict = {}

    def known(v, depth=0):
        """The trace-time value of v (a literal, a known constant, or computed from those
        by an equation `_numpy_eval` evaluates: index arithmetic), else None."""
        if J.is_literal(v):
            return np.asarray(J.literal_value(v))
        if v in kmemo:
            return kmemo[v]
        x = env.get(v)
        r = None
        if x is not None and not _is_b(x):
            try:
                r = np.asarray(x)
            except (jax.errors.TracerArrayConversionError, TypeError, ValueError):
                r = None  # (a value of an enclosing trace, a key, a token)
        elif v in prod and depth < 16:
            e = prod[v]
            args = [known(u, depth + 1) for u in e.invars]
            if len(e.outvars) == 1 and all(a is not None for a in args):
                res = _numpy_eval.evaluate(e.primitive.name, args, e.params, [e.outvars[0].aval])
                r = None if res is None else res[0]
        kmemo[v] = r
        return r

    def const_ids(val):
        out = np.empty(val.shape, np.float64)
        for i, x in np.ndenumerate(val):
            out[i] = consts.setdefault(float(x), -1.0 - len(consts))
        return out

    def ids(v, depth=0):
        """Entry ids of v (float64 array of v's shape), or None."""
        if v in memo:
            return memo[v]
        memo[v] = None
        val = known(v)
        if val is not None:
            r = const_ids(val.astype(np.float64))
        else:
            e = prod.get(v)
            data = None if e is None else _SELECTION.get(e.primitive.name, False)
            if e is None or data is False or depth > 64:
                if v not in roots:
                    roots[v], next_id[0] = next_id[0], next_id[0] + size(v)
                base = roots[v]
                r = base + np.arange(size(v), dtype=np.float64).reshape(v.aval.shape)
            else:
                args = []
                for k, u in enumerate(e.invars):
                    if data is None or k in data:
                        a = ids(u, depth + 1)
                    else:
                        a = known(u)
                    if a is None:
                        return None
                    args.append(a)
                aval = jax.ShapeDtypeStruct(e.outvars[0].aval.shape, np.float64)
                res = _numpy_eval.evaluate(e.primitive.name, args, e.params, [aval])
                r = None if res is None else res[0]
        memo[v] = r
        return r

    groups: dict = {}
    sites = []
    for e in trig:
        x = e.invars[0]
        r = None if J.is_literal(x) else ids(x)
        if r is None:
            continue
        flat = r.reshape(-1)
        pos = flat[flat > 0]
        owner = [u for u, b in roots.items() if b <= pos.min() < b + size(u)] if pos.size else []
        if len(owner) != 1 or np.any(pos >= roots[owner[0]] + size(owner[0])):
            continue
        sites.append((e, owner[0], r))
        groups.setdefault(owner[0], []).append(flat)
    out = {}
    for root, flats in groups.items():
        allids = np.unique(np.concatenate(flats))
        if len(flats) < 2 or allids.size >= sum(f.size for f in flats):
            continue
        g = _Group()
        g.root = root
        g.entries = (allids[allids > 0] - roots[root]).astype(np.int64)
        cids = allids[allids < 0]
        inv = {i: x for x, i in consts.items()}
        g.consts = [inv[i] for i in cids]
        # (rows of the table: the root's entries in id order, then the constants)
        keys = np.concatenate([allids[allids > 0], cids])
        order = np.argsort(keys)
        for e, rt, r in sites:
            if rt is root:
                st = _Site()
                st.group = g
                st.rows = order[np.searchsorted(keys[order], r)].astype(np.int64)
                st.shape, st.sin = tuple(e.outvars[0].aval.shape), e.primitive.name == "sin"
                out[id(e)] = st
    return out


def minor_vmap(fun: Callable, in_axes: int | None | Sequence[Any] = 0, out_axes: int = -1,
               fences: bool | None = None) -> Callable:
    """Vectorise `fun` over a batch like `jax.vmap(fun, in_axes, out_axes)`, keeping the
    batch axis last in every intermediate array (see the module docstring).

    in_axes: an int or None per positional argument (or a pytree of them): 0 (batch
      leading), -1 (batch trailing: no transposes) or None (shared by all members).
    out_axes: 0 or -1 for every output (every output is batched).
    fences: as for `elementwise_vmap` (values with several consumers materialised through
      conditionals where recomputing them costs); None: on the CPU backend only.
    """
    if out_axes not in (0, -1):
        raise ValueError(f"out_axes must be 0 or -1, got {out_axes}")

    def wrapped(*args):
        leaves, axes_flat, batch, member, closed, out_avals, out_tree = _member_program(
            fun, args, in_axes)
        vals = [jnp.moveaxis(jnp.asarray(x), 0, -1) if ax == 0 else jnp.asarray(x)
                for x, ax in zip(leaves, axes_flat)]
        kinds = [ax is not None for ax in axes_flat]
        use_fences = (jax.default_backend() == "cpu") if fences is None else fences

        def run(vals):
            mi = _Minor(batch)
            outs = mi.run_closed(closed, [_B(v) if k else v for v, k in zip(vals, kinds)])
            return [mi.bat(o).astype(a.dtype) for o, a in zip(outs, out_avals)]

        outs = _shared_barriers(run, (vals,)) if use_fences else run(vals)
        res = [o if out_axes == -1 else jnp.moveaxis(o, -1, 0) for o in outs]
        return jax.tree_util.tree_unflatten(out_tree, res)

    return wrapped
