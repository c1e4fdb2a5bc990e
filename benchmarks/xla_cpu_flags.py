"""Compile time against run time under XLA:CPU's backend options (the jax >= 0.11 CPU compiler).

Since jaxlib 0.11, XLA:CPU hoists a `while` loop whose operands are small (its
"small while loop" pass, threshold 1024 bytes of loop state) into one call that it compiles
as a single LLVM function, the whole loop body written out, instead of one kernel per
fusion. jaxmbs's batch-minor programs qualify: the step loop of a tile, every kernel of
every step, becomes one function. It runs faster (no per-kernel dispatch), and LLVM spends
most of the compile time on it, most of that in unrolling the loops over the tile's members.

This script measures, for each case and each setting of `XLA_FLAGS`, in a fresh process
(XLA reads the flags once, at start-up): the compile time of `simulate_batch` called the way
the README shows it (mesh over one XLA device per core, RK4, dt = 1e-3 s, float64,
identical members), its steps/s (median of `--repeats` warm calls), and the largest
difference of the final state against the default setting's. Settings:

* ``default``: no extra flag;
* ``no_unroll``: ``--xla_backend_extra_options=xla_cpu_disable_loop_unrolling``;
* ``no_hoist``: ``--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=0``
  (one kernel per fusion, as jaxlib 0.10 does).

    python benchmarks/xla_cpu_flags.py                 # all cases, writes results/xla_cpu_flags_jax<v>.json
    python benchmarks/xla_cpu_flags.py --cases slider_crank --settings default no_unroll

The settings of one case run one after the other, in alternating order from case to case;
they are separate processes, so the machine's load between them enters the ratios
(`--rounds` repeats the whole set and reports medians).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SETTINGS = {
    "default": "",
    "no_unroll": "--xla_backend_extra_options=xla_cpu_disable_loop_unrolling",
    "no_hoist": "--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=0",
}
CASES = {  # case: (batch, steps per call)
    "double_pendulum": (4096, 100),
    "slider_crank": (4096, 100),
    "chain16": (2048, 40),
    "chain64": (512, 20),
    "spatial_slider_crank": (2048, 100),
}


def _worker(case, batch, steps, repeats, stabilizer, out_npy):
    """In a fresh process whose XLA_FLAGS are already set: compile and time one case."""
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    sys.path[:0] = [HERE, os.path.join(ROOT, "examples")]
    import jaxmbs as mb

    if case == "spatial_slider_crank":
        import spatial_slider_crank as ex
        mech, params, q0, v0 = ex.build()
        s0 = ex.initial_state(mech, params, q0, v0)
        q0, v0 = np.asarray(s0.q), np.asarray(s0.v)
    else:
        import jaxmbs_models as M
        mech, params, q0, v0 = M.build(case)
    Q0 = np.tile(np.asarray(q0), (batch, 1))
    V0 = np.tile(np.asarray(v0), (batch, 1))
    st = mb.Projection() if stabilizer == "projection" else mb.Baumgarte(10.0)
    mesh = mb.batch_mesh()
    kw = dict(params_axis=None, save_every=steps, stabilizer=st, mesh=mesh)

    def call():
        tr = mb.simulate_batch(mech, params, Q0, V0, (0.0, steps * 1e-3), 1e-3, **kw)
        return jax.block_until_ready(tr.q[:, -1]), tr.status

    t0 = time.perf_counter()
    q, status = call()
    t1 = time.perf_counter()
    call()
    t2 = time.perf_counter()
    walls = []
    for _ in range(repeats):
        t3 = time.perf_counter()
        call()
        walls.append(time.perf_counter() - t3)
    np.save(out_npy, np.asarray(q))
    wall = float(np.median(walls))
    return dict(case=case, batch=batch, steps=steps, stabilizer=stabilizer,
                devices=len(jax.devices()), jax=jax.__version__,
                path=mb.batch_vectorization(mech, batch, mesh=mesh, stabilizer=st),
                compile_s=max(0.0, (t1 - t0) - (t2 - t1)), first_call_s=t1 - t0,
                wall_s=walls, steps_per_s=batch * steps / wall,
                failed=int(np.sum(np.asarray(status) != 0)))


def run_one(case, setting, stabilizer, repeats, tmp):
    batch, steps = CASES[case]
    env = dict(os.environ)
    env["XLA_FLAGS"] = " ".join(
        f for f in (f"--xla_force_host_platform_device_count={os.cpu_count()}", SETTINGS[setting]) if f)
    out_npy = os.path.join(tmp, f"{case}_{setting}.npy")
    code = (f"import sys, json; sys.path.insert(0, {HERE!r}); import xla_cpu_flags as X; "
            f"print('RESULT ' + json.dumps(X._worker({case!r}, {batch}, {steps}, {repeats}, "
            f"{stabilizer!r}, {out_npy!r})))")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=1800)
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not line:
        raise RuntimeError(f"{case} / {setting} failed:\n{p.stderr[-3000:]}")
    r = json.loads(line[-1][len("RESULT "):])
    r.update(setting=setting, xla_flags=env["XLA_FLAGS"], q_file=out_npy)
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--settings", nargs="*", default=list(SETTINGS))
    ap.add_argument("--stabilizer", default="projection", choices=["projection", "baumgarte"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", default=None, help="JSON path (default results/xla_cpu_flags_jax<v>.json)")
    args = ap.parse_args(argv)
    import tempfile

    import numpy as np
    from throughput import machine_info

    tmp = tempfile.mkdtemp(prefix="xla_cpu_flags_")
    rows = []
    t_start = time.perf_counter()
    for rnd in range(args.rounds):
        for i, case in enumerate(args.cases):
            order = args.settings if (i + rnd) % 2 == 0 else args.settings[::-1]
            res = {}
            for s in order:
                r = run_one(case, s, args.stabilizer, args.repeats, tmp)
                r["round"] = rnd
                res[s] = r
                print(f"{case:22s} {s:10s} compile {r['compile_s']:6.1f} s  "
                      f"{r['steps_per_s']:.3g} steps/s  ({r['path']}, jax {r['jax']})", flush=True)
            if "default" in res:
                q_ref = np.load(res["default"]["q_file"])
                for s, r in res.items():
                    r["max_abs_diff_q_vs_default"] = float(np.max(np.abs(np.load(r["q_file"]) - q_ref)))
            rows.extend(res.values())
    # medians over rounds, ratios to the default setting
    summary = []
    for case in args.cases:
        base = [r for r in rows if r["case"] == case and r["setting"] == "default"]
        for s in args.settings:
            rs = [r for r in rows if r["case"] == case and r["setting"] == s]
            c = float(np.median([r["compile_s"] for r in rs]))
            v = float(np.median([r["steps_per_s"] for r in rs]))
            row = dict(case=case, setting=s, compile_s=c, steps_per_s=v, path=rs[0]["path"],
                       batch=rs[0]["batch"], max_abs_diff_q_vs_default=max(
                           r.get("max_abs_diff_q_vs_default", float("nan")) for r in rs))
            if base:
                row["compile_ratio_vs_default"] = c / float(np.median([r["compile_s"] for r in base]))
                row["steps_per_s_ratio_vs_default"] = v / float(np.median([r["steps_per_s"] for r in base]))
            summary.append(row)
    import jax
    out = dict(kind="xla_cpu_flags", command="python benchmarks/xla_cpu_flags.py " + " ".join(argv or sys.argv[1:]),
               machine=machine_info(), settings=SETTINGS, stabilizer=args.stabilizer,
               repeats=args.repeats, rounds=args.rounds, total_s=time.perf_counter() - t_start,
               summary=summary, runs=[{k: v for k, v in r.items() if k != "q_file"} for r in rows])
    path = args.out or os.path.join(HERE, "results", f"xla_cpu_flags_jax{jax.__version__}.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"\n{'case':22s} {'setting':10s} {'compile s':>9s} {'x':>6s} {'steps/s':>9s} {'x':>6s} {'max dq':>8s}")
    for r in summary:
        print(f"{r['case']:22s} {r['setting']:10s} {r['compile_s']:9.1f} "
              f"{r.get('compile_ratio_vs_default', float('nan')):6.2f} {r['steps_per_s']:9.3g} "
              f"{r.get('steps_per_s_ratio_vs_default', float('nan')):6.2f} {r['max_abs_diff_q_vs_default']:8.1e}")
    print("wrote", path)


if __name__ == "__main__":
    main()
