"""Formulations of the constrained acceleration problem (issue 17).

Every class here solves the same problem as the saddle solvers of `jaxmbs.saddle`,

    M qdd + jac^T lam = Q,     jac qdd = gamma                                  (KKT)

(M (n, n) the mass operator in velocity space, jac (m, n), Q (n,), gamma (m,); qdd in
m/s^2 and rad/s^2, lam in N and N m) through the same interface
`solve(M, jac, Q, gamma) -> (qdd, lam, status)`, so `solver=` selects one per call
(`simulate`, `accelerations`, `project`, the environments ...). They differ in how they
get there, and so in what they tolerate and what they cost:

* `NullSpace()` -- Maggi's equations (Kane's and Gibbs-Appell's projected equations are
  the same): qdd = qdd_p + N z with jac N = 0, N^T M N z = N^T (Q - M qdd_p), by an
  orthonormal null-space basis from the SVD of jac (rank revealing: redundant rows and
  singular configurations drop out, no SINGULAR status).
* `CoordinatePartitioning()` -- the same projected equations with the basis of
  independent coordinates (Wehage-Haug): dependent coordinates chosen by LU with
  pivoting on jac^T, N = [-jac_d^-1 jac_i; I]. The partition can be kept between steps
  (`init_plan` / `bind`, used by `jaxmbs.dynamics.step`) and is re-chosen when it becomes
  ill-conditioned. Needs jac of full row rank (SINGULAR otherwise).
* `UdwadiaKalaba()` -- the explicit form qdd = a + M^-1/2 (jac M^-1/2)^+ (gamma - jac a),
  a = M^-1 Q, with the Moore-Penrose pseudo-inverse (any factor L L^T = M serves as
  M^1/2: L = Cholesky factor). Redundant rows need no special treatment.
* `AugmentedLagrangian()` -- Bayo / Garcia de Jalon: (M + alpha jac^T jac) qdd_{k+1} =
  Q - jac^T lam_k + alpha jac^T gamma, lam_{k+1} = lam_k + alpha (jac qdd_{k+1} - gamma):
  a penalty plus multiplier iterations; M + alpha jac^T jac is positive definite in
  redundant and singular configurations, so it never breaks down.

Derivatives: all four are differentiated by the implicit function theorem on (KKT)
(`jax.lax.custom_linear_solve` with the formulation itself as the solve), so the
iterations, pivoting and SVDs inside are never differentiated and forward and reverse
mode give the derivative of the exact KKT solution. Where the KKT matrix is singular
(redundant rows), the derivative of qdd is that of the unique accelerations as long as
the redundancy persists under the perturbation; the multipliers of redundant rows are
the least-norm ones and their derivative is not defined.

Every class works under `jax.vmap` (per-member status), in float32 and float64, and on
planar and spatial mechanisms (they only see M, jac, Q, gamma in velocity space).
Mechanisms with massless extra coordinates (cam curve parameters, `M.n_extra > 0`) are
solved with the augmented mass matrix M + w jac^T jac where a formulation needs M^-1
(`jaxmbs.saddle.augmented_mass`: same solution).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import status as st
from ._tree import static_class
from .banded import SparseJacobian
from .saddle import CholeskyFactor, augmented_mass, schur_tol

__all__ = ["NullSpace", "CoordinatePartitioning", "UdwadiaKalaba", "AugmentedLagrangian",
           "BoundPartition", "FORMULATIONS", "kkt_residual"]


def _dense_jac(jac):
    return jac.dense() if isinstance(jac, SparseJacobian) else jac


def _status(bad):
    return jnp.where(bad, st.SINGULAR, st.OK).astype(jnp.int32)


def _rank_tol(rtol, dtype):
    """Singular-value cutoff of a row-normalised Jacobian (each row scaled to unit length):
    rtol, or by default sqrt(schur_tol(dtype)) = eps^(1/4) (1.2e-4 in float64, 1.9e-2 in
    float32), the dependency test of `jaxmbs.saddle.SchurCholesky` on the same scale.

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
class NullSpace:
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

    rtol: float | None = None
    multipliers: bool = True
    banded = False

    def solve(self, M, jac, Q, gamma):
        return _kkt(lambda M_, J, Q_, g: _nullspace_solve(M_, J, Q_, g, self.rtol, self.multipliers),
                    M, jac, Q, gamma)


# -------------------------------------------------------------- coordinate partitioning
def _choose_partition(jac):
    """Column order (n,) int32: the m dependent coordinates first (LU with partial
    pivoting of jac^T: in column k of jac^T, i.e. for row k of jac, the coordinate with
    the largest entry), then the independent ones; and the LU's diagonal (m,)."""
    lu, _, perm = jax.lax.linalg.lu(jac.T)
    return perm.astype(jnp.int32), jnp.diagonal(lu)


def _partition_solve(cols, M, jac, Q, gamma, tol, multipliers):
    """Maggi's equations with the coordinate partition `cols`; returns (qdd, lam, status,
    growth) with growth = max |jac_d^-1 jac_i| (the sensitivity of the dependent to the
    independent accelerations, inf if jac_d is singular)."""
    m, n = jac.shape
    Jp = jac[:, cols]
    Jd, Ji = Jp[:, :m], Jp[:, m:]
    lu, piv = jax.scipy.linalg.lu_factor(Jd)
    d = jnp.abs(jnp.diagonal(lu))
    scale = jnp.max(jnp.abs(Jd))
    bad = ~(jnp.min(d) > tol * scale)
    B = jax.scipy.linalg.lu_solve((lu, piv), Ji)  # (m, n - m): qdd_d = xd - B qdd_i
    xd = jax.scipy.linalg.lu_solve((lu, piv), gamma)
    dep, ind = cols[:m], cols[m:]
    N = jnp.zeros((n, n - m), jac.dtype).at[dep].set(-B).at[ind].set(jnp.eye(n - m, dtype=jac.dtype))
    xp = jnp.zeros((n,), jac.dtype).at[dep].set(xd)
    qdd, bad2 = _maggi(M, N, xp, Q)
    if multipliers:
        f = Q - M.apply(qdd)
        lam = jax.scipy.linalg.lu_solve((lu, piv), f[dep], trans=1)  # jac_d^T lam = f_d
    else:
        lam = jnp.zeros((m,), Q.dtype)
    growth = jnp.where(bad, jnp.inf, jnp.max(jnp.abs(B), initial=0.0))
    bad = bad | bad2 | ~jnp.all(jnp.isfinite(qdd))
    return qdd, lam, _status(bad), growth


@static_class
class CoordinatePartitioning:
    """Maggi's equations in independent coordinates (Wehage-Haug partitioning).

    The m dependent coordinates d are the pivots of an LU factorisation with partial
    pivoting of jac^T; with jac = [jac_d jac_i] (columns reordered), the null-space basis
    is N = [-jac_d^-1 jac_i; I] and the particular solution qdd_p = [jac_d^-1 gamma; 0];
    N^T M N z = N^T (Q - M qdd_p) is solved by Cholesky, qdd = qdd_p + N z, and (on
    request, multipliers=True) lam from jac_d^T lam = (Q - M qdd)_d.

    solve() chooses the partition at every call. Kept between steps (`init_plan`,
    `update_plan`, `bind`; `jaxmbs.dynamics.step` does this for simulate and the
    environments), the partition is re-chosen when max |jac_d^-1 jac_i| exceeds
    `threshold` (an ill-conditioned jac_d; the entries are ratios of velocity
    coordinates, m/rad for planar mechanisms) or jac_d is singular; within a step an
    ill-conditioned kept partition falls back to a fresh one for that evaluation.

    Needs jac of full row rank: redundant rows or a singular configuration set SINGULAR
    (use NullSpace, UdwadiaKalaba or AugmentedLagrangian there). tol: pivot tolerance
    relative to max |jac_d| (default 1e3 eps).
    """

    threshold: float = 50.0
    tol: float | None = None
    multipliers: bool = True
    banded = False

    def _tol(self, dtype):
        return 1e3 * float(jnp.finfo(dtype).eps) if self.tol is None else self.tol

    def _fresh(self, M, jac, Q, gamma):
        cols, _ = _choose_partition(jax.lax.stop_gradient(jac))
        return _partition_solve(cols, M, jac, Q, gamma, self._tol(jac.dtype), self.multipliers)[:3]

    def _check(self, jac):
        m, n = jac.shape
        if m > n:
            return False
        return True

    def solve(self, M, jac, Q, gamma):
        jac = _dense_jac(jac)
        if jac.shape[0] == 0:
            return _unconstrained(M, Q)
        if not self._check(jac):  # more rows than velocities: no partition exists
            return _overdetermined(M, jac, Q, gamma)
        return _implicit(self._fresh, M, jac, Q, gamma)

    # --- a partition kept between steps ------------------------------------------
    def init_plan(self, jac):
        """The partition (n,) int32 column order for the Jacobian jac (dependent first)."""
        jac = _dense_jac(jac)
        if jac.shape[0] == 0 or not self._check(jac):
            return jnp.arange(jac.shape[1], dtype=jnp.int32)
        return _choose_partition(jax.lax.stop_gradient(jac))[0]

    def update_plan(self, plan, jac):
        """The partition to keep for the next step at the Jacobian jac: `plan` unless it
        has become ill-conditioned there (growth above threshold), else a fresh one."""
        jac = jax.lax.stop_gradient(_dense_jac(jac))
        if jac.shape[0] == 0 or not self._check(jac):
            return plan
        growth = _partition_growth(plan, jac, self._tol(jac.dtype))
        return jnp.where(growth > self.threshold, _choose_partition(jac)[0], plan)

    def bind(self, plan):
        """A solver using the kept partition `plan` (see `BoundPartition`)."""
        return BoundPartition(self, plan)


def _partition_growth(cols, jac, tol):
    m = jac.shape[0]
    Jp = jac[:, cols]
    lu, piv = jax.scipy.linalg.lu_factor(Jp[:, :m])
    d = jnp.abs(jnp.diagonal(lu))
    bad = ~(jnp.min(d) > tol * jnp.max(jnp.abs(Jp[:, :m])))
    B = jax.scipy.linalg.lu_solve((lu, piv), Jp[:, m:])
    g = jnp.max(jnp.abs(B), initial=0.0)
    return jnp.where(bad | ~jnp.isfinite(g), jnp.inf, g)


class BoundPartition:
    """CoordinatePartitioning with a kept partition `plan` ((n,) int32, traced): solve()
    uses it, and where it is ill-conditioned at the current Jacobian (growth above the
    threshold) chooses a fresh one for that evaluation (`lax.cond`: under vmap both
    branches run). Not hashable: made inside traced code by `jaxmbs.dynamics.step`."""

    banded = False

    def __init__(self, base: CoordinatePartitioning, plan):
        self.base = base
        self.plan = plan

    def solve(self, M, jac, Q, gamma):
        jac = _dense_jac(jac)
        if jac.shape[0] == 0:
            return _unconstrained(M, Q)
        if not self.base._check(jac):
            return _overdetermined(M, jac, Q, gamma)
        base, plan = self.base, self.plan
        tol = base._tol(jac.dtype)

        def fsolve(M_, J, Q_, g):
            kept = _partition_solve(plan, M_, J, Q_, g, tol, base.multipliers)
            ok = kept[3] <= base.threshold
            return jax.lax.cond(ok, lambda: kept[:3], lambda: base._fresh(M_, J, Q_, g))

        return _implicit(fsolve, M, jac, Q, gamma)


def _overdetermined(M, jac, Q, gamma):
    """More rows than velocity coordinates: no partition exists; SINGULAR with the
    unconstrained accelerations' shape (finite zeros)."""
    n, m = Q.shape[0], jac.shape[0]
    return jnp.zeros((n,), Q.dtype), jnp.zeros((m,), Q.dtype), jnp.asarray(st.SINGULAR, jnp.int32)


# ---------------------------------------------------------------------- Udwadia-Kalaba
def _uk_rtol(dtype):
    """UdwadiaKalaba's default singular-value cutoff on the row-normalised jac L^-T:
    eps^(1/3) (6.1e-6 in float64, 4.9e-3 in float32). Below SchurCholesky's eps^(1/4)
    because UdwadiaKalaba drops a direction's force, not a row (see its docstring)."""
    return float(np.finfo(dtype).eps) ** (1.0 / 3.0)


def _uk_solve(M, jac, Q, gamma, rtol, rank=None):
    m, n = jac.shape
    if getattr(M, "n_extra", 0):
        Md, Q = augmented_mass(M, jac, Q, gamma)
    else:
        Md = M.dense()
    L = jnp.linalg.cholesky(0.5 * (Md + Md.T))
    tri = jax.scipy.linalg.solve_triangular
    a = tri(L.T, tri(L, Q, lower=True), lower=False)  # M^-1 Q
    B = tri(L, jac.T, lower=True).T  # jac L^-T (m, n)
    # B = D^-1 U S V^T, rows normalised (the metric of `_rank_tol`); default cutoff eps^(1/3)
    if rtol is None:
        rtol = _uk_rtol(B.dtype)
    d, U, s, Vt, keep, sinv = _normalized_svd(B, rtol, False)  # U (m, k), s (k,), Vt (k, n)
    if rank is not None:  # (step_rank: the step start's rank, down to sqrt(eps))
        keep = keep | ((jnp.arange(s.shape[0]) < rank) & (s > _uk_step_rtol(s.dtype)))
        sinv = jnp.where(keep, 1.0 / jnp.where(keep, s, 1.0), 0.0)
    y = Vt.T @ (sinv * (U.T @ (d * (gamma - jac @ a))))  # (jac L^-T)^+ (gamma - jac a)
    qdd = a + tri(L.T, y, lower=False)
    # jac^T lam = -M (qdd - a) = -L y, i.e. B^T lam = -y: least-norm D^-1 lam
    lam = -d * (U @ (sinv * (Vt @ y)))
    bad = ~jnp.all(jnp.isfinite(L)) | ~jnp.all(jnp.isfinite(qdd))
    return qdd, lam, _status(bad)


@static_class
class UdwadiaKalaba:
    """Udwadia-Kalaba's explicit equation qdd = a + M^-1/2 (jac M^-1/2)^+ (gamma - jac a),
    a = M^-1 Q (the unconstrained accelerations), by Gauss's principle of least
    constraint.

    M^1/2 is the Cholesky factor L (M = L L^T; any factor gives the same qdd), the
    pseudo-inverse comes from the SVD of D jac L^-T (D = diag(1 / |(jac L^-T)_j|): rows of
    unit length in the M^-1 metric, that of SchurCholesky's pivots) with singular values
    below rtol (default eps^(1/3): 6.1e-6 in float64, 4.9e-3 in float32) dropped, so
    redundant constraints and singular configurations need no special treatment and never
    give a SINGULAR status (at a singular configuration gamma is met in the least-squares
    sense). Multipliers: jac^T lam = -M (qdd - a) with
    D^-1 lam of least norm (with redundant rows lam is not unique; jac^T lam is). Cost:
    an n x n Cholesky and an m x n SVD per solve.

    The cutoff drops a direction's constraint force, not a row (SchurCholesky keeps its
    other rows exact): an integrator stage within rtol of a singular configuration loses
    that force for the stage. With SchurCholesky's cutoff eps^(1/4) = 1.2e-4 the N-four-bar
    N = 2 through its dead point failed on 2 of 256 perturbed members (energy error
    1.8e-3); with eps^(1/3) on none (VALIDATION.md section 9). The cutoff must stay above
    the singular values that redundant rows get off the manifold, at stage states
    (Bricard: about 1.6e-2 h^2 for RK4 with step h s, 6.3e-6 at h = 20 ms), or it keeps
    the spurious row and locks the mechanism. So on redundant mechanisms the default
    holds for RK4 steps up to about 20 ms; a cutoff rtol holds up to about
    sqrt(rtol / 1.6e-2) s.

    step_rank=True (default) keeps the rank between steps (`init_plan` / `update_plan` / `bind`, as
    CoordinatePartitioning keeps its partition; `jaxmbs.dynamics.step` does it): the number
    of singular values above sqrt(eps) (1.5e-8) of the row-normalised jac at each step's
    start, which is on the constraint manifold after projection or an index-3 integrator's
    Newton solve, so redundant rows show there as singular values at round-off. A stage then
    keeps that many largest singular values down to sqrt(eps), and any above rtol: near a
    singular configuration a stage drops a direction's force only where the step's start
    state is itself within sqrt(eps) of it (instead of rtol), and redundant rows stay
    dropped. One more m x n SVD per step; the solver then has state between steps (vmap
    batch path). Without projection (Baumgarte, no stabilisation) the start states are
    off the manifold by the drift, and redundant rows whose singular value there exceeds
    sqrt(eps) would be kept: there, or for a stateless solver, step_rank=False (the
    cutoff rtol alone, at every evaluation). Measured (VALIDATION.md section 9): the
    N-four-bar N = 2 through its dead point, RK4 + Projection, 1024 perturbed members:
    1 flagged with step_rank=False, none with True.
    """

    rtol: float | None = None
    step_rank: bool = True
    banded = False

    @property
    def plans(self):
        return self.step_rank

    def solve(self, M, jac, Q, gamma):
        return _kkt(lambda M_, J, Q_, g: _uk_solve(M_, J, Q_, g, self.rtol), M, jac, Q, gamma)

    # --- step_rank=True: the rank decided at each step's start state ------------------
    def init_plan(self, jac):
        """The number of independent constraint directions at the (on-manifold) state of
        jac: singular values of the row-normalised jac above sqrt(eps) (int32 scalar)."""
        jac = jax.lax.stop_gradient(_dense_jac(jac))
        if jac.shape[0] == 0:
            return jnp.zeros((), jnp.int32)
        s = jnp.linalg.svd(_row_scale(jac)[:, None] * jac, compute_uv=False)  # no U, V: cheaper
        return jnp.sum(s > _uk_step_rtol(jac.dtype)).astype(jnp.int32)

    def update_plan(self, plan, jac):
        return self.init_plan(jac)

    def bind(self, plan):
        return _BoundUK(self, plan)


def _uk_step_rtol(dtype):
    """step_rank's cutoffs: sqrt(eps) (1.5e-8 in float64), both for the rank at a step's
    start and for the smallest singular value a stage keeps beyond `rtol`."""
    return float(np.finfo(dtype).eps) ** 0.5


class _BoundUK:
    """UdwadiaKalaba with the rank `plan` ((), int32, traced) decided at the step's start:
    a stage keeps its `plan` largest singular values down to sqrt(eps), and any above
    rtol. Not hashable: made inside traced code by `jaxmbs.dynamics.step`."""

    banded = False

    def __init__(self, base, plan):
        self.base, self.plan = base, plan

    def solve(self, M, jac, Q, gamma):
        base, plan = self.base, self.plan
        return _kkt(lambda M_, J, Q_, g: _uk_solve(M_, J, Q_, g, base.rtol, plan), M, jac, Q, gamma)


# ----------------------------------------------------------------- augmented Lagrangian
def _al_solve(M, jac, Q, gamma, penalty, iterations, rtol):
    m, n = jac.shape
    Md = M.dense()
    JtJ = jac.T @ jac
    tiny = jnp.finfo(Md.dtype).tiny
    if penalty is None:  # the pivots of M + alpha jac^T jac left to M are ~ 1/penalty
        penalty = float(jnp.finfo(Md.dtype).eps) ** (-1.0 / 3.0)
    alpha = penalty * jnp.trace(Md) / jnp.maximum(jnp.trace(JtJ), tiny)  # scale-invariant
    A = Md + alpha * JtJ
    f = CholeskyFactor(0.5 * (A + A.T))
    tol = float(jnp.finfo(Md.dtype).eps) * 8.0 if rtol is None else rtol

    # The iteration in correction form (iterative refinement): the residual of the
    # penalised equations is formed explicitly, so the round-off of the ill-conditioned
    # solve (cond ~ alpha cond(M)) applies to the shrinking correction, not to qdd.
    def body(carry):
        k, lam, qdd, _ = carry
        c = jac @ qdd - gamma
        r = Q - M.apply(qdd) - jac.T @ (lam + alpha * c)
        dq = f.solve(r)
        qdd = qdd + dq
        dlam = alpha * (jac @ qdd - gamma)
        lam = lam + dlam
        small = (jnp.max(jnp.abs(dlam), initial=0.0) <= tol * jnp.maximum(jnp.max(jnp.abs(lam), initial=0.0), tiny)) \
            & (jnp.max(jnp.abs(dq), initial=0.0) <= tol * jnp.maximum(jnp.max(jnp.abs(qdd), initial=0.0), tiny))
        return k + 1, lam, qdd, small

    def cond(carry):
        k, _, _, done = carry
        return (k < iterations) & ~done

    lam0 = jnp.zeros((m,), Q.dtype)
    _, lam, qdd, _ = jax.lax.while_loop(
        cond, body, (jnp.zeros((), jnp.int32), lam0, jnp.zeros_like(Q), jnp.zeros((), bool)))
    # multiplier polish: lam += alpha jac A^-1 (Q - M qdd - jac^T lam). The update
    # alpha (jac qdd - gamma) of the loop carries the round-off of jac qdd - gamma times
    # alpha (a floor of about penalty * eps relative in lam); this step forms the
    # residual of jac^T lam = Q - M qdd instead and reduces the error of lam by the same
    # factor 1 / (1 + alpha s_i) with no such floor (lam stays in range(jac)).
    g = Q - M.apply(qdd) - jac.T @ lam
    lam = lam + alpha * (jac @ f.solve(g))
    bad = f.singular | ~jnp.all(jnp.isfinite(qdd))
    return qdd, lam, _status(bad)


@static_class
class AugmentedLagrangian:
    """Augmented-Lagrangian formulation (Bayo, Garcia de Jalon, Avello):

        (M + alpha jac^T jac) qdd_{k+1} = Q - jac^T lam_k + alpha jac^T gamma,
        lam_{k+1} = lam_k + alpha (jac qdd_{k+1} - gamma),   lam_0 = 0,

    one Cholesky factorisation of M + alpha jac^T jac (positive definite whenever the KKT
    system has a unique qdd, redundant rows and singular configurations included) and up
    to `iterations` multiplier updates, stopping when the update is below rtol (default
    8 eps) relative to lam. The penalty alpha = penalty * trace(M) / |jac|_F^2 is
    scale-invariant; each iteration reduces the error of lam by 1 / (1 + alpha s_i) along
    the eigenvectors of jac M^-1 jac^T (eigenvalues s_i). Default penalty eps^(-1/3)
    (1.7e5 in float64, 2.0e2 in float32): the pivots that M + alpha jac^T jac leaves to
    M are ~ 1/penalty of the others, and must stay above the Cholesky's pivot tolerance
    (1e3 eps). With redundant rows lam stays
    in range(jac): the least-norm multipliers. At a singular configuration the
    constraint is met in the penalty (least-squares) sense; nothing is flagged, and the
    iterations then run to the budget.
    """

    penalty: float | None = None
    iterations: int = 30
    rtol: float | None = None
    banded = False

    def solve(self, M, jac, Q, gamma):
        return _kkt(lambda M_, J, Q_, g: _al_solve(M_, J, Q_, g, self.penalty, self.iterations,
                                                    self.rtol), M, jac, Q, gamma)


# registry for the conformance suite, the comparison script and the CLI: name -> factory
FORMULATIONS = {
    "schur": lambda: __import__("jaxmbs.saddle", fromlist=["SchurCholesky"]).SchurCholesky(),
    "dense_lu": lambda: __import__("jaxmbs.saddle", fromlist=["DenseLU"]).DenseLU(),
    "nullspace": NullSpace,
    "partition": CoordinatePartitioning,
    "udwadia_kalaba": UdwadiaKalaba,
    "augmented_lagrangian": AugmentedLagrangian,
}
REDUNDANCY_TOLERANT = ("nullspace", "udwadia_kalaba", "augmented_lagrangian")
