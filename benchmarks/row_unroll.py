"""The banded row loops (`jaxmbs.banded`: the Cholesky factorisation and the substitutions)
one row per iteration against `jaxmbs._xla.ROW_SCAN_UNROLL` rows per iteration, forced on
whatever jaxlib runs it: compile time, run time and the difference of the results, same
process, same run.

By default jaxmbs takes several rows per iteration on XLA:CPU releases that do not hoist
small loops (jaxlib < 0.11: every loop iteration runs as separate small kernels) and one
row elsewhere (`jaxmbs._xla.row_scan_unroll`). For each chain and stabiliser this script
compiles `simulate_batch` (RK4, dt = 1e-3, float64, batch over one XLA device per core,
`mesh=jaxmbs.batch_mesh()`, vectorize='auto', whole Trajectory returned) both ways, then
times the two executables alternately (median of `--repeats` calls each). Batches as
throughput.py runs the chains: 4096, 2048, 1024, 512 members for 8, 16, 32, 64 bodies.

    python benchmarks/row_unroll.py [--cases chain8 chain16 chain32 chain64] [--steps 100]

The results file name carries the jax version when --out is not given;
make_benchmarks_md.py renders every results/row_unroll*.json.
"""
from __future__ import annotations

CASES = ("chain8", "chain16", "chain32", "chain64")
BATCH = {"chain8": 4096, "chain16": 2048, "chain32": 1024, "chain64": 512}


def main(argv=None):
    from same_process_ab import parser, record, run_pairs, start, write
    ap = parser(__doc__, CASES)
    ap.set_defaults(steps=100)
    args = ap.parse_args(argv)
    jax, np, mb, M, machine_info = start()
    import jaxmbs.banded as B
    from jaxmbs import _xla

    saved = B.row_scan_unroll

    def set_variant(v):
        k = {"rolled": 1, "unrolled": _xla.ROW_SCAN_UNROLL}.get(v)
        B.row_scan_unroll = saved if k is None else (lambda m, k=k: max(1, min(k, m)))

    def per_case(case):
        return BATCH.get(case, args.batch), None, dict(batch=BATCH.get(case, args.batch))

    res = record("row_unroll", argv, batch="per case", steps=args.steps,
                 unroll=_xla.ROW_SCAN_UNROLL)
    run_pairs(res, args, ("rolled", "unrolled"), set_variant, ("rolled", "unrolled"),
              whole=True, per_case=per_case)
    return write(res, "row_unroll", args.out)


if __name__ == "__main__":
    main()
