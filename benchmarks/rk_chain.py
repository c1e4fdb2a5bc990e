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

import argparse


def general_rk4_step(self, f, t, y, h):
    """RK4.step as it was before the chain form: the general explicit-RK stage loop."""
    from jaxmbs import integrators as IG
    A = ((0, 0, 0, 0), (0.5, 0, 0, 0), (0, 0.5, 0, 0), (0, 0, 1.0, 0))
    ks, status = IG._rk_stages(IG._as_term(f), t, y, h, A, IG._RK4_C)
    return IG._combine(y, h, IG._RK4_B, ks), status


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=["double_pendulum", "slider_crank"])
    ap.add_argument("--stabilizers", nargs="*", default=["projection", "baumgarte"])
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from same_process_ab import compare, pair_row, record, start, write
    jax, np, mb, M, machine_info = start()
    from jaxmbs import integrators as IG

    chain = IG.RK4.step
    variants = ("general", "chain")
    res = record("rk_chain", argv, batch=args.batch, steps=args.steps)

    def set_variant(v):
        IG.RK4.step = general_rk4_step if v == "general" else chain

    for case in args.cases:
        for stab in args.stabilizers:
            m = compare(case, stab, args.batch, args.steps, variants, set_variant, args.repeats)
            res["rows"].append(pair_row(case, stab, m, "general", "chain", "general", "chain"))
    return write(res, "rk_chain", args.out)


if __name__ == "__main__":
    main()
