"""Batch-minor, element-wise vectorisation of small per-member programs (the fast CPU
batch path of `jaxmbs.simulate_batch`).

Experimental and version-gated: it interprets jaxprs, whose layout is JAX-internal. Every
read of that layout is in `_jaxpr.py`; `support()` says, once per process, whether the
installed jax can be read ('' if so, else why not). `jaxmbs.simulate_batch` consults it:
under `vectorize="auto"` an unsupported jax means the `jax.vmap` path with a warning
(throughput drops several-fold on CPU), and `jaxmbs.batch_vectorization` answers "vmap".
The test suite runs this path on the oldest and the newest jax it supports (`.ci/run`), and
its tests fail, not skip, where the path is broken.
"""
from ._barriers import BARRIER_LEVELS
from ._interp import MAX_OPS, SCAN_UNROLL, elementwise_vmap
from ._jaxpr import LayoutError, support
from ._minor import minor_vmap


def keep_loops_above(eqns: int | None) -> int | None:
    """Set the member-program size (jaxpr equations) above which `elementwise_vmap` keeps its
    loops as loops where XLA:CPU would compile each small loop as one LLVM function
    (`jaxmbs.experimental.xla_cpu`); None: never. Returns the previous setting.

    Kept loops compile several times faster and run a little slower (spatial slider-crank,
    Projection: 28 s against 212 s to compile, 0.87-0.93x the steps/s;
    docs/dev/performance.md#keep-loops). The default, 8000, keeps the loops of the spatial slider-crank
    in every call. Smaller programs also keep them in calls too short to pay for the hoisted
    form's compile (`xla_cpu.KEEP_LOOPS_WORK`); None switches both rules off. It
    applies to programs traced after the call: a
    `simulate_batch` already compiled for the same shapes and options is reused as it is
    (`jax.clear_caches()` drops it)."""
    from .. import xla_cpu
    old = xla_cpu.KEEP_LOOPS_EQNS
    xla_cpu.KEEP_LOOPS_EQNS = 2**62 if eqns is None else int(eqns)
    return None if old >= 2**62 else old


__all__ = ["elementwise_vmap", "minor_vmap", "support", "LayoutError", "MAX_OPS", "SCAN_UNROLL",
           "BARRIER_LEVELS", "keep_loops_above"]
