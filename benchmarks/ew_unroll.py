"""The element-wise path's RK4 stage loop, rolled (the default) against written out: run time
and compile time, same process, same run.

`elementwise_vmap` writes a scan of at most SCAN_UNROLL iterations out in full when the
written-out body holds at most `UNROLL_MAX_EQNS` jaxpr equations (2000), and keeps it as a
`lax.scan` otherwise: the RK4 stage loop of the double pendulum (4 x 1025 equations) and of
the slider-crank (4 x 2074) stays a loop, so the program holds one copy of the vector field
instead of four. This script measures what that costs in run time and saves in compile time:
for each case and stabiliser it compiles `simulate_batch` (RK4, dt = 1e-3, float64, batch
over one XLA device per core, `mesh=jaxmbs.batch_mesh()`, vectorize='auto') once with the
default budget and once with `--unrolled-eqns` (default 1e7: every stage loop written out),
then times the two executables alternately (median of 7 calls each).

    python benchmarks/ew_unroll.py [--cases double_pendulum slider_crank] [--batch 4096]
        [--steps 200] [--out benchmarks/results/ew_unroll.json]

Run it once per jax (the results file name carries the version when --out is not given);
make_benchmarks_md.py renders every results/ew_unroll*.json.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=["double_pendulum", "slider_crank"])
    ap.add_argument("--stabilizers", nargs="*", default=["projection", "baumgarte"])
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--unrolled-eqns", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={os.cpu_count()}")
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    sys.path.insert(0, HERE)
    import jaxmbs as mb
    import jaxmbs.experimental.elementwise._interp as I
    import jaxmbs_models as M
    from throughput import machine_info

    t_start = time.perf_counter()
    default = I.UNROLL_MAX_EQNS
    budgets = (default, args.unrolled_eqns)
    res = dict(command="python benchmarks/ew_unroll.py " + " ".join(argv or sys.argv[1:]),
               machine=machine_info(), load_start=os.getloadavg(), batch=args.batch,
               steps=args.steps, budgets=budgets, devices=len(jax.devices()), rows=[])
    mesh = mb.batch_mesh()
    B, N = args.batch, args.steps
    for case in args.cases:
        mech, params, q0, v0 = M.build(case)
        Q0 = np.tile(np.asarray(q0), (B, 1))
        V0 = np.tile(np.asarray(v0), (B, 1))
        for stab in args.stabilizers:
            st = mb.Projection() if stab == "projection" else mb.Baumgarte(10.0)
            comp = {}
            for budget in budgets:
                I.UNROLL_MAX_EQNS = budget
                jax.clear_caches()  # (simulate_batch's jit cache does not see the budget)
                f = jax.jit(lambda q, v, st=st: mb.simulate_batch(
                    mech, params, q, v, (0.0, N * 1e-3), 1e-3, params_axis=None, save_every=N,
                    stabilizer=st, mesh=mesh).q)
                t0 = time.perf_counter()
                low = f.lower(Q0, V0)
                c = low.compile()
                ct = time.perf_counter() - t0
                ops = len(re.findall(r"= \"?stablehlo\.", low.as_text()))
                out = np.asarray(c(Q0, V0))
                comp[budget] = (c, ct, ops, out)
            I.UNROLL_MAX_EQNS = default
            walls = {b: [] for b in budgets}
            for r in range(args.repeats):
                for b in (budgets if r % 2 == 0 else budgets[::-1]):
                    t0 = time.perf_counter()
                    jax.block_until_ready(comp[b][0](Q0, V0))
                    walls[b].append(time.perf_counter() - t0)
            rate = {b: B * N / float(np.median(walls[b])) for b in budgets}
            row = dict(case=case, stabilizer=stab,
                       rolled_steps_per_s=rate[budgets[0]], unrolled_steps_per_s=rate[budgets[1]],
                       rolled_compile_s=comp[budgets[0]][1], unrolled_compile_s=comp[budgets[1]][1],
                       rolled_ops=comp[budgets[0]][2], unrolled_ops=comp[budgets[1]][2],
                       max_abs_difference=float(np.max(np.abs(comp[budgets[0]][3] - comp[budgets[1]][3]))))
            res["rows"].append(row)
            print(f"{case:16s} {stab:10s} rolled {row['rolled_steps_per_s']:.3g} steps/s "
                  f"(compile {row['rolled_compile_s']:.1f} s), written out "
                  f"{row['unrolled_steps_per_s']:.3g} (compile {row['unrolled_compile_s']:.1f} s); "
                  f"results differ by {row['max_abs_difference']:.1e}", flush=True)
    res["load_end"] = os.getloadavg()
    res["total_s"] = time.perf_counter() - t_start
    out = args.out or os.path.join(HERE, "results", f"ew_unroll_jax{jax.__version__}.json")
    with open(out, "w") as fh:
        json.dump(res, fh, indent=1)
    print("wrote", out)
    return res


if __name__ == "__main__":
    main()
