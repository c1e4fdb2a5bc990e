"""`UdwadiaKalaba`: the explicit form qdd = a + M^-1/2 (jac M^-1/2)^+ (gamma - jac a),
a = M^-1 Q, with the Moore-Penrose pseudo-inverse."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core._tree import static_class
from ..core.options import Validated, boolean, real
from .base import _dense_jac, _kkt, _normalized_svd, _row_scale, _status
from .schur import augmented_mass


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
class UdwadiaKalaba(Validated):
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
    CoordinatePartitioning keeps its partition; `jaxmbs.core.dynamics.step` does it): the number
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

    OPTIONS = {"rtol": real(0.0, open_lo=True, optional=True), "step_rank": boolean()}
    rtol: float | None = None
    step_rank: bool = True
    banded = False

    @property
    def plans(self):
        return self.step_rank

    def solve(self, M, jac, Q, gamma, check=True):
        del check  # (rank revealing: dropped rows are not judged)
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
    rtol. Not hashable: made inside traced code by `jaxmbs.core.dynamics.step`."""

    banded = False

    def __init__(self, base, plan):
        self.base, self.plan = base, plan

    def solve(self, M, jac, Q, gamma, check=True):
        del check  # (rank revealing: dropped rows are not judged)
        base, plan = self.base, self.plan
        return _kkt(lambda M_, J, Q_, g: _uk_solve(M_, J, Q_, g, base.rtol, plan), M, jac, Q, gamma)
