"""Batch-minor, element-wise vectorisation of small per-mechanism programs.

`jax.vmap` keeps every array of a mechanism (a 2-vector, a 3x3 block, a 4x6 Jacobian) as
one array with the batch axis in front. For a small mechanism, XLA:CPU then spends most
of a step moving those tiny trailing axes around: transposes, concatenates and short
reductions took 63 % of the double pendulum's kernel time
(docs/dev/performance.md#kernel-profile).

`elementwise_vmap(f)` vectorises the other way. It traces `f` for ONE batch member into
a jaxpr, then evaluates that jaxpr with every array written out as a NumPy object array
of its scalar entries, each entry a length-B vector over the batch (or a constant). Every
operation becomes element-wise arithmetic on contiguous batch vectors, which XLA fuses
into a few long loops that vectorise across mechanisms, with no layout changes at all:

* data movement (slice, reshape, transpose, concatenate, gather, scatter with constant
  indices, ...) costs nothing: it only rearranges the entries;
* entries known at trace time (constants, structural zeros of a Jacobian) are folded:
  0 * x, 0 + x, 1 * x, x - 0 and x / 1 emit no operation, so sparsity in the equations is
  exploited for free;
* `dot_general` and reductions are written out as sums of products;
* `scan` is unrolled up to `SCAN_UNROLL` iterations and otherwise kept as a `lax.scan`
  over the flattened entries; `jit`, `custom_jvp`, `custom_vjp`, `checkpoint` are inlined
  and `custom_linear_solve` evaluates its solve (derivatives are those of the written-out
  program: exact, not implicit).

The emitted program has one operation per scalar operation of `f`, so it suits programs
with few coordinates (tens, not thousands of scalars per array); `jaxmbs.simulate_batch`
uses it for small mechanisms by default (see `vectorize=`). Unsupported primitives (a
`while_loop` or a `cond` on batched data, sorting, LAPACK calls) raise
`NotImplementedError` naming the primitive; callers fall back to `jax.vmap`.

Folding 0 * x to 0 differs from IEEE arithmetic only when x is inf or NaN.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ...core._rare import RARE_SCOPE
from ..xla_cpu import keeping as _keeping
from . import _jaxpr as J
from . import _numpy_eval
from ._barriers import BARRIER_LEVELS, _shared_barriers  # noqa: F401 (re-exported)
from ._trig import _SINCOS_MAX, _sincos, _sincos_poly, once_per_value  # noqa: F401 (re-exported)

__all__ = ["elementwise_vmap", "SCAN_UNROLL", "BARRIER_LEVELS", "MAX_OPS"]

SCAN_UNROLL = 8  # scans of at most this many iterations are unrolled ...
UNROLL_MAX_EQNS = 2000  # ... when their bodies, unrolled, hold at most this many jaxpr equations:
# a loop over the 4 stages of RK4 stays a loop, so the program holds one copy of the vector
# field, not four (the compile time is mostly LLVM's, per kernel: about half)
MAX_OPS = 80_000  # largest written-out program (scalar operations), see _Ctx.bind

# element-wise primitives (n-ary, same-shaped operands, one output)
_ELEMENTWISE = {
    "add", "add_any", "sub", "mul", "div", "neg", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
    "sinh", "cosh", "tanh", "exp", "exp2", "log", "log1p", "expm1", "sqrt", "rsqrt", "cbrt",
    "abs", "sign", "floor", "ceil", "round", "integer_pow", "pow", "square", "max", "min",
    "rem", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "xor", "select_n",
    "convert_element_type", "stop_gradient", "logistic", "is_finite", "nextafter", "clamp",
    "erf", "erfc", "erf_inv", "lgamma", "digamma", "reduce_precision", "copy", "copy_p",
    "real", "imag", "shift_left", "shift_right_logical", "shift_right_arithmetic",
    "population_count", "optimization_barrier",
}
# data movement: (positions of the data operands, or None for all)
_STRUCTURAL = {
    "slice": (0,), "squeeze": (0,), "reshape": (0,), "broadcast_in_dim": (0,),
    "transpose": (0,), "rev": (0,), "expand_dims": (0,), "concatenate": None, "stack": None,
    "pad": (0, 1), "gather": (0,), "dynamic_slice": (0,), "dynamic_update_slice": (0, 1),
    "scatter": (0, 2), "split": (0,),
}
_INLINE = J.CALL_PRIMITIVES  # call-like primitives: their callee is evaluated in place


# the primitives emitted by the interpreter itself (not copied from an equation)
_LAX = {"add": lax.add, "sub": lax.sub, "mul": lax.mul, "div": lax.div, "sqrt": lax.sqrt,
        "neg": lax.neg, "max": lax.max, "min": lax.min,
        "and": lax.bitwise_and, "or": lax.bitwise_or, "select_n": lax.select_n}


_MAX_INDEX_CASES = 4096  # most index values a traced-index data movement is evaluated for


def _fill_entry(dtype, fill_value):
    """The value a gather in fill mode reads out of bounds (jax's default: NaN for inexact
    types, the minimum / maximum for signed / unsigned integers, True for booleans)."""
    dtype = np.dtype(dtype)
    if fill_value is not None:
        return np.asarray(fill_value).astype(dtype)[()]
    if np.issubdtype(dtype, np.inexact):
        return np.asarray(np.nan).astype(dtype)[()]
    if dtype == np.bool_:
        return np.bool_(True)
    info = np.iinfo(dtype)
    return np.asarray(info.min if np.issubdtype(dtype, np.signedinteger) else info.max, dtype)[()]


def _const_bind(prim, args, params, out_avals):
    """[results as NumPy arrays] of prim on known values: NumPy where _numpy_eval has it,
    else JAX (eagerly, which compiles a small XLA program per distinct signature)."""
    r = _numpy_eval.evaluate(prim.name, args, params, out_avals)
    if r is None:
        with jax.ensure_compile_time_eval():
            r = prim.bind(*args, **params)
        r = [np.asarray(o) for o in (r if prim.multiple_results else [r])]
    return r


def _size(closed) -> int:
    """Equations of a (closed) jaxpr, its sub-jaxprs included."""
    jaxpr, _ = J.closed(closed)
    n = 0
    for eqn in jaxpr.eqns:
        n += 1
        for v in eqn.params.values():
            for sub in (v if isinstance(v, (tuple, list)) else (v,)):
                if isinstance(sub, (J.ClosedJaxpr, J.Jaxpr)):
                    n += _size(sub)
    return n


def _known(e) -> bool:
    return isinstance(e, np.generic)


def _is_const(e, c) -> bool:
    return _known(e) and bool(e == c)


class _Ctx:
    """Batch size and helpers for emitting operations on batch vectors."""

    def __init__(self, batch: int, fences: bool, keep_loops: bool = False):
        self.batch = batch
        self.fences = fences
        self.keep_loops = keep_loops  # every loop emitted through `jaxmbs.experimental.xla_cpu.keep_loop`
        self.emitted = 0
        self._sincos: dict = {}

    def full(self, e, dtype):
        """An entry as a (batch,) array."""
        if _known(e) or jnp.ndim(e) == 0:
            return lax.broadcast_in_dim(jnp.asarray(e, dtype), (self.batch,), ())
        return e

    def sincos(self, x):
        """(sin x, cos x) of a batch vector, computed once per vector: float64 through
        `_sincos`, other dtypes through lax.sin / lax.cos. (Once per vector: the family
        core evaluates a body's rotation in every joint and force that uses it; float32
        programs held 42 sines instead of 12 (double pendulum), each fused into its
        consumer, and ran 3.6x slower than before the family core.)"""
        def make(x):
            self.emitted += 40 if x.dtype == np.float64 else 2
            return _sincos(x) if x.dtype == np.float64 else (lax.sin(x), lax.cos(x))
        return once_per_value(self._sincos, x, make)

    def bind(self, prim, elems, params):
        """prim on entries (broadcast to the batch where needed); params None: the
        primitive's default parameters, through its `lax` function."""
        shaped = [e for e in elems if not _known(e) and jnp.ndim(e) == 1]
        args = []
        for e in elems:
            if _known(e):
                e = np.asarray(e)
            if shaped and jnp.ndim(e) == 0:
                e = lax.broadcast_in_dim(e, (self.batch,), ())
            args.append(e)
        self.emitted += 1
        if self.emitted > MAX_OPS:
            raise NotImplementedError(
                f"elementwise_vmap: the written-out program exceeds MAX_OPS = {MAX_OPS} scalar "
                "operations (XLA's compiler recurses over its depth); use jax.vmap for a function "
                "this large")
        if params is None:
            return _LAX[prim.name](*args)
        return prim.bind(*args, **params)


def _fold(ctx, prim, elems, params, out_dtype):
    """One scalar operation, folded when possible."""
    name = prim.name
    if all(_known(e) for e in elems):
        args = [np.asarray(e) for e in elems]
        if params is None:  # (the lax function's default parameters)
            r = _numpy_eval.evaluate(name, args, {}, [jax.ShapeDtypeStruct((), out_dtype)])
            if r is None:
                with jax.ensure_compile_time_eval():
                    r = [_LAX[name](*args)]
        else:
            r = _const_bind(prim, args, params, [jax.ShapeDtypeStruct((), out_dtype)])
        return np.asarray(r[0]).astype(out_dtype)[()]
    if name == "add":
        a, b = elems
        if _is_const(a, 0):
            return b
        if _is_const(b, 0):
            return a
    elif name == "sub":
        a, b = elems
        if _is_const(b, 0):
            return a
        if _is_const(a, 0):
            return ctx.bind(lax.neg_p, [b], None)
    elif name == "mul":
        a, b = elems
        for x, y in ((a, b), (b, a)):
            if _is_const(x, 0):
                return np.zeros((), out_dtype)[()]
            if _is_const(x, 1):
                return y
            if _is_const(x, -1):
                return ctx.bind(lax.neg_p, [y], None)
    elif name == "div":
        a, b = elems
        if _is_const(b, 1):
            return a
        if _is_const(a, 0):
            return np.zeros((), out_dtype)[()]
    elif name in ("convert_element_type",):
        if not _known(elems[0]) and elems[0].dtype == out_dtype:
            return elems[0]
    elif name in ("sin", "cos") and not _known(elems[0]) and jnp.ndim(elems[0]) == 1 and (
            params or {}).get("accuracy") is None:
        s, c = ctx.sincos(elems[0])
        return s if name == "sin" else c
    elif name == "stop_gradient":
        return lax.stop_gradient(elems[0])
    elif name == "select_n":
        pred, *cases = elems
        if _known(pred):
            return cases[int(pred)]
        if all(c is cases[0] for c in cases[1:]):
            return cases[0]
    elif name == "or":
        a, b = elems
        for x, y in ((a, b), (b, a)):
            if _known(x) and x.dtype == np.bool_:
                return x if bool(x) else y
    elif name == "and":
        a, b = elems
        for x, y in ((a, b), (b, a)):
            if _known(x) and x.dtype == np.bool_:
                return y if bool(x) else x
    return ctx.bind(prim, elems, params)


def _to_obj(x, dtype=None) -> np.ndarray:
    """A concrete array as an object array of NumPy scalars."""
    a = np.asarray(x) if dtype is None else np.asarray(x, dtype)
    out = np.empty(a.shape, object)
    for idx in np.ndindex(a.shape):
        out[idx] = a[idx]
    return out


def _scalar(e) -> np.ndarray:
    """A 0-d object array holding e."""
    o = np.empty((), object)
    o[()] = e
    return o


def _concrete(x, dtype) -> np.ndarray:
    """An object array of known entries as a NumPy array of dtype."""
    return np.asarray(x.tolist() if x.ndim else x[()], dtype).reshape(x.shape)


def _tree(ctx, prim, terms, dtype):
    """terms combined pairwise with prim (a balanced tree: depth log2 of the count, which
    keeps the dataflow graph shallow; see _shared_barriers)."""
    terms = list(terms)
    while len(terms) > 1:
        nxt = [_fold(ctx, prim, [terms[i], terms[i + 1]], None, dtype)
               for i in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
    return terms[0]


def _sum(ctx, terms, dtype):
    terms = [t for t in terms if not _is_const(t, 0)]
    return np.zeros((), dtype)[()] if not terms else _tree(ctx, lax.add_p, terms, dtype)


class _Interp:
    def __init__(self, ctx: _Ctx):
        self.ctx = ctx

    # values: np.ndarray of dtype object (entries: NumPy scalars or traced arrays)
    def read(self, env, v):
        if J.is_literal(v):
            return _to_obj(J.literal_value(v), v.aval.dtype)
        return env[v]

    def run(self, jaxpr, consts, args):
        env = {}
        for v, x in zip(jaxpr.constvars, consts):
            env[v] = x
        for v, x in zip(jaxpr.invars, args):
            env[v] = x
        for eqn in J.live_eqns(jaxpr):
            ins = [self.read(env, v) for v in eqn.invars]
            outs = self.eqn(eqn, ins)
            for v, o in zip(eqn.outvars, outs):
                env[v] = o  # (a dropped output's variable is never read)
        return [self.read(env, v) for v in jaxpr.outvars]

    def run_closed(self, closed, args):
        jaxpr, consts = J.closed(closed)
        return self.run(jaxpr, [_to_obj(c) for c in consts], args)

    def eqn(self, eqn, ins):
        name = eqn.primitive.name
        p = eqn.params
        outs_avals = [v.aval for v in eqn.outvars]
        if all(all(_known(e) for e in x.flat) for x in ins) and name not in (
                "scan", "while", "cond", "custom_linear_solve") and name not in _INLINE:
            r = _const_bind(eqn.primitive, [_concrete(x, v.aval.dtype) for x, v in zip(ins, eqn.invars)],
                            p, outs_avals)
            return [_to_obj(o, a.dtype) for o, a in zip(r, outs_avals)]
        if name in _ELEMENTWISE:
            shape = outs_avals[0].shape
            dtype = outs_avals[0].dtype
            xs = [np.broadcast_to(x, shape) for x in ins]
            out = np.empty(shape, object)
            for idx in np.ndindex(shape):
                out[idx] = _fold(self.ctx, eqn.primitive, [x[idx] for x in xs], p, dtype)
            return [out]
        if name in _STRUCTURAL:
            return self.structural(eqn, ins)
        if name == "scatter-add" or name == "scatter_add":
            return [self.scatter_add(eqn, ins)]
        if name == "dot_general":
            return [self.dot_general(eqn, ins)]
        if name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_and", "reduce_or",
                    "reduce_prod"):
            return [self.reduce(eqn, ins)]
        if name == "iota":
            return [_to_obj(_const_bind(eqn.primitive, [], p, outs_avals)[0], outs_avals[0].dtype)]
        if name in _INLINE:
            return self.run_closed(J.callee(eqn), ins)
        if name == "custom_linear_solve":
            solve, args = J.linear_solve_parts(eqn, ins)
            return self.run_closed(solve, args)
        if name == "cholesky" and ins[0].ndim == 2:
            return [self.cholesky(ins[0], outs_avals[0].dtype)]
        if name == "triangular_solve" and ins[0].ndim == 2 and ins[1].ndim == 2:
            return [self.triangular_solve(eqn, *ins)]
        if name == "scan":
            return self.scan(eqn, ins)
        if name == "cond":
            return self.cond(eqn, ins)
        raise NotImplementedError(
            f"elementwise_vmap: primitive '{name}' is not supported; use jax.vmap for this "
            "function (simulate_batch(..., vectorize='vmap'))")

    # -- data movement ---------------------------------------------------------
    def structural(self, eqn, ins):
        """Data movement: the operation is evaluated on entry ids (a pool of the data
        operands' entries) and its result read back from the pool. Index operands must be
        known or shared by the batch (a traced scalar, e.g. a rolled loop's counter): then
        the operation is evaluated for every index value that behaves differently (-1 ..
        the largest dimension; beyond, gather / slice clamp and scatter drops alike) and
        each output entry selects among its candidates."""
        name = eqn.primitive.name
        data_pos = _STRUCTURAL[name]
        if data_pos is None:
            data_pos = tuple(range(len(ins)))
        pool, args, off = [], [], 0
        traced = []  # (argument position, flat position, shared scalar)
        for i, (x, v) in enumerate(zip(ins, eqn.invars)):
            if i in data_pos:
                ids = off + np.arange(x.size, dtype=np.int32).reshape(x.shape)
                pool.extend(x.reshape(-1).tolist())
                off += x.size
                args.append(ids)
            else:
                for k, e in enumerate(x.flat):
                    if not _known(e):
                        if jnp.ndim(e) != 0:
                            raise NotImplementedError(
                                f"elementwise_vmap: '{name}' with a batch-dependent index operand "
                                "is not supported; use jax.vmap")
                        traced.append((i, k, e))
                args.append(x)
        fill_id = len(pool)
        params = dict(eqn.params)
        if name == "gather" and "fill_value" in params:
            pool.append(_fill_entry(eqn.outvars[0].aval.dtype, params["fill_value"]))
            params["fill_value"] = -1
        span = max([d for x in (ins[i] for i in data_pos) for d in x.shape], default=1) + 2
        cands = list(itertools.product(range(-1, span - 1), repeat=len(traced)))
        if len(cands) > _MAX_INDEX_CASES:
            raise NotImplementedError(
                f"elementwise_vmap: '{name}' with {len(traced)} traced indices ({len(cands)} "
                f"cases, above {_MAX_INDEX_CASES}); use jax.vmap")
        results = []
        for cand in cands:
            cargs = []
            for i, (x, v) in enumerate(zip(args, eqn.invars)):
                if i in data_pos:
                    cargs.append(x)
                    continue
                flat = x.reshape(-1).copy()
                for (ai, k, _), c in zip(traced, cand):
                    if ai == i:
                        flat[k] = np.asarray(c).astype(v.aval.dtype)[()]
                cargs.append(_concrete(flat.reshape(x.shape), v.aval.dtype))
            results.append(_const_bind(eqn.primitive, cargs, params,
                                       [jax.ShapeDtypeStruct(v.aval.shape, np.int32)
                                        for v in eqn.outvars]))
        pool_arr = np.empty(len(pool), object)
        for i, e in enumerate(pool):
            pool_arr[i] = e
        case = None
        if traced:  # which candidate: mixed radix over the clamped traced indices
            for _, _, e in traced:
                k = lax.clamp(np.int32(-1), lax.convert_element_type(e, np.int32),
                              np.int32(span - 2)) + np.int32(1)
                case = k if case is None else case * np.int32(span) + k
        outs = []
        for n_out, (o0, v) in enumerate(zip(results[0], eqn.outvars)):
            ids = np.stack([r[n_out] for r in results])  # (cases,) + shape
            ids = np.where(ids == -1, fill_id, ids)
            if ids.size and (ids.min() < 0 or ids.max() >= len(pool)):
                raise NotImplementedError(f"elementwise_vmap: '{name}' reads out of bounds")
            out = np.empty(o0.shape, object)
            for idx in np.ndindex(o0.shape):
                col = ids[(slice(None),) + idx]
                if (col == col[0]).all():
                    out[idx] = pool_arr[col[0]]
                else:
                    out[idx] = _fold(self.ctx, lax.select_n_p, [case] + [pool_arr[c] for c in col],
                                     None, v.aval.dtype)
            outs.append(out)
        return outs

    def scatter_add(self, eqn, ins):
        operand, indices, updates = ins
        if not all(_known(e) for e in indices.flat):
            raise NotImplementedError("elementwise_vmap: scatter-add with batch-dependent indices")
        idx = _concrete(indices, eqn.invars[1].aval.dtype)
        U = updates.size
        onehot = np.eye(U, dtype=np.int32).reshape((U,) + updates.shape)
        zeros = np.zeros(operand.shape, np.int32)
        params = dict(eqn.params)
        params.pop("update_jaxpr", None), params.pop("update_consts", None)

        def count(u):  # (integer scatter-add of a one-hot update: NumPy, else JAX)
            r = _numpy_eval.evaluate("scatter-add", [zeros, idx, onehot[u]], params,
                                     [jax.ShapeDtypeStruct(zeros.shape, np.int32)])
            if r is not None:
                return r[0]
            with jax.ensure_compile_time_eval():
                return np.asarray(jax.lax.scatter_add(
                    zeros, idx, onehot[u], params["dimension_numbers"],
                    indices_are_sorted=params.get("indices_are_sorted", False),
                    unique_indices=params.get("unique_indices", False), mode=params.get("mode")))

        counts = np.stack([count(u) for u in range(U)]).reshape(U, -1)
        dtype = eqn.outvars[0].aval.dtype
        flat_u = updates.reshape(-1)
        out = operand.reshape(-1).copy()
        for j in range(out.size):
            terms = [out[j]]
            for u in np.nonzero(counts[:, j])[0]:
                c = int(counts[u, j])
                t = flat_u[u]
                if c != 1:
                    t = _fold(self.ctx, lax.mul_p, [t, np.asarray(c, dtype)[()]], None, dtype)
                terms.append(t)
            out[j] = _sum(self.ctx, terms, dtype)
        return out.reshape(operand.shape)

    # -- arithmetic on whole arrays ---------------------------------------------
    def dot_general(self, eqn, ins):
        lhs, rhs = ins
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        dtype = eqn.outvars[0].aval.dtype
        lf = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
        rf = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
        L = np.transpose(lhs, list(lb) + lf + list(lc))
        R = np.transpose(rhs, list(rb) + rf + list(rc))
        bshape = L.shape[:len(lb)]
        lfs, rfs = L.shape[len(lb):len(lb) + len(lf)], R.shape[len(rb):len(rb) + len(rf)]
        K = int(np.prod(L.shape[len(lb) + len(lf):], dtype=int))
        nb = int(np.prod(bshape, dtype=int))
        L = L.reshape(nb, int(np.prod(lfs, dtype=int)), K)
        R = R.reshape(nb, int(np.prod(rfs, dtype=int)), K)
        out = np.empty((nb, L.shape[1], R.shape[1]), object)
        conv = lambda e: e if (_known(e) or e.dtype == dtype) else lax.convert_element_type(e, dtype)
        for b in range(nb):
            for i in range(L.shape[1]):
                for j in range(R.shape[1]):
                    terms = [_fold(self.ctx, lax.mul_p, [conv(L[b, i, k]), conv(R[b, j, k])], None, dtype)
                             for k in range(K)]
                    out[b, i, j] = _sum(self.ctx, terms, dtype)
        return out.reshape(tuple(bshape) + tuple(lfs) + tuple(rfs))

    def reduce(self, eqn, ins):
        (x,) = ins
        axes = tuple(eqn.params["axes"])
        name = eqn.primitive.name
        dtype = eqn.outvars[0].aval.dtype
        keep = [d for d in range(x.ndim) if d not in axes]
        X = np.transpose(x, keep + list(axes))
        oshape = X.shape[:len(keep)]
        X = X.reshape(int(np.prod(oshape, dtype=int)), -1)
        prim = {"reduce_sum": lax.add_p, "reduce_max": lax.max_p, "reduce_min": lax.min_p,
                "reduce_and": lax.and_p, "reduce_or": lax.or_p, "reduce_prod": lax.mul_p}[name]
        out = np.empty(X.shape[0], object)
        for i in range(X.shape[0]):
            row = list(X[i])
            if not row:
                with jax.ensure_compile_time_eval():
                    r = eqn.primitive.bind(np.zeros((0,), dtype), axes=(0,),
                                           **{k: v for k, v in eqn.params.items() if k != "axes"})
                out[i] = np.asarray(r).astype(dtype)[()]
                continue
            out[i] = (_sum(self.ctx, row, dtype) if name == "reduce_sum"
                      else _tree(self.ctx, prim, row, dtype))
        return out.reshape(oshape)

    def _op(self, name, args, dtype):
        return _fold(self.ctx, getattr(lax, name + "_p"), list(args), None, dtype)

    def cholesky(self, A, dtype):
        """Lower Cholesky factor (zeros above the diagonal), from A's lower triangle."""
        m = A.shape[0]
        L = np.empty((m, m), object)
        zero = np.zeros((), dtype)[()]
        for j in range(m):
            for i in range(j):
                L[i, j] = zero
            for i in range(j, m):
                acc = _sum(self.ctx, [self._op("mul", (L[i, k], L[j, k]), dtype) for k in range(j)], dtype)
                r = self._op("sub", (A[i, j], acc), dtype)
                L[i, j] = self._op("sqrt", (r,), dtype) if i == j else self._op("div", (r, L[j, j]), dtype)
        return L

    def triangular_solve(self, eqn, a, b):
        p = eqn.params
        dtype = eqn.outvars[0].aval.dtype
        T = a.T if p["transpose_a"] else a
        lower = p["lower"] != bool(p["transpose_a"])
        if not p["left_side"]:  # X T = B  <=>  T^T X^T = B^T
            T, lower, b = T.T, not lower, b.T
        m, k = b.shape
        X = np.empty((m, k), object)
        rows = range(m) if lower else range(m - 1, -1, -1)
        for c in range(k):
            done = []
            for i in rows:
                acc = _sum(self.ctx, [self._op("mul", (T[i, j], X[j, c]), dtype) for j in done], dtype)
                r = self._op("sub", (b[i, c], acc), dtype)
                X[i, c] = r if p["unit_diagonal"] else self._op("div", (r, T[i, i]), dtype)
                done.append(i)
        return X if p["left_side"] else X.T

    # -- control flow ------------------------------------------------------------
    def cond(self, eqn, ins):
        index, branches, ops = J.cond_parts(eqn, ins)
        i = index[()]
        if _known(i):
            return self.run_closed(branches[int(np.clip(int(i), 0, len(branches) - 1))], ops)
        if len(branches) == 2 and J.in_scope(eqn, RARE_SCOPE):
            return self.rare_cond(eqn, i, branches, ops)
        return self.select_branches(eqn, i, [self.run_closed(b, ops) for b in branches])

    def select_branches(self, eqn, i, results):
        """Every branch's results (object arrays), chosen per member by the index entry i."""
        if len(results) == 2:
            sel = lax.convert_element_type(i, np.bool_)
        else:
            sel = lax.clamp(np.int32(0), lax.convert_element_type(i, np.int32),
                            np.int32(len(results) - 1))
        outs = []
        for k, v in enumerate(eqn.outvars):
            shape, dtype = v.aval.shape, v.aval.dtype
            o = np.empty(shape, object)
            for pos in np.ndindex(shape):
                o[pos] = _fold(self.ctx, lax.select_n_p, [sel] + [r[k][pos] for r in results], None, dtype)
            outs.append(o)
        return outs

    def rare_cond(self, eqn, i, branches, ops):
        """A conditional marked by `jaxmbs.core._rare.rare_cond` (branch 1 rarely taken): one
        batch-wide `lax.cond`: branch 0 alone when no member takes branch 1, both and a
        per-member select otherwise. Its operands are the traced entries of `ops` and i."""
        ctx = self.ctx
        traced = [e for o in ops for e in o.flat if not _known(e)]
        out_avals = [v.aval for v in eqn.outvars]

        def rebuild(vals):
            it = iter(vals)
            new = []
            for o in ops:
                c = np.empty(o.shape, object)
                for pos in np.ndindex(o.shape):
                    c[pos] = o[pos] if _known(o[pos]) else next(it)
                new.append(c)
            return new

        def flat(outs):
            return [ctx.full(e, a.dtype).astype(a.dtype) for o, a in zip(outs, out_avals) for e in o.flat]

        def traced_apart(f):  # (a branch's own traced values stay out of the sin/cos cache)
            def g(vals):
                saved = dict(ctx._sincos)
                try:
                    return f(vals)
                finally:
                    ctx._sincos = saved
            return g

        def common(vals):
            return flat(self.run_closed(branches[0], rebuild(vals[:-1])))

        def both(vals):
            args = rebuild(vals[:-1])
            return flat(self.select_branches(eqn, vals[-1], [self.run_closed(b, args) for b in branches]))

        res = iter(lax.cond(jnp.any(i != 0), traced_apart(both), traced_apart(common), traced + [i]))
        outs = []
        for a in out_avals:
            o = np.empty(a.shape, object)
            for pos in np.ndindex(a.shape):
                o[pos] = next(res)
            outs.append(o)
        return outs

    def scan(self, eqn, ins):
        p = eqn.params
        length = int(p["length"])
        nc, ncar, body = J.scan_layout(eqn)
        consts, carry, xs = ins[:nc], ins[nc:nc + ncar], ins[nc + ncar:]
        order = range(length - 1, -1, -1) if p["reverse"] else range(length)
        ys_avals = [v.aval for v in eqn.outvars[ncar:]]
        if length == 1 or (length <= SCAN_UNROLL and length * _size(body) <= UNROLL_MAX_EQNS):
            ys = [np.empty(a.shape, object) for a in ys_avals]  # (a: the stacked output)
            for t in order:
                out = self.run_closed(body, list(consts) + list(carry) + [x[t, ...] for x in xs])
                carry = out[:ncar]
                for y, o in zip(ys, out[ncar:]):
                    for idx in np.ndindex(o.shape):  # (entry by entry: NumPy would
                        y[(t,) + idx] = o[idx]       # unpack an array held by a 0-d entry)
            return list(carry) + ys
        return self._lax_scan(eqn, consts, carry, xs, body, length, ys_avals)

    def _lax_scan(self, eqn, consts, carry, xs, body, length, ys_avals):
        ctx = self.ctx
        ncar = len(carry)
        car_avals = [v.aval for v in eqn.outvars[:ncar]]
        x_avals = [v.aval for v in eqn.invars[len(consts) + ncar:]]
        flat0 = [ctx.full(e, a.dtype) for c, a in zip(carry, car_avals) for e in c.reshape(-1)]
        # xs: constants stay constants (sliced by lax.scan); entries stacked on a new axis
        xs_flat = []
        for x, a in zip(xs, x_avals):
            if all(_known(e) for e in x.flat):
                xs_flat.append(("c", jnp.asarray(_concrete(x, a.dtype))))
            else:
                xs_flat.append(("o", jnp.stack([jnp.stack([ctx.full(e, a.dtype) for e in x[t, ...].reshape(-1)])
                                                for t in range(length)]) if x[0, ...].size else
                                jnp.zeros((length, 0, ctx.batch), a.dtype)))

        def unflat(flat, avals):
            out, k = [], 0
            for a in avals:
                size = int(np.prod(a.shape, dtype=int))
                o = np.empty(size, object)
                for i in range(size):
                    o[i] = flat[k + i]
                out.append(o.reshape(a.shape))
                k += size
            return out

        def f(c_flat, x_in):
            c = unflat(c_flat, car_avals)
            xin = []
            for (kind, _), xi, a in zip(xs_flat, x_in, x_avals):
                shape = a.shape[1:]
                if kind == "c":
                    o = np.empty(shape, object)
                    for idx in np.ndindex(shape):
                        o[idx] = xi[idx]
                else:
                    o = np.empty(int(np.prod(shape, dtype=int)), object)
                    for i in range(o.size):
                        o[i] = xi[i]
                    o = o.reshape(shape)
                xin.append(o)
            out = self.run_closed(body, list(consts) + c + xin)
            c_new = [ctx.full(e, a.dtype) for o, a in zip(out[:ncar], car_avals) for e in o.reshape(-1)]
            ys = [jnp.stack([ctx.full(e, a.dtype) for e in o.reshape(-1)]) if o.size
                  else jnp.zeros((0, ctx.batch), a.dtype) for o, a in zip(out[ncar:], ys_avals)]
            return c_new, ys

        body_fn = (lambda c, x: _shared_barriers(f, (c, x))) if ctx.fences else f
        keep = ctx.keep_loops and bool(flat0)  # (the trip counter rides in the carry)
        if keep:
            body_fn = _keeping(body_fn)
            flat0 = flat0 + [jnp.zeros((), jnp.int32)]
        c_fin, ys = lax.scan(body_fn, flat0, [x for _, x in xs_flat], length=length,
                             reverse=eqn.params["reverse"])
        if keep:
            c_fin = c_fin[:-1]
        carry_out = unflat(c_fin, car_avals)
        ys_out = []
        for y, a in zip(ys, ys_avals):  # y: (length, size, batch)
            o = np.empty((length, int(np.prod(a.shape[1:], dtype=int))), object)
            for t in range(length):
                for i in range(o.shape[1]):
                    o[t, i] = y[t, i]
            ys_out.append(o.reshape(a.shape))
        return carry_out + ys_out


def _split_axes(args, in_axes):
    axes = in_axes if isinstance(in_axes, (list, tuple)) else (in_axes,) * len(args)
    if len(axes) != len(args):
        raise ValueError(f"in_axes has {len(axes)} entries for {len(args)} arguments")
    leaves, axes_flat = [], []
    for a, ax in zip(args, axes):
        ls = jax.tree_util.tree_leaves(a)
        if ax is None or isinstance(ax, int):
            axs = [ax] * len(ls)
        else:
            axs = jax.tree_util.tree_leaves(ax, is_leaf=lambda x: x is None)
        if len(axs) != len(ls):
            raise ValueError("in_axes does not match the structure of the arguments")
        leaves += ls
        axes_flat += axs
    bad = [ax for ax in axes_flat if ax not in (0, -1, None)]
    if bad:
        raise ValueError(f"elementwise_vmap supports batch axes 0 (leading), -1 (trailing) or "
                         f"None (shared) only, got {bad[0]}")
    return leaves, axes_flat


def _member_program(fun, args, in_axes):
    """The one-member program of `fun` applied to batched `args`: returns (leaves,
    axes_flat, batch, member avals, closed jaxpr, output avals, output treedef); axes as in
    `elementwise_vmap` (0 leading, -1 trailing, None shared)."""
    leaves, axes_flat = _split_axes(args, in_axes)
    sizes = {jnp.shape(x)[0 if ax == 0 else -1] for x, ax in zip(leaves, axes_flat)
             if ax is not None}
    if len(sizes) != 1:
        raise ValueError(f"batched arguments need one common batch size, got {sorted(sizes)}")
    (batch,) = sizes
    member = []
    for x, ax in zip(leaves, axes_flat):
        shp = tuple(jnp.shape(x))
        shp = shp[1:] if ax == 0 else shp[:-1] if ax == -1 else shp
        member.append(jax.ShapeDtypeStruct(shp, jnp.result_type(x)))
    treedef = jax.tree_util.tree_structure(args)
    closed, out_shape = jax.make_jaxpr(
        lambda *ls: fun(*jax.tree_util.tree_unflatten(treedef, ls)), return_shape=True)(*member)
    out_avals = jax.tree_util.tree_leaves(out_shape)
    out_tree = jax.tree_util.tree_structure(out_shape)
    return leaves, axes_flat, batch, member, closed, out_avals, out_tree


def _keeps_loops(closed, work=None) -> bool:
    """Whether the loops written for this member program go through `xla_cpu.keep_loop`:
    on the CPU backend, for member programs above `xla_cpu.KEEP_LOOPS_EQNS` equations, or
    evaluated fewer than `xla_cpu.KEEP_LOOPS_WORK` times per equation (`work`: evaluations
    per device, when known; `xla_cpu.keeps_loops`)."""
    from .. import xla_cpu
    return jax.default_backend() == "cpu" and xla_cpu.keeps_loops(_size(closed), work)


def elementwise_vmap(fun: Callable, in_axes: int | None | Sequence[Any] = 0, out_axes: int = 0,
                     fences: bool | None = None, keep_loops: bool | None = None,
                     work: int | None = None) -> Callable:
    """Vectorise `fun` over a batch like `jax.vmap(fun, in_axes, out_axes)`, but
    batch-minor and element-wise: see the module docstring for how, and for when it pays
    off (small per-member programs) and what it does not support.

    fun: a function of pytrees of arrays for ONE batch member.
    in_axes: as for `jax.vmap`, an int or None per positional argument (or a pytree of
      them per leaf): 0 (batch leading), -1 (batch trailing: the layout that needs no
      transposes) or None (shared by all members). Batched leaves need a common batch size.
    out_axes: 0 or -1, for every output; every output is batched (broadcast if it does not
      depend on the member).
    fences: materialise values with several consumers through conditionals (`_fence`)
      so XLA does not recompute them in every consumer; None means on the CPU backend only
      (a conditional on a GPU synchronises with the host).
    keep_loops: pass every loop it writes through `jaxmbs.experimental.xla_cpu.keep_loop`, so that XLA:CPU
      (jaxlib >= 0.11) does not compile the loop as one LLVM function; None: for member
      programs above `jaxmbs.experimental.xla_cpu.KEEP_LOOPS_EQNS` equations on the CPU backend of those
      releases, or for programs that run too few times to pay for the hoisted form's longer
      compile (`work`). After a call, `wrapped.keeps_loops` says what was chosen (a caller
      that loops over the wrapped function keeps its own loop the same way).
    work: how many member evaluations per device the compiled program will serve (batch
      per device x calls, e.g. x steps in a loop), when known: with keep_loops=None, a
      program evaluated fewer than `jaxmbs.experimental.xla_cpu.KEEP_LOOPS_WORK` times per equation keeps
      its loops whatever its size (compile time saved exceeds run time lost).
    Returns a function of the batched arguments. Composes with `jit`, `grad`, `jax.vmap`.
    Raises NotImplementedError (when called) for primitives it cannot write out.
    """
    if out_axes not in (0, -1):
        raise ValueError(f"out_axes must be 0 or -1, got {out_axes}")

    def wrapped(*args):
        leaves, axes_flat, batch, member, closed, out_avals, out_tree = _member_program(
            fun, args, in_axes)
        # every input as a list of entries: rows of a (size, batch) array, or shared scalars
        rows = []
        for x, ax, m in zip(leaves, axes_flat, member):
            x = jnp.asarray(x)
            size = int(np.prod(m.shape, dtype=int))
            if ax is None:
                rows.append([jnp.reshape(x, (-1,))[i] for i in range(size)])
            else:
                x2 = jnp.reshape(x, (batch, size)).T if ax == 0 else jnp.reshape(x, (size, batch))
                rows.append([x2[i] for i in range(size)])
        use_fences = (jax.default_backend() == "cpu") if fences is None else fences
        keep = _keeps_loops(closed, work) if keep_loops is None else bool(keep_loops)
        wrapped.keeps_loops = keep
        ctx = _Ctx(batch, use_fences, keep)

        def run(rows):
            ins = []
            for r, m in zip(rows, member):
                o = np.empty(len(r), object)
                for i, e in enumerate(r):
                    o[i] = e
                ins.append(o.reshape(m.shape))
            try:
                outs = _Interp(ctx).run_closed(closed, ins)
            except (KeyError, AttributeError, IndexError) as e:  # a jaxpr layout not known here
                raise NotImplementedError(
                    f"elementwise_vmap cannot interpret this program under jax {jax.__version__} "
                    f"({type(e).__name__}: {e}); use jax.vmap") from e
            return [[ctx.full(e, a.dtype).astype(a.dtype) for e in o.reshape(-1)]
                    for o, a in zip(outs, out_avals)]

        # the fences' predicate reads a batched input: a shared one (parameters closed over
        # by the caller) can be a compile-time constant, and XLA then folds every fence away
        # (measured: 1000x slower steps on the double pendulum, fusion recomputing producers)
        probe = next((r[0] for r, ax, m in zip(rows, axes_flat, member)
                      if ax is not None and r and jnp.issubdtype(m.dtype, jnp.floating)), None)
        outs = _shared_barriers(run, (rows,), probe) if use_fences else run(rows)
        res = []
        for o, a in zip(outs, out_avals):
            arr = jnp.stack(o) if o else jnp.zeros((0, batch), a.dtype)  # (size, batch)
            if out_axes == 0:
                res.append(arr.T.reshape((batch,) + a.shape))
            else:
                res.append(arr.reshape(a.shape + (batch,)))
        return jax.tree_util.tree_unflatten(out_tree, res)

    return wrapped
