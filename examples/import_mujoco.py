"""Import the shipped MJCF / URDF models and run each in jaxmbs and in MuJoCo side by side.

Models (examples/models/): a 3D double pendulum (two ball joints, armature, spring-damper),
a free spinning body (tennis-racket flip), a six-joint arm (URDF, held in a bent pose and
released; its wrist friction is not mapped, and friction and joint limits are switched
off in both runs: the limits map to a law close to MuJoCo's, not equal to it), a spatial four-bar closed by a <connect> equality and a delta robot closed
by six <connect> equalities. Both simulators: RK4, the same dt, from the same state, zero
controls. jaxmbs keeps every constraint exact (projection); MuJoCo closes loops with its
soft equality constraints (the file's settings, MuJoCo's defaults).

Printed per model: the largest body position / orientation difference jaxmbs - MuJoCo
(m, rad; on the loop models this is MuJoCo's loop opening seen on the bodies), the
largest loop-closure error of each simulator (m), and the relative drift of the
mechanical energy of each (max |E - E0| / max(|E0|, 1); MuJoCo's mj_energyPos +
mj_energyVel). Needs the optional extra: pip install "jaxmbs[mujoco]".

    python examples/import_mujoco.py [--models four_bar,arm6] [--t1 2] [--dt-tree 2.5e-4]
        [--dt-loop 1e-3] [--plot-dir figs/] [--json] [--save benchmarks/results/import_mujoco.json]

--save writes the results with the machine, versions and command (BENCHMARKS.md's section
"Imported models against MuJoCo" is generated from benchmarks/results/import_mujoco.json by
benchmarks/report.py).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

from jaxmbs.io import compare_with_mujoco  # noqa: E402

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
ARM_QPOS = (0.3, 0.8, 0.9, -0.5, 0.7, 0.2)  # a bent pose of arm6.urdf

# name: (file, loop model?, compare_with_mujoco keywords)
CASES = {
    "double_pendulum_3d": ("double_pendulum_3d.xml", False, dict(keyframe="swing")),
    "free_body": ("free_body.xml", False, dict(keyframe="spin")),
    "arm6": ("arm6.urdf", False, dict(qpos=ARM_QPOS, disable=("frictionloss", "limit"))),
    "four_bar": ("spatial_four_bar.xml", True, {}),
    "delta_robot": ("delta_robot.xml", True, {}),
}


def run(name, t1=2.0, dt_tree=2.5e-4, dt_loop=1e-3, plot_dir=None):
    fname, loop, kw = CASES[name]
    dt = dt_loop if loop else dt_tree
    plot = os.path.join(plot_dir, f"import_{name}.png") if plot_dir else None
    t0 = time.perf_counter()
    res = compare_with_mujoco(os.path.join(MODELS, fname), t1, dt, plot=plot, **kw)
    lg = res["loop_gap"]
    return {
        "file": fname, "t1": res["t1"], "dt": dt, "bodies": len(res["bodies"]),
        "jaxmbs_status": res["jaxmbs_status"],
        "max_position_difference": res["max_position_difference"],
        "max_orientation_difference": res["max_orientation_difference"],
        "loop_gap_jaxmbs": float(np.max(lg["jaxmbs"])) if lg["jaxmbs"].size else None,
        "loop_gap_mujoco": float(np.max(lg["mujoco"])) if lg["mujoco"].size else None,
        "energy_drift_jaxmbs": res["energy_drift"]["jaxmbs"],
        "energy_drift_mujoco": res["energy_drift"]["mujoco"],
        "energy_balance_drift_jaxmbs": res["jaxmbs_energy_balance_drift"],
        "unmapped": res["unmapped"], "mujoco_disabled": list(kw.get("disable", ())),
        "plot": plot, "seconds": time.perf_counter() - t0,
    }


def save(out, path, argv, total_s):
    """Write `out` with the machine, versions and command to `path` (JSON)."""
    import jaxlib
    import mujoco

    info = {"command": "python examples/import_mujoco.py " + " ".join(argv),
            "total_s": total_s, "results": out,
            "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                        "jax": jax.__version__, "jaxlib": jaxlib.__version__,
                        "mujoco": mujoco.__version__, "device": str(jax.devices()[0]),
                        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "load": list(os.getloadavg()) if hasattr(os, "getloadavg") else []}}
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w") as fh:
        json.dump(info, fh, indent=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    ap.add_argument("--t1", type=float, default=2.0, help="simulated time of every model (s)")
    ap.add_argument("--dt-tree", type=float, default=2.5e-4, help="dt of the tree models (s)")
    ap.add_argument("--dt-loop", type=float, default=1e-3, help="dt of the loop models (s)")
    ap.add_argument("--plot-dir", default=None, help="write import_<model>.png figures here")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON line (last line)")
    ap.add_argument("--save", default=None, help="write the results with machine info (JSON)")
    argv = sys.argv[1:] if argv is None else list(argv)
    a = ap.parse_args(argv)
    t_start = time.perf_counter()
    names = [s.strip() for s in a.models.split(",") if s.strip()]
    for n in names:
        if n not in CASES:
            ap.error(f"unknown model {n!r} (known: {', '.join(CASES)})")
    if a.plot_dir:
        os.makedirs(a.plot_dir, exist_ok=True)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unmapped features are in the result
        for n in names:
            out[n] = run(n, a.t1, a.dt_tree, a.dt_loop, a.plot_dir)
    if a.save:
        save(out, a.save, argv, time.perf_counter() - t_start)
    if a.json:
        print(json.dumps(out))
        return out
    for n, r in out.items():
        print(f"{n} ({r['file']}, {r['bodies']} bodies, t1 {r['t1']:g} s, dt {r['dt']:g} s, "
              f"{r['seconds']:.1f} s)")
        print(f"  body position difference jaxmbs - MuJoCo: {r['max_position_difference']:.2e} m, "
              f"orientation {r['max_orientation_difference']:.2e} rad")
        if r["loop_gap_jaxmbs"] is not None:
            print(f"  loop-closure error: jaxmbs {r['loop_gap_jaxmbs']:.2e} m, "
                  f"MuJoCo {r['loop_gap_mujoco']:.2e} m")
        print(f"  energy drift: jaxmbs {r['energy_drift_jaxmbs']:.2e}, "
              f"MuJoCo {r['energy_drift_mujoco']:.2e}")
        if r["unmapped"]:
            print("  not mapped: " + "; ".join(r["unmapped"])
                  + (f" (off in MuJoCo: {', '.join(r['mujoco_disabled'])})" if r["mujoco_disabled"] else ""))
    return out


if __name__ == "__main__":
    main()
