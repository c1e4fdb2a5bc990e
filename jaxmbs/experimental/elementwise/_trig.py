"""Float64 sine and cosine of batch vectors, vectorised: FDLIBM's argument reduction and
minimax polynomials, within 1 ulp of the correctly rounded value up to _SINCOS_MAX rad."""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

# sin and cos of float64 batch vectors. XLA:CPU evaluates them element by element through
# a scalar library routine: 9 ns per element on the development box, 24 % of a
# double-pendulum step's kernel time on this path. Below, vectorised, sin and cos of the
# same angle together: FDLIBM's argument reduction by multiples of pi/2 (pi/2 in three
# 33-bit pieces plus tails, so k * piece is exact for |k| < 2**20; all three refinement
# rounds always, giving the reduced angle as a double-double) and its minimax polynomials
# __kernel_sin / __kernel_cos on [-pi/4, pi/4]. Measured against NumPy: within 1 ulp of
# the correctly rounded value for |x| <= _SINCOS_MAX, also next to multiples of pi/2
# (tests/test_elementwise.py); larger finite angles take lax.sin / lax.cos, element by
# element (one NaN member must not switch the whole batch to lax.sin).
_SINCOS_MAX = 1e6
_INV_PIO2 = 6.36619772367581382433e-01
_PIO2 = ((1.57079632673412561417e+00, 6.07710050650619224932e-11),  # (piece, tail) x 3
         (6.07710050630396597660e-11, 2.02226624879595063154e-21),
         (2.02226624871116645580e-21, 8.47842766036889956997e-32))
_SIN_C = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
          2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_COS_C = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
          -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


def _horner(z, coeffs):
    acc = coeffs[-1]
    for c in coeffs[-2::-1]:
        acc = c + z * acc
    return acc


def _sincos_poly(x):
    k = jnp.round(x * _INV_PIO2)
    r = x - k * _PIO2[0][0]  # exact
    w = k * _PIO2[0][1]
    for piece, tail in _PIO2[1:]:
        t = r
        w = k * piece
        r = t - w
        w = k * tail - ((t - r) - w)
    y0 = r - w  # x - k pi/2 = y0 + y1
    y1 = (r - y0) - w
    z = y0 * y0
    v = z * y0
    s = y0 - ((z * (0.5 * y1 - v * _horner(z, _SIN_C[1:])) - y1) - v * _SIN_C[0])
    hz = 0.5 * z
    wc = 1.0 - hz
    c = wc + (((1.0 - wc) - hz) + (z * z * _horner(z, _COS_C) - y0 * y1))
    quadrant = k - 4.0 * jnp.floor(0.25 * k)  # k mod 4, exactly
    sin = jnp.where(quadrant == 0, s, jnp.where(quadrant == 1, c, jnp.where(quadrant == 2, -s, -c)))
    cos = jnp.where(quadrant == 0, c, jnp.where(quadrant == 1, -s, jnp.where(quadrant == 2, -c, s)))
    return sin, cos


def once_per_value(cache, x, make):
    """make(x), computed once per traced value x: cache maps id(x) to (x, result) (the
    value kept, so its id cannot be reused while the entry lives)."""
    hit = cache.get(id(x))
    if hit is None or hit[0] is not x:
        hit = (x, make(x))
        cache[id(x)] = hit
    return hit[1]


def _sincos(x):
    """(sin x, cos x) of a float64 batch vector, decided per element: the polynomial,
    except for finite entries above _SINCOS_MAX rad, which take lax.sin / lax.cos (their
    argument reduction is exact beyond 2**20 pi/2). A non-finite entry gives NaN either
    way (the polynomial's reduction makes inf - inf), so a NaN member of a batch changes
    neither the other members' results nor the cost; the lax functions run only when some
    entry is that large (a batch-wide test, then a per-element choice)."""
    big = (jnp.abs(x) > _SINCOS_MAX) & jnp.isfinite(x)

    def mixed(y, s, c):
        return jnp.where(big, lax.sin(y), s), jnp.where(big, lax.cos(y), c)

    # The polynomial once, as a call (`_shared_barriers` sees one equation, not its dozens
    # of intermediate values: fencing those cost 15 % of a double-pendulum step at batch
    # 256; XLA inlines the call); the conditional only mends the rare large angles
    s, c = _sincos_poly_call(x)
    return tuple(lax.cond(jnp.any(big), mixed, lambda y, s, c: (s, c), x, s, c))


_sincos_poly_call = jax.jit(_sincos_poly)
# (the polynomial once, outside the rare-angle conditional, not in both of its branches:
# docs/dev/performance.md#trig-poly-call)
