"""`simulate_batch(..., fold_zeros=True)` (the default) against fold_zeros=False: the zero
entries of params compiled into the scalar batch-minor program as constants, or read as
traced values like every other entry. Compile time, run time and program size, same
process, same run.

The scalar form writes one member's step out scalar by scalar (`jaxmbs.elementwise_vmap`)
and folds what known zeros annihilate. A joint axis along a body axis, a centre of mass on
the reference point, a diagonal inertia tensor or zero gravity components are parameters
(traced: a batch may vary them), so without folding every product with them is computed
for every member. For each case and stabiliser this script compiles `simulate_batch` (RK4,
dt = 1e-3, float64, batch over one XLA device per core, `mesh=jaxmbs.batch_mesh()`,
vectorize='auto', params shared by the batch, the whole Trajectory returned) both ways,
then times the two executables alternately (median of `--repeats` calls each).

    python benchmarks/fold_zeros.py [--cases double_pendulum slider_crank spatial_slider_crank]
        [--batch 4096] [--steps 200] [--out benchmarks/results/fold_zeros.json]

Run it once per jax (the results file name carries the version when --out is not given);
make_benchmarks_md.py renders every results/fold_zeros*.json.
"""
from __future__ import annotations


def main(argv=None):
    from same_process_ab import parser, record, run_pairs, start, write
    args = parser(__doc__, cases=("double_pendulum", "slider_crank", "spatial_slider_crank")
                  ).parse_args(argv)
    jax, np, mb, M, machine_info = start()
    from jaxmbs import _xla
    res = record("fold_zeros", argv, batch=args.batch, steps=args.steps)
    opts = _xla.scalar_form_options()  # (what a top-level simulate_batch call compiles with)
    run_pairs(res, args, ("traced", "folded"), lambda v: None, ("traced", "folded"),
              whole=True, compile_options_of=lambda v: opts,
              simulate_kw_of=lambda v: dict(fold_zeros=v == "folded"))
    return write(res, "fold_zeros", args.out)


if __name__ == "__main__":
    main()
