"""What statics and linearisation return: `LinearModel`, `Modes`, `EquilibriumResult`."""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from ..core._tree import pytree_dataclass, static_field


# --------------------------------------------------------------------------- results
@pytree_dataclass
class LinearModel:
    """Linear state-space model x' = A x + B du, y = C x + D du of a constrained mechanism
    about the operating point (q, v, t, u), in independent coordinates.

    The state x (n,) = (z (n_position,), w (n - n_position,)): the perturbations of the
    independent chart entries `coordinates` (m or rad) and of the independent global
    velocities `velocities` (m/s or rad/s); `names` lists them ('arm.theta',
    'arm.theta_dot'). See the module docstring for the chart.

    A (n, n) 1/s and 1/s^2 blocks; B (n, n_controls) response to the control inputs u;
    C (p, n), D (p, n_controls) for the outputs (C = I, D = 0 when no outputs were
    given); Tq (n_coords, n) and Tv (n_vel, n): the first-order map back to the redundant
    coordinates, dq = Tq x, dv = Tv x; N (2 n_vel, n): the chart perturbation (dx, du) of
    each state; q, v, t, u: the operating point; acceleration (n_vel,): the global-axes
    accelerations there (zero at an equilibrium or a steady motion); residual: max |Phi|
    of the holonomic rows and |Phi_q v + Phi_t| of all rows at the operating point;
    status: int32 bit flags (SINGULAR: the dependent coordinates cannot be solved for, or
    the saddle system is singular; DRIFT: the operating point violates the constraints;
    UNSTEADY: traced input, the operating point is not what `about` said, its
    accelerations are above tolerance).
    """

    A: Any
    B: Any
    C: Any
    D: Any
    Tq: Any
    Tv: Any
    N: Any
    q: Any
    v: Any
    t: Any
    u: Any
    acceleration: Any
    residual: Any
    status: Any
    names: tuple = static_field(default=())
    n_position: int = static_field(default=0)

    @property
    def coordinates(self) -> tuple:
        """Chart names of the independent position states."""
        return self.names[: self.n_position]

    @property
    def velocities(self) -> tuple:
        """Chart names of the independent velocity states (without '_dot')."""
        return tuple(n[:-4] for n in self.names[self.n_position:])

    def index(self, name: str) -> int:
        """Index of a state by name ('arm.theta', 'arm.theta_dot')."""
        if name not in self.names:
            raise ValueError(f"unknown state {name!r}; states: {', '.join(self.names)}")
        return self.names.index(name)

    def without(self, names) -> LinearModel:
        """The model with the named states removed (rows and columns of A, rows of B,
        columns of C, Tq, Tv, N): the quotient by ignorable states, e.g. the position of a
        vehicle along the road, its heading, its wheels' rotation angles and its
        (conserved) speed. Exact when the removed states do not influence the others,
        A[kept, removed] = 0; `coupling(names)` measures it. The eigenvalues of the result
        are those of A without the removed states' (zero) eigenvalues."""
        drop = [self.index(n) for n in names]
        keep = np.asarray([i for i in range(len(self.names)) if i not in drop], int)
        n_pos = int(sum(1 for i in keep if i < self.n_position))
        sel = lambda a, ax: jnp.take(a, keep, axis=ax)
        return LinearModel(sel(sel(self.A, -1), -2), sel(self.B, -2), sel(self.C, -1), self.D,
                           sel(self.Tq, -1), sel(self.Tv, -1), sel(self.N, -1), self.q, self.v,
                           self.t, self.u, self.acceleration, self.residual, self.status,
                           names=tuple(self.names[i] for i in keep), n_position=n_pos)

    def coupling(self, names):
        """max |A[kept, removed]| / max |A| for removing `names` with `without` (0 when
        they are ignorable)."""
        drop = np.asarray([self.index(n) for n in names], int)
        keep = np.asarray([i for i in range(len(self.names)) if i not in drop], int)
        sub = jnp.take(jnp.take(self.A, keep, axis=-2), drop, axis=-1)
        return jnp.max(jnp.abs(sub), axis=(-2, -1)) / jnp.max(jnp.abs(self.A), axis=(-2, -1))


@pytree_dataclass
class Modes:
    """Eigen-analysis of a LinearModel (one member; vmap for batches).

    eigenvalues (n,) complex, 1/s, sorted by modulus (a conjugate pair: positive imaginary
    part first); frequencies (n,) undamped natural frequencies |lambda| (rad/s);
    damped_frequencies (n,) |Im lambda| (rad/s); damping_ratios (n,) -Re lambda / |lambda|
    (NaN for lambda = 0); vectors (n, n) complex eigenvectors in the reduced state
    (column k for eigenvalue k); shapes_q (n_coords, n) and shapes_v
    (n_vel, n): the mode shapes in the redundant coordinates (Tq @ vectors, Tv @ vectors).
    Each vector is scaled so that its largest position entry is 1 (its largest entry for
    a mode without position part).
    """

    eigenvalues: Any
    frequencies: Any
    damped_frequencies: Any
    damping_ratios: Any
    vectors: Any
    shapes_q: Any
    shapes_v: Any


@pytree_dataclass
class EquilibriumResult:
    """Static equilibrium: q (n_coords,) and multipliers lam (m,) with Q(q) = Phi_q^T lam
    and Phi(q) = 0; stiffness (n_dof,): eigenvalues (ascending; N/m, N m/rad, mixed) of the
    reduced tangent stiffness, the Hessian of the potential on the constraint manifold
    (constraint curvature included), in velocity-space coordinates; stable: all of them
    positive (a strict minimum of the potential: stable by Lagrange-Dirichlet; one
    negative means unstable unless gyroscopic forces stabilise it); neutral: the number of
    eigenvalues that vanish (|s| <= 1e-9 max |s|: directions without stiffness, such as a
    free wheel's angle; then `stable` is False); force_residual: max
    |Q - Phi_q^T lam| (N, N m); residual: max |Phi| (m, rad); status: 0 or NEWTON_FAILED
    (or SINGULAR)."""

    q: Any
    lam: Any
    stiffness: Any
    stable: Any
    neutral: Any
    force_residual: Any
    residual: Any
    status: Any
