"""Time integrators for y' = f(t, y), y a pytree (here (q, v, w)).

Fixed-step integrators implement `step(f, t, y, h) -> (y_new, status)`; the adaptive
one implements `attempt(f, t, y, h) -> (y_new, error_norm, status)` and the step-size
controller `next_h`. All are hashable configurations (no state): pass them to
`simulate(..., integrator=...)`.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from ._tree import static_class

__all__ = ["RK4", "SemiImplicitEuler", "DormandPrince5", "Euler"]

tmap = jax.tree_util.tree_map


def _axpy(y, h, *terms):
    """y + h * sum(c_i k_i) for terms given as (c_i, k_i)."""
    def comb(yy, *ks):
        acc = yy
        for (c, _), kk in zip(terms, ks):
            if c != 0.0:
                acc = acc + (h * c) * kk
        return acc
    return tmap(comb, y, *[k for _, k in terms])


@static_class
class Euler:
    """Explicit Euler, order 1 (for tests and comparisons)."""

    order = 1
    adaptive = False

    def step(self, f, t, y, h):
        k, s = f(t, y)
        return _axpy(y, h, (1.0, k)), s


@static_class
class RK4:
    """Classical 4th-order Runge-Kutta, fixed step."""

    order = 4
    adaptive = False

    def step(self, f, t, y, h):
        k1, s1 = f(t, y)
        k2, s2 = f(t + 0.5 * h, _axpy(y, h, (0.5, k1)))
        k3, s3 = f(t + 0.5 * h, _axpy(y, h, (0.5, k2)))
        k4, s4 = f(t + h, _axpy(y, h, (1.0, k3)))
        y1 = _axpy(y, h, (1 / 6, k1), (1 / 3, k2), (1 / 3, k3), (1 / 6, k4))
        return y1, s1 | s2 | s3 | s4


@static_class
class SemiImplicitEuler:
    """Symplectic (semi-implicit) Euler, order 1: v1 = v + h a(q, v); q1 = q + h v1.

    Expects y = (q, v, *rest) with f returning (v, a, *rest_rates).
    """

    order = 1
    adaptive = False

    def step(self, f, t, y, h):
        k, s = f(t, y)
        q, v, *rest = y
        v1 = v + h * k[1]
        q1 = q + h * v1
        rest1 = [r + h * kr for r, kr in zip(rest, k[2:])]
        return (q1, v1, *rest1), s


# Dormand-Prince 5(4) tableau
_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_B5 = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_B4 = (5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40)


@static_class
class DormandPrince5:
    """Adaptive Dormand-Prince 5(4) with error control on every component of y.

    rtol, atol: tolerances; max_steps: static budget of step attempts over the whole run
    (accepted + rejected), so the loop is a `lax.scan` that jits and differentiates.
    Running out of budget sets status MAX_STEPS. h0: first step (default: simulate's dt).
    """

    rtol: float = 1e-8
    atol: float = 1e-10
    max_steps: int = 100_000
    safety: float = 0.9
    min_factor: float = 0.2
    max_factor: float = 10.0
    h0: float | None = None

    order = 5
    adaptive = True

    def attempt(self, f, t, y, h):
        ks, st = [], jnp.zeros((), jnp.int32)
        for i in range(7):
            yi = _axpy(y, h, *zip(_A[i], ks)) if i else y
            k, s = f(t + _C[i] * h, yi)
            ks.append(k)
            st = st | s
        y5 = _axpy(y, h, *zip(_B5, ks))
        err = tmap(lambda *k: h * sum(((b5 - b4) * kk for b5, b4, kk in zip(_B5, _B4, k))), *ks)
        def ratio(e, a, b):
            return e / (self.atol + self.rtol * jnp.maximum(jnp.abs(a), jnp.abs(b)))
        r = jax.tree_util.tree_leaves(tmap(ratio, err, y, y5))
        sq = sum(jnp.sum(x**2) for x in r)
        cnt = sum(x.size for x in r)
        return y5, jnp.sqrt(sq / cnt), st

    def next_h(self, h, err):
        err = jnp.where(jnp.isfinite(err), err, jnp.inf)
        fac = self.safety * jnp.where(err > 0, err, 1e-10) ** (-1.0 / 5.0)
        return h * jnp.clip(fac, self.min_factor, self.max_factor)
