"""What the projected formulations share: the dense Jacobian, rank tolerances, the
implicit (IFT) differentiation of a KKT solve and the KKT residual."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import status as st
from .banded import SparseJacobian
from .schur import schur_tol


def _dense_jac(jac):
    return jac.dense() if isinstance(jac, SparseJacobian) else jac


def _status(bad):
    return jnp.where(bad, st.SINGULAR, st.OK).astype(jnp.int32)


def _rank_tol(rtol, dtype):
    """Singular-value cutoff of a row-normalised Jacobian (each row scaled to unit length):
    rtol, or by default sqrt(schur_tol(dtype)) = eps^(1/4) (1.2e-4 in float64, 1.9e-2 in
    float32), the dependency test of `jaxmbs.formulations.schur.SchurCholesky` on the same scale.

    SchurCholesky drops a row whose pivot, relative to its diagonal entry, is below
    schur_tol: the squared sine of the row's angle to the rows before it. For rows of
    unit length a row at sine s to the span of the others gives a singular value <= s,
    so the cutoff on the sine, sqrt(schur_tol), is the one on the singular values.

    The former default, max(m, n) eps relative to the largest singular value, is a
    round-off cutoff: it holds exactly on the constraint manifold (Bricard's redundant
    singular value is ~1e-17 there) but not at the off-manifold states an integrator
    evaluates between projections, where Phi = O(dt^2) lifts the redundant singular
    value to ~|Phi| (measured on Bricard: 1e-9 to 6e-8 at RK4's stages for dt = 1e-3),
    so a spurious row was kept, inverted by its tiny singular value, and locked the
    mechanism (P3 off by 0.85 m after 1 s, Newton not converged)."""
    if rtol is not None:
        return float(rtol)
    return float(np.sqrt(schur_tol(dtype)))


def _row_scale(B):
    """d (m,) = 1 / |B_j| per row of B (m, k) (1 for a zero row)."""
    norms = jnp.sqrt(jnp.sum(B * B, axis=1))
    return 1.0 / jnp.where(norms > 0, norms, 1.0)


def _normalized_svd(B, rtol, full_matrices):
    """SVD of the row-normalised B (m, k): B = D^-1 Bn, Bn = D B, D = diag(1 / |B_j|) (1 for
    a zero row). Returns (d (m,), U, s, Vt, keep, sinv): the factors of
    `jnp.linalg.svd(Bn)`, keep = s > `_rank_tol` (rank decision), sinv = 1/s kept, else 0."""
    d = _row_scale(B)
    U, s, Vt = jnp.linalg.svd(d[:, None] * B, full_matrices=full_matrices)
    keep = s > _rank_tol(rtol, s.dtype)
    sinv = jnp.where(keep, 1.0 / jnp.where(keep, s, 1.0), 0.0)
    return d, U, s, Vt, keep, sinv


def _implicit(fsolve, M, jac, Q, gamma):
    """(qdd, lam, status) = fsolve(M, jac, Q, gamma), differentiated implicitly.

    The KKT matrix K = [M jac^T; jac 0] is symmetric: `lax.custom_linear_solve` with
    matvec x -> K x (through which the derivatives of M and jac flow) and fsolve as the
    solve for the primal, the tangent (dx = K^-1 (db - dK x)) and the transposed solve of
    reverse mode. fsolve itself is never differentiated."""
    n = Q.shape[0]

    def matvec(x):
        xq, xl = x[:n], x[n:]
        return jnp.concatenate([M.apply(xq) + jac.T @ xl, jac @ xq])

    def solve(_, b):
        qdd, lam, status = fsolve(M, jac, b[:n], b[n:])
        return jnp.concatenate([qdd, lam]), status

    b = jnp.concatenate([Q, gamma])
    x, status = jax.lax.custom_linear_solve(matvec, b, solve, symmetric=True, has_aux=True)
    return x[:n], x[n:], status


def _unconstrained(M, Q):
    return M.solve(Q), jnp.zeros((0,), Q.dtype), jnp.zeros((), jnp.int32)


def _kkt(fsolve, M, jac, Q, gamma):
    """The formulations' common solve: dense jac, the unconstrained case (no rows), and
    fsolve(M, jac, Q, gamma) differentiated implicitly (`_implicit`)."""
    jac = _dense_jac(jac)
    if jac.shape[0] == 0:
        return _unconstrained(M, Q)
    return _implicit(fsolve, M, jac, Q, gamma)


def kkt_residual(M, jac, Q, gamma, qdd, lam):
    """(|M qdd + jac^T lam - Q|_inf, |jac qdd - gamma|_inf): how well (qdd, lam) solves
    the KKT system (for tests and diagnostics)."""
    jac = _dense_jac(jac)
    r1 = M.apply(qdd) + jac.T @ lam - Q
    r2 = jac @ qdd - gamma
    return jnp.max(jnp.abs(r1), initial=0.0), jnp.max(jnp.abs(r2), initial=0.0)
