"""vmap against the batch-minor (element-wise) path for one example mechanism, same run.

    python benchmarks/ew_forms.py EXAMPLE [BATCH] [STEPS] [--scalar]

EXAMPLE: a module of examples/ with a `build()` (spatial_slider_crank, andrews_squeezer,
flexible_pendulum, spin_up, ...). Each path is compiled once (time printed), then timed over
5 calls (median wall time per member-step, one XLA device, RK4 + Projection, float64); the
largest state difference between the two is printed. --scalar sets EW_MAX_COORDS to 24 for
this process (the scalar form's bound from jaxlib 0.12, `scalar_max_coords`), so the scalar
form can be measured on older jaxlib too (where it is gated off by default).
"""
import importlib
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402

import jaxmbs as mb  # noqa: E402
import jaxmbs.simulate as S  # noqa: E402

DT = dict(flexible_pendulum=2e-4, andrews_squeezer=1e-5, spin_up=1e-4)


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    if "--scalar" in argv:
        S.EW_MAX_COORDS = 24
    name = args[0]
    B = int(args[1]) if len(args) > 1 else 512
    steps = int(args[2]) if len(args) > 2 else 100
    ex = importlib.import_module(name)
    mech, params, q0, v0 = ex.build()[:4]
    dt = DT.get(name, 1e-3)
    if hasattr(ex, "initial_state"):
        s0 = ex.initial_state(mech, params, q0, v0)
        q0, v0 = s0.q, s0.v
    Q0, V0 = np.tile(np.asarray(q0), (B, 1)), np.tile(np.asarray(v0), (B, 1))
    print(name, "auto path:", mb.batch_vectorization(mech, B, stabilizer=mb.Projection()),
          "form:", S._ew_form(mech, mb.SchurCholesky()), flush=True)
    res = {}
    for vec in ("vmap", "elementwise"):
        f = jax.jit(lambda P, Q, V, vec=vec: mb.simulate_batch(
            mech, P, Q, V, (0.0, steps * dt), dt, stabilizer=mb.Projection(), save_every=steps,
            params_axis=None, vectorize=vec))
        t0 = time.perf_counter()
        c = f.lower(params, Q0, V0).compile()
        tc = time.perf_counter() - t0
        jax.block_until_ready(c(params, Q0, V0).q)
        ws = []
        for _ in range(5):
            t0 = time.perf_counter()
            tr = c(params, Q0, V0)
            jax.block_until_ready(tr.q)
            ws.append(time.perf_counter() - t0)
        w = float(np.median(ws))
        res[vec] = (w, np.asarray(tr.q))
        print(f"  {vec:11s} compile {tc:6.1f} s  {w / (B * steps) * 1e6:8.2f} us/member-step  "
              f"status {np.unique(np.asarray(tr.status))}", flush=True)
    (wa, qa), (wb, qb) = res["vmap"], res["elementwise"]
    print(f"  ratio vmap/elementwise {wa / wb:.2f}  max|dq| {np.max(np.abs(qa - qb)):.2e}")


if __name__ == "__main__":
    main(sys.argv[1:])
