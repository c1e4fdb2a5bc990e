"""Spatial bodies on an accelerator: correctness against the SciPy reference and throughput.

    python benchmarks/gpu_spatial.py [--batches 4096 65536] [--steps 200] [--out gpu_spatial.json]

1. Correctness: the spatial slider-crank (examples/spatial_slider_crank.py), one member,
   float64, RK4 dt = 2.5e-4 s over 1 s on the default device, against the independent
   1-DOF reference (tests/reference/spatial.py): max position error of the crank pin and
   the slider, quaternion norm error, energy drift; and a batch of 64 members with
   randomised slider masses equal to per-member runs.
2. Throughput: `simulate_batch` (vmap path on a GPU) of identical members, float64 and
   float32, RK4 dt = 1e-3, median of 3 timed calls after compilation.
Writes one JSON file (default $OUT/gpu_spatial.json or benchmarks/results/).
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

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import spatial_slider_crank as ex  # noqa: E402

import jaxmbs as mb  # noqa: E402
from jaxmbs.spatial.geometry import mv, quat_to_R  # noqa: E402


def correctness():
    from reference import spatial as ref
    t0 = time.perf_counter()
    mech, params, traj, _ = ex.run(1.0, 2.5e-4)
    t, q = np.asarray(traj.t), np.asarray(traj.q)
    R = ref.spatial_slider_crank(t)
    i = mech.coordinate_index("crank.x")
    B = np.asarray(q[:, i:i + 3] + mv(jax.vmap(quat_to_R)(q[:, i + 3:i + 7]), jnp.asarray([0, 0, ex.L_CRANK])))
    C = q[:, [mech.coordinate_index(f"slider.{c}") for c in "xyz"]]
    norms = [np.max(np.abs(np.linalg.norm(q[:, j + 3:j + 7], axis=1) - 1))
             for j in (mech.coordinate_index(f"{b}.x") for b in ("crank", "rod", "slider"))]
    s0 = ex.initial_state(*ex.build())
    mech, params, q0, v0 = ex.build()
    masses = jnp.linspace(1.5, 2.5, 64)
    P = jax.vmap(lambda m: mech.replace(params, {"slider.mass": m}))(masses)
    tb = mb.simulate_batch(mech, P, s0.q, s0.v, (0.0, 0.2), 1e-3, state_axis=None, save_every=200)
    one = [mb.simulate(mech, mech.replace(params, {"slider.mass": masses[k]}), s0.q, s0.v, (0.0, 0.2),
                       1e-3, save_every=200).q[-1] for k in (0, 31, 63)]
    dev = max(float(np.max(np.abs(np.asarray(tb.q[k, -1]) - np.asarray(o)))) for k, o in zip((0, 31, 63), one))
    return dict(device=str(jax.devices()[0]), jax=jax.__version__,
                max_error_B=float(np.max(np.abs(B - R["B"]))), max_error_C=float(np.max(np.abs(C - R["C"]))),
                quaternion_norm_error=float(max(norms)), energy_drift=float(traj.energy_drift()),
                status=int(traj.status), batch_vs_single_max_diff=dev,
                batch_failed=int(np.sum(np.asarray(tb.status) != 0)), wall_s=time.perf_counter() - t0)


def throughput(batch, steps, dtype, stab):
    mech, params, q0, v0 = ex.build()
    s0 = ex.initial_state(mech, params, q0, v0)
    cast = lambda x: jnp.asarray(x, dtype)
    params = jax.tree_util.tree_map(cast, params)
    Q0 = jnp.tile(cast(s0.q), (batch, 1))
    V0 = jnp.tile(cast(s0.v), (batch, 1))
    st = mb.Projection() if stab == "projection" else mb.Baumgarte(10.0)
    f = jax.jit(lambda q, v: mb.simulate_batch(mech, params, q, v, (0.0, steps * 1e-3), 1e-3,
                                               params_axis=None, save_every=steps, stabilizer=st,
                                               check_initial=False).q)
    t0 = time.perf_counter()
    jax.block_until_ready(f(Q0, V0))
    comp = time.perf_counter() - t0
    walls = []
    for _ in range(3):
        t0 = time.perf_counter()
        out = jax.block_until_ready(f(Q0, V0))
        walls.append(time.perf_counter() - t0)
    w = float(np.median(walls))
    return dict(batch=batch, steps=steps, dtype=str(np.dtype(dtype)), stabilizer=stab,
                compile_s=comp, median_wall_s=w, steps_per_s=batch * steps / w,
                finite=bool(np.all(np.isfinite(np.asarray(out)))))


def main(argv=None):
    ap = argparse.ArgumentParser(description="Spatial slider-crank on an accelerator: "
                                 "correctness against the reference and throughput.")
    ap.add_argument("--batches", type=int, nargs="*", default=[4096, 65536], help="batch sizes")
    ap.add_argument("--steps", type=int, default=200, help="RK4 steps per timed call")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", os.path.join(HERE, "results")),
                                                  "gpu_spatial.json"), help="JSON output")
    args = ap.parse_args(argv)
    res = dict(correctness=correctness(), throughput=[])
    sys.path.insert(0, HERE)  # (after correctness(): throughput puts baselines/ first on the path)
    from throughput import machine_info
    res["machine"] = machine_info()
    print(json.dumps(res["correctness"]), flush=True)
    for dtype in (jnp.float32, jnp.float64):
        for b in args.batches:
            for stab in ("projection", "baumgarte"):
                r = throughput(b, args.steps, dtype, stab)
                res["throughput"].append(r)
                print(json.dumps(r), flush=True)
                with open(args.out, "w") as fh:
                    json.dump(res, fh, indent=1)
    return res


if __name__ == "__main__":
    main()
