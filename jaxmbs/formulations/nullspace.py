"""`NullSpace`: Maggi's projected equations with an orthonormal null-space basis of the
constraint Jacobian (SVD; rank revealing, so redundant rows and singular configurations
drop out)."""
from __future__ import annotations

import jax.numpy as jnp

from ..core._tree import static_class
from ..core.options import Validated, boolean, real
from .base import _kkt, _normalized_svd, _status
from .schur import CholeskyFactor


# ----------------------------------------------------------------- null space (Maggi)
def _maggi(M, N, xp, Q, free=None):
    """z, qdd of N^T M N z = N^T (Q - M xp), qdd = xp + N z; `free` (k,) bool masks the
    columns of N that are not part of the basis (their z is 0: identity on the diagonal).
    Returns (qdd, singular flag)."""
    if N.shape[1] == 0:  # no degree of freedom: the constraints fix qdd
        return xp, jnp.zeros((), bool)
    MN = M.apply(N)
    A = N.T @ MN
    rhs = N.T @ (Q - M.apply(xp))
    if free is not None:
        A = A + jnp.diag(jnp.where(free, 0.0, 1.0).astype(A.dtype))
        rhs = jnp.where(free, rhs, 0.0)
    A = 0.5 * (A + A.T)
    f = CholeskyFactor(A)
    z = f.solve(rhs)
    return xp + N @ z, f.singular


def _nullspace_solve(M, jac, Q, gamma, rtol, multipliers):
    m, n = jac.shape
    # jac = D^-1 U S V^T (rows normalised: the rank decision of `_rank_tol`)
    d, U, s, Vt, keep, sinv = _normalized_svd(jac, rtol, True)  # U (m, m), s (k,), Vt (n, n)
    k = min(m, n)
    V = Vt.T
    xp = V[:, :k] @ (sinv * (U[:, :k].T @ (d * gamma)))  # least-squares particular solution
    free = jnp.concatenate([~keep, jnp.ones((n - k,), bool)])
    N = V * free.astype(V.dtype)  # orthonormal basis of null(jac), masked to n columns
    qdd, bad = _maggi(M, N, xp, Q, free)
    if multipliers:
        f = Q - M.apply(qdd)  # = jac^T lam = (D jac)^T (D^-1 lam): least-norm D^-1 lam
        lam = d * (U[:, :k] @ (sinv * (Vt[:k] @ f)))
    else:
        lam = jnp.zeros((m,), Q.dtype)
    return qdd, lam, _status(bad | ~jnp.all(jnp.isfinite(qdd)))


@static_class
class NullSpace(Validated):
    """Maggi's equations with an orthonormal null-space basis (SVD of jac).

    D jac = U S V^T with D = diag(1 / |jac_j|) (rows scaled to unit length); the columns
    of V with singular values above rtol span the constrained directions (particular
    solution qdd_p = V S^+ U^T D gamma, least squares in the scaled rows), the others an
    orthonormal basis N of null(jac); z solves N^T M N z = N^T (Q - M qdd_p) by Cholesky
    and qdd = qdd_p + N z. Multipliers (multipliers=True; False returns zeros and saves a
    product) solve jac^T lam = Q - M qdd with D^-1 lam of least norm (with redundant rows
    lam is not unique; jac^T lam is).

    Redundant rows and singular configurations reduce the rank: their directions join
    the null space and gamma is met in the least-squares sense (no SINGULAR status).
    rtol: cutoff on the singular values of the row-normalised jac (dimensionless: the
    sine of a row's angle to the others), default eps^(1/4) (1.2e-4 in float64), the
    dependency test of SchurCholesky (`_rank_tol`). Cost: one dense SVD of jac (m x n)
    and an n x n Cholesky per solve.
    """

    OPTIONS = {"rtol": real(0.0, open_lo=True, optional=True), "multipliers": boolean()}
    rtol: float | None = None
    multipliers: bool = True
    banded = False

    def solve(self, M, jac, Q, gamma, check=True):
        del check  # (rank revealing: dropped rows are not judged)
        return _kkt(lambda M_, J, Q_, g: _nullspace_solve(M_, J, Q_, g, self.rtol, self.multipliers),
                    M, jac, Q, gamma)
