"""RK4's first stage traced apart from the loop over the other three
(`jaxmbs.integrators.PEEL_FIRST_STAGE`, the default) against all four stages in one loop:
compile time, run time and the difference of the results, same process, same run.

The first stage of a step is evaluated at the step's start state: it alone judges the
solver's dropped rows (on the element-wise paths a batch-wide conditional, whose operands
are then materialised) and reads the `jaxmbs.dynamics.Record` of the save points. With
every stage in one `lax.scan`, both were computed at every stage and kept at the first;
peeled, the loop holds neither, for one more copy of the vector field in the program. For
each case and stabiliser this script compiles `simulate_batch` (RK4, dt = 1e-3, float64,
batch over one XLA device per core, `mesh=jaxmbs.batch_mesh()`, vectorize='auto', the whole
Trajectory returned) both ways, with the XLA options a call at the top level gets
(`jaxmbs._xla.scalar_form_options` for the scalar form), then times the two executables
alternately (median of `--repeats` calls each).

    python benchmarks/peel_stage.py [--cases double_pendulum slider_crank chain16 chain32]
        [--batch 4096] [--steps 200]

The results file name carries the jax version when --out is not given;
make_benchmarks_md.py renders every results/peel_stage*.json.
"""
from __future__ import annotations

CASES = ("double_pendulum", "slider_crank", "chain16", "chain32")


def main(argv=None):
    from same_process_ab import module_flag_ab
    from jaxmbs import integrators
    script = "peel_stage"
    return module_flag_ab(script, __doc__, CASES, argv, integrators, "PEEL_FIRST_STAGE", "rolled", "peeled")


if __name__ == "__main__":
    main()
