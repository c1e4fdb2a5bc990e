"""Spatial slider-crank at equal accuracy: simulated seconds per wall-clock second of jaxmbs
and of MuJoCo's rollout, each at several time steps, with their errors, same run.

`spatial.py` compares the two at the same time step (RK4, dt = 1 ms), where jaxmbs's
errors are 100-1000x smaller than MuJoCo's. Here each simulator also runs at other time
steps and the comparison is made at equal or better accuracy:

* jaxmbs: RK4 at dt = 1, 2, 2.5 and 4 ms with `Projection()`, at 1, 2 and 4 ms with
  `Baumgarte(10)`, and the 8th-order `DormandPrince8` at 8, 10 and 12.5 ms (Projection);
  `simulate_batch` called as the README shows it (batch of identical members,
  `mesh=jaxmbs.batch_mesh()`), timed on its second call; errors of one member over 1 s.
* MuJoCo (`baselines/mujoco_spatial.py`, loop closed by a `connect` equality, RK4): at
  dt = 1 ms with the project's stiff setting (solref time constant 2 ms, the benchmark's
  "tight"), and at dt = 0.5 and 0.25 ms with the time constant 2 dt (MuJoCo asks for a
  time constant of at least 2 dt). The errors of a soft loop closure shrink with its time
  constant, which the time step bounds.

Errors: crank angle and slider position against the independent 1-DOF reference
(tests/reference/spatial.py) at t = 0.4 s and 1 s. Rate: member-steps per second x dt
(simulated seconds per second, summed over the batch). "At equal or better accuracy"
pairs each MuJoCo setting with the jaxmbs run of the largest time step whose four errors
are all no larger than MuJoCo's (the same stabiliser for every pair is not required).

    python benchmarks/spatial_precision.py [--batch 4096] [--seconds 0.2] [--json]

Writes benchmarks/results/spatial_precision[_jax<version>].json (read by
make_benchmarks_md.py).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# (integrator, stabiliser, dt)
JAXMBS_RUNS = tuple(("DormandPrince8", "Projection()", dt) for dt in (8e-3, 10e-3, 12.5e-3)) + tuple(
    ("RK4", "Projection()", dt) for dt in (1e-3, 2e-3, 2.5e-3, 4e-3)) + tuple(
    ("RK4", "Baumgarte(10)", dt) for dt in (1e-3, 2e-3, 4e-3))
MUJOCO = (("tight", 1e-3, 0.002), ("tight_dt_0.5ms", 5e-4, 0.001),
          ("tight_dt_0.25ms", 2.5e-4, 0.0005))  # (name, dt, solref time constant)


def _worker(batch, seconds, repeats, stabilizer, dt, integrator="RK4"):
    """In a subprocess with one XLA device per core: rate and errors at one time step."""
    from spatial import _accuracy, _timed, _worker_setup
    jax, np, mb, ex, mech, params, s0, Q0, V0, stab = _worker_setup(batch, stabilizer)
    integ = getattr(mb, integrator)()
    steps = int(round(seconds / dt))
    first, walls, tr = _timed(jax, mb, mech, params, Q0, V0, steps, dt, stab, repeats, integ)
    return dict(simulator="jaxmbs", setting=f"{integrator}, {stabilizer}", integrator=integrator,
                stabilizer=stabilizer, dt=dt, batch=batch, steps=steps,
                jax=jax.__version__, devices=len(jax.devices()), first_call_s=first,
                wall_s=walls, steps_per_s=batch * steps / float(np.median(walls)),
                failed=int(np.sum(np.asarray(tr.status) != 0)),
                **_accuracy(mb, ex, mech, params, s0, stab, dt, integ))


def run_jaxmbs(batch, seconds, repeats, stabilizer, dt, integrator="RK4"):
    from spatial import in_worker
    return in_worker("spatial_precision", "_worker", batch, seconds, repeats, stabilizer, dt,
                     integrator)


def run_mujoco(batch, seconds, repeats, name, dt, timeconst):
    import mujoco_spatial as mj
    mj.SETTINGS[name] = dict(mj.TIGHT, solref=(timeconst, 1.0))
    a = mj.accuracy(name, timestep=dt)
    r = mj.rollout_throughput(batch, int(round(seconds / dt)), repeats, None, name, timestep=dt)
    return dict(simulator="MuJoCo", setting=f"solref [{timeconst}, 1.0]", name=name, dt=dt,
                batch=batch, steps=r["nstep"], mujoco=mj.mujoco.__version__, wall_s=r["wall_s"],
                steps_per_s=r["steps_per_s"],
                crank_angle_error={str(c): v for c, v in a["crank_angle_error"].items()},
                slider_x_error={str(c): v for c, v in a["slider_x_error"].items()},
                max_loop_gap=a["max_loop_gap"])


def errors(r):
    return [abs(r[k][c]) for k in ("crank_angle_error", "slider_x_error") for c in ("0.4", "1.0")]


def pairs(rows):
    """For each MuJoCo row: the jaxmbs row of the largest dt (then the highest rate) whose
    four errors are all <= MuJoCo's, and the ratio of simulated seconds per second."""
    out = []
    for m in (r for r in rows if r["simulator"] == "MuJoCo"):
        ok = [r for r in rows if r["simulator"] == "jaxmbs"
              and all(a <= b for a, b in zip(errors(r), errors(m)))]
        if not ok:
            out.append(dict(mujoco=m["name"], jaxmbs=None))
            continue
        best = max(ok, key=lambda r: r["steps_per_s"] * r["dt"])
        out.append(dict(mujoco=m["name"], jaxmbs=f"{best['setting']}, dt = {best['dt'] * 1e3:g} ms",
                        ratio=best["steps_per_s"] * best["dt"] / (m["steps_per_s"] * m["dt"])))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--seconds", type=float, default=0.2, help="simulated time per timed call")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.join(HERE, "baselines"))
    from throughput import git_revision
    t_start = time.perf_counter()
    rows = []
    for integ, stab, dt in JAXMBS_RUNS:
        rows.append(run_jaxmbs(args.batch, args.seconds, args.repeats, stab, dt, integ))
        r = rows[-1]
        print(f"jaxmbs {r['setting']:30s} dt {dt:.1e}: {r['steps_per_s']:.3g} steps/s, "
              f"errors {['%.1e' % e for e in errors(r)]}", flush=True)
    for name, dt, tc in MUJOCO:
        rows.append(run_mujoco(args.batch, args.seconds, args.repeats, name, dt, tc))
        r = rows[-1]
        print(f"MuJoCo {name:14s} dt {dt:.0e}: {r['steps_per_s']:.3g} steps/s, "
              f"errors {['%.1e' % e for e in errors(r)]}", flush=True)
    res = dict(command="python benchmarks/spatial_precision.py " + " ".join(argv or sys.argv[1:]),
               machine=dict(cpu_count=os.cpu_count(), platform=platform.platform(),
                            python=platform.python_version(), load=os.getloadavg(),
                            date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                            git=git_revision(ROOT)),
               rows=rows, pairs=pairs(rows), total_s=time.perf_counter() - t_start)
    for p in res["pairs"]:
        print(f"MuJoCo {p['mujoco']}: {p}")
    jv = rows[0]["jax"]
    out = args.out or os.path.join(HERE, "results", f"spatial_precision_jax{jv}.json")
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"wrote {out}")
    if args.json:
        print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
