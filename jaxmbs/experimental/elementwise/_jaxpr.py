"""The one place where the element-wise path reads JAX's internal jaxpr layouts.

Everything in `_interp.py` that depends on how a JAX release lays out a jaxpr goes through
the functions here: how literals, closed jaxprs and the sub-programs of call-like
primitives are found, how `scan` splits its operands into constants, carry and scanned
inputs, how `cond` and `custom_linear_solve` pack theirs. A release that changes one of
these breaks the path here, with a `LayoutError` that names the primitive and the jax
version (never a wrong result: every layout read is checked against the avals), and
`support()` reports it before any user program is traced.

What was read where (from JAX's own sources):
  * scan, jax <= 0.10: params num_consts, num_carry; jax >= 0.11: `ft_in`, a FlatTree
    (or a tuple of pytrees) of (consts, carry, xs) whose parts' lengths are the counts.
  * cond: operand 0 is the branch index, params["branches"] the closed branch jaxprs;
    a conditional marked by `jaxmbs.core._rare.rare_cond` carries its name scope in
    eqn.source_info.name_stack.
  * custom_linear_solve: params const_lengths (matvec, vecmat, solve, transpose_solve)
    and jaxprs (same fields); operands are those constants in that order, then b.
  * call-like primitives (jit/pjit, closed_call, custom_jvp_call, custom_vjp_call,
    checkpoint/remat, name): the callee under one of the parameter names in `_CALLEES`.
"""
from __future__ import annotations

import functools

import jax
from jax.extend import core as _core

__all__ = ["LayoutError", "Literal", "ClosedJaxpr", "is_literal", "literal_value", "closed", "live_eqns",
           "callee", "scan_layout", "cond_parts", "in_scope", "linear_solve_parts", "support", "JAX_VERSION"]

JAX_VERSION = jax.__version__
Literal = _core.Literal
ClosedJaxpr = _core.ClosedJaxpr
Jaxpr = _core.Jaxpr


class LayoutError(NotImplementedError):
    """A jaxpr laid out in a way this module does not know (a newer or older jax)."""

    def __init__(self, what: str):
        super().__init__(f"the element-wise path cannot read {what} under jax {JAX_VERSION} "
                         "(jaxmbs/experimental/elementwise/_jaxpr.py)")


def is_literal(v) -> bool:
    return isinstance(v, Literal)


def literal_value(v):
    return v.val


def live_eqns(jaxpr) -> list:
    """The equations whose results reach an output (or that have effects), in order."""
    live = {v for v in jaxpr.outvars if not is_literal(v)}
    keep = []
    for eqn in reversed(jaxpr.eqns):
        if getattr(eqn, "effects", None) or any(v in live for v in eqn.outvars):
            keep.append(eqn)
            live.update(v for v in eqn.invars if not is_literal(v))
    return keep[::-1]


def closed(sub):
    """(jaxpr, consts) of a Jaxpr or a ClosedJaxpr."""
    if isinstance(sub, ClosedJaxpr):
        return sub.jaxpr, list(sub.consts)
    if isinstance(sub, Jaxpr):
        return sub, []
    raise LayoutError(f"a sub-program of type {type(sub).__name__}")


def as_closed(sub) -> ClosedJaxpr:
    jaxpr, consts = closed(sub)
    return sub if isinstance(sub, ClosedJaxpr) else ClosedJaxpr(jaxpr, consts)


# call-like primitives: evaluating them is evaluating their callee on the same operands
_CALLEES = {"jit": ("jaxpr",), "pjit": ("jaxpr",), "closed_call": ("call_jaxpr",),
            "core_call": ("call_jaxpr",), "custom_jvp_call": ("call_jaxpr", "fun_jaxpr"),
            "custom_vjp_call": ("call_jaxpr", "fun_jaxpr"),
            "custom_vjp_call_jaxpr": ("fun_jaxpr", "call_jaxpr"),
            "remat": ("jaxpr",), "remat2": ("jaxpr",), "checkpoint": ("jaxpr",),
            "name": ("jaxpr",)}
CALL_PRIMITIVES = frozenset(_CALLEES)


def _avals_match(avals, vars_) -> bool:
    return len(avals) == len(vars_) and all(
        tuple(a.shape) == tuple(v.aval.shape) and a.dtype == v.aval.dtype
        for a, v in zip(avals, vars_))


def callee(eqn):
    """The ClosedJaxpr a call-like equation evaluates (checked against its operands)."""
    name = eqn.primitive.name
    for key in _CALLEES[name]:
        if key in eqn.params:
            sub = as_closed(eqn.params[key])
            if (_avals_match(sub.in_avals, eqn.invars) and _avals_match(sub.out_avals, eqn.outvars)):
                return sub
            raise LayoutError(f"'{name}' (its {key} does not match its operands)")
    raise LayoutError(f"'{name}' (none of the parameters {_CALLEES[name]})")


def _count(part) -> int:
    if hasattr(part, "unpack") or hasattr(part, "vals"):  # a jax FlatTree: its leaves
        return len(part)
    return len(jax.tree_util.tree_leaves(part, is_leaf=lambda x: x is None))


def scan_layout(eqn):
    """(number of constants, number of carried values, body ClosedJaxpr) of a scan,
    checked: body inputs are (consts, carry, x slices), body outputs (carry, y slices)."""
    p = eqn.params
    if "num_consts" in p and "num_carry" in p:  # jax <= 0.10
        nc, ncar = int(p["num_consts"]), int(p["num_carry"])
    elif "ft_in" in p:  # jax >= 0.11
        try:
            parts = p["ft_in"].unpack() if hasattr(p["ft_in"], "unpack") else tuple(p["ft_in"])
            nc, ncar = _count(parts[0]), _count(parts[1])
        except Exception as e:  # noqa: BLE001 (reported as a layout error)
            raise LayoutError(f"'scan' (ft_in: {type(e).__name__}: {e})") from e
    else:
        raise LayoutError(f"'scan' (parameters {sorted(p)})")
    body = as_closed(p["jaxpr"])
    length = int(p["length"])
    ins, outs = eqn.invars, eqn.outvars
    bin_, bout = body.in_avals, body.out_avals
    ok = (len(bin_) == len(ins) and len(bout) == len(outs) and 0 <= nc and 0 <= ncar
          and nc + ncar <= len(ins) and ncar <= len(outs))
    if ok:
        for i, (a, v) in enumerate(zip(bin_, ins)):
            want = tuple(a.shape) if i < nc + ncar else (length,) + tuple(a.shape)
            ok &= tuple(v.aval.shape) == want and a.dtype == v.aval.dtype
        for i, (a, v) in enumerate(zip(bout, outs)):
            want = tuple(a.shape) if i < ncar else (length,) + tuple(a.shape)
            ok &= tuple(v.aval.shape) == want and a.dtype == v.aval.dtype
        for a, b in zip(bout[:ncar], bin_[nc:nc + ncar]):
            ok &= tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
    if not ok:
        raise LayoutError(f"'scan' (read {nc} constants and {ncar} carried values, which do "
                          "not match its body)")
    return nc, ncar, body


def cond_parts(eqn, ins):
    """(index entry array, branches as ClosedJaxprs, operands) of a cond."""
    branches = eqn.params.get("branches")
    if branches is None:
        raise LayoutError(f"'cond' (parameters {sorted(eqn.params)})")
    branches = [as_closed(b) for b in branches]
    index, *ops = ins
    for b in branches:
        if not (_avals_match(b.in_avals, eqn.invars[1:]) and _avals_match(b.out_avals, eqn.outvars)):
            raise LayoutError("'cond' (a branch does not match its operands)")
    return index, branches, ops


def in_scope(eqn, scope: str) -> bool:
    """True if the equation was traced inside `jax.named_scope(scope)` (read from its
    source info's name stack; False where a release does not record one)."""
    try:
        return scope in str(eqn.source_info.name_stack)
    except AttributeError:  # pragma: no cover
        return False


def linear_solve_parts(eqn, ins):
    """(solve ClosedJaxpr, its operands: solve constants + right-hand side) of a
    custom_linear_solve."""
    p = eqn.params
    try:
        cl, jaxprs = p["const_lengths"], p["jaxprs"]
        off = cl.matvec + cl.vecmat
        consts = list(ins[off:off + cl.solve])
        b = list(ins[cl.matvec + cl.vecmat + cl.solve + cl.transpose_solve:])
        solve = as_closed(jaxprs.solve)
    except (KeyError, AttributeError, TypeError) as e:
        raise LayoutError(f"'custom_linear_solve' ({type(e).__name__}: {e})") from e
    if len(solve.in_avals) != len(consts) + len(b) or not _avals_match(solve.out_avals, eqn.outvars):
        raise LayoutError("'custom_linear_solve' (its solve does not match its operands)")
    return solve, consts + b


# ------------------------------------------------------------------ the version gate
def _probe(p, x):
    """A member program with every layout the path reads: scans short and long (with
    constants, carry and scanned inputs), a cond on member data, jit, custom_jvp,
    custom_vjp, custom_linear_solve, Cholesky and triangular solves, gather / scatter-add."""
    import jax.numpy as jnp
    from jax import lax

    @jax.custom_vjp
    def cube(y):
        return y ** 3
    cube.defvjp(lambda y: (y ** 3, y), lambda y, g: (3 * y ** 2 * g,))
    A = jnp.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], [0.0, 0.5, 2.0]]) * p[0]
    y = jax.jit(lambda a, b: a @ b)(A, x) + jax.nn.softplus(x) + cube(x)
    z = jnp.zeros(4).at[jnp.array([0, 2, 2])].add(y)
    w = lax.cond(y[0] > 0.0, lambda v: v * 2.0, lambda v: -v, z)
    # (scans with unequal numbers of constants, carried values and scanned inputs, so a
    # misread split cannot pass unnoticed)
    dt = x.dtype
    s, ys = lax.scan(lambda c, k: ((c[0] * 0.5 + p[1] * k[0], c[1] + k[1]), c[0][0]),
                     (y, p[0]), (jnp.arange(3, dtype=dt), jnp.ones(3, dt)))
    s2, _ = lax.scan(lambda c, k: (c * 0.5 + k * p[1] + A[0, 0], None), s[0] + s[1],
                     jnp.arange(12, dtype=dt))
    L = jnp.linalg.cholesky(A)
    sol = jax.scipy.linalg.cho_solve((L, True), s2)
    d = jnp.diagonal(A)
    lin = lax.custom_linear_solve(lambda v: d * v, sol, lambda mv, b: b / d, symmetric=True)
    return w, ys, lin, x[jnp.array([2, 0])]


@functools.cache
def support() -> str:
    """'' when the element-wise path can read this jax's jaxprs, else why not (one
    sentence). Decided once per process by interpreting `_probe` with both interpreters
    (tracing only: nothing is compiled)."""
    import jax.numpy as jnp

    from ._interp import elementwise_vmap
    from ._minor import minor_vmap
    try:
        for vectorise in (elementwise_vmap, minor_vmap):
            jax.eval_shape(vectorise(_probe), jax.ShapeDtypeStruct((3, 2), jnp.float32),
                           jax.ShapeDtypeStruct((3, 3), jnp.float32))
    except Exception as e:  # noqa: BLE001 (any failure: this jax is not supported)
        msg = str(e).split("\n")[0]
        return (f"the element-wise path does not support jax {JAX_VERSION} "
                f"({type(e).__name__}: {msg})")
    return ""

