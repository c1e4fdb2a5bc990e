"""Forward dynamics: (q, v, t, u) -> (vdot, lam) from the equations and a saddle solver,
and the one physics step that `simulate` and the environments share.

The state of a simulation is y = (q, v, w): coordinates q (n_coords,), velocity
coordinates v (n_vel,) and the work w (J) done by non-conservative forces since t0. Its
vector field is (qdot(q, v), vdot, power); for planar mechanisms qdot = v.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from . import status as st
from .banded import wants_sparse
from .equations import ConstraintTerms, constraint_terms, generalized_forces, mass_matrix
from .saddle import SchurCholesky
from .stabilize import NoStabilization

__all__ = ["Accelerations", "accelerations", "MechanismTerm", "step", "finish_step"]


class Accelerations(NamedTuple):
    """qdd (n_vel,) velocity-coordinate accelerations (m/s^2, rad/s^2); lam (m,)
    multipliers (N, N m); power (W) of non-conservative forces plus constraint forces;
    status (int32); terms; Q (n_vel,); potential (J)."""

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

    Sign convention: M vdot + jac^T lam = Q, so the constraint forces are -jac^T lam.
    Concrete inputs are checked (`jaxmbs.checks`: ValueError naming the item); traced ones
    get the shape checks, and non-finite results set status NONFINITE (a NaN parameter or
    state under jit / vmap).
    """
    from .checks import check_call

    check_call(mech, params, "accelerations", q=q, v=v, t=t, u=u, require=("q", "v"))
    acc = _accelerations(mech, params, q, v, t, u, solver=solver, stabilizer=stabilizer)
    finite = jnp.all(jnp.isfinite(acc.qdd)) & jnp.all(jnp.isfinite(acc.lam))
    return acc._replace(status=acc.status | jnp.where(finite, st.OK, st.NONFINITE).astype(jnp.int32))


def _accelerations(mech, params, q, v, t, u=None, *, solver=SchurCholesky(),
                   stabilizer=NoStabilization()) -> Accelerations:
    """`accelerations` without the input checks (the engine's inner loop)."""
    terms = constraint_terms(mech, params, q, v, t, wants_sparse(solver, mech))
    Q, V, P = generalized_forces(mech, params, q, v, t, u)
    M = mass_matrix(mech, params, q)
    gamma = stabilizer.gamma(terms, v)
    qdd, lam, status = solver.solve(M, terms.jac, Q, gamma)
    power = P - lam @ (terms.jac @ v)
    return Accelerations(qdd, lam, power, status, terms, Q, V)


class MechanismTerm(NamedTuple):
    """The vector field of a mechanism for the integrators (diffrax's 'term').

    vf(t, y) -> ((qdot, vdot, power), status) for y = (q, v, w); qdot(q, v) and
    retract(q, dv) are the node families' kinematic maps. u(t) -> controls.
    """

    mech: Any
    params: Any
    u: Callable
    solver: Any
    stabilizer: Any

    def vf(self, t, y):
        q, v, _ = y
        acc = _accelerations(self.mech, self.params, q, v, t, self.u(t), solver=self.solver,
                             stabilizer=self.stabilizer)
        return (self.mech.qdot(q, v), acc.qdd, acc.power), acc.status

    def qdot(self, q, v):
        return self.mech.qdot(q, v)

    def retract(self, q, dv):
        return self.mech.retract(q, dv)


def finish_step(mech, params, t1, y, y_new, s, status, *, stabilizer, solver):
    """After an integrator step from y to y_new (status s): renormalise the coordinates
    (unit quaternions), apply the stabiliser's projection at t1, and freeze the member at
    its last finite state if the new one is not finite (status NONFINITE, sticky).
    Returns (y_out, status)."""
    q, v, w = y_new
    q = mech.normalize(q)
    q, v, sp = stabilizer.post_step(mech, params, q, v, t1, solver)
    y_new = (q, v, w)
    finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(x)) for x in y_new]))
    frozen = (status & st.NONFINITE) > 0
    keep = finite & ~frozen
    y_out = jax.tree_util.tree_map(lambda a, b: jnp.where(keep, a, b), y_new, y)
    status = status | jnp.where(keep, s | sp, 0) | jnp.where(finite, 0, st.NONFINITE)
    return y_out, status.astype(jnp.int32)


def step(mech, params, t, y, h, u, *, integrator, stabilizer, solver, state=None,
         status=None):
    """One fixed step of the physics from (t, y = (q, v, w)) to t + h.

    u: controls, an (n_controls,) array held over the step or a function u(t). The
    integrator step, renormalisation, stabilisation and the non-finite freeze of
    `finish_step`. Returns (y_new, integrator state, status): the one step used by
    `simulate` and the environments.
    """
    u_fn = u if callable(u) else (lambda _t: u)
    term = MechanismTerm(mech, params, u_fn, solver, stabilizer)
    y_new, state, s = integrator.advance(term, t, y, h, state)
    status = jnp.zeros((), jnp.int32) if status is None else status
    y_out, status = finish_step(mech, params, t + h, y, y_new, s, status,
                                stabilizer=stabilizer, solver=solver)
    return y_out, state, status
