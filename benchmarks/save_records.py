"""The save points' multipliers, constraint errors and energies read off the next step's
first RK4 stage (`jaxmbs.dynamics.Record`, the default on the scalar batch-minor path) against
solving for them once more at every save point in a second program (what simulate_batch
did before): compile time, run time and program size, same process, same run.

The first stage of a step evaluates the accelerations at exactly the saved state, so the
scalar batch-minor loop (`jaxmbs.simulate._simulate_ew`) keeps that stage's Record and
runs one step past the last save point for its Record. Integrators without `records`, the
vmap path and the array form (the banded chains: there it cost chain16 3-11 % of its
steps/s for 1.4 s less compile time, jax 0.10.2) still solve at the save points. For each case and stabiliser this script compiles
`simulate_batch` (RK4, dt = 1e-3, float64, batch over one XLA device per core,
`mesh=jaxmbs.batch_mesh()`, vectorize='auto', the whole Trajectory returned, as a call
without a jit around it returns it) both ways, then times the two executables
alternately (median of `--repeats` calls each).

    python benchmarks/save_records.py [--cases double_pendulum slider_crank]
        [--batch 4096] [--steps 200] [--out benchmarks/results/save_records.json]

Run it once per jax (the results file name carries the version when --out is not given);
make_benchmarks_md.py renders every results/save_records*.json.
"""
from __future__ import annotations


def main(argv=None):
    from same_process_ab import parser, record, run_pairs, start, write
    args = parser(__doc__).parse_args(argv)
    jax, np, mb, M, machine_info = start()
    res = record("save_records", argv, batch=args.batch, steps=args.steps)

    def set_variant(v):
        mb.RK4.records = v != "solved"  # (None: the default, records)

    run_pairs(res, args, ("solved", "records"), set_variant, ("solved", "records"), whole=True)
    return write(res, "save_records", args.out)


if __name__ == "__main__":
    main()
