"""Spatial slider-crank throughput and accuracy: jaxmbs against MuJoCo's rollout, same run.

The IFToMM spatial slider-crank of examples/spatial_slider_crank.py (3 bodies, 21
coordinates, 18 velocity coordinates, 17 constraint rows), free, g along -z, RK4 with
dt = 1e-3 s, float64. jaxmbs: `simulate_batch` called the way the README shows it (a
batch of initial states, `jaxmbs.batch_mesh()` over one XLA device per core), timed on
its second call (compile time reported separately), with `Projection()` and
`Baumgarte(10)`. MuJoCo: `benchmarks/baselines/mujoco_spatial.py` (loop closed at the
spherical joint by a `connect` equality; the project's stiff solref/solimp and MuJoCo's
defaults), `mujoco.rollout` on all cores. Accuracy of both against the independent
1-DOF reference (tests/reference/spatial.py): crank angle and slider position errors at
t = 0.4 s and the largest loop-closure error over the run.

    python benchmarks/spatial.py [--batch 4096] [--steps 400] [--json] [--write-md]

Writes benchmarks/results/spatial.json (reported by report.py); --write-md then regenerates
BENCHMARKS.md and docs/performance.md.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "results", "spatial.json")


def _worker_setup(batch, stabilizer):
    """In a worker subprocess: one XLA device per core, float64; returns (jax, np, mb, ex
    (the example module), mech, params, s0 (consistent initial state), Q0, V0 (batch
    copies), the stabiliser named by `stabilizer`)."""
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={os.cpu_count()}"
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    import spatial_slider_crank as ex

    import jaxmbs as mb

    stab = mb.Projection() if stabilizer == "Projection()" else mb.Baumgarte(10.0)
    mech, params, q0, v0 = ex.build()
    s0 = ex.initial_state(mech, params, q0, v0)
    Q0 = np.tile(np.asarray(s0.q), (batch, 1))
    V0 = np.tile(np.asarray(s0.v), (batch, 1))
    return jax, np, mb, ex, mech, params, s0, Q0, V0, stab


def _accuracy(mb, ex, mech, params, s0, stab, dt, integrator=None):
    """One member over 1 s at time step dt against the 1-DOF reference: crank angle and
    slider position errors at t = 0.4 s and 1 s, and the largest constraint error.
    integrator: RK4() when None."""
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from reference import spatial as ref
    acc = mb.simulate(mech, params, s0.q, s0.v, (0.0, 1.0), dt, stabilizer=stab,
                      integrator=integrator or mb.RK4(), save_every=1)
    t = np.asarray(acc.t)
    R = ref.spatial_slider_crank(t)
    ang = ex.crank_angle(np.asarray(acc.q))
    sx = np.asarray(acc.q[:, mech.coordinate_index("slider.x")])
    at = {c: int(np.argmin(np.abs(t - c))) for c in (0.4, 1.0)}
    return dict(crank_angle_error={str(c): float(ang[i] - R["crank_angle"][i]) for c, i in at.items()},
                slider_x_error={str(c): float(sx[i] - R["slider_x"][i]) for c, i in at.items()},
                max_constraint_error=float(np.max(np.asarray(acc.constraint_error))))


def _timed(jax, mb, mech, params, Q0, V0, steps, dt, stab, repeats, integrator=None):
    """simulate_batch as the README calls it (mesh over the devices), `steps` steps of dt
    (integrator: RK4() when None): (first-call seconds, the timed calls' seconds, the last
    Trajectory)."""
    kw = dict(stabilizer=stab, save_every=steps, mesh=mb.batch_mesh(), params_axis=None,
              integrator=integrator or mb.RK4())
    t0 = time.perf_counter()
    tr = mb.simulate_batch(mech, params, Q0, V0, (0.0, steps * dt), dt, **kw)
    jax.block_until_ready(tr.q)
    first = time.perf_counter() - t0
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        tr = mb.simulate_batch(mech, params, Q0, V0, (0.0, steps * dt), dt, **kw)
        jax.block_until_ready(tr.q)
        walls.append(time.perf_counter() - t0)
    return first, walls, tr


def _jaxmbs_worker(batch, steps, repeats, stabilizer):
    """Runs in a subprocess with one XLA device per core: throughput and accuracy."""
    jax, np, mb, ex, mech, params, s0, Q0, V0, stab = _worker_setup(batch, stabilizer)
    dt = 1e-3
    path = mb.batch_vectorization(mech, batch, mesh=mb.batch_mesh(), stabilizer=stab)
    compile_s, walls, tr = _timed(jax, mb, mech, params, Q0, V0, steps, dt, stab, repeats)
    wall = float(np.median(walls))
    return dict(stabilizer=stabilizer, batch=batch, steps=steps, path=path,
                devices=len(jax.devices()), jax=jax.__version__, compile_s=compile_s,
                wall_s=walls, median_wall_s=wall, steps_per_s=batch * steps / wall,
                failed=int(np.sum(np.asarray(tr.status) != 0)),
                **_accuracy(mb, ex, mech, params, s0, stab, dt))


def in_worker(module, func, *args):
    """module.func(*args) (benchmarks/<module>.py) in a fresh Python process, with this
    checkout first on the path; its last output line, parsed as JSON."""
    code = (f"import sys, json; sys.path.insert(0, {HERE!r}); import {module} as m; "
            f"print(json.dumps(m.{func}(*{args!r})))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=3600)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_jaxmbs(batch, steps, repeats, stabilizer):
    return in_worker("spatial", "_jaxmbs_worker", batch, steps, repeats, stabilizer)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Spatial slider-crank: jaxmbs vs MuJoCo rollout, "
                                 "throughput and accuracy in one run.")
    ap.add_argument("--batch", type=int, default=4096, help="mechanisms per batch (default 4096)")
    ap.add_argument("--steps", type=int, default=400, help="RK4 steps of 1 ms (default 400)")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats, median (default 3)")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON line")
    ap.add_argument("--write-md", action="store_true",
                    help="regenerate BENCHMARKS.md and docs/performance.md")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    sys.path.insert(0, os.path.join(HERE, "baselines"))
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import mujoco_spatial as mj
    from throughput import git_revision
    res = dict(case="spatial_slider_crank", command="python benchmarks/spatial.py " + " ".join(argv or sys.argv[1:]),
               machine=dict(cpu_count=os.cpu_count(), platform=platform.platform(),
                            python=platform.python_version(), load=os.getloadavg(),
                            date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), git=git_revision(ROOT)),
               jaxmbs=[run_jaxmbs(args.batch, args.steps, args.repeats, s)
                       for s in ("Projection()", "Baumgarte(10)")],
               mujoco={s: dict(throughput=mj.rollout_throughput(args.batch, args.steps, 5, None, s),
                               accuracy=mj.accuracy(s)) for s in mj.SETTINGS})
    res["total_s"] = time.perf_counter() - t_start
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump(res, f, indent=1)
    mjt = res["mujoco"]["tight"]["throughput"]["steps_per_s"]
    for r in res["jaxmbs"]:
        print(f"jaxmbs {r['stabilizer']:14s} {r['steps_per_s']:.3g} steps/s ({r['steps_per_s'] / mjt:.2f}x "
              f"MuJoCo tight {mjt:.3g}), path {r['path']}, compile {r['compile_s']:.1f} s, crank error "
              f"at 0.4 s {r['crank_angle_error']['0.4']:.2e} rad")
    for s, d in res["mujoco"].items():
        print(f"MuJoCo {s:8s} {d['throughput']['steps_per_s']:.3g} steps/s, crank error at 0.4 s "
              f"{d['accuracy']['crank_angle_error'][0.4]:.2e} rad, loop gap {d['accuracy']['max_loop_gap']:.1e} m")
    if args.write_md:
        import report
        report.main([])
    if args.json:
        print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
