"""Moved to `jaxmbs.experimental.elementwise` (it reads JAX-internal jaxpr layouts and is
version-gated there). This name stays for existing imports: `jaxmbs.elementwise_vmap` and
`jaxmbs.elementwise.elementwise_vmap` are the same function."""
from .experimental.elementwise import (BARRIER_LEVELS, MAX_OPS, SCAN_UNROLL,  # noqa: F401
                                       LayoutError, elementwise_vmap, support)
from .experimental.elementwise._interp import _SINCOS_MAX, _sincos, _sincos_poly  # noqa: F401

__all__ = ["elementwise_vmap", "support", "MAX_OPS", "SCAN_UNROLL", "BARRIER_LEVELS"]
