"""Analytic policy gradients (APG) through the differentiable five-bar reaching task,
compared with PPO on the same task for sample efficiency.

APG: a deterministic MLP policy a = tanh(mlp(obs)); the loss is minus the return of whole
episodes (`--horizon` steps of `envs.make(env, differentiable=True)`), differentiated
by reverse mode straight through the constrained dynamics (RK4 + projection onto the
closed loop) and optimised with Adam. PPO: examples/ppo.py with its own step budget
(--ppo-steps). Both are evaluated with the same deterministic 256-episode evaluation
(the *evaluation return*); the progress lines give each method's *training return*
(APG: the deterministic policy's mean return over the update's --horizon-step episodes;
PPO: the stochastic policy's episodes that ended in the update's rollout).

    python examples/apg.py --plot apg_vs_ppo.png
    python examples/apg.py --json      # last line: {"apg": {...}, "ppo": {...}}
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from jaxmbs import envs  # noqa: E402


def _ppo():
    spec = importlib.util.spec_from_file_location("ppo", os.path.join(HERE, "ppo.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def train_apg(env_name="five_bar", total_steps=200_000, num_envs=32, horizon=100, lr=3e-3, seed=0, log=print,
              eval_episodes=256):
    """Train a deterministic policy by APG; returns a dict (final_mean_return: mean return of
    `eval_episodes` evaluation episodes; curve: [(env steps, mean training return)])."""
    ppo = _ppo()
    env = envs.make(env_name, differentiable=True)
    params_env = env.default_params
    h = 64
    n_obs, n_act = env.observation_space.shape[0], env.action_space.shape[0]

    class Agent:
        def act_deterministic(self, p, obs):
            return jnp.tanh(ppo.mlp(p, obs))
    agent = Agent()
    key = jax.random.key(seed)
    key, kp = jax.random.split(key)
    p = ppo.mlp_init(kp, [n_obs, h, h, n_act], 0.01)
    n_updates = max(1, total_steps // (num_envs * horizon))
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(optax.cosine_decay_schedule(lr, n_updates)))
    opt_state = opt.init(p)

    def loss(p, key):
        k0, k1 = jax.random.split(key)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k0, num_envs), params_env)

        def one(carry, k):
            state, obs = carry
            a = agent.act_deterministic(p, obs)
            obs, state, r, *_ = jax.vmap(env.step_env, in_axes=(0, 0, 0, None))(
                jax.random.split(k, num_envs), state, a, params_env)
            return (state, obs), r
        _, rs = jax.lax.scan(one, (state, obs), jax.random.split(k1, horizon))
        return -jnp.mean(jnp.sum(rs, 0))

    @jax.jit
    def update(p, opt_state, key):
        l, g = jax.value_and_grad(loss)(p, key)
        upd, opt_state = opt.update(g, opt_state, p)
        return optax.apply_updates(p, upd), opt_state, -l

    curve, t0 = [], time.perf_counter()
    for i in range(n_updates):
        key, k = jax.random.split(key)
        p, opt_state, ret = update(p, opt_state, k)
        curve.append(((i + 1) * num_envs * horizon, float(ret)))
        if log and (i % max(1, n_updates // 10) == 0 or i == n_updates - 1):
            log(f"APG update {i + 1}/{n_updates}  steps {curve[-1][0]}  training return {ret:.2f}"
                f" (deterministic policy, {horizon}-step episodes)  ({time.perf_counter() - t0:.0f} s)")
    eval_env = envs.make(env_name)
    final = ppo.evaluate(eval_env, agent, p, jax.random.key(seed + 1000), eval_episodes)
    return dict(method="apg", env=env_name, total_steps=n_updates * num_envs * horizon, final_mean_return=final,
                train_seconds=time.perf_counter() - t0, curve=curve)


def first_reaching(curve, threshold):
    """Env steps at which a (steps, return) curve first reaches the threshold (None if never)."""
    for s, r in curve:
        if r >= threshold:
            return s
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--env", default="five_bar",
                    help="a task with continuous actions from jaxmbs.envs (default five_bar)")
    ap.add_argument("--apg-steps", type=int, default=200_000,
                    help="environment steps of APG training (default 200,000)")
    ap.add_argument("--ppo-steps", type=int, default=1_000_000,
                    help="environment steps of PPO training (default 1,000,000)")
    ap.add_argument("--horizon", type=int, default=100,
                    help="APG episode length in steps, backpropagated through (default 100)")
    ap.add_argument("--num-envs", type=int, default=32,
                    help="APG episodes per update (default 32)")
    ap.add_argument("--seed", type=int, default=0, help="PRNG seed (default 0)")
    ap.add_argument("--plot", metavar="PATH", default=None,
                    help="write the two learning curves (training returns) to this PNG")
    ap.add_argument("--json", action="store_true", help="print one JSON object last")
    args = ap.parse_args(argv)
    log = (lambda s: print(s, file=sys.stderr)) if args.json else print
    ppo = _ppo()
    apg = train_apg(args.env, args.apg_steps, num_envs=args.num_envs, horizon=args.horizon,
                    seed=args.seed, log=log)
    ppo_out, _ = ppo.train(args.env, args.seed, log=log, total_steps=args.ppo_steps)
    thr = ppo.THRESHOLDS.get(args.env)
    out = {"apg": {k: v for k, v in apg.items() if k != "curve"},
           "ppo": {k: v for k, v in ppo_out.items() if k != "curve"}, "threshold": thr,
           "steps_to_threshold": {"apg": first_reaching(apg["curve"], thr),
                                  "ppo": first_reaching(ppo_out["curve"], thr)}}
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plt.figure(figsize=(5.5, 3.4))
        for name, c in (("APG (through the dynamics)", apg["curve"]), ("PPO (stochastic policy)", ppo_out["curve"])):
            c = np.array(c)
            plt.plot(c[:, 0], c[:, 1], label=name)
        plt.axhline(thr, color="k", ls="--", lw=0.8, label="threshold")
        plt.xscale("log"), plt.xlabel("environment steps"), plt.ylabel("training return")
        plt.title(f"{args.env}: sample efficiency"), plt.legend(), plt.tight_layout()
        plt.savefig(args.plot, dpi=120)
    if args.json:
        print(json.dumps(out))
    else:
        print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
