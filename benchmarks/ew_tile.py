"""Tile size of the batch-minor array form (`jaxmbs.simulate.EW_TILE`): steps/s
of the chains at two tile sizes, same process, alternating calls.

`simulate_batch`'s element-wise path runs a device's batch tile by tile (`lax.map` over
tiles of EW_TILE members). For each case and stabiliser this compiles `simulate_batch` (RK4,
dt = 1e-3, float64, one XLA device per core, `mesh=jaxmbs.batch_mesh()`, vectorize='auto')
once per tile size and times the executables alternately, median of 5.

    python benchmarks/ew_tile.py [--cases chain8:4096 chain16:4096 chain32:1024 chain64:512]
        [--tiles 128 256] [--steps 100] [--out benchmarks/results/ew_tile_jax<version>.json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

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
    os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={os.cpu_count()}")
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    sys.path.insert(0, HERE)
    import jaxmbs as mb
    import jaxmbs.simulate as S
    import jaxmbs_models as M
    from throughput import machine_info

    t_start = time.perf_counter()
    saved = S.EW_TILE
    res = dict(command="python benchmarks/ew_tile.py " + " ".join(argv or sys.argv[1:]),
               machine=machine_info(), load_start=os.getloadavg(), steps=args.steps,
               tiles=args.tiles, devices=len(jax.devices()), rows=[])
    mesh = mb.batch_mesh()
    N = args.steps
    for spec in args.cases:
        case, B = spec.split(":")[0], int(spec.split(":")[1])
        mech, params, q0, v0 = M.build(case)
        Q0 = np.tile(np.asarray(q0), (B, 1))
        V0 = np.tile(np.asarray(v0), (B, 1))
        for stab in args.stabilizers:
            st = mb.Projection() if stab == "projection" else mb.Baumgarte(10.0)
            comp = {}
            for T in args.tiles:
                S.EW_TILE = T
                jax.clear_caches()  # (simulate_batch's jit cache does not see the tile)
                f = jax.jit(lambda q, v, st=st: mb.simulate_batch(
                    mech, params, q, v, (0.0, N * 1e-3), 1e-3, params_axis=None, save_every=N,
                    stabilizer=st, mesh=mesh).q)
                t0 = time.perf_counter()
                c = f.lower(Q0, V0).compile()
                comp[T] = (c, time.perf_counter() - t0, np.asarray(c(Q0, V0)))
            S.EW_TILE = saved
            walls = {T: [] for T in args.tiles}
            for r in range(args.repeats):
                for T in (args.tiles if r % 2 == 0 else args.tiles[::-1]):
                    t0 = time.perf_counter()
                    jax.block_until_ready(comp[T][0](Q0, V0))
                    walls[T].append(time.perf_counter() - t0)
            ref = comp[args.tiles[0]][2]
            row = dict(case=case, batch=B, n_coords=mech.n_coords, stabilizer=stab,
                       steps_per_s={str(T): B * N / float(np.median(walls[T])) for T in args.tiles},
                       compile_s={str(T): comp[T][1] for T in args.tiles},
                       max_abs_difference=max(float(np.max(np.abs(comp[T][2] - ref)))
                                              for T in args.tiles))
            res["rows"].append(row)
            print(f"{case:8s} {stab:10s} " + ", ".join(
                f"tile {T}: {row['steps_per_s'][str(T)]:.3g} steps/s" for T in args.tiles)
                + f"; results differ by {row['max_abs_difference']:.1e}", flush=True)
    res["load_end"] = os.getloadavg()
    res["total_s"] = time.perf_counter() - t_start
    out = args.out or os.path.join(HERE, "results", f"ew_tile_jax{jax.__version__}.json")
    with open(out, "w") as fh:
        json.dump(res, fh, indent=1)
    print("wrote", out)
    return res


if __name__ == "__main__":
    main()
