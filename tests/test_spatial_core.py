"""nq != nv through the whole core: the banded path, the element-wise batch path,
environments, fitting outputs and gradients, model files and the CLI, with spatial
(quaternion) bodies."""
import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs as mb
from jaxmbs import fitting as fit
from jaxmbs.envs.core import MechanismEnv
from jaxmbs.envs.spaces import Box

ROOT = Path(__file__).resolve().parents[1]


def spatial_chain(n, dz=-0.3):
    """n bodies hanging in a chain of revolutes with alternating axes (x, y)."""
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    prev = "ground"
    for k in range(n):
        m.add_body(f"b{k}", mass=1.0, inertia=(0.01, 0.012, 0.004), position=(0, 0, dz * (k + 0.5)),
                   angular_velocity=((0.5, 0, 0) if k == 0 else (0, 0, 0)))
        axis = (1.0, 0.0, 0.0) if k % 2 == 0 else (0.0, 1.0, 0.0)
        m.add_revolute(f"J{k}", prev, f"b{k}", at=(0, 0, dz * k), axis=axis)
        prev = f"b{k}"
    return m.build()


def test_banded_path_on_a_spatial_chain_matches_dense():
    mech, params, q0, v0 = spatial_chain(6)
    s0 = mb.assemble(mech, params, q0, v0, fixed=("b0.wx", "b0.wy", "b0.wz"))
    assert mech.n_constraints == 30
    kw = dict(save_every=50, stabilizer=mb.Baumgarte(10.0))
    a = mb.simulate(mech, params, s0.q, s0.v, (0.0, 0.2), 1e-3, solver=mb.SchurCholesky(banded=True), **kw)
    b = mb.simulate(mech, params, s0.q, s0.v, (0.0, 0.2), 1e-3, solver=mb.SchurCholesky(banded=False), **kw)
    assert int(a.status) == 0 and int(b.status) == 0
    np.testing.assert_allclose(a.q, b.q, atol=1e-11)
    np.testing.assert_allclose(a.lam, b.lam, atol=1e-8)


def test_elementwise_batch_path_on_spatial_matches_vmap():
    mech, params, q0, v0 = spatial_chain(2)
    s0 = mb.assemble(mech, params, q0, v0, fixed=("b0.wx", "b0.wy", "b0.wz"))
    masses = jnp.linspace(0.8, 1.2, 9)
    P = jax.vmap(lambda m: mech.replace(params, {"b1.mass": m}))(masses)
    kw = dict(state_axis=None, save_every=20)
    e = mb.simulate_batch(mech, P, s0.q, s0.v, (0.0, 0.04), 1e-3, vectorize="elementwise", **kw)
    v = mb.simulate_batch(mech, P, s0.q, s0.v, (0.0, 0.04), 1e-3, vectorize="vmap", **kw)
    np.testing.assert_allclose(e.q, v.q, atol=1e-12)
    np.testing.assert_allclose(e.v, v.v, atol=1e-10)
    assert np.all(np.asarray(e.status) == 0)


@pytest.mark.slow  # (compiles the batch-minor and the vmap programs: 30-50 s of CPU each)
def test_spatial_slider_crank_batch_minor_path_matches_vmap():
    """The spatial slider-crank (3 bodies; revolute, spherical, universal, prismatic; 21
    position, 18 velocity coordinates, a dense 17-row solve) runs on the batch-minor path
    and agrees with vmap to round-off: batched slider masses and initial rates,
    Projection. vectorize="auto" takes it (the scalar form, its 17-row Cholesky factor
    written out: 2.4x vmap's throughput, batch 512, one XLA:CPU device) without a warning,
    and batch_vectorization says which."""
    import importlib
    import warnings
    sys.path.insert(0, str(ROOT / "examples"))
    ex = importlib.import_module("spatial_slider_crank")
    S = importlib.import_module("jaxmbs.experimental.elementwise.strategy")
    mech, params, q0, v0 = ex.build()
    assert (mech.n_coords, mech.n_vel) == (21, 18)
    s0 = ex.initial_state(mech, params, q0, v0)
    B = S.EW_MIN_BATCH
    P = jax.vmap(lambda m: mech.replace(params, {"slider.mass": m}))(jnp.linspace(1.5, 2.5, B))
    Q0 = jnp.tile(s0.q, (B, 1))
    V0 = jnp.tile(s0.v, (B, 1)) * jnp.linspace(0.9, 1.1, B)[:, None]  # (consistent: linear)
    kw = dict(save_every=10, stabilizer=mb.Projection())
    scalar = S.EW_MAX_COORDS >= mech.n_coords
    assert mb.batch_vectorization(mech, B, **kw) == ("elementwise" if scalar else "vmap")
    assert S._ew_form(mech, mb.SchurCholesky()) == ("scalar" if scalar else "array")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no fallback warning: the choice is by design)
        auto = mb.simulate_batch(mech, P, Q0, V0, (0.0, 0.03), 1e-3, **kw)
    v = mb.simulate_batch(mech, P, Q0, V0, (0.0, 0.03), 1e-3, vectorize="vmap", **kw)
    a = auto if scalar else mb.simulate_batch(mech, P, Q0, V0, (0.0, 0.03), 1e-3,
                                              vectorize="elementwise", **kw)
    np.testing.assert_allclose(a.q, v.q, atol=1e-13)
    np.testing.assert_allclose(a.v, v.v, atol=1e-12)
    np.testing.assert_allclose(a.lam, v.lam, rtol=1e-9, atol=1e-9)
    assert np.all(np.asarray(a.status) == 0) and np.all(np.asarray(v.status) == 0)


class SpatialPendulumEnv(MechanismEnv):
    """A rod on a ball joint with a control torque (body axes): a spatial environment."""

    name = "spatial_pendulum"

    def __init__(self, **kw):
        super().__init__(**kw)
        m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
        m.add_body("rod", mass=1.0, inertia=(0.02, 0.02, 1e-3), cg=(0.0, 0.0, -0.5))
        m.add_spherical("O", "ground", "rod", at=(0, 0, 0))
        m.add_load("tx", "rod", torque=(1.0, 0.0, 0.0), local=True, control=0)
        m.add_load("ty", "rod", torque=(0.0, 1.0, 0.0), local=True, control=1)
        self.mechanism, self._mech_params, self._q0, self._v0 = m.build()
        self._task = dict(dt=0.02, max_steps=50, max_torque=2.0)
        self.observation_space = Box(-np.inf, np.inf, (13,), self.dtype)
        self.action_space = Box(-1.0, 1.0, (2,), self.dtype)

    def _initial(self, key, p):
        w = jax.random.uniform(key, (3,), self.dtype, -1.0, 1.0)
        return self._q0, self._v0.at[3:6].set(w), {}

    def _controls(self, action, state, p):
        return jnp.clip(jnp.asarray(action, self.dtype), -1, 1) * p.task["max_torque"]

    def _observe(self, s, p):
        return jnp.concatenate([s.q, s.v]).astype(self.dtype)

    def _reward(self, s, action, u, new, p):
        return -jnp.sum(new.v ** 2)

    def _terminated(self, s, p):
        return jnp.zeros((), bool)


def test_environment_with_a_spatial_mechanism():
    env = SpatialPendulumEnv()
    p = env.default_params
    obs, s = env.reset(jax.random.key(0), p)
    assert obs.shape == (13,)
    step = jax.jit(env.step)
    for k in range(10):
        obs, s, r, term, trunc, info = step(jax.random.key(k), s, jnp.asarray([0.5, -0.3]), p)
        assert int(info["status"]) == 0
    np.testing.assert_allclose(np.linalg.norm(s.q[3:7]), 1.0, atol=1e-12)
    assert float(env.constraint_error(s, p)) < 1e-12
    # batched over parameter sets (domain randomisation)
    P = jax.vmap(lambda m: env.replace_params(p, {"rod.mass": m}))(jnp.linspace(0.5, 1.5, 4))
    obs, s = jax.vmap(env.reset, in_axes=(None, 0))(jax.random.key(1), P)
    # (jitted: op-by-op execution of this vmapped step crashed jaxlib 0.10.2 with a
    # segmentation fault; jax 0.12 runs it either way)
    out = jax.jit(jax.vmap(env.step, in_axes=(None, 0, None, 0)))(jax.random.key(2), s,
                                                                  jnp.zeros(2), P)
    assert out[0].shape == (4, 13) and np.all(np.asarray(out[5]["status"]) == 0)


def _spatial_arm():
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    m.add_body("arm", mass=1.0, inertia=(0.02, 0.02, 1e-3), cg=(0.3, 0.0, 0.0))
    m.add_revolute("O", "ground", "arm", at=(0, 0, 0), axis=(0, 1, 0))
    m.add_torsion_spring("ts", "O", k=5.0, c=0.2)
    mech, true, q0, v0 = m.build()
    traj = mb.simulate(mech, true, q0, v0, (0.0, 1.0), 5e-3, save_every=5)
    outs = [fit.point("arm", (0.3, 0.0, 0.0)), fit.reaction("O", "force"), fit.reaction("O", "moment"),
            fit.velocity("arm.wy")]
    return mech, true, q0, v0, traj, outs


def test_fitting_outputs_on_a_spatial_mechanism():
    mech, true, q0, v0, traj, outs = _spatial_arm()
    vals = fit.evaluate_outputs(mech, true, traj, outs)
    assert [v.shape[1] for v in vals] == [3, 3, 3, 1]
    assert [o.size(mech) for o in outs] == [3, 3, 3, 1]


@pytest.mark.slow  # (about 160 s on 2 cores: compiling L-BFGS over reverse mode of a spatial rollout)
def test_a_mass_fit_on_a_spatial_mechanism():
    mech, true, q0, v0, traj, outs = _spatial_arm()
    data = fit.synthetic(mech, true, traj, outs[:2], rel_noise=0.0, key=jax.random.PRNGKey(0))
    guess = mech.replace(true, {"arm.mass": 1.4})
    tr = fit.Trainable(mech, guess, ["arm.mass"])
    prob = fit.Problem(mech, tr, q0, v0, (0.0, 1.0), 5e-3, data, save_every=5)
    res = fit.fit(prob)
    assert abs(res.values["arm.mass"] - 1.0) < 1e-6


def test_cli_simulates_a_spatial_model_file(tmp_path):
    model = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    model.add_body("b", mass=1.0, inertia=(0.1, 0.2, 0.3), position=(0.5, 0, 0),
                   angular_velocity=(0.0, 0.0, 1.0))
    model.add_revolute("O", "ground", "b", at=(0, 0, 0), axis=(0, 0, 1))
    path = tmp_path / "sp.json"
    mb.save_model(model, path)
    out = subprocess.run([sys.executable, "-m", "jaxmbs.cli", "simulate", str(path), "--t1", "0.1",
                          "--json"], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res.get("failed", 0) == 0
