"""Solvers of the saddle-point (KKT) system

    [ M    Phi_q^T ] [ qdd ]   [ Q     ]
    [ Phi_q   0    ] [ lam ] = [ gamma ]

Each solver is a small hashable configuration object with
`solve(M, jac, Q, gamma) -> (qdd, lam, status)`; status is 0 or `status.SINGULAR`.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import status as st
from ..core._rare import rare_cond
from ..core._small import matmul
from ..core._tree import static_class
from ..core.options import Validated, boolean, integer, real
from .banded import SparseJacobian, banded_projector, banded_schur

__all__ = ["SchurCholesky", "DenseLU", "cholesky_solve", "CholeskyFactor"]


def _unrolled_factor(A, tol):
    """Cholesky factor of a small SPD matrix written out element-wise, dropping dependent
    rows.

    Element-wise scalar arithmetic vectorises across a vmapped batch far better than a
    batched LAPACK call on tiny matrices (DESIGN.md performance notes).

    A row whose pivot falls below tol * A[j, j] depends (to that tolerance) on the rows
    before it: it is *dropped*: its diagonal entry becomes +inf, so 1/L_jj = 0, its column
    below the diagonal is 0 and the solve returns x_j = 0 without touching the other
    entries. The result is the exact solution of the system without the dropped rows (a
    redundant constraint's multiplier is 0; see `SchurCholesky`). Rows that are not
    dropped are factorised with the same arithmetic as an ordinary Cholesky.
    Returns (L as nested lists of scalars, 1/diag (0 for dropped rows), dropped (m,) bool).
    """
    m = A.shape[0]
    L = [[None] * m for _ in range(m)]
    dropped = [None] * m
    inv_d = [None] * m
    zero = jnp.zeros((), A.dtype)
    for j in range(m):
        d = A[j, j] - sum((L[j][k] ** 2 for k in range(j)), zero)
        # pivot relative to its own diagonal entry: the fraction of row j that is not a
        # combination of the rows before it (scale-invariant, unlike a global threshold)
        small = d <= tol * jnp.abs(A[j, j])
        dropped[j] = small
        L[j][j] = jnp.sqrt(jnp.where(small, jnp.inf, d))
        inv_d[j] = 1.0 / L[j][j]
        for i in range(j + 1, m):
            L[i][j] = (A[i, j] - sum((L[i][k] * L[j][k] for k in range(j)), zero)) * inv_d[j]
    return L, inv_d, jnp.stack(dropped)


def _dense_factor(A, tol):
    """The dropping Cholesky of `_unrolled_factor` for larger matrices, one column at a
    time as vector operations (Python-unrolled up to 64 rows: each column from the ones
    before it, stacked once at the end; `lax.fori_loop` above). Returns (L (m, m) lower
    triangular with 1 on the diagonal of dropped rows and 0 below it, dropped (m,) bool).

    (Unrolled, the columns are not written into L one by one: `L.at[:, j].set` copied the
    whole factor per column, under jax.vmap 44 % of the spatial slider-crank's step, m = 17.)"""
    m = A.shape[0]
    idx = jnp.arange(m)

    def finish(j, c):
        d = c[j]
        small = d <= tol * jnp.abs(A[j, j])
        ljj = jnp.sqrt(jnp.where(small, 1.0, d))
        col = jnp.where(idx > j, jnp.where(small, 0.0, c / ljj), 0.0)
        return jnp.where(idx == j, ljj, col), small

    if m <= 64:
        cols, dropped = [], []
        for j in range(m):
            c = A[:, j]
            for k in range(j):
                c = c - cols[k] * cols[k][j]
            col, small = finish(j, c)
            cols.append(col)
            dropped.append(small)
        return jnp.stack(cols, axis=1), jnp.stack(dropped)

    def body(j, carry):
        L, dr = carry
        col, small = finish(j, A[:, j] - L @ L[j, :])  # (L is zero from column j on)
        return L.at[:, j].set(col), dr.at[j].set(small)

    return jax.lax.fori_loop(0, m, body, (jnp.zeros_like(A), jnp.zeros((m,), bool)))


def _dense_apply(L, dropped, b):
    """x from the factor of `_dense_factor` for b (m,) or (m, k): the solution without
    the dropped rows, 0 in their entries."""
    tri = jax.scipy.linalg.solve_triangular
    mask = dropped.reshape(dropped.shape + (1,) * (b.ndim - 1))
    y = jnp.where(mask, 0.0, tri(L, b, lower=True))
    return tri(L.T, y, lower=False)


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
    """A Cholesky factorisation of a symmetric positive semi-definite matrix that can be
    applied to several right-hand sides (`solve(b)`). Rows whose pivot falls below
    tol * A[j, j] (default tol = 1e3 machine epsilon) are dropped (`dropped` (m,) bool;
    `singular` = any dropped): `solve` then returns the exact solution of the system
    without them, with 0 in their entries. Small matrices are factorised element-wise
    (unrolled), larger ones column by column."""

    def __init__(self, A, tol=None, unroll_max=12):
        self.m = A.shape[0]
        tol = 1e3 * jnp.finfo(A.dtype).eps if tol is None else tol
        self.unrolled = self.m <= unroll_max
        if self.m == 0:
            self.dropped = jnp.zeros((0,), bool)
        elif self.unrolled:
            self.factor = _unrolled_factor(A, tol)
            self.dropped = self.factor[2]
        else:
            L, self.dropped = _dense_factor(A, tol)
            self.factor = L
        self.singular = jnp.any(self.dropped) if self.m else jnp.zeros((), bool)

    def solve(self, b):
        if self.m == 0:
            return b
        if self.unrolled:
            return _unrolled_apply(self.factor, b)
        return _dense_apply(self.factor, self.dropped, b)


def _implicit_spd_solve(A, b, tol=None, unroll_max=12):
    """x = A^-1 b for a symmetric positive (semi-)definite A, differentiated implicitly
    (`_implicit_spd_solver`). Returns (x, dropped (m,) bool)."""
    solve, dropped = _implicit_spd_solver(A, tol, unroll_max)
    return solve(b), dropped


def _implicit_spd_solver(A, tol=None, unroll_max=12):
    """(solve, dropped): solve(b) = A^-1 b for a symmetric positive (semi-)definite A,
    differentiated implicitly, from one factorisation shared by every call.

    `lax.custom_linear_solve`: derivatives flow through the product A x only (dx =
    A^-1 (db - dA x), and the transposed solve for reverse mode reuses the factor), so the
    factorisation itself is never differentiated. Exact to round-off, and reverse mode
    stores the factor (two arrays) instead of every intermediate of an unrolled
    factorisation: about 4x less reverse-mode time for long rollouts
    (docs/dev/performance.md#implicit-saddle-gradient).
    Rows of A that depend on earlier ones are dropped (`CholeskyFactor`): x is then the
    solution without them (0 in their entries).
    """
    f = CholeskyFactor(jax.lax.stop_gradient(A), tol, unroll_max)
    if f.unrolled:
        L, inv_d, _ = f.factor
        m = f.m
        zero = jnp.zeros((), A.dtype)
        # (the diagonal is not used by the solve: 1/L_jj is iv, and 0 for dropped rows)
        Lm = jnp.stack([jnp.stack([L[i][k] if k < i else zero for k in range(m)]) for i in range(m)])
        iv = jnp.stack(inv_d)

        def solve(_, rhs):
            LL = [[Lm[i, k] for k in range(m)] for i in range(m)]
            return _unrolled_apply((LL, [iv[i] for i in range(m)], None), rhs)
    else:
        def solve(_, rhs):
            return f.solve(rhs)

    def apply(b):
        return jax.lax.custom_linear_solve(lambda y: matmul(A, y), b, solve, symmetric=True)
    return apply, f.dropped


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
    a column-by-column one. A pivot below tol * A[j, j] flags the matrix as singular (the
    row is dropped: see `CholeskyFactor`).
    """
    f = CholeskyFactor(A, tol, unroll_max)
    return f.solve(b), f.singular


def schur_tol(dtype, tol=None):
    """Pivot tolerance of the Schur complement (`SchurCholesky.tol`; default sqrt(machine
    epsilon): 1.5e-8 in float64, 3.5e-4 in float32). A row whose pivot falls below
    tol * A[j, j] (the squared sine of its angle to the rows before it, in the M^-1
    metric) is dropped as dependent. The round-off in the pivot of an exactly dependent
    row is about eps * cond: 4e-13 measured for Bricard's linkage, whose smallest
    independent pivot is 3e-5."""
    return float(jnp.finfo(dtype).eps) ** 0.5 if tol is None else float(tol)


def checked_rows(dropped, check=True):
    """The dropped rows (m,) bool to judge: `dropped` where `check` is on, none where it is
    off; None when it is statically off (a Python False: the caller emits no check at all).

    check: the `check` argument of a solver's `solve`, a Python bool or a traced scalar bool
    (an integrator's stage index == 0). The check belongs to the states a step starts from,
    which lie on the constraint manifold (to the projection's tolerance). The later stages
    of a Runge-Kutta step are evaluated at trial states off it by O(h^2); there a row that
    is redundant on the manifold is still dropped (its pivot ~ the distance to the
    manifold) but its right-hand side no longer holds to sqrt(eps): Bricard's linkage was
    flagged SINGULAR on every RK4 step. A singular configuration (a dead point) is then
    reported at the first accepted state that reaches it, one step later at most."""
    if check is True:
        return dropped
    if check is False:
        return None
    return dropped & check


def inconsistent(residual, scale, dropped, dtype, tol=None):
    """True if a dropped row's residual exceeds schur_tol * scale (`row_scale`): a
    dependent row whose right-hand side contradicts the rows it depends on (a singular
    configuration, not a redundant constraint). residual, scale (m,), dropped (m,) bool
    (the rows to judge: `checked_rows`)."""
    return jnp.any(dropped & (jnp.abs(residual) > schur_tol(dtype, tol) * scale))


@static_class
class SchurCholesky(Validated):
    """Eliminate qdd with the block-diagonal M^-1 and solve the Schur complement
    (Phi_q M^-1 Phi_q^T) lam = Phi_q M^-1 Q - gamma by Cholesky.

    Redundant constraints are handled (by default, as `assemble` does): a
    row of the Schur complement whose pivot falls below tol * A[j, j] (default tol =
    sqrt(machine epsilon), see `schur_tol`) depends on the rows before it and is dropped:
    its multiplier is 0 and
    its load is carried by the rows it depends on (for rigid bodies the split between
    redundant joints is statically indeterminate; the rows dropped are those that
    `constraint_report` names as redundant, in row order). The accelerations are those of
    the independent rows, exactly. The dropped row itself must then hold to within
    tol relative to its terms (`row_scale`; its right-hand side consistent with the rows it
    depends on, as for a redundant constraint); if not, the configuration is singular (a
    dead point, a loop that cannot move as asked) and status SINGULAR is set. Integrators
    judge this at the state each step starts from, not at the trial states of its later
    stages (`solve(..., check=)`, `checked_rows`).

    `SchurCholesky(regularization=eps)` damps instead: lam minimises
    |A lam - r|^2 + eps |lam|^2 in the Schur metric (a bias of order eps in the
    accelerations). `DenseLU` is the reference for independent rows (it refuses
    redundant ones).

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
    (element-wise for n <= 6, column by column above, to keep compile times short). This
    branch is static: mechanisms without extra coordinates are solved exactly as before.

    banded: long chains and trees have a banded Schur complement (rows renumbered by
    reverse Cuthill-McKee; bandwidth 3 for a pendulum chain of any length). With
    banded=True, or by default (None: automatic) for mechanisms with at least 16 rows and
    a band narrower than a quarter of them, the Jacobian is kept sparse (never the dense
    m x n array), the Schur complement is assembled in band storage and factorised by a
    banded Cholesky in a `lax.scan` over the rows (`jaxmbs.formulations.banded`): O(m w^2) work instead
    of O(m^3). False: always dense. Mechanisms with user, velocity or cam rows are always
    solved densely. Redundant rows are dropped on every path alike.
    """

    OPTIONS = {"unroll_max": integer(0), "regularization": real(0.0),
               "tol": real(0.0, open_lo=True, optional=True), "banded": boolean(optional=True),
               "refine": integer(0)}
    unroll_max: int = 12
    regularization: float = 0.0
    tol: float | None = None
    banded: bool | None = None
    refine: int = 0

    def solve(self, M, jac, Q, gamma, check=True):
        """(qdd, lam, status) of the saddle system. check: whether dependent (dropped)
        rows are judged for consistency (SINGULAR; `checked_rows`)."""
        if isinstance(jac, SparseJacobian):  # constraint_terms(sparse=wants_sparse(...))
            return banded_schur(M, jac, Q, gamma, self.regularization, self.tol, check)
        if getattr(M, "n_extra", 0):  # massless extra coordinates (cam): augmented M
            return _augmented_schur(self, M, jac, Q, gamma, check)
        MinvQ = M.solve(Q)
        if jac.shape[0] == 0:
            return MinvQ, jnp.zeros((0,), Q.dtype), jnp.zeros((), jnp.int32)
        MinvJt, A, A_reg = self._schur(M, jac)
        JMQ = matmul(jac, MinvQ)
        if self.regularization and self.refine:
            lam, bad = _refined_solve(A, A_reg, JMQ - gamma, self.refine, self.tol, self.unroll_max)
        else:
            lam, bad = dropping_schur_solve(A_reg, JMQ, gamma, jnp.dot(Q, MinvQ), self.tol,
                                            self.unroll_max, check)
        qdd = MinvQ - matmul(MinvJt, lam)
        return qdd, lam, jnp.where(bad, st.SINGULAR, st.OK).astype(jnp.int32)

    def _schur(self, M, jac):
        """(M^-1 J^T (n, m), A = J M^-1 J^T (m, m), A regularised) of the dense path."""
        MinvJt = M.solve(jac.T)
        A = matmul(jac, MinvJt)
        if not self.regularization:
            return MinvJt, A, A
        return MinvJt, A, A + self.regularization * jnp.mean(jnp.diagonal(A)) * jnp.eye(A.shape[0], dtype=A.dtype)

    def projector(self, M, jac):
        """The least-M-norm correction of one factorisation, for several right-hand sides:
        returns correction(r) = dx (n,) with Phi_q dx = -r (the rows dropped as dependent
        left out), dx = -M^-1 Phi_q^T A^-1 r, A = Phi_q M^-1 Phi_q^T factorised once here
        (M (n x n) and Phi_q (m x n) at one state; r (m,) in the units of the rows).
        Differentiated implicitly, as `solve`. `jaxmbs.project` uses it to take the
        velocity correction from the factor of its last position correction. Returns None
        where this solver has no such factor (massless extra coordinates, `refine`): the
        caller then calls `solve` per right-hand side."""
        if isinstance(jac, SparseJacobian):
            return banded_projector(M, jac, self.regularization, self.tol)
        if getattr(M, "n_extra", 0) or (self.regularization and self.refine) or jac.shape[0] == 0:
            return None
        MinvJt, _, A_reg = self._schur(M, jac)
        solve, _ = _implicit_spd_solver(A_reg, schur_tol(A_reg.dtype, self.tol), self.unroll_max)
        return lambda r: -matmul(MinvJt, solve(r))


def dropping_schur_solve(A, JMQ, gamma, QMQ, tol=None, unroll_max=12, check=True):
    """lam of the Schur system A lam = JMQ - gamma (A = J M^-1 J^T, JMQ = J M^-1 Q,
    QMQ = Q . M^-1 Q), with the rows that depend on earlier ones dropped (multiplier 0;
    pivot tolerance `schur_tol`), differentiated implicitly (`_implicit_spd_solve`).
    Returns (lam, bad): bad is the SINGULAR flag, set when a dropped row does not hold
    (`_check_dropped`: a singular configuration, not a redundant constraint)."""
    rhs = JMQ - gamma
    lam, dropped = _implicit_spd_solve(A, rhs, schur_tol(A.dtype, tol), unroll_max)
    return lam, _check_dropped(A, lam, rhs, JMQ, gamma, QMQ, dropped, tol, check)


def row_scale(diagA, QMQ, lam, Alam, JMQ, gamma):
    """Magnitude (m,) of each row's terms in A lam = J M^-1 Q - gamma, against which a
    dropped row's residual is judged: sqrt(A_jj) times the M-norm of the accelerations
    (|M^-1 Q|_M + |M^-1 J^T lam|_M, since |J_j x| <= sqrt(A_jj) |x|_M) plus |(J M^-1 Q)_j|
    and |gamma_j|. (A row's own entries alone can be round-off: a redundant row with no
    load on it.)"""
    acc = jnp.sqrt(jnp.abs(QMQ)) + jnp.sqrt(jnp.abs(jnp.dot(lam, Alam)))
    return jnp.sqrt(jnp.abs(diagA)) * acc + jnp.abs(JMQ) + jnp.abs(gamma)


def _check_dropped(A, lam, rhs, JMQ, gamma, QMQ, dropped, tol, check=True):
    """SINGULAR flag: a dropped row of A lam = rhs = JMQ - gamma that does not hold (see
    `inconsistent`); QMQ = Q . M^-1 Q. Evaluated only when a row was dropped (`rare_cond`:
    a batch of mechanisms without redundant rows skips its arithmetic on the element-wise
    paths; measured on the double pendulum's RK4 step, a third of its CPU time)."""
    def judge(args):
        A, lam, rhs, JMQ, gamma, QMQ, dropped = args
        Alam = matmul(A, lam)
        scale = row_scale(jnp.diagonal(A), QMQ, lam, Alam, JMQ, gamma)
        return inconsistent(Alam - rhs, scale, dropped, A.dtype, tol)

    dropped = checked_rows(dropped, check)
    if dropped is None:  # (a later stage of a step: check=False)
        return jnp.zeros((), bool)
    args = tuple(jax.lax.stop_gradient(x) for x in (A, lam, rhs, JMQ, gamma, QMQ)) + (dropped,)
    return rare_cond(jnp.any(dropped), judge, lambda args: jnp.zeros((), bool), args)


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


def _augmented_schur(solver, M, jac, Q, gamma, check=True):
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
    JMQ = jac @ MinvQ
    rhs = JMQ - gamma
    f = CholeskyFactor(A, schur_tol(A.dtype, solver.tol), solver.unroll_max)
    lam = f.solve(rhs)
    qdd = MinvQ - MinvJt @ lam
    bad = _check_dropped(A, lam, rhs, JMQ, gamma, jnp.dot(Qbar, MinvQ), f.dropped, solver.tol,
                         check)
    bad = bad | fM.singular
    return qdd, lam, jnp.where(bad, st.SINGULAR, st.OK).astype(jnp.int32)


@static_class
class DenseLU(Validated):
    """Reference solver: the full (n+m) x (n+m) KKT matrix by LU (jnp.linalg.solve)."""

    def solve(self, M, jac, Q, gamma, check=True):
        del check  # (a singular KKT matrix is SINGULAR at every state)
        n, m = jac.shape[1], jac.shape[0]
        K = jnp.block([[M.dense(), jac.T], [jac, jnp.zeros((m, m), jac.dtype)]])
        x = jnp.linalg.solve(K, jnp.concatenate([Q, gamma]))
        ok = jnp.all(jnp.isfinite(x))
        return x[:n], x[n:], jnp.where(ok, st.OK, st.SINGULAR).astype(jnp.int32)
