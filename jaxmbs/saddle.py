"""Solvers of the saddle-point (KKT) system

    [ M    Phi_q^T ] [ qdd ]   [ Q     ]
    [ Phi_q   0    ] [ lam ] = [ gamma ]

Each solver is a small hashable configuration object with
`solve(M, jac, Q, gamma) -> (qdd, lam, status)`; status is 0 or `status.SINGULAR`.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from . import status as st
from ._small import matmul
from .banded import SparseJacobian, banded_schur
from ._tree import static_class

__all__ = ["SchurCholesky", "DenseLU", "cholesky_solve", "CholeskyFactor"]


def _unrolled_factor(A, tol):
    """Cholesky factor of a small SPD matrix written out element-wise.

    Element-wise scalar arithmetic vectorises across a vmapped batch far better than a
    batched LAPACK call on tiny matrices (DESIGN.md performance notes).
    Returns (L as nested lists of scalars, 1/diag, flag True if a pivot fell below
    tol * A[j, j]).
    """
    m = A.shape[0]
    L = [[None] * m for _ in range(m)]
    bad = jnp.zeros((), bool)
    inv_d = [None] * m
    zero = jnp.zeros((), A.dtype)
    for j in range(m):
        d = A[j, j] - sum((L[j][k] ** 2 for k in range(j)), zero)
        # pivot relative to its own diagonal entry: the fraction of row j that is not a
        # combination of the rows before it (scale-invariant, unlike a global threshold)
        floor = tol * jnp.abs(A[j, j])
        small = d <= floor
        bad = bad | small
        d = jnp.where(small, jnp.maximum(floor, jnp.finfo(A.dtype).tiny), d)
        L[j][j] = jnp.sqrt(d)
        inv_d[j] = 1.0 / L[j][j]
        for i in range(j + 1, m):
            L[i][j] = (A[i, j] - sum((L[i][k] * L[j][k] for k in range(j)), zero)) * inv_d[j]
    return L, inv_d, bad


def _unrolled_apply(factor, b):
    L, inv_d, _ = factor
    m = len(inv_d)
    zero = jnp.zeros((), b.dtype)
    y = [None] * m
    for i in range(m):
        y[i] = (b[i] - sum((L[i][k] * y[k] for k in range(i)), zero)) * inv_d[i]
    x = [None] * m
    for i in reversed(range(m)):
        x[i] = (y[i] - sum((L[k][i] * x[k] for k in range(i + 1, m)), zero)) * inv_d[i]
    return jnp.stack(x)


class CholeskyFactor:
    """A Cholesky factorisation of an SPD matrix that can be applied to several right-hand
    sides (`solve(b)`); `singular` is the pivot flag. Small matrices are factorised
    element-wise (unrolled), larger ones by LAPACK."""

    def __init__(self, A, tol=None, unroll_max=12):
        self.m = A.shape[0]
        tol = 1e3 * jnp.finfo(A.dtype).eps if tol is None else tol
        self.unrolled = self.m <= unroll_max
        if self.m == 0:
            self.singular = jnp.zeros((), bool)
        elif self.unrolled:
            self.factor = _unrolled_factor(A, tol)
            self.singular = self.factor[2]
        else:
            L = jnp.linalg.cholesky(A)
            d = jnp.diagonal(L)
            self.factor = L
            self.singular = ~jnp.all(d**2 > tol * jnp.abs(jnp.diagonal(A))) | ~jnp.all(jnp.isfinite(L))

    def solve(self, b):
        if self.m == 0:
            return b
        if self.unrolled:
            return _unrolled_apply(self.factor, b)
        return jax.scipy.linalg.cho_solve((self.factor, True), b)


def _implicit_spd_solve(A, b, tol=None, unroll_max=12):
    """x = A^-1 b for a symmetric positive definite A, differentiated implicitly.

    `lax.custom_linear_solve`: derivatives flow through the product A x only (dx =
    A^-1 (db - dA x), and the transposed solve for reverse mode reuses the factor), so the
    factorisation itself is never differentiated. Exact to round-off, and reverse mode
    stores the factor (two arrays) instead of every intermediate of an unrolled
    factorisation: about 4x less reverse-mode time for long rollouts (BENCHMARKS.md).
    Returns (x, singular_flag).
    """
    f = CholeskyFactor(jax.lax.stop_gradient(A), tol, unroll_max)
    if f.unrolled:
        L, inv_d, _ = f.factor
        m = f.m
        zero = jnp.zeros((), A.dtype)
        Lm = jnp.stack([jnp.stack([L[i][k] if k <= i else zero for k in range(m)]) for i in range(m)])
        iv = jnp.stack(inv_d)

        def solve(_, rhs):
            LL = [[Lm[i, k] for k in range(m)] for i in range(m)]
            return _unrolled_apply((LL, [iv[i] for i in range(m)], None), rhs)
    else:
        def solve(_, rhs):
            return f.solve(rhs)
    x = jax.lax.custom_linear_solve(lambda y: matmul(A, y), b, solve, symmetric=True)
    return x, f.singular


def _refined_solve(A, A_reg, b, steps, tol=None, unroll_max=12):
    """x = A^+ b (approximately) by `steps` refinements x <- x + A_reg^-1 (b - A x) on one
    factor of A_reg = A + eps I. The factor is not differentiated; derivatives flow through
    the products A x, so they converge with the iterates to those of the fixed point.
    Returns (x, singular_flag)."""
    f = CholeskyFactor(jax.lax.stop_gradient(A_reg), tol, unroll_max)
    x = f.solve(b)
    for _ in range(steps):
        x = x + f.solve(b - matmul(A, x))
    return x, f.singular


def cholesky_solve(A, b, tol=None, unroll_max=12):
    """Solve the SPD system A x = b; returns (x, singular_flag).

    Small systems (m <= unroll_max) use an element-wise unrolled factorisation; larger ones
    LAPACK's. A pivot below tol * A[j, j] flags the matrix as singular.
    """
    f = CholeskyFactor(A, tol, unroll_max)
    return f.solve(b), f.singular


@static_class
class SchurCholesky:
    """Eliminate qdd with the block-diagonal M^-1 and solve the Schur complement
    (Phi_q M^-1 Phi_q^T) lam = Phi_q M^-1 Q - gamma by Cholesky.

    Requires Phi_q of full row rank; a rank-deficient Jacobian (redundant constraints,
    singular configurations) sets status SINGULAR. Use `DenseLU` as a reference or
    `SchurCholesky(regularization=eps)` to damp redundant constraints
    (lam minimises |A lam - r|^2 + eps |lam|^2 in the Schur metric).

    refine: with a regularisation, that many steps of iterative refinement
    lam <- lam + (A + eps I)^-1 (r - A lam) on the same factor (proximal-point iterations):
    each step shrinks the regularisation's error in the accelerations by about
    eps / (sigma + eps) on every constraint direction of singular value sigma, and the
    multipliers tend to the least-norm ones. A larger eps (1e-8) with 2 steps keeps the
    factor well conditioned at a redundant configuration and the accelerations exact to
    ~eps^3, where a tiny eps alone trades one error for the other (round-off ~ 1/eps,
    damping ~ eps). Dense path only (the banded and cam paths ignore it).

    Mechanisms with massless extra coordinates (cam curve parameters; `M.n_extra > 0`)
    have a singular M: they are solved with the augmented, SPD matrix
    M + w Phi_q^T Phi_q (same solution; see `augmented_mass`), factorised densely
    (element-wise for n <= 6, LAPACK above, to keep compile times short). This branch is
    static: mechanisms without extra coordinates are solved exactly as before.

    banded: long chains and trees have a banded Schur complement (rows renumbered by
    reverse Cuthill-McKee; bandwidth 3 for a pendulum chain of any length). With
    banded=True, or by default (None: automatic) for mechanisms with at least 16 rows and
    a band narrower than a quarter of them, the Jacobian is kept sparse (never the dense
    m x n array), the Schur complement is assembled in band storage and factorised by a
    banded Cholesky in a `lax.scan` over the rows (`jaxmbs.banded`): O(m w^2) work instead
    of O(m^3). False: always dense. Mechanisms with user, velocity or cam rows are always
    solved densely.
    """

    unroll_max: int = 12
    regularization: float = 0.0
    tol: float | None = None
    banded: bool | None = None
    refine: int = 0

    def solve(self, M, jac, Q, gamma):
        if isinstance(jac, SparseJacobian):  # constraint_terms(sparse=wants_sparse(...))
            return banded_schur(M, jac, Q, gamma, self.regularization, self.tol)
        if getattr(M, "n_extra", 0):  # massless extra coordinates (cam): augmented M
            return _augmented_schur(self, M, jac, Q, gamma)
        MinvQ = M.solve(Q)
        if jac.shape[0] == 0:
            return MinvQ, jnp.zeros((0,), Q.dtype), jnp.zeros((), jnp.int32)
        MinvJt = M.solve(jac.T)  # (n, m)
        A = matmul(jac, MinvJt)
        A_reg = A
        if self.regularization:
            A_reg = A + self.regularization * jnp.mean(jnp.diagonal(A)) * jnp.eye(A.shape[0], dtype=A.dtype)
        rhs = matmul(jac, MinvQ) - gamma
        if self.regularization and self.refine:
            lam, bad = _refined_solve(A, A_reg, rhs, self.refine, self.tol, self.unroll_max)
        else:
            lam, bad = _implicit_spd_solve(A_reg, rhs, self.tol, self.unroll_max)
        qdd = MinvQ - matmul(MinvJt, lam)
        return qdd, lam, jnp.where(bad, st.SINGULAR, st.OK).astype(jnp.int32)


def augmented_mass(M, jac, Q, gamma):
    """(Mbar, Qbar) = (M + w Phi_q^T Phi_q, Q + w Phi_q^T gamma) for a mass matrix with
    massless (extra) coordinates.

    Adding w Phi_q^T (Phi_q qdd - gamma) = 0 to the dynamic equations leaves the solution
    of the KKT system unchanged, and Mbar is symmetric positive definite exactly when the
    KKT matrix is regular (no nonzero qdd with M qdd = 0 and Phi_q qdd = 0) -- so the Schur
    complement can be formed with Mbar^-1. The scalar weight w = trace(M) / |Phi_q|_F^2
    makes the added term as large as M (scale-invariant in the units of the rows).
    """
    Md = M.dense()
    JtJ = jac.T @ jac
    w = jnp.trace(Md) / jnp.maximum(jnp.trace(JtJ), jnp.finfo(Md.dtype).tiny)
    return Md + w * JtJ, Q + w * (jac.T @ gamma)


def _augmented_schur(solver, M, jac, Q, gamma):
    """SchurCholesky with the augmented mass matrix (see `augmented_mass`): a dense
    Cholesky factorisation of Mbar (n x n, unrolled element-wise for n <= unroll_max),
    then the Schur complement Phi_q Mbar^-1 Phi_q^T by Cholesky as usual."""
    Mbar, Qbar = augmented_mass(M, jac, Q, gamma)
    fM = CholeskyFactor(Mbar, solver.tol, min(solver.unroll_max, 6))
    MinvQ = fM.solve(Qbar)
    MinvJt = fM.solve(jac.T)
    A = jac @ MinvJt
    A = 0.5 * (A + A.T)
    if solver.regularization:
        A = A + solver.regularization * jnp.mean(jnp.diagonal(A)) * jnp.eye(A.shape[0], dtype=A.dtype)
    lam, bad = cholesky_solve(A, jac @ MinvQ - gamma, solver.tol, solver.unroll_max)
    qdd = MinvQ - MinvJt @ lam
    bad = bad | fM.singular
    return qdd, lam, jnp.where(bad, st.SINGULAR, st.OK).astype(jnp.int32)


@static_class
class DenseLU:
    """Reference solver: the full (n+m) x (n+m) KKT matrix by LU (jnp.linalg.solve)."""

    def solve(self, M, jac, Q, gamma):
        n, m = jac.shape[1], jac.shape[0]
        K = jnp.block([[M.dense(), jac.T], [jac, jnp.zeros((m, m), jac.dtype)]])
        x = jnp.linalg.solve(K, jnp.concatenate([Q, gamma]))
        ok = jnp.all(jnp.isfinite(x))
        return x[:n], x[n:], jnp.where(ok, st.OK, st.SINGULAR).astype(jnp.int32)
