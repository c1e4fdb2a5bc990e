"""vmap against a Python loop, recompilation, failures as data, float32, and every
bad-input error message."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mechanisms import double_pendulum, four_bar

import jaxmbs as mb
from jaxmbs.simulation import _simulate


def test_vmapped_batch_equals_python_loop():
    mech, params, q0, v0 = double_pendulum()
    masses = jnp.array([0.5, 1.0, 2.0, 3.5])
    batch = jax.vmap(lambda m: mech.replace(params, {"l2.mass": m, "l1.inertia": m / 12}))(masses)
    out = mb.simulate_batch(mech, batch, q0, v0, (0.0, 1.0), 1e-3, save_every=100, state_axis=None)
    assert out.q.shape == (4, 11, 6)
    for k, m in enumerate(masses):
        p = mech.replace(params, {"l2.mass": m, "l1.inertia": m / 12})
        tr = mb.simulate(mech, p, q0, v0, (0.0, 1.0), 1e-3, save_every=100)
        np.testing.assert_allclose(out.q[k], tr.q, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(out.lam[k], tr.lam, rtol=1e-10, atol=1e-10)


def test_same_topology_compiles_nothing():
    """A second mechanism built separately with other numbers shares the compilation."""
    mech, params, q0, v0 = double_pendulum()
    mb.simulate(mech, params, q0, v0, (0.0, 0.1), 1e-3).q.block_until_ready()
    before = _simulate._cache_size()
    mech2, params2, q2, v2 = double_pendulum(g=3.7)
    assert mech2 == mech and hash(mech2) == hash(mech)
    params2 = mech2.replace(params2, {"l1.mass": 2.0})
    tr = mb.simulate(mech2, params2, q2, v2 + 0.1 * jnp.array([0, 0, 0, 0, 0, 0.0]), (0.0, 0.1), 1e-3)
    tr.q.block_until_ready()
    assert _simulate._cache_size() == before


def test_failing_member_does_not_spoil_the_batch():
    """One member with a NaN mass: its status says so and the others equal their individual
    runs to round-off (the batched and single programs are compiled separately, and XLA
    may vectorise the element-wise small products of each differently: 7e-16 measured)."""
    mech, params, q0, v0 = double_pendulum()
    masses = jnp.array([1.0, jnp.nan, 2.0])
    batch = jax.vmap(lambda m: mech.replace(params, {"l2.mass": m}))(masses)
    out = mb.simulate_batch(mech, batch, q0, v0, (0.0, 0.5), 1e-3, save_every=100, state_axis=None)
    st = np.asarray(out.status)
    assert st[0] == 0 and st[2] == 0
    assert st[1] & mb.status.NONFINITE
    assert np.all(np.isfinite(out.q[1]))  # frozen at the last finite state
    single = mb.simulate(mech, mech.replace(params, {"l2.mass": 2.0}), q0, v0, (0.0, 0.5), 1e-3,
                         save_every=100)
    np.testing.assert_allclose(out.q[2], single.q, rtol=1e-12, atol=1e-14)


def test_redundant_pins_are_handled_and_a_singular_configuration_sets_status():
    """Two coincident pins on one body make Phi_q rank deficient but consistent: the
    default solver drops the dependent rows (status 0, the single pin's motion, the
    redundant pin's multipliers 0). A particle on a circle and on the circle's tangent
    line, moving along the line, is a singular configuration: the dependent row asks for
    another acceleration than the rows it depends on -> SINGULAR, not an exception."""
    m = mb.Model()
    m.add_body("b", mass=1.0, inertia=0.1, position=(0.5, 0.0), angular_velocity=2.0)
    m.add_revolute("p1", "ground", "b", at=(0.0, 0.0))
    m.add_revolute("p2", "ground", "b", at=(0.0, 0.0))
    mech, params, q0, v0 = m.build()
    s0 = mb.assemble(mech, params, q0, v0, fixed=("b.theta",))
    acc = mb.accelerations(mech, params, s0.q, s0.v, 0.0)
    assert int(acc.status) == 0
    rep = mb.constraint_report(mech, params, q0)
    assert rep["rank"] == 2 and rep["redundant"] == ["p2[0]", "p2[1]"] and rep["dof"] == 1
    np.testing.assert_array_equal(np.asarray(acc.lam)[2:], 0.0)
    one = mb.Model()
    one.add_body("b", mass=1.0, inertia=0.1, position=(0.5, 0.0), angular_velocity=2.0)
    one.add_revolute("p1", "ground", "b", at=(0.0, 0.0))
    m1, p1 = one.build()[:2]
    ref = mb.accelerations(m1, p1, s0.q, s0.v, 0.0)
    np.testing.assert_allclose(acc.qdd, ref.qdd, atol=1e-12)
    np.testing.assert_allclose(acc.lam[:2], ref.lam, atol=1e-12)

    m = mb.Model(gravity=(0.0, -9.81))
    m.add_particle("p", mass=1.0, position=(0.0, 1.0), velocity=(1.0, 0.0))
    m.add_distance("rod", "ground", "p", at_i=(0.0, 0.0), at_j=(0.0, 1.0))
    m.add_point_on_line("rail", "ground", "p", axis=(1.0, 0.0), at=(0.0, 1.0))
    mech, params, q0, v0 = m.build()
    assert mb.constraint_report(mech, params, q0)["redundant"] == ["rod[0]"]  # (rows: line family first)
    acc = mb.accelerations(mech, params, q0, v0, 0.0)
    assert int(acc.status) & mb.status.SINGULAR
    at_rest = mb.accelerations(mech, params, q0, jnp.zeros_like(v0), 0.0)
    assert int(at_rest.status) == 0  # (at rest the two rows agree: the particle is held)


def test_float32_runs_and_agrees():
    mech, params, q0, v0 = double_pendulum()
    f32 = lambda x: jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float32), x)
    tr32 = mb.simulate(mech, f32(params), f32(q0), f32(v0), (0.0, 1.0), 1e-3, save_every=100,
                       stabilizer=mb.Projection(tol=1e-4))
    tr64 = mb.simulate(mech, params, q0, v0, (0.0, 1.0), 1e-3, save_every=100)
    assert tr32.q.dtype == jnp.float32 and tr32.lam.dtype == jnp.float32
    assert int(tr32.status) & ~mb.status.DRIFT == 0
    np.testing.assert_allclose(tr32.q, tr64.q, atol=2e-3)


def test_gradient_through_simulation_is_finite_and_matches_fd():
    mech, params, q0, v0 = double_pendulum()

    def final_x(m2):
        p = mech.replace(params, {"l2.mass": m2})
        return mb.simulate(mech, p, q0, v0, (0.0, 0.5), 1e-3, save_every=500).q[-1, 3]

    g = jax.grad(final_x)(1.0)
    eps = 1e-5
    fd = (final_x(1.0 + eps) - final_x(1.0 - eps)) / (2 * eps)
    assert np.isfinite(g)
    assert abs(g - fd) < 1e-6 * max(1.0, abs(fd))


# ---------------------------------------------------------------- errors
def _pendulum_model():
    m = mb.Model()
    m.add_body("link", mass=1.0, inertia=0.1, position=(0.5, 0.0))
    return m


@pytest.mark.parametrize("kw,msg", [
    (dict(mass=-1.0, inertia=0.1), "body 'x': mass must be positive"),
    (dict(mass=0.0, inertia=0.1), "body 'x': mass must be positive"),
    (dict(mass=1.0, inertia=0.0), "body 'x': inertia must be positive"),
    (dict(mass=1.0, inertia=-2.0), "body 'x': inertia must be positive"),
    (dict(mass=float("nan"), inertia=1.0), "body 'x': mass must be positive and finite"),
])
def test_bad_mass_or_inertia(kw, msg):
    with pytest.raises(ValueError, match=msg):
        mb.Model().add_body("x", **kw)


def test_bad_particle_mass():
    with pytest.raises(ValueError, match="particle 'p': mass must be positive"):
        mb.Model().add_particle("p", mass=0.0, position=(0, 0))


def test_unknown_body():
    m = _pendulum_model()
    with pytest.raises(ValueError, match="revolute 'j': unknown body 'lnk'; known bodies: ground, link"):
        m.add_revolute("j", "ground", "lnk", at=(0, 0))


def test_zero_length_axis():
    m = _pendulum_model()
    m.add_body("s", mass=1.0, inertia=0.1)
    with pytest.raises(ValueError, match="prismatic 'p': zero-length axis"):
        m.add_prismatic("p", "ground", "s", axis=(0.0, 0.0))


def test_coincident_distance_points():
    m = _pendulum_model()
    with pytest.raises(ValueError, match="distance 'd': the two points coincide"):
        m.add_distance("d", "ground", "link", at_i=(0.5, 0.0), at_j=(0.5, 0.0))


def test_duplicate_name_and_self_joint():
    m = _pendulum_model()
    with pytest.raises(ValueError, match="duplicate name 'link'"):
        m.add_body("link", mass=1.0, inertia=1.0)
    with pytest.raises(ValueError, match="connects 'link' to itself"):
        m.add_revolute("j", "link", "link")


def test_no_solution_near_guess_names_the_joints():
    """A four-bar whose coupler is too short to close the loop."""
    m = mb.Model()
    m.add_body("crank", mass=1.0, inertia=0.1, position=(0.0, 0.1), angle=np.pi / 2)
    m.add_body("coupler", mass=1.0, inertia=0.1, position=(0.5, 0.2))
    m.add_body("rocker", mass=1.0, inertia=0.1, position=(2.0, 0.25), angle=np.pi / 2)
    m.add_revolute("O", "ground", "crank", at=(0.0, 0.0))
    m.add_revolute("A", "crank", "coupler", at=(0.0, 0.2), point_j=(-0.1, 0.0))
    m.add_revolute("B", "coupler", "rocker", point_i=(0.1, 0.0), at=(2.0, 0.5))
    m.add_revolute("D", "ground", "rocker", at=(2.0, 0.0))
    mech, params, q0, v0 = m.build()
    with pytest.raises(ValueError, match=r"assembly failed: the constraints have no solution near the guess.*largest residuals: [ABDO]\["):
        mb.assemble(mech, params, q0)
    # traced: no exception, a status instead
    res = jax.jit(lambda q: mb.assemble(mech, params, q))(q0)
    assert int(res.status) == mb.status.NEWTON_FAILED


def test_inconsistent_initial_state():
    mech, params, q0, v0 = double_pendulum()
    with pytest.raises(ValueError, match=r"inconsistent initial state: position constraint residuals.*O\[0\]"):
        mb.simulate(mech, params, q0.at[0].add(0.01), v0, (0.0, 0.1), 1e-3)
    with pytest.raises(ValueError, match="inconsistent initial state: velocity"):
        mb.simulate(mech, params, q0, v0.at[4].add(1.0), (0.0, 0.1), 1e-3)


def test_misc_input_errors():
    mech, params, q0, v0 = double_pendulum()
    with pytest.raises(ValueError, match="not a whole number of steps"):
        mb.simulate(mech, params, q0, v0, (0.0, 0.1), 0.03)
    with pytest.raises(ValueError, match=r"q0 and v0 must have shape \(6,\)"):
        mb.simulate(mech, params, q0[:4], v0, (0.0, 0.1), 1e-3)
    with pytest.raises(ValueError, match="unknown parameter 'l3.mass'"):
        mech.replace(params, {"l3.mass": 1.0})
    with pytest.raises(ValueError, match="kinematic analysis needs as many constraint rows"):
        mb.kinematics(mech, params, q0, jnp.linspace(0, 1, 3))
    m = _pendulum_model()
    m.add_particle("p", mass=1.0, position=(1.0, 0.0))
    with pytest.raises(ValueError, match="a particle has no orientation"):
        m.add_revolute("j", "link", "p", point_i=(0.5, 0.0), point_j=(0.1, 0.0))
    with pytest.raises(ValueError, match="'p' is a particle"):
        m.add_prismatic("k", "ground", "p")
    with pytest.raises(ValueError, match="the model has no bodies"):
        mb.Model().build()


def test_assembly_closes_four_bar_from_rough_guess():
    mech, params, q0, v0 = four_bar()
    guess = q0 + 0.05 * jnp.sin(jnp.arange(q0.size) + 1.0)
    guess = guess.at[2].set(q0[2])
    res = mb.assemble(mech, params, guess, fixed=("crank.theta",))
    assert float(res.residual) < 1e-12 and int(res.rank) == 8
    assert mb.dof(mech, params, res.q) == 1
    assert abs(float(res.q[2] - q0[2])) == 0.0
    np.testing.assert_allclose(res.q, q0, atol=1e-10)  # the same assembly branch


def test_batch_initial_check_reads_the_first_save_point():
    """simulate_batch judges the initial consistency from the run's first save point (max|Phi|
    and max|Phi_q v + Phi_t| at (q0, v0)): a consistent batch compiles no second program; an
    inconsistent member is named on the vmap and the batch-minor path; a member whose
    params are not finite is not judged (as the check before the run did not)."""
    import jaxmbs.simulation as S
    from jaxmbs.experimental.elementwise.strategy import EW_MIN_BATCH
    mech, params, q0, v0 = double_pendulum()
    B = EW_MIN_BATCH
    masses = jnp.full((B,), 1.0).at[2].set(jnp.nan)
    P = jax.vmap(lambda m: mech.replace(params, {"l2.mass": m}))(masses)
    Q, V = jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1))
    kw = dict(save_every=5)
    S._batch_residuals.clear_cache()
    for vec in ("vmap", "elementwise"):
        tr = mb.simulate_batch(mech, P, Q.at[2, 0].add(1e-2), V, (0.0, 0.01), 1e-3,
                               vectorize=vec, **kw)
        assert np.asarray(tr.constraint_error)[2, 0] > 1e-3  # (member 2: not judged)
    assert S._batch_residuals._cache_size() == 0
    for vec in ("vmap", "elementwise"):
        with pytest.raises(ValueError, match=r"batch member 3 \(1 of"):
            mb.simulate_batch(mech, P, Q.at[3, 0].add(1e-2), V, (0.0, 0.01), 1e-3,
                              vectorize=vec, **kw)
        with pytest.raises(ValueError, match="batch member 5 .*velocity"):
            mb.simulate_batch(mech, P, Q, V.at[5, 1].add(1.0), (0.0, 0.01), 1e-3,
                              vectorize=vec, **kw)
