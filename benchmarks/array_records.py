"""The array form's save-point Records (multipliers, constraint errors, energies) through one
batch-minor program over every (member, save point) pair (`minor_vmap`,
`jaxmbs.simulate._save_point_records`, the default) against `jax.vmap` (`_diagnostics`,
before): compile time, run time and the difference of the results, same process, same run.

The banded chains run on the batch-minor array form, whose step does not hand out the
Record at its start state; the save points are solved for again after the run. For short
calls (the throughput benchmark's chains run in chunks of about 10 steps) that solve is a
large part of the call. For each case this script compiles `simulate_batch` (RK4,
dt = 1e-3, float64, batch over one XLA device per core, `mesh=jaxmbs.batch_mesh()`,
vectorize='auto', the whole Trajectory returned, as a call without a jit around it returns
it) both ways (`jaxmbs.simulate.ARRAY_FORM_RECORDS`), then times the two executables
alternately (median of `--repeats` calls each).

    python benchmarks/array_records.py [--cases chain16 chain32 chain64] [--batch 2048]
        [--steps 10]

Run it once per jax (the results file name carries the version when --out is not given);
make_benchmarks_md.py renders every results/array_records*.json.
"""
from __future__ import annotations

CASES = ("chain16", "chain32", "chain64")


def main(argv=None):
    from same_process_ab import parser, record, run_pairs, start, write
    ap = parser(__doc__, CASES)
    ap.set_defaults(batch=2048, steps=10)
    args = ap.parse_args(argv)
    jax, np, mb, M, machine_info = start()
    import jaxmbs.simulate as S
    res = record("array_records", argv, batch=args.batch, steps=args.steps)
    default = S.ARRAY_FORM_RECORDS

    def set_variant(v):
        S.ARRAY_FORM_RECORDS = default if v is None else v == "minor_vmap"

    run_pairs(res, args, ("vmap", "minor_vmap"), set_variant, ("vmap", "minor_vmap"), whole=True)
    return write(res, "array_records", args.out)


if __name__ == "__main__":
    main()
