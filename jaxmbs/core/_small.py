"""Products of small matrices written as element-wise arithmetic.

Under `jax.vmap` over a large batch, XLA:CPU runs a `dot_general` of tiny operands
(a (4, 6) @ (6, 4) per mechanism) as a batched matrix product whose inner loops are a few
elements long, and a `reduce` over a minor axis of length 2 or 3 likewise: both were
measured to take most of the step time (docs/dev/performance.md#kernel-profile). Written as a sum of
broadcast products over the contracted axis, the same arithmetic becomes element-wise
over the batch, fuses with its neighbours and vectorises across mechanisms. Contracted
axes longer than `UNROLL_MAX`, or products larger than `OUT_MAX` entries, keep
`jnp.matmul`: there XLA fuses a written-out product into the product that consumes it and
recomputes it once per slice (measured: five-bar, n = 12, m = 10, 2x slower), and the
BLAS kernel pays off. The limits were set from env-step measurements (cart-pole n = 6:
4x faster; five-bar and slider-crank unchanged).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

UNROLL_MAX = 8  # longest contracted axis written out
OUT_MAX = 24  # largest product (entries per mechanism) written out
MINV_MAX = 6  # MassMatrix.solve forms a dense M^-1 up to this many coordinates


def matmul(a, b, unroll_max: int = UNROLL_MAX):
    """a @ b for a (m, k) or (k,) and b (k, n) or (k,) (b (k, ...) when a is (k,): then
    tensordot(a, b, 1)). The k-sum is written out when k <= unroll_max and the product has
    at most OUT_MAX entries; otherwise jnp.matmul. Same result up to summation order."""
    k = a.shape[-1]
    if b.shape[0] != k:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not align")
    out_size = (a.shape[0] if a.ndim == 2 else 1) * (int(np.prod(b.shape[1:])) if b.ndim > 1 else 1)
    if (k > unroll_max or k == 0 or out_size > OUT_MAX or a.ndim > 2
            or (b.ndim > 2 and a.ndim != 1)):
        return jnp.matmul(a, b) if b.ndim <= 2 else jnp.tensordot(a, b, axes=1)
    if a.ndim == 1:  # b may have any number of trailing axes
        terms = [a[j] * b[j] for j in range(k)]
    elif b.ndim == 1:
        terms = [a[:, j] * b[j] for j in range(k)]
    else:
        terms = [a[:, j, None] * b[None, j, :] for j in range(k)]
    out = terms[0]
    for x in terms[1:]:
        out = out + x
    return out

