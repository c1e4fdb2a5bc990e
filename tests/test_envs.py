"""jaxmbs.envs: conformance of every environment, dynamics against closed-form equations
of motion, gradients against finite differences, domain randomisation, Gymnasium."""
import importlib.util
import json
import math
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmbs import accelerations, constraint_terms, envs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = list(envs.ENVIRONMENTS)


def _rollout(env, params, key, batch, steps):
    """batch x steps random-action auto-resetting steps; per-step diagnostics."""
    def run(key):
        k0, k1 = jax.random.split(key)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k0, batch), params)

        def one(state, k):
            ka, ks = jax.random.split(k)
            act = jax.vmap(env.action_space.sample)(jax.random.split(ka, batch))
            prev_step = state.step
            obs, state, r, term, trunc, info = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(ks, batch), state, act, params)
            cerr = jax.vmap(env.constraint_error, in_axes=(0, None))(state, params)
            fin = info["final_observation"]
            in_space = jax.vmap(env.observation_space.contains)(obs)
            return state, dict(cerr=cerr, r=r, term=term, trunc=trunc, step=state.step, prev=prev_step,
                               obs_ok=in_space & jnp.all(jnp.isfinite(obs), -1),
                               fin_ok=jnp.all(jnp.isfinite(fin), -1), status=info["status"],
                               reset_obs_differs=jnp.any(obs != fin, -1), obs=obs)
        return jax.lax.scan(one, state, jax.random.split(k1, steps))
    return jax.jit(run)(key)


@pytest.mark.parametrize("name", NAMES)
def test_conformance_10000_random_steps(name):
    env = envs.make(name)
    p = env.default_params
    key = jax.random.key(0)
    obs, state = jax.jit(env.reset)(key, p)
    # shapes and dtypes against the spaces
    assert obs.shape == env.observation_space.shape and obs.dtype == env.observation_space.dtype
    assert bool(env.observation_space.contains(obs))
    a = env.action_space.sample(key)
    assert a.shape == env.action_space.shape and a.dtype == env.action_space.dtype
    assert bool(env.action_space.contains(a))
    out = jax.jit(env.step)(key, state, a, p)
    obs1, state1, r, term, trunc, info = out
    assert obs1.shape == env.observation_space.shape and obs1.dtype == env.observation_space.dtype
    assert r.shape == () and jnp.issubdtype(r.dtype, jnp.floating)
    assert term.dtype == jnp.bool_ and trunc.dtype == jnp.bool_ and term.shape == trunc.shape == ()
    # the unjitted step agrees with the jitted one
    np.testing.assert_allclose(env.step(key, state, a, p)[0], obs1, rtol=1e-12, atol=1e-12)
    # 16 x 625 = 10 000 vmapped steps
    batch, steps = 16, 625
    final, d = _rollout(env, p, jax.random.key(1), batch, steps)
    d = jax.tree_util.tree_map(np.asarray, d)
    assert d["obs_ok"].all() and d["fin_ok"].all() and np.isfinite(d["r"]).all()
    assert (d["status"] == 0).all(), np.unique(d["status"])
    assert d["cerr"].max() < 1e-8, d["cerr"].max()
    max_steps = int(p.task["max_steps"])
    done = d["term"] | d["trunc"]
    # auto-reset: a finished episode starts over at step 0 with a fresh observation;
    # otherwise the counter advances by one; truncation exactly at max_steps
    assert (d["step"][done] == 0).all()
    assert (d["step"][~done] == d["prev"][~done] + 1).all()
    assert (d["prev"][d["trunc"]] + 1 == max_steps).all()
    assert d["step"].max() < max_steps
    assert done.sum() >= 1 and d["reset_obs_differs"][done].all()
    assert not (d["term"] & d["trunc"]).any()


def test_vmap_matches_loop_and_domain_randomisation():
    env = envs.make("cartpole_swingup")
    p = env.default_params
    masses = jnp.array([0.05, 0.1, 0.3])
    batch_p = jax.vmap(lambda m: env.replace_params(p, {"pole.mass": m, "max_force": 5.0 + 20 * m}))(masses)
    keys = jax.random.split(jax.random.key(3), 3)
    obs, st = jax.vmap(env.reset)(keys, batch_p)
    act = jnp.full((3, 1), 0.7)
    step = jax.jit(jax.vmap(env.step))
    for _ in range(5):
        obs, st, r, *_ = step(keys, st, act, batch_p)
    one = jax.jit(env.step)
    for i, m in enumerate(masses):  # oracle: each member alone, its own params
        pi = env.replace_params(p, {"pole.mass": float(m), "max_force": 5.0 + 20 * float(m)})
        o, s = env.reset(keys[i], pi)
        for _ in range(5):
            o, s, ri, *_ = one(keys[i], s, act[i], pi)
        np.testing.assert_allclose(obs[i], o, rtol=1e-10, atol=1e-12)
    assert float(jnp.std(obs[:, 4])) > 1e-3  # the masses made a difference
    with pytest.raises(ValueError, match="pole.mass"):
        env.replace_params(p, {"pole.mas": 1.0})


def _gym_cartpole_acc(x, xd, th, thd, F, mc=1.0, mp=0.1, l=0.5, g=9.8):
    # Gymnasium CartPole-v1 equations (theta positive clockwise there)
    total = mc + mp
    temp = (F + mp * l * thd**2 * math.sin(th)) / total
    thacc = (g * math.sin(th) - math.cos(th) * temp) / (l * (4.0 / 3.0 - mp * math.cos(th) ** 2 / total))
    xacc = temp - mp * l * thacc * math.cos(th) / total
    return xacc, thacc


def test_cartpole_matches_closed_form_equations():
    env = envs.make("cartpole_continuous")
    p = env.default_params
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, xd, th, thd, a = rng.uniform(-2, 2, 5)
        q, v = env._state_from(*(jnp.asarray(z) for z in (x, xd, th, thd)))
        u = env._controls(jnp.array([a / 2]), None, p)
        acc = accelerations(env.mechanism, p.mech, q, v, 0.0, u)
        xacc, thacc = _gym_cartpole_acc(x, xd, -th, -thd, float(u[0]))
        np.testing.assert_allclose([acc.qdd[0], acc.qdd[5]], [xacc, -thacc], rtol=1e-10, atol=1e-12)


def test_pendulum_matches_closed_form_equation():
    env = envs.make("pendulum")
    p = env.default_params
    for th, w, a in [(0.3, 1.0, 0.5), (2.5, -3.0, -1.0), (-1.2, 0.0, 0.0)]:
        q, v = jnp.array([0.0, 0.0, th]), jnp.array([0.0, 0.0, w])
        acc = accelerations(env.mechanism, p.mech, q, v, 0.0, jnp.array([2.0 * a]))
        # Gymnasium Pendulum-v1: thdd = 3 g / (2 l) sin th + 3 / (m l^2) u
        np.testing.assert_allclose(acc.qdd[2], 1.5 * 10.0 * math.sin(th) + 3.0 * 2.0 * a, rtol=1e-12)


def _acrobot_book(s, a):
    # the "book" acrobot equations (Sutton & Barto), as in Gymnasium's AcrobotEnv._dsdt
    m1 = m2 = l1 = 1.0
    lc1 = lc2 = 0.5
    I1 = I2 = 1.0
    g = 9.8
    t1, t2, d1, d2 = s
    D1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * math.cos(t2)) + I1 + I2
    D2 = m2 * (lc2**2 + l1 * lc2 * math.cos(t2)) + I2
    phi2 = m2 * lc2 * g * math.cos(t1 + t2 - math.pi / 2.0)
    phi1 = (-m2 * l1 * lc2 * d2**2 * math.sin(t2) - 2 * m2 * l1 * lc2 * d2 * d1 * math.sin(t2)
            + (m1 * lc1 + m2 * l1) * g * math.cos(t1 - math.pi / 2) + phi2)
    dd2 = (a + D2 / D1 * phi1 - m2 * l1 * lc2 * d1**2 * math.sin(t2) - phi2) / (
        m2 * lc2**2 + I2 - D2**2 / D1)
    dd1 = -(D2 * dd2 + phi1) / D1
    return dd1, dd2


def test_acrobot_matches_book_equations():
    env = envs.make("acrobot")
    p = env.default_params
    rng = np.random.default_rng(1)
    for _ in range(5):
        t1, t2, w1, w2 = rng.uniform(-2, 2, 4)
        a = float(rng.integers(0, 3))
        # consistent state from the reset routine's closed form
        q, v, _ = env._initial(jax.random.key(0), env.replace_params(p, {"reset_noise": 0.0}))
        q = q.at[2].set(t1).at[5].set(t1 + t2).at[3].set(math.sin(t1)).at[4].set(-math.cos(t1))
        v = v.at[2].set(w1).at[5].set(w1 + w2).at[3].set(math.cos(t1) * w1).at[4].set(math.sin(t1) * w1)
        assert float(jnp.max(jnp.abs(constraint_terms(env.mechanism, p.mech, q, v, 0.0).phi))) < 1e-12
        acc = accelerations(env.mechanism, p.mech, q, v, 0.0, env._controls(a, None, p))
        dd1, dd2 = _acrobot_book((t1, t2, w1, w2), a - 1.0)
        np.testing.assert_allclose([acc.qdd[2], acc.qdd[5] - acc.qdd[2]], [dd1, dd2], rtol=1e-9, atol=1e-10)


def _energy(env, p, st):
    from jaxmbs.core.equations import energy_terms
    T, V = energy_terms(env.mechanism, p.mech, st.q, st.v, st.t)
    return float(T + V)


def _run_zero(env, s, p, n):
    act = jnp.zeros(env.action_space.shape)

    @jax.jit
    def run(s):
        return jax.lax.scan(lambda s, _: (env.step_env(jax.random.key(0), s, act, p)[1], None), s, None, length=n)[0]
    return (run(s),)


@pytest.mark.parametrize("name", ["five_bar", "slider_crank"])
def test_closed_form_reset_is_consistent_and_energy_balance(name):
    """The closed-form position / velocity analysis used by reset satisfies Phi = 0 and
    Phi_q v + Phi_t = 0; with no torque, friction or load the energy is conserved."""
    env = envs.make(name)
    p = env.default_params
    zero = {"five_bar": {"damper_A.c": 0.0, "damper_B.c": 0.0},
            "slider_crank": {"friction.c": 0.0, "max_load": 0.0}}[name]
    p = env.replace_params(p, zero)
    for i in range(1):
        obs, s = env.reset(jax.random.key(i), p)
        if name == "five_bar":  # give it a velocity compatible with the loop
            tm = constraint_terms(env.mechanism, p.mech, s.q, s.v, 0.0)
            _, _, vt = np.linalg.svd(np.asarray(tm.jac))
            s = s.replace(v=jnp.asarray(vt[-1] * 3.0))
        tm = constraint_terms(env.mechanism, p.mech, s.q, s.v, 0.0)
        assert float(jnp.max(jnp.abs(tm.phi))) < 1e-12
        assert float(jnp.max(jnp.abs(tm.jac @ s.v + tm.phit))) < 1e-10

        drift = []
        for sub in (2, 8):  # the drift is integration error: it falls (at least ~h^2) with h
            e = envs.make(name, substeps=sub)
            sf = _run_zero(e, s, p, 20)[0]
            drift.append(abs(_energy(e, p, sf) - _energy(e, p, s)))
        assert drift[1] < drift[0] / 8 and drift[1] < 1e-7 * _energy(env, p, s), drift
    if name == "five_bar":  # the end-effector is the tip of both distal links
        e3 = env.end_effector(s.q)
        e4 = s.q[9:11] + env.L2 * jnp.array([jnp.cos(s.q[11]), jnp.sin(s.q[11])])
        np.testing.assert_allclose(e3, e4, atol=1e-10)


def test_gradients_cut_by_default_and_exact_on_request():
    def total_reward(env, a):
        p = env.default_params
        obs, s = env.reset(jax.random.key(0), p)
        tot = 0.0
        for _ in range(3):
            obs, s, r, *_ = env.step(jax.random.key(1), s, a, p)
            tot = tot + r
        return tot

    a0 = jnp.array([0.3, -0.2])
    g_cut = jax.jit(jax.grad(lambda a: total_reward(envs.make("five_bar"), a)))(a0)
    assert np.all(np.asarray(g_cut) == 0.0)
    env = envs.make("five_bar", differentiable=True)
    g = jax.jit(jax.grad(lambda a: total_reward(env, a)))(a0)
    f = jax.jit(lambda a: total_reward(env, a))
    eps = 1e-6
    fd = [(f(a0.at[i].add(eps)) - f(a0.at[i].add(-eps))) / (2 * eps) for i in range(2)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
    assert np.all(np.abs(np.asarray(g)) > 1e-6)


def test_spaces_and_errors():
    box = envs.Box(-1.0, [1.0, 2.0])
    xs = jax.vmap(box.sample)(jax.random.split(jax.random.key(0), 1000))
    assert xs.shape == (1000, 2) and bool(jnp.all(jax.vmap(box.contains)(xs)))
    np.testing.assert_allclose(xs.mean(0), [0.0, 0.5], atol=0.1)  # uniform means
    d = envs.Discrete(3)
    ds = np.asarray(jax.vmap(d.sample)(jax.random.split(jax.random.key(1), 3000)))
    assert set(np.unique(ds)) == {0, 1, 2} and not bool(d.contains(3))
    with pytest.raises(ValueError, match="low <= high"):
        envs.Box(1.0, 0.0)
    with pytest.raises(ValueError, match="positive integer"):
        envs.Discrete(0)
    with pytest.raises(ValueError, match="unknown environment"):
        envs.make("cartpol")
    with pytest.raises(ValueError, match="substeps"):
        envs.make("pendulum", substeps=0)


def test_float32_runs():
    script = ("import jax, jax.numpy as jnp\n"
              "from jaxmbs import envs\n"
              "for n in envs.ENVIRONMENTS:\n"
              "    e = envs.make(n); p = e.default_params\n"
              "    o, s = e.reset(jax.random.key(0), p)\n"
              "    st = jax.jit(e.step)\n"
              "    for i in range(20):\n"
              "        o, s, r, *_ = st(jax.random.key(i), s, e.action_space.sample(jax.random.key(i)), p)\n"
              "    assert o.dtype == jnp.float32 and bool(jnp.all(jnp.isfinite(o))), n\n"
              "    assert float(e.constraint_error(s, p)) < 1e-4, n\n"
              "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "JAX_ENABLE_X64": "0"}, timeout=600)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-2000:]


def test_gymnasium_adapters():
    gym = pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env

    from jaxmbs.envs.gymnasium import GymnasiumEnv, GymnasiumVectorEnv
    for name in ("cartpole", "five_bar"):
        check_env(GymnasiumEnv(name), skip_render_check=True)
    venv = GymnasiumVectorEnv("cartpole", num_envs=8)
    assert isinstance(venv, gym.vector.VectorEnv)
    obs, _ = venv.reset(seed=0)
    assert obs.shape == (8, 4) and venv.observation_space.contains(obs)
    seen_final = False
    for _ in range(100):
        obs, r, term, trunc, info = venv.step(venv.action_space.sample())
        assert obs.shape == (8, 4) and r.shape == (8,) and term.dtype == bool
        if "final_obs" in info:
            seen_final = True
            done = term | trunc
            assert (info["_final_obs"] == done).all()
            fo = info["final_obs"][done]
            # cart-pole ends by leaving the limits: the final observation shows it
            assert ((np.abs(fo[:, 0]) > 2.4) | (np.abs(fo[:, 2]) > 0.2094)).all()
    assert seen_final


def _load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.parametrize("env_name", ["cartpole_swingup", "five_bar"])
def test_ppo_reaches_threshold(env_name):
    ppo = _load_example("ppo")
    out = ppo.main(["--env", env_name, "--json", "--seed", "0"])
    assert out["final_mean_return"] >= ppo.THRESHOLDS[env_name], out


@pytest.mark.slow
def test_ppo_json_contract_as_script(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "ppo.py"), "--env", "five_bar",
                        "--json"], capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert np.isfinite(out["final_mean_return"]) and out["env"] == "five_bar"
