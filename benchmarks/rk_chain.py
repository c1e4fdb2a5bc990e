"""RK4's stage loop in the chain form (`jaxmbs.integrators._rk_chain`, the default) against
the general-tableau form (`_rk_stages` + `_combine`, what RK4 used before): run time,
compile time and program size, same process, same run.

The general form keeps the four stages in a stacked array, writes stage i with
`ks.at[i].set(k)` and reads the tableau row A[i]; rolled in a `lax.scan`, i is the loop
counter, and the element-wise batch paths turn both into selects on every entry. The chain
form carries the running sum and the last stage only and takes the coefficients as scan
inputs. For each case and stabiliser this script compiles `simulate_batch` (RK4,
dt = 1e-3, float64, batch over one XLA device per core, `mesh=jaxmbs.batch_mesh()`,
vectorize='auto') with each form, then times the two executables alternately (median of
`--repeats` calls each).

    python benchmarks/rk_chain.py [--cases double_pendulum slider_crank] [--batch 4096]
        [--steps 200] [--out benchmarks/results/rk_chain.json]

Run it once per jax (the results file name carries the version when --out is not given);
make_benchmarks_md.py renders every results/rk_chain*.json.
"""
from __future__ import annotations


def general_rk4_step(self, f, t, y, h):
    """RK4.step as it was before the chain form: the general explicit-RK stage loop."""
    from jaxmbs import integrators as IG
    A = ((0, 0, 0, 0), (0.5, 0, 0, 0), (0, 0.5, 0, 0), (0, 0, 1.0, 0))
    ks, status = IG._rk_stages(IG._as_term(f), t, y, h, A, IG._RK4_C)
    return IG._combine(y, h, IG._RK4_B, ks), status


def main(argv=None):
    from same_process_ab import parser, record, run_pairs, start, write
    args = parser(__doc__).parse_args(argv)
    jax, np, mb, M, machine_info = start()
    from jaxmbs import integrators as IG

    chain = IG.RK4.step
    # both forms measured as before the save-point Records (5498457), which the general
    # form's step does not hand out: the save points solved in a second program
    IG.RK4.records = False
    res = record("rk_chain", argv, batch=args.batch, steps=args.steps)

    def set_variant(v):
        IG.RK4.step = general_rk4_step if v == "general" else chain

    run_pairs(res, args, ("general", "chain"), set_variant, ("general", "chain"))
    return write(res, "rk_chain", args.out)


if __name__ == "__main__":
    main()
