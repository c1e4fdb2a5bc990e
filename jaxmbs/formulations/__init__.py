"""Formulations of the constrained acceleration problem.

Every class here solves

    M qdd + jac^T lam = Q,     jac qdd = gamma                                  (KKT)

(M (n, n) the mass operator in velocity space, jac (m, n), Q (n,), gamma (m,); qdd in
m/s^2 and rad/s^2, lam in N and N m) through the same interface
`solve(M, jac, Q, gamma) -> (qdd, lam, status)`, so `solver=` selects one per call
(`simulate`, `accelerations`, `project`, the environments ...). They differ in how they
get there, and so in what they tolerate and what they cost:

* `SchurCholesky()` (the default) -- eliminates qdd through the Schur complement
  jac M^-1 jac^T and a Cholesky factorisation; banded on long chains (`banded`).
* `TreeSchur()` -- block elimination of the whole saddle-point matrix along the joint
  tree, leaves first (Baraff): linear in the number of bodies, for mechanisms without
  closed loops.
* `DenseLU()` -- LU of the whole saddle-point matrix (the reference).
* `NullSpace()` -- Maggi's equations (Kane's and Gibbs-Appell's projected equations are
  the same): qdd = qdd_p + N z with jac N = 0, N^T M N z = N^T (Q - M qdd_p), by an
  orthonormal null-space basis from the SVD of jac (rank revealing: redundant rows and
  singular configurations drop out, no SINGULAR status).
* `CoordinatePartitioning()` -- the same projected equations with the basis of
  independent coordinates (Wehage-Haug): dependent coordinates chosen by LU with
  pivoting on jac^T, N = [-jac_d^-1 jac_i; I]. The partition can be kept between steps
  (`init_plan` / `bind`, used by `jaxmbs.core.dynamics.step`) and is re-chosen when it
  becomes ill-conditioned. Needs jac of full row rank (SINGULAR otherwise).
* `UdwadiaKalaba()` -- the explicit form qdd = a + M^-1/2 (jac M^-1/2)^+ (gamma - jac a),
  a = M^-1 Q, with the Moore-Penrose pseudo-inverse (any factor L L^T = M serves as
  M^1/2: L = Cholesky factor). Redundant rows need no special treatment.
* `AugmentedLagrangian()` -- Bayo / Garcia de Jalon: (M + alpha jac^T jac) qdd_{k+1} =
  Q - jac^T lam_k + alpha jac^T gamma, lam_{k+1} = lam_k + alpha (jac qdd_{k+1} - gamma):
  a penalty plus multiplier iterations; M + alpha jac^T jac is positive definite in
  redundant and singular configurations, so it never breaks down.

Derivatives: the projected formulations are differentiated by the implicit function
theorem on (KKT) (`jax.lax.custom_linear_solve` with the formulation itself as the solve),
so the iterations, pivoting and SVDs inside are never differentiated and forward and
reverse mode give the derivative of the exact KKT solution. Where the KKT matrix is
singular (redundant rows), the derivative of qdd is that of the unique accelerations as
long as the redundancy persists under the perturbation; the multipliers of redundant rows
are the least-norm ones and their derivative is not defined.

Every class works under `jax.vmap` (per-member status), in float32 and float64, and on
planar and spatial mechanisms (they only see M, jac, Q, gamma in velocity space).
Mechanisms with massless extra coordinates (cam curve parameters, `M.n_extra > 0`) are
solved with the augmented mass matrix M + w jac^T jac where a formulation needs M^-1
(`schur.augmented_mass`: same solution).
"""
from .augmented_lagrangian import AugmentedLagrangian
from .base import kkt_residual
from .nullspace import NullSpace
from .partitioning import BoundPartition, CoordinatePartitioning
from .registry import FORMULATIONS, REDUNDANCY_TOLERANT
from .schur import DenseLU, SchurCholesky
from .tree import TreeSchur
from .udwadia_kalaba import UdwadiaKalaba

__all__ = ["SchurCholesky", "TreeSchur", "DenseLU", "NullSpace", "CoordinatePartitioning", "UdwadiaKalaba",
           "AugmentedLagrangian", "BoundPartition", "FORMULATIONS", "REDUNDANCY_TOLERANT",
           "kkt_residual"]
