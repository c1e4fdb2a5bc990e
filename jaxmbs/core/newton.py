"""The Newton iterations of the library, in one place.

Three loops cover every nonlinear solve on the constraints:

- `newton_positions`: Newton on the position constraints Phi(q, t) = 0 over the node
  families' update map, q <- normalize(q (+) dq), with the correction dq of the caller
  (least norm over free coordinates in `assemble`, the square solve of `kinematics`, the
  M-weighted saddle solve of the projection stabiliser). A fixed number of iterations,
  in a `lax.scan` (or traced one by one, `unroll=True`), so that it jits, vmaps and
  differentiates without a data-dependent loop.
- `iterate`: the same fixed-count loop on any carry (the static equilibrium's (q, lambda)
  Newton).
- `newton_root`: Newton on a residual f(x) = 0 until a convergence test holds, in a
  `lax.while_loop` (the implicit integrators' step equations, wrapped by their callers in
  `jax.lax.custom_root` for implicit differentiation), with `dense_tangent_solve` the
  matching linear solve of custom_root's tangent system.

`position_rows` picks the rows with a position-level residual (nonholonomic rows have
none) and `scaled_tolerance` the tolerance a residual is tested against.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .equations import constraint_terms

__all__ = ["position_rows", "scaled_tolerance", "iterate", "newton_positions",
           "newton_root", "dense_tangent_solve"]


def position_rows(mech, terms):
    """The holonomic rows of `terms` (all of them unless the mechanism has nonholonomic
    rows, which have no position-level residual)."""
    if not mech.nonholonomic_rows:
        return terms
    h = mech.holonomic_rows
    return terms._replace(phi=terms.phi[h], jac=terms.jac[h], phit=terms.phit[h],
                          gamma=terms.gamma[h])


def scaled_tolerance(tol, q):
    """tol (1 + max|q|): the bound a position residual (m or rad) is tested against, so
    that a mechanism far from the origin is not held to a tighter relative accuracy."""
    return tol * (1.0 + jnp.max(jnp.abs(q)))


def iterate(step, x0, iterations, *, unroll=False):
    """x_{k+1} = step(x_k, last) for k < iterations (last: a Python bool, True on the final
    iteration when unroll=True, always False in the scan). Rolled (the default) as one
    `lax.scan`; unroll=True traces the iterations one by one (for a step that builds
    something on its last iteration, e.g. a factorisation to reuse)."""
    if unroll:
        x = x0
        for k in range(iterations):
            x = step(x, k == iterations - 1)
        return x
    x, _ = jax.lax.scan(lambda x, _: (step(x, False), None), x0, None, length=iterations)
    return x


def newton_positions(mech, params, q, t, correction, iterations, *, sparse=False,
                     normalize=True, unroll=False):
    """Newton's method on the position constraints Phi(q, t) = 0.

    Args:
      mech, params: the mechanism and its parameters.
      q: (n_coords,) starting coordinates (m, rad, quaternions).
      t: time (s) of the constraints.
      correction: (terms, q, last) -> dq (n_vel,) velocity-space correction from the
        position rows' `terms` (phi (r,), jac (r, n_vel)) at the current coordinates q;
        last as in `iterate`.
      iterations: number of Newton steps (fixed: no convergence test inside).
      sparse: constraint Jacobian in the sparse (banded) form.
      normalize: renormalise the coordinates (unit quaternions) after each step.
      unroll: see `iterate`.
    Returns the coordinates (n_coords,) after `iterations` steps q <- q (+) dq.
    """
    zero = jnp.zeros((mech.n_vel,), q.dtype)

    def step(qq, last):
        terms = position_rows(mech, constraint_terms(mech, params, qq, zero, t, sparse))
        qq = mech.retract(qq, correction(terms, qq, last))
        return mech.normalize(qq) if normalize else qq

    return iterate(step, q, iterations, unroll=unroll)


def newton_root(f, x0, *, tol_fn, max_iter, modified=False, lstsq=False):
    """Newton's method for f(x) = 0 from x0 in a `lax.while_loop` (not differentiated:
    callers wrap it in `jax.lax.custom_root`).

    Args:
      f: residual (k,) -> (k,).
      x0: (k,) starting point.
      tol_fn: (x, dx, r) -> converged flag (bool scalar), evaluated after each step.
      max_iter: most iterations.
      modified: keep the Jacobian of x0 (modified Newton) instead of re-evaluating it.
      lstsq: least-squares linear solves (rank-deficient Jacobians) instead of LU.
    Returns (x, (converged, iterations)), the aux as floats: custom_root differentiates
    its aux too, and bool/int aux have no (float0) tangent there.
    """
    jac = jax.jacfwd(f)
    lin = (lambda A, r: jnp.linalg.lstsq(A, r)[0]) if lstsq else jnp.linalg.solve

    def body(c):
        k, x, _, A = c
        r = f(x)
        A = A if modified else jac(x)
        dx = lin(A, -r)
        x = x + dx
        return k + 1, x, tol_fn(x, dx, r), A

    def cond(c):
        k, x, done, _ = c
        return (k < max_iter) & ~done & jnp.all(jnp.isfinite(x))

    A0 = jac(x0)
    k, x, done, _ = jax.lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), x0,
                                                     jnp.zeros((), bool), A0))
    return x, (done.astype(x.dtype), k.astype(x.dtype))


def dense_tangent_solve(lstsq=False):
    """The tangent solve of `jax.lax.custom_root` for a dense residual: (g_lin, y) -> the
    solution of J x = y, J the Jacobian of the linear map g_lin (least squares when
    lstsq)."""

    def solve(g_lin, y):
        A = jax.jacfwd(g_lin)(jnp.zeros_like(y))
        if lstsq:
            return jnp.linalg.lstsq(A, y)[0]
        return jnp.linalg.solve(A, y)

    return solve
