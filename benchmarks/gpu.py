"""Throughput of jaxmbs on an accelerator (GPU): batch sweep up to 10^6, float32 and float64.

    python benchmarks/gpu.py [--cases double_pendulum slider_crank fourbar chain8]
                             [--batches 4096 65536 262144 1048576] [--dtypes float32 float64]
                             [--out benchmarks/results/gpu.json] [--budget 420]

Same jaxmbs configuration as ``throughput.py`` (its ``JaxRunner``: RK4, dt = 1e-3,
``simulate_batch`` with only the last state of a chunk saved, identical mechanisms in the
batch), timed as ``--chunks`` calls of a ``--chunk``-step compiled function: median of
``--repeats`` runs after a warm-up call; compile time separately. Each point also records
the final-time error of the observables against the SciPy DOP853 reference of
``baselines/reference.py`` and the largest joint separation. Results are written after
every point (a run cut short by a time limit keeps what it measured); points are skipped
once the wall-clock ``--budget`` is spent. MuJoCo and the NumPy loop are not run here
(they are CPU baselines; see throughput.py). ``python benchmarks/report.py`` reports
``results/gpu.json`` in BENCHMARKS.md and docs/performance.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "baselines"))

import numpy as np  # noqa: E402
import throughput as T  # noqa: E402


def point(case, batch, dtype, stab, chunk, chunks, repeats, vectorize="auto"):
    import jaxmbs_models as JM
    import reference as R

    r = T.JaxRunner(case, batch, dtype, stab, chunk, vectorize=vectorize)
    r.probe()
    walls = []
    for _ in range(repeats):
        w, _ = r.run(chunks)
        walls.append(w)
    wall = float(np.median(walls))
    steps = chunk * chunks
    _, rec = r.run(chunks, record=True)
    t_end = steps * T.DT
    ref = np.asarray(R.reference_observables(case, t_end), float)
    obs = np.asarray(JM.observables(case, rec["q_final"]), float)
    mem = r.memory()
    return dict(case=case, batch=batch, dtype=dtype, stabilizer=stab, steps=steps,
                vectorize=vectorize, path=r.solver_path,
                steps_per_s=batch * steps / wall, wall_s=wall, walls=walls,
                compile_s=r.compile_s, final_error=float(np.max(np.abs(obs - ref))),
                max_constraint_error=float(rec["gap_max"]), finite=rec["finite"],
                batch_spread=rec["batch_spread"], status=T.status_names(rec["status"]),
                bytes_per_mech=mem.get("xla_bytes_per_mech"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=["double_pendulum", "slider_crank", "fourbar",
                                                   "chain8", "chain32"])
    ap.add_argument("--batches", type=int, nargs="*", default=[4096, 65536, 262144, 1048576])
    ap.add_argument("--dtypes", nargs="*", default=["float32", "float64"])
    ap.add_argument("--stabilizers", nargs="*", default=["projection"])
    ap.add_argument("--vectorize", nargs="*", default=["auto"],
                    help="simulate_batch vectorize= values to time (auto, vmap, elementwise)")
    ap.add_argument("--chunk", type=int, default=100)
    ap.add_argument("--chunks", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=420.0, help="wall-clock seconds for all points")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "gpu.json"))
    ap.add_argument("--append", action="store_true", help="add to the points already in --out")
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    res = dict(machine=T.machine_info(), settings=[vars(args)], points=[], skipped=[])
    if args.append and os.path.exists(args.out):
        with open(args.out) as f:
            old = json.load(f)
        res["points"], res["skipped"] = old["points"], old["skipped"]
        res["settings"] = old["settings"] + res["settings"]
    for case in args.cases:
        for dtype in args.dtypes:
            for stab in args.stabilizers:
                for batch, vec in [(b, v) for b in args.batches for v in args.vectorize]:
                    spent = time.perf_counter() - t_start
                    if spent > args.budget:
                        res["skipped"].append(dict(case=case, batch=batch, dtype=dtype, why="budget"))
                        continue
                    try:
                        p = point(case, batch, dtype, stab, args.chunk, args.chunks, args.repeats, vec)
                    except Exception as e:  # noqa: BLE001 - out of memory etc.: record and go on
                        res["skipped"].append(dict(case=case, batch=batch, dtype=dtype,
                                                   why=f"{type(e).__name__}: {str(e)[:300]}"))
                        print(f"{case} {dtype} {batch}: FAILED {e!r}"[:400], file=sys.stderr, flush=True)
                        continue
                    res["points"].append(p)
                    print(f"{case:16s} {dtype} {stab:10s} {vec:11s} batch {batch:8d}: {p['steps_per_s']:.3e} "
                          f"steps/s, compile {p['compile_s']:.1f} s, err {p['final_error']:.1e}, "
                          f"gap {p['max_constraint_error']:.1e}", file=sys.stderr, flush=True)
                    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
                    with open(args.out + ".tmp", "w") as f:
                        json.dump(res, f, indent=1)
                    os.replace(args.out + ".tmp", args.out)
    res["total_s"] = time.perf_counter() - t_start
    with open(args.out, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(dict(device=res["machine"]["device"], points=[
        {k: p[k] for k in ("case", "batch", "dtype", "steps_per_s", "compile_s", "final_error")}
        for p in res["points"]])))


if __name__ == "__main__":
    main()
