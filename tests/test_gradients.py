"""Gradients through every stage and through long closed-loop rollouts.

Oracles: `jax.test_util.check_grads` compares forward- and reverse-mode derivatives
with central finite differences of the same function (orders 1 and, where cheap, 2);
rollout gradients are compared with a sweep of central finite differences and
between jacfwd and grad; singular cases with closed-form solutions. The heavier checks
(second order, whole-Params pytrees, 1000-step rollouts) are marked slow:
`python -m pytest -m slow tests/test_gradients.py`.
"""
import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads
from mechanisms import double_pendulum, four_bar, four_bar_model, kitchen_sink, slider_crank

import jaxmbs as mb
from jaxmbs.planar.mass import MassMatrix

MODES = ("fwd", "rev")
# finite-difference step of check_grads (its default 1e-4 is a truncation error of ~1e-4
# relative on the stiffer second derivatives here; 1e-6 keeps round-off below 1e-9)
EPS = 1e-6


@contextlib.contextmanager
def debug_nans():
    """Raise FloatingPointError on any NaN produced by a JAX computation (restored after)."""
    old = jax.config.jax_debug_nans
    jax.config.update("jax_debug_nans", True)
    try:
        yield
    finally:
        jax.config.update("jax_debug_nans", old)


def _finite(tree):
    return all(np.all(np.isfinite(np.asarray(x))) for x in jax.tree_util.tree_leaves(tree))


def sprung_four_bar(crank_angle=np.pi / 3, omega=3.0):
    """The crank-rocker of tests/mechanisms.py plus a translational spring-damper from the
    ground (0.2, 0.5) to the coupler's midpoint and a torsion spring-damper on the crank.
    Returns (mech, params, q_guess, v_guess): the guess spins the crank at omega (rad/s)."""
    m, A, B, D = four_bar_model(crank_angle)
    m.add_spring("spring", "ground", "coupler", k=40.0, c=0.8, length=0.3, at_i=(0.2, 0.5),
                 at_j=(A + B) / 2)
    m.add_torsion_spring("ts", "ground", "crank", k=0.5, c=0.02)
    mech, params, q, v = m.build()
    return mech, params, q, jnp.zeros_like(q).at[2].set(omega)


# ------------------------------------------------------------------ stage by stage
def _terms_and_forces(mech, u=None):
    def terms(p, q, v, t):
        c = mb.constraint_terms(mech, p, q, v, t)
        return jnp.concatenate([c.phi, c.jac.ravel(), c.phit, c.gamma])

    def forces(p, q, v, t):
        Q, V, P = mb.generalized_forces(mech, p, q, v, t, u)
        return jnp.concatenate([Q, V[None], P[None]])

    return jax.jit(terms), jax.jit(forces)


@pytest.mark.slow
def test_check_grads_constraint_terms_and_forces():
    """Every joint family, driver profile, user constraint and force of the kitchen sink,
    w.r.t. all parameters, q, v and t (order 1); order 2 on the sprung four-bar."""
    mech, params, q0, _ = kitchen_sink()
    rng = np.random.default_rng(0)
    q = q0 + 0.05 * rng.standard_normal(q0.shape)
    v = jnp.asarray(rng.standard_normal(q0.shape))
    for f in _terms_and_forces(mech, jnp.array([0.7])):
        check_grads(jax.jit(f), (params, q, v, 0.3), order=1, modes=MODES, eps=EPS)
    mech, params, q, _ = sprung_four_bar()
    v = jnp.asarray(rng.standard_normal(q.shape))
    for f in _terms_and_forces(mech):
        check_grads(jax.jit(f), (params, q, v, 0.3), order=2, modes=MODES, eps=EPS)


def test_check_grads_mass_matrix_solve():
    mech, params, q0, _ = kitchen_sink()  # bodies with offset CGs and a particle
    X = jnp.asarray(np.random.default_rng(1).standard_normal((q0.shape[0], 3)))

    def f(p, q, X):
        M = mb.mass_matrix(mech, p, q)
        return jnp.concatenate([M.solve(X).ravel(), M.solve(X[:, 0])])

    check_grads(jax.jit(f), (params, q0, X), order=2, modes=MODES, eps=EPS)
    # and it is the inverse of the dense matrix
    M = mb.mass_matrix(mech, params, q0)
    np.testing.assert_allclose(M.dense() @ M.solve(X), X, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("solver,m", [(mb.SchurCholesky(), 8), (mb.SchurCholesky(), 14),
                                      (mb.DenseLU(), 8)],
                         ids=["schur-unrolled", "schur-lapack", "denselu"])
def test_check_grads_saddle_solvers(solver, m):
    """Random well-conditioned saddle systems; m = 14 > unroll_max takes LAPACK's Cholesky."""
    rng = np.random.default_rng(m)
    nb = (m + 2) // 3 + 1
    n = 3 * nb + 2
    mass = jnp.asarray(rng.uniform(0.5, 2.0, nb))
    J = jnp.asarray(rng.uniform(0.05, 0.2, nb))
    c = jnp.asarray(0.1 * rng.standard_normal((nb, 2)))
    mp = jnp.asarray(rng.uniform(0.5, 2.0, 1))
    jac = jnp.asarray(rng.standard_normal((m, n)))
    Q = jnp.asarray(rng.standard_normal(n))
    gamma = jnp.asarray(rng.standard_normal(m))

    def f(mass, J, c, jac, Q, gamma):
        qdd, lam, _ = solver.solve(MassMatrix(mass, J, c, mp), jac, Q, gamma)
        return jnp.concatenate([qdd, lam])

    check_grads(jax.jit(f), (mass, J, c, jac, Q, gamma), order=2, modes=MODES, eps=EPS)
    # independent check of the solution itself: the dense KKT system
    qdd, lam, st = solver.solve(MassMatrix(mass, J, c, mp), jac, Q, gamma)
    Md = np.asarray(MassMatrix(mass, J, c, mp).dense())
    np.testing.assert_allclose(Md @ qdd + np.asarray(jac).T @ lam, Q, atol=1e-10)
    np.testing.assert_allclose(np.asarray(jac) @ qdd, gamma, atol=1e-10)
    assert int(st) == 0


def test_check_grads_accelerations_wrt_params_and_state():
    mech, params, q0, v0 = four_bar()
    s = mb.assemble(mech, params, q0, jnp.zeros_like(q0).at[2].set(1.5), fixed=("crank.theta",))

    def f(mass, inertia, q, v):
        p = params.with_body_fields("planar_rigid", mass=mass, inertia=inertia)
        a = mb.accelerations(mech, p, q, v, 0.0)
        return jnp.concatenate([a.qdd, a.lam])

    rb = params.bodies["planar_rigid"]
    check_grads(jax.jit(f), (rb["mass"], rb["inertia"], s.q, s.v), order=1, modes=MODES, eps=EPS)


@pytest.mark.slow
def test_check_grads_accelerations_springs_drivers_and_baumgarte():
    """Whole Params pytree (masses, joint points, spring constants, gravity), q, v and t;
    a driven slider-crank (time-dependent rows) and the sprung four-bar with Baumgarte
    stabilisation evaluated off the constraint manifold (so Phi and Phi_dot enter)."""
    mech, params, q, v = sprung_four_bar()
    q = q + 1e-3 * jnp.arange(q.shape[0])  # off the manifold
    stab = mb.Baumgarte(alpha=10.0, beta=7.0)

    def f(p, q, v, t):
        a = mb.accelerations(mech, p, q, v, t, stabilizer=stab)
        return jnp.concatenate([a.qdd, a.lam, a.power[None]])

    check_grads(jax.jit(f), (params, q, v, 0.1), order=2, modes=MODES, eps=EPS)

    mech, params, q, v = slider_crank(omega=20.0)

    def g(p, q, v, t):
        a = mb.accelerations(mech, p, q, v, t)
        return jnp.concatenate([a.qdd, a.lam])

    check_grads(jax.jit(g), (params, q, v, 0.05), order=1, modes=MODES, eps=EPS)


def _rhs(mech, params):
    def f(t, y):
        q, v, _ = y
        acc = mb.accelerations(mech, params, q, v, t)
        return (v, acc.qdd, acc.power), acc.status
    return f


@pytest.mark.parametrize("integrator", [mb.RK4(), mb.SemiImplicitEuler(), mb.DormandPrince5()],
                         ids=["rk4", "sie", "dp5-attempt"])
def test_check_grads_one_integrator_step(integrator):
    mech, params, q, v = sprung_four_bar()
    s = mb.assemble(mech, params, q, v, fixed=("crank.theta",))

    def f(p, q, v, h):
        y = (q, v, jnp.zeros((), q.dtype))
        if integrator.adaptive:
            y1, err, _ = integrator.attempt(_rhs(mech, p), 0.0, y, h)
            return jnp.concatenate([y1[0], y1[1], y1[2][None], err[None]])
        y1, _ = integrator.step(_rhs(mech, p), 0.0, y, h)
        return jnp.concatenate([y1[0], y1[1], y1[2][None]])

    check_grads(jax.jit(f), (params, s.q, s.v, 1e-2), order=1, modes=MODES, eps=EPS)


@pytest.mark.slow
def test_check_grads_dormand_prince_rollout_under_step_budget():
    mech, params, q, v = sprung_four_bar()
    s = mb.assemble(mech, params, q, v, fixed=("crank.theta",))
    integ = mb.DormandPrince5(rtol=1e-7, atol=1e-9, max_steps=60)

    def f(mass, k, q0):
        p = mech.replace(params, {"coupler.mass": mass, "spring.k": k})
        tr = mb.simulate(mech, p, q0, s.v, (0.0, 0.2), 1e-2, save_every=10, integrator=integ,
                         check_initial=False)
        return jnp.concatenate([tr.q[-1], tr.v[-1]])

    tr = mb.simulate(mech, params, s.q, s.v, (0.0, 0.2), 1e-2, save_every=10, integrator=integ)
    assert int(tr.status) == 0 and int(tr.n_steps) + int(tr.n_rejected) < 60
    check_grads(jax.jit(f), (0.6, 40.0, s.q), order=1, modes=MODES, eps=EPS)


@pytest.mark.slow
def test_check_grads_projection():
    """`project` (Newton onto Phi = 0, then onto Phi_q v = -Phi_t), from a drifted state."""
    mech, params, q, v = sprung_four_bar()
    s = mb.assemble(mech, params, q, v, fixed=("crank.theta",))
    rng = np.random.default_rng(3)
    qd = s.q + 1e-3 * rng.standard_normal(s.q.shape)
    vd = s.v + 1e-2 * rng.standard_normal(s.v.shape)

    def f(p, q, v):
        q1, v1, _ = mb.project(mech, p, q, v, 0.0, mb.SchurCholesky(), iterations=2)
        return jnp.concatenate([q1, v1])

    check_grads(jax.jit(f), (params, qd, vd), order=2, modes=MODES, eps=EPS)
    q1, v1, st = mb.project(mech, params, qd, vd, 0.0, mb.SchurCholesky(), iterations=3)
    terms = mb.constraint_terms(mech, params, q1, v1, 0.0)
    assert int(st) == 0 and np.max(np.abs(terms.phi)) < 1e-12
    assert np.max(np.abs(terms.jac @ v1)) < 1e-12


@pytest.mark.slow
def test_check_grads_assemble_implicit():
    """The custom JVP of the Newton solve (transposed for reverse mode), orders 1 and 2."""
    mech, params, q, v = sprung_four_bar()

    def f(pts, q, v):
        p = params.replace(joints={**params.joints, "coincident": {**params.joints["coincident"],
                                                                   "point_i": pts}})
        r = mb.assemble(mech, p, q, v, fixed=("crank.theta",))
        return jnp.concatenate([r.q, r.v])

    pts = params.joints["coincident"]["point_i"]
    check_grads(jax.jit(f), (pts, q, v), order=2, modes=MODES, eps=EPS)


def test_assembly_implicit_gradient_matches_finite_differences():
    mech, params, q0, v0 = four_bar()

    def f(L):
        p = mech.replace(params, {"A.point_j": jnp.array([-L / 2, 0.0]), "B.point_i": jnp.array([L / 2, 0.0])})
        r = mb.assemble(mech, p, q0, jnp.zeros_like(q0).at[2].set(2.0), fixed=("crank.theta",))
        return jnp.sum(r.q[6:] ** 2) + jnp.sum(r.v ** 2)

    g_rev, g_fwd = jax.grad(f)(0.6), jax.jacfwd(f)(0.6)
    fd = (f(0.6 + 1e-6) - f(0.6 - 1e-6)) / 2e-6
    assert abs(g_rev - fd) < 1e-7 * max(1.0, abs(fd))
    assert abs(g_rev - g_fwd) < 1e-12 * max(1.0, abs(fd))


@pytest.mark.slow
def test_check_grads_inverse_dynamics():
    """Driven slider-crank: multipliers and a reaction over 11 instants w.r.t. the masses,
    inertias and the rod length (the kinematic Newton iterations are differentiated)."""
    mech, params, q, _ = slider_crank(omega=20.0)
    ts = jnp.linspace(0.0, 0.3, 11)

    def f(mass, inertia, L):
        p = mech.replace(params.with_body_fields("planar_rigid", mass=mass, inertia=inertia),
                         {"B.point_i": jnp.stack([L / 2, 0.0])})
        idy = mb.inverse_dynamics(mech, p, q, ts)
        return jnp.concatenate([idy.lam.ravel(), idy.reactions["A"]["force"].ravel()])

    rb = params.bodies["planar_rigid"]
    check_grads(jax.jit(f), (rb["mass"], rb["inertia"], 0.3), order=1, modes=MODES, eps=EPS)


# ------------------------------------------------------- a 1000-step closed-loop rollout
ROLL = ("crank.mass", "coupler.mass", "rocker.mass", "B.point_i[0]", "spring.k", "spring.c")


def _rollout_loss():
    """L(p): the sprung four-bar assembled for the parameters p (crank at pi/3 spinning at
    3 rad/s), simulated 1000 RK4 steps of 1 ms with the default Projection; L is a fixed
    random combination of the final q and v plus the mean rocker angle over the run."""
    mech, params, qg, vg = sprung_four_bar()
    w = jnp.asarray(np.random.default_rng(7).standard_normal(2 * mech.n_coords))

    def loss(theta):
        p = mech.replace(params, {"crank.mass": theta[0], "coupler.mass": theta[1],
                                  "rocker.mass": theta[2],
                                  "B.point_i": jnp.stack([theta[3], 0.0]),
                                  "spring.k": theta[4], "spring.c": theta[5]})
        s = mb.assemble(mech, p, qg, vg, fixed=("crank.theta",))
        tr = mb.simulate(mech, p, s.q, s.v, (0.0, 1.0), 1e-3, save_every=100, check_initial=False)
        return jnp.concatenate([tr.q[-1], tr.v[-1]]) @ w + jnp.mean(tr.q[:, 8]), tr.status

    theta0 = jnp.array([mech.get(params, k) if k != "B.point_i[0]" else mech.get(params, "B.point_i")[0]
                        for k in ROLL], dtype=jnp.float64)
    return loss, theta0


@pytest.mark.slow
def test_rollout_gradient_matches_finite_differences_and_forward_mode():
    """1000-step closed-loop rollout: d L / d (three masses, a link length, stiffness,
    damping) by grad and jacfwd vs central differences with relative step h |theta_i|,
    h swept over 1e-2 ... 1e-7 (the error is truncation O(h^2) for large h and round-off
    O(eps / h) for small h; the best step is typically 1e-4)."""
    loss, theta0 = _rollout_loss()
    f = jax.jit(lambda th: loss(th)[0])
    val, status = jax.jit(loss)(theta0)
    assert int(status) == 0
    g_rev = np.asarray(jax.jit(jax.grad(f))(theta0))
    g_fwd = np.asarray(jax.jit(jax.jacfwd(f))(theta0))
    assert np.all(g_rev != 0)
    np.testing.assert_allclose(g_fwd, g_rev, rtol=1e-10, atol=0)
    hs = 10.0 ** -np.arange(2, 8)
    errs = np.empty((len(hs), len(ROLL)))
    for a, h in enumerate(hs):
        for i in range(len(ROLL)):
            d = h * abs(float(theta0[i]))
            e = jnp.zeros_like(theta0).at[i].set(d)
            fd = (float(f(theta0 + e)) - float(f(theta0 - e))) / (2 * d)
            errs[a, i] = abs(fd - g_rev[i]) / abs(g_rev[i])
    best = errs.min(0)
    report = {k: (float(hs[errs[:, i].argmin()]), float(best[i])) for i, k in enumerate(ROLL)}
    print("rollout gradient vs central differences, (best relative step, relative error):", report)
    assert np.all(best < 1e-6), report


# ---------------------------------------------------- singular configurations, no NaNs
@pytest.mark.slow
def test_slider_crank_through_dead_centres_has_finite_exact_gradients():
    """Free-running slider-crank started at dead centre (crank, rod and slider collinear)
    and passing the opposite dead centre and back: forward and reverse gradients w.r.t.
    masses and the rod length are finite and agree with central differences."""
    mech, params, q, v = slider_crank(omega=20.0, driven=False)
    with debug_nans():
        def f(theta):
            p = mech.replace(params, {"crank.mass": theta[0], "slider.mass": theta[1],
                                      "rod.mass": theta[2]})
            tr = mb.simulate(mech, p, q, v, (0.0, 0.4), 1e-3, save_every=400, check_initial=False)
            return tr.q[-1, 6] + 0.1 * tr.v[-1, 6], tr

        th = jnp.array([0.36, 0.075552, 0.151104])
        val, tr = jax.jit(f)(th)
        assert int(tr.status) == 0
        full = mb.simulate(mech, params, q, v, (0.0, 0.4), 1e-3, save_every=10)
        crank = np.asarray(full.q[:, 2])
        assert crank[0] == 0.0 and crank.max() > 2 * np.pi  # passes theta = pi and 2 pi
        g_rev = jax.jit(jax.grad(lambda t: f(t)[0]))(th)
        g_fwd = jax.jit(jax.jacfwd(lambda t: f(t)[0]))(th)
        assert _finite((g_rev, g_fwd))
        np.testing.assert_allclose(g_fwd, g_rev, rtol=1e-10)
        ff = jax.jit(lambda t: f(t)[0])
        for i in range(3):
            d = 1e-5 * float(th[i])
            e = jnp.zeros(3).at[i].set(d)
            fd = (ff(th + e) - ff(th - e)) / (2 * d)
            assert abs(fd - g_rev[i]) < 1e-6 * abs(g_rev[i])


def _spring_particle(length, c):
    """A 2 kg particle on a spring (k = 8 N/m) anchored at the origin; built at (0.5, 0)
    (the builder wants distinct end points), returned with q = (0, 0): zero length."""
    m = mb.Model(gravity=(0.0, 0.0))
    m.add_particle("p", mass=2.0, position=(0.5, 0.0))
    m.add_spring("s", "ground", "p", k=8.0, c=c, length=length, at_i=(0.0, 0.0), at_j=(0.5, 0.0))
    mech, params, q, v = m.build()
    return mech, params, jnp.zeros_like(q), v


def test_spring_at_zero_length_is_finite_in_value_and_gradient():
    """The two points of a spring coincide (length 0): generalized forces, potential and
    power and their derivatives are finite; a zero-free-length spring is then exactly
    linear, Q = -k d, with Jacobian -k I."""
    with debug_nans():
        for length, c in ((0.0, 0.0), (0.3, 0.5)):
            mech, params, q, _ = _spring_particle(length, c)
            v = jnp.array([0.4, -0.1])

            def f(q, v, p):
                Q, V, P = mb.generalized_forces(mech, p, q, v, 0.0)
                return jnp.concatenate([Q, V[None], P[None]])

            out = f(q, v, params)
            jq = jax.jacfwd(f)(q, v, params)
            jr = jax.jacrev(f)(q, v, params)
            assert _finite((out, jq, jr))
            if length == 0.0:
                np.testing.assert_array_equal(np.asarray(out[:2]), [0.0, 0.0])
                np.testing.assert_allclose(np.asarray(jq[:2]), -8.0 * np.eye(2), rtol=1e-15)
                np.testing.assert_allclose(np.asarray(jr[:2]), -8.0 * np.eye(2), rtol=1e-15)
            else:  # tension -k L0 along an undefined direction: taken as 0
                np.testing.assert_array_equal(np.asarray(out[:2]), [0.0, 0.0])
                assert float(out[2]) == pytest.approx(0.5 * 8.0 * 0.3**2)


def test_particle_oscillating_through_a_zero_length_spring():
    """A particle starts on the spring's anchor with speed v0 (zero free length, no
    damping): x(t) = v0 / w sin(w t), w = sqrt(k / m). Value and gradient w.r.t. k and m
    through the rollout, which starts at and passes through zero length, match the
    closed form (RK4 at 1 ms: truncation error ~ (w dt)^4)."""
    mech, params, q, _ = _spring_particle(0.0, 0.0)
    v0, T = 0.5, 1.3
    with debug_nans():
        def x_end(km):
            p = mech.replace(params, {"s.k": km[0], "p.mass": km[1]})
            tr = mb.simulate(mech, p, q, jnp.array([v0, 0.0]), (0.0, T), 1e-3, save_every=100)
            return tr.q[-1, 0]

        km = jnp.array([8.0, 2.0])
        exact = lambda km: v0 / jnp.sqrt(km[0] / km[1]) * jnp.sin(jnp.sqrt(km[0] / km[1]) * T)
        assert float(x_end(km)) == pytest.approx(float(exact(km)), abs=1e-10)
        g = jax.grad(x_end)(km)
        np.testing.assert_allclose(np.asarray(g), np.asarray(jax.grad(exact)(km)), rtol=1e-8)
        np.testing.assert_allclose(np.asarray(jax.jacfwd(x_end)(km)), np.asarray(g), rtol=1e-10)


def test_spring_with_free_length_and_damper_started_at_zero_length_is_finite():
    mech, params, q, _ = _spring_particle(0.3, 0.5)
    with debug_nans():
        def f(kc):
            p = mech.replace(params, {"s.k": kc[0], "s.c": kc[1]})
            tr = mb.simulate(mech, p, q, jnp.array([0.5, 0.2]), (0.0, 0.5), 1e-3, save_every=100)
            return jnp.sum(tr.q[-1]) + tr.potential[-1]

        kc = jnp.array([8.0, 0.5])
        assert _finite((f(kc), jax.grad(f)(kc), jax.jacfwd(f)(kc)))


def test_distance_at_zero_length_is_finite():
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_particle("p", mass=1.0, position=(0.3, 0.0))
    m.add_distance("rod", "ground", "p", at_i=(0.0, 0.0), at_j=(0.3, 0.0))
    mech, params, _, _ = m.build()
    with debug_nans():
        def f(q, v):
            c = mb.constraint_terms(mech, params, q, v, 0.0)
            return jnp.concatenate([c.phi, c.jac.ravel(), c.gamma])

        q, v = jnp.zeros(2), jnp.array([0.2, 0.1])
        assert _finite((f(q, v), jax.jacfwd(f)(q, v), jax.jacrev(f)(q, v)))
        assert float(f(q, v)[0]) == -0.3  # Phi = |d| - L at d = 0


def test_pendulum_hanging_at_rest_has_exact_gradients():
    """Particle on a massless rod hanging straight down at rest (all velocities and the
    rod's rate of change zero): it stays at (0, -L) with rod tension m g. Gradients of the
    final height and the multiplier w.r.t. the length and the mass: -1, 0 and 0, g."""
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_particle("bob", mass=1.5, position=(0.0, -0.8))
    m.add_distance("rod", "ground", "bob", at_i=(0.0, 0.0), at_j=(0.0, -0.8))
    mech, params, q0, v0 = m.build()
    with debug_nans():
        def f(Lm):
            p = mech.replace(params, {"rod.length": Lm[0], "bob.mass": Lm[1]})
            s = mb.assemble(mech, p, q0, v0)
            tr = mb.simulate(mech, p, s.q, s.v, (0.0, 0.5), 1e-3, save_every=250, check_initial=False)
            return jnp.stack([tr.q[-1, 1], tr.lam[-1, 0]])

        Lm = jnp.array([0.8, 1.5])
        out = f(Lm)
        np.testing.assert_allclose(np.asarray(out), [-0.8, 1.5 * 9.81], rtol=1e-12)
        for jac in (jax.jacfwd(f)(Lm), jax.jacrev(f)(Lm)):
            np.testing.assert_allclose(np.asarray(jac), [[-1.0, 0.0], [0.0, 9.81]], atol=1e-9)


@pytest.mark.slow
def test_assembly_at_toggle_positions():
    """Crank-rocker four-bar at its toggle (crank and coupler collinear, rocker at its
    extreme, rocker speed 0). (a) Crank angle fixed: a regular assembly, whose implicit
    gradient w.r.t. the coupler length matches central differences. (b) Rocker angle fixed
    at its extreme: the free-coordinate Jacobian is singular there (a fold); Newton and its
    derivative stay finite (damped least-norm steps), though not meaningful."""
    a, b, c, d = 0.2, 0.6, 0.5, 0.5
    th = np.arccos(((a + b) ** 2 + d**2 - c**2) / (2 * (a + b) * d))
    mech, params, qg, _ = four_bar(crank_angle=th)
    vg = jnp.zeros_like(qg).at[2].set(2.0)
    with debug_nans():
        def f(L):
            p = mech.replace(params, {"B.point_i": jnp.stack([L / 2, 0.0])})
            r = mb.assemble(mech, p, qg, vg, fixed=("crank.theta",))
            return jnp.concatenate([r.q, r.v])

        r = mb.assemble(mech, params, qg, vg, fixed=("crank.theta",))
        assert abs(float(r.v[8])) < 1e-9  # rocker at rest: a toggle position
        L = 0.6
        j_fwd, j_rev = jax.jacfwd(f)(L), jax.jacrev(f)(L)
        fd = (f(L + 1e-6) - f(L - 1e-6)) / 2e-6
        assert _finite((j_fwd, j_rev))
        np.testing.assert_allclose(np.asarray(j_fwd), np.asarray(j_rev), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(np.asarray(j_fwd), np.asarray(fd), rtol=1e-6, atol=1e-7)

        rocker = float(r.q[8])

        def g(L):
            p = mech.replace(params, {"B.point_i": jnp.stack([L / 2, 0.0])})
            qq = qg.at[8].set(rocker)
            rr = mb.assemble(mech, p, qq, jnp.zeros_like(qq), fixed=("rocker.theta",), check=False)
            return rr.q

        assert _finite((g(L), jax.jacfwd(g)(L), jax.jacrev(g)(L)))


# --------------------------------------------------------------- memory policies
def test_checkpointed_gradient_equals_plain_and_saves_memory():
    mech, params, q0, v0 = double_pendulum()

    def make(ck):
        def loss(m):
            p = mech.replace(params, {"l2.mass": m})
            return jnp.sum(mb.simulate(mech, p, q0, v0, (0.0, 1.0), 1e-3, save_every=100, checkpoint=ck).q[-1])
        return jax.jit(jax.grad(loss))

    plain, ck = make(False), make(True)
    np.testing.assert_allclose(ck(1.0), plain(1.0), rtol=1e-10)
    mp = plain.lower(1.0).compile().memory_analysis()
    mc = ck.lower(1.0).compile().memory_analysis()
    if mp is not None and mc is not None:
        assert mc.temp_size_in_bytes < 0.5 * mp.temp_size_in_bytes


def test_gradient_through_adaptive_integrator_is_finite():
    mech, params, q0, v0 = double_pendulum()

    def loss(m):
        p = mech.replace(params, {"l2.mass": m})
        tr = mb.simulate(mech, p, q0, v0, (0.0, 0.2), 1e-3, save_every=200,
                         integrator=mb.DormandPrince5(rtol=1e-8, atol=1e-10, max_steps=300))
        return tr.q[-1, 3]

    g = jax.grad(loss)(1.0)
    fd = (loss(1.0 + 1e-6) - loss(1.0 - 1e-6)) / 2e-6
    assert np.isfinite(g) and abs(g - fd) < 1e-4 * max(1.0, abs(fd))
