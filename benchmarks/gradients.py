"""Cost of reverse-mode gradients through long rollouts, relative to the forward run.

A closed-loop crank-rocker four-bar (gravity, a torsion spring-damper on the crank,
RK4, projection stabilisation by default) is simulated for N steps; the scalar
L(p) = sum over the saved states of |q - q_ref|^2 (q_ref: the nominal run) is
differentiated by `jax.value_and_grad` w.r.t. the three link masses, the coupler length
(its pin position on the rocker) and the spring stiffness. For each N: compile time, best
run time of the forward L and of value_and_grad(L), and XLA's memory analysis of both
compiled programs (`compiled.memory_analysis()`: temporaries, arguments, outputs).

    python benchmarks/gradients.py [--steps 1000 10000] [--repeats 3] [--stabilizer baumgarte]
                                   [--sim-kwargs '{"...": ...}'] [--json] [--out results/gradients.json]

--sim-kwargs passes extra keyword arguments to jaxmbs.simulate (e.g. a checkpointing
option, where the installed version has one). The last output line is one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs as mb  # noqa: E402

NAMES = ("crank.mass", "coupler.mass", "rocker.mass", "B.point_j", "ts.k")


def four_bar(th0=np.pi / 3):
    """Crank 0.2, coupler 0.6, rocker 0.5, ground 0.5 m; 1 kg/m bars; spring at O."""
    a, b, c, d = 0.2, 0.6, 0.5, 0.5
    A = np.array([a * np.cos(th0), a * np.sin(th0)])
    D = np.array([d, 0.0])
    r = np.linalg.norm(D - A)
    x = (b**2 - c**2 + r**2) / (2 * r)
    e = (D - A) / r
    B = A + x * e + np.sqrt(b**2 - x**2) * np.array([-e[1], e[0]])
    m = mb.Model(gravity=(0.0, -9.81))

    def bar(name, P, Q):
        L = np.linalg.norm(Q - P)
        m.add_body(name, mass=L, inertia=L**3 / 12, position=(P + Q) / 2,
                   angle=np.arctan2(*(Q - P)[::-1]))

    bar("crank", np.zeros(2), A)
    bar("coupler", A, B)
    bar("rocker", D, B)
    m.add_revolute("O", "ground", "crank", at=(0.0, 0.0))
    m.add_revolute("A", "crank", "coupler", at=A)
    m.add_revolute("B", "coupler", "rocker", at=B)
    m.add_revolute("D", "ground", "rocker", at=D)
    m.add_torsion_spring("ts", "ground", "crank", k=2.0, c=0.05)
    mech, params, q, v = m.build()
    s = mb.assemble(mech, params, q, v)
    # give the crank a spin so the loop moves
    s = mb.assemble(mech, params, s.q, jnp.zeros_like(s.v).at[2].set(3.0), fixed=("crank.theta",))
    return mech, params, s.q, s.v


def _mem(compiled):
    try:
        m = compiled.memory_analysis()
    except Exception:  # noqa: BLE001 - not every backend reports it
        return None
    if m is None:
        return None
    out = {k: int(getattr(m, k)) for k in ("temp_size_in_bytes", "argument_size_in_bytes",
                                           "output_size_in_bytes", "generated_code_size_in_bytes")
           if hasattr(m, k)}
    out["total_bytes"] = out.get("temp_size_in_bytes", 0) + out.get("argument_size_in_bytes", 0) \
        + out.get("output_size_in_bytes", 0)
    return out


def _best(fn, args, repeats):
    jax.block_until_ready(fn(*args))  # warm
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append(time.perf_counter() - t0)
    return min(ts)


def run(n_steps, dt=1e-3, save_every=10, stabilizer="projection", integrator="rk4",
        repeats=3, sim_kwargs=None):
    mech, params, q0, v0 = four_bar()
    stab = {"projection": mb.Projection(), "baumgarte": mb.Baumgarte(20.0)}[stabilizer]
    integ = {"rk4": mb.RK4(), "sie": mb.SemiImplicitEuler()}[integrator]
    kw = dict(save_every=save_every, stabilizer=stab, integrator=integ, **(sim_kwargs or {}))
    t1 = n_steps * dt
    p0 = {k: jnp.asarray(mech.get(params, k)) for k in NAMES}
    ref = mb.simulate(mech, params, q0, v0, (0.0, t1), dt, **kw).q

    def loss(p):
        pp = mech.replace(params, {k: p[k] * 1.01 for k in p})  # off the reference: L > 0
        tr = mb.simulate(mech, pp, q0, v0, (0.0, t1), dt, check_initial=False, **kw)
        return jnp.sum((tr.q - ref) ** 2)

    out = {"steps": n_steps, "dt": dt, "save_every": save_every, "stabilizer": stabilizer,
           "integrator": integrator}
    for name, f in (("forward", loss), ("value_and_grad", jax.value_and_grad(loss))):
        t0 = time.perf_counter()
        compiled = jax.jit(f).lower(p0).compile()
        out[f"{name}_compile_s"] = time.perf_counter() - t0
        out[f"{name}_run_s"] = _best(compiled, (p0,), repeats)
        out[f"{name}_memory"] = _mem(compiled)
    val, g = jax.jit(jax.value_and_grad(loss))(p0)
    out["loss"] = float(val)
    out["grad_finite"] = bool(all(np.all(np.isfinite(np.asarray(x))) for x in g.values()))
    out["time_ratio"] = out["value_and_grad_run_s"] / out["forward_run_s"]
    mf, mg = out["forward_memory"], out["value_and_grad_memory"]
    out["memory_ratio"] = (mg["total_bytes"] / mf["total_bytes"]) if mf and mg and mf["total_bytes"] else None
    out["grad_bytes_per_step"] = (mg["temp_size_in_bytes"] / n_steps) if mg else None
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--save-every", type=int, default=10)
    ap.add_argument("--stabilizer", choices=("projection", "baumgarte"), default="projection")
    ap.add_argument("--integrator", choices=("rk4", "sie"), default="rk4")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sim-kwargs", default="{}", help="JSON dict of extra simulate() arguments")
    ap.add_argument("--out", help="also write the JSON here")
    ap.add_argument("--json", action="store_true", help="only the JSON line")
    a = ap.parse_args(argv)
    rows = [run(n, a.dt, a.save_every, a.stabilizer, a.integrator, a.repeats, json.loads(a.sim_kwargs))
            for n in a.steps]
    res = {"device": str(jax.devices()[0]), "backend": jax.default_backend(),
           "jax": jax.__version__, "cpu_count": os.cpu_count(), "machine": platform.machine(),
           "sim_kwargs": json.loads(a.sim_kwargs), "params": list(NAMES), "runs": rows}
    if not a.json:
        print(f"reverse-mode value_and_grad vs forward, four-bar, {a.integrator}, {a.stabilizer}, "
              f"{jax.default_backend()} ({os.cpu_count()} cores)")
        print(f"{'steps':>7} {'fwd run s':>10} {'grad run s':>10} {'time x':>7} {'fwd MB':>8} "
              f"{'grad MB':>8} {'mem x':>7} {'fwd compile s':>13} {'grad compile s':>14}")
        for r in rows:
            mf = (r["forward_memory"] or {}).get("total_bytes", float("nan")) / 2**20
            mg = (r["value_and_grad_memory"] or {}).get("total_bytes", float("nan")) / 2**20
            print(f"{r['steps']:>7} {r['forward_run_s']:>10.4f} {r['value_and_grad_run_s']:>10.4f} "
                  f"{r['time_ratio']:>7.2f} {mf:>8.2f} {mg:>8.2f} {mg / mf:>7.1f} "
                  f"{r['forward_compile_s']:>13.1f} {r['value_and_grad_compile_s']:>14.1f}")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1)
    print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
