"""Run every benchmark case with both baselines for 1 s of simulated time and compare.

    python benchmarks/baselines/check_baselines.py [--batch 256] [--big-batch 4096]
                                                   [--cases double_pendulum fourbar ...]
                                                   [--json results.json]

* MuJoCo: ``mujoco.rollout`` over all cores, ``--batch`` identical copies (default 256),
  1000 RK4 steps of 1 ms; steps/s = batch * 1000 / wall time (compile excluded).
* NumPy: one mechanism, absolute coordinates, dense KKT solve per RK4 stage, Baumgarte
  alpha = beta = 10, single-threaded BLAS.
* Reference: SciPy DOP853 at tight tolerance (``reference.py``) -- the error of each
  fixed-step baseline against it is printed too.

The double-pendulum tip positions of MuJoCo and NumPy must agree to 1e-6 (same physics,
same integrator; only the coordinates differ); the script exits with status 1 otherwise.
Loop-closure gaps: MuJoCo's soft ``connect`` constraint (max over the trajectory of a
single rollout, and at the end of the batched run); NumPy's max |Phi| (Baumgarte drift).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see numpy_kkt.blas_threads
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases as C  # noqa: E402
import mujoco_models as MJ  # noqa: E402
import numpy as np  # noqa: E402
import numpy_kkt as NK  # noqa: E402
import reference as REF  # noqa: E402

T_END = 1.0
NSTEPS = int(round(T_END / C.DT))
DP_TOL = 1e-6


def fmt(a):
    return "[" + ", ".join(f"{x: .10f}" for x in np.atleast_1d(a)) + "]"


def efmt(a):
    return "[" + ", ".join(f"{x: .2e}" for x in np.atleast_1d(a)) + "]"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--big-batch", type=int, default=0,
                    help="also time the double pendulum at this batch (e.g. 4096; ~12 s)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timing repeats for the double pendulum (best is reported)")
    ap.add_argument("--nthread", type=int, default=None, help="MuJoCo threads (default: all cores)")
    ap.add_argument("--cases", nargs="*", default=list(C.CASES))
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    args = ap.parse_args(argv)

    t_script = time.perf_counter()
    print(f"mujoco {MJ.mujoco.__version__}, numpy {np.__version__}, cores {os.cpu_count()}, "
          f"t_end = {T_END} s, dt = {C.DT}, {NSTEPS} steps; MuJoCo batch {args.batch}")
    print(f"MuJoCo loop constraints: solref = {MJ.LOOP_SOLREF}, solimp = {MJ.LOOP_SOLIMP}\n")
    results = {}
    ok = True
    for case in args.cases:
        C.check_case(case)
        names = C.observable_names(case)
        r = {"observables": names}
        # --- MuJoCo, batched
        reps = args.repeats if case == "double_pendulum" else 1
        rates = []
        for _ in range(reps):
            qpos, wall, rate = MJ.run_mujoco(case, args.batch, NSTEPS, args.nthread)
            rates.append(rate)
        obs_b = MJ.final_observables(case, qpos)
        om = obs_b[0]
        r["mujoco_steps_per_s"] = max(rates)
        r["mujoco_steps_per_s_all"] = rates
        r["mujoco_batch_spread"] = float(np.abs(obs_b - om).max())
        r["mujoco_final"] = om.tolist()
        # --- NumPy, one mechanism
        (q, v), wall_n, rate_n = NK.run_numpy(case, NSTEPS)
        on = NK.final_observables(case, q)
        model = NK.build_model(case)
        phi_end, _ = model.constraint_norms(q, v)
        r["numpy_steps_per_s"] = rate_n
        r["numpy_final"] = on.tolist()
        r["numpy_final_max_abs_phi"] = float(phi_end)
        # --- reference
        ref = REF.reference_observables(case, T_END)
        r["reference_final"] = ref.tolist()
        d = om - on
        r["mujoco_minus_numpy"] = d.tolist()
        r["mujoco_minus_reference"] = (om - ref).tolist()
        r["numpy_minus_reference"] = (on - ref).tolist()
        print(f"== {case}  ({', '.join(names)})")
        print(f"   steps/s   MuJoCo rollout (batch {args.batch}): {max(rates):12.4g}"
              + (f"  (repeats: {', '.join(f'{x:.3g}' for x in rates)})" if reps > 1 else "")
              + f"   NumPy KKT (1 mechanism): {rate_n:10.4g}")
        print(f"   MuJoCo    {fmt(om)}   (max spread over batch {r['mujoco_batch_spread']:.1e})")
        print(f"   NumPy     {fmt(on)}")
        print(f"   reference {fmt(ref)}")
        print(f"   MuJoCo - NumPy {efmt(d)}   MuJoCo - ref {efmt(om - ref)}   NumPy - ref {efmt(on - ref)}")
        if case in ("slider_crank", "fourbar", "double_pendulum"):
            _, _, _, rec = NK.run_numpy(case, NSTEPS, record_every=10)
            e = rec["energy"]
            r["numpy_max_abs_phi"] = float(rec["phi"].max())
            r["numpy_energy_drift"] = float(np.abs(e - e[0]).max())
            r["numpy_energy"] = float(e[0])
            print(f"   NumPy: max |Phi| over the run {rec['phi'].max():.2e}, max |Phi_q v| "
                  f"{rec['phidot'].max():.2e}, energy {e[0]:.6g} J, max |E(t) - E(0)| "
                  f"{r['numpy_energy_drift']:.2e} J")
        if case in ("slider_crank", "fourbar"):
            gap_max = MJ.max_loop_closure_error(case, NSTEPS)
            gap_end = float(MJ.loop_closure_error(case, qpos).max())
            r["mujoco_loop_gap_max"] = gap_max
            r["mujoco_loop_gap_final"] = gap_end
            print(f"   MuJoCo loop-closure gap: max over the run {gap_max:.2e} m, final {gap_end:.2e} m")
        if case == "double_pendulum":
            err = float(np.abs(d).max())
            good = err < DP_TOL
            ok &= good
            print(f"   double-pendulum tip |MuJoCo - NumPy| = {err:.2e} m -> "
                  f"{'OK' if good else 'FAIL'} (tolerance {DP_TOL:g})")
            if args.big_batch:
                _, wall_b, rate_b = MJ.run_mujoco(case, args.big_batch, NSTEPS, args.nthread)
                r[f"mujoco_steps_per_s_batch{args.big_batch}"] = rate_b
                print(f"   MuJoCo rollout at batch {args.big_batch}: {rate_b:.4g} steps/s ({wall_b:.1f} s)")
        results[case] = r
        print()
    total = time.perf_counter() - t_script
    print(f"total script time {total:.1f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"mujoco_version": MJ.mujoco.__version__, "cores": os.cpu_count(),
                       "batch": args.batch, "t_end": T_END, "dt": C.DT,
                       "loop_solref": MJ.LOOP_SOLREF, "loop_solimp": MJ.LOOP_SOLIMP,
                       "cases": results}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
