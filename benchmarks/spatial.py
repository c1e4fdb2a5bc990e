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

Writes benchmarks/results/spatial.json (read by make_benchmarks_md.py).
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


def _jaxmbs_worker(batch, steps, repeats, stabilizer):
    """Runs in a subprocess with one XLA device per core: throughput and accuracy."""
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={os.cpu_count()}"
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import jaxmbs as mb
    import spatial_slider_crank as ex
    from reference import spatial as ref

    stab = mb.Projection() if stabilizer == "Projection()" else mb.Baumgarte(10.0)
    mech, params, q0, v0 = ex.build()
    s0 = ex.initial_state(mech, params, q0, v0)
    dt = 1e-3
    T = steps * dt
    Q0 = np.tile(np.asarray(s0.q), (batch, 1))
    V0 = np.tile(np.asarray(s0.v), (batch, 1))
    mesh = mb.batch_mesh()
    kw = dict(stabilizer=stab, save_every=steps, mesh=mesh, params_axis=None)
    path = mb.batch_vectorization(mech, batch, mesh=mesh, stabilizer=stab)
    t0 = time.perf_counter()
    tr = mb.simulate_batch(mech, params, Q0, V0, (0.0, T), dt, **kw)
    jax.block_until_ready(tr.q)
    compile_s = time.perf_counter() - t0
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        tr = mb.simulate_batch(mech, params, Q0, V0, (0.0, T), dt, **kw)
        jax.block_until_ready(tr.q)
        walls.append(time.perf_counter() - t0)
    wall = float(np.median(walls))
    # accuracy: one member over 0.4 s against the reference
    acc = mb.simulate(mech, params, s0.q, s0.v, (0.0, 1.0), dt, stabilizer=stab, save_every=100)
    t = np.asarray(acc.t)
    R = ref.spatial_slider_crank(t)
    ang = ex.crank_angle(np.asarray(acc.q))
    sx = np.asarray(acc.q[:, mech.coordinate_index("slider.x")])
    i4 = int(np.argmin(np.abs(t - 0.4)))
    i1 = len(t) - 1
    return dict(stabilizer=stabilizer, batch=batch, steps=steps, path=path,
                devices=len(jax.devices()), jax=jax.__version__, compile_s=compile_s,
                wall_s=walls, median_wall_s=wall, steps_per_s=batch * steps / wall,
                failed=int(np.sum(np.asarray(tr.status) != 0)),
                crank_angle_error={"0.4": float(ang[i4] - R["crank_angle"][i4]),
                                   "1.0": float(ang[i1] - R["crank_angle"][i1])},
                slider_x_error={"0.4": float(sx[i4] - R["slider_x"][i4]),
                                "1.0": float(sx[i1] - R["slider_x"][i1])},
                max_constraint_error=float(np.max(np.asarray(acc.constraint_error))))


def run_jaxmbs(batch, steps, repeats, stabilizer):
    code = (f"import sys, json; sys.path.insert(0, {HERE!r}); import spatial; "
            f"print(json.dumps(spatial._jaxmbs_worker({batch}, {steps}, {repeats}, {stabilizer!r})))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=3600)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description="Spatial slider-crank: jaxmbs vs MuJoCo rollout, "
                                 "throughput and accuracy in one run.")
    ap.add_argument("--batch", type=int, default=4096, help="mechanisms per batch (default 4096)")
    ap.add_argument("--steps", type=int, default=400, help="RK4 steps of 1 ms (default 400)")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats, median (default 3)")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON line")
    ap.add_argument("--write-md", action="store_true", help="regenerate BENCHMARKS.md")
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
        import make_benchmarks_md
        make_benchmarks_md.main([])
    if args.json:
        print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
