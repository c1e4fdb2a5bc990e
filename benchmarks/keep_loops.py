"""Kept loops against XLA:CPU's hoisted loops (`jaxmbs._xla.keep_loop`, jaxlib >= 0.11):
compile time and steps/s of the same element-wise program both ways, same process,
alternating calls.

Member programs above `jaxmbs._xla.KEEP_LOOPS_EQNS` jaxpr equations, and programs that a
call evaluates fewer than `jaxmbs._xla.KEEP_LOOPS_WORK` times per equation and device, keep
their loops (a custom call in each loop body, which XLA:CPU's small-while-loop hoisting
skips); otherwise XLA compiles each small loop as one LLVM function. For each case and
stabiliser this compiles `simulate_batch` (RK4, dt = 1e-3, float64, one XLA device per core,
`mesh=jaxmbs.batch_mesh()`) with the loops kept ("kept") and never kept ("hoisted",
`keep_loops_above(None)`), and times the executables alternately, median of `--repeats`.

    python benchmarks/keep_loops.py [--cases spatial_slider_crank:4096] [--steps 200]
        [--out benchmarks/results/keep_loops_jax<version>.json]
"""
from __future__ import annotations

import argparse
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=["spatial_slider_crank:4096"], help="case:batch")
    ap.add_argument("--stabilizers", nargs="*", default=["projection", "baumgarte"])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from same_process_ab import compare, record, start, write
    jax, np, mb, M, machine_info = start()
    from jaxmbs import _xla

    saved = _xla.KEEP_LOOPS_EQNS
    res = record("keep_loops", argv, steps=args.steps, keep_loops_eqns=saved,
                 keep_loops_work=_xla.KEEP_LOOPS_WORK,
                 hoists_small_loops=_xla.hoists_small_loops(), repeats=args.repeats)

    def set_variant(v):  # (kept: every program keeps its loops; hoisted: none does)
        _xla.KEEP_LOOPS_EQNS = {"hoisted": 2**62, "kept": 0}.get(v, saved)

    for spec in args.cases:
        case, B = spec.split(":")[0], int(spec.split(":")[1])
        for stab in args.stabilizers:
            m = compare(case, stab, B, args.steps, ["kept", "hoisted"], set_variant, args.repeats)
            row = dict(case=case, batch=B, stabilizer=stab,
                       steps_per_s={v: m[v]["steps_per_s"] for v in m},
                       compile_s={v: m[v]["compile_s"] for v in m},
                       ops={v: m[v]["ops"] for v in m},
                       max_abs_difference=float(np.max(np.abs(m["kept"]["q"] - m["hoisted"]["q"]))))
            res["rows"].append(row)
            print(f"{case} {stab}: kept {row['steps_per_s']['kept']:.3g} steps/s, compile "
                  f"{row['compile_s']['kept']:.1f} s; hoisted {row['steps_per_s']['hoisted']:.3g}, "
                  f"{row['compile_s']['hoisted']:.1f} s; results differ by "
                  f"{row['max_abs_difference']:.1e}", flush=True)
    return write(res, "keep_loops", args.out)


if __name__ == "__main__":
    main()
