"""Tile size of the batch-minor array form (`jaxmbs.simulate.EW_TILE`, and EW_TILE_LARGE for
members of more than EW_TILE_LARGE_ABOVE velocity coordinates): steps/s of the chains at
two tile sizes (each forced on every member size), same process, alternating calls.

`simulate_batch`'s element-wise path runs a device's batch tile by tile (`lax.map` over
tiles of EW_TILE members). For each case and stabiliser this compiles `simulate_batch` (RK4,
dt = 1e-3, float64, one XLA device per core, `mesh=jaxmbs.batch_mesh()`, vectorize='auto')
once per tile size and times the executables alternately, median of 5.

    python benchmarks/ew_tile.py [--cases chain8:4096 chain16:4096 chain32:1024 chain64:512]
        [--tiles 128 256] [--steps 100] [--out benchmarks/results/ew_tile_jax<version>.json]
"""
from __future__ import annotations

import argparse
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=["chain8:4096", "chain16:4096", "chain32:1024",
                                                   "chain64:512"], help="case:batch")
    ap.add_argument("--stabilizers", nargs="*", default=["projection", "baumgarte"])
    ap.add_argument("--tiles", nargs="*", type=int, default=[128, 256])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from same_process_ab import compare, record, start, write
    jax, np, mb, M, machine_info = start()
    import jaxmbs.simulate as S

    saved = S.EW_TILE, S.EW_TILE_LARGE
    res = record("ew_tile", argv, steps=args.steps, tiles=args.tiles)

    def set_tile(t):
        S.EW_TILE, S.EW_TILE_LARGE = saved if t is None else (t, t)

    for spec in args.cases:
        case, B = spec.split(":")[0], int(spec.split(":")[1])
        for stab in args.stabilizers:
            m = compare(case, stab, B, args.steps, args.tiles, set_tile, args.repeats)
            ref = m[args.tiles[0]]["q"]
            row = dict(case=case, batch=B, n_coords=M.build(case)[0].n_coords, stabilizer=stab,
                       steps_per_s={str(T): m[T]["steps_per_s"] for T in args.tiles},
                       compile_s={str(T): m[T]["compile_s"] for T in args.tiles},
                       max_abs_difference=max(float(np.max(np.abs(m[T]["q"] - ref)))
                                              for T in args.tiles))
            res["rows"].append(row)
            print(f"{case:8s} {stab:10s} " + ", ".join(
                f"tile {T}: {row['steps_per_s'][str(T)]:.3g} steps/s" for T in args.tiles)
                + f"; results differ by {row['max_abs_difference']:.1e}", flush=True)
    return write(res, "ew_tile", args.out)


if __name__ == "__main__":
    main()
