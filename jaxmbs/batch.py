"""Large and long batch runs: device sharding and a resumable, chunked Monte-Carlo runner."""
from __future__ import annotations

import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .simulate import simulate_batch

__all__ = ["batch_mesh", "shard_batch", "run_batch", "load_batch"]


def batch_mesh(devices=None) -> Mesh:
    """A 1-D mesh with axis name 'batch' over `devices` (default: all devices; with
    `jax.distributed.initialize()` this spans every host's devices)."""
    devices = jax.devices() if devices is None else devices
    return Mesh(np.asarray(devices), ("batch",))


def shard_batch(tree, mesh: Mesh | None = None):
    """Place every leaf's leading (batch) axis across the mesh's 'batch' axis.

    Jitted functions applied to the result (e.g. `simulate_batch`) then run partitioned
    over the devices (GSPMD), each device computing its slice of the batch. The batch
    size must be a multiple of the number of devices.
    """
    mesh = batch_mesh() if mesh is None else mesh
    n = mesh.devices.size

    def put(x):
        x = jnp.asarray(x)
        if x.ndim == 0:
            return jax.device_put(x, NamedSharding(mesh, PartitionSpec()))
        if x.shape[0] % n:
            raise ValueError(f"batch size {x.shape[0]} is not a multiple of the {n} devices; "
                             "pad the batch or choose another size")
        return jax.device_put(x, NamedSharding(mesh, PartitionSpec("batch")))

    return jax.tree_util.tree_map(put, tree)


def _atomic_savez(path, **arrays):
    tmp = path + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def run_batch(mech, params, q0, v0, t_span, dt, out_dir, *, chunk_steps, save_every=None,
              params_axis=0, shard=False, progress=True, **simulate_kwargs):
    """Simulate a batch over a long horizon in chunks, streaming every chunk to disk.

    The horizon t_span = (t0, t1) is cut into chunks of `chunk_steps` steps of dt; chunk
    k is written atomically to `out_dir/chunk_{k:05d}.npz` (t, q, v, lam, constraint_error,
    kinetic, potential, work, status; batch axis first) together with the final state it
    ends in. Calling `run_batch` again with the same arguments resumes after the last
    complete chunk: nothing computed is lost, and the result is identical to an
    uninterrupted run. q0, v0: (batch, n). Every chunk has the same length, so one
    compilation serves all. save_every defaults to chunk_steps (one sample per chunk).
    shard=True places the batch across all devices (`shard_batch`) and splits the work over
    them (`simulate_batch(..., mesh=batch_mesh())`; the batch size must be a multiple of
    the device count).
    Returns the list of chunk file paths.
    """
    t0, t1 = float(t_span[0]), float(t_span[1])
    n_total = int(round((t1 - t0) / dt))
    if n_total % chunk_steps:
        raise ValueError(f"the horizon has {n_total} steps, not a multiple of chunk_steps={chunk_steps}")
    save_every = chunk_steps if save_every is None else save_every
    n_chunks = n_total // chunk_steps
    os.makedirs(out_dir, exist_ok=True)
    meta = dict(t0=t0, t1=t1, dt=dt, chunk_steps=chunk_steps, save_every=save_every,
                batch=int(np.shape(q0)[0]), n_coords=mech.n_coords)
    meta_path = os.path.join(out_dir, "run.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            old = json.load(f)
        if old != meta:
            raise ValueError(f"{out_dir} holds a different run ({old}); use another folder")
    else:
        with open(meta_path + ".tmp", "w") as f:
            json.dump(meta, f)
        os.replace(meta_path + ".tmp", meta_path)

    paths = [os.path.join(out_dir, f"chunk_{k:05d}.npz") for k in range(n_chunks)]
    done = 0
    while done < n_chunks and os.path.exists(paths[done]):
        done += 1
    q, v, work0 = jnp.asarray(q0), jnp.asarray(v0), jnp.zeros(np.shape(q0)[0], jnp.asarray(q0).dtype)
    if done:
        with np.load(paths[done - 1]) as z:
            q, v, work0 = jnp.asarray(z["final_q"]), jnp.asarray(z["final_v"]), jnp.asarray(z["final_work"])
    mesh = None
    if shard:
        mesh = batch_mesh()
        q, v = shard_batch((q, v), mesh)
        if params_axis == 0:
            params = shard_batch(params, mesh)
    step = jax.jit(lambda p, qq, vv, tt0: simulate_batch(
        mech, p, qq, vv, (0.0, chunk_steps * dt), dt, params_axis=params_axis,
        save_every=save_every, t_offset=tt0, mesh=mesh, **simulate_kwargs))
    start = time.time()
    for k in range(done, n_chunks):
        tk = t0 + k * chunk_steps * dt
        tr = step(params, q, v, tk)
        q, v = tr.q[:, -1], tr.v[:, -1]
        work = tr.work + work0[:, None]
        arrays = {f: np.asarray(getattr(tr, f)) for f in
                  ("t", "q", "v", "lam", "constraint_error", "kinetic", "potential", "status")}
        arrays["work"] = np.asarray(work)
        _atomic_savez(paths[k], final_q=np.asarray(q), final_v=np.asarray(v),
                      final_work=np.asarray(work[:, -1]), **arrays)
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


def load_batch(out_dir):
    """Concatenate the chunks written by `run_batch` along time (the chunk boundaries'
    duplicate samples removed). Returns a dict of arrays with batch axis first."""
    files = sorted(f for f in os.listdir(out_dir) if f.startswith("chunk_") and f.endswith(".npz"))
    parts = [dict(np.load(os.path.join(out_dir, f))) for f in files]
    out = {}
    for key in ("t", "q", "v", "lam", "constraint_error", "kinetic", "potential", "work"):
        segs = [p[key] if i == 0 else p[key][:, 1:] for i, p in enumerate(parts)]
        out[key] = np.concatenate(segs, axis=1)
    out["status"] = np.bitwise_or.reduce([p["status"] for p in parts])
    return out
