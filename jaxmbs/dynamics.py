"""Forward dynamics: (q, v, t, u) -> (qdd, lam) from the equations and a saddle solver."""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .banded import wants_sparse
from .equations import ConstraintTerms, constraint_terms, generalized_forces, mass_matrix
from .saddle import SchurCholesky
from .stabilize import NoStabilization

__all__ = ["Accelerations", "accelerations"]


class Accelerations(NamedTuple):
    """qdd (n,) in m/s^2, rad/s^2; lam (m,) multipliers (N, N m); power (W) of
    non-conservative forces plus constraint forces; status (int32); terms; Q (n,)."""

    qdd: jax.Array
    lam: jax.Array
    power: jax.Array
    status: jax.Array
    terms: ConstraintTerms
    Q: jax.Array
    potential: jax.Array


def accelerations(mech, params, q, v, t, u=None, *, solver=SchurCholesky(),
                  stabilizer=NoStabilization()) -> Accelerations:
    """Solve the saddle-point system at (q, v, t) with controls u (n_controls,).

    Sign convention: M qdd + Phi_q^T lam = Q, so the constraint forces are -Phi_q^T lam.
    """
    terms = constraint_terms(mech, params, q, v, t, wants_sparse(solver, mech))
    Q, V, P = generalized_forces(mech, params, q, v, t, u)
    M = mass_matrix(mech, params, q)
    gamma = stabilizer.gamma(terms, v)
    qdd, lam, status = solver.solve(M, terms.jac, Q, gamma)
    power = P - lam @ (terms.jac @ v)
    return Accelerations(qdd, lam, power, status, terms, Q, V)
