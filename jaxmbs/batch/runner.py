"""A resumable, chunked runner of large and long batches (`run_batch`, `load_batch`)."""
from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import os
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ..simulation import simulate
from .fingerprint import _digest
from .shard import batch_mesh, shard_batch
from .vectorize import simulate_batch

# --------------------------------------------------------------------------------------
# run_batch / load_batch
# --------------------------------------------------------------------------------------
RUN_FORMAT = 2  # run.json layout: 1 = time grid and sizes only; 2 = + digests of every input
_MANAGED = ("t_offset", "mesh", "state_axis", "params_axis", "save_every")
_FIELDS = ("t", "q", "v", "lam", "constraint_error", "kinetic", "potential", "work")


def _simulate_options() -> dict:
    """Keyword options that run_batch passes on to simulate_batch, with their defaults
    (read from the signatures, so that a new option of `simulate` is covered)."""
    out = {}
    for fn in (simulate, simulate_batch):
        for name, p in inspect.signature(fn).parameters.items():
            if p.kind == p.KEYWORD_ONLY and name not in _MANAGED:
                out.setdefault(name, p.default)
    return out


# --- argument checks ---------------------------------------------------------------------
def _number(name, x, fix, *, integer=False):
    """x as a finite float (or int), else ValueError naming `name` and the fix."""
    if isinstance(x, jax.core.Tracer):
        raise ValueError(f"{name} is a traced value; call run_batch from plain Python")
    bad = isinstance(x, (bool, np.bool_, str, bytes))
    try:
        a = np.asarray(x) if not bad else None
    except Exception:  # noqa: BLE001 (any object numpy cannot convert)
        a = None
    if bad or a is None or a.shape != () or a.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a real number, got {x!r} ({type(x).__name__}); {fix}")
    v = float(a)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}; {fix}")
    if integer:
        if v != int(v):
            raise ValueError(f"{name} must be a whole number, got {x!r}; {fix}")
        return int(v)
    return v


def _state(name, x, shape, dtype):
    if isinstance(x, jax.core.Tracer):
        raise ValueError(f"{name} is a traced value; call run_batch from plain Python")
    try:
        a = np.asarray(x)
    except Exception:  # noqa: BLE001
        a = np.asarray(None)
    if a.dtype.kind not in "iuf" or a.dtype == np.bool_:
        raise ValueError(f"{name} must be an array of real numbers of shape {shape}, got "
                         f"{type(x).__name__} of dtype {a.dtype}")
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape} (batch, coordinates of this mechanism), "
                         f"got {a.shape}")
    if not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise ValueError(f"{name} has non-finite entries (first at [{bad[0]}, {bad[1]}]: "
                         f"{a[tuple(bad)]}); give finite initial states")
    return jnp.asarray(a, dtype)


def _check_args(mech, params, q0, v0, t_span, dt, out_dir, chunk_steps, save_every,
                params_axis, shard, progress, options):
    """Every argument of run_batch checked before anything runs or is written; returns the
    normalised (t0, t1, dt, n_total, n_chunks, save_every, q0, v0, out_dir, options)."""
    from ..core.mechanism import Mechanism, Params

    if not isinstance(mech, Mechanism):
        raise ValueError(f"mech must be a jaxmbs Mechanism (from Model.build()), got "
                         f"{type(mech).__name__}")
    if not isinstance(params, Params):
        raise ValueError(f"params must be a jaxmbs Params (from Model.build(), batched with "
                         f"jax.vmap(mech.replace ...)), got {type(params).__name__}")
    if params_axis is not None and (isinstance(params_axis, bool) or params_axis != 0):
        raise ValueError(f"params_axis must be 0 (params batched along their first axis) or "
                         f"None (shared by all members), got {params_axis!r}")
    for name, flag in (("shard", shard), ("progress", progress)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False, got {flag!r}")
    if isinstance(t_span, (str, bytes)) or not hasattr(t_span, "__len__") or len(t_span) != 2:
        raise ValueError(f"t_span must be a pair (t0, t1) of times in s, got {t_span!r}")
    fix_t = "give t_span = (t0, t1) with finite t0 < t1, in s"
    t0 = _number("t_span[0] (t0)", t_span[0], fix_t)
    t1 = _number("t_span[1] (t1)", t_span[1], fix_t)
    if not t1 > t0:
        raise ValueError(f"t_span = ({t0}, {t1}): t1 must be greater than t0; {fix_t}")
    dt = _number("dt", dt, "give the time step in s, a finite number > 0")
    if not dt > 0:
        raise ValueError(f"dt must be > 0, got {dt}; give the time step in s, a finite number > 0")
    n_total = int(round((t1 - t0) / dt))
    if n_total < 1 or abs(n_total * dt - (t1 - t0)) > 1e-9 * max(1.0, abs(t1 - t0)):
        raise ValueError(f"dt = {dt}: t1 - t0 = {t1 - t0} is not a whole number of steps; "
                         f"adjust dt (e.g. {(t1 - t0) / max(n_total, 1):.6g}) or t_span")
    fix_c = f"give chunk_steps, a whole number >= 1 that divides the {n_total} steps"
    chunk_steps = _number("chunk_steps", chunk_steps, fix_c, integer=True)
    if chunk_steps < 1 or n_total % chunk_steps:
        raise ValueError(f"chunk_steps = {chunk_steps}: {fix_c} of the horizon "
                         f"(e.g. {math.gcd(n_total, max(chunk_steps, 1))})")
    if save_every is None:
        save_every = chunk_steps
    fix_s = f"give save_every, a whole number >= 1 that divides chunk_steps = {chunk_steps} (or None)"
    save_every = _number("save_every", save_every, fix_s, integer=True)
    if save_every < 1 or chunk_steps % save_every:
        raise ValueError(f"save_every = {save_every}: {fix_s}")
    if isinstance(out_dir, bytes) or not isinstance(out_dir, (str, os.PathLike)) or not os.fspath(out_dir):
        raise ValueError(f"out_dir must be a folder path (str or os.PathLike), got {out_dir!r}")
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ValueError(f"out_dir {out_dir!r} exists and is not a folder; give a folder path")

    dtype = jnp.result_type(float)  # float64 under jax_enable_x64, else float32
    q_shape = np.shape(q0) if not isinstance(q0, jax.core.Tracer) else None
    if q_shape is None or len(q_shape) != 2:
        raise ValueError(f"q0 must have shape (batch, {mech.n_coords}) (one row per member: "
                         f"{', '.join(mech.coordinate_names())}), got shape {q_shape}")
    batch = q_shape[0]
    if batch < 1:
        raise ValueError("q0 has no rows: give at least one member")
    kinds = [np.asarray(x).dtype for x in (q0, v0) if not isinstance(x, jax.core.Tracer)
             and isinstance(x, (np.ndarray, jax.Array, np.generic))]
    if kinds and all(k.kind == "f" for k in kinds):
        dtype = np.result_type(*kinds)  # a float32 state stays float32; ints become the default
    q0 = _state("q0", q0, (batch, mech.n_coords), dtype)
    v0 = _state("v0", v0, (batch, mech.n_coords), dtype)
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        where = "params" + jax.tree_util.keystr(path)
        if isinstance(leaf, jax.core.Tracer):
            raise ValueError(f"{where} is a traced value; call run_batch from plain Python")
        a = np.asarray(leaf)
        if a.dtype.kind not in "iuf" or not np.all(np.isfinite(a)):
            raise ValueError(f"{where} must be finite real numbers, got {a.dtype} "
                             f"{'with non-finite entries' if a.dtype.kind == 'f' else ''}".rstrip())
        if params_axis == 0 and (a.ndim == 0 or a.shape[0] != batch):
            raise ValueError(f"{where} has shape {a.shape}: with params_axis=0 every params leaf "
                             f"needs the batch size {batch} (q0's rows) as its first axis; batch "
                             "params with jax.vmap(lambda x: mech.replace(params, {...}))(values), "
                             "or pass params_axis=None to share one set")

    known = _simulate_options()
    for k in options:
        if k in _MANAGED:
            raise ValueError(f"run_batch sets {k!r} itself (chunk times, devices, batch axes); "
                             "remove it from the call")
        if k not in known:
            raise ValueError(f"unknown simulate option {k!r}; run_batch passes these on to "
                             f"simulate_batch: {', '.join(sorted(known))}")
    options = {**known, **options}
    _check_options(options)
    ctrl = options["controls"]
    if ctrl is not None and not callable(ctrl):
        c = np.asarray(ctrl)
        nc = mech.n_controls
        want = f"({n_total}, {nc}) (steps of the whole horizon, controls) or ({batch}, {n_total}, {nc})"
        if c.dtype.kind not in "iuf" or c.ndim not in (2, 3) or c.shape[-2:] != (n_total, nc) \
                or (c.ndim == 3 and c.shape[0] != batch):
            raise ValueError(f"controls array must have shape {want}, got {c.shape} "
                             f"(dtype {c.dtype}); or give a function u(t)")
        if not np.all(np.isfinite(c)):
            raise ValueError("controls array has non-finite entries; give finite controls")
        options["controls"] = jnp.asarray(c, dtype)
    return t0, t1, dt, n_total, n_total // chunk_steps, save_every, q0, v0, out_dir, options


_OPTION_SHAPES = {  # simulate options that are objects: attributes every valid one has
    "integrator": (("adaptive",), "jaxmbs.RK4(), DormandPrince8(), ExplicitRK(...), SemiImplicitEuler(), Euler() or DormandPrince5()"),
    "stabilizer": (("gamma", "post_step"), "jaxmbs.Projection(), Baumgarte(alpha) or NoStabilization()"),
    "solver": (("solve",), "jaxmbs.SchurCholesky() or DenseLU()"),
}


def _check_options(options):
    """Type checks of the known simulate options (their values are checked by simulate)."""
    for k, (attrs, kinds) in _OPTION_SHAPES.items():
        if k in options and not all(hasattr(options[k], a) for a in attrs):
            raise ValueError(f"{k} must be one of {kinds}, got {options[k]!r}")
    for k in ("drift_tol", "initial_tol"):
        if k in options:
            v = _number(k, options[k], f"give {k}, a finite number >= 0")
            if v < 0:
                raise ValueError(f"{k} must be >= 0, got {v}")
    if "energy_tol" in options:
        from ..simulation import _check_energy_tol
        _check_energy_tol(options["energy_tol"])
    if "check_initial" in options and not isinstance(options["check_initial"], (bool, np.bool_)):
        raise ValueError(f"check_initial must be True or False, got {options['check_initial']!r}")
    ck = options.get("checkpoint", False)
    if not isinstance(ck, (bool, np.bool_)) and not callable(ck):
        raise ValueError(f"checkpoint must be True, False or a jax.checkpoint_policies policy, "
                         f"got {ck!r}")
    vec = options.get("vectorize", "auto")
    if not isinstance(vec, str) or vec not in ("auto", "vmap", "elementwise"):
        raise ValueError(f"vectorize must be 'auto', 'vmap' or 'elementwise', got {vec!r}")
    ctrl = options.get("controls")
    if ctrl is not None and not callable(ctrl) and isinstance(ctrl, (str, bytes)):
        raise ValueError(f"controls must be None, a function u(t) or an array, got {ctrl!r}")


# --- files ---------------------------------------------------------------------------------
def _chunk_name(k):
    return f"chunk_{k:05d}.npz"


def _partial_name(name):
    """Temporary name of a file being written: outside load_batch's names (no .npz/.json)."""
    return name.rsplit(".", 1)[0] + ".partial"


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_write(path, write):
    """write(f) into a temporary file (flushed to disk), then rename it to `path`: a kill
    at any moment leaves either no `path` or the complete file."""
    tmp = _partial_name(path)
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path) or ".")


def _read_meta(out_dir):
    """run.json of a run folder (ValueError naming the file if it cannot be read)."""
    path = os.path.join(out_dir, "run.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} cannot be read ({type(e).__name__}: {e}); it is not a "
                         "run_batch record: use another folder") from None
    if not isinstance(meta, dict) or not {"t0", "t1", "dt", "chunk_steps"} <= set(meta):
        raise ValueError(f"{path} is not a run_batch record (missing t0, t1, dt or chunk_steps); "
                         "use another folder")
    return meta


def _open_chunk(path, digest, what, keys=None):
    """The arrays of one chunk file (only `keys` and the digest, if given); ValueError
    naming the file if it is unreadable or belongs to another run (its digest differs
    from run.json's)."""
    try:
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files if keys is None or k in keys or k == "digest"}
    except Exception as e:  # noqa: BLE001 (BadZipFile, EOFError, OSError, ValueError, ...)
        raise ValueError(f"{what}: chunk file {path} is unreadable ({type(e).__name__}: {e}); "
                         "delete it and call run_batch again with the same arguments to "
                         "recompute it") from None
    if digest is not None and str(arrays.get("digest", "")) != digest:
        raise ValueError(f"{what}: chunk file {path} belongs to another run (its input digest "
                         "differs from run.json's); it was copied or left here from another "
                         "folder: remove it, or use a folder of its own for each run")
    return arrays


def _missing(out_dir, n_chunks):
    present = [os.path.exists(os.path.join(out_dir, _chunk_name(k))) for k in range(n_chunks)]
    done = present.index(False) if False in present else n_chunks
    return done, [k for k in range(n_chunks) if not present[k]]


def _chunk(params, q, v, t_start, controls, *, mech, dt, chunk_steps, save_every, params_axis,
           mesh, options, check_initial):
    """One chunk of run_batch: chunk_steps steps from t_start (controls: this chunk's rows
    of an array of controls, or None). A plain call of `simulate_batch` (its own jitted
    program, compiled once for all chunks: t_start is traced), not a jit around it: so
    that its batch path sees concrete params and folds their zero entries (fold_zeros),
    as a direct call does. check_initial: judge the initial state (the first chunk only,
    as the user's option says; the later ones start where the previous chunk ended)."""
    kw = dict(options)
    if controls is not None:
        kw["controls"] = controls
    kw["check_initial"] = bool(kw.get("check_initial", True)) and check_initial
    return simulate_batch(mech, params, q, v, (0.0, chunk_steps * dt), dt, params_axis=params_axis,
                          save_every=save_every, t_offset=t_start, mesh=mesh, **kw)


def run_batch(mech, params, q0, v0, t_span, dt, out_dir, *, chunk_steps, save_every=None,
              params_axis=0, shard=False, progress=True, **simulate_kwargs):
    """Simulate a batch over a long horizon in chunks, streaming every chunk to disk.

    The horizon t_span = (t0, t1) is cut into chunks of `chunk_steps` steps of dt; chunk
    k is written atomically to `out_dir/chunk_{k:05d}.npz` (t, q, v, lam, constraint_error,
    kinetic, potential, work, status; batch axis first) together with the final state it
    ends in. Calling `run_batch` again with the same arguments resumes after the last
    complete chunk: nothing computed is lost, and the result is bit for bit that of an
    uninterrupted run (a kill at any moment leaves only complete chunk files and
    `*.partial` temporaries, which are ignored and overwritten). q0, v0: (batch, n).
    Every chunk has the same length, so one compilation serves all. save_every defaults to
    chunk_steps (one sample per chunk). shard=True places the batch across all devices
    (`shard_batch`) and splits the work over them (`simulate_batch(...,
    mesh=batch_mesh())`; the batch size must be a multiple of the device count).
    simulate_kwargs (integrator, stabilizer, solver, controls, vectorize, ...) go to
    `simulate_batch`; an array of controls covers the whole horizon, (n_steps, n_controls)
    or (batch, n_steps, n_controls), and is cut per chunk. Each chunk is a plain
    `simulate_batch` call (one compiled program for all chunks), so it takes the same
    batch path as a direct call, zero folding included; its check_initial (default True)
    judges the initial state of the first chunk.

    `out_dir/run.json` records the time grid and a SHA-256 digest of every input (mech,
    params, q0, v0, t_span, dt, chunk_steps, save_every, params_axis, shard, float64 mode
    and every simulate option, defaults included; Python functions by their code,
    constants, closures and the globals they name); every chunk carries the digest too.
    Calling `run_batch` on a folder that holds a different run raises a ValueError that
    names the inputs that differ. Every argument is checked before anything is computed
    or written (ValueError naming it). Returns the list of chunk file paths.
    """
    (t0, t1, dt, n_total, n_chunks, save_every, q0, v0, out_dir,
     options) = _check_args(mech, params, q0, v0, t_span, dt, out_dir, chunk_steps, save_every,
                            params_axis, shard, progress, simulate_kwargs)
    params = jax.tree_util.tree_map(jnp.asarray, params)
    inputs = {"mech": mech, "params": params, "q0": q0, "v0": v0, "t_span": (t0, t1), "dt": dt,
              "chunk_steps": chunk_steps, "save_every": save_every, "params_axis": params_axis,
              "shard": bool(shard), "float64": bool(jax.config.read("jax_enable_x64"))}
    inputs.update({f"option {k}": v for k, v in options.items()})
    digests = {k: _digest(v) for k, v in inputs.items()}
    digest = hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()
    from .. import __version__

    meta = dict(format=RUN_FORMAT, t0=t0, t1=t1, dt=dt, chunk_steps=chunk_steps,
                save_every=save_every, n_chunks=n_chunks, batch=int(q0.shape[0]),
                n_coords=mech.n_coords, digest=digest, inputs=digests,
                versions={"jaxmbs": __version__, "jax": jax.__version__})

    os.makedirs(out_dir, exist_ok=True)
    meta_path = os.path.join(out_dir, "run.json")
    old = _read_meta(out_dir)
    if old is None:
        strays = sorted(f for f in os.listdir(out_dir) if f.startswith("chunk_") and f.endswith(".npz"))
        if strays:
            raise ValueError(f"{out_dir} holds chunk files ({strays[0]}, ...) but no run.json: "
                             "they belong to an unknown run; use another folder")
    elif "digest" not in old:
        raise ValueError(f"{out_dir} holds a run written by an older jaxmbs (run.json without an "
                         "input digest), which cannot be checked against these inputs; load it "
                         "with load_batch, and run into another folder")
    elif old["digest"] != digest:
        diff = sorted(k for k in set(digests) | set(old.get("inputs", {}))
                      if digests.get(k) != old.get("inputs", {}).get(k))
        raise ValueError(f"{out_dir} holds a different run: {', '.join(diff) or 'inputs'} "
                         f"differ from the run recorded in {meta_path}; resume it with the same "
                         "inputs and options, or use another folder")
    elif old.get("versions") != meta["versions"]:
        warnings.warn(f"{out_dir}: resuming a run started with {old.get('versions')} under "
                      f"{meta['versions']}; the chunks computed by each may differ in round-off",
                      stacklevel=2)
    for f in os.listdir(out_dir):  # temporaries of an interrupted write
        if f.endswith(".partial") and (f.startswith("chunk_") or f == "run.partial"):
            os.remove(os.path.join(out_dir, f))

    paths = [os.path.join(out_dir, _chunk_name(k)) for k in range(n_chunks)]
    done, _ = _missing(out_dir, n_chunks)
    for k in range(done):  # every chunk resumed from belongs to this run and is readable
        last = _open_chunk(paths[k], digest, f"resuming {out_dir}",
                           keys=None if k == done - 1 else ())
    dtype = q0.dtype
    q, v, work0 = q0, v0, jnp.zeros(q0.shape[0], dtype)
    if done:
        q, v = jnp.asarray(last["final_q"]), jnp.asarray(last["final_v"])
        work0 = jnp.asarray(last["final_work"])
    mesh = None
    if shard:
        mesh = batch_mesh()
        q, v = shard_batch((q, v), mesh)
        if params_axis == 0:
            params = shard_batch(params, mesh)
    controls = options.pop("controls")
    ctrl_arr = None if controls is None or callable(controls) else controls
    if ctrl_arr is None:
        options["controls"] = controls

    def chunk_controls(k):
        if ctrl_arr is None:
            return None
        sl = slice(k * chunk_steps, (k + 1) * chunk_steps)
        return ctrl_arr[sl] if ctrl_arr.ndim == 2 else ctrl_arr[:, sl]

    step = functools.partial(_chunk, mech=mech, dt=dt, chunk_steps=chunk_steps,
                             save_every=save_every, params_axis=params_axis, mesh=mesh,
                             options=options)
    start = time.time()
    for k in range(done, n_chunks):
        tk = t0 + k * chunk_steps * dt
        tr = step(params, q, v, tk, chunk_controls(k), check_initial=k == 0)
        q, v = tr.q[:, -1], tr.v[:, -1]
        work = tr.work + work0[:, None]
        arrays = {f: np.asarray(getattr(tr, f)) for f in
                  ("t", "q", "v", "lam", "constraint_error", "kinetic", "potential", "status")}
        arrays["work"] = np.asarray(work)
        arrays.update(final_q=np.asarray(q), final_v=np.asarray(v), final_work=np.asarray(work[:, -1]),
                      digest=np.asarray(digest), chunk=np.asarray(k))
        if not os.path.exists(meta_path):  # written once the first chunk has computed
            _atomic_write(meta_path, lambda f: f.write(json.dumps(meta, indent=1).encode()))
        elif k == done and (_read_meta(out_dir) or {}).get("digest") != digest:
            raise ValueError(f"{out_dir}: another run_batch call with other inputs wrote "
                             f"{meta_path} while this one computed its first chunk; use a folder "
                             "of its own for each run")
        _atomic_write(paths[k], lambda f: np.savez(f, **arrays))
        work0 = work[:, -1]
        if progress:
            frac = (k + 1) / n_chunks
            el = time.time() - start
            bar = "#" * int(30 * frac)
            sys.stderr.write(f"\r[{bar:<30}] chunk {k + 1}/{n_chunks}  {el:6.1f} s")
            sys.stderr.flush()
    if progress and done < n_chunks:
        sys.stderr.write("\n")
    return paths


def load_batch(out_dir, *, allow_incomplete=False):
    """Concatenate the chunks written by `run_batch` along time (the chunk boundaries'
    duplicate samples removed). Returns a dict of arrays with batch axis first: t, q, v,
    lam, constraint_error, kinetic, potential, work, and status (the OR over the chunks).

    Only the chunk files that run.json calls for are read; each must carry run.json's input
    digest. An incomplete run (missing chunks: interrupted, or still running) raises a
    ValueError naming the missing chunks and the time reached; allow_incomplete=True loads
    the complete leading chunks instead, with a warning that names what is missing.
    """
    if isinstance(out_dir, bytes) or not isinstance(out_dir, (str, os.PathLike)) or not os.fspath(out_dir):
        raise ValueError(f"out_dir must be a folder path (str or os.PathLike), got {out_dir!r}")
    if not isinstance(allow_incomplete, (bool, np.bool_)):
        raise ValueError(f"allow_incomplete must be True or False, got {allow_incomplete!r}")
    out_dir = os.fspath(out_dir)
    if not os.path.isdir(out_dir):
        raise ValueError(f"out_dir {out_dir!r} is not a folder" +
                         (" (it is a file)" if os.path.exists(out_dir) else " (it does not exist)") +
                         "; give the folder that run_batch wrote")
    meta = _read_meta(out_dir)
    if meta is None:
        raise ValueError(f"{out_dir} has no run.json: not a run_batch folder (or the run has not "
                         "finished its first chunk yet); give the folder that run_batch wrote")
    try:
        t0, t1, dt, cs = (float(meta[k]) for k in ("t0", "t1", "dt", "chunk_steps"))
        n_chunks = int(meta["n_chunks"]) if "n_chunks" in meta else int(round((t1 - t0) / dt)) // int(cs)
    except (TypeError, ValueError, ZeroDivisionError):
        raise ValueError(f"{os.path.join(out_dir, 'run.json')} has an invalid time grid; it is "
                         "not a run_batch record") from None
    digest = meta.get("digest")  # None: a run written before digests (format 1)
    done, missing = _missing(out_dir, n_chunks)
    if missing:
        t_done = t0 + done * cs * dt
        names = ", ".join(_chunk_name(k) for k in missing[:3]) + (", ..." if len(missing) > 3 else "")
        msg = (f"{out_dir}: incomplete run: {n_chunks - len(missing)} of {n_chunks} chunks "
               f"(missing {names}); the complete leading chunks reach t = {t_done:g} of {t1:g} s")
        if not allow_incomplete:
            raise ValueError(msg + "; call run_batch again with the same arguments to finish it, "
                             "or pass allow_incomplete=True to load the complete leading chunks")
        if done == 0:
            raise ValueError(msg + "; nothing to load")
        warnings.warn(msg + "; loading those", stacklevel=2)
    parts = [_open_chunk(os.path.join(out_dir, _chunk_name(k)), digest, f"loading {out_dir}")
             for k in range(done)]
    out = {}
    try:
        for key in _FIELDS:
            segs = [p[key] if i == 0 else p[key][:, 1:] for i, p in enumerate(parts)]
            out[key] = np.concatenate(segs, axis=1)
        out["status"] = np.bitwise_or.reduce([p["status"] for p in parts])
    except (KeyError, ValueError, IndexError) as e:
        raise ValueError(f"{out_dir}: the chunk files do not fit together ({type(e).__name__}: "
                         f"{e}); they are not one run_batch run") from None
    return out
