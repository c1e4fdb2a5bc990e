"""Primitives on known (trace-time) values, evaluated with NumPy.

The interpreter folds every operation whose operands are all known (constants, structural
zeros, index arithmetic) and evaluates data movement on arrays of entry ids. Through
`jax.ensure_compile_time_eval` each distinct (primitive, shapes, parameters) would be
compiled by XLA: 180 small compilations, 2.6 s of a slider-crank's first trace. Here the
common ones are written with NumPy; only IEEE-exact operations are (add, multiply, divide,
square root, abs, comparisons, selections, conversions, integer powers by repeated
squaring as lax lowers them, and data movement: slices, gathers, scatters with the modes
of lax), so the folded values are the ones XLA would compute. (Gathers and scatters of the
interpreter's entry ids were the last 14 of the double pendulum's 18 compilations at trace
time, 0.7 s; sin, cos, float sums and dot products stay with XLA: their rounding is XLA's,
except where the result is exact whatever the rounding: sin and cos of exact zeros, sums
and dot products of +0 entries, the folded constants of parameters that are zero: the
slider-crank's last small compilations at trace time, its first call 0.2 s shorter:
docs/dev/performance.md#numpy-zero-folds.)

Reading a primitive's parameters is jaxpr layout too: `evaluate` returns None (and the
caller binds the primitive through JAX instead) for anything it does not recognise, and
whenever its result does not have the shape and dtype the equation declares.
"""
from __future__ import annotations

import numpy as np

__all__ = ["evaluate"]


def _ipow(x, y):
    """x ** y for an integer y, by repeated squaring (lax.integer_pow's lowering)."""
    neg, y = y < 0, abs(int(y))
    acc = None
    while y > 0:
        if y & 1:
            acc = x if acc is None else acc * x
        y >>= 1
        if y > 0:
            x = x * x
    acc = np.ones_like(x) if acc is None else acc
    return (np.ones_like(acc) / acc) if neg else acc


def _select_n(which, *cases):
    which = np.asarray(which)
    if which.dtype == np.bool_:
        which = which.astype(np.int32)
    return np.choose(which, np.broadcast_arrays(*cases))


def _float_div(a, b):
    if not (np.issubdtype(np.asarray(a).dtype, np.floating)):
        raise TypeError  # (integer division rounds toward zero in lax: let JAX do it)
    return np.true_divide(a, b)


def _convert(x, new_dtype, **_):
    x = np.asarray(x)
    dt = np.dtype(new_dtype)
    if (np.issubdtype(x.dtype, np.floating) and not np.issubdtype(dt, np.floating)
            and not np.all(np.isfinite(x))):
        raise TypeError  # (non-finite to integer: implementation-defined, let JAX do it)
    if dt == np.bool_:
        return x != 0
    return x.astype(dt)


def _zeros_only(x, positive=False):
    """x as a floating NumPy array if every entry is an exact zero (with positive=True: +0
    only); else TypeError (JAX evaluates it)."""
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating) or np.any(x != 0) or (positive and np.any(np.signbit(x))):
        raise TypeError
    return x


def _reduce_sum_of_zeros(x, axes, **_):
    """A sum of +0 entries: +0 in any order (a -0 entry is left to JAX: the sign of a sum
    of zeros depends on its initial value)."""
    x = _zeros_only(x, positive=True)
    return np.zeros(tuple(n for d, n in enumerate(x.shape) if d not in tuple(axes)), x.dtype)


def _dot_general_of_zeros(a, b, dimension_numbers, precision=None, preferred_element_type=None, **_):
    """lax.dot_general of operands whose entries are all +0: every product +0, so +0."""
    a, b = _zeros_only(a, positive=True), _zeros_only(b, positive=True)
    (lc, rc), (lb, rb) = dimension_numbers
    shape = ([a.shape[d] for d in lb] + [a.shape[d] for d in range(a.ndim) if d not in (*lc, *lb)]
             + [b.shape[d] for d in range(b.ndim) if d not in (*rc, *rb)])
    dtype = np.result_type(a, b) if preferred_element_type is None else np.dtype(preferred_element_type)
    return np.zeros(tuple(shape), dtype)


_EW = {
    # sin(+-0) = +-0 and cos(+-0) = 1 exactly (the folded constants of zero parameters);
    # other arguments are XLA's (its rounding)
    "sin": lambda x: _zeros_only(x).copy(), "cos": lambda x: np.ones_like(_zeros_only(x)),
    "add": np.add, "add_any": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": _float_div, "neg": np.negative, "max": np.maximum, "min": np.minimum,
    "sqrt": np.sqrt, "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal, "and": np.bitwise_and, "or": np.bitwise_or,
    "xor": np.bitwise_xor, "not": lambda x: ~x if np.asarray(x).dtype != np.bool_ else ~x,
    "floor": np.floor, "ceil": np.ceil, "is_finite": np.isfinite, "abs": np.abs,
    "stop_gradient": lambda x: x, "copy": lambda x: x, "copy_p": lambda x: x,
    "select_n": _select_n,
    "clamp": lambda lo, x, hi: np.minimum(np.maximum(x, lo), hi),
}


def _reshape(x, new_sizes, dimensions=None, **_):
    if dimensions is not None:
        raise TypeError
    return np.reshape(x, tuple(new_sizes))


def _broadcast_in_dim(x, shape, broadcast_dimensions, **_):
    x = np.asarray(x)
    expanded = [1] * len(shape)
    for src, dst in enumerate(broadcast_dimensions):
        expanded[dst] = x.shape[src]
    return np.broadcast_to(x.reshape(expanded), tuple(shape))


def _slice(x, start_indices, limit_indices, strides=None, **_):
    strides = strides or (1,) * len(start_indices)
    return np.asarray(x)[tuple(slice(s, e, st) for s, e, st in
                               zip(start_indices, limit_indices, strides))]


def _dynamic_slice(x, *starts, slice_sizes, **_):
    x = np.asarray(x)
    idx = []
    for d, (s, size) in enumerate(zip(starts, slice_sizes)):
        s = int(np.clip(int(np.asarray(s)), 0, x.shape[d] - size))
        idx.append(slice(s, s + size))
    return x[tuple(idx)]


def _dynamic_update_slice(x, u, *starts, **_):
    x = np.array(x, copy=True)
    u = np.asarray(u)
    idx = []
    for d, s in enumerate(starts):
        s = int(np.clip(int(np.asarray(s)), 0, x.shape[d] - u.shape[d]))
        idx.append(slice(s, s + u.shape[d]))
    x[tuple(idx)] = u
    return x


def _iota(dtype, shape, dimension, **_):
    shape = tuple(shape)
    r = np.arange(shape[dimension], dtype=np.dtype(dtype))
    expanded = [1] * len(shape)
    expanded[dimension] = shape[dimension]
    return np.broadcast_to(r.reshape(expanded), shape)


def _mode(mode):
    """A GatherScatterMode's name: CLIP, FILL_OR_DROP, PROMISE_IN_BOUNDS (ONE_HOT and
    anything else: TypeError, JAX evaluates it)."""
    name = getattr(mode, "name", str(mode)).split(".")[-1]
    if name not in ("CLIP", "FILL_OR_DROP", "PROMISE_IN_BOUNDS"):
        raise TypeError
    return name


def _no_batching(dn, *fields):
    if any(tuple(getattr(dn, f, ())) for f in fields):
        raise TypeError  # (batching dimensions: let JAX do it)


def _starts(indices, n_map):
    """Integer start indices (batch..., n_map) with the index vector in the last axis (as
    lax.gather / lax.scatter take them)."""
    idx = np.asarray(indices)
    if not np.issubdtype(idx.dtype, np.integer) or idx.ndim < 1 or idx.shape[-1] != n_map:
        raise TypeError
    return idx.astype(np.int64)


def _gather(operand, indices, *, dimension_numbers, slice_sizes, mode, fill_value=None, **_):
    """lax.gather: for each start index vector, the slice of `slice_sizes` at it (clamped
    into bounds, or filled where out of bounds with mode FILL_OR_DROP), collapsed
    dimensions dropped, the slice's dimensions placed at `offset_dims` of the result."""
    dn = dimension_numbers
    _no_batching(dn, "operand_batching_dims", "start_indices_batching_dims")
    op = np.asarray(operand)
    sim, collapsed, offset = tuple(dn.start_index_map), tuple(dn.collapsed_slice_dims), tuple(dn.offset_dims)
    sizes = tuple(int(x) for x in slice_sizes)
    idx = _starts(indices, len(sim))
    upper = np.array([op.shape[d] - sizes[d] for d in sim], np.int64)
    if len(sizes) != op.ndim or np.any(upper < 0):
        raise TypeError
    kept = [d for d in range(op.ndim) if d not in collapsed]
    fill = mode_name = _mode(mode)
    if mode_name == "FILL_OR_DROP":
        fill = fill_value
        if fill is None:
            fill = (np.nan if np.issubdtype(op.dtype, np.inexact) else True if op.dtype == np.bool_ else
                    np.iinfo(op.dtype).min if np.issubdtype(op.dtype, np.signedinteger) else np.iinfo(op.dtype).max)
    batch = idx.shape[:-1]
    res = np.empty(batch + tuple(sizes[d] for d in kept), op.dtype)
    for b in np.ndindex(batch):
        st = idx[b]
        if mode_name == "FILL_OR_DROP" and np.any((st < 0) | (st > upper)):
            res[b] = fill
            continue
        start = [0] * op.ndim
        for k, d in enumerate(sim):
            start[d] = int(min(max(st[k], 0), upper[k]))
        res[b] = op[tuple(slice(a, a + n) for a, n in zip(start, sizes))].reshape(res.shape[len(batch):])
    nb, rank = len(batch), res.ndim
    if len(offset) != len(kept):
        raise TypeError
    batch_pos = [j for j in range(rank) if j not in offset]
    perm = [nb + offset.index(j) if j in offset else batch_pos.index(j) for j in range(rank)]
    return np.transpose(res, perm)


def _scatter(operand, indices, updates, *, dimension_numbers, mode, add=False, **_):
    """lax.scatter (replace) and lax.scatter_add: each update window written (added) at
    its start index; out-of-bounds windows dropped (FILL_OR_DROP, PROMISE_IN_BOUNDS: what
    XLA does) or their starts clamped (CLIP). Windows that overlap are left to JAX
    (replace: XLA's order is unspecified; float add: the order of the sums)."""
    dn = dimension_numbers
    _no_batching(dn, "operand_batching_dims", "scatter_indices_batching_dims")
    op = np.array(operand, copy=True)
    up = np.asarray(updates)
    uwd, iwd, sdod = (tuple(dn.update_window_dims), tuple(dn.inserted_window_dims),
                      tuple(dn.scatter_dims_to_operand_dims))
    idx = _starts(indices, len(sdod))
    win_dims = [d for d in range(op.ndim) if d not in iwd]
    if len(win_dims) != len(uwd):
        raise TypeError
    wshape = [1] * op.ndim
    for k, d in enumerate(win_dims):
        wshape[d] = up.shape[uwd[k]]
    scatter_dims = [d for d in range(up.ndim) if d not in uwd]
    upt = np.transpose(up, scatter_dims + list(uwd))
    batch = idx.shape[:-1]
    if upt.shape[:len(batch)] != batch:
        raise TypeError
    upper = np.array([op.shape[d] - wshape[d] for d in sdod], np.int64)
    if np.any(upper < 0):
        raise TypeError
    clip = _mode(mode) == "CLIP"
    written = np.zeros(op.shape, bool)
    exact_add = add and not np.issubdtype(op.dtype, np.inexact)
    for b in np.ndindex(batch):
        st = idx[b]
        if clip:
            st = np.clip(st, 0, upper)
        elif np.any((st < 0) | (st > upper)):
            continue
        start = [0] * op.ndim
        for k, d in enumerate(sdod):
            start[d] = int(st[k])
        sl = tuple(slice(a, a + n) for a, n in zip(start, wshape))
        if written[sl].any() and not exact_add:
            raise TypeError
        written[sl] = True
        w = upt[b].reshape(wshape)
        op[sl] = op[sl] + w if add else w
    return op


def _scatter_replace(operand, indices, updates, *, update_jaxpr=None, **kw):
    if update_jaxpr is not None:
        raise TypeError  # (a combiner: not the replacing scatter)
    return _scatter(operand, indices, updates, **kw)


_OTHER = {
    "reduce_sum": _reduce_sum_of_zeros,
    "dot_general": _dot_general_of_zeros,
    "gather": _gather,
    "scatter": _scatter_replace,
    "scatter-add": lambda o, i, u, **kw: _scatter(o, i, u, add=True, **{k: v for k, v in kw.items() if k not in (
        "update_jaxpr", "update_consts")}),
    "scatter_add": lambda o, i, u, **kw: _scatter(o, i, u, add=True, **{k: v for k, v in kw.items() if k not in (
        "update_jaxpr", "update_consts")}),
    "convert_element_type": _convert,
    "integer_pow": lambda x, y: _ipow(np.asarray(x), y),
    "square": lambda x: np.asarray(x) * np.asarray(x),
    "reshape": _reshape,
    "broadcast_in_dim": _broadcast_in_dim,
    "squeeze": lambda x, dimensions: np.squeeze(np.asarray(x), axis=tuple(dimensions)),
    "expand_dims": lambda x, dimensions: np.expand_dims(np.asarray(x), tuple(dimensions)),
    "transpose": lambda x, permutation: np.transpose(np.asarray(x), tuple(permutation)),
    "rev": lambda x, dimensions: np.flip(np.asarray(x), tuple(dimensions)),
    "slice": _slice,
    "concatenate": lambda *xs, dimension: np.concatenate([np.asarray(x) for x in xs], dimension),
    "stack": lambda *xs, axis: np.stack([np.asarray(x) for x in xs], axis),
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "iota": _iota,
}
_OPTIONAL = {"sharding", "out_sharding", "weak_type", "indices_are_sorted", "unique_indices",
             "update_consts"}  # (no effect on values)


def evaluate(name: str, args, params: dict, out_avals):
    """[result arrays] of primitive `name` on NumPy arrays `args`, or None where this module
    does not evaluate it (the caller then binds the primitive through JAX)."""
    try:
        if name in _EW:
            if any(v is not None for k, v in params.items() if k not in _OPTIONAL):
                return None  # (accuracy=, out_dtype=, ...: let JAX do it)
            r = [_EW[name](*[np.asarray(a) for a in args])]
        elif name in _OTHER:
            kw = {k: v for k, v in params.items() if k not in _OPTIONAL}
            r = [_OTHER[name](*args, **kw)]
        else:
            return None
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    out = []
    for x, a in zip(r, out_avals):
        x = np.asarray(x)
        if x.shape != tuple(a.shape):
            return None
        if x.dtype != np.dtype(a.dtype):
            if np.can_cast(x.dtype, a.dtype, "same_kind") and not (
                    np.issubdtype(x.dtype, np.floating) and np.dtype(a.dtype).itemsize < x.dtype.itemsize):
                x = x.astype(a.dtype)
            else:
                return None
        out.append(x)
    return out if len(out) == len(out_avals) else None
