"""Constraint stabilisation: Baumgarte (acceleration level) and coordinate projection.

A stabiliser is a hashable configuration with
  gamma(terms, v) -> the right-hand side gamma used in the saddle solve, and
  post_step(mech, params, q, v, t, solver) -> (q, v, status) applied after each step.
"""
from __future__ import annotations

import jax.numpy as jnp

from .. import status as st
from ..formulations.banded import wants_sparse
from ..formulations.tree import for_mechanism
from ._tree import static_class
from .equations import constraint_terms, mass_matrix
from .newton import newton_positions
from .options import Validated, boolean, integer, real

__all__ = ["Baumgarte", "Projection", "NoStabilization", "project"]


@static_class
class NoStabilization(Validated):
    """Plain index-1 formulation: gamma unchanged, no projection (drift grows)."""

    def gamma(self, terms, v):
        return terms.gamma

    def post_step(self, mech, params, q, v, t, solver):
        return q, v, jnp.zeros((), jnp.int32)


@static_class
class Baumgarte(Validated):
    """gamma - 2 alpha Phi_dot - beta^2 Phi  (alpha, beta in 1/s; beta=None means beta = alpha,
    critical damping of the constraint error)."""

    OPTIONS = {"alpha": real(0.0), "beta": real(0.0, optional=True)}
    alpha: float = 10.0
    beta: float | None = None

    def gamma(self, terms, v):
        beta = self.alpha if self.beta is None else self.beta
        phidot = terms.jac @ v + terms.phit
        return terms.gamma - 2.0 * self.alpha * phidot - beta**2 * terms.phi

    def post_step(self, mech, params, q, v, t, solver):
        return q, v, jnp.zeros((), jnp.int32)


@static_class
class Projection(Validated):
    """Coordinate projection after every step: Newton onto Phi(q, t) = 0, then onto
    Phi_q v = -Phi_t, each correction of least kinetic-energy norm (M-weighted).
    Optionally combined with Baumgarte (alpha > 0). tol: residual (relative to 1 + max|q|)
    above which NEWTON_FAILED is flagged; default sqrt(machine epsilon) of q's dtype.
    refactor: False (default) takes the velocity correction from the factorisation of the
    last position correction (one Schur factorisation less per step; see `project`),
    True factorises again at the corrected position."""

    OPTIONS = {"iterations": integer(0), "tol": real(0.0, open_lo=True, optional=True),
               "alpha": real(0.0), "beta": real(0.0, optional=True), "refactor": boolean()}
    iterations: int = 1
    tol: float | None = None
    alpha: float = 0.0
    beta: float | None = None
    refactor: bool = False

    def gamma(self, terms, v):
        if self.alpha == 0.0:
            return terms.gamma
        return Baumgarte(self.alpha, self.beta).gamma(terms, v)

    def post_step(self, mech, params, q, v, t, solver):
        return project(mech, params, q, v, t, solver, self.iterations, self.tol, self.refactor)


def project(mech, params, q, v, t, solver, iterations=2, tol=None, refactor=False):
    """M-weighted projection of (q, v) onto the position and velocity constraint manifolds.

    The position correction is computed in velocity space (dq of least kinetic-energy
    norm with jac dq = -Phi) and applied with the node families' update q (+) dq (the
    quaternion exponential map for spatial bodies).

    The position step uses the holonomic rows only; the velocity step all rows
    (nonholonomic rows A(q, t) v = b included).

    Returns (q, v, status): status NEWTON_FAILED if |Phi| > tol after the iterations.
    The solves' SINGULAR flag is not passed on: their right-hand sides are residuals at
    round-off level, whose dependent (redundant) rows cannot be checked for consistency
    against them; a singular configuration is flagged by the dynamics solve of the same
    step, and a projection that does not reach the manifold by NEWTON_FAILED (a non-finite
    one by the caller's NONFINITE).

    Massless extra coordinates (cam curve parameters) carry no weight in the M-norm; the
    correction is still unique whenever the saddle system is regular, and `solver`
    (SchurCholesky via its augmented mass matrix, or DenseLU) computes it.

    One factorisation for both steps (refactor=False, where the solver has a `projector`:
    `SchurCholesky`): the velocity correction dv = -M^-1 J^T A^-1 r, r = Phi_q(q1) v + Phi_t
    at the corrected position q1, uses the factor of A = J M^-1 J^T with J = Phi_q(q0) of
    the last position correction, q0 = q1 (-) dq. It leaves the velocity residual
    (Phi_q(q1) - Phi_q(q0)) M^-1 J^T A^-1 r, first order in the position correction |dq|,
    where refactor=True leaves round-off (slider-crank, RK4, dt = 1e-3, 1 s: max
    |Phi_q v + Phi_t| 3.8e-12 against 3.6e-15); the corrected v differs from the exact
    projection's by as little relative to dv. Nonholonomic rows (the
    velocity step then has rows the position step has not) and solvers without a
    `projector` always factorise again.
    """
    status = jnp.zeros((), jnp.int32)
    if tol is None:
        tol = float(jnp.finfo(q.dtype).eps) ** 0.5
    if mech.n_constraints == 0:
        return q, v, status
    zero = jnp.zeros_like(v)
    solver = for_mechanism(solver, mech)
    sparse = wants_sparse(solver, mech)
    # the position step uses the holonomic rows only (nonholonomic rows have no Phi)
    hol = mech.holonomic_rows if mech.nonholonomic_rows else None
    n_it = iterations if hol is None or hol.size else 0
    reuse = not refactor and hol is None and getattr(solver, "projector", None) is not None
    correction = None

    def position_step(terms, q, last):
        nonlocal correction, status
        M = mass_matrix(mech, params, q)
        if reuse and last:  # (None where the solver cannot reuse its factor: cam rows)
            correction = solver.projector(M, terms.jac)
            if correction is not None:
                return correction(terms.phi)
        dq, _, s = solver.solve(M, terms.jac, zero, -terms.phi)
        status = status | (s & ~st.SINGULAR)
        return dq

    q = newton_positions(mech, params, q, t, position_step, n_it, sparse=sparse,
                         normalize=False, unroll=True)
    terms = constraint_terms(mech, params, q, v, t, sparse)
    r = terms.jac @ v + terms.phit
    if correction is not None:
        dv = correction(r)
    else:
        M = mass_matrix(mech, params, q)
        dv, _, s = solver.solve(M, terms.jac, zero, -r)
        status = status | (s & ~st.SINGULAR)
    scale = 1.0 + jnp.max(jnp.abs(q))
    failed = jnp.max(jnp.abs(terms.phi), initial=0.0) > tol * scale
    status = status | jnp.where(failed, st.NEWTON_FAILED, st.OK).astype(jnp.int32)
    return q, v + dv, status
