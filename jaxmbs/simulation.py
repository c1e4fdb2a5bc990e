"""simulate(): the jitted forward-dynamics entry point, driven by `lax.scan`; the
Trajectory it returns, its time grid and its diagnostics."""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import status as st
from .core.dynamics import _accelerations as accelerations  # (the engine's, without input checks)
from .core.dynamics import accept as dyn_accept
from .core.dynamics import attempt as dyn_attempt
from .core.dynamics import init_state, record_of
from .core.dynamics import step as physics_step
from .core.equations import constraint_terms, prepare_params
from .core.stabilize import Projection
from .formulations.schur import SchurCholesky
from .integrators.runge_kutta import RK4

__all__ = ["Trajectory", "simulate", "ENERGY_TOL",
           "energy_balance_error"]

ENERGY_TOL = 0.05  # default energy_tol of simulate: ENERGY status above this relative error


def energy_balance_error(kinetic, potential, work):
    """Relative error of the energy balance over save points (last axis):
    max |E(t) - E(t0)| / S, E = T + V - W (T kinetic, V potential energy, W the work of
    the non-conservative forces and drivers since t0, J).

    S is the energy the motion exchanges, min(max T, B) + min(max V - min V, B) + W_x:
    its kinetic energy, the range of its potential and the work done on it, each term
    at most what an exact motion from the initial state can reach,
    B = T(t0) + (V(t0) - min V) + W_x (the initial kinetic energy, the potential energy
    released and the work done). W_x = min(max |W|, max |T + V - T(t0) - V(t0)|): for an
    exact motion the two are equal, and an integration error inflates one or the other.
    So S does not grow with the error of a blown-up run (whose kinetic energy, potential
    and work can all be garbage), and the measure does not depend on the zero of the
    potential. A stable, accurate integration gives round-off to truncation-error levels
    (1e-12 to 1e-6); an integration beyond its stability limit (a stiff spring or
    contact with too large a step) gives O(0.1) and more, growing with the error.
    Returns (error, floor): floor = sqrt(eps) (max T + max |V| + max |W|) / S is the
    round-off level below which no error is reported (a mechanism at rest)."""
    E = kinetic + potential - work
    dE = jnp.max(jnp.abs(E - E[..., :1]), -1)
    T0, V0 = kinetic[..., 0], potential[..., 0]
    Vmin = jnp.min(potential, -1)
    mech = kinetic + potential - (T0 + V0)[..., None]
    Wx = jnp.minimum(jnp.max(jnp.abs(work), -1), jnp.max(jnp.abs(mech), -1))
    B = T0 + (V0 - Vmin) + Wx
    scale = (jnp.minimum(jnp.max(kinetic, -1), B) + jnp.minimum(jnp.max(potential, -1) - Vmin, B)
             + Wx)
    size = jnp.max(jnp.abs(kinetic), -1) + jnp.max(jnp.abs(potential), -1) + jnp.max(jnp.abs(work), -1)
    eps = jnp.finfo(E.dtype).eps
    tiny = jnp.finfo(E.dtype).tiny
    return dE / jnp.maximum(scale, tiny), jnp.sqrt(eps) * size / jnp.maximum(scale, tiny)


class Trajectory(NamedTuple):
    """Saved samples of a simulation (leading axis: save points; batch axes first if vmapped).

    t (s,) s; q (s, n_coords), v (s, n_vel); lam (s, m) multipliers; constraint_error (s,) = max|Phi|;
    velocity_error (s,) = max|Phi_q v + Phi_t| (nonholonomic rows A v - b included: for a
    knife edge this is its only residual, constraint_error does not see it); kinetic, potential (s,) J; work (s,) J done
    on the system by non-conservative forces and drivers since t0 (ideal constraints do
    no work: the constraint forces count with their power on the constraint manifold,
    lam . Phi_t, `jaxmbs.core.dynamics.external_power`), so kinetic + potential - work is
    constant up to integration error; status () int32 bit
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
    from .core import validate as checks

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
    q0 = jnp.asarray(checks.admissible_coordinates(mech, q0, name="q0", where="simulate"))
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
    from .formulations.schur import DenseLU

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
    """The checks of `simulate_batch` before anything is traced: mech; params_axis
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
    from .core import validate as checks

    where = "simulate_batch"
    checks.check_mech(mech, where)
    from .core.mechanism import Params

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
    from .formulations.schur import DenseLU
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
    """one(carry, k) -> (carry, rec): step k of `jaxmbs.core.dynamics.step` (the physics step
    shared with the environments) from carry (y, status) or (y, status, StepState); rec is
    the Record at the step's start state with record=True (`dynamics.records`), else None."""

    def one(carry, k):
        # carry (y, status), or (y, status, StepState) where the caller keeps the step
        # state (integrator state, kept solver plan) between steps
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
    (recs, `jaxmbs.core.dynamics.Record` with a leading save-point axis); else they are solved
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
    from .core.validate import params_status

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
        # step-size control separated from the stepping rule: the integrator's
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


def _axes_tree(axis, params):
    """params_axis (0, None, or a pytree prefix of params) as a full tree over params."""
    if axis is None or isinstance(axis, int):
        return jax.tree_util.tree_map(lambda _: axis, params)
    return jax.tree_util.tree_map(lambda a, sub: jax.tree_util.tree_map(lambda _: a, sub),
                                  axis, params, is_leaf=lambda a: a is None or isinstance(a, int))
