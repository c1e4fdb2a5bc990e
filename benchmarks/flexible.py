"""Throughput of a batch of flexible slider-cranks (issue 20): one `simulate_batch` call.

The model of examples/flexible_slider_crank.py (2 ANCF elements on the rod, steel,
crank at 150 rad/s), each member with its own square section side drawn uniformly from
6-10 mm (area and I per member, traced Params leaves), generalized-alpha
(rho_inf = 0.8) at dt = 1e-4 s, float64, vectorize="vmap". The first call compiles
and runs; the figure is the second call (run only) and counts member-steps per second:
batch * steps / wall.

    python benchmarks/flexible.py [--batch 1024] [--revolutions 0.5] [--elements 2] [--json]
        [--integrator genalpha|rk4] [--dt DT] [--out benchmarks/results/flexible.json]

`--integrator rk4` runs explicit RK4 + Projection() instead (default dt 1e-5 s, which
resolves the rod's axial modes), with vectorize="auto" (the batch-minor path on a CPU).

`--rod ffr` replaces the ANCF rod by the floating-frame-of-reference rod of
examples/ffr_slider_crank.py (2 pinned modes, 11 coordinates in all) under RK4 +
Projection() at dt 5e-5 s, vectorize="auto"; its members differ in Young's modulus
(1.8e11-2.4e11 Pa, a Params leaf) instead of the section side (the section is fixed when
the modes are computed).

--json prints the record as one JSON object (last line) and writes it to --out.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
import ffr_slider_crank as FFR  # noqa: E402
import flexible_slider_crank as FSC  # noqa: E402

import jaxmbs  # noqa: E402


def machine():
    """CPU model, cores, jax version, device, XLA_FLAGS, load average (1, 5, 15 min, at
    the end of the run: other processes on the machine slow the figure down) and date."""
    import datetime
    import platform

    cpu = platform.machine()
    if os.path.exists("/proc/cpuinfo"):
        names = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    return {"cpu": cpu, "cores": os.cpu_count(), "jax": jax.__version__,
            "device": str(jax.devices()[0]), "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
            "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")}


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run_ffr(batch=1024, revolutions=0.5, modes=2, dt=5e-5, save_every=10, seed=0):
    """The FFR rod (module docstring): RK4 + Projection, vectorize='auto'."""
    model, mech, params, q0, v0 = FFR.build(modes)
    Es = jnp.asarray(np.random.default_rng(seed).uniform(1.8e11, 2.4e11, batch))
    pb = jax.vmap(lambda e: mech.replace(params, {"rod.E": e}))(Es)
    t1, dt = FFR.grid(revolutions, dt, save_every)
    steps = int(round(t1 / dt))
    opts = dict(integrator=jaxmbs.RK4(), stabilizer=jaxmbs.Projection())
    path = jaxmbs.batch_vectorization(mech, batch, **opts)

    def call():
        tr = jaxmbs.simulate_batch(mech, pb, q0, v0, (0.0, t1), dt, params_axis=0, state_axis=None,
                                   save_every=save_every, energy_tol=None, vectorize="auto", **opts)
        jax.block_until_ready(tr.q)
        return tr

    first, _ = _timed(call)
    wall, tr = _timed(call)
    peak = np.max(np.abs(np.asarray(FFR.midpoint_deflection(model, mech, tr.q))), axis=1)
    return {
        "model": f"flexible slider-crank, FFR rod with {modes} pinned modes ({mech.n_vel} velocity "
                 f"coordinates, {mech.n_constraints} constraint rows)",
        "integrator": "RK4, Projection", "vectorize": "auto", "path": path, "dtype": "float64",
        "dt": dt, "steps": steps, "batch": batch, "revolutions": revolutions, "E_Pa": [1.8e11, 2.4e11],
        "first_call_s": first, "wall_s": wall, "steps_per_s": batch * steps / wall,
        "ok_members": int(np.sum(np.asarray(tr.status) == 0)),
        "peak_deflection_m": [float(np.min(peak)), float(np.max(peak))],
        "machine": machine(),
    }


def run(batch=1024, revolutions=0.5, elements=2, dt=1e-4, save_every=5, seed=0, integrator="genalpha"):
    """integrator: "genalpha" (the example's GeneralizedAlpha(rho_inf=0.8), no
    stabilisation, vmap: stateful integrators need it) or "rk4" (explicit RK4 +
    Projection(), vectorize="auto": the batch-minor path on a CPU; dt must resolve the
    rod's axial modes, about 1e-5 s)."""
    mech, params, q0, v0, nodes = FSC.build(elements)
    sides = jnp.asarray(np.random.default_rng(seed).uniform(0.006, 0.010, batch))
    pb = jax.vmap(lambda s: FSC.with_section(mech, params, side=s))(sides)
    t1 = FSC.t_end(revolutions, dt, save_every)
    steps = int(round(t1 / dt))

    if integrator == "genalpha":
        opts = dict(integrator=FSC.integrator(), stabilizer=jaxmbs.NoStabilization(), vectorize="vmap")
        label = "GeneralizedAlpha(rho_inf=0.8), NoStabilization"
    elif integrator == "rk4":
        opts = dict(integrator=jaxmbs.RK4(), stabilizer=jaxmbs.Projection(), vectorize="auto")
        label = "RK4, Projection"
    else:
        raise ValueError(f"integrator must be 'genalpha' or 'rk4', got {integrator!r}")
    path = jaxmbs.batch_vectorization(mech, batch, **{k: v for k, v in opts.items() if k != "vectorize"}) \
        if opts["vectorize"] == "auto" else "vmap"

    def call():
        tr = jaxmbs.simulate_batch(mech, pb, q0, v0, (0.0, t1), dt, params_axis=0, state_axis=None,
                                   save_every=save_every, energy_tol=None, **opts)
        jax.block_until_ready(tr.q)
        return tr

    first, _ = _timed(call)   # compile and run
    wall, tr = _timed(call)   # run only
    peak = np.max(np.abs(np.asarray(FSC.midpoint_deflection(mech, tr.q, nodes))), axis=1)
    return {
        "model": f"flexible slider-crank, {elements} ANCF elements on the rod "
                 f"({mech.n_vel} velocity coordinates, {mech.n_constraints} constraint rows)",
        "integrator": label, "vectorize": opts["vectorize"], "path": path,
        "dtype": "float64", "dt": dt, "steps": steps, "batch": batch, "revolutions": revolutions,
        "sides_m": [0.006, 0.010],
        "first_call_s": first, "wall_s": wall, "steps_per_s": batch * steps / wall,
        "ok_members": int(np.sum(np.asarray(tr.status) == 0)),
        "peak_deflection_m": [float(np.min(peak)), float(np.max(peak))],
        "machine": machine(),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--batch", type=int, default=1024, help="members (default 1024)")
    ap.add_argument("--revolutions", type=float, default=0.5,
                    help="crank revolutions per member (default 0.5: 210 steps)")
    ap.add_argument("--elements", type=int, default=2, help="rod elements, even (default 2)")
    ap.add_argument("--integrator", choices=("genalpha", "rk4"), default="genalpha",
                    help="genalpha (default, vmap) or rk4 (+ Projection, vectorize='auto')")
    ap.add_argument("--dt", type=float, default=None,
                    help="step (s); default 1e-4 for genalpha, 1e-5 for rk4")
    ap.add_argument("--rod", choices=("ancf", "ffr"), default="ancf",
                    help="ancf (default) or ffr: the modal rod, RK4 dt 5e-5, members differ in E")
    ap.add_argument("--json", action="store_true", help="print and write the record as JSON")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "flexible.json"),
                    help="where --json writes the record")
    a = ap.parse_args(argv)
    if a.rod == "ffr":
        res = run_ffr(a.batch, a.revolutions, dt=a.dt if a.dt is not None else 5e-5)
    else:
        dt = a.dt if a.dt is not None else (1e-4 if a.integrator == "genalpha" else 1e-5)
        res = run(a.batch, a.revolutions, a.elements, dt=dt, integrator=a.integrator,
                  save_every=max(1, round(5e-4 / dt)))  # (samples every 0.5 ms)
    if a.json:
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1)
        print(json.dumps(res))
    else:
        print(f"{res['batch']} flexible slider-cranks x {res['steps']} steps: {res['wall_s']:.2f} s "
              f"(first call {res['first_call_s']:.1f} s), {res['steps_per_s']:.3g} member-steps/s, "
              f"{res['ok_members']} ok; peak deflection {res['peak_deflection_m']} m")
    return res


if __name__ == "__main__":
    main()
