"""XLA:CPU's fusion emitters (the jaxlib 0.10 default) against its older LLVM IR emitters
(`xla_cpu_use_fusion_emitters=False`, `jaxmbs._xla.SCALAR_FORM_OPTIONS`, which
`simulate_batch` passes to its program when it takes the scalar batch-minor form on a jaxlib
of `jaxmbs._xla.LEGACY_EMITTERS`): compile time, run time and the difference of the
results, same lowered program, same process, same run.

For each case this script lowers `simulate_batch` once (RK4, dt = 1e-3, float64, batch over
one XLA device per core, `mesh=jaxmbs.batch_mesh()`, vectorize='auto', the whole
Trajectory returned, as a call without a jit around it returns it), compiles it with and
without the option, then times the two executables alternately (median of `--repeats`
calls each). The scalar form (double pendulum, slider-crank) and the array form (the banded
chains) both run; only the scalar form gets the option.

    python benchmarks/fusion_emitters.py [--cases double_pendulum slider_crank chain16]
        [--batch 4096] [--steps 100]

Only jaxlib releases whose compiler has the option can run it (jaxlib 0.12 has none); the
results file name carries the jax version when --out is not given; make_benchmarks_md.py
renders every results/fusion_emitters*.json.
"""
from __future__ import annotations

CASES = ("double_pendulum", "slider_crank", "chain8", "chain16", "chain32")
OPTION = {"xla_cpu_use_fusion_emitters": False}


def main(argv=None):
    from same_process_ab import parser, record, run_pairs, start, write
    ap = parser(__doc__, CASES)
    ap.set_defaults(batch=4096, steps=100)
    args = ap.parse_args(argv)
    jax, np, mb, M, machine_info = start()
    res = record("fusion_emitters", argv, batch=args.batch, steps=args.steps, option=OPTION)
    run_pairs(res, args, ("fusion", "legacy"), lambda v: None, ("fusion", "legacy"), whole=True,
              compile_options_of=lambda v: dict(OPTION) if v == "legacy" else None)
    return write(res, "fusion_emitters", args.out)


if __name__ == "__main__":
    main()
