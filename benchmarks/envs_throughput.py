"""Throughput of every jaxmbs.envs environment with random actions, batch 4096, on CPU.

One jitted call = `--steps` vmapped env steps (auto-reset included) in a `lax.scan`, with
actions drawn from the action space inside the call. Reported: compile time (first call
minus a timed call) and env-steps/s = batch * steps / median call time over `--repeats`
timed calls. Writes benchmarks/results/envs.json and prints one JSON object last.

    python benchmarks/envs_throughput.py                 # float32 (JAX default)
    python benchmarks/envs_throughput.py --x64           # float64
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

HERE = os.path.dirname(os.path.abspath(__file__))


def rollout_fn(env, batch, steps):
    params = env.default_params

    def run(key):
        k0, k1 = jax.random.split(key)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k0, batch), params)

        def one(carry, k):
            state, ret = carry
            ka, ks = jax.random.split(k)
            act = jax.vmap(env.action_space.sample)(jax.random.split(ka, batch))
            obs, state, r, term, trunc, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(ks, batch), state, act, params)
            return (state, ret + r), None

        (state, ret), _ = jax.lax.scan(one, (state, jax.numpy.zeros(batch, obs.dtype)),
                                       jax.random.split(k1, steps))
        return state.q, ret

    return jax.jit(run)


def measure(name, batch, steps, repeats, substeps=None):
    sys.path.insert(0, os.path.dirname(HERE))
    from jaxmbs import envs
    kw = {} if substeps is None else {"substeps": substeps}
    env = envs.make(name, **kw)
    fn = rollout_fn(env, batch, steps)
    t0 = time.perf_counter()
    jax.block_until_ready(fn(jax.random.key(0)))
    first = time.perf_counter() - t0
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(jax.random.key(i + 1)))
        times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    return dict(env=name, batch=batch, steps_per_call=steps, substeps=env.substeps,
                dt=float(env.default_params.task["dt"]), median_call_s=med,
                compile_s=max(first - med, 0.0), env_steps_per_s=batch * steps / med,
                n_coords=env.mechanism.n_coords, n_constraints=env.mechanism.n_constraints)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--envs", default="cartpole,cartpole_swingup,acrobot,pendulum,five_bar,slider_crank")
    ap.add_argument("--x64", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "envs.json"))
    args = ap.parse_args(argv)
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    rows, load0 = [], list(os.getloadavg())
    for name in args.envs.split(","):
        r = measure(name, args.batch, args.steps, args.repeats)
        print(f"{name:18s} {r['env_steps_per_s']:12.3g} env-steps/s  (compile {r['compile_s']:.1f} s, "
              f"call {r['median_call_s'] * 1e3:.1f} ms)", file=sys.stderr)
        rows.append(r)
    out = dict(benchmark="envs_throughput", dtype="float64" if args.x64 else "float32",
               device=str(jax.devices()[0]), cpu_count=os.cpu_count(), jax=jax.__version__, loadavg_start=load0,
               machine=platform.machine(), results=rows,
               cartpole_goal_env_steps_per_s=1e6,
               cartpole_meets_goal=any(r["env"] == "cartpole" and r["env_steps_per_s"] >= 1e6 for r in rows))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
