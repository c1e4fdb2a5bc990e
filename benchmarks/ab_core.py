"""Same-run A/B throughput of two checkouts of jaxmbs (e.g. before and after a core change).

    python benchmarks/ab_core.py --a /path/to/old/checkout [--b .] [--vectorize vmap] [--cases double_pendulum
        slider_crank chain16] [--rounds 3] [--batch 4096] [--steps 200] [--json]

Each measurement runs in its own subprocess with PYTHONPATH set to one checkout and one
XLA device per core: `jax.jit` around `simulate_batch(..., mesh=jaxmbs.batch_mesh(),
params_axis=None)` of the case from that checkout's `benchmarks/jaxmbs_models.py`, RK4,
dt = 1e-3, float64, `Projection()` and `Baumgarte(10)` (with --readme-call: simulate_batch
called directly, as the README and throughput.py call it); compile and one warm-up call
excluded, median of 3 timed calls. A and B alternate round by round (A B, B A, A B, ...)
so that load changes on the shared machine hit both; reported per configuration: the
median steps/s of each side over the rounds and the median of the per-round ratios B/A.

--b-unroll-eqns N sets B's element-wise unroll budget
(`jaxmbs.experimental.elementwise._interp.UNROLL_MAX_EQNS`, default 2000) to N: with N large
the RK4 stage loop is written out four times instead of rolled, as the planar-only core's
smaller programs were; it measures what the rolled loop costs in run time and saves in
compile time.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

WORKER = r"""
import os, sys, json, time
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=%(dev)d"
sys.path.insert(0, os.path.join(%(root)r, "benchmarks"))
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
import jaxmbs as mb
if %(unroll)r is not None:
    import jaxmbs.experimental.elementwise._interp as _I
    _I.UNROLL_MAX_EQNS = %(unroll)r
import jaxmbs_models as M
mech, params, q0, v0 = M.build(%(case)r)
stab = mb.Projection() if %(stab)r == "projection" else mb.Baumgarte(10.0)
B, N, dt = %(batch)d, %(steps)d, 1e-3
Q0 = np.tile(np.asarray(q0), (B, 1)); V0 = np.tile(np.asarray(v0), (B, 1))
mesh = mb.batch_mesh()
g = lambda q, v: mb.simulate_batch(mech, params, q, v, (0.0, N * dt), dt, params_axis=None,
                                   save_every=N, stabilizer=stab, mesh=mesh, vectorize=%(vec)r).q
f = g if %(readme)r else jax.jit(g)
t0 = time.perf_counter(); jax.block_until_ready(f(Q0, V0)); comp = time.perf_counter() - t0
jax.block_until_ready(f(Q0, V0))
walls = []
for _ in range(3):
    t0 = time.perf_counter(); jax.block_until_ready(f(Q0, V0)); walls.append(time.perf_counter() - t0)
w = float(np.median(walls))
print(json.dumps(dict(steps_per_s=B * N / w, compile_s=comp, jax=jax.__version__)))
"""


def measure(root, case, stab, batch, steps, vectorize="auto", unroll=None, readme=False):
    code = WORKER % dict(dev=os.cpu_count(), root=os.path.abspath(root), case=case, stab=stab,
                         batch=batch, steps=steps, vec=vectorize, unroll=unroll, readme=readme)
    env = dict(os.environ, PYTHONPATH=os.path.abspath(root))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=os.path.abspath(root), timeout=1800)
    if out.returncode:
        raise RuntimeError(f"{root} {case} {stab}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description="Same-run A/B throughput of two jaxmbs checkouts.")
    ap.add_argument("--a", required=True, help="checkout A (the baseline)")
    ap.add_argument("--b", default=os.path.dirname(HERE), help="checkout B (default: this one)")
    ap.add_argument("--cases", nargs="*", default=["double_pendulum", "slider_crank", "chain16"],
                    help="cases of benchmarks/jaxmbs_models.py")
    ap.add_argument("--stabilizers", nargs="*", default=["projection", "baumgarte"],
                    help="projection and/or baumgarte")
    ap.add_argument("--rounds", type=int, default=3, help="alternating A/B rounds (default 3)")
    ap.add_argument("--batch", type=int, default=4096, help="batch (default 4096)")
    ap.add_argument("--steps", type=int, default=200, help="RK4 steps per call (default 200)")
    ap.add_argument("--vectorize", default="auto",
                    help="simulate_batch's vectorize for both sides: auto (what users get; may pick "
                         "different batch paths in A and B) or vmap (the same path: the core alone)")
    ap.add_argument("--b-unroll-eqns", type=int, default=None,
                    help="B's element-wise unroll budget UNROLL_MAX_EQNS (default: B's own, 2000)")
    ap.add_argument("--readme-call", action="store_true",
                    help="call simulate_batch as the README and throughput.py do (no jax.jit around "
                         "it: its own compiler options apply, and its initial check runs every call) "
                         "instead of inside jax.jit")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON line")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    from throughput import git_revision
    res = dict(command="python benchmarks/ab_core.py " + " ".join(argv or sys.argv[1:]),
               load_start=os.getloadavg(), configs=[], batch=args.batch, steps=args.steps,
               vectorize=args.vectorize, readme_call=args.readme_call, cpus=os.cpu_count(), git=git_revision(args.b),
               git_a=git_revision(args.a), b_unroll_eqns=args.b_unroll_eqns, date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    for case in args.cases:
        for stab in args.stabilizers:
            A, Bv = [], []
            for r in range(args.rounds):
                order = (("A", args.a), ("B", args.b)) if r % 2 == 0 else (("B", args.b), ("A", args.a))
                for side, root in order:
                    x = measure(root, case, stab, args.batch, args.steps, args.vectorize,
                                args.b_unroll_eqns if side == "B" else None, args.readme_call)
                    (A if side == "A" else Bv).append(x)
            ratios = [b["steps_per_s"] / a["steps_per_s"] for a, b in zip(A, Bv)]
            c = dict(case=case, stabilizer=stab, a=[x["steps_per_s"] for x in A],
                     b=[x["steps_per_s"] for x in Bv], a_compile_s=[x["compile_s"] for x in A],
                     b_compile_s=[x["compile_s"] for x in Bv], ratio_median=statistics.median(ratios),
                     ratios=ratios, jax=Bv[0]["jax"])
            res["configs"].append(c)
            print(f"{case:16s} {stab:10s} A {statistics.median(c['a']):.3g} steps/s, B "
                  f"{statistics.median(c['b']):.3g} steps/s, B/A median {c['ratio_median']:.3f} "
                  f"(rounds {', '.join(f'{x:.3f}' for x in ratios)}); compile A "
                  f"{statistics.median(c['a_compile_s']):.1f} s, B {statistics.median(c['b_compile_s']):.1f} s",
                  flush=True)
    res["load_end"] = os.getloadavg()
    res["total_s"] = time.perf_counter() - t_start
    if args.json:
        print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
