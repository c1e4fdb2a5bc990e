"""simulate(): the jitted forward-dynamics entry point, driven by `lax.scan`.

`jaxmbs.simulate` is this module *and* the function: the module is callable, and calling
it calls `simulate` (issue 21). So `jaxmbs.simulate(mech, params, q0, v0, t_span, dt)`
runs a simulation, `import jaxmbs.simulate` gives this module (not the function that a
re-export would shadow it with), and `from jaxmbs.simulate import simulate, _simulate`
give the functions. `inspect.signature(jaxmbs.simulate)` is the function's.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import types
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import status as st
from .banded import wants_sparse
from .dynamics import Record, init_state, is_stateful, record_of, record_zeros, records
from .dynamics import _accelerations as accelerations  # (the engine's, without input checks)
from .dynamics import accept as dyn_accept
from .dynamics import attempt as dyn_attempt
from .dynamics import step as physics_step
from .equations import constraint_terms, prepare_params
from .integrators import RK4, peeled_first_stage
from .saddle import SchurCholesky
from .stabilize import Projection

__all__ = ["Trajectory", "simulate", "simulate_batch", "batch_vectorization", "ENERGY_TOL",
           "energy_balance_error"]

ENERGY_TOL = 0.05  # default energy_tol of simulate: ENERGY status above this relative error


def energy_balance_error(kinetic, potential, work):
    """Relative error of the energy balance over save points (last axis):
    max |E(t) - E(t0)| / (max T + (max V - min V) + max |W|), E = T + V - W.

    The denominator is the energy the motion exchanges (kinetic energy, the range of the
    potential, the work of non-conservative forces and drivers), so the measure does not
    depend on the zero of the potential. A stable, accurate integration gives round-off to
    truncation-error levels (1e-12 to 1e-6); an integration beyond its stability limit (a
    stiff spring or contact with too large a step) gives O(0.1 - 1). Returns (error,
    floor): floor = sqrt(eps) (max T + max |V| + max |W|) / denominator is the round-off
    level below which no error is reported (a mechanism at rest)."""
    E = kinetic + potential - work
    dE = jnp.max(jnp.abs(E - E[..., :1]), -1)
    scale = (jnp.max(kinetic, -1) + jnp.max(potential, -1) - jnp.min(potential, -1)
             + jnp.max(jnp.abs(work), -1))
    size = jnp.max(jnp.abs(kinetic), -1) + jnp.max(jnp.abs(potential), -1) + jnp.max(jnp.abs(work), -1)
    eps = jnp.finfo(E.dtype).eps
    tiny = jnp.finfo(E.dtype).tiny
    return dE / jnp.maximum(scale, tiny), jnp.sqrt(eps) * size / jnp.maximum(scale, tiny)


class Trajectory(NamedTuple):
    """Saved samples of a simulation (leading axis: save points; batch axes first if vmapped).

    t (s,) s; q (s, n_coords), v (s, n_vel); lam (s, m) multipliers; constraint_error (s,) = max|Phi|;
    velocity_error (s,) = max|Phi_q v + Phi_t| (nonholonomic rows A v - b included: for a
    knife edge this is its only residual, constraint_error does not see it); kinetic, potential (s,) J; work (s,) J done
    on the system by non-conservative forces, drivers and constraint forces since t0, so
    kinetic + potential - work is constant up to integration error; status () int32 bit
    flags (see jaxmbs.status; ENERGY when the energy balance fails, see
    `energy_balance_error`); n_steps () steps taken (accepted, for adaptive);
    n_rejected () rejected adaptive steps.
    """

    t: jax.Array
    q: jax.Array
    v: jax.Array
    lam: jax.Array
    constraint_error: jax.Array
    velocity_error: jax.Array
    kinetic: jax.Array
    potential: jax.Array
    work: jax.Array
    status: jax.Array
    n_steps: jax.Array
    n_rejected: jax.Array

    @property
    def energy(self):
        """kinetic + potential - work (J): constant for an exact solution."""
        return self.kinetic + self.potential - self.work

    def energy_drift(self):
        """max |E(t) - E(t0)| / max(|E(t0)|, max kinetic) over the save points."""
        E = self.energy
        ref = jnp.maximum(jnp.abs(E[..., :1]), jnp.max(self.kinetic, -1, keepdims=True))
        return jnp.max(jnp.abs(E - E[..., :1]), -1) / ref[..., 0]

    def energy_error(self):
        """The relative energy-balance error that the ENERGY status flag tests
        (`energy_balance_error`: max |E - E(t0)| over the energy exchanged)."""
        return energy_balance_error(self.kinetic, self.potential, self.work)[0]


def _is_tracer(*xs):
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(xs))


def _tol_for(tol, dtype):
    """The initial-consistency threshold actually applied: tol, but at least 1000 ulps of 1
    in the state's dtype (float32: 1.2e-4; float64: 2.2e-13, so the default 1e-6 holds). A
    threshold below working precision would refuse states that are consistent to round-off,
    e.g. the last state of a float32 run continued in chunks."""
    eps = float(jnp.finfo(dtype).eps) if jnp.issubdtype(dtype, jnp.floating) else 0.0
    return max(float(tol), 1000.0 * eps)


def _residuals_one(params, q, v, t0, *, mech):
    """(Phi(q, t0), Phi_q v + Phi_t, all inputs finite) of one member."""
    terms = constraint_terms(mech, params, q, v, t0)
    fin = jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(v))
    for leaf in jax.tree_util.tree_leaves(params):
        fin = fin & jnp.all(jnp.isfinite(leaf))
    return terms.phi, terms.jac @ v + terms.phit, fin


# one compiled program per mechanism (and batch axes), shared by every call of the initial
# checks: t0 is traced, so the chunks of a long run do not compile again
_residuals = functools.partial(jax.jit, static_argnames=("mech",))(_residuals_one)


@functools.partial(jax.jit, static_argnames=("mech", "paxes", "state_axis"))
def _batch_residuals(params, q0, v0, t0, *, mech, paxes, state_axis):
    """_residuals of every member of a batch (params batched along the axes paxes, a tuple
    of 0 / None per params leaf; the states along state_axis)."""
    in_axes = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(params), paxes)
    return jax.vmap(lambda p, q, v: _residuals_one(p, q, v, t0, mech=mech),
                    in_axes=(in_axes, state_axis, state_axis))(params, q0, v0)


def _check_initial_state(mech, params, q0, v0, t0, tol):
    q0, v0 = np.asarray(q0), np.asarray(v0)
    if not (np.all(np.isfinite(q0)) and np.all(np.isfinite(v0))):
        raise ValueError("initial state has non-finite entries in q0 or v0")
    if mech.n_constraints == 0:
        return
    tol = _tol_for(tol, q0.dtype)
    phi, vel, _ = _residuals(params, jnp.asarray(q0), jnp.asarray(v0), t0, mech=mech)
    phi, vel = np.asarray(phi), np.asarray(vel)
    names = mech.constraint_names()
    for what, r in (("position", phi), ("velocity", vel)):
        bad = np.nonzero(np.abs(r) > tol)[0]
        if bad.size:
            worst = ", ".join(f"{names[i]} = {r[i]:.3g}" for i in bad[np.argsort(-np.abs(r[bad]))][:4])
            raise ValueError(
                f"inconsistent initial state: {what} constraint residuals above {tol:g}: {worst}. "
                "Call jaxmbs.assemble(mech, params, q0, v0) first to obtain a consistent state, "
                "or pass check_initial=False to simulate from it anyway."
            )


def _time_grid(t_span, dt, save_every):
    """(t0, t1, dt, n_steps) after checking that the span is a whole number of steps."""
    t0, t1 = float(t_span[0]), float(t_span[1])
    dt = float(dt)
    if not (dt > 0 and t1 > t0):
        raise ValueError(f"need t1 > t0 and dt > 0, got t_span={t_span}, dt={dt}")
    n_steps = int(round((t1 - t0) / dt))
    if abs(n_steps * dt - (t1 - t0)) > 1e-9 * max(1.0, abs(t1 - t0)):
        raise ValueError(f"t1 - t0 = {t1 - t0} is not a whole number of steps dt = {dt}; "
                         f"adjust dt (e.g. {(t1 - t0) / max(n_steps, 1):.6g})")
    if save_every < 1 or n_steps % save_every:
        raise ValueError(f"save_every={save_every} must divide the number of steps {n_steps}")
    return t0, t1, dt, n_steps


def simulate(mech, params, q0, v0, t_span, dt, *, integrator=RK4(), stabilizer=Projection(),
             solver=SchurCholesky(), controls=None, save_every: int = 1,
             drift_tol: float = 1e-6, energy_tol: float | None = ENERGY_TOL,
             check_initial: bool = True, initial_tol: float = 1e-6, t_offset=None,
             checkpoint=False) -> Trajectory:
    """Forward dynamics from (q0, v0) over t_span = (t0, t1) (s).

    Args:
      mech, params: from `Model.build()` (params may be traced / batched under vmap).
      q0 (n_coords,), v0 (n_vel,): consistent initial coordinates and velocities (see
        `assemble`).
      t_span: (t0, t1) in s, Python floats. dt: step (fixed-step integrators) or first
        step (adaptive), s; t1 - t0 must be a whole number of dt.
      integrator: RK4() (default), SemiImplicitEuler(), Euler(), DormandPrince5(rtol, atol,
        max_steps), DormandPrince8() (8th order, fixed step) or ExplicitRK(a, b, c, order)
        (any explicit tableau). Adaptive steps are clipped to land on the save points.
      stabilizer: Projection() (default: one M-weighted Newton projection of q and one of v
        after every step), Baumgarte(alpha, beta=None -> alpha) in 1/s, or NoStabilization().
      solver: SchurCholesky() (default) or DenseLU().
      controls: None, an array (n_steps, n_controls) held constant over each step, or a
        JAX function u(t) -> (n_controls,).
      save_every: save every k-th step of the dt grid (t0 is always saved).
      drift_tol: constraint residual above which the DRIFT status flag is set.
      energy_tol: relative energy-balance error above which the ENERGY status flag is set
        (default 0.05): kinetic + potential - work must stay constant, and its change
        over the save points, relative to the energy the motion exchanges, is
        `energy_balance_error` (Trajectory.energy_error()). It catches integrations
        beyond their stability limit (e.g. RK4 with dt * sqrt(k / m) > 2.8 for a spring
        of stiffness k), whose states can stay bounded and finite. It is checked at the
        save points only. None: no check.
      check_initial: when the inputs are concrete (not traced), raise ValueError if the
        initial state violates the constraints by more than initial_tol.
      t_offset: optional scalar (may be traced) added to t_span: simulations of the same
        length starting at different times then share one compilation.
      checkpoint: reverse-mode memory policy. False (default) stores every step's
        residuals; True wraps each save interval (save_every steps) in `jax.checkpoint`,
        so reverse mode stores only the saved states and recomputes the steps between
        them (memory ~ number of save points, about one extra forward pass of time); or a
        `jax.checkpoint_policies` policy applied to each save interval.
    Returns a `Trajectory`. Under `jax.vmap` over params / q0 / v0 / controls each member
    gets its own status; a failing member never affects the others.
    """
    from . import checks

    checks.check_mech(mech, "simulate")
    t0, t1, dt, n_steps = _time_grid(t_span, dt, save_every)
    n, nv = mech.n_coords, mech.n_vel
    for x, name in ((q0, "q0"), (v0, "v0")):
        if isinstance(x, (str, bytes, bool)) or x is None:
            raise ValueError(f"simulate: {name} must be an array of numbers, got {x!r}")
    q0, v0 = jnp.asarray(q0), jnp.asarray(v0)
    if q0.shape != (n,) or v0.shape != (nv,):
        want = f"q0 and v0 must have shape ({n},)" if n == nv else \
            f"q0 must have shape ({n},) and v0 shape ({nv},)"
        raise ValueError(f"{want} for this mechanism ({', '.join(mech.coordinate_names())}); "
                         f"got {q0.shape}, {v0.shape}"
                         + ("; for a batch of states use simulate_batch" if q0.ndim > 1 else ""))
    if controls is not None and not callable(controls):
        controls = jnp.asarray(controls, q0.dtype)
        if controls.ndim != 2 or controls.shape[0] != n_steps:
            raise ValueError(f"controls array must have shape (n_steps={n_steps}, n_controls="
                             f"{mech.n_controls}), got {controls.shape}")
    checks.check_state(mech, q0, v0, names=("q0", "v0"), where="simulate")
    _check_options(integrator, stabilizer, solver, save_every, drift_tol, initial_tol, "simulate")
    energy_tol = _check_energy_tol(energy_tol)
    if check_initial and not _is_tracer(params, q0, v0, t_offset):
        checks.check_params(mech, params, where="simulate: params")
        _check_initial_state(mech, params, q0, v0, t0 + (0.0 if t_offset is None else float(t_offset)),
                             initial_tol)
        _check_solver_rows(mech, params, q0, t0, solver, "simulate")
    ctrl_fn = controls if callable(controls) else None
    ctrl_arr = None if callable(controls) else controls
    t_start = jnp.asarray(t0, q0.dtype) + (0.0 if t_offset is None else jnp.asarray(t_offset, q0.dtype))
    return _simulate(mech, params, q0, v0, ctrl_arr, t_start, dt=dt, n_steps=n_steps,
                     save_every=save_every, integrator=integrator, stabilizer=stabilizer,
                     solver=solver, ctrl_fn=ctrl_fn, drift_tol=drift_tol, checkpoint=checkpoint,
                     energy_tol=energy_tol)


def _check_options(integrator, stabilizer, solver, save_every, drift_tol, initial_tol, where):
    """Type checks of simulate's option objects and numbers (ValueError naming them)."""
    for name, obj, attrs, kinds in (
            ("integrator", integrator, ("adaptive",), "jaxmbs.RK4(), DormandPrince8(), ExplicitRK(...), SemiImplicitEuler(), Euler() or DormandPrince5()"),
            ("stabilizer", stabilizer, ("gamma", "post_step"), "jaxmbs.Projection(), Baumgarte(alpha) or NoStabilization()"),
            ("solver", solver, ("solve",), "jaxmbs.SchurCholesky() or DenseLU()")):
        if not all(hasattr(obj, a) for a in attrs):
            raise ValueError(f"{where}: {name} must be one of {kinds}, got {obj!r}")
    for name, x in (("drift_tol", drift_tol), ("initial_tol", initial_tol)):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)) \
                or not np.isfinite(x) or x < 0:
            raise ValueError(f"{where}: {name} must be a finite number >= 0, got {x!r}")


def _check_solver_rows(mech, params, q0, t0, solver, where):
    """DenseLU solves the KKT matrix by LU, which is singular with redundant rows (the run
    would freeze at t0 with NONFINITE): refuse them for concrete inputs, naming the rows."""
    from .saddle import DenseLU

    if not isinstance(solver, DenseLU) or mech.n_constraints == 0:
        return
    from .analysis import constraint_report

    rep = constraint_report(mech, params, q0, t0, check=False)
    if rep["redundant"]:
        raise ValueError(
            f"{where}: the constraint rows {', '.join(rep['redundant'])} are redundant (they depend "
            f"on other rows: rank {rep['rank']} of {rep['n_constraints']}); DenseLU factorises the "
            "full KKT matrix, which is then singular. Use solver=jaxmbs.SchurCholesky() (the "
            "default: it drops redundant rows, their multipliers are 0), or remove the redundant "
            "joints")


def _check_energy_tol(energy_tol):
    """energy_tol as a float (or None), or ValueError."""
    if energy_tol is None:
        return None
    if isinstance(energy_tol, (bool, np.bool_)) or not isinstance(energy_tol, (int, float, np.floating, np.integer)) \
            or not np.isfinite(energy_tol) or energy_tol <= 0:
        raise ValueError(f"energy_tol must be a positive finite number (relative energy-balance "
                         f"error) or None, got {energy_tol!r}")
    return float(energy_tol)


def check_batch_inputs(mech, params, q0, v0, t_span, *, params_axis=0, state_axis=0,
                       t_offset=None, options=None, consistency=True):
    """The checks of `simulate_batch` before anything is traced (issue 21): mech; params_axis
    (0, None, or a pytree prefix of params of 0 / None); q0, v0 of shapes (batch, n_coords),
    (batch, n_vel) (state_axis=0) or (n_coords,), (n_vel,) (None), real numbers; one batch
    size for the batched params leaves and the states (ValueError naming params / q0 and
    params_axis); the option objects; and, with check_initial (default) and concrete
    inputs, the initial consistency that `simulate` checks, for every member whose inputs
    are finite (ValueError naming the member and the rows). Non-finite or invalid parameter
    values of a member are not refused: in a batch they are data, and that member's run
    ends with a status flag (see `simulate_batch`). consistency=False leaves the initial
    consistency to the caller (`simulate_batch` judges it from the run's first save point:
    one compilation less on a first call, `_check_initial_records`)."""
    from . import checks

    where = "simulate_batch"
    checks.check_mech(mech, where)
    from .mechanism import Params

    if not isinstance(params, Params):
        raise ValueError(f"{where}: params must be the Params of build() (batched with "
                         f"jax.vmap(lambda x: mech.replace(params, {{...}}))(values)), got "
                         f"{type(params).__name__}")
    opts = dict(options or {})
    _check_options(opts.get("integrator", RK4()), opts.get("stabilizer", Projection()),
                   opts.get("solver", SchurCholesky()), opts.get("save_every", 1),
                   opts.get("drift_tol", 1e-6), opts.get("initial_tol", 1e-6), where)
    if "energy_tol" in opts:
        _check_energy_tol(opts["energy_tol"])
    ci = opts.get("check_initial", True)
    if not isinstance(ci, (bool, np.bool_)):
        raise ValueError(f"{where}: check_initial must be True or False, got {ci!r}")
    # params_axis: 0, None or a pytree prefix of 0 / None
    try:
        axes = _axes_tree(params_axis, params)
        ax_leaves = jax.tree_util.tree_leaves(axes, is_leaf=lambda a: a is None)
    except (ValueError, TypeError):
        raise ValueError(f"{where}: params_axis must be 0, None or a pytree prefix of params "
                         f"with 0 / None leaves, got {params_axis!r}") from None
    if any(a not in (0, None) or isinstance(a, bool) for a in ax_leaves):
        raise ValueError(f"{where}: params_axis must be 0 (batched along the first axis) or None "
                         f"(shared), got {params_axis!r}")
    batched = state_axis == 0
    # (a non-finite member is data: its run ends NONFINITE, the others are unaffected)
    checks.check_state(mech, q0, v0, batch=batched, names=("q0", "v0"), where=where, finite=False)
    sizes = {}
    if batched:
        sizes["q0"] = int(np.shape(q0)[0])
        if np.shape(v0)[0] != sizes["q0"]:
            raise ValueError(f"{where}: q0 and v0 need the same batch size, got {np.shape(q0)} and "
                             f"{np.shape(v0)}")
    pleaves = jax.tree_util.tree_leaves_with_path(params)
    gax = axes.gravity
    if gax == 0 and np.ndim(params.gravity) < 2:
        raise ValueError(
            f"{where}: params is not batched (params.gravity has shape {np.shape(params.gravity)}), "
            f"but params_axis={params_axis!r} batches it along the first axis: for one set of "
            "params shared by a batch of states pass params_axis=None; for one set per member "
            "batch them with jax.vmap(lambda x: mech.replace(params, {...}))(values)")
    for (path, leaf), ax in zip(pleaves, jax.tree_util.tree_leaves(axes, is_leaf=lambda a: a is None)):
        if ax == 0:
            if np.ndim(leaf) == 0:
                raise ValueError(f"{where}: params{jax.tree_util.keystr(path)} is a scalar, but "
                                 "params_axis=0 batches every params leaf along its first axis; "
                                 "pass params_axis=None to share one set of params")
            sizes.setdefault(f"params{jax.tree_util.keystr(path)}", int(np.shape(leaf)[0]))
    if not sizes:
        raise ValueError(f"{where}: nothing is batched: give params_axis=0 (params batched with "
                         "jax.vmap) or state_axis=0 (q0, v0 of shape (batch, n))")
    if len(set(sizes.values())) > 1:
        qb = sizes.get("q0")
        odd = [(k, b) for k, b in sizes.items() if k != "q0" and b != (qb if qb is not None else b)]
        if qb is None:
            first = next(iter(sizes.values()))
            odd = [(k, b) for k, b in sizes.items() if b != first]
        k, b = odd[0]
        raise ValueError(
            f"{where}: the batch sizes differ: q0 has {qb if qb is not None else '-'} rows, "
            f"{k} has {b} along its first axis (params_axis={params_axis!r}). With "
            "params_axis=0 every params leaf needs the batch size as its first axis (batch "
            "params with jax.vmap(lambda x: mech.replace(params, {...}))(values)); for one set "
            "of params shared by a batch of states pass params_axis=None")
    if consistency and ci and not _is_tracer(params, q0, v0, t_offset):
        t0 = float(t_span[0]) + (0.0 if t_offset is None else float(np.asarray(t_offset)))
        _check_batch_consistency(mech, params, q0, v0, t0, axes, state_axis,
                                 opts.get("initial_tol", 1e-6), opts.get("solver", SchurCholesky()))


def _check_batch_consistency(mech, params, q0, v0, t0, axes, state_axis, tol, solver):
    """ValueError if a member with finite inputs violates the constraints at t0 by more
    than tol (position or velocity level), naming the member and the rows."""
    if mech.n_constraints == 0:
        return
    q0, v0 = jnp.asarray(q0), jnp.asarray(v0)
    paxes = tuple(jax.tree_util.tree_leaves(axes, is_leaf=lambda a: a is None))
    res = _batch_residuals(params, q0, v0, t0, mech=mech, paxes=paxes, state_axis=state_axis)
    _raise_if_inconsistent(mech, params, q0, t0, paxes, state_axis, tol, solver, res)


def _raise_if_inconsistent(mech, params, q0, t0, paxes, state_axis, tol, solver, res):
    """`_check_batch_consistency`'s verdict on the residuals res = (phi, vel, fin) of
    `_batch_residuals`: ValueError naming the first bad member and its worst rows."""
    treedef = jax.tree_util.tree_structure(params)
    tol = _tol_for(tol, jnp.result_type(q0))
    phi, vel, fin = (np.asarray(r) for r in res)
    names = mech.constraint_names()
    for what, r in (("position", phi), ("velocity", vel)):
        err = np.where(fin[:, None], np.abs(r), 0.0)
        bad = np.nonzero(np.max(err, axis=1) > tol)[0]
        if bad.size:
            b = int(bad[0])
            worst = ", ".join(f"{names[i]} = {r[b, i]:.3g}" for i in np.argsort(-err[b])[:4] if err[b, i] > tol)
            raise ValueError(
                f"simulate_batch: inconsistent initial state of batch member {b} "
                f"({bad.size} of {len(fin)} members): {what} constraint residuals above {tol:g}: "
                f"{worst}. Assemble every member first, e.g. jax.vmap(lambda p, q, v: "
                "jaxmbs.assemble(mech, p, q, v))(params, q0, v0), or pass check_initial=False "
                "to simulate from it anyway")
    from .saddle import DenseLU
    ok = np.nonzero(fin)[0]
    if ok.size and isinstance(solver, DenseLU):  # (_check_solver_rows judges DenseLU only:
        # taking member b out of device arrays compiles small gathers, 0.1 s on a first call)
        b = int(ok[0])
        pb = jax.tree_util.tree_map(lambda a, x: x[b] if a == 0 else x,
                                    jax.tree_util.tree_unflatten(treedef, paxes), params,
                                    is_leaf=lambda a: a is None)
        qb = q0[b] if state_axis == 0 else q0
        _check_solver_rows(mech, pb, qb, t0, solver, "simulate_batch")


def _controls_fn(ctrl_fn, ctrl_arr, n_steps, nu, dtype):
    """u_at(t, k): the controls at time t of step k."""
    def u_at(t, k):
        if ctrl_fn is not None:
            return jnp.asarray(ctrl_fn(t), dtype).reshape(-1)
        if ctrl_arr is not None:
            return ctrl_arr[jnp.clip(k, 0, n_steps - 1)]
        return jnp.zeros((nu,), dtype)
    return u_at


def _fixed_step(mech, params, t0, u_at, *, dt, integrator, stabilizer, solver, record=False):
    """one(carry, k) -> (carry, rec): step k of `jaxmbs.dynamics.step` (the physics step
    shared with the environments) from carry (y, status) or (y, status, StepState); rec is
    the Record at the step's start state with record=True (`dynamics.records`), else None."""

    def one(carry, k):
        # carry (y, status), or (y, status, StepState) where the caller keeps the step
        # state (integrator state, kept solver plan) between steps (issue 17)
        y, status, *state = carry
        t = t0 + k * dt
        # (an array of controls is indexed by the step k: constant over the step)
        y, new_state, status, *rec = physics_step(
            mech, params, t, y, dt, lambda tt: u_at(tt, k), integrator=integrator,
            stabilizer=stabilizer, solver=solver, status=status,
            state=state[0] if state else None, record=record)
        return ((y, status, new_state) if state else (y, status)), (rec[0] if rec else None)

    return one


def _fixed_chunk(mech, params, t0, u_at, *, dt, save_every, integrator, stabilizer, solver):
    """chunk(((q, v, w), status), c) -> (carry, y): save interval c (save_every fixed steps)
    of `_fixed_step`."""
    one = _fixed_step(mech, params, t0, u_at, dt=dt, integrator=integrator,
                      stabilizer=stabilizer, solver=solver)

    def chunk(carry, c):
        ks = c * save_every + jnp.arange(save_every)
        carry, _ = jax.lax.scan(one, carry, ks)
        return carry, carry[0]

    return chunk


def _record_at(mech, params, q, v, t, u, solver, stabilizer):
    """The Record at one saved state, solved for there (`dynamics.record_of`)."""
    acc = accelerations(mech, params, q, v, t, u, solver=solver, stabilizer=stabilizer)
    return record_of(mech, params, q, v, acc)


def _diagnostics(mech, params, q0, v0, ys, t0, u_at, *, dt, n_save, save_every, solver,
                 stabilizer, status, drift_tol, n_taken, n_rej, energy_tol=ENERGY_TOL,
                 recs=None):
    """The Trajectory of one member from its saved states ys = (qs, vs, ws) (n_save, ...)
    and, where the loop read them off its steps, the Records at the n_save + 1 save points
    (recs, `jaxmbs.dynamics.Record` with a leading save-point axis); else they are solved
    for here."""
    dtype = q0.dtype
    qs = jnp.concatenate([q0[None], ys[0]])
    vs = jnp.concatenate([v0[None], ys[1]])
    ws = jnp.concatenate([jnp.zeros((1,), dtype), ys[2]])
    ks = jnp.arange(n_save + 1) * save_every
    ts = t0 + dt * ks.astype(dtype)

    def diag(q, v, t, k):
        return _record_at(mech, params, q, v, t, u_at(t, k), solver, stabilizer)

    lam, cerr, verr, T, V = jax.vmap(diag)(qs, vs, ts, ks) if recs is None else recs
    status = status | jnp.where(jnp.max(cerr) > drift_tol, st.DRIFT, 0).astype(jnp.int32)
    from .checks import params_status

    status = status | params_status(mech, params)  # (traced bad parameters: PARAMS)
    if energy_tol is not None:
        err, floor = energy_balance_error(T, V, ws)
        status = status | jnp.where(err > energy_tol + floor, st.ENERGY, 0).astype(jnp.int32)
    return Trajectory(ts, qs, vs, lam, cerr, verr, T, V, ws, status, n_taken, n_rej)


class _NextH:
    """The step-size controller of an integrator that adapts h itself (next_h(h, err))."""

    def __init__(self, integrator):
        self.integrator = integrator

    def init(self, dtype):
        return None

    def adapt(self, h, err, accepted, state, k):
        return self.integrator.next_h(h, err), state


@functools.partial(jax.jit, static_argnames=("dt", "n_steps", "save_every", "integrator",
                                             "stabilizer", "solver", "ctrl_fn", "drift_tol",
                                             "checkpoint", "energy_tol"))
def _simulate(mech, params, q0, v0, ctrl_arr, t0, *, dt, n_steps, save_every, integrator,
              stabilizer, solver, ctrl_fn, drift_tol, checkpoint, energy_tol=ENERGY_TOL):
    dtype = q0.dtype
    # constant data (a beam's factored mass) computed once for the whole run
    params = prepare_params(mech, params)
    u_at = _controls_fn(ctrl_fn, ctrl_arr, n_steps, mech.n_controls, dtype)
    y0 = (q0, v0, jnp.zeros((), dtype))
    status0 = jnp.zeros((), jnp.int32)
    n_save = n_steps // save_every

    if not integrator.adaptive:
        chunk = _fixed_chunk(mech, params, t0, u_at, dt=dt, save_every=save_every,
                             integrator=integrator, stabilizer=stabilizer, solver=solver)
        if checkpoint is not False:
            policy = None if checkpoint is True else checkpoint
            chunk = jax.checkpoint(chunk, policy=policy)

        state0 = init_state(mech, params, t0, y0, dt, lambda tt: u_at(tt, 0),
                            integrator=integrator, stabilizer=stabilizer, solver=solver)
        (yf, status, _), ys = jax.lax.scan(chunk, (y0, status0, state0), jnp.arange(n_save))
        n_taken = jnp.asarray(n_steps, jnp.int32)
        n_rej = jnp.zeros((), jnp.int32)
    else:
        opts = dict(integrator=integrator, stabilizer=stabilizer, solver=solver)
        # step-size control separated from the stepping rule (issue 17): the integrator's
        # controller object if it has one, else its own next_h
        controller = getattr(integrator, "controller", None)
        if controller is None:
            controller = _NextH(integrator)

        t_save = t0 + dt * save_every * jnp.arange(1, n_save + 1, dtype=dtype)
        h0 = dt if integrator.h0 is None else integrator.h0
        buf0 = jax.tree_util.tree_map(lambda a: jnp.zeros((n_save,) + a.shape, a.dtype), y0)
        span = dt * n_steps

        def attempt(carry):
            t, y, h, idx, buf, status, nacc, nrej, sstate, cstate = carry
            done = idx >= n_save
            target = t_save[jnp.minimum(idx, n_save - 1)]
            remaining = target - t
            hit = h >= remaining * (1 - 1e-12)
            h_eff = jnp.where(hit, remaining, h)
            h_eff = jnp.where(done, dt, h_eff)
            kk = jnp.floor((t - t0) / span * n_steps).astype(jnp.int32)
            u_k = lambda tt: u_at(tt, kk)
            y_new, err, istate, s = dyn_attempt(mech, params, t, y, h_eff, u_k, state=sstate, **opts)
            accept = (err <= 1.0) & ~done
            t_new = jnp.where(hit, target, t + h_eff)
            y_acc, sstate_acc, status_acc = dyn_accept(mech, params, t_new, y, y_new, s, status, istate,
                                                       sstate, stabilizer=stabilizer, solver=solver)
            y = jax.tree_util.tree_map(lambda a, b: jnp.where(accept, a, b), y_acc, y)
            sstate = jax.tree_util.tree_map(lambda a, b: jnp.where(accept, a, b), sstate_acc, sstate)
            status = jnp.where(accept, status_acc, status)
            t = jnp.where(accept, t_new, t)
            saved = accept & hit
            slot = jnp.minimum(idx, n_save - 1)
            buf = jax.tree_util.tree_map(lambda b, a: b.at[slot].set(jnp.where(saved, a, b[slot])), buf, y)
            idx = idx + saved.astype(jnp.int32)
            h_next, cstate = controller.adapt(h_eff, err, accept, cstate, getattr(integrator, "error_order", integrator.order))
            h = jnp.where(done, h, jnp.where(hit & accept, jnp.maximum(h, h_next), h_next))
            nacc = nacc + accept.astype(jnp.int32)
            nrej = nrej + ((~accept) & ~done).astype(jnp.int32)
            return (t, y, h, idx, buf, status, nacc, nrej, sstate, cstate)

        def one(carry, _):
            # once every save point is reached the remaining budget costs nothing (for a
            # single run; under vmap `cond` becomes a select and all members step on)
            return jax.lax.cond(carry[3] >= n_save, lambda c: c, attempt, carry), None

        sstate0 = init_state(mech, params, t0, y0, jnp.asarray(h0, dtype), lambda tt: u_at(tt, 0), **opts)
        carry0 = (t0, y0, jnp.asarray(h0, dtype), jnp.zeros((), jnp.int32),
                  buf0, status0, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32),
                  sstate0, controller.init(dtype))
        if checkpoint is not False:
            one = jax.checkpoint(one, policy=None if checkpoint is True else checkpoint)
        carry, _ = jax.lax.scan(one, carry0, None, length=integrator.max_steps)
        _, _, _, idx, ys, status, n_taken, n_rej, _, _ = carry
        status = status | jnp.where(idx < n_save, st.MAX_STEPS, 0).astype(jnp.int32)

    return _diagnostics(mech, params, q0, v0, ys, t0, u_at, dt=dt, n_save=n_save,
                        save_every=save_every, solver=solver, stabilizer=stabilizer,
                        status=status, drift_tol=drift_tol, n_taken=n_taken, n_rej=n_rej,
                        energy_tol=energy_tol)


# ============================================================================ batch paths
# (issue 16: simulate_batch, batch_vectorization and the helpers below, down to the end of
# the file, are the batch layer; the single-member functions above are shared with it.)
EW_MAX_COORDS = 24  # the batch-minor path writes mechanisms of up to this
# many coordinates (and a dense saddle solve) out scalar by scalar, larger ones keep their
# arrays (_ew_form). 24 since the scalar form writes
# the whole Cholesky factor out (_scalar_solver): with
# the column-by-column factor and LAPACK triangular solves of rows above the solver's
# unroll_max, the spatial slider-crank (21 coordinates, 17 rows) ran 22 us per member-step
# in the scalar form, 7 us written out, against ~50 us under vmap (batch 512, loaded 2-core box)
EW_MIN_BATCH = 8  # auto: element-wise from this batch size (double pendulum, element-wise over
# vmap throughput, 2-core CPU: 0.33x at batch 1, 2.3x at 16, 4.6x at 64; slider-crank 0.56x, 2.1x, 4.7x)

_WARNED: set = set()  # fallback reasons already warned about (once per process each)
_EW_REFUSED: dict = {}  # (mech, options) -> why the scalar element-wise program could not be
# written (auto then takes the batch-minor array form, `minor_vmap`, which writes any program)


def _warn_fallback(reason: str, array_form: bool = False):
    if reason not in _WARNED:
        _WARNED.add(reason)
        if array_form:
            warnings.warn(
                f"jaxmbs.simulate_batch(vectorize='auto'): {reason}; this mechanism runs on "
                "the batch-minor array form instead (jaxmbs.experimental.elementwise."
                "minor_vmap), where throughput can be lower (BENCHMARKS.md). This warning is "
                "shown once per reason.", RuntimeWarning, stacklevel=4)
            return
        warnings.warn(
            f"jaxmbs.simulate_batch(vectorize='auto'): this mechanism qualifies for the "
            f"element-wise CPU path, but {reason}; it runs on the jax.vmap path instead, "
            "where throughput is several times lower (BENCHMARKS.md). This warning is shown "
            "once per reason.", RuntimeWarning, stacklevel=4)


def simulate_batch(mech, params, q0, v0, t_span, dt, *, params_axis=0, state_axis=0,
                   t_offset=None, vectorize: str = "auto", mesh=None, fold_zeros: bool = True,
                   **kwargs):
    """`simulate` vmapped over a batch: params leaves with a leading batch axis
    (params_axis=0, or None if shared) and q0 / v0 of shape (batch, n) (state_axis=0, or
    None if shared). t_offset: optional (traced) start time added to t_span, so that runs
    of equal length starting at different times share one compilation. controls (in
    kwargs): None, a function u(t), an array (n_steps, n_controls) shared by the batch or
    (batch, n_steps, n_controls).

    Compiled once per mechanism topology, argument shapes and options (a jitted entry
    point: a second call with new values only runs), with or without `mesh`. A `controls`
    function is part of the options: pass the same function object to reuse the program.

    vectorize: how the batch is vectorised; the results agree to round-off.
      "vmap": `jax.vmap` of `simulate` (batch-major arrays).
      "elementwise": the batch-minor path, fixed-step integrators only. Every value of
        one member's fixed step gets the batch as its last, contiguous axis: mechanisms of
        up to EW_MAX_COORDS coordinates with a dense saddle solve are written out scalar by
        scalar (`jaxmbs.elementwise_vmap`: structural zeros folded away; refused above
        `jaxmbs.elementwise.MAX_OPS` operations), larger ones and banded chains keep their
        arrays (`jaxmbs.experimental.elementwise.minor_vmap`: the program does not grow
        with the number of bodies); batches above EW_TILE_SCALAR (scalar form) or EW_TILE
        (array form; EW_TILE_LARGE for members of more than EW_TILE_LARGE_ABOVE velocity
        coordinates) members run tile by tile.
        3-10x the vmap throughput on CPU (BENCHMARKS.md); a CPU path: on a GPU it ran 25x
        slower than vmap (double pendulum, batch 65536, NVIDIA H200, jax 0.12.0.1), and
        "auto" never takes it there. Raises NotImplementedError where
        the program cannot be written (see `jaxmbs.experimental.elementwise.support()`).
      "auto" (default): "elementwise" on the CPU backend for fixed-step integrators and
        batches of at least EW_MIN_BATCH members (per device when sharded), except for
        mechanisms of more than EW_MAX_COORDS coordinates with a dense saddle solve
        (measured slower in the array form than under vmap: the spatial slider-crank,
        21 coordinates and 17 rows, 5.5e3 vs 2.3e4 member-steps/s, batch 256, one XLA
        device, before EW_MAX_COORDS was raised to 24 and it took the scalar form, 2.4x
        vmap); else "vmap" (`batch_vectorization` says which). When a mechanism qualifies but this jax's
        jaxprs cannot be read (`jaxmbs.experimental.elementwise.support()`), auto runs
        vmap and warns once, naming the reason; when only its scalar program cannot be
        written (MAX_OPS, a primitive it cannot write out), auto runs the array form and
        warns once, naming the reason.
    fold_zeros: on the scalar batch-minor form, the entries of params that are exactly zero
      (in every member, for batched leaves) are compiled into the program as constants, so
      that the arithmetic they annihilate is not written: a joint axis along a body axis,
      a centre of mass on the reference point, a diagonal inertia tensor. The values stay
      traced: the program is compiled once per pattern of zero entries (and shapes,
      options), and a call whose params have another pattern compiles again. Results equal
      the unfolded program's to round-off; derivatives are those of the vmap path, as
      always. Measured (same process, batch 4096, RK4, 2 cores, BENCHMARKS.md
      `fold_zeros`): double pendulum 1.34-1.40x the steps/s, slider-crank 1.59-1.75x,
      spatial slider-crank 1.88-1.93x (jax 0.12.0.1; its first compile 21 s against 28 s
      with Projection). params
      traced by an enclosing transformation (`jax.jit`, `jax.grad`) cannot be inspected:
      nothing is folded then, and a warning says so once. False: never fold.
    mesh: optional `jax.sharding.Mesh` with one axis (e.g. `jaxmbs.batch_mesh()`): the batch
      is split over its devices with `jax.shard_map`, each device simulating its slice
      (padded with copies of the last member up to a multiple of the device count; the
      padding is dropped from the result). On a multi-core CPU, XLA runs one program on
      little more than one core; splitting the host into one device per core
      (`XLA_FLAGS=--xla_force_host_platform_device_count=<cores>`, set before JAX starts)
      and passing the mesh uses all of them (2 cores: 1.4-2.6x, BENCHMARKS.md).
      None: one program (jit still partitions it by GSPMD when the inputs are sharded).
    check_initial (in kwargs, default True): with concrete inputs, ValueError naming the
      first member (with finite inputs) whose initial state violates the constraints by
      more than initial_tol, as `simulate`. Judged after the run, from the Trajectory's
      first save point (max|Phi| and max|Phi_q v + Phi_t| at (q0, v0)): no second program
      to compile; the run's result is then not returned. (With DenseLU, before the run.)
    Returns a Trajectory whose arrays have a leading batch axis."""
    if vectorize not in ("auto", "vmap", "elementwise"):
        raise ValueError(f"vectorize must be 'auto', 'vmap' or 'elementwise', got {vectorize!r}")
    if mesh is not None:
        from jax.sharding import Mesh
        if not isinstance(mesh, Mesh) or len(mesh.axis_names) != 1:
            raise ValueError(f"mesh must be a jax.sharding.Mesh with one axis "
                             f"(jaxmbs.batch_mesh()), got {mesh!r}")
    if state_axis not in (0, None):
        raise ValueError(f"state_axis must be 0 or None, got {state_axis}")
    t_span = (float(t_span[0]), float(t_span[1]))
    dt = float(dt)
    # (issue 21: shapes, batch sizes, options and initial consistency, before tracing)
    # (the initial consistency is judged from the run's first save point afterwards,
    # `_check_initial_records`: one compilation less on a first call, 0.4-0.5 s for the
    # slider-crank at batch 4096; DenseLU: before the run, whose LU would be singular with
    # redundant rows)
    from .saddle import DenseLU
    tol, solver = kwargs.get("initial_tol", 1e-6), kwargs.get("solver", SchurCholesky())
    defer = not isinstance(solver, DenseLU)
    check_batch_inputs(mech, params, q0, v0, t_span, params_axis=params_axis,
                       state_axis=state_axis, t_offset=t_offset, options=kwargs,
                       consistency=not defer)
    check = (defer and kwargs.get("check_initial", True) and mech.n_constraints > 0
             and not _is_tracer(params, q0, v0, t_offset))
    q0, v0 = jnp.asarray(q0), jnp.asarray(v0)
    kwargs = dict(kwargs)
    for k in ("check_initial", "initial_tol"):  # (checked above; not part of the program, so
        kwargs.pop(k, None)                     # that they do not select another compilation)
    controls = kwargs.pop("controls", None)
    ctrl_fn = controls if callable(controls) else None
    ctrl_arr = None if controls is None or callable(controls) else jnp.asarray(controls)
    _time_grid(t_span, dt, kwargs.get("save_every", 1))  # (argument errors before tracing)
    paxes = tuple(jax.tree_util.tree_leaves(_axes_tree(params_axis, params),
                                            is_leaf=lambda a: a is None))
    why = _elementwise_unsupported(mech, kwargs, params_axis, state_axis)
    if vectorize == "elementwise" and why:
        raise ValueError(f"vectorize='elementwise' does not apply here: {why}; "
                         "use vectorize='vmap'")
    zeros = (_zero_pattern(mech, params, q0, paxes, params_axis, state_axis, mesh, vectorize,
                           kwargs, why) if fold_zeros else None)
    if mesh is not None:
        params, q0, v0, ctrl_arr = _on_mesh(mesh, (params, q0, v0, ctrl_arr),
                                            (params_axis, state_axis, state_axis,
                                             0 if ctrl_arr is not None and ctrl_arr.ndim == 3 else None))
    traj = _simulate_batch_jit(params, q0, v0, ctrl_arr, t_offset, mech=mech, t_span=t_span, dt=dt,
                   paxes=paxes, state_axis=state_axis, vectorize=vectorize, mesh=mesh,
                   ctrl_fn=ctrl_fn, options=tuple(sorted(kwargs.items())), zeros=zeros)
    if check:  # (after the run: its result is dropped if the start was inconsistent)
        t0 = t_span[0] + (0.0 if t_offset is None else float(np.asarray(t_offset)))
        _check_initial_records(mech, params, q0, v0, t0, paxes, state_axis, tol, solver, traj)
    return traj


def _zero_pattern(mech, params, q0, paxes, params_axis, state_axis, mesh, vectorize, kwargs,
                  why):
    """simulate_batch's fold_zeros: the entries of params that are zero in every member, as
    a static, hashable key (per params leaf: None, or (shape, packed mask of +0.0 entries,
    packed mask of -0.0 entries)), where the call takes the scalar batch-minor form;
    None elsewhere (other forms gain nothing from it, and an unused key would only select
    more compilations). Traced params cannot be read: None, with a warning once."""
    if not _scalar_form_call(mech, params, q0, params_axis, state_axis, mesh, vectorize,
                             kwargs, why):
        return None
    leaves = jax.tree_util.tree_leaves(params)
    if _is_tracer(*leaves):
        _warn_traced_params()
        return None
    out = []
    for leaf, axis in zip(leaves, paxes):
        x = np.asarray(leaf)
        if not np.issubdtype(x.dtype, np.floating) or x.size == 0:
            out.append(None)
            continue
        neg = (x == 0) & np.signbit(x)
        pos = (x == 0) & ~neg
        if axis == 0:
            pos, neg = np.all(pos, axis=0), np.all(neg, axis=0)
        if not (pos.any() or neg.any()):
            out.append(None)
            continue
        out.append((pos.shape, np.packbits(pos).tobytes(), np.packbits(neg).tobytes()))
    return tuple(out) if any(o is not None for o in out) else None


def _fold_zeros(p, zeros):
    """One member's params p with the entries named by `_zero_pattern` replaced by their
    constant (+0.0 or -0.0): the element-wise interpreter then folds what they annihilate."""
    if zeros is None:
        return p
    leaves, tree = jax.tree_util.tree_flatten(p)
    assert len(leaves) == len(zeros), "fold_zeros: params changed structure"
    out = []
    for x, z in zip(leaves, zeros):
        if z is None:
            out.append(x)
            continue
        shape, pos, neg = z
        n = int(np.prod(shape, dtype=int))
        unpack = lambda b: np.unpackbits(np.frombuffer(b, np.uint8), count=n).astype(bool).reshape(shape)
        pos, neg = unpack(pos), unpack(neg)
        const = np.where(neg, -0.0, 0.0).astype(x.dtype)
        out.append(jnp.where(pos | neg, const, x))
    return jax.tree_util.tree_unflatten(tree, out)


_TRACED_PARAMS = "traced params: fold_zeros cannot read them"  # (its key in _WARNED)


def _warn_traced_params():
    if _TRACED_PARAMS not in _WARNED:
        _WARNED.add(_TRACED_PARAMS)
        warnings.warn(
            "jaxmbs.simulate_batch: params are traced here (called inside jax.jit, jax.grad or "
            "another transformation), so their zero entries cannot be read and compiled in "
            "(fold_zeros): the scalar batch-minor program does the arithmetic they annihilate, "
            "and runs slower (spatial slider-crank: 1/1.7 of the steps/s, BENCHMARKS.md). Call "
            "simulate_batch outside the transformation for the folded program, or pass "
            "fold_zeros=False to silence this. Shown once.", RuntimeWarning, stacklevel=4)


def _check_initial_records(mech, params, q0, v0, t0, paxes, state_axis, tol, solver, traj):
    """simulate_batch's initial-consistency check, judged from the run's first save point:
    its constraint and velocity errors are max|Phi| and max|Phi_q v + Phi_t| at (q0, v0,
    t0), the quantities `_check_batch_consistency` tests, so a consistent batch costs no
    second program (0.4-0.6 s of compilation on a first call). Members whose inputs (q0,
    v0, params) are not all finite are not judged, as there. Only when some member fails
    are the per-row residuals computed (`_batch_residuals`), to name the rows."""
    # (read on the host: indexing the device arrays compiled four small programs, 65 ms of a
    # first call)
    cerr = np.asarray(traj.constraint_error)[:, 0]
    verr = np.asarray(traj.velocity_error)[:, 0]
    B = cerr.shape[0]
    fin = np.ones((B,), bool)
    for x, ax in [(q0, state_axis), (v0, state_axis)] + list(zip(jax.tree_util.tree_leaves(params), paxes)):
        a = np.asarray(x)
        ok = np.isfinite(a).reshape(B, -1).all(1) if ax == 0 else np.full((B,), np.isfinite(a).all())
        fin &= ok
    lim = _tol_for(tol, jnp.result_type(q0))
    if not np.any(fin & ((cerr > lim) | (verr > lim))):
        return
    res = _batch_residuals(params, q0, v0, t0, mech=mech, paxes=paxes, state_axis=state_axis)
    _raise_if_inconsistent(mech, params, q0, t0, paxes, state_axis, tol, solver, res)


def _on_mesh(mesh, args, axes):
    """args (a tuple of pytrees) placed on the mesh as the sharded program reads them: leaves
    batched on axis 0 (axes: a prefix of each argument, 0 or None) whose batch is a multiple
    of the device count split over it, the others replicated; tracers are left alone. So a
    NumPy argument and the sharded output of an earlier call hit ONE compiled program:
    without this, continuing a run from its last state compiled it again (double pendulum,
    batch 4096, 2 devices: 4.4 s)."""
    from jax.sharding import NamedSharding, PartitionSpec as P

    (name,) = mesh.axis_names
    n_dev = mesh.devices.size

    def put(a, x):
        if x is None or isinstance(x, jax.core.Tracer):
            return x
        split = a == 0 and jnp.ndim(x) > 0 and jnp.shape(x)[0] % n_dev == 0
        return jax.device_put(x, NamedSharding(mesh, P(name) if split else P()))

    return tuple(x if x is None else jax.tree_util.tree_map(put, _axes_tree(a, x), x, is_leaf=lambda v: v is None)
                 for a, x in zip(axes, args))


def batch_vectorization(mech, batch: int, *, mesh=None, **kwargs) -> str:
    """The vectorisation `simulate_batch(..., vectorize="auto", mesh=mesh, **kwargs)` takes
    for `batch` members: "elementwise" (the batch-minor path, in its scalar or array form)
    or "vmap". "vmap" also where the mechanism would qualify but this jax cannot run the
    batch-minor path (`jaxmbs.experimental.elementwise.support()`). (A scalar program
    that cannot be written, MAX_OPS or a primitive it cannot write out, still runs
    batch-minor: the array form.)"""
    path, _ = _auto_choice(mech, batch, mesh, kwargs)
    return path


def _auto_choice(mech, batch, mesh, kwargs):
    """("elementwise" | "vmap", why not element-wise; '' when the mechanism does not
    qualify, so that falling back needs no warning)."""
    if _elementwise_unsupported(mech, kwargs, 0, 0):
        return "vmap", ""
    if mesh is not None:
        batch = -(-batch // mesh.devices.size)
    if jax.default_backend() != "cpu" or batch < EW_MIN_BATCH:
        return "vmap", ""
    if _ew_form(mech, kwargs.get("solver", SchurCholesky())) == "array" and not wants_sparse(
            kwargs.get("solver", SchurCholesky()), mech):
        return "vmap", ""  # (a dense solve above EW_MAX_COORDS: the array form is slower)
    from .experimental.elementwise import support
    why = support()  # (a refused scalar program still runs batch-minor: the array form)
    return ("vmap", why) if why else ("elementwise", "")


def _refusal_key(mech, kwargs):
    """(a hashable key of the options that shape the element-wise program, or None)"""
    key = (mech, kwargs.get("integrator", RK4()), kwargs.get("stabilizer", Projection()),
           kwargs.get("solver", SchurCholesky()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _batch_size(params, q0, params_axis, state_axis) -> int:
    if state_axis == 0:
        return int(jnp.shape(q0)[0])
    leaves = jax.tree_util.tree_leaves(
        jax.tree_util.tree_map(lambda a, x: x if a == 0 else None, _axes_tree(params_axis, params),
                               params, is_leaf=lambda a: a is None))
    if not leaves:
        raise ValueError("nothing is batched: give params_axis=0 or state_axis=0")
    return int(jnp.shape(leaves[0])[0])


def _axes_tree(axis, params):
    """params_axis (0, None, or a pytree prefix of params) as a full tree over params."""
    if axis is None or isinstance(axis, int):
        return jax.tree_util.tree_map(lambda _: axis, params)
    return jax.tree_util.tree_map(lambda a, sub: jax.tree_util.tree_map(lambda _: a, sub),
                                  axis, params, is_leaf=lambda a: a is None or isinstance(a, int))


def _simulate_batch_program(params, q0, v0, ctrl_arr, t_offset, *, mech, t_span, dt, paxes,
                            state_axis, vectorize, mesh, ctrl_fn, options, zeros=None):
    """simulate_batch's one compiled program per (topology, shapes, options, zero pattern
    of params: `_zero_pattern`)."""
    params_axis = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(params), paxes)
    kwargs = dict(options)
    if ctrl_fn is not None:
        kwargs["controls"] = ctrl_fn
    if mesh is not None:
        return _simulate_batch_sharded(mech, params, q0, v0, ctrl_arr, t_span, dt, mesh,
                                       params_axis, state_axis, t_offset, vectorize, kwargs, zeros)
    return _simulate_batch_local(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis,
                                 state_axis, t_offset, vectorize, kwargs, zeros)


_PROGRAM_STATIC = ("mech", "t_span", "dt", "paxes", "state_axis", "vectorize", "mesh", "ctrl_fn",
                   "options", "zeros")
_simulate_batch_jit = jax.jit(_simulate_batch_program, static_argnames=_PROGRAM_STATIC)


def _scalar_form_call(mech, params, q0, params_axis, state_axis, mesh, vectorize, kwargs,
                      why) -> bool:
    """Whether a simulate_batch call (why: `_elementwise_unsupported`'s answer) takes the
    scalar batch-minor form on the CPU (`_ew_form`; under "auto" when `_auto_choice` picks
    the element-wise path for its batch)."""
    if vectorize == "vmap" or why or jax.default_backend() != "cpu":
        return False
    if _ew_form(mech, kwargs.get("solver", SchurCholesky())) != "scalar":
        return False
    return vectorize != "auto" or _auto_choice(
        mech, _batch_size(params, q0, params_axis, state_axis), mesh, kwargs)[0] == "elementwise"


def _simulate_batch_local(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis,
                          t_offset, vectorize, kwargs, zeros=None):
    """One device's batch (traced inside _simulate_batch_jit, or inside shard_map)."""
    if vectorize != "vmap" and not _elementwise_unsupported(mech, kwargs, params_axis, state_axis):
        batch = _batch_size(params, q0, params_axis, state_axis)
        if vectorize == "auto":
            path, why = _auto_choice(mech, batch, None, kwargs)  # (batch: this device's)
            if why:
                _warn_fallback(why)
        else:
            path, why = "elementwise", ""
        if path == "elementwise":
            from .experimental.elementwise import support
            why = support()
            if why and vectorize == "elementwise":
                raise NotImplementedError(why)
            key = _refusal_key(mech, kwargs)
            refused = vectorize == "auto" and key is not None and key in _EW_REFUSED
            try:
                if not why:
                    return _elementwise_with_vmap_derivatives(
                        mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis,
                        t_offset, kwargs, form="array" if refused else None, zeros=zeros)
            except NotImplementedError as e:
                if vectorize == "elementwise" or refused:
                    raise
                # the scalar program cannot be written (MAX_OPS, a primitive it cannot write
                # out): the array form writes any program (other primitives through jax.vmap
                # of themselves), so auto stays on the batch-minor path
                reason = f"its scalar element-wise program cannot be written ({e})"
                if key is not None:
                    _EW_REFUSED[key] = reason
                _warn_fallback(reason, array_form=True)
                return _elementwise_with_vmap_derivatives(
                    mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis,
                    t_offset, kwargs, form="array")
            if why:
                _warn_fallback(why)
    return _simulate_batch_vmap(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis,
                                state_axis, t_offset, kwargs)


def _shard_map(f, mesh, in_specs, out_specs):
    """jax.shard_map without the replication check (the element-wise interpreter combines
    per-device and replicated values in ways the check does not follow; every output is
    per-device)."""
    return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)


def _simulate_batch_sharded(mech, params, q0, v0, ctrl_arr, t_span, dt, mesh, params_axis,
                            state_axis, t_offset, vectorize, kwargs, zeros=None):
    """simulate_batch split over a 1-D mesh with shard_map (batch padded to a multiple of
    the device count with copies of the last member)."""
    from jax.sharding import PartitionSpec as P

    (name,) = mesh.axis_names
    n_dev = mesh.devices.size
    batch = _batch_size(params, q0, params_axis, state_axis)
    pad = -batch % n_dev
    ctrl_batched = ctrl_arr is not None and jnp.ndim(ctrl_arr) != 2

    def padded(x):
        x = jnp.asarray(x)
        return x if pad == 0 else jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)], axis=0)

    paxes = _axes_tree(params_axis, params)
    params = jax.tree_util.tree_map(lambda a, x: padded(x) if a == 0 else jnp.asarray(x),
                                    paxes, params, is_leaf=lambda a: a is None)
    pspec = jax.tree_util.tree_map(lambda a: P(name) if a == 0 else P(), paxes,
                                   is_leaf=lambda a: a is None)
    sspec = P(name) if state_axis == 0 else P()
    if state_axis == 0:
        q0, v0 = padded(q0), padded(v0)
    args = [params, jnp.asarray(q0), jnp.asarray(v0)]
    specs = [pspec, sspec, sspec]
    if ctrl_arr is not None:
        args.append(padded(ctrl_arr) if ctrl_batched else ctrl_arr)
        specs.append(P(name) if ctrl_batched else P())
    if t_offset is not None:
        args.append(jnp.asarray(t_offset))
        specs.append(P())

    def local(p, q, v, *rest):
        rest = list(rest)
        c = rest.pop(0) if ctrl_arr is not None else None
        to = rest.pop(0) if t_offset is not None else None
        return _simulate_batch_local(mech, p, q, v, c, t_span, dt, params_axis, state_axis,
                                     to, vectorize, kwargs, zeros)

    out = _shard_map(local, mesh, tuple(specs), P(name))(*args)
    return out if pad == 0 else jax.tree_util.tree_map(lambda x: x[:batch], out)


def _simulate_batch_vmap(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis,
                         t_offset, kwargs):
    kwargs = dict(kwargs)
    ctrl_fn = kwargs.pop("controls", None)
    fn = lambda p, q, v, c: simulate(mech, p, q, v, t_span, dt, t_offset=t_offset,
                                     controls=c if c is not None else ctrl_fn, **kwargs)
    c_axis = None if ctrl_arr is None or jnp.ndim(ctrl_arr) == 2 else 0
    axes = (params_axis, state_axis, state_axis, c_axis)
    args = (params, q0, v0, ctrl_arr)
    return jax.vmap(fn, in_axes=axes)(*args)


def _elementwise_with_vmap_derivatives(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis,
                                       state_axis, t_offset, kwargs, form=None, zeros=None):
    """The element-wise batch path for values; derivatives (jvp, and grad through it) are
    those of the vmap path, which computes the same function: the reverse-mode program of
    the written-out loop made XLA:CPU's compiler overflow its stack (double pendulum), and
    the vmap path's derivatives use the implicit (custom_linear_solve) saddle solves."""
    t_off = jnp.zeros(()) if t_offset is None else t_offset

    def ew(p, q, v, c, to):
        return _simulate_batch_elementwise(mech, p, q, v, c, t_span, dt, params_axis, state_axis,
                                           None if t_offset is None else to, form=form,
                                           zeros=zeros, **kwargs)

    def vm(p, q, v, c, to):
        return _simulate_batch_vmap(mech, p, q, v, c, t_span, dt, params_axis, state_axis,
                                    None if t_offset is None else to, kwargs)

    f = jax.custom_jvp(ew)
    f.defjvp(lambda primals, tangents: jax.jvp(vm, primals, tangents))
    # (called under jit, custom_jvp traces `ew` here: NotImplementedError reaches the caller)
    return f(params, q0, v0, ctrl_arr, t_off)


def _elementwise_unsupported(mech, kwargs, params_axis, state_axis) -> str:
    """'' if the element-wise batch path applies to these simulate options, else why not."""
    integrator = kwargs.get("integrator", RK4())
    if integrator.adaptive:
        return "adaptive integrators need vmap"
    if is_stateful(integrator, kwargs.get("solver")):  # (issue 17: state between steps)
        return "integrators and solvers with state between steps need vmap"
    if params_axis is None and state_axis is None:
        return "nothing is batched"
    return ""


def _simulate_batch_elementwise(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis,
                                state_axis, t_offset, *, integrator=RK4(),
                                stabilizer=Projection(), solver=SchurCholesky(), controls=None,
                                save_every=1, drift_tol=1e-6, check_initial=True,
                                initial_tol=1e-6, checkpoint=False,
                                energy_tol=ENERGY_TOL, form=None, zeros=None):  # (issue 21: energy_tol passed on)
    del check_initial, initial_tol  # (simulate under vmap does not check traced inputs either)
    t0, _, dt, n_steps = _time_grid(t_span, dt, save_every)
    q0, v0 = jnp.asarray(q0), jnp.asarray(v0)
    n, nv = mech.n_coords, mech.n_vel
    batch = _batch_size(params, q0, params_axis, state_axis)
    if state_axis is None:  # shared initial state: one row per member of the params batch
        q0 = jnp.broadcast_to(q0, (batch,) + q0.shape)
        v0 = jnp.broadcast_to(v0, (batch,) + v0.shape)
    # (q and v differ in length for spatial bodies: a quaternion in q, an angular velocity in v)
    if q0.ndim != 2 or q0.shape[-1] != n or v0.shape != q0.shape[:1] + (nv,):
        raise ValueError(f"q0 and v0 must have shapes (batch, {n}) and (batch, {nv}) for this mechanism "
                         f"({', '.join(mech.coordinate_names())}); got {q0.shape}, {v0.shape}")
    if ctrl_arr is not None:
        ctrl_arr = jnp.asarray(ctrl_arr, q0.dtype)
        want = (n_steps, mech.n_controls)
        if ctrl_arr.shape[-2:] != want or ctrl_arr.ndim not in (2, 3) or (
                ctrl_arr.ndim == 3 and ctrl_arr.shape[0] != batch):
            raise ValueError(f"controls array must have shape (n_steps, n_controls) = {want} or "
                             f"(batch, n_steps, n_controls), got {ctrl_arr.shape}")
    t_start = jnp.asarray(t0, q0.dtype) + (0.0 if t_offset is None else jnp.asarray(t_offset, q0.dtype))
    return _simulate_ew(mech, params, q0, v0, ctrl_arr, t_start, params_axis=params_axis, dt=dt,
                        n_steps=n_steps, save_every=save_every, integrator=integrator,
                        stabilizer=stabilizer, solver=solver, ctrl_fn=controls,
                        drift_tol=drift_tol, checkpoint=checkpoint,
                        energy_tol=_check_energy_tol(energy_tol), form=form, zeros=zeros)


def _ew_form(mech, solver) -> str:
    """Which batch-minor program: "scalar" (`elementwise_vmap`: every scalar of the member
    written out; small mechanisms) or "array" (`minor_vmap`: the member's arrays kept, batch
    axis appended last; the program does not grow with the number of bodies)."""
    if mech.n_coords > EW_MAX_COORDS or wants_sparse(solver, mech):
        return "array"
    return "scalar"


def _scalar_solver(solver, mech):
    """The solver as the scalar element-wise form runs it: a SchurCholesky's factor written
    out scalar by scalar for every row (unroll_max raised to the row count). Same arithmetic
    as its column-by-column factor above unroll_max, in another order (results agree to
    round-off); the interpreter folds what it writes, whereas the column form's triangular
    solves are LAPACK calls it can only run per member."""
    um = getattr(solver, "unroll_max", None)
    if isinstance(solver, SchurCholesky) and um is not None and um < mech.n_constraints:
        return dataclasses.replace(solver, unroll_max=mech.n_constraints)
    return solver


EW_TILE = 128  # members simulated together on the batch-minor array form (the rest in
# turn): a tile's arrays stay in cache between the kernels of a step. Measured 2026-11-28
# (benchmarks/ew_tile.py, results/ew_tile_jax*.json: RK4, float64, batch over 2 devices,
# steps/s at 128 over steps/s at 256, Projection / Baumgarte): chain8 1.04 / 0.93 (jax
# 0.10.2) and 0.99 / 1.22 (0.12), chain16 1.11 / 1.27 and 1.12 / 1.11, chain32 1.03 / 1.06
# and 1.12 / 1.21, chain64 1.24 / 1.49 and 1.32 / 1.51 (was 256, from chain8 alone: 2.9 us per
# member-step at 128 members, 3.2 at 256, 4.7 at 512, 6.9 at 2048, loaded 2-core box).
EW_TILE_LARGE = 64  # the array form's tile for members of more than EW_TILE_LARGE_ABOVE
EW_TILE_LARGE_ABOVE = 64  # velocity coordinates: their arrays are larger, and half the
# members keep a tile's working set in cache. Measured 2026-11-30 (benchmarks/ew_tile.py
# --tiles 128 64, results/ew_tile64_jax*.json: RK4, 100 steps, batch over 2 devices, same
# process, alternating, identical results; steps/s at 64 over 128, Projection / Baumgarte):
# jax 0.10.2 chain8 (24 coordinates) 0.90 / 0.87, chain16 (48) 0.96 / 0.96, chain32 (96)
# 1.08 / 1.10, chain64 (192) 1.13 / 1.17, compile +0.1-0.4 s; jax 0.12.0.1 0.89 / 0.90,
# 0.95 / 0.95, 1.12 / 1.18, 1.24 / 1.26, compile +0.7-1.2 s (chain64: 3.4 -> 4.6 s).
# (32 members on chain64, an earlier A/B on 0.10.2: 1.04x.)
EW_TILE_SCALAR = 1024  # the same for the scalar form, whose programs have several hundred
# kernels per step: each kernel's fixed cost is paid once per tile, and at 256 members it
# dominated. Measured 2026-11-27 (batch 2048, one device, RK4 + Projection, process time per
# member-step, float64 / float32, loaded): double pendulum 975 / 629 ns at 256, 678 / 408 at
# 1024, 593 / 351 untiled; slider-crank 1596 / 1204, 1251 / 770, 1248 / 747; four-bar
# 2538 / 1744, 1616 / 1042, 1905 / 1190. (At 256 the float32 programs were hardly faster
# than float64: the kernels' fixed cost, not their arithmetic.)


def _ew_tile(mech, scalar: bool) -> int:
    """Members per tile of the batch-minor loop: EW_TILE_SCALAR on the scalar form; on the
    array form EW_TILE, or EW_TILE_LARGE above EW_TILE_LARGE_ABOVE velocity coordinates."""
    if scalar:
        return EW_TILE_SCALAR
    return EW_TILE_LARGE if mech.n_vel > EW_TILE_LARGE_ABOVE else EW_TILE


ARRAY_FORM_RECORDS = True  # the array form's save-point Records through `minor_vmap`
# (`_save_point_records`) rather than jax.vmap (`_diagnostics`); without controls


def _save_point_records(mech, params, q0, v0, ys, t0, *, params_axis, dt, n_save, save_every,
                        solver, stabilizer, n_steps):
    """The Records at the n_save + 1 save points of a batch (`jaxmbs.dynamics.Record`,
    fields (batch, n_save + 1, ...); ys = (qs, vs, ws) (batch, n_save, ...) the saved
    states after q0, v0 (batch, ...)), every (member, save point) pair one member of one
    batch-minor array program (`minor_vmap`): the array form's save-point diagnostics,
    which the vmap path solves several times slower (chain16, 10-step calls, jax 0.10.2:
    16 % of the call)."""
    from .experimental.elementwise import minor_vmap

    dtype = q0.dtype
    batch = q0.shape[0]
    S = n_save + 1
    # (member-major: member i's save points are rows i S ... i S + S - 1)
    flat = lambda first, rest: jnp.concatenate([first[:, None], rest], 1).reshape(
        (batch * S,) + first.shape[1:])
    Q, V = flat(q0, ys[0]), flat(v0, ys[1])
    ks = jnp.tile(jnp.arange(S) * save_every, batch)
    P = params if params_axis is None else jax.tree_util.tree_map(
        lambda a, x: x if a is None else jnp.repeat(x, S, axis=0), params_axis, params,
        is_leaf=lambda a: a is None)
    u_at = _controls_fn(None, None, n_steps, mech.n_controls, dtype)

    def rec(p, q, v, k):
        t = t0 + dt * k.astype(dtype)
        return tuple(_record_at(mech, p, q, v, t, u_at(t, k), solver, stabilizer))

    out = minor_vmap(rec, in_axes=(params_axis, 0, 0, 0), out_axes=0)(P, Q, V, ks)
    return Record(*(r.reshape((batch, S) + r.shape[1:]) for r in out))


def _simulate_ew(mech, params, q0, v0, ctrl_arr, t0, *, params_axis, dt, n_steps, save_every,
                 integrator, stabilizer, solver, ctrl_fn, drift_tol, checkpoint,
                 energy_tol=ENERGY_TOL, form=None, zeros=None):
    """The batch-minor loop: the state is kept batch-last, (n, members); each step is one
    batch-minor program (`elementwise_vmap` or `minor_vmap` of one member's fixed step,
    `_ew_form`), run in a scan over the steps of a save interval, itself in a scan over
    the intervals; batches above EW_TILE_SCALAR / EW_TILE members (scalar / array form)
    run tile by tile (`lax.map`, the batch
    padded with copies of its last member). Diagnostics at the save points come from the
    vmap path's `_diagnostics`, with the Records read off the steps (scalar form,
    `dynamics.records`) or solved for in one array program (array form without controls,
    `_save_point_records`)."""
    from .experimental import xla_cpu
    from .experimental.elementwise import elementwise_vmap, minor_vmap

    dtype = q0.dtype
    batch = q0.shape[0]
    nu = mech.n_controls
    n_save = n_steps // save_every
    ctrl_axis = None if ctrl_arr is None or ctrl_arr.ndim == 2 else -1
    vectorise = elementwise_vmap if (form or _ew_form(mech, solver)) == "scalar" else minor_vmap
    if vectorise is elementwise_vmap:
        solver = _scalar_solver(solver, mech)
    else:
        zeros = None  # (the array form keeps arrays: nothing to fold)

    # Records read off the steps on the scalar form only: on the array form (the banded
    # chains) they cost more run time than they save compile time (chain16, jax 0.10.2:
    # compile 7.5 -> 6.1 s, steps/s 0.89-0.97x; benchmarks/save_records.py)
    rec_on = records(integrator) and vectorise is elementwise_vmap

    def member_step(p, q, v, w, status, k, u, t_start):
        # one fixed step of one member (`_fixed_step`) at step k, and with rec_on the Record
        # at its start state (its fields flattened into the outputs)
        if u is not None:
            u_at = lambda t, kk: u  # (the controls row of step k, held over the step)
        else:
            u_at = _controls_fn(ctrl_fn, None, n_steps, nu, dtype)
        one = _fixed_step(mech, _fold_zeros(p, zeros), t_start, u_at, dt=dt, integrator=integrator,
                          stabilizer=stabilizer, solver=solver, record=rec_on)
        # (RK4's first stage apart from its stage loop: `integrators.peeled_first_stage`)
        with peeled_first_stage():
            ((q, v, w), status), rec = one(((q, v, w), status), k)
        return (q, v, w, status) + (tuple(rec) if rec_on else ())

    # (the scalar form: the member evaluations this compile serves, per device, decide
    # whether its loops stay loops: experimental/xla_cpu.py)
    work = dict(work=batch * (n_steps + rec_on)) if vectorise is elementwise_vmap else {}
    ew_step = vectorise(member_step, out_axes=-1,
                        in_axes=(params_axis, -1, -1, -1, -1, None, ctrl_axis, None), **work)

    def run(p, Q, V, rows):
        """One tile: Q, V (n, members); rows: controls (n_steps, nu[, members]) or None.
        Returns status (members,), the saved (q, v, w): (n_save, n | -, members), and with
        rec_on the Records at the n_save + 1 save points ((n_save + 1, m | -, members))."""
        def step(carry, k):
            # (k = n_steps: the extra step after the last save point, for its Record only)
            u = None if rows is None else rows[jnp.minimum(k, n_steps - 1)]
            q, v, w, status, *rec = ew_step(p, *carry, k, u, t0)
            if getattr(ew_step, "keeps_loops", False):  # (compile time: experimental/xla_cpu.py)
                status = xla_cpu.keep_loop(status, k)
            return (q, v, w, status), tuple(rec)

        m = Q.shape[-1]
        carry0 = (Q, V, jnp.zeros((m,), dtype), jnp.zeros((m,), jnp.int32))
        if not rec_on:
            def interval(carry, c):
                carry, _ = jax.lax.scan(step, carry, c * save_every + jnp.arange(save_every))
                return carry, carry[:3]
        else:
            # The Record at a save point comes from the next step's first stage, which is
            # evaluated there: interval c records its first step's, and one more interval
            # of a single step (its result dropped) records the last save point's. No
            # second program solves at the save points (their compile time: issue 16).
            rec0 = tuple(record_zeros(mech, dtype, m))

            def interval(carry, c):
                def body(j, cr):
                    state, rec = cr
                    state, r = step(state, c * save_every + j)
                    return state, tuple(jnp.where(j == 0, a, b) for a, b in zip(r, rec))

                n_in = jnp.where(c < n_save, save_every, 1)
                new, rec = jax.lax.fori_loop(0, n_in, body, (carry, rec0))
                # (after the last save point: keep its status, not the extra step's)
                new = new[:3] + (jnp.where(c < n_save, new[3], carry[3]),)
                return new, (new[:3], rec)

        if checkpoint is not False:
            interval = jax.checkpoint(interval, policy=None if checkpoint is True else checkpoint)
        (_, _, _, status), out = jax.lax.scan(interval, carry0,
                                              jnp.arange(n_save + (1 if rec_on else 0)))
        if rec_on:
            ys, recs = out
            return status, tuple(y[:n_save] for y in ys), recs
        return status, out, ()

    # controls rows per step: (n_steps, nu) shared, or (n_steps, nu, batch)
    rows = (None if ctrl_arr is None else ctrl_arr if ctrl_arr.ndim == 2
            else jnp.moveaxis(ctrl_arr, 0, -1))
    limit = _ew_tile(mech, vectorise is elementwise_vmap)
    tile = limit if batch > limit else batch
    if tile == batch:
        status, (qs, vs, ws), recs = run(params, q0.T, v0.T, rows)
    else:
        pad = -batch % tile
        n_tiles = (batch + pad) // tile

        def tiles(x, axis):  # batch axis `axis` -> (n_tiles, ..., tile, ...) with tiles first
            x = jnp.moveaxis(x, axis, 0)
            if pad:
                x = jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)], axis=0)
            x = x.reshape((n_tiles, tile) + x.shape[1:])
            return jnp.moveaxis(x, 1, axis + 1 if axis >= 0 else x.ndim + axis)

        p_t = jax.tree_util.tree_map(lambda a, x: tiles(x, 0) if a == 0 else None,
                                     params_axis, params, is_leaf=lambda a: a is None)
        shared = jax.tree_util.tree_map(lambda a, x: None if a == 0 else x,
                                        params_axis, params, is_leaf=lambda a: a is None)
        Qt, Vt = tiles(q0.T, -1), tiles(v0.T, -1)
        Rt = None if ctrl_axis is None else tiles(rows, -1)

        def one(args):
            pt, Q, V, R = args
            p = jax.tree_util.tree_map(lambda a, x, y: x if a == 0 else y, params_axis, pt,
                                       shared, is_leaf=lambda a: a is None)
            return run(p, Q, V, rows if ctrl_axis is None else R)

        status, (qs, vs, ws), recs = jax.lax.map(one, (p_t, Qt, Vt, Rt))
        # (n_tiles, ..., tile) -> (..., batch)
        untile = lambda x: jnp.moveaxis(x, 0, -2).reshape(x.shape[1:-1] + (-1,))[..., :batch]
        status, qs, vs, ws = untile(status), untile(qs), untile(vs), untile(ws)
        recs = tuple(untile(r) for r in recs)
    ys = (jnp.moveaxis(qs, -1, 0), jnp.moveaxis(vs, -1, 0), jnp.moveaxis(ws, -1, 0))
    recs = Record(*(jnp.moveaxis(r, -1, 0) for r in recs)) if rec_on else None
    if (not rec_on and vectorise is minor_vmap and ARRAY_FORM_RECORDS and ctrl_arr is None
            and ctrl_fn is None):
        recs = _save_point_records(mech, params, q0, v0, ys, t0, params_axis=params_axis,
                                   dt=dt, n_save=n_save, save_every=save_every, solver=solver,
                                   stabilizer=stabilizer, n_steps=n_steps)

    def diag(p, q0m, v0m, ysm, s, c, r):
        u_at = _controls_fn(ctrl_fn, c, n_steps, nu, dtype)
        return _diagnostics(mech, p, q0m, v0m, ysm, t0, u_at, dt=dt, n_save=n_save,
                            save_every=save_every, solver=solver, stabilizer=stabilizer,
                            status=s, drift_tol=drift_tol, energy_tol=energy_tol,
                            n_taken=jnp.asarray(n_steps, jnp.int32), n_rej=jnp.zeros((), jnp.int32),
                            recs=r)

    c_axis = None if ctrl_axis is None else 0
    return jax.vmap(diag, in_axes=(params_axis, 0, 0, 0, 0, c_axis, 0))(
        params, q0, v0, ys, status, ctrl_arr, recs)


# ------------------------------------------------------------- the callable module
class _CallableModule(types.ModuleType):
    """The module jaxmbs.simulate, callable as the function `simulate` (see the module
    docstring)."""

    def __call__(self, *args, **kwargs):
        return simulate(*args, **kwargs)


__signature__ = inspect.signature(simulate)
sys.modules[__name__].__class__ = _CallableModule
