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


def main(argv=None):
    from same_process_ab import parser, record, run_pairs, start, write
    ap = parser(__doc__)
    ap.add_argument("--unrolled-eqns", type=int, default=10_000_000)
    args = ap.parse_args(argv)
    jax, np, mb, M, machine_info = start()
    import jaxmbs.experimental.elementwise._interp as I

    default = I.UNROLL_MAX_EQNS
    budgets = (default, args.unrolled_eqns)
    res = record("ew_unroll", argv, batch=args.batch, steps=args.steps, budgets=budgets)

    def set_budget(b):
        I.UNROLL_MAX_EQNS = default if b is None else b

    run_pairs(res, args, budgets, set_budget, ("rolled", "unrolled"))
    return write(res, "ew_unroll", args.out)


if __name__ == "__main__":
    main()
