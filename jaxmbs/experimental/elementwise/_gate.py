"""Which jax releases get which element-wise programs (the one place for such gates)."""
from __future__ import annotations

SCALAR_MAX_COORDS = 24  # the scalar (written-out) form up to this many coordinates ...
SCALAR_MAX_COORDS_OLD = 12  # ... and up to this many on jaxlib < 0.12


def jaxlib_version() -> tuple:
    import jaxlib
    out = []
    for p in jaxlib.__version__.split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


def scalar_max_coords() -> int:
    """Largest mechanism (coordinates, with a dense saddle solve) whose step the scalar
    element-wise form writes out on this jaxlib.

    24 from jaxlib 0.12; 12 before. jaxlib 0.10.2's XLA:CPU deadlocked (every thread asleep
    on a futex after compiling) on the written-out step of an 18-coordinate mechanism: the
    flexible slider-crank with a 2-element ANCF rod, RK4 + Projection, batch 1024, 2100
    steps saved every 50 (`python benchmarks/flexible.py --integrator rk4`): 4 of 5 runs
    hung, with or without XNNPACK (`--xla_cpu_use_xnnpack=false`), while shorter runs,
    fewer saves, batch 64 and NoStabilization each ran once; jaxlib 0.12.0.1 ran it 3 of 3
    times (88-107 s). The releases in between were not tried, so they keep 12, the bound
    the scalar form had before (where no hang was ever seen)."""
    return SCALAR_MAX_COORDS if jaxlib_version() >= (0, 12) else SCALAR_MAX_COORDS_OLD
