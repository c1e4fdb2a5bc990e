"""`AugmentedLagrangian` (Bayo, Garcia de Jalon): a penalty plus multiplier iterations on
(M + alpha jac^T jac) qdd = Q - jac^T lam + alpha jac^T gamma."""
from __future__ import annotations

import jax
import jax.numpy as jnp

from ..core._tree import static_class
from ..core.options import Validated, integer, real
from .base import _kkt, _status
from .schur import CholeskyFactor


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
class AugmentedLagrangian(Validated):
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

    OPTIONS = {"penalty": real(0.0, open_lo=True, optional=True), "iterations": integer(1),
               "rtol": real(0.0, open_lo=True, optional=True)}
    penalty: float | None = None
    iterations: int = 30
    rtol: float | None = None
    banded = False

    def solve(self, M, jac, Q, gamma, check=True):
        del check  # (rank revealing: dropped rows are not judged)
        return _kkt(lambda M_, J, Q_, g: _al_solve(M_, J, Q_, g, self.penalty, self.iterations,
                                                    self.rtol), M, jac, Q, gamma)


# registry for the conformance suite, the comparison script and the CLI: name -> factory
