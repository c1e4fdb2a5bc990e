"""What the batch-minor CPU path works around in XLA:CPU, in one place.

XLA:CPU's small-while-loop hoisting pass turns a `while` whose cost model says it touches
under 1024 bytes per iteration into one call compiled as a single LLVM function, the whole
loop body written out, instead of one kernel per fusion. The batch-minor step loops
qualify. Small programs run faster that way, but LLVM's time on that one function grows
faster than its size (the spatial slider-crank compiled for minutes). The pass skips any
loop that contains a custom call; `keep_loop` puts one (a 1x1 LAPACK Cholesky whose operand
depends on the loop trip, so that it is not moved out of the loop) into a loop body, for
programs above a size or for calls too short to repay the longer compile
(`jaxmbs.experimental.elementwise.elementwise_vmap(keep_loops=)`).
"""
from __future__ import annotations

KEEP_LOOPS_EQNS = 8000  # member-program size (jaxpr equations, sub-jaxprs counted once) above
# which `elementwise_vmap` keeps its loops (measured: docs/dev/performance.md#keep-loops)
KEEP_LOOPS_WORK = 6000  # member evaluations per device per member-program equation below which
# a call keeps its loops whatever its size (measured: docs/dev/performance.md#keep-loops)


def keeps_loops(eqns: int, work: int | None = None) -> bool:
    """Whether a batch-minor program of `eqns` member equations keeps its loops: above
    KEEP_LOOPS_EQNS equations, or when `work` (member evaluations per device over the calls
    the compile serves, when the caller knows it) is below KEEP_LOOPS_WORK x eqns. Never
    after `keep_loops_above(None)` (KEEP_LOOPS_EQNS >= 2**62)."""
    if KEEP_LOOPS_EQNS >= 2**62:
        return False
    return eqns > KEEP_LOOPS_EQNS or (work is not None and work < KEEP_LOOPS_WORK * eqns)


def keep_loop(x, k):
    """x unchanged, selected on a custom call that depends on the loop counter k (int32):
    inside a loop body, it keeps XLA:CPU from compiling the loop as one function."""
    import jax
    import jax.numpy as jnp
    a = jnp.where(k >= 0, 1.0, 4.0).astype(jnp.float32).reshape(1, 1)
    one = jax.lax.linalg.cholesky(a, symmetrize_input=False)[0, 0]  # 1 for every k >= 0
    return jnp.where(one == 1.0, x, jnp.zeros_like(x))


def keeping(body):
    """A scan body that carries a trip counter and passes its first carry through
    `keep_loop` (XLA:CPU then does not compile the loop as one function)."""

    def f(c, x):
        c_new, ys = body(c[:-1], x)
        i = c[-1]
        return [keep_loop(c_new[0], i)] + list(c_new[1:]) + [i + 1], ys
    return f
