"""Forward dynamics: (q, v, t, u) -> (vdot, lam) from the equations and a saddle solver,
and the one physics step that `simulate` and the environments share.

The state of a simulation is y = (q, v, w): coordinates q (n_coords,), velocity
coordinates v (n_vel,) and the work w (J) done by non-conservative forces since t0. Its
vector field is (qdot(q, v), vdot, power); for planar mechanisms qdot = v.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from .. import status as st
from ..formulations.banded import wants_sparse
from ..formulations.schur import SchurCholesky
from ..formulations.tree import for_mechanism
from .equations import ConstraintTerms, constraint_terms, generalized_forces, mass_matrix
from .stabilize import NoStabilization

__all__ = ["Accelerations", "accelerations", "external_power", "MechanismTerm", "Record", "step", "finish_step",
           "StepState", "init_state", "attempt", "is_stateful", "records"]


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
    Concrete inputs are checked (`jaxmbs.core.validate`: ValueError naming the item); traced ones
    get the shape checks, and non-finite results set status NONFINITE (a NaN parameter or
    state under jit / vmap).
    """
    from .validate import check_call

    check_call(mech, params, "accelerations", q=q, v=v, t=t, u=u, require=("q", "v"))
    acc = _accelerations(mech, params, q, v, t, u, solver=solver, stabilizer=stabilizer)
    finite = jnp.all(jnp.isfinite(acc.qdd)) & jnp.all(jnp.isfinite(acc.lam))
    return acc._replace(status=acc.status | jnp.where(finite, st.OK, st.NONFINITE).astype(jnp.int32))


def _accelerations(mech, params, q, v, t, u=None, *, solver=SchurCholesky(),
                   stabilizer=NoStabilization(), check=True) -> Accelerations:
    """`accelerations` without the input checks (the engine's inner loop). check: whether
    the solver judges its dropped rows here (bool or traced scalar bool; False at the
    trial states of a step's later stages, see `formulations.schur.checked_rows`)."""
    solver = for_mechanism(solver, mech)
    terms = constraint_terms(mech, params, q, v, t, wants_sparse(solver, mech))
    Q, V, P = generalized_forces(mech, params, q, v, t, u)
    M = mass_matrix(mech, params, q)
    gamma = stabilizer.gamma(terms, v)
    qdd, lam, status = solver.solve(M, terms.jac, Q, gamma, check=check)
    power = external_power(P, lam, terms)
    return Accelerations(qdd, lam, power, status, terms, Q, V)


def external_power(P, lam, terms):
    """The power (W) that changes the mechanical energy T + V: P of the non-conservative
    forces plus that of the constraint forces -jac^T lam on the constraint manifold,
    lam . Phi_t (jac v = -Phi_t there: the drivers' power; zero for scleronomic rows).
    Ideal constraints do no work, so a velocity that violates them (an integration
    error) is not paid for by work and shows in the energy balance."""
    if lam.shape[0] == 0:
        return P
    return P + lam @ terms.phit


class Record(NamedTuple):
    """What `simulate` saves at a state besides (q, v, w), read off the vector field's
    evaluation there (`MechanismTerm.record`): lam (m,) multipliers (N, N m);
    constraint_error () max|Phi|; velocity_error () max|Phi_q v + Phi_t|; kinetic () and
    potential () energy (J)."""

    lam: jax.Array
    constraint_error: jax.Array
    velocity_error: jax.Array
    kinetic: jax.Array
    potential: jax.Array


def record_of(mech, params, q, v, acc: Accelerations) -> Record:
    """The Record at (q, v) from the Accelerations computed there."""
    terms = acc.terms
    # (no rows: the JVP of a max over an empty array is NaN, so return 0 directly)
    zero = jnp.zeros((), q.dtype)
    cerr = jnp.max(jnp.abs(terms.phi)) if terms.phi.shape[0] else zero
    verr = jnp.max(jnp.abs(terms.jac @ v + terms.phit)) if terms.jac.shape[0] else zero
    kinetic = 0.5 * v @ mass_matrix(mech, params, q).apply(v)
    dtype = q.dtype
    return Record(*(jnp.asarray(x, dtype) for x in (acc.lam, cerr, verr, kinetic, acc.potential)))


def record_zeros(mech, dtype, *batch) -> Record:
    """A Record of zeros of `mech`, with trailing batch axes `batch` on every field
    (lam (m, *batch), the others (*batch,))."""
    z = jnp.zeros(batch, dtype)
    return Record(jnp.zeros((mech.n_constraints,) + batch, dtype), z, z, z, z)


def records(integrator) -> bool:
    """Whether a fixed step of `integrator` evaluates the vector field at the step's start
    state and hands out the `Record` there (`advance(..., record=True)`), so that
    `simulate` reads its save points' multipliers, errors and energies off the next step
    instead of solving there once more."""
    return bool(getattr(integrator, "records", False))


class MechanismTerm(NamedTuple):
    """The vector field of a mechanism for the integrators (diffrax's 'term').

    vf(t, y, check=True) -> ((qdot, vdot, power), status) for y = (q, v, w); check: judge
    the solver's dropped rows at this state (the integrators pass stage == 0: a step's
    later stages are trial states off the constraint manifold). qdot(q, v) and
    retract(q, dv) are the node families' kinematic maps. u(t) -> controls.
    """

    mech: Any
    params: Any
    u: Callable
    solver: Any
    stabilizer: Any
    stage_check = True  # vf takes check= (see jaxmbs.integrators._stage_vf)

    def _acc(self, t, y, check):
        q, v, _ = y
        return _accelerations(self.mech, self.params, q, v, t, self.u(t), solver=self.solver,
                              stabilizer=self.stabilizer, check=check)

    def vf(self, t, y, check=True):
        acc = self._acc(t, y, check)
        return (self.mech.qdot(y[0], y[1]), acc.qdd, acc.power), acc.status

    def vf_acc(self, t, y, check=True):
        """vf(t, y, check) and the Accelerations it solved: (dy, status, acc); with
        `record(y, acc)`, the Record at (t, y) for the integrators that hand it out."""
        acc = self._acc(t, y, check)
        return (self.mech.qdot(y[0], y[1]), acc.qdd, acc.power), acc.status, acc

    def record(self, y, acc):
        """The `Record` at y = (q, v, w) from the Accelerations `vf_acc` solved there."""
        return record_of(self.mech, self.params, y[0], y[1], acc)

    def record_zeros(self, dtype):
        """A Record of zeros (the shapes `record` returns)."""
        return record_zeros(self.mech, dtype)

    def qdot(self, q, v):
        return self.mech.qdot(q, v)

    def retract(self, q, dv):
        return self.mech.retract(q, dv)

    # --- the pieces of the equations, for integrators that work on the DAE itself
    # (generalized-alpha, RATTLE: `jaxmbs.integrators`) rather than on vf -------------
    def mass(self, q):
        """The mass operator M(q) (n_vel x n_vel; apply / solve / dense)."""
        return mass_matrix(self.mech, self.params, q)

    def forces(self, t, q, v):
        """Q(q, v, t, u(t)) (n_vel,), N and N m: every applied and inertial force."""
        return generalized_forces(self.mech, self.params, q, v, t, self.u(t))[0]

    def constraints(self, t, q, v):
        """ConstraintTerms (phi, dense jac (m, n_vel), phit, gamma) at (q, v, t)."""
        return constraint_terms(self.mech, self.params, q, v, t)


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


class StepState(NamedTuple):
    """What a step carries to the next one: the integrator's state (None for one-step
    methods; generalized-alpha's accelerations) and the solver's kept plan (None for
    stateless solvers; CoordinatePartitioning's partition)."""

    integrator: Any = None
    solver: Any = None


def is_stateful(integrator, solver=None) -> bool:
    """Whether a step with these options carries state between steps (so callers that
    restart every step, like the element-wise batch path, cannot run them exactly)."""
    return bool(getattr(integrator, "stateful", False) or has_plan(solver))


def has_plan(solver) -> bool:
    """Whether `solver` keeps a plan between steps (`init_plan` / `update_plan` / `bind`);
    a solver may switch it off with a false `plans` attribute."""
    return hasattr(solver, "init_plan") and bool(getattr(solver, "plans", True))


def _u_fn(u):
    return u if callable(u) else (lambda _t: u)


def _bound(solver, plan):
    return solver if plan is None else solver.bind(plan)


def init_state(mech, params, t, y, h, u, *, integrator, stabilizer, solver) -> StepState:
    """The StepState at (t, y = (q, v, w)) before the first step of size h (s)."""
    term = MechanismTerm(mech, params, _u_fn(u), solver, stabilizer)
    plan = None
    if has_plan(solver):
        plan = solver.init_plan(constraint_terms(mech, params, y[0], y[1], t).jac)
    return StepState(integrator.init(term, t, y, h), plan)


def _next_plan(mech, params, t1, y, solver, plan):
    if plan is None:
        return None
    return solver.update_plan(plan, constraint_terms(mech, params, y[0], y[1], t1).jac)


def attempt(mech, params, t, y, h, u, *, integrator, stabilizer, solver, state):
    """One attempt of an adaptive integrator from (t, y) with step h (no finishing):
    returns (y_new, error norm (accept if <= 1), integrator state to keep if accepted,
    status). One-step methods implement attempt(term, t, y, h); stateful ones
    attempt(term, t, y, h, state) -> (y_new, err, state_new, status)."""
    term = MechanismTerm(mech, params, _u_fn(u), _bound(solver, state.solver), stabilizer)
    if getattr(integrator, "stateful", False):
        return integrator.attempt(term, t, y, h, state.integrator)
    y_new, err, s = integrator.attempt(term, t, y, h)
    return y_new, err, state.integrator, s


def accept(mech, params, t1, y, y_new, s, status, istate, state, *, stabilizer, solver):
    """Finish an accepted adaptive attempt (`finish_step`) and advance the StepState
    (integrator state istate, the solver's plan checked at the new state)."""
    y_out, status = finish_step(mech, params, t1, y, y_new, s, status, stabilizer=stabilizer,
                                solver=_bound(solver, state.solver))
    return y_out, StepState(istate, _next_plan(mech, params, t1, y_out, solver, state.solver)), status


def step(mech, params, t, y, h, u, *, integrator, stabilizer, solver, state=None,
         status=None, record=False):
    """One fixed step of the physics from (t, y = (q, v, w)) to t + h.

    u: controls, an (n_controls,) array held over the step or a function u(t). The
    integrator step, renormalisation, stabilisation and the non-finite freeze of
    `finish_step`. state: the StepState of the previous step, or None to start afresh
    (`init_state`: a stateful integrator such as generalized-alpha then starts from the
    consistent accelerations at t; the environments, which pass None, restart it every
    control period). Returns (y_new, StepState, status): the one step used by `simulate`
    and the environments. record=True (integrators with `records(integrator)`): returns
    (y_new, StepState, status, Record at (t, y)), the Record read off the step's first
    evaluation of the vector field.
    """
    if record and not records(integrator):
        raise ValueError(f"{type(integrator).__name__} does not hand out the Record at its "
                         "start state (step(record=True)); use RK4, Euler or SemiImplicitEuler")
    if state is None:
        state = init_state(mech, params, t, y, h, u, integrator=integrator,
                           stabilizer=stabilizer, solver=solver)
    bound = _bound(solver, state.solver)
    term = MechanismTerm(mech, params, _u_fn(u), bound, stabilizer)
    if record:
        y_new, istate, s, rec = integrator.advance(term, t, y, h, state.integrator, record=True)
    else:
        y_new, istate, s = integrator.advance(term, t, y, h, state.integrator)
    status = jnp.zeros((), jnp.int32) if status is None else status
    y_out, status = finish_step(mech, params, t + h, y, y_new, s, status,
                                stabilizer=stabilizer, solver=bound)
    plan = _next_plan(mech, params, t + h, y_out, solver, state.solver)
    if record:
        return y_out, StepState(istate, plan), status, rec
    return y_out, StepState(istate, plan), status
