"""Slider-crank at equal accuracy: simulated seconds per wall-clock second of jaxmbs and of
MuJoCo's rollout, each at several time steps, with their errors, same run.

``--case spatial`` (default): the IFToMM spatial slider-crank of `spatial.py`.
``--case planar``: the free-running planar slider-crank of `throughput.py` (issue 5's case:
crank 150 rad/s, no gravity; `baselines/cases.py`), its MuJoCo model
`baselines/mujoco_models.py`, its reference the 1-DOF energy integral of
`baselines/reference.py`; jaxmbs's RK4 runs at dt = 1, 0.8, 0.625 and 0.5 ms and
DormandPrince8 at 2, 2.5 and 4 ms (the crank turns 0.15 rad per ms). Everything else as
below.

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

    python benchmarks/spatial_precision.py [--case spatial|planar] [--batch 4096]
                                           [--seconds 0.2] [--json]

Writes benchmarks/results/<case>_precision.json (spatial_precision.json or
planar_precision.json; reported by report.py).
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
# the planar slider-crank turns 1.5x as fast as the spatial one: smaller steps
PLANAR_JAXMBS_RUNS = tuple(("DormandPrince8", "Projection()", dt) for dt in (2e-3, 2.5e-3, 4e-3)) + tuple(
    ("RK4", "Projection()", dt) for dt in (5e-4, 6.25e-4, 8e-4, 1e-3)) + tuple(
    ("RK4", "Baumgarte(10)", dt) for dt in (5e-4, 8e-4, 1e-3))
CHECKPOINTS = (0.4, 1.0)  # s: the errors compared


def _planar_setup(batch, stabilizer):
    """In a worker subprocess: (jax, np, mb, mech, params, q0, v0, Q0, V0, stab) of the
    planar slider-crank (`jaxmbs_models.build`), one XLA device per core, float64."""
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={os.cpu_count()}"
    import jax
    jax.config.update("jax_enable_x64", True)
    import jaxmbs_models as JM
    import numpy as np

    import jaxmbs as mb

    stab = mb.Projection() if stabilizer == "Projection()" else mb.Baumgarte(10.0)
    mech, params, q0, v0 = JM.build("slider_crank")
    return jax, np, mb, mech, params, q0, v0, np.tile(q0, (batch, 1)), np.tile(v0, (batch, 1)), stab


def _planar_reference():
    """{t: (crank angle rad, slider x m)} of the exact solution at the checkpoints."""
    import reference as R
    return {c: R.slider_crank_reference(c) for c in CHECKPOINTS}


def _planar_accuracy(mb, mech, params, q0, v0, stab, dt, integrator):
    """One member over 1 s at time step dt: crank angle and slider x errors at the
    checkpoints, the largest constraint error, and the kinetic energy's relative change at
    the last checkpoint and its largest relative excursion (the mechanism is conservative
    and its potential energy constant: the exact solution keeps its kinetic energy)."""
    import jaxmbs_models as JM
    import numpy as np
    acc = mb.simulate(mech, params, q0, v0, (0.0, CHECKPOINTS[-1]), dt, stabilizer=stab,
                      integrator=integrator, save_every=1)
    t = np.asarray(acc.t)
    ref = _planar_reference()
    obs = {c: JM.observables("slider_crank", np.asarray(acc.q)[int(np.argmin(np.abs(t - c)))])
           for c in CHECKPOINTS}
    K = np.asarray(acc.kinetic)  # (no gravity, no applied forces: the energy is kinetic)
    return dict(crank_angle_error={str(c): float(obs[c][0] - ref[c][0]) for c in CHECKPOINTS},
                slider_x_error={str(c): float(obs[c][1] - ref[c][1]) for c in CHECKPOINTS},
                max_constraint_error=float(np.max(np.asarray(acc.constraint_error))),
                kinetic_change=float((K[-1] - K[0]) / K[0]),
                kinetic_excursion=float(np.max(np.abs(K - K[0])) / K[0]))


def _worker(batch, seconds, repeats, stabilizer, dt, integrator="RK4", case="spatial"):
    """In a subprocess with one XLA device per core: rate and errors at one time step."""
    from spatial import _accuracy, _timed, _worker_setup
    if case == "spatial":
        jax, np, mb, ex, mech, params, s0, Q0, V0, stab = _worker_setup(batch, stabilizer)
        accuracy = lambda integ: _accuracy(mb, ex, mech, params, s0, stab, dt, integ)  # noqa: E731
    else:
        jax, np, mb, mech, params, q0, v0, Q0, V0, stab = _planar_setup(batch, stabilizer)
        accuracy = lambda integ: _planar_accuracy(mb, mech, params, q0, v0, stab, dt, integ)  # noqa: E731
    integ = getattr(mb, integrator)()
    steps = int(round(seconds / dt))
    first, walls, tr = _timed(jax, mb, mech, params, Q0, V0, steps, dt, stab, repeats, integ)
    return dict(simulator="jaxmbs", setting=f"{integrator}, {stabilizer}", integrator=integrator,
                stabilizer=stabilizer, dt=dt, batch=batch, steps=steps,
                jax=jax.__version__, devices=len(jax.devices()), first_call_s=first,
                wall_s=walls, steps_per_s=batch * steps / float(np.median(walls)),
                failed=int(np.sum(np.asarray(tr.status) != 0)), **accuracy(integ))


def run_jaxmbs(batch, seconds, repeats, stabilizer, dt, integrator="RK4", case="spatial"):
    from spatial import in_worker
    return in_worker("spatial_precision", "_worker", batch, seconds, repeats, stabilizer, dt,
                     integrator, case)


def run_mujoco_planar(batch, seconds, repeats, name, dt, timeconst):
    """MuJoCo's planar slider-crank (`baselines/mujoco_models.py`, the stiff solimp of
    throughput.py) at time step dt with solref time constant `timeconst`."""
    import mujoco
    import mujoco_models as MJ
    import numpy as np
    kw = dict(timestep=dt, solref=(timeconst, 1.0))
    ref = _planar_reference()
    crank, slider, gap = {}, {}, 0.0
    for c in CHECKPOINTS:
        qpos, _, _, g = MJ.run_mujoco("slider_crank", 1, int(round(c / dt)), nthread=1,
                                      return_trajectory_stat=lambda q: MJ.loop_closure_error(
                                          "slider_crank", q).max(), **kw)
        o = MJ.final_observables("slider_crank", qpos)[0]
        crank[str(c)], slider[str(c)] = float(o[0] - ref[c][0]), float(o[1] - ref[c][1])
        gap = max(gap, g)
    steps = int(round(seconds / dt))
    walls = [MJ.run_mujoco("slider_crank", batch, steps, **kw)[1] for _ in range(repeats)]
    return dict(simulator="MuJoCo", setting=f"solref [{timeconst}, 1.0]", name=name, dt=dt,
                batch=batch, steps=steps, mujoco=mujoco.__version__, wall_s=walls,
                steps_per_s=batch * steps / float(np.median(walls)),
                crank_angle_error=crank, slider_x_error=slider, max_loop_gap=gap)


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
    return [abs(r[k][str(c)]) for k in ("crank_angle_error", "slider_x_error") for c in CHECKPOINTS]


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
    ap.add_argument("--case", choices=("spatial", "planar"), default="spatial")
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
    planar = args.case == "planar"
    for integ, stab, dt in (PLANAR_JAXMBS_RUNS if planar else JAXMBS_RUNS):
        rows.append(run_jaxmbs(args.batch, args.seconds, args.repeats, stab, dt, integ, args.case))
        r = rows[-1]
        print(f"jaxmbs {r['setting']:30s} dt {dt:.1e}: {r['steps_per_s']:.3g} steps/s, "
              f"errors {[f'{e:.1e}' for e in errors(r)]}", flush=True)
    for name, dt, tc in MUJOCO:
        rows.append((run_mujoco_planar if planar else run_mujoco)(args.batch, args.seconds,
                                                                  args.repeats, name, dt, tc))
        r = rows[-1]
        print(f"MuJoCo {name:14s} dt {dt:.0e}: {r['steps_per_s']:.3g} steps/s, "
              f"errors {[f'{e:.1e}' for e in errors(r)]}", flush=True)
    res = dict(case=args.case,
               command="python benchmarks/spatial_precision.py " + " ".join(argv or sys.argv[1:]),
               machine=dict(cpu_count=os.cpu_count(), platform=platform.platform(),
                            python=platform.python_version(), load=os.getloadavg(),
                            date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                            git=git_revision(ROOT)),
               rows=rows, pairs=pairs(rows), total_s=time.perf_counter() - t_start)
    for p in res["pairs"]:
        print(f"MuJoCo {p['mujoco']}: {p}")
    out = args.out or os.path.join(HERE, "results", f"{args.case}_precision.json")
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"wrote {out}")
    if args.json:
        print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
