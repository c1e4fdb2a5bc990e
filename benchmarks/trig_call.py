"""float64 sin / cos on the batch-minor paths: the polynomial written once, outside the
conditional that mends angles beyond its range (`jaxmbs.experimental.elementwise._interp.
TRIG_POLY_CALL`, the default), against the polynomial inside both branches of that
conditional (the form before): compile time, run time and the difference of the results,
same process, same run.

Each float64 sin/cos site of a batch-minor program (`_sincos`) computes FDLIBM's polynomial
for the batch and, only when some member's angle exceeds 1e6 rad, lax.sin / lax.cos for
those members. With the polynomial inside the branches, every site carried two copies of
it; now it is one call (XLA inlines it) and the conditional holds the selects. For each
case and stabiliser this script compiles `simulate_batch` (RK4, dt = 1e-3, float64, batch
over one XLA device per core, `mesh=jaxmbs.batch_mesh()`, vectorize='auto', the whole
Trajectory returned) both ways, with the XLA options a call at the top level gets
(`jaxmbs._xla.scalar_form_options` for the scalar form), then times the two executables
alternately (median of `--repeats` calls each).

    python benchmarks/trig_call.py [--cases double_pendulum slider_crank chain16 chain32]
        [--batch 4096] [--steps 200]

The results file name carries the jax version when --out is not given;
make_benchmarks_md.py renders every results/trig_call*.json.
"""
from __future__ import annotations

CASES = ("double_pendulum", "slider_crank", "chain16", "chain32")


def main(argv=None):
    from same_process_ab import module_flag_ab
    from jaxmbs.experimental.elementwise import _interp
    script = "trig_call"
    return module_flag_ab(script, __doc__, CASES, argv, _interp, "TRIG_POLY_CALL", "twice", "once")


if __name__ == "__main__":
    main()
