"""Imported robots (model files users own) against MuJoCo's rollout, in one process.

    python benchmarks/robots.py [--models ant.xml humanoid.xml ...] [--batch 256]
                                [--steps 100] [--json]

For each model file shipped with gymnasium (``gymnasium/envs/mujoco/assets``), imported
with ``jaxmbs.from_mjcf`` as shipped (joint limits mapped, contacts off on both sides):

* **jaxmbs**: ``simulate_batch`` (RK4, dt = 1 ms, float64, the default projection
  stabiliser), ``batch`` copies of the initial state with a small random velocity
  perturbation, for the default solver (``SchurCholesky``) and for ``TreeSchur``; first
  call (trace, compile and one run) and the best of two timed calls after it;
* **MuJoCo**: ``mujoco.rollout`` with 2 threads on the same file (contacts disabled,
  RK4, the same dt), the same batch and steps;
* **agreement**: the largest difference of the final body positions between the two
  jaxmbs solvers (they solve the same equations).

Results go to ``benchmarks/results/robots.json``; ``report.py`` turns them into the
table of the performance page. A run of the default models takes about 10 minutes on
the 2-core development machine.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

DEFAULT_MODELS = ("reacher.xml", "pusher.xml", "ant.xml", "humanoid.xml")


def _assets():
    import gymnasium
    return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")


def _mujoco_rate(path, batch, steps, qpos, qvel, dt, nthread=2):
    import mujoco
    from mujoco import rollout

    m = mujoco.MjModel.from_xml_path(path)
    m.opt.timestep = dt
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos, qvel
    s0 = np.empty(mujoco.mj_stateSize(m, spec))
    mujoco.mj_getState(m, d, s0, spec)
    s0 = np.tile(s0, (batch, 1))
    datas = [mujoco.MjData(m) for _ in range(nthread)]
    with rollout.Rollout(nthread=nthread) as r:
        r.rollout(m, datas, s0, nstep=1)  # warm-up
        best = np.inf
        for _ in range(2):
            t = time.perf_counter()
            r.rollout(m, datas, s0, nstep=steps)
            best = min(best, time.perf_counter() - t)
    return batch * steps / best


def run_model(name, batch, steps, dt=1e-3):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    import jaxmbs as mb

    path = os.path.join(_assets(), name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mb.from_mjcf(path)
    mech, params, q0, v0 = model.build()
    rng = np.random.default_rng(0)
    res = mb.assemble(mech, params, q0, v0 + 0.01 * rng.normal(size=v0.shape))
    Q = jnp.tile(res.q, (batch, 1))
    V = jnp.tile(res.v, (batch, 1))
    out = dict(model=name, bodies=len(mech.body_names), coords=int(mech.n_coords),
               rows=int(mech.n_constraints), batch=batch, steps=steps)
    finals = {}
    for label, solver in (("schur", mb.SchurCholesky()), ("tree", mb.TreeSchur())):
        kw = dict(params_axis=None, save_every=steps, solver=solver)
        t = time.perf_counter()
        tr = mb.simulate_batch(mech, params, Q, V, (0.0, steps * dt), dt, **kw)
        jax.block_until_ready(tr.q)
        first = time.perf_counter() - t
        best = np.inf
        for _ in range(2):
            t = time.perf_counter()
            tr = mb.simulate_batch(mech, params, Q, V, (0.0, steps * dt), dt, **kw)
            jax.block_until_ready(tr.q)
            best = min(best, time.perf_counter() - t)
        finals[label] = np.asarray(tr.q[:, -1])
        out[f"{label}_first_call_s"] = first
        out[f"{label}_steps_per_s"] = batch * steps / best
        out[f"{label}_status_ok"] = bool(np.all(np.asarray(tr.status) == 0))
    out["schur_vs_tree_max_dq"] = float(np.max(np.abs(finals["schur"] - finals["tree"])))
    info = model.mujoco
    out["mujoco_steps_per_s"] = _mujoco_rate(path, batch, steps, info.qpos, info.qvel, dt)
    for label in ("schur", "tree"):
        out[f"{label}_vs_mujoco"] = out[f"{label}_steps_per_s"] / out["mujoco_steps_per_s"]
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(DEFAULT_MODELS))
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:  # one model in this process
        print(json.dumps(run_model(args.one, args.batch, args.steps)))
        return
    import subprocess
    rows = []
    for name in args.models:  # each model in a process of its own (fresh compile caches)
        p = subprocess.run([sys.executable, __file__, "--one", name, "--batch", str(args.batch),
                            "--steps", str(args.steps)], capture_output=True, text=True)
        if p.returncode:
            rows.append(dict(model=name, error=p.stderr.strip().splitlines()[-1:]))
        else:
            rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), file=sys.stderr)
    result = dict(machine=os.uname().nodename, cpus=os.cpu_count(), rows=rows)
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "results", "robots.json"), "w") as f:
        json.dump(result, f, indent=1)
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
