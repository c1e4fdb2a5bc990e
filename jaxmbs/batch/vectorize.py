"""simulate_batch: `simulate` over a batch of parameter sets and initial states, and the
registry of ways to vectorise it.

"vmap" (`jax.vmap` of `simulate`, batch-major arrays) is built in and serves every call.
Other strategies register themselves (`register_strategy`): the batch-minor CPU path of
`jaxmbs.experimental.elementwise` is one, imported on first use through `_LAZY`, so that
importing jaxmbs imports nothing experimental. `vectorize="auto"` asks each registered
strategy in turn whether it takes the call (`Strategy.auto`) and falls back to vmap.
"""
from __future__ import annotations

import importlib
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ..formulations.schur import SchurCholesky
from ..simulation import (
    _axes_tree,
    _batch_residuals,
    _is_tracer,
    _raise_if_inconsistent,
    _time_grid,
    _tol_for,
    check_batch_inputs,
    simulate,
)

__all__ = ["simulate_batch", "batch_vectorization", "Strategy", "register_strategy", "strategy"]


class Strategy:
    """A way to vectorise `simulate` over a batch, other than plain `jax.vmap`.

    name: the `vectorize=` value that selects it.
    unsupported(mech, kwargs, params_axis, state_axis) -> str: '' if it can run a call with
      these simulate options and batch axes, else why not (a phrase).
    auto(mech, batch, kwargs) -> (bool, str): whether `vectorize="auto"` takes it for
      `batch` members per device; when it would but cannot here, the reason (warned once,
      the call then runs vmap).
    static_key(mech, params, paxes, kwargs) -> hashable or None: extra static information
      read from concrete params (`fold_zeros`), part of the compiled program's key.
    run(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis, t_offset,
      kwargs, *, explicit, key) -> Trajectory, or None to run vmap instead (it has warned).
    """
    name = ""

    def unsupported(self, mech, kwargs, params_axis, state_axis) -> str:
        return ""

    def auto(self, mech, batch, kwargs) -> tuple:
        return False, ""

    def static_key(self, mech, params, paxes, kwargs):
        return None

    def run(self, mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis, t_offset,
            kwargs, *, explicit, key):
        raise NotImplementedError


_REGISTRY: dict = {}  # name -> Strategy, in registration order
_LAZY = {"elementwise": "jaxmbs.experimental.elementwise.strategy"}  # imported on first use


def register_strategy(s: Strategy) -> Strategy:
    """Add a vectorisation strategy (replaces one of the same name)."""
    if not s.name or s.name in ("auto", "vmap"):
        raise ValueError(f"a strategy needs a name other than 'auto' and 'vmap', got {s.name!r}")
    _REGISTRY[s.name] = s
    return s


def _strategies() -> list:
    for name, module in _LAZY.items():
        if name not in _REGISTRY:
            importlib.import_module(module)  # (registers itself)
    return list(_REGISTRY.values())


def strategy(name: str) -> Strategy:
    """The registered strategy `name` (ValueError naming the choices if there is none)."""
    names = [s.name for s in _strategies()]
    if name not in names:
        raise ValueError(f"vectorize must be one of {['auto', 'vmap'] + names}, got {name!r}")
    return _REGISTRY[name]


_WARNED: set = set()  # keys of the warnings already shown (once per process each)


def warn_once(key, message: str, stacklevel: int = 5) -> None:
    """warnings.warn(message, RuntimeWarning) the first time `key` is seen in this process."""
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)


def _warn_fallback(name: str, reason: str) -> None:
    warn_once(reason, f"jaxmbs.simulate_batch(vectorize='auto'): this mechanism qualifies for the "
              f"{name} batch path, but {reason}; it runs on the jax.vmap path instead, where "
              "throughput is several times lower (docs: performance). This warning is shown "
              "once per reason.")


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
      "elementwise": the batch-minor CPU path (`jaxmbs.experimental.elementwise`),
        fixed-step integrators only. Every value of one member's fixed step gets the batch
        as its last, contiguous axis: small mechanisms with a dense saddle solve are written
        out scalar by scalar (structural zeros folded away), larger ones and banded chains
        keep their arrays (the program does not grow with the number of bodies); large
        batches run tile by tile. 3-10x the vmap throughput on a CPU (docs: performance);
        on a GPU it runs slower than vmap, and "auto" never takes it there. Raises
        NotImplementedError where the program cannot be written
        (`jaxmbs.experimental.elementwise.support()`).
      "auto" (default): "elementwise" on the CPU backend for fixed-step integrators and
        batches of at least 8 members (per device when sharded), except for dense
        mechanisms too large for the scalar form (their array form is slower than vmap);
        else "vmap" (`batch_vectorization` says which). Where a mechanism qualifies but this
        jax's jaxprs cannot be read, auto runs vmap and warns once, naming the reason; where
        only its scalar program cannot be written, auto runs the array form and warns once.
      Other strategies can be registered (`jaxmbs.batch.vectorize.register_strategy`).
    fold_zeros: on the scalar batch-minor form, the entries of params that are exactly zero
      (in every member, for batched leaves) are compiled into the program as constants, so
      that the arithmetic they annihilate is not written: a joint axis along a body axis,
      a centre of mass on the reference point, a diagonal inertia tensor. The values stay
      traced: the program is compiled once per pattern of zero entries (and shapes,
      options), and a call whose params have another pattern compiles again. Results equal
      the unfolded program's to round-off; derivatives are those of the vmap path, as
      always (measured: docs/dev/performance.md#fold-zeros). params traced by an enclosing
      transformation (`jax.jit`, `jax.grad`) cannot be inspected: nothing is folded then,
      and a warning says so once. False: never fold.
    mesh: optional `jax.sharding.Mesh` with one axis (e.g. `jaxmbs.batch_mesh()`): the batch
      is split over its devices with `jax.shard_map`, each device simulating its slice
      (padded with copies of the last member up to a multiple of the device count; the
      padding is dropped from the result). On a multi-core CPU, XLA runs one program on
      little more than one core; splitting the host into one device per core
      (`XLA_FLAGS=--xla_force_host_platform_device_count=<cores>`, set before JAX starts)
      and passing the mesh uses all of them (docs/dev/performance.md#one-device-per-core).
      None: one program (jit still partitions it by GSPMD when the inputs are sharded).
    check_initial (in kwargs, default True): with concrete inputs, ValueError naming the
      first member (with finite inputs) whose initial state violates the constraints by
      more than initial_tol, as `simulate`. Judged after the run, from the Trajectory's
      first save point (max|Phi| and max|Phi_q v + Phi_t| at (q0, v0)): no second program
      to compile; the run's result is then not returned. (With DenseLU, before the run.)
    Returns a Trajectory whose arrays have a leading batch axis."""
    chosen = None if vectorize in ("auto", "vmap") else strategy(vectorize)
    if mesh is not None:
        from jax.sharding import Mesh
        if not isinstance(mesh, Mesh) or len(mesh.axis_names) != 1:
            raise ValueError(f"mesh must be a jax.sharding.Mesh with one axis "
                             f"(jaxmbs.batch_mesh()), got {mesh!r}")
    if state_axis not in (0, None):
        raise ValueError(f"state_axis must be 0 or None, got {state_axis}")
    t_span = (float(t_span[0]), float(t_span[1]))
    dt = float(dt)
    # (shapes, batch sizes, options and initial consistency, before tracing)
    # (the initial consistency is judged from the run's first save point afterwards,
    # `_check_initial_records`: one compilation less on a first call, 0.4-0.5 s for the
    # slider-crank at batch 4096; DenseLU: before the run, whose LU would be singular with
    # redundant rows)
    from ..formulations.schur import DenseLU
    tol, solver = kwargs.get("initial_tol", 1e-6), kwargs.get("solver", SchurCholesky())
    defer = not isinstance(solver, DenseLU)
    check_batch_inputs(mech, params, q0, v0, t_span, params_axis=params_axis,
                       state_axis=state_axis, t_offset=t_offset, options=kwargs,
                       consistency=not defer)
    check = (defer and kwargs.get("check_initial", True) and mech.n_constraints > 0
             and not _is_tracer(params, q0, v0, t_offset))
    from ..core.validate import admissible_coordinates
    q0 = admissible_coordinates(mech, q0, batch=state_axis == 0, name="q0", where="simulate_batch")
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
    if chosen is not None:
        why = chosen.unsupported(mech, kwargs, params_axis, state_axis)
        if why:
            raise ValueError(f"vectorize={vectorize!r} does not apply here: {why}; "
                             "use vectorize='vmap'")
    elif vectorize == "auto":
        chosen, _ = _auto_choice(mech, _batch_size(params, q0, params_axis, state_axis), mesh,
                                 kwargs)
    key = chosen.static_key(mech, params, paxes, kwargs) if chosen and fold_zeros else None
    if mesh is not None:
        params, q0, v0, ctrl_arr = _on_mesh(mesh, (params, q0, v0, ctrl_arr),
                                            (params_axis, state_axis, state_axis,
                                             0 if ctrl_arr is not None and ctrl_arr.ndim == 3 else None))
    traj = _simulate_batch_jit(params, q0, v0, ctrl_arr, t_offset, mech=mech, t_span=t_span,
                               dt=dt, paxes=paxes, state_axis=state_axis, vectorize=vectorize, mesh=mesh,
                   ctrl_fn=ctrl_fn, options=tuple(sorted(kwargs.items())), key=key)
    if check:  # (after the run: its result is dropped if the start was inconsistent)
        t0 = t_span[0] + (0.0 if t_offset is None else float(np.asarray(t_offset)))
        _check_initial_records(mech, params, q0, v0, t0, paxes, state_axis, tol, solver, traj)
    return traj


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
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

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
    for `batch` members: the name of a registered strategy ("elementwise": the batch-minor
    CPU path, in its scalar or array form) or "vmap". "vmap" also where a strategy would
    take the call but cannot run on this jax (it says why in a warning when called)."""
    s, _ = _auto_choice(mech, batch, mesh, kwargs)
    return "vmap" if s is None else s.name


def _auto_choice(mech, batch, mesh, kwargs):
    """(the strategy "auto" takes or None for vmap, why a strategy that would take the call
    cannot: '' when none would, so that vmap needs no warning)."""
    if mesh is not None:
        batch = -(-batch // mesh.devices.size)
    for s in _strategies():
        if s.unsupported(mech, kwargs, 0, 0):
            continue
        takes, why = s.auto(mech, batch, kwargs)
        if takes:
            return s, ""
        if why:
            return None, f"{s.name}: {why}"
    return None, ""


def _batch_size(params, q0, params_axis, state_axis) -> int:
    if state_axis == 0:
        return int(jnp.shape(q0)[0])
    leaves = jax.tree_util.tree_leaves(
        jax.tree_util.tree_map(lambda a, x: x if a == 0 else None, _axes_tree(params_axis, params),
                               params, is_leaf=lambda a: a is None))
    if not leaves:
        raise ValueError("nothing is batched: give params_axis=0 or state_axis=0")
    return int(jnp.shape(leaves[0])[0])


def _simulate_batch_program(params, q0, v0, ctrl_arr, t_offset, *, mech, t_span, dt, paxes,
                            state_axis, vectorize, mesh, ctrl_fn, options, key=None):
    """simulate_batch's one compiled program per (topology, shapes, options, the strategy's
    static key: `Strategy.static_key`)."""
    params_axis = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(params), paxes)
    kwargs = dict(options)
    if ctrl_fn is not None:
        kwargs["controls"] = ctrl_fn
    if mesh is not None:
        return _simulate_batch_sharded(mech, params, q0, v0, ctrl_arr, t_span, dt, mesh,
                                       params_axis, state_axis, t_offset, vectorize, kwargs, key)
    return _simulate_batch_local(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis,
                                 state_axis, t_offset, vectorize, kwargs, key)


_PROGRAM_STATIC = ("mech", "t_span", "dt", "paxes", "state_axis", "vectorize", "mesh", "ctrl_fn",
                   "options", "key")
_simulate_batch_jit = jax.jit(_simulate_batch_program, static_argnames=_PROGRAM_STATIC)


def _simulate_batch_local(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis,
                          t_offset, vectorize, kwargs, key=None):
    """One device's batch (traced inside _simulate_batch_jit, or inside shard_map)."""
    if vectorize == "auto":
        s, why = _auto_choice(mech, _batch_size(params, q0, params_axis, state_axis), None,
                              kwargs)  # (batch: this device's)
        if why:
            name, reason = why.split(": ", 1)
            _warn_fallback(name, reason)
    else:
        s = None if vectorize == "vmap" else strategy(vectorize)
    if s is not None:
        out = s.run(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis,
                    t_offset, kwargs, explicit=vectorize != "auto", key=key)
        if out is not None:
            return out
    return _simulate_batch_vmap(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis,
                                state_axis, t_offset, kwargs)


def _shard_map(f, mesh, in_specs, out_specs):
    """jax.shard_map without the replication check (the element-wise interpreter combines
    per-device and replicated values in ways the check does not follow; every output is
    per-device)."""
    return jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)


def _simulate_batch_sharded(mech, params, q0, v0, ctrl_arr, t_span, dt, mesh, params_axis,
                            state_axis, t_offset, vectorize, kwargs, key=None):
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
                                     to, vectorize, kwargs, key)

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
