"""TreeSchur (block elimination along the joint tree) against the dense saddle-point
solves: random spatial trees, imported robot files, float32, derivatives, the fallbacks."""
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs as mb
from jaxmbs.core.equations import constraint_terms, generalized_forces, mass_matrix
from jaxmbs.formulations.tree import tree_plan


def _random_tree(seed, n_bodies=7, armature=True):
    """A random spatial tree: each body hangs from an earlier one (or the ground) by a
    revolute, spherical, universal, prismatic or weld joint; armatures on some revolutes."""
    rng = np.random.default_rng(seed)
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    pos = {"ground": np.zeros(3)}
    kinds = ["revolute", "spherical", "universal", "prismatic", "weld"]
    for b in range(n_bodies):
        name = f"b{b}"
        parent = "ground" if b == 0 else (f"b{rng.integers(0, b)}" if rng.uniform() < 0.8 else "ground")
        p = pos[parent] + rng.normal(size=3) * 0.3
        pos[name] = p + rng.normal(size=3) * 0.2
        m.add_body(name, mass=rng.uniform(0.5, 2.0), inertia=rng.uniform(0.1, 0.15, 3),
                   position=pos[name], velocity=rng.normal(size=3) * 0.1)
        kind = kinds[rng.integers(0, len(kinds))] if b else "revolute"
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        j = f"j{b}"
        if kind == "revolute":
            m.add_revolute(j, parent, name, at=p, axis=axis)
            if armature and rng.uniform() < 0.5:
                m.add_armature(f"a{b}", j, rng.uniform(0.01, 0.1))
        elif kind == "spherical":
            m.add_spherical(j, parent, name, at=p)
        elif kind == "universal":
            a2 = np.cross(axis, rng.normal(size=3))
            m.add_universal(j, parent, name, at=p, axis_i=axis, axis_j=a2 / np.linalg.norm(a2))
        elif kind == "prismatic":
            m.add_prismatic(j, parent, name, at=p, axis=axis)
        else:
            m.add_weld(j, parent, name, at=p)
    mech, params, q0, v0 = m.build()
    res = mb.assemble(mech, params, q0, v0)  # (the random velocities made consistent)
    return mech, params, res.q, res.v


def _system(mech, params, q, v, dtype=jnp.float64):
    terms = constraint_terms(mech, params, q, v, 0.0)
    M = mass_matrix(mech, params, q)
    u = jnp.zeros((mech.n_controls,), q.dtype) if mech.n_controls else None
    Q = generalized_forces(mech, params, q, v, 0.0, u)[0]
    return M, terms.jac, Q, terms.gamma


def _compare(mech, params, q, v, rtol=1e-12):
    M, J, Q, gamma = _system(mech, params, q, v)
    qdd, lam, status = mb.TreeSchur().for_mechanism(mech).solve(M, J, Q, gamma)
    qdd0, lam0, _ = mb.DenseLU().solve(M, J, Q, gamma)
    assert int(status) == 0
    np.testing.assert_allclose(qdd, qdd0, rtol=0, atol=rtol * float(jnp.max(jnp.abs(qdd0))))
    np.testing.assert_allclose(lam, lam0, rtol=0, atol=rtol * float(jnp.max(jnp.abs(lam0))))


@pytest.mark.parametrize("seed", range(6))
def test_random_trees_against_the_dense_lu(seed):
    mech, params, q0, v0 = _random_tree(seed)
    assert tree_plan(mech) is not None, tree_plan.why(mech)
    v = v0 + jnp.asarray(np.random.default_rng(seed).normal(size=v0.shape)) * 0.5
    res = mb.assemble(mech, params, q0, v)
    _compare(mech, params, res.q, res.v, rtol=1e-10)


def _gym(name):
    gym = pytest.importorskip("gymnasium")
    path = os.path.join(os.path.dirname(gym.__file__), "envs", "mujoco", "assets", name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mb.from_mjcf(path).build()


@pytest.mark.parametrize("name", ["ant.xml", "humanoid.xml", "reacher.xml", "pusher.xml"])
def test_imported_robots_against_the_dense_lu(name):
    pytest.importorskip("mujoco")
    mech, params, q0, v0 = _gym(name)
    assert tree_plan(mech) is not None, tree_plan.why(mech)
    v = v0 + jnp.asarray(np.random.default_rng(0).normal(size=v0.shape)) * 0.3
    _compare(mech, params, q0, v, rtol=1e-11)


def test_float32_agrees_with_float64():
    mech, params, q0, v0 = _random_tree(3)
    res = mb.assemble(mech, params, q0, v0 + 0.2)
    M, J, Q, gamma = _system(mech, params, res.q, res.v)
    ref = mb.TreeSchur().for_mechanism(mech).solve(M, J, Q, gamma)[0]
    p32 = jax.tree_util.tree_map(lambda x: x.astype(jnp.float32) if x.dtype == jnp.float64 else x, params)
    M, J, Q, gamma = _system(mech, p32, res.q.astype(jnp.float32), res.v.astype(jnp.float32))
    qdd, _, status = mb.TreeSchur().for_mechanism(mech).solve(M, J, Q, gamma)
    assert qdd.dtype == jnp.float32 and int(status) == 0
    np.testing.assert_allclose(qdd, ref, rtol=0, atol=2e-4 * float(jnp.max(jnp.abs(ref))))


def test_solve_derivatives_against_central_differences():
    """Forward and reverse derivatives of the accelerations with respect to a body's mass
    (through the implicit differentiation of the tree solve) against central
    differences."""
    mech, params, q0, v0 = _random_tree(1, n_bodies=4)
    key = next(k for k, _ in mech.param_keys if k.endswith(".mass"))
    w = jnp.asarray(np.random.default_rng(0).normal(size=mech.n_vel))

    @jax.jit
    def f(mass):
        p = mech.replace(params, {key: mass})
        return w @ mb.accelerations(mech, p, q0, v0, 0.0, solver=mb.TreeSchur()).qdd

    m0 = jnp.asarray(float(mech.get(params, key)))
    h = 1e-5
    fd = (float(f(m0 + h)) - float(f(m0 - h))) / (2 * h)
    assert abs(fd) > 1e-3
    for d in (float(jax.jit(jax.grad(f))(m0)), float(jax.jit(jax.jacfwd(f))(m0))):
        assert abs(d - fd) <= 1e-7 * abs(fd), (d, fd)


@pytest.mark.slow
def test_rollout_gradient_against_central_differences():
    """d(final position)/d(mass of a body) through a short simulate with TreeSchur,
    reverse mode against central differences of the same simulation."""
    mech, params, q0, v0 = _random_tree(1, n_bodies=4)
    key = next(k for k, _ in mech.param_keys if k.endswith(".mass"))

    def final_x(mass):
        p = mech.replace(params, {key: mass})
        tr = mb.simulate(mech, p, q0, v0, (0.0, 0.05), 1e-3, solver=mb.TreeSchur(), save_every=50)
        return tr.q[-1, 0] + tr.q[-1, 8]

    m0 = float(mech.get(params, key))
    g = float(jax.grad(final_x)(jnp.asarray(m0)))
    h = 1e-4
    fd = (float(final_x(jnp.asarray(m0 + h))) - float(final_x(jnp.asarray(m0 - h)))) / (2 * h)
    assert abs(g - fd) <= 1e-6 * max(1.0, abs(fd)), (g, fd)
    assert abs(fd) > 1e-6  # the quantity depends on the mass


def test_simulation_matches_schur_cholesky():
    mech, params, q0, v0 = _random_tree(2)
    kw = dict(save_every=100)
    a = mb.simulate(mech, params, q0, v0, (0.0, 0.1), 1e-3, solver=mb.TreeSchur(), **kw)
    b = mb.simulate(mech, params, q0, v0, (0.0, 0.1), 1e-3, **kw)
    assert int(a.status) == 0
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.lam, b.lam, rtol=0, atol=1e-8 * float(jnp.max(jnp.abs(b.lam))))


def test_a_redundant_joint_drops_its_rows_as_schur_cholesky_does():
    """Two revolutes on one axis between the same bodies: the second one's rows depend on
    the first's and are dropped within the joint's pivot block; accelerations exact."""
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    m.add_body("arm", mass=1.0, inertia=(0.1, 0.1, 0.02), position=(0.5, 0.0, 0.0))
    m.add_revolute("hinge", "ground", "arm", at=(0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0))
    m.add_revolute("again", "ground", "arm", at=(0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0))
    mech, params, q0, v0 = m.build()
    M, J, Q, gamma = _system(mech, params, q0, v0)
    qdd, lam, status = mb.TreeSchur().for_mechanism(mech).solve(M, J, Q, gamma)
    qdd0, _, s0 = mb.SchurCholesky().solve(M, J, Q, gamma)
    assert int(status) == int(s0) == 0
    np.testing.assert_allclose(qdd, qdd0, rtol=0, atol=1e-12)
    # the pendulum's angular acceleration about the hinge (+y: the arm along +x falls
    # towards -z): m g l / (J + m l^2)
    assert abs(float(qdd[4]) - 9.81 * 0.5 / (0.1 + 0.25)) < 1e-12


def test_closed_loops_fall_back_with_a_warning_naming_why():
    mech, params, q0, v0 = mb.zoo.four_bar()
    assert tree_plan(mech) is None and "loop" in tree_plan.why(mech)
    with pytest.warns(RuntimeWarning, match="closes? kinematic loops"):
        solver = mb.TreeSchur().for_mechanism(mech)
    assert isinstance(solver, mb.SchurCholesky)


def test_an_unbound_tree_solver_says_how_to_bind_it():
    mech, params, q0, v0 = _random_tree(0, n_bodies=2)
    M, J, Q, gamma = _system(mech, params, q0, v0)
    with pytest.raises(ValueError, match="for_mechanism"):
        mb.TreeSchur().solve(M, J, Q, gamma)
