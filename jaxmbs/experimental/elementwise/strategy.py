"""The batch-minor CPU path of `jaxmbs.simulate_batch` (`vectorize="elementwise"`), registered
with `jaxmbs.batch.vectorize` as a strategy.

Every value of one member's fixed step gets the batch as its last, contiguous axis: small
mechanisms are written out scalar by scalar (`elementwise_vmap`, the "scalar" form), larger
ones and banded chains keep their arrays (`minor_vmap`, the "array" form).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ...batch import vectorize as V
from ...core.dynamics import Record, is_stateful, record_zeros, records
from ...core.stabilize import Projection
from ...formulations.banded import wants_sparse
from ...formulations.schur import SchurCholesky
from ...integrators.runge_kutta import RK4
from ...simulation import (
    ENERGY_TOL,
    _check_energy_tol,
    _controls_fn,
    _diagnostics,
    _fixed_step,
    _is_tracer,
    _record_at,
    _time_grid,
)
from .. import elementwise as E  # (looked up at call time: tests replace E.support)
from .. import xla_cpu

EW_MAX_COORDS = 24  # dense mechanisms of up to this many coordinates are written out scalar by
# scalar, larger ones keep their arrays (measured: docs/dev/performance.md#scalar-max-coords)
EW_MIN_BATCH = 8  # "auto" takes the batch-minor path from this many members per device
# (measured: docs/dev/performance.md#batch-minor-vs-vmap)

_EW_REFUSED: dict = {}  # (mech, options) -> why the scalar element-wise program could not be




def _zero_pattern(mech, params, paxes, kwargs):
    """simulate_batch's fold_zeros: the entries of params that are zero in every member, as
    a static, hashable key (per params leaf: None, or (shape, packed mask of +0.0 entries,
    packed mask of -0.0 entries)), where the call takes the scalar batch-minor form on the
    CPU; None elsewhere (other forms gain nothing from it, and an unused key would only
    select more compilations). Traced params cannot be read: None, with a warning once."""
    if jax.default_backend() != "cpu" or _ew_form(mech, kwargs.get("solver", SchurCholesky())) != "scalar":
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
    V.warn_once(_TRACED_PARAMS,
            "jaxmbs.simulate_batch: params are traced here (called inside jax.jit, jax.grad or "
            "another transformation), so their zero entries cannot be read and compiled in "
            "(fold_zeros): the scalar batch-minor program does the arithmetic they annihilate, "
            "and runs slower (spatial slider-crank: 1/1.7 of the steps/s). Call "
            "simulate_batch outside the transformation for the folded program, or pass "
            "fold_zeros=False to silence this. Shown once.", stacklevel=6)




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
        return V._simulate_batch_vmap(mech, p, q, v, c, t_span, dt, params_axis, state_axis,
                                    None if t_offset is None else to, kwargs)

    f = jax.custom_jvp(ew)
    f.defjvp(lambda primals, tangents: jax.jvp(vm, primals, tangents))
    # (called under jit, custom_jvp traces `ew` here: NotImplementedError reaches the caller)
    return f(params, q0, v0, ctrl_arr, t_off)


def _simulate_batch_elementwise(mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis,
                                state_axis, t_offset, *, integrator=RK4(),
                                stabilizer=Projection(), solver=SchurCholesky(), controls=None,
                                save_every=1, drift_tol=1e-6, check_initial=True,
                                initial_tol=1e-6, checkpoint=False,
                                energy_tol=ENERGY_TOL, form=None, zeros=None):
    del check_initial, initial_tol  # (simulate under vmap does not check traced inputs either)
    t0, _, dt, n_steps = _time_grid(t_span, dt, save_every)
    q0, v0 = jnp.asarray(q0), jnp.asarray(v0)
    n, nv = mech.n_coords, mech.n_vel
    batch = V._batch_size(params, q0, params_axis, state_axis)
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


# Members simulated together (the rest in turn): a tile's arrays stay in cache between the
# kernels of a step (measured: docs/dev/performance.md#tile-size).
EW_TILE = 128  # the array form's tile
EW_TILE_LARGE = 64  # the array form's tile for members of more than EW_TILE_LARGE_ABOVE
EW_TILE_LARGE_ABOVE = 64  # velocity coordinates (larger arrays: half the members fit)
EW_TILE_SCALAR = 1024  # the scalar form's tile (its kernels' fixed cost paid once per tile)


def _ew_tile(mech, scalar: bool) -> int:
    """Members per tile of the batch-minor loop: EW_TILE_SCALAR on the scalar form; on the
    array form EW_TILE, or EW_TILE_LARGE above EW_TILE_LARGE_ABOVE velocity coordinates."""
    if scalar:
        return EW_TILE_SCALAR
    return EW_TILE_LARGE if mech.n_vel > EW_TILE_LARGE_ABOVE else EW_TILE


# (the array form's save-point Records come from one `minor_vmap` program,
# `_save_point_records`, rather than jax.vmap's `_diagnostics`, where there are no controls:
# docs/dev/performance.md#array-form-records)


def _save_point_records(mech, params, q0, v0, ys, t0, *, params_axis, dt, n_save, save_every,
                        solver, stabilizer, n_steps):
    """The Records at the n_save + 1 save points of a batch (`jaxmbs.core.dynamics.Record`,
    fields (batch, n_save + 1, ...); ys = (qs, vs, ws) (batch, n_save, ...) the saved
    states after q0, v0 (batch, ...)), every (member, save point) pair one member of one
    batch-minor array program (`minor_vmap`): the array form's save-point diagnostics,
    which the vmap path solves several times slower
    (docs/dev/performance.md#array-form-records)."""
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

    out = E.minor_vmap(rec, in_axes=(params_axis, 0, 0, 0), out_axes=0)(P, Q, V, ks)
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
    dtype = q0.dtype
    batch = q0.shape[0]
    nu = mech.n_controls
    n_save = n_steps // save_every
    ctrl_axis = None if ctrl_arr is None or ctrl_arr.ndim == 2 else -1
    vectorise = E.elementwise_vmap if (form or _ew_form(mech, solver)) == "scalar" else E.minor_vmap
    if vectorise is E.elementwise_vmap:
        solver = _scalar_solver(solver, mech)
    else:
        zeros = None  # (the array form keeps arrays: nothing to fold)

    # Records read off the steps on the scalar form only: on the array form (the banded
    # chains) they cost more run time than they save compile time
    # (docs/dev/performance.md#save-point-records)
    rec_on = records(integrator) and vectorise is E.elementwise_vmap
    # (rolled Runge-Kutta steps trace their first stage apart from the loop over the others
    # here: docs/dev/performance.md#peel-first-stage)
    peeled = (dataclasses.replace(integrator, peel_first_stage=True)
              if hasattr(integrator, "peel_first_stage") else integrator)

    def member_step(p, q, v, w, status, k, u, t_start):
        # one fixed step of one member (`_fixed_step`) at step k, and with rec_on the Record
        # at its start state (its fields flattened into the outputs)
        if u is not None:
            u_at = lambda t, kk: u  # (the controls row of step k, held over the step)
        else:
            u_at = _controls_fn(ctrl_fn, None, n_steps, nu, dtype)
        one = _fixed_step(mech, _fold_zeros(p, zeros), t_start, u_at, dt=dt,
                          integrator=peeled, stabilizer=stabilizer, solver=solver, record=rec_on)
        ((q, v, w), status), rec = one(((q, v, w), status), k)
        return (q, v, w, status) + (tuple(rec) if rec_on else ())

    # (the scalar form: the member evaluations this compile serves, per device, decide
    # whether its loops stay loops: experimental/xla_cpu.py)
    work = dict(work=batch * (n_steps + rec_on)) if vectorise is E.elementwise_vmap else {}
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
            # second program solves at the save points (their compile time).
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
    limit = _ew_tile(mech, vectorise is E.elementwise_vmap)
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
    if (not rec_on and vectorise is E.minor_vmap and ctrl_arr is None
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


class Elementwise(V.Strategy):
    """The batch-minor CPU path (see the module docstring); fixed-step integrators only."""
    name = "elementwise"

    def unsupported(self, mech, kwargs, params_axis, state_axis) -> str:
        integrator = kwargs.get("integrator", RK4())
        if integrator.adaptive:
            return "adaptive integrators need vmap"
        if is_stateful(integrator, kwargs.get("solver")):
            return "integrators and solvers with state between steps need vmap"
        if params_axis is None and state_axis is None:
            return "nothing is batched"
        return ""

    def auto(self, mech, batch, kwargs) -> tuple:
        if jax.default_backend() != "cpu" or batch < EW_MIN_BATCH:
            return False, ""
        solver = kwargs.get("solver", SchurCholesky())
        if _ew_form(mech, solver) == "array" and not wants_sparse(solver, mech):
            return False, ""  # (a dense solve above EW_MAX_COORDS: the array form is slower)
        why = E.support()  # (a refused scalar program still runs batch-minor: the array form)
        return (False, why) if why else (True, "")

    def static_key(self, mech, params, paxes, kwargs):
        return _zero_pattern(mech, params, paxes, kwargs)

    def run(self, mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis, t_offset,
            kwargs, *, explicit, key):
        why = E.support()
        if why:
            if explicit:
                raise NotImplementedError(why)
            V._warn_fallback(self.name, why)
            return None
        rkey = _refusal_key(mech, kwargs)
        refused = not explicit and rkey is not None and rkey in _EW_REFUSED
        try:
            return _elementwise_with_vmap_derivatives(
                mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis, t_offset,
                kwargs, form="array" if refused else None, zeros=key)
        except NotImplementedError as e:
            if explicit or refused:
                raise
            # the scalar program cannot be written (MAX_OPS, a primitive it cannot write
            # out): the array form writes any program (other primitives through jax.vmap
            # of themselves), so auto stays on the batch-minor path
            reason = f"its scalar element-wise program cannot be written ({e})"
            if rkey is not None:
                _EW_REFUSED[rkey] = reason
            V.warn_once(reason, f"jaxmbs.simulate_batch(vectorize='auto'): {reason}; this mechanism "
                        "runs on the batch-minor array form instead (jaxmbs.experimental."
                        "elementwise.minor_vmap), where throughput can be lower (docs: "
                        "performance). This warning is shown once per reason.", stacklevel=7)
            return _elementwise_with_vmap_derivatives(
                mech, params, q0, v0, ctrl_arr, t_span, dt, params_axis, state_axis, t_offset,
                kwargs, form="array")


def _refusal_key(mech, kwargs):
    """(a hashable key of the options that shape the element-wise program, or None)"""
    key = (mech, kwargs.get("integrator", RK4()), kwargs.get("stabilizer", Projection()),
           kwargs.get("solver", SchurCholesky()))
    try:
        hash(key)
    except TypeError:
        return None
    return key


V.register_strategy(Elementwise())
