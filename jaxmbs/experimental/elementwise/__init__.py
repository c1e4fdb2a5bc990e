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
from ._gate import scalar_max_coords
from ._interp import BARRIER_LEVELS, MAX_OPS, SCAN_UNROLL, elementwise_vmap
from ._jaxpr import LayoutError, support
from ._minor import minor_vmap

__all__ = ["elementwise_vmap", "minor_vmap", "support", "scalar_max_coords", "LayoutError", "MAX_OPS", "SCAN_UNROLL",
           "BARRIER_LEVELS"]
