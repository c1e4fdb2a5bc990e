"""Coordinate projection with one Schur factorisation per step (`jaxmbs.Projection()`,
refactor=False, the default) against factorising again at the corrected position for the
velocity correction (refactor=True, what Projection did before): compile time, run time,
program size and the difference of the results, same process, same run.

The position correction factorises A = Phi_q M^-1 Phi_q^T at the step's end state; the
velocity correction then reuses that factor with the residual Phi_q v + Phi_t taken at the
corrected position (`jaxmbs.project`). For each case this script compiles `simulate_batch`
(RK4, dt = 1e-3, float64, batch over one XLA device per core,
`mesh=jaxmbs.batch_mesh()`, vectorize='auto', the whole Trajectory returned) with both
Projection settings, then times the two executables alternately (median of `--repeats`
calls each).

    python benchmarks/projection_factor.py [--cases double_pendulum slider_crank chain16
        chain32 chain64 spatial_slider_crank] [--batch 4096] [--steps 200]

Run it once per jax (the results file name carries the version when --out is not given);
make_benchmarks_md.py renders every results/projection_factor*.json.
"""
from __future__ import annotations

CASES = ("double_pendulum", "slider_crank", "chain16", "chain32", "chain64")


def main(argv=None):
    from same_process_ab import parser, record, run_pairs, start, write
    ap = parser(__doc__, CASES)
    ap.set_defaults(stabilizers=["projection"])
    args = ap.parse_args(argv)
    jax, np, mb, M, machine_info = start()
    res = record("projection_factor", argv, batch=args.batch, steps=args.steps)

    def stabilizer_of(stab, v):
        if stab != "projection":
            raise SystemExit("projection_factor.py compares Projection settings only")
        return mb.Projection(refactor=v == "refactor")

    run_pairs(res, args, ("refactor", "shared"), lambda v: None, ("refactor", "shared"),
              whole=True, stabilizer_of=stabilizer_of)
    return write(res, "projection_factor", args.out)


if __name__ == "__main__":
    main()
