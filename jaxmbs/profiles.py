"""Time profiles f(t) for driving constraints  g(q) - f(t) = 0.

Every built-in profile is one vectorised formula,

    f(t) = c0 + c1 t + c2 t^2 + ... + c5 t^5 + a sin(w t + p),

whose coefficients are `Params` leaves (so they can be fitted or randomised). A user
profile is any JAX function f(t) -> scalar; its derivatives come from autodiff.
Units: those of the driven coordinate (m or rad), t in s.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Profile", "constant", "constant_velocity", "polynomial", "sinusoid", "as_profile"]

N_COEF = 6


class Profile(NamedTuple):
    """Coefficients of f(t) = sum_k coef[k] t^k + amp * sin(omega t + phase) (+ fn(t))."""

    coef: tuple
    amp: float = 0.0
    omega: float = 0.0
    phase: float = 0.0
    fn: Callable | None = None


def constant(value: float) -> Profile:
    """f(t) = value."""
    return polynomial([value])


def constant_velocity(rate: float, start: float = 0.0) -> Profile:
    """f(t) = start + rate * t  (rate in unit/s)."""
    return polynomial([start, rate])


def polynomial(coefficients) -> Profile:
    """f(t) = sum_k coefficients[k] t^k, degree at most 5 (coefficients in ascending order)."""
    c = [float(x) for x in np.ravel(coefficients)]
    if len(c) > N_COEF:
        raise ValueError(f"polynomial profile: degree {len(c) - 1} > 5; give at most 6 coefficients")
    return Profile(tuple(c + [0.0] * (N_COEF - len(c))))


def sinusoid(amplitude: float, omega: float, phase: float = 0.0, offset: float = 0.0) -> Profile:
    """f(t) = offset + amplitude * sin(omega t + phase)  (omega in rad/s)."""
    return Profile(polynomial([offset]).coef, float(amplitude), float(omega), float(phase))


def as_profile(x, what="profile") -> Profile:
    """Accept a Profile, a finite number (constant) or a callable f(t) (user profile);
    ValueError naming `what` otherwise (a bool, text, NaN or inf, non-finite profile
    coefficients)."""
    hint = ("give a finite number, a jaxmbs profile (constant_velocity, polynomial, sinusoid) "
            "or a JAX function f(t)")
    if isinstance(x, Profile):
        nums = list(x.coef) + [x.amp, x.omega, x.phase]
        if not all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                   and np.isfinite(v) for v in nums):
            raise ValueError(f"{what}: the profile's coefficients must be finite numbers, got {x!r}")
        return x
    if callable(x):
        return Profile((0.0,) * N_COEF, fn=x)
    if isinstance(x, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{what}: cannot use {x!r} as a driving profile; {hint}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: cannot use {x!r} as a driving profile; {hint}") from None
    if not np.isfinite(v):
        raise ValueError(f"{what}: must be finite, got {v!r}; {hint}")
    return constant(v)


def evaluate(p: dict, t):
    """Vectorised f, f', f'' of the built-in profiles. p: coef (k,6), amp/omega/phase (k,)."""
    c = p["coef"]
    t = jnp.asarray(t, c.dtype)
    # integer powers (Python ints): t ** k with a float array k has a NaN derivative at
    # t = 0 (k t^(k-1) with 0 * inf for k = 0), which poisoned gradients at t0 = 0
    pw = lambda i: t**i if i > 0 else jnp.ones_like(t)
    tp = jnp.stack([pw(i) for i in range(N_COEF)])  # (6,)
    tp1 = jnp.stack([jnp.zeros_like(t)] + [i * pw(i - 1) for i in range(1, N_COEF)])
    tp2 = jnp.stack([jnp.zeros_like(t)] * 2 + [i * (i - 1) * pw(i - 2) for i in range(2, N_COEF)])
    arg = p["omega"] * t + p["phase"]
    s, co = jnp.sin(arg), jnp.cos(arg)
    f = c @ tp + p["amp"] * s
    fd = c @ tp1 + p["amp"] * p["omega"] * co
    fdd = c @ tp2 - p["amp"] * p["omega"] ** 2 * s
    return f, fd, fdd


def evaluate_user(fn: Callable, t):
    """f, f', f'' of a user profile by forward-mode autodiff."""
    d1 = lambda s: jax.jvp(fn, (s,), (jnp.ones_like(s),))[1]
    f, fd = jax.jvp(fn, (t,), (jnp.ones_like(t),))
    fdd = jax.jvp(d1, (t,), (jnp.ones_like(t),))[1]
    return jnp.asarray(f), jnp.asarray(fd), jnp.asarray(fdd)
