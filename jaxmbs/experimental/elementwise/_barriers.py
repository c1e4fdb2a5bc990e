"""Fences: computed values with several consumers materialised once (XLA does not fuse
across a conditional), where recomputing them in every consumer's fusion would cost more."""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from . import _jaxpr as J

BARRIER_LEVELS = 1  # dataflow depths per fence (see _shared_barriers)
FENCE_MIN_COST = 8  # fence a shared value when (consumers - 1) * its cone >= this (_shared_barriers)
_NO_BARRIER = {"broadcast_in_dim", "reshape", "squeeze", "slice", "convert_element_type",
               "optimization_barrier", "iota", "stop_gradient"}


# operations that cost far more than one multiply (a cone's weight in _shared_barriers):
# an unfenced float32 sine with 3 consumers was computed 3 times (float64's sin / cos are
# a ~40-operation polynomial, whose cone already weighs that much)
_OP_COST = {"sin": 16, "cos": 16, "tan": 24, "asin": 24, "acos": 24, "atan": 24, "atan2": 24,
            "exp": 16, "exp2": 16, "log": 16, "log1p": 16, "expm1": 16, "tanh": 16, "logistic": 16,
            "sinh": 16, "cosh": 16, "pow": 32, "erf": 16, "erfc": 16, "cbrt": 16}


def _fence(pred, vals):
    """vals unchanged, through a `lax.cond` whose branches both return them (one through an
    optimisation barrier, one times 1): XLA does not fuse across a conditional, so each
    value is computed once and read from memory by its consumers. pred is a runtime value
    (x == x of an input entry) that XLA cannot fold; either branch gives the same result."""
    def same(xs):
        return [x | False if x.dtype == jnp.bool_ else x * jnp.ones((), x.dtype) for x in xs]
    return lax.cond(pred, lambda xs: list(lax.optimization_barrier(list(xs))), same, vals)


def _shared_barriers(fn, args, probe=None):
    """fn(*args) (a function of flat lists of batch vectors) with the computed values that
    have several consumers materialised once, through `_fence`, where recomputing them would
    cost: a value is fenced when (consumers - 1) x (operations of its unfenced cone) is at
    least FENCE_MIN_COST. The values of one dataflow depth (BARRIER_LEVELS) share a fence.

    Why: XLA:CPU's fusion duplicates a 'cheap' producer into every consumer fusion. On the
    element-wise program of a double-pendulum RK4 step that meant 7x the multiplies and 6x
    the sines (4720 multiplies in the optimised HLO against 653 traced). `optimization_barrier`
    alone does not stop it (XLA:CPU expands barriers before fusion); a conditional does.
    Measured (double pendulum, batch 4096, float64, RK4 + Projection, 2-core CPU): 0.65e6
    mechanism-steps/s without fences, 2.2-2.4e6 with them. But every fence ends kernels, and
    XLA:CPU's compile time is mostly LLVM's, per kernel (about 10 ms each): fencing every
    shared value (FENCE_MIN_COST 1) compiled the slider-crank step in 14.9 s of CPU time,
    FENCE_MIN_COST 8 in 7.8 s, at the same throughput (0.65 vs 0.61 us per member-step).

    The fences' predicate reads the first entry of `probe` (else of the first floating
    argument): it must be a runtime value, a batched input, or XLA folds every fence away.
    """
    closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*args)
    jaxpr = closed.jaxpr
    eqns = J.live_eqns(jaxpr)
    uses: dict = {}
    for eqn in eqns:
        for v in eqn.invars:
            if not J.is_literal(v):
                uses[v] = uses.get(v, 0) + 1
    for v in jaxpr.outvars:
        if not J.is_literal(v):
            uses[v] = uses.get(v, 0) + 1
    flat_args = jax.tree_util.tree_leaves(args)
    env = dict(zip(jaxpr.constvars, closed.consts))
    env.update(zip(jaxpr.invars, flat_args))
    read = lambda v: J.literal_value(v) if J.is_literal(v) else env[v]
    probes = [x for x in ([] if probe is None else [probe]) + flat_args
              if jnp.size(x) and jnp.issubdtype(jnp.result_type(x), jnp.floating)]
    if not probes:
        return fn(*args)
    p0 = jnp.reshape(probes[0], (-1,))[0]
    pred = p0 == p0
    # depth of every equation in the dataflow graph; equations are emitted band by band
    # (BARRIER_LEVELS depths per band, a valid topological order) and the values of a band
    # that have several consumers are fenced together at the end of the band
    level: dict = {}
    bands = []
    for i, eqn in enumerate(eqns):
        d = 1 + max([level.get(v, 0) for v in eqn.invars if not J.is_literal(v)],
                    default=0)
        for v in eqn.outvars:
            level[v] = d
        bands.append(((d - 1) // BARRIER_LEVELS, i))
    pending: list = []

    def flush():
        for v, o in zip(pending, _fence(pred, [env[v] for v in pending])):
            env[v] = o
        pending.clear()

    current = None
    cone: dict = {}  # value -> operations XLA would recompute per extra consumer (unfenced cone)
    for band, i in sorted(bands):
        if band != current:
            if pending:
                flush()
            current = band
        eqn = eqns[i]
        outs = eqn.primitive.bind(*[read(v) for v in eqn.invars], **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        for v, o in zip(eqn.outvars, outs):
            env[v] = o
        name = eqn.primitive.name
        c = min((0 if name in _NO_BARRIER else _OP_COST.get(name, 1))
                + sum(cone.get(v, 0) for v in eqn.invars if not J.is_literal(v)), 1 << 30)
        for v in eqn.outvars:
            cone[v] = c
        n_use = uses.get(eqn.outvars[0], 0)
        if (name not in _NO_BARRIER and not eqn.primitive.multiple_results and n_use > 1
                and (n_use - 1) * c >= FENCE_MIN_COST):
            pending.append(eqn.outvars[0])
            cone[eqn.outvars[0]] = 0
    if pending:
        flush()
    return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(out_shape),
                                        [read(v) for v in jaxpr.outvars])
