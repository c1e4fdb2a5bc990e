"""Sines and cosines written once per group on the batch-minor array form
(`jaxmbs.experimental.elementwise._minor.SHARE_TRIG`, `_shared_trig`) against one sine-cosine
polynomial per equation: compile time, run time and the difference of the results, same
process, same run.

A planar mechanism's family core evaluates a body's rotation wherever a joint, a force or
the mass matrix uses it, each from its own selection of the coordinates; with the flag on,
`minor_vmap` writes the sine and cosine of every angle a jaxpr scope selects from one array
once and gathers them. For each case and stabiliser this script compiles `simulate_batch`
(RK4, dt = 1e-3, float64, batch over one XLA device per core, `mesh=jaxmbs.batch_mesh()`,
vectorize='auto') with the flag off and on, then times the two executables alternately
(median of `--repeats` calls each). Only the array form (the banded chains) runs through
`minor_vmap`; the scalar form already writes each entry's sine once (`_interp._Ctx.sincos`).

    python benchmarks/share_trig.py [--cases chain8 chain16 chain32 chain64] [--batch 2048]
        [--steps 100]

The results file name carries the jax version when --out is not given;
make_benchmarks_md.py renders every results/share_trig*.json.
"""
from __future__ import annotations

CASES = ("chain8", "chain16", "chain32", "chain64")


def main(argv=None):
    from same_process_ab import module_flag, parser, record, run_pairs, start, write
    ap = parser(__doc__, CASES)
    ap.set_defaults(batch=2048, steps=100)
    args = ap.parse_args(argv)
    jax, np, mb, M, machine_info = start()
    import jaxmbs.experimental.elementwise._minor as MI

    res = record("share_trig", argv, batch=args.batch, steps=args.steps)
    run_pairs(res, args, ("per_equation", "shared"), module_flag(MI, "SHARE_TRIG", "shared"),
              ("per_equation", "shared"), whole=True)
    return write(res, "share_trig", args.out)


if __name__ == "__main__":
    main()
