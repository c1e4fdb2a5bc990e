"""`CoordinatePartitioning`: the projected equations with the basis of independent
coordinates (Wehage-Haug), the partition kept between steps and re-chosen when it becomes
ill-conditioned."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import status as st
from ..core._tree import static_class
from ..core.options import Validated, boolean, real
from .base import _dense_jac, _implicit, _status, _unconstrained
from .nullspace import _maggi


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
class CoordinatePartitioning(Validated):
    """Maggi's equations in independent coordinates (Wehage-Haug partitioning).

    The m dependent coordinates d are the pivots of an LU factorisation with partial
    pivoting of jac^T; with jac = [jac_d jac_i] (columns reordered), the null-space basis
    is N = [-jac_d^-1 jac_i; I] and the particular solution qdd_p = [jac_d^-1 gamma; 0];
    N^T M N z = N^T (Q - M qdd_p) is solved by Cholesky, qdd = qdd_p + N z, and (on
    request, multipliers=True) lam from jac_d^T lam = (Q - M qdd)_d.

    solve() chooses the partition at every call. Kept between steps (`init_plan`,
    `update_plan`, `bind`; `jaxmbs.core.dynamics.step` does this for simulate and the
    environments), the partition is re-chosen when max |jac_d^-1 jac_i| exceeds
    `threshold` (an ill-conditioned jac_d; the entries are ratios of velocity
    coordinates, m/rad for planar mechanisms) or jac_d is singular; within a step an
    ill-conditioned kept partition falls back to a fresh one for that evaluation.

    Needs jac of full row rank: redundant rows or a singular configuration set SINGULAR
    (use NullSpace, UdwadiaKalaba or AugmentedLagrangian there). tol: pivot tolerance
    relative to max |jac_d| (default 1e3 eps).
    """

    OPTIONS = {"threshold": real(0.0, open_lo=True), "tol": real(0.0, open_lo=True, optional=True),
               "multipliers": boolean()}
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

    def solve(self, M, jac, Q, gamma, check=True):
        del check  # (full row rank needed: SINGULAR otherwise)
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
    branches run). Not hashable: made inside traced code by `jaxmbs.core.dynamics.step`."""

    banded = False

    def __init__(self, base: CoordinatePartitioning, plan):
        self.base = base
        self.plan = plan

    def solve(self, M, jac, Q, gamma, check=True):
        del check  # (full row rank needed: SINGULAR otherwise)
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
