"""simulate(): the jitted forward-dynamics entry point, driven by `lax.scan`."""
from __future__ import annotations

import functools
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import status as st
from .banded import wants_sparse
from .dynamics import accelerations
from .equations import constraint_terms, energy_terms
from .integrators import RK4
from .saddle import SchurCholesky
from .stabilize import Projection

__all__ = ["Trajectory", "simulate", "simulate_batch", "batch_vectorization"]


class Trajectory(NamedTuple):
    """Saved samples of a simulation (leading axis: save points; batch axes first if vmapped).

    t (s,) s; q, v (s, n); lam (s, m) multipliers; constraint_error (s,) = max|Phi|;
    velocity_error (s,) = max|Phi_q v + Phi_t| (nonholonomic rows A v - b included: for a
    knife edge this is its only residual, constraint_error does not see it); kinetic, potential (s,) J; work (s,) J done
    on the system by non-conservative forces, drivers and constraint forces since t0, so
    kinetic + potential - work is constant up to integration error; status () int32 bit
    flags (see jaxmbs.status); n_steps () steps taken (accepted, for adaptive);
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


def _is_tracer(*xs):
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(xs))


def _check_initial_state(mech, params, q0, v0, t0, tol):
    q0, v0 = np.asarray(q0), np.asarray(v0)
    if not (np.all(np.isfinite(q0)) and np.all(np.isfinite(v0))):
        raise ValueError("initial state has non-finite entries in q0 or v0")
    if mech.n_constraints == 0:
        return
    terms = constraint_terms(mech, params, jnp.asarray(q0), jnp.asarray(v0), t0)
    phi = np.asarray(terms.phi)
    vel = np.asarray(terms.jac @ v0 + terms.phit)
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
             drift_tol: float = 1e-6, check_initial: bool = True,
             initial_tol: float = 1e-6, t_offset=None, checkpoint=False) -> Trajectory:
    """Forward dynamics from (q0, v0) over t_span = (t0, t1) (s).

    Args:
      mech, params: from `Model.build()` (params may be traced / batched under vmap).
      q0, v0: (n,) consistent initial coordinates and velocities (see `assemble`).
      t_span: (t0, t1) in s, Python floats. dt: step (fixed-step integrators) or first
        step (adaptive), s; t1 - t0 must be a whole number of dt.
      integrator: RK4() (default), SemiImplicitEuler(), Euler(), DormandPrince5(rtol, atol,
        max_steps). Adaptive steps are clipped to land on the save points.
      stabilizer: Projection() (default: one M-weighted Newton projection of q and one of v
        after every step), Baumgarte(alpha, beta=None -> alpha) in 1/s, or NoStabilization().
      solver: SchurCholesky() (default) or DenseLU().
      controls: None, an array (n_steps, n_controls) held constant over each step, or a
        JAX function u(t) -> (n_controls,).
      save_every: save every k-th step of the dt grid (t0 is always saved).
      drift_tol: constraint residual above which the DRIFT status flag is set.
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
    t0, t1, dt, n_steps = _time_grid(t_span, dt, save_every)
    n = mech.n_coords
    q0, v0 = jnp.asarray(q0), jnp.asarray(v0)
    if q0.shape[-1] != n or v0.shape[-1] != n:
        raise ValueError(f"q0 and v0 must have shape ({n},) for this mechanism "
                         f"({', '.join(mech.coordinate_names())}); got {q0.shape}, {v0.shape}")
    if controls is not None and not callable(controls):
        controls = jnp.asarray(controls, q0.dtype)
        if controls.ndim != 2 or controls.shape[0] != n_steps:
            raise ValueError(f"controls array must have shape (n_steps={n_steps}, n_controls="
                             f"{mech.n_controls}), got {controls.shape}")
    if check_initial and not _is_tracer(params, q0, v0, t_offset):
        _check_initial_state(mech, params, q0, v0, t0 + (0.0 if t_offset is None else float(t_offset)),
                             initial_tol)
    ctrl_fn = controls if callable(controls) else None
    ctrl_arr = None if callable(controls) else controls
    t_start = jnp.asarray(t0, q0.dtype) + (0.0 if t_offset is None else jnp.asarray(t_offset, q0.dtype))
    return _simulate(mech, params, q0, v0, ctrl_arr, t_start, dt=dt, n_steps=n_steps,
                     save_every=save_every, integrator=integrator, stabilizer=stabilizer,
                     solver=solver, ctrl_fn=ctrl_fn, drift_tol=drift_tol, checkpoint=checkpoint)


def _controls_fn(ctrl_fn, ctrl_arr, n_steps, nu, dtype):
    """u_at(t, k): the controls at time t of step k."""
    def u_at(t, k):
        if ctrl_fn is not None:
            return jnp.asarray(ctrl_fn(t), dtype).reshape(-1)
        if ctrl_arr is not None:
            return ctrl_arr[jnp.clip(k, 0, n_steps - 1)]
        return jnp.zeros((nu,), dtype)
    return u_at


def _rhs(mech, params, u_at, solver, stabilizer):
    def rhs(u_fixed, k):
        def f(t, y):
            q, v, _ = y
            u = u_at(t, k) if u_fixed is None else u_fixed
            acc = accelerations(mech, params, q, v, t, u, solver=solver, stabilizer=stabilizer)
            return (v, acc.qdd, acc.power), acc.status
        return f
    return rhs


def _finisher(mech, params, stabilizer, solver):
    def finish(t, y, y_new, s, status):
        q, v, w = y_new
        q, v, sp = stabilizer.post_step(mech, params, q, v, t, solver)
        y_new = (q, v, w)
        finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(x)) for x in y_new]))
        frozen = (status & st.NONFINITE) > 0
        keep = finite & ~frozen
        y_out = jax.tree_util.tree_map(lambda a, b: jnp.where(keep, a, b), y_new, y)
        status = status | jnp.where(keep, s | sp, 0) | jnp.where(finite, 0, st.NONFINITE)
        return y_out, status.astype(jnp.int32)
    return finish


def _fixed_chunk(mech, params, t0, u_at, *, dt, save_every, integrator, stabilizer, solver):
    """chunk(((q, v, w), status), c) -> (carry, y): save interval c (save_every fixed steps)."""
    rhs = _rhs(mech, params, u_at, solver, stabilizer)
    finish = _finisher(mech, params, stabilizer, solver)

    def one(carry, k):
        y, status = carry
        t = t0 + k * dt
        # (an array of controls is indexed by the step k: constant over the step)
        y_new, s = integrator.step(rhs(None, k), t, y, dt)
        return finish(t + dt, y, y_new, s, status), None

    def chunk(carry, c):
        ks = c * save_every + jnp.arange(save_every)
        carry, _ = jax.lax.scan(one, carry, ks)
        return carry, carry[0]

    return chunk


def _diagnostics(mech, params, q0, v0, ys, t0, u_at, *, dt, n_save, save_every, solver,
                 stabilizer, status, drift_tol, n_taken, n_rej):
    """The Trajectory of one member from its saved states ys = (qs, vs, ws) (n_save, ...)."""
    dtype = q0.dtype
    qs = jnp.concatenate([q0[None], ys[0]])
    vs = jnp.concatenate([v0[None], ys[1]])
    ws = jnp.concatenate([jnp.zeros((1,), dtype), ys[2]])
    ks = jnp.arange(n_save + 1) * save_every
    ts = t0 + dt * ks.astype(dtype)

    def diag(q, v, t, k):
        acc = accelerations(mech, params, q, v, t, u_at(t, k), solver=solver, stabilizer=stabilizer)
        terms = acc.terms
        T, V = energy_terms(mech, params, q, v, t)
        # (no rows: the JVP of a max over an empty array is NaN, so return 0 directly)
        zero = jnp.zeros((), q.dtype)
        cerr = jnp.max(jnp.abs(terms.phi)) if terms.phi.shape[0] else zero
        verr = jnp.max(jnp.abs(terms.jac @ v + terms.phit)) if terms.jac.shape[0] else zero
        return acc.lam, cerr, verr, T, acc.potential

    lam, cerr, verr, T, V = jax.vmap(diag)(qs, vs, ts, ks)
    status = status | jnp.where(jnp.max(cerr) > drift_tol, st.DRIFT, 0).astype(jnp.int32)
    return Trajectory(ts, qs, vs, lam, cerr, verr, T, V, ws, status, n_taken, n_rej)


@functools.partial(jax.jit, static_argnames=("dt", "n_steps", "save_every", "integrator",
                                             "stabilizer", "solver", "ctrl_fn", "drift_tol",
                                             "checkpoint"))
def _simulate(mech, params, q0, v0, ctrl_arr, t0, *, dt, n_steps, save_every, integrator,
              stabilizer, solver, ctrl_fn, drift_tol, checkpoint):
    dtype = q0.dtype
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

        (yf, status), ys = jax.lax.scan(chunk, (y0, status0), jnp.arange(n_save))
        n_taken = jnp.asarray(n_steps, jnp.int32)
        n_rej = jnp.zeros((), jnp.int32)
    else:
        rhs = _rhs(mech, params, u_at, solver, stabilizer)
        finish = _finisher(mech, params, stabilizer, solver)
        t_save = t0 + dt * save_every * jnp.arange(1, n_save + 1, dtype=dtype)
        h0 = dt if integrator.h0 is None else integrator.h0
        buf0 = jax.tree_util.tree_map(lambda a: jnp.zeros((n_save,) + a.shape, a.dtype), y0)
        span = dt * n_steps

        def attempt(carry):
            t, y, h, idx, buf, status, nacc, nrej = carry
            done = idx >= n_save
            target = t_save[jnp.minimum(idx, n_save - 1)]
            remaining = target - t
            hit = h >= remaining * (1 - 1e-12)
            h_eff = jnp.where(hit, remaining, h)
            h_eff = jnp.where(done, dt, h_eff)
            kk = jnp.floor((t - t0) / span * n_steps).astype(jnp.int32)
            y_new, err, s = integrator.attempt(rhs(None, kk), t, y, h_eff)
            accept = (err <= 1.0) & ~done
            t_new = jnp.where(hit, target, t + h_eff)
            y_acc, status_acc = finish(t_new, y, y_new, s, status)
            y = jax.tree_util.tree_map(lambda a, b: jnp.where(accept, a, b), y_acc, y)
            status = jnp.where(accept, status_acc, status)
            t = jnp.where(accept, t_new, t)
            saved = accept & hit
            slot = jnp.minimum(idx, n_save - 1)
            buf = jax.tree_util.tree_map(lambda b, a: b.at[slot].set(jnp.where(saved, a, b[slot])), buf, y)
            idx = idx + saved.astype(jnp.int32)
            h_next = integrator.next_h(h_eff, err)
            h = jnp.where(done, h, jnp.where(hit & accept, jnp.maximum(h, h_next), h_next))
            nacc = nacc + accept.astype(jnp.int32)
            nrej = nrej + ((~accept) & ~done).astype(jnp.int32)
            return (t, y, h, idx, buf, status, nacc, nrej)

        def one(carry, _):
            # once every save point is reached the remaining budget costs nothing (for a
            # single run; under vmap `cond` becomes a select and all members step on)
            return jax.lax.cond(carry[3] >= n_save, lambda c: c, attempt, carry), None

        carry0 = (t0, y0, jnp.asarray(h0, dtype), jnp.zeros((), jnp.int32),
                  buf0, status0, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))
        if checkpoint is not False:
            one = jax.checkpoint(one, policy=None if checkpoint is True else checkpoint)
        carry, _ = jax.lax.scan(one, carry0, None, length=integrator.max_steps)
        _, _, _, idx, ys, status, n_taken, n_rej = carry
        status = status | jnp.where(idx < n_save, st.MAX_STEPS, 0).astype(jnp.int32)

    return _diagnostics(mech, params, q0, v0, ys, t0, u_at, dt=dt, n_save=n_save,
                        save_every=save_every, solver=solver, stabilizer=stabilizer,
                        status=status, drift_tol=drift_tol, n_taken=n_taken, n_rej=n_rej)


# ============================================================================ batch paths
# (issue 16: simulate_batch, batch_vectorization and the helpers below, down to the end of
# the file, are the batch layer; the single-member functions above are shared with it.)
EW_MAX_COORDS = 12  # the batch-minor path writes mechanisms of up to this many coordinates
# (and a dense saddle solve) out scalar by scalar, larger ones keep their arrays (_ew_form)
EW_MIN_BATCH = 8  # auto: element-wise from this batch size (double pendulum, element-wise over
# vmap throughput, 2-core CPU: 0.33x at batch 1, 2.3x at 16, 4.6x at 64; slider-crank 0.56x, 2.1x, 4.7x)

_WARNED: set = set()  # fallback reasons already warned about (once per process each)
_EW_REFUSED: dict = {}  # (mech, options) -> why the element-wise program could not be written


def _warn_fallback(reason: str):
    if reason not in _WARNED:
        _WARNED.add(reason)
        warnings.warn(
            f"jaxmbs.simulate_batch(vectorize='auto'): this mechanism qualifies for the "
            f"element-wise CPU path, but {reason}; it runs on the jax.vmap path instead, "
            "where throughput is several times lower (BENCHMARKS.md). This warning is shown "
            "once per reason.", RuntimeWarning, stacklevel=4)


def simulate_batch(mech, params, q0, v0, t_span, dt, *, params_axis=0, state_axis=0,
                   t_offset=None, vectorize: str = "auto", mesh=None, **kwargs):
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
        with the number of bodies); batches above EW_TILE members run tile by tile.
        3-10x the vmap throughput on CPU (BENCHMARKS.md). Raises NotImplementedError where
        the program cannot be written (see `jaxmbs.experimental.elementwise.support()`).
      "auto" (default): "elementwise" on the CPU backend for fixed-step integrators and
        batches of at least EW_MIN_BATCH members (per device when sharded); else "vmap"
        (`batch_vectorization` says which). When a mechanism qualifies but its batch-minor
        program cannot be written (this jax's jaxprs cannot be read, MAX_OPS, a primitive
        it cannot write out), auto runs vmap and warns once, naming the reason.
    mesh: optional `jax.sharding.Mesh` with one axis (e.g. `jaxmbs.batch_mesh()`): the batch
      is split over its devices with `jax.shard_map`, each device simulating its slice
      (padded with copies of the last member up to a multiple of the device count; the
      padding is dropped from the result). On a multi-core CPU, XLA runs one program on
      little more than one core; splitting the host into one device per core
      (`XLA_FLAGS=--xla_force_host_platform_device_count=<cores>`, set before JAX starts)
      and passing the mesh uses all of them (2 cores: 1.4-2.6x, BENCHMARKS.md).
      None: one program (jit still partitions it by GSPMD when the inputs are sharded).
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
    q0, v0 = jnp.asarray(q0), jnp.asarray(v0)
    kwargs = dict(kwargs)
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
    return _simulate_batch_jit(params, q0, v0, ctrl_arr, t_offset, mech=mech, t_span=t_span,
                               dt=dt, paxes=paxes, state_axis=state_axis, vectorize=vectorize,
                               mesh=mesh, ctrl_fn=ctrl_fn, options=tuple(sorted(kwargs.items())))


def batch_vectorization(mech, batch: int, *, mesh=None, **kwargs) -> str:
    """The vectorisation `simulate_batch(..., vectorize="auto", mesh=mesh, **kwargs)` takes
    for `batch` members: "elementwise" or "vmap". "vmap" also where the mechanism would
    qualify but this jax cannot run the element-wise path
    (`jaxmbs.experimental.elementwise.support()`), or where its program was already found
    not to be writable (MAX_OPS, a primitive it cannot write out)."""
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
    from .experimental.elementwise import support
    why = support() or _EW_REFUSED.get(_refusal_key(mech, kwargs), "")
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


@functools.partial(jax.jit, static_argnames=("mech", "t_span", "dt", "paxes", "state_axis",
                                             "vectorize", "mesh", "ctrl_fn", "options"))
def _simulate_batch_jit(params, q0, v0, ctrl_arr, t_offset, *, mech, t_span, dt, paxes,
                        state_axis, vectorize, mesh, ctrl_fn, options):
    """simulate_batch's one compiled program per (topology, shapes, options)."""
    params_axis = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(params), paxes)
    kwargs = dict(options)
    if ctrl_fn is not None:
        kwargs["controls"] = ctrl_fn
    if mesh is not None:
        return _simulate_batch_sharded(mech, params, q0, v0, ctrl_arr, t_span, dt, mesh,
                                       params_axis, state_axis, t_offset, vectorize, kwargs)
    return _simulate_batch_local(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis,
                                 state_axis, t_offset, vectorize, kwargs)


def _simulate_batch_local(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis,
                          t_offset, vectorize, kwargs):
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
            try:
                if not why:
                    return _elementwise_with_vmap_derivatives(
                        mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis,
                        t_offset, kwargs)
            except NotImplementedError as e:
                if vectorize == "elementwise":
                    raise
                why = f"its element-wise program cannot be written ({e})"
                key = _refusal_key(mech, kwargs)
                if key is not None:
                    _EW_REFUSED[key] = why
            if why:
                _warn_fallback(why)
    return _simulate_batch_vmap(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis,
                                state_axis, t_offset, kwargs)


def _shard_map(f, mesh, in_specs, out_specs):
    """jax.shard_map without the replication check (the element-wise interpreter combines
    per-device and replicated values in ways the check does not follow; every output is
    per-device). jax < 0.6 has it as jax.experimental.shard_map.shard_map(check_rep=)."""
    if hasattr(jax, "shard_map"):
        try:
            return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                                 check_vma=False)
        except TypeError:  # pragma: no cover (jax 0.6.0: check_rep)
            return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                                 check_rep=False)
    from jax.experimental.shard_map import shard_map  # pragma: no cover
    return shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_rep=False)


def _simulate_batch_sharded(mech, params, q0, v0, ctrl_arr, t_span, dt, mesh, params_axis,
                            state_axis, t_offset, vectorize, kwargs):
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
                                     to, vectorize, kwargs)

    out = _shard_map(local, mesh, tuple(specs), P(name))(*args)
    return out if pad == 0 else jax.tree_util.tree_map(lambda x: x[:batch], out)


def _simulate_batch_vmap(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis,
                         t_offset, kwargs):
    kwargs = dict(kwargs)
    ctrl_fn = kwargs.pop("controls", None)
    fn = lambda p, q, v, c: simulate(mech, p, q, v, t_span, dt, t_offset=t_offset,
                                     controls=c if c is not None else ctrl_fn, **kwargs)
    if ctrl_arr is None or jnp.ndim(ctrl_arr) == 2:
        return jax.vmap(lambda p, q, v: fn(p, q, v, ctrl_arr),
                        in_axes=(params_axis, state_axis, state_axis))(params, q0, v0)
    return jax.vmap(fn, in_axes=(params_axis, state_axis, state_axis, 0))(params, q0, v0, ctrl_arr)


def _elementwise_with_vmap_derivatives(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis,
                                       state_axis, t_offset, kwargs):
    """The element-wise batch path for values; derivatives (jvp, and grad through it) are
    those of the vmap path, which computes the same function: the reverse-mode program of
    the written-out loop made XLA:CPU's compiler overflow its stack (double pendulum), and
    the vmap path's derivatives use the implicit (custom_linear_solve) saddle solves."""
    t_off = jnp.zeros(()) if t_offset is None else t_offset

    def ew(p, q, v, c, to):
        return _simulate_batch_elementwise(mech, p, q, v, c, t_span, dt, params_axis, state_axis,
                                           None if t_offset is None else to, **kwargs)

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
    if params_axis is None and state_axis is None:
        return "nothing is batched"
    return ""


def _simulate_batch_elementwise(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis,
                                state_axis, t_offset, *, integrator=RK4(),
                                stabilizer=Projection(), solver=SchurCholesky(), controls=None,
                                save_every=1, drift_tol=1e-6, check_initial=True,
                                initial_tol=1e-6, checkpoint=False):
    del check_initial, initial_tol  # (simulate under vmap does not check traced inputs either)
    t0, _, dt, n_steps = _time_grid(t_span, dt, save_every)
    q0, v0 = jnp.asarray(q0), jnp.asarray(v0)
    n = mech.n_coords
    batch = _batch_size(params, q0, params_axis, state_axis)
    if state_axis is None:  # shared initial state: one row per member of the params batch
        q0 = jnp.broadcast_to(q0, (batch,) + q0.shape)
        v0 = jnp.broadcast_to(v0, (batch,) + v0.shape)
    # (q and v may differ in length: spatial bodies carry a quaternion in q, an angular
    # velocity in v; the core checks v's length)
    if q0.ndim != 2 or q0.shape[-1] != n or v0.ndim != 2 or v0.shape[0] != q0.shape[0]:
        raise ValueError(f"q0 and v0 must have shape (batch, {n}) for this mechanism "
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
                        drift_tol=drift_tol, checkpoint=checkpoint)


def _ew_form(mech, solver) -> str:
    """Which batch-minor program: "scalar" (`elementwise_vmap`: every scalar of the member
    written out; small mechanisms) or "array" (`minor_vmap`: the member's arrays kept, batch
    axis appended last; the program does not grow with the number of bodies)."""
    if mech.n_coords > EW_MAX_COORDS or wants_sparse(solver, mech):
        return "array"
    return "scalar"


EW_TILE = 256  # members simulated together on the batch-minor path (the rest in turn): a
# tile's state stays in cache over its steps. Measured per member-step, one device, RK4 +
# Projection, float64, loaded 2-core box: chain8 (array form) 2.9 us at 128 members, 3.2 at
# 256, 4.7 at 512, 6.9 at 2048; slider-crank (scalar form) 0.47 us at 256, 0.87 at 2048.


def _simulate_ew(mech, params, q0, v0, ctrl_arr, t0, *, params_axis, dt, n_steps, save_every,
                 integrator, stabilizer, solver, ctrl_fn, drift_tol, checkpoint):
    """The batch-minor loop: the state is kept batch-last, (n, members); each step is one
    batch-minor program (`elementwise_vmap` or `minor_vmap` of one member's fixed step,
    `_ew_form`), run in a scan over the steps of a save interval, itself in a scan over
    the intervals; batches above EW_TILE members run tile by tile (`lax.map`, the batch
    padded with copies of its last member). Diagnostics at the save points come from the
    vmap path's `_diagnostics`."""
    from .experimental.elementwise import elementwise_vmap, minor_vmap

    dtype = q0.dtype
    batch = q0.shape[0]
    nu = mech.n_controls
    n_save = n_steps // save_every
    ctrl_axis = None if ctrl_arr is None or ctrl_arr.ndim == 2 else -1
    vectorise = elementwise_vmap if _ew_form(mech, solver) == "scalar" else minor_vmap

    def member_step(p, q, v, w, status, k, u, t_start):
        # one fixed step of one member: _fixed_chunk's save interval of length 1 at step k
        if u is not None:
            u_at = lambda t, kk: u  # (the controls row of step k, held over the step)
        else:
            u_at = _controls_fn(ctrl_fn, None, n_steps, nu, dtype)
        chunk = _fixed_chunk(mech, p, t_start, u_at, dt=dt, save_every=1,
                             integrator=integrator, stabilizer=stabilizer, solver=solver)
        ((q, v, w), status), _ = chunk(((q, v, w), status), k)
        return q, v, w, status

    ew_step = vectorise(member_step, out_axes=-1,
                        in_axes=(params_axis, -1, -1, -1, -1, None, ctrl_axis, None))

    def run(p, Q, V, rows):
        """One tile: Q, V (n, members); rows: controls (n_steps, nu[, members]) or None.
        Returns status (members,) and the saved (q, v, w): (n_save, n | -, members)."""
        def step(carry, k):
            u = None if rows is None else rows[k]
            return ew_step(p, *carry, k, u, t0), None

        def interval(carry, c):
            carry, _ = jax.lax.scan(step, carry, c * save_every + jnp.arange(save_every))
            return carry, carry[:3]

        if checkpoint is not False:
            interval = jax.checkpoint(interval, policy=None if checkpoint is True else checkpoint)
        m = Q.shape[-1]
        carry0 = (Q, V, jnp.zeros((m,), dtype), jnp.zeros((m,), jnp.int32))
        (_, _, _, status), ys = jax.lax.scan(interval, carry0, jnp.arange(n_save))
        return status, ys

    # controls rows per step: (n_steps, nu) shared, or (n_steps, nu, batch)
    rows = (None if ctrl_arr is None else ctrl_arr if ctrl_arr.ndim == 2
            else jnp.moveaxis(ctrl_arr, 0, -1))
    tile = EW_TILE if batch > EW_TILE else batch
    if tile == batch:
        status, (qs, vs, ws) = run(params, q0.T, v0.T, rows)
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

        status, (qs, vs, ws) = jax.lax.map(one, (p_t, Qt, Vt, Rt))
        # (n_tiles, ..., tile) -> (..., batch)
        untile = lambda x: jnp.moveaxis(x, 0, -2).reshape(x.shape[1:-1] + (-1,))[..., :batch]
        status, qs, vs, ws = untile(status), untile(qs), untile(vs), untile(ws)
    ys = (jnp.moveaxis(qs, -1, 0), jnp.moveaxis(vs, -1, 0), jnp.moveaxis(ws, -1, 0))

    def diag(p, q0m, v0m, ysm, s, c):
        u_at = _controls_fn(ctrl_fn, c, n_steps, nu, dtype)
        return _diagnostics(mech, p, q0m, v0m, ysm, t0, u_at, dt=dt, n_save=n_save,
                            save_every=save_every, solver=solver, stabilizer=stabilizer,
                            status=s, drift_tol=drift_tol,
                            n_taken=jnp.asarray(n_steps, jnp.int32), n_rej=jnp.zeros((), jnp.int32))

    c_axis = None if ctrl_axis is None else 0
    return jax.vmap(diag, in_axes=(params_axis, 0, 0, 0, 0, c_axis))(params, q0, v0, ys, status,
                                                                     ctrl_arr)
