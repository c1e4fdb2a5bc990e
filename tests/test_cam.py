"""Cam (curve-on-curve) joint, extra massless coordinates and curves.

Oracles: jax.jacfwd / jax.jvp for the analytic Phi_q and gamma, SciPy's periodic
CubicSpline for the spline curve, DenseLU on the full KKT matrix for the augmented
Schur solve, closed-form solutions (sliding and rolling discs on an incline, the exact
pendulum period for a disc sliding in a bowl, the contact force of an eccentric cam
under a flat follower) and energy conservation.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.interpolate import CubicSpline
from scipy.special import ellipk

import jaxmbs
from jaxmbs import curves as cv
from jaxmbs.core.equations import constraint_terms, generalized_forces, mass_matrix

SPLINE_PTS = [(0.05, 0.0), (0.035, 0.035), (0.0, 0.045), (-0.04, 0.03), (-0.045, -0.01),
              (-0.02, -0.04), (0.02, -0.042)]


# ----------------------------------------------------------------------------- curves
@pytest.mark.parametrize("curve", [
    cv.circle((0.1, -0.2), 0.3), cv.line((0.1, 0.2), (0.6, -0.8)),
    cv.polynomial([0.1, -0.5, 2.0, 3.0, -1.5]), cv.spline(SPLINE_PTS)], ids=lambda c: c.kind)
def test_curve_derivatives_match_autodiff(curve):
    s = jnp.array([0.3, 1.7, 2.45, -0.8, 5.6])
    r, r1, r2, r3 = curve(s)
    f = lambda x: curve(x[None])[0][0]
    d1, d2, d3 = jax.jit(jax.vmap(lambda x: (jax.jacfwd(f)(x), jax.jacfwd(jax.jacfwd(f))(x),
                                             jax.jacfwd(jax.jacfwd(jax.jacfwd(f)))(x))))(s)
    np.testing.assert_allclose(r1, d1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r2, d2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r3, d3, rtol=1e-12, atol=1e-12)


def test_spline_matches_scipy_periodic_cubic_spline():
    P = np.array(SPLINE_PTS)
    N = len(P)
    ref = CubicSpline(np.arange(N + 1), np.vstack([P, P[:1]]), bc_type="periodic")
    s = np.linspace(-3.0, 2 * N, 157) + 1e-3
    r, r1, r2, _ = (np.asarray(a) for a in cv.spline(P)(s))
    u = np.mod(s, N)
    np.testing.assert_allclose(r, ref(u), atol=1e-13)
    np.testing.assert_allclose(r1, ref(u, 1), atol=1e-12)
    np.testing.assert_allclose(r2, ref(u, 2), atol=1e-11)
    # C^2 across every knot (including the wrap-around)
    eps = 1e-9
    for kn in range(N + 1):
        lo = [np.asarray(a) for a in cv.spline(P)(np.array([kn - eps]))]
        hi = [np.asarray(a) for a in cv.spline(P)(np.array([kn + eps]))]
        for a, b in zip(lo[:3], hi[:3]):
            np.testing.assert_allclose(a, b, atol=1e-6)


def test_curve_validation_errors():
    with pytest.raises(ValueError, match="radius"):
        cv.circle((0, 0), -1.0)
    with pytest.raises(ValueError, match="direction"):
        cv.line((0, 0), (0, 0))
    with pytest.raises(ValueError, match="N >= 3"):
        cv.spline([(0, 0), (1, 0)])
    with pytest.raises(ValueError, match="unknown curve kind"):
        cv.as_curve(("ellipse", (0, 0), 1.0))
    m = jaxmbs.Model()
    m.add_particle("p", 1.0, (0, 0))
    m.add_body("b", 1.0, 1.0)
    with pytest.raises(ValueError, match="particle"):
        m.add_cam("c", "p", "b", ("circle", (0, 0), 1.0), ("line", (0, 0), (1, 0)))


# ----------------------------------------------------------------------------- Phi_q, gamma
def _mixed_mechanism():
    """Four cams, every curve kind on both sides, ground on either side."""
    m = jaxmbs.Model()
    for i, name in enumerate("ABCD"):
        m.add_body(name, 1.0 + i, 0.1, position=(0.3 * i, 0.1 * i), angle=0.2 * i)
    m.add_cam("c1", "A", "B", cv.circle((0.01, 0.02), 0.05), cv.line((0, 0), (1, 0.2)), 0.3, 0.1)
    m.add_cam("c2", "C", "ground", cv.spline(SPLINE_PTS), cv.polynomial([0.0, 0.1, -0.4, 0.3]), 1.3, 0.2)
    m.add_cam("c3", "B", "D", cv.polynomial([0.02, 0.0, 1.5]), cv.spline(SPLINE_PTS), -0.1, 4.6)
    m.add_cam("c4", "ground", "C", cv.line((0, -0.1), (1, 0)), cv.circle((0, 0), 0.08), 0.2, 4.0)
    return m.build()


def test_cam_jacobian_and_gamma_match_autodiff():
    mech, params, q0, _ = _mixed_mechanism()
    n = mech.n_coords
    assert n == 12 + 8 and mech.n_constraints == 12
    assert mech.coordinate_names()[12:14] == ("c1.s_i", "c1.s_j")
    rng = np.random.default_rng(0)

    @jax.jit
    def both(q, v):
        terms = constraint_terms(mech, params, q, v, 0.0)
        jac_ad = jax.jacfwd(lambda x: constraint_terms(mech, params, x, v, 0.0).phi)(q)
        _, jdot = jax.jvp(lambda x: constraint_terms(mech, params, x, v, 0.0).jac @ v, (q,), (v,))
        return terms, jac_ad, jdot

    for _ in range(4):
        q = jnp.asarray(q0 + 0.3 * rng.normal(size=n))
        v = jnp.asarray(rng.normal(size=n))
        terms, jac_ad, jdot = both(q, v)
        np.testing.assert_allclose(terms.jac, jac_ad, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(terms.gamma, -jdot, rtol=1e-10, atol=1e-10)
        assert np.max(np.abs(np.asarray(terms.gamma))) > 1e-2  # not trivially zero


def test_cam_rows_differentiable_in_curve_parameters():
    mech, params, q0, _ = _mixed_mechanism()
    f = jax.jit(lambda d: constraint_terms(mech, mech.replace(params, {"c2.data_i": d}), q0, 0 * q0, 0.0).phi)
    d0 = params.joints["cam"]["data_i"][1]
    J = jax.jit(jax.jacfwd(f))(d0)
    h = 1e-6
    for i in (0, 3, 7, 12):
        e = jnp.zeros_like(d0).at[i].set(h)
        np.testing.assert_allclose(J[:, i], (f(d0 + e) - f(d0 - e)) / (2 * h), atol=1e-7)
    assert np.any(np.abs(np.asarray(J[3:6])) > 1e-3)  # the spline points move the c2 rows


# ----------------------------------------------------------------------------- cam follower
def _follower(e=0.01, R=0.03, m_f=0.2, k=500.0, preload=0.01, g=9.81, drive=None, cam_inertia=1e-3,
              roller=None, w0=0.0):
    """Eccentric circular cam (centre e below the pivot at theta = 0) under a flat-faced
    (or roller, radius `roller`) follower on a vertical slide, spring k with `preload` m."""
    m = jaxmbs.Model(gravity=(0, -g))
    m.add_body("cam", mass=1.0, inertia=cam_inertia, angular_velocity=w0)
    m.add_revolute("O", "ground", "cam", at=(0, 0))
    y0 = R - e + (roller or 0.0)
    m.add_body("fol", mass=m_f, inertia=1e-4, position=(0, y0))
    m.add_prismatic("slide", "ground", "fol", axis=(0, 1))
    face = cv.line((0, 0), (1, 0)) if roller is None else cv.circle((0, 0), roller)
    m.add_cam("contact", "cam", "fol", cv.circle((0, -e), R), face)
    m.add_spring("spring", "ground", "fol", k=k, at_i=(0, 0.3), at_j=(0, y0), length=0.3 - y0 + preload)
    if drive is not None:
        m.drive_angle("motor", "cam", jaxmbs.constant_velocity(drive))
    return m.build()


def test_augmented_schur_matches_dense_lu_and_static_branch():
    mech, params, q0, v0 = _follower(w0=5.0)
    rng = np.random.default_rng(1)
    q = jnp.asarray(q0 + 0.05 * rng.normal(size=q0.shape))
    v = jnp.asarray(rng.normal(size=q0.shape))
    M = mass_matrix(mech, params, q)
    assert M.n_extra == 2 and np.allclose(np.asarray(M.dense())[-2:], 0)

    @jax.jit
    def solve(q, v):
        M = mass_matrix(mech, params, q)
        terms = constraint_terms(mech, params, q, v, 0.0)
        Q, _, _ = generalized_forces(mech, params, q, v, 0.0)
        return (M.dense(), terms, Q, jaxmbs.SchurCholesky().solve(M, terms.jac, Q, terms.gamma),
                jaxmbs.DenseLU().solve(M, terms.jac, Q, terms.gamma))

    Md, terms, Q, (a1, l1, s1), (a2, l2, s2) = solve(q, v)
    assert int(s1) == 0 and int(s2) == 0
    np.testing.assert_allclose(a1, a2, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(l1, l2, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(Md @ a1 + terms.jac.T @ l1, Q, atol=1e-9)
    np.testing.assert_allclose(terms.jac @ a1, terms.gamma, atol=1e-9)
    # mechanisms without extra coordinates keep the plain block-diagonal path
    m = jaxmbs.Model()
    m.add_body("b", 1.0, 0.1, position=(1, 0))
    m.add_revolute("O", "ground", "b", at=(0, 0))
    mech2, params2, q2, _ = m.build()
    assert mass_matrix(mech2, params2, q2).me is None


def test_augmented_schur_float32_and_jit():
    mech, params, q0, v0 = _follower(w0=5.0)
    p32 = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32), params)
    acc = jax.jit(lambda q, v: jaxmbs.accelerations(mech, p32, q, v, 0.0))(
        jnp.asarray(q0, jnp.float32), jnp.asarray(v0, jnp.float32))
    ref = jaxmbs.accelerations(mech, params, q0, v0, 0.0, solver=jaxmbs.DenseLU())
    assert acc.qdd.dtype == jnp.float32 and int(acc.status) == 0
    np.testing.assert_allclose(acc.qdd, ref.qdd, rtol=2e-3, atol=2e-3 * float(jnp.max(jnp.abs(ref.qdd))))


def _analytic_force(theta, w, e, m_f, k, preload, g):
    """Flat follower on an eccentric cam at constant speed w: lift x = e(1 - cos theta),
    x'' = e w^2 cos theta, contact force N = k (preload + x) + m (g + x'')."""
    x = e * (1 - np.cos(theta))
    return k * (preload + x) + m_f * (g + e * w**2 * np.cos(theta)), x


@pytest.mark.parametrize("roller", [None, pytest.param(0.01, marks=pytest.mark.slow)])
def test_driven_cam_contact_force_matches_analytic(roller):
    e, m_f, k, pre, g, w = 0.01, 0.2, 500.0, 0.01, 9.81, 40.0
    mech, params, q0, v0 = _follower(e=e, m_f=m_f, k=k, preload=pre, g=g, drive=w, roller=roller)
    assert jaxmbs.dof(mech, params, q0) == 0
    ts = np.linspace(0, 2 * np.pi / w, 25)
    res = jaxmbs.inverse_dynamics(mech, params, q0, ts)
    assert int(res.status) == 0
    yf = np.asarray(res.q[:, mech.coordinate_index("fol.y")]) - float(q0[4])
    if roller is None:
        N_ref, x_ref = _analytic_force(w * ts, w, e, m_f, k, pre, g)
        np.testing.assert_allclose(yf, x_ref, atol=1e-10)
    else:  # roller: its centre stays at distance R + r from the cam's circle centre
        R, r = 0.03, roller

        def lift(t):
            cx, cy = e * jnp.sin(w * t), -e * jnp.cos(w * t)
            return cy + jnp.sqrt((R + r) ** 2 - cx**2) - (R + r - e)

        x_ref = np.asarray(jax.vmap(lift)(ts))
        xdd = np.asarray(jax.vmap(jax.grad(jax.grad(lift)))(ts))
        np.testing.assert_allclose(yf, x_ref, atol=1e-10)
        # the y part of the contact force balances spring, weight and inertia; the
        # normal also has an x part (reacted by the slide), so |F| = normal force
        F = np.asarray(res.reactions["contact"]["force"])
        np.testing.assert_allclose(F[:, 1], m_f * (g + xdd) + k * (pre + x_ref), rtol=1e-9, atol=1e-9)
        N_ref = np.hypot(F[:, 0], F[:, 1])
        assert np.max(np.abs(F[:, 0])) > 0.1
    N = np.asarray(res.reactions["contact"]["normal_force"])
    np.testing.assert_allclose(N, N_ref, rtol=1e-9, atol=1e-9)


def test_free_cam_follower_conserves_energy_and_constraints():
    mech, params, q0, v0 = _follower(w0=30.0, cam_inertia=2e-3)
    assert abs(float(v0[mech.coordinate_index("fol.y")])) < 1e-12  # consistent rates at build
    traj = jaxmbs.simulate(mech, params, q0, v0, (0.0, 0.4), 2e-4, save_every=100)
    assert int(traj.status) == 0
    assert float(traj.energy_drift()) < 1e-8
    assert float(jnp.max(traj.constraint_error)) < 1e-10
    assert float(jnp.max(traj.velocity_error)) < 1e-9
    # the cam really turns and lifts the follower through the whole stroke
    yf = np.asarray(traj.q[:, mech.coordinate_index("fol.y")])
    assert np.ptp(yf) > 0.019


# ----------------------------------------------------------------------------- discs
def _disc_on_incline(alpha, rolling, r=0.05, m=2.0, J=None):
    J = 0.5 * m * r**2 if J is None else J
    u = np.array([np.cos(alpha), -np.sin(alpha)])  # down the incline
    nrm = np.array([np.sin(alpha), np.cos(alpha)])  # incline normal (up, left of u)
    mdl = jaxmbs.Model(gravity=(0, -9.81))
    mdl.add_body("disc", mass=m, inertia=J, position=tuple(r * nrm))
    # line along u through the origin (ground), the disc's circle (s = angle)
    mdl.add_cam("c", "ground", "disc", cv.line((0, 0), tuple(u)), cv.circle((0, 0), r))
    if rolling:
        mech0, _, q0, _ = mdl.build()
        si, th = mech0.coordinate_index("c.s_i"), mech0.coordinate_index("disc.theta")
        s_i0 = float(q0[si])
        # no slip (a user constraint on the extra coordinate): the contact point advances
        # along the line (|u| = 1) by the arc rolled off the disc, -r dtheta
        mdl.add_constraint("no_slip", lambda q, t: jnp.atleast_1d((q[si] - s_i0) + r * q[th]))
    return mdl.build()


@pytest.mark.parametrize("rolling", [pytest.param(False, marks=pytest.mark.slow), True])
def test_disc_on_incline_matches_closed_form(rolling):
    alpha, r, m = 0.3, 0.05, 2.0
    J = 0.5 * m * r**2
    mech, params, q0, v0 = _disc_on_incline(alpha, rolling, r, m, J)
    T = 0.5
    traj = jaxmbs.simulate(mech, params, q0, v0, (0.0, T), 1e-3, save_every=50)
    assert int(traj.status) == 0
    a = 9.81 * math.sin(alpha) / (1 + (J / (m * r**2) if rolling else 0.0))
    u = np.array([np.cos(alpha), -np.sin(alpha)])
    t = np.asarray(traj.t)
    x = (np.asarray(traj.q[:, :2]) - np.asarray(q0[:2])) @ u
    np.testing.assert_allclose(x, 0.5 * a * t**2, atol=1e-9)
    th = np.asarray(traj.q[:, 2])
    if rolling:
        np.testing.assert_allclose(th, -0.5 * a * t**2 / r, atol=1e-8)
    else:
        np.testing.assert_allclose(th, 0.0, atol=1e-12)
    assert float(traj.energy_drift()) < 1e-9


@pytest.mark.slow
def test_disc_sliding_in_bowl_has_exact_pendulum_period():
    """A frictionless disc (radius r) inside a fixed circular bowl (radius Rb): its centre
    is a pendulum of length Rb - r. Period 4 sqrt(L/g) K(sin^2(theta0/2))."""
    Rb, r, th0, g = 0.5, 0.1, 0.6, 9.81
    L = Rb - r
    mdl = jaxmbs.Model(gravity=(0, -g))
    pos = (L * math.sin(th0), -L * math.cos(th0))
    mdl.add_body("disc", mass=1.0, inertia=0.005, position=pos)
    # contact point on the bowl at polar angle -pi/2 + th0; the disc touches it from inside
    mdl.add_cam("c", "ground", "disc", cv.circle((0, 0), Rb), cv.circle((0, 0), r))
    mech, params, q0, v0 = mdl.build()
    s_i = float(q0[mech.coordinate_index("c.s_i")])
    np.testing.assert_allclose(math.remainder(s_i - (-math.pi / 2 + th0), 2 * math.pi), 0.0, atol=1e-9)
    period = 4 * math.sqrt(L / g) * ellipk(math.sin(th0 / 2) ** 2)
    traj = jaxmbs.simulate(mech, params, q0, v0, (0.0, period), period / 2000, save_every=1)
    assert int(traj.status) == 0
    x = np.asarray(traj.q[:, 0])
    t = np.asarray(traj.t)
    # half period: the centre is at the mirror position; full period: back at the start
    k = np.argmin(np.abs(t - period / 2))
    assert abs(t[k] - period / 2) < 1e-12
    np.testing.assert_allclose(x[k], -pos[0], atol=1e-7)
    np.testing.assert_allclose(x[-1], pos[0], atol=1e-7)
    np.testing.assert_allclose(np.asarray(traj.q[:, 2]), 0.0, atol=1e-10)  # no torque: no spin
    assert float(traj.energy_drift()) < 1e-8


def test_cam_model_round_trips_through_model_file():
    from jaxmbs import io

    m = jaxmbs.Model()
    m.add_body("a", 1.0, 0.1)
    m.add_revolute("O", "ground", "a", at=(0, 0))
    m.add_body("b", 1.0, 0.1, position=(0, 0.0515))
    m.add_cam("c", "a", "b", cv.spline(SPLINE_PTS), ("polynomial", [0.0, 0.0, 2.0]))
    mech, params, q0, v0 = m.build()
    mech2, params2, q02, _ = io.model_from_dict(io.model_to_dict(m)).build()
    assert mech2 == mech
    np.testing.assert_array_equal(q02, q0)
    np.testing.assert_array_equal(params2.joints["cam"]["data_i"], params.joints["cam"]["data_i"])
