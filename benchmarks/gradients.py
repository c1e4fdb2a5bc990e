"""Cost of reverse-mode gradients through long rollouts, relative to the forward run.

A closed-loop crank-rocker four-bar (gravity, a torsion spring-damper on the crank,
RK4, projection stabilisation by default) is simulated for N steps; the scalar
L(p) = sum over the saved states of |q - q_ref|^2 (q_ref: the nominal run) is
differentiated by `jax.value_and_grad` w.r.t. the three link masses, the coupler length
(its pin position on the rocker) and the spring stiffness. For each N and each reverse-mode
memory configuration (`simulate(..., checkpoint=...)`: `off` stores every step's
residuals, `on` recomputes each save interval, `dots` keeps the matrix products of each
interval, i.e. `jax.checkpoint_policies.dots_with_no_batch_dims_saveable`): compile time
(lower + compile, measured once) and the median run time over --repeats calls (after one
warm-up call) of the jitted forward L and of the jitted value_and_grad(L), measured in the
same process with the calls interleaved (so a varying machine load affects both alike),
their ratio, and XLA's memory analysis of both
compiled programs (`compiled.memory_analysis()`: temporaries, arguments, outputs).

    python benchmarks/gradients.py [--steps 1000 10000] [--checkpoint off on dots]
                                   [--repeats 5] [--stabilizer baumgarte] [--unroll]
                                   [--json] [--out benchmarks/results/gradients.json]

--sim-kwargs passes further keyword arguments to jaxmbs.simulate. The last output line is
one JSON object, also written to --out (default benchmarks/results/gradients.json, which
`python benchmarks/report.py` reports; --out '' writes nothing).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs as mb  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from mechanisms import four_bar_model  # noqa: E402  (the reference crank-rocker)

NAMES = ("crank.mass", "coupler.mass", "rocker.mass", "B.point_j", "ts.k")


def four_bar(th0=np.pi / 3):
    """Crank 0.2, coupler 0.6, rocker 0.5, ground 0.5 m; 1 kg/m bars; spring at O
    (the crank-rocker of tests/mechanisms.py)."""
    m, A, B, D = four_bar_model(th0)
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


def _times(fns, args, repeats):
    """Wall times of each compiled function in fns, `repeats` calls each after one warm-up,
    interleaved (f0, f1, f0, f1, ...) so that a varying machine load affects all alike."""
    for fn in fns:
        jax.block_until_ready(fn(*args))  # warm
    ts = [[] for _ in fns]
    for _ in range(repeats):
        for fn, t in zip(fns, ts):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*args))
            t.append(time.perf_counter() - t0)
    return ts


class DirectSchur(mb.SchurCholesky):
    """For comparison: the Schur solve with the Cholesky factorisation differentiated
    step by step (jaxmbs before the saddle solve was differentiated implicitly)."""

    def solve(self, M, jac, Q, gamma, check=True):
        from jaxmbs import status as st
        from jaxmbs.formulations.schur import cholesky_solve
        MinvQ = M.solve(Q)
        MinvJt = M.solve(jac.T)
        lam, bad = cholesky_solve(jac @ MinvJt, jac @ MinvQ - gamma, self.tol, self.unroll_max)
        return MinvQ - MinvJt @ lam, lam, jnp.where(bad, st.SINGULAR, st.OK).astype(jnp.int32)


SOLVERS = {"implicit": mb.SchurCholesky(), "direct": DirectSchur()}
CHECKPOINT = {"off": False, "on": True,
              "dots": jax.checkpoint_policies.dots_with_no_batch_dims_saveable}


def run(n_steps, dt=1e-3, save_every=10, stabilizer="projection", integrator="rk4",
        repeats=5, sim_kwargs=None, checkpoint="off", unroll=False, solver="implicit"):
    mech, params, q0, v0 = four_bar()
    stab = {"projection": mb.Projection(), "baumgarte": mb.Baumgarte(20.0)}[stabilizer]
    integ = {"rk4": mb.RK4(unroll=unroll), "sie": mb.SemiImplicitEuler()}[integrator]
    kw = dict(save_every=save_every, stabilizer=stab, integrator=integ,
              checkpoint=CHECKPOINT[checkpoint], solver=SOLVERS[solver], **(sim_kwargs or {}))
    t1 = n_steps * dt
    p0 = {k: jnp.asarray(mech.get(params, k)) for k in NAMES}
    ref = mb.simulate(mech, params, q0, v0, (0.0, t1), dt, **kw).q

    def loss(p):
        pp = mech.replace(params, {k: p[k] * 1.01 for k in p})  # off the reference: L > 0
        tr = mb.simulate(mech, pp, q0, v0, (0.0, t1), dt, check_initial=False, **kw)
        return jnp.sum((tr.q - ref) ** 2)

    out = {"steps": n_steps, "dt": dt, "save_every": save_every, "stabilizer": stabilizer,
           "integrator": integrator + ("(unroll)" if unroll and integrator == "rk4" else ""),
           "checkpoint": checkpoint, "solver": solver, "repeats": repeats}
    names = ("forward", "value_and_grad")
    compiled = []
    for name, f in zip(names, (loss, jax.value_and_grad(loss))):
        t0 = time.perf_counter()
        compiled.append(jax.jit(f).lower(p0).compile())
        out[f"{name}_compile_s"] = time.perf_counter() - t0
        out[f"{name}_memory"] = _mem(compiled[-1])
    for name, ts in zip(names, _times(compiled, (p0,), repeats)):
        out[f"{name}_run_s"] = statistics.median(ts)
        out[f"{name}_run_min_s"] = min(ts)
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
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--checkpoint", nargs="+", choices=tuple(CHECKPOINT), default=["off", "on", "dots"],
                    help="reverse-mode memory configurations (simulate's checkpoint argument)")
    ap.add_argument("--solver", choices=tuple(SOLVERS), default="implicit",
                    help="implicit: SchurCholesky (default); direct: the factorisation differentiated "
                         "step by step, for comparison")
    ap.add_argument("--unroll", action="store_true", help="RK4(unroll=True): stages traced separately")
    ap.add_argument("--sim-kwargs", default="{}", help="JSON dict of extra simulate() arguments")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "gradients.json"),
                    help="also write the JSON here ('' for nowhere)")
    ap.add_argument("--json", action="store_true", help="only the JSON line")
    a = ap.parse_args(argv)
    load0 = os.getloadavg() if hasattr(os, "getloadavg") else ()
    t_start = time.perf_counter()
    rows = [run(n, a.dt, a.save_every, a.stabilizer, a.integrator, a.repeats, json.loads(a.sim_kwargs),
                ck, a.unroll, a.solver)
            for n in a.steps for ck in a.checkpoint]
    res = {"device": str(jax.devices()[0]), "backend": jax.default_backend(),
           "jax": jax.__version__, "cpu_count": os.cpu_count(), "machine": platform.machine(),
           "sim_kwargs": json.loads(a.sim_kwargs), "params": list(NAMES),
           "command": "python benchmarks/gradients.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "loadavg_start": list(load0), "total_s": time.perf_counter() - t_start, "runs": rows}
    if not a.json:
        print(f"reverse-mode value_and_grad vs forward, four-bar, {a.integrator}, {a.stabilizer}, "
              f"{jax.default_backend()} ({os.cpu_count()} cores)")
        print(f"{'steps':>7} {'ckpt':>5} {'fwd run s':>10} {'grad run s':>10} {'time x':>7} {'fwd MB':>8} "
              f"{'grad MB':>8} {'mem x':>7} {'fwd compile s':>13} {'grad compile s':>14}")
        for r in rows:
            mf = (r["forward_memory"] or {}).get("total_bytes", float("nan")) / 2**20
            mg = (r["value_and_grad_memory"] or {}).get("total_bytes", float("nan")) / 2**20
            print(f"{r['steps']:>7} {r['checkpoint']:>5} {r['forward_run_s']:>10.4f} {r['value_and_grad_run_s']:>10.4f} "
                  f"{r['time_ratio']:>7.2f} {mf:>8.2f} {mg:>8.2f} {mg / mf:>7.1f} "
                  f"{r['forward_compile_s']:>13.1f} {r['value_and_grad_compile_s']:>14.1f}")
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(res, fh, indent=1)
    print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
