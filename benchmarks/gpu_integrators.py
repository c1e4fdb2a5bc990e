"""RK4 against DormandPrince8 on the spatial slider-crank, on whatever device JAX has (a GPU).

    python benchmarks/gpu_integrators.py [--batch 65536] [--seconds 0.2] [--out FILE]

The pairs of benchmarks/spatial_precision.py where DormandPrince8 replaced RK4 at equal or
better accuracy (RK4 at 2.5 ms against DormandPrince8 at 12.5 ms; RK4 at 1 ms against
DormandPrince8 at 8 ms), `simulate_batch` of identical members (Projection, float64), timed
as the median of 3 calls after a first (compiling) call; rate = member-steps/s x dt
(simulated seconds per second). The errors of member 0 against the 1-DOF reference
(tests/reference/spatial.py) at the end of the run are printed with each point. Writes
one JSON file (default $OUT/gpu_integrators.json or benchmarks/results/).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402

import jaxmbs as mb  # noqa: E402

RUNS = (("RK4", 2.5e-3), ("DormandPrince8", 12.5e-3), ("RK4", 1e-3), ("DormandPrince8", 8e-3))


def point(ex, ref, mech, params, s0, batch, seconds, integrator, dt):
    steps = int(round(seconds / dt))
    Q0 = np.tile(np.asarray(s0.q), (batch, 1))
    V0 = np.tile(np.asarray(s0.v), (batch, 1))
    kw = dict(stabilizer=mb.Projection(), save_every=steps, params_axis=None,
              integrator=getattr(mb, integrator)())
    t0 = time.perf_counter()
    tr = mb.simulate_batch(mech, params, Q0, V0, (0.0, steps * dt), dt, **kw)
    jax.block_until_ready(tr.q)
    first = time.perf_counter() - t0
    walls = []
    for _ in range(3):
        t0 = time.perf_counter()
        tr = mb.simulate_batch(mech, params, Q0, V0, (0.0, steps * dt), dt, **kw)
        jax.block_until_ready(tr.q)
        walls.append(time.perf_counter() - t0)
    R = ref.spatial_slider_crank(np.array([0.0, steps * dt]))
    q = np.asarray(tr.q[0])
    sps = batch * steps / float(np.median(walls))
    return dict(integrator=integrator, dt=dt, batch=batch, steps=steps, first_call_s=first,
                wall_s=walls, steps_per_s=sps, simulated_s_per_s=sps * dt,
                failed=int(np.sum(np.asarray(tr.status) != 0)),
                crank_angle_error=float(ex.crank_angle(q)[-1] - R["crank_angle"][-1]),
                slider_x_error=float(q[-1, mech.coordinate_index("slider.x")] - R["slider_x"][-1]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=65536)
    ap.add_argument("--seconds", type=float, default=0.2, help="simulated time per call")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", os.path.join(HERE, "results")),
                                                  "gpu_integrators.json"))
    args = ap.parse_args(argv)
    import spatial_slider_crank as ex
    from reference import spatial as ref
    sys.path.insert(0, HERE)  # (after the reference import: throughput puts baselines/ first)
    from throughput import machine_info
    mech, params, q0, v0 = ex.build()
    s0 = ex.initial_state(mech, params, q0, v0)
    res = dict(machine=machine_info(), command="python benchmarks/gpu_integrators.py "
               + " ".join(argv if argv is not None else sys.argv[1:]), points=[])
    for integ, dt in RUNS:
        p = point(ex, ref, mech, params, s0, args.batch, args.seconds, integ, dt)
        res["points"].append(p)
        print(json.dumps(p), flush=True)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
    return res


if __name__ == "__main__":
    main()
