"""What RK4's first stage traced apart buys on the scalar batch-minor path, and why: the
dropped-row check in the stage loop.

`jaxmbs.integrators.PEEL_FIRST_STAGE` (the default) traces the first stage of a step apart
from the loop over the other three: it alone judges the solver's dropped rows
(`jaxmbs.saddle.dropped_row_check`) and reads the save points' Record. That costs a second
copy of the vector field in the program, so compile time. This script compiles
`simulate_batch` three ways in one process and times them alternately:

* peeled: the default;
* rolled: all four stages in one loop (`PEEL_FIRST_STAGE = False`): the check is then in
  the loop, evaluated at every stage and kept at the first;
* rolled_unchecked: the same loop with the dropped-row check removed
  (`saddle.checked_rows` patched to return None here, as at a step's later stages): a
  diagnostic only, NOT a configuration the library offers (a singular configuration would
  go unreported).

The gap between rolled and rolled_unchecked is what the check costs inside the loop; the
gap between rolled_unchecked and peeled is what the loop form itself costs. RK4, dt = 1e-3,
float64, batch over one XLA device per core (`mesh=jaxmbs.batch_mesh()`), vectorize='auto',
whole Trajectory returned; compile = trace + lower + XLA.

    python benchmarks/stage_check.py [--cases double_pendulum slider_crank] [--steps 200]

Writes results/stage_check_jax<version>.json; make_benchmarks_md.py renders it.
"""
from __future__ import annotations

VARIANTS = ("peeled", "rolled", "rolled_unchecked")


def main(argv=None):
    from same_process_ab import compare, form_options, parser, record, start, write
    ap = parser(__doc__)
    ap.set_defaults(repeats=5)
    args = ap.parse_args(argv)
    jax, np, mb, M, machine_info = start()
    from jaxmbs import integrators, saddle
    peel, checked = integrators.PEEL_FIRST_STAGE, saddle.checked_rows

    def set_variant(v):
        integrators.PEEL_FIRST_STAGE = peel if v is None else v == "peeled"
        saddle.checked_rows = (lambda dropped: None) if v == "rolled_unchecked" else checked

    res = record("stage_check", argv, batch=args.batch, steps=args.steps, repeats=args.repeats)
    for case in args.cases:
        for stab in args.stabilizers:
            form, opts = form_options(case)
            m = compare(case, stab, args.batch, args.steps, list(VARIANTS), set_variant,
                        args.repeats, whole=True, compile_options_of=lambda v: opts)
            q0 = m["peeled"]["q"]
            row = dict(case=case, stabilizer=stab, form=form, variants={
                v: dict(steps_per_s=m[v]["steps_per_s"], compile_s=m[v]["compile_s"],
                        ops=m[v]["ops"], max_abs_difference=float(np.max(np.abs(m[v]["q"] - q0))))
                for v in VARIANTS})
            res["rows"].append(row)
            print(case, stab, "  ".join(
                f"{v}: {x['steps_per_s']:.3g} steps/s, compile {x['compile_s']:.2f} s"
                for v, x in row["variants"].items()), flush=True)
    set_variant(None)
    return write(res, "stage_check", args.out)


if __name__ == "__main__":
    main()
