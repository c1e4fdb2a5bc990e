"""Observation and action spaces of the functional environments (gymnax-style).

Spaces are hashable, static descriptions: `sample(key)` and `contains(x)` are pure JAX
functions, so they jit and vmap (`jax.vmap(space.sample)(keys)` draws a batch).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Box", "Discrete"]


def _default_float():
    return jnp.dtype(jnp.result_type(float))


class Box:
    """A box of real vectors: low <= x <= high elementwise.

    Args:
      low, high: scalars or arrays broadcastable to `shape` (may be -inf / inf).
      shape: tuple of ints, default: the broadcast shape of low and high.
      dtype: floating dtype, default the default float (float64 with jax_enable_x64).
    `sample(key)` draws uniformly where both bounds are finite, from a standard normal
    (shifted / folded onto the half-line) where a bound is infinite.
    """

    def __init__(self, low, high, shape=None, dtype=None):
        low = np.asarray(low, float)
        high = np.asarray(high, float)
        if shape is None:
            shape = np.broadcast_shapes(low.shape, high.shape)
        shape = tuple(int(s) for s in shape)
        try:
            low, high = np.broadcast_to(low, shape).copy(), np.broadcast_to(high, shape).copy()
        except ValueError:
            raise ValueError(f"Box: low {low.shape} and high {high.shape} do not broadcast to "
                             f"shape {shape}; give bounds of that shape or scalars") from None
        if np.any(np.isnan(low)) or np.any(np.isnan(high)) or np.any(low > high):
            raise ValueError("Box: need low <= high elementwise (no NaN); swap or fix the bounds")
        self.low, self.high, self.shape = low, high, shape
        self.dtype = _default_float() if dtype is None else jnp.dtype(dtype)
        if not jnp.issubdtype(self.dtype, jnp.floating):
            raise ValueError(f"Box: dtype must be floating, got {self.dtype}; use Discrete for integers")

    def sample(self, key):
        """A random element, shape `shape`, dtype `dtype`."""
        lo, hi = jnp.asarray(self.low, self.dtype), jnp.asarray(self.high, self.dtype)
        fl, fh = np.isfinite(self.low), np.isfinite(self.high)
        k1, k2 = jax.random.split(key)
        u = jax.random.uniform(k1, self.shape, self.dtype)
        z = jax.random.normal(k2, self.shape, self.dtype)
        out = jnp.where(fl & fh, lo + u * (hi - lo), z)
        out = jnp.where(fl & ~fh, lo + jnp.abs(z), out)
        out = jnp.where(~fl & fh, hi - jnp.abs(z), out)
        return jnp.clip(out, lo, hi) if np.all(fl & fh) else out

    def contains(self, x):
        """True (a JAX bool) if x has this shape and lies within the bounds."""
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        return jnp.all((x >= self.low) & (x <= self.high))

    def __repr__(self):
        return f"Box(shape={self.shape}, dtype={self.dtype})"

    def __eq__(self, other):
        return (isinstance(other, Box) and self.shape == other.shape and self.dtype == other.dtype
                and np.array_equal(self.low, other.low) and np.array_equal(self.high, other.high))

    def __hash__(self):
        return hash((self.shape, str(self.dtype), self.low.tobytes(), self.high.tobytes()))


class Discrete:
    """The integers {0, 1, ..., n-1}; elements are int32 scalars (shape ())."""

    def __init__(self, n):
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"Discrete: n must be a positive integer, got {n!r}")
        self.n = int(n)
        self.shape = ()
        self.dtype = jnp.dtype(jnp.int32)

    def sample(self, key):
        """A uniformly random action, int32 scalar in [0, n)."""
        return jax.random.randint(key, (), 0, self.n, jnp.int32)

    def contains(self, x):
        x = jnp.asarray(x)
        if x.shape != () or not jnp.issubdtype(x.dtype, jnp.integer):
            return jnp.asarray(False)
        return (x >= 0) & (x < self.n)

    def __repr__(self):
        return f"Discrete({self.n})"

    def __eq__(self, other):
        return isinstance(other, Discrete) and other.n == self.n

    def __hash__(self):
        return hash(("Discrete", self.n))
