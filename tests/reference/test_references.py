"""Tests of the independent NumPy/SciPy references themselves (no jax here)."""

from __future__ import annotations

import numpy as np
import pytest

from . import andrews, car_axis
from . import closed_forms as cf


# --------------------------------------------------------------------------
# Andrews' squeezing mechanism
# --------------------------------------------------------------------------
def test_andrews_initial_state_is_consistent():
    q0, _ = andrews.initial_state()
    assert np.max(np.abs(andrews.constraints(q0))) < 1e-15  # m


def test_andrews_initial_accelerations_match_published():
    q0, qd0 = andrews.initial_state()
    qdd, lam = andrews.accelerations(q0, qd0)
    pub = andrews.PUBLISHED_QDD0
    np.testing.assert_allclose(qdd[:2], pub[:2], rtol=1e-10, atol=0)
    assert np.max(np.abs(qdd[2:])) < 1e-10 * np.abs(pub[0])
    np.testing.assert_allclose(lam[:2], andrews.PUBLISHED_LAM0[:2], rtol=1e-10, atol=0)
    assert np.max(np.abs(lam[2:])) < 1e-10 * np.abs(andrews.PUBLISHED_LAM0[0])


def test_andrews_geometric_model_matches_hairer_wanner_closed_form():
    rng = np.random.default_rng(1234)
    for _ in range(20):
        q = rng.uniform(-np.pi, np.pi, 7)
        qd = rng.normal(scale=500.0, size=7)
        M = andrews.mass_matrix(q)
        np.testing.assert_allclose(M, andrews.mass_matrix_closed_form(q), rtol=1e-12, atol=1e-18)
        f = andrews.force(q, qd)
        fc = andrews.force_closed_form(q, qd)
        np.testing.assert_allclose(f, fc, rtol=1e-11, atol=1e-12 * np.max(np.abs(fc)))


def test_andrews_constraint_derivatives_by_finite_differences():
    rng = np.random.default_rng(7)
    q = andrews.Q0 + rng.normal(scale=0.3, size=7)
    qd = rng.normal(size=7)
    G = andrews.constraint_jacobian(q)
    h = 1e-6
    G_fd = np.column_stack(
        [(andrews.constraints(q + h * e) - andrews.constraints(q - h * e)) / (2 * h) for e in np.eye(7)]
    )
    np.testing.assert_allclose(G, G_fd, atol=1e-9)
    # d^2 g / dt^2 along q(t) = q + t qd equals g_qq(qd, qd)
    _, _, gqq = andrews._loop_terms(q, qd)
    h = 1e-4
    g2 = (andrews.constraints(q + h * qd) - 2 * andrews.constraints(q) + andrews.constraints(q - h * qd)) / h**2
    np.testing.assert_allclose(gqq, g2, atol=1e-6)


def test_andrews_solution_at_t003():
    q, qd, res = andrews.solve(0.03, rtol=1e-13, atol=1e-13, return_result=True)
    # against this module's own 80-bit fixed-step solution
    assert andrews.scd(q, andrews.LONGDOUBLE_Q_T003) > 12.0
    assert andrews.scd(qd, andrews.LONGDOUBLE_QD_T003) > 10.0
    # against the published Test Set values (accurate to ~10 digits, see module doc)
    assert andrews.scd(q) > 9.5
    assert andrews.scd(qd, andrews.TESTSET_QD_T003) > 7.0
    # the deviation from the published positions is a time offset of ~1.0e-12 s
    dt = (andrews.TESTSET_Q_T003 - q) / qd
    np.testing.assert_allclose(dt, 1.004e-12, rtol=0.03)
    assert np.max(np.abs(andrews.constraints(q))) < 1e-12


@pytest.mark.slow
def test_andrews_longdouble_constant_is_reproducible():
    q, qd = andrews.solve_fixed_step_longdouble(2000)
    if np.finfo(np.longdouble).eps < 1e-18:
        assert andrews.scd(np.asarray(q, float), andrews.LONGDOUBLE_Q_T003) > 14.5
    else:  # longdouble is just float64 here
        assert andrews.scd(np.asarray(q, float), andrews.LONGDOUBLE_Q_T003) > 12.0


# --------------------------------------------------------------------------
# Car axis
# --------------------------------------------------------------------------
def test_car_axis_initial_state_is_consistent():
    q0, v0 = car_axis.initial_state()
    assert np.max(np.abs(car_axis.constraints(q0, 0.0))) == 0.0
    assert np.max(np.abs(car_axis.velocity_constraints(q0, v0, 0.0))) < 1e-15


def test_car_axis_acceleration_constraint_by_finite_differences():
    # The acceleration-level constraint must hold along the computed motion:
    # check d/dt of the velocity constraint with the KKT accelerations.
    rng = np.random.default_rng(3)
    q = np.array([0.05, 0.49, 1.04, 0.37]) + 0.01 * rng.normal(size=4)
    v = rng.normal(size=4)
    t = 0.37
    qdd, _ = car_axis.accelerations(q, v, t)
    h = 1e-6  # central-difference error is O(h^2 |qdd|^2), ~1e-8 here

    def c(s):
        return car_axis.velocity_constraints(q + s * v + 0.5 * s * s * qdd, v + s * qdd, t + s)

    d = (c(h) - c(-h)) / (2 * h)
    np.testing.assert_allclose(d, 0.0, atol=1e-7)


def test_car_axis_solution_at_t3_vs_test_set():
    q, v, lam = car_axis.solve(3.0, rtol=1e-12, atol=1e-12)
    ref = car_axis.TESTSET_Y_T3
    assert car_axis.scd(q, ref[:4]) > 11.0
    assert car_axis.scd(v, ref[4:8]) > 9.0
    # published multipliers are only good to ~7.5 digits (they are inconsistent
    # with the published q, v at that level, see module docstring)
    assert car_axis.scd(lam, ref[8:]) > 7.0
    assert np.max(np.abs(car_axis.constraints(q, 3.0))) < 1e-10


# --------------------------------------------------------------------------
# Simple pendulum
# --------------------------------------------------------------------------
def test_pendulum_ode_matches_elliptic_closed_form():
    t = np.linspace(0.0, 20.0, 801)
    ex = cf.pendulum_exact(t)
    nu = cf.pendulum_ode(t, rtol=1e-12, atol=1e-12)
    for key in ("x", "y"):
        np.testing.assert_allclose(nu[key], ex[key], atol=1e-9)
    for key in ("xd", "yd", "thetad"):
        np.testing.assert_allclose(nu[key], ex[key], atol=1e-8)
    np.testing.assert_allclose(ex["x"] ** 2 + ex["y"] ** 2, 1.0, atol=1e-14)


def test_pendulum_period_and_long_horizon():
    T = cf.pendulum_period()
    # 90 deg amplitude: T / T0 = 2 K(1/2) / pi = 1.18034059901610...
    np.testing.assert_allclose(T / (2 * np.pi / np.sqrt(9.81)), 1.1803405990161, rtol=1e-12)
    for n in (1, 7, 844):  # 844 periods ~ 2000 s
        e = cf.pendulum_exact(n * T)
        np.testing.assert_allclose([e["x"], e["y"]], [1.0, 0.0], atol=1e-12)
    e = cf.pendulum_exact(0.25 * T)
    np.testing.assert_allclose([e["x"], e["y"], e["xd"]], [0.0, -1.0, -np.sqrt(2 * 9.81)], atol=1e-12)
    # energy of the closed form at arbitrary times
    t = np.linspace(0.0, 2000.0, 10001)
    e = cf.pendulum_exact(t)
    E = 0.5 * (e["xd"] ** 2 + e["yd"] ** 2) + 9.81 * e["y"]
    np.testing.assert_allclose(E, 0.0, atol=1e-12)


# --------------------------------------------------------------------------
# Slider-crank
# --------------------------------------------------------------------------
def test_slider_crank_xdd_at_phi0():
    _, xd, xdd = cf.slider_kinematics(0.0)
    assert xd == 0.0
    np.testing.assert_allclose(xdd, -5062.5, rtol=1e-14)


def test_slider_crank_closed_forms_consistent():
    phi = np.linspace(0.0, 2 * np.pi, 721)
    w = cf.CRANK_OMEGA
    x, xd, xdd = cf.slider_kinematics(phi)
    k = cf.crank_geometry(phi)
    np.testing.assert_allclose(k["x"], x, atol=1e-15)
    np.testing.assert_allclose(k["dx"] * w, xd, atol=1e-11)
    np.testing.assert_allclose(k["ddx"] * w**2, xdd, atol=1e-9)
    # loop closure and finite-difference checks of the phi-derivatives
    np.testing.assert_allclose(cf.CRANK_L1 * np.sin(phi) + cf.CRANK_L2 * np.sin(k["psi"]), 0.0, atol=1e-16)
    h = 1e-5
    kp, km = cf.crank_geometry(phi + h), cf.crank_geometry(phi - h)
    np.testing.assert_allclose((kp["psi"] - km["psi"]) / (2 * h), k["dpsi"], atol=1e-9)
    np.testing.assert_allclose((kp["dpsi"] - km["dpsi"]) / (2 * h), k["ddpsi"], atol=1e-9)
    np.testing.assert_allclose((kp["dx"] - km["dx"]) / (2 * h), k["ddx"], atol=1e-9)
    m, dm = cf.crank_effective_inertia(phi)
    mp, _ = cf.crank_effective_inertia(phi + h)
    mm, _ = cf.crank_effective_inertia(phi - h)
    np.testing.assert_allclose((mp - mm) / (2 * h), dm, atol=1e-11)


def test_slider_crank_torque_lagrange_equals_newton_euler():
    phi = np.linspace(0.0, 2 * np.pi, 3601)
    tl = cf.crank_torque_lagrange(phi)
    ne = cf.crank_inverse_dynamics_newton_euler(phi)
    np.testing.assert_allclose(ne["torque"], tl, atol=1e-10 * np.max(np.abs(tl)))
    # also with a crank angular acceleration
    tl2 = cf.crank_torque_lagrange(phi, omega=40.0, phidd=300.0)
    ne2 = cf.crank_inverse_dynamics_newton_euler(phi, omega=40.0, phidd=300.0)
    np.testing.assert_allclose(ne2["torque"], tl2, atol=1e-10 * np.max(np.abs(tl2)))
    # constant speed: the work of the torque over a revolution is zero
    work = np.mean(tl[:-1]) * 2 * np.pi
    assert abs(work) < 1e-10
    # by symmetry torque(0) = torque(pi) = 0 and N(0) = 0
    np.testing.assert_allclose(cf.crank_torque_lagrange(np.array([0.0, np.pi])), 0.0, atol=1e-12)


# --------------------------------------------------------------------------
# N-four-bar
# --------------------------------------------------------------------------
@pytest.mark.parametrize("N", [2, 40])
def test_fourbar_energy_conservation(N):
    r = cf.fourbar_solve(N, 20.0, t_eval=np.linspace(0.0, 20.0, 4001), rtol=1e-12, atol=1e-12)
    rel = np.max(np.abs(r["energy"] - r["energy_0"])) / abs(r["energy_0"])
    assert rel < 1e-10
    np.testing.assert_allclose(np.hypot(*r["B0_T"]), 1.0, atol=1e-14)


@pytest.mark.parametrize("N", [2, 40])
def test_fourbar_revolution_period_matches_ode(N):
    P = cf.fourbar_revolution_period(N)
    r = cf.fourbar_solve(N, 5 * P, rtol=1e-12, atol=1e-12)
    phi_end = r["sol"].sol(5 * P)[0]
    np.testing.assert_allclose(phi_end, 0.5 * np.pi - 10 * np.pi, atol=1e-9)
    np.testing.assert_allclose(r["B0_T"], [0.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(r["B0d_T"], [1.0, 0.0], atol=1e-9)


# --------------------------------------------------------------------------
# Double pendulum
# --------------------------------------------------------------------------
def test_double_pendulum_energy_conservation():
    r = cf.double_pendulum_solve(10.0, t_eval=np.linspace(0.0, 10.0, 2001))
    E0 = cf.double_pendulum_energy(0.5 * np.pi, 0.5 * np.pi, 0.0, 0.0)
    assert abs(E0) < 1e-14  # released horizontal: zero energy
    assert np.max(np.abs(r["energy"] - E0)) < 1e-10 * 9.81  # relative to m g L
    np.testing.assert_allclose(r["tip"][0], [2.0, 0.0], atol=1e-15)


def test_double_pendulum_equations_by_lagrangian_finite_differences():
    # Check the minimal-coordinate EOM against d/dt(dL/dqd) - dL/dq = 0 using
    # finite differences of the energy-based Lagrangian L = T - V.
    rng = np.random.default_rng(11)
    m, L, g = 1.0, 1.0, 9.81

    def lagr(q, w):
        c12 = np.cos(q[0] - q[1])
        T = 0.5 * m * L * L * (4 / 3 * w[0] ** 2 + c12 * w[0] * w[1] + 1 / 3 * w[1] ** 2)
        V = -m * g * L * (1.5 * np.cos(q[0]) + 0.5 * np.cos(q[1]))
        return T - V

    def kinetic_from_bodies(q, w):
        # CG velocities by central differences along q + t w, plus rotation
        h = 1e-6

        def cgs(q):
            e1 = np.array([np.sin(q[0]), -np.cos(q[0])])
            e2 = np.array([np.sin(q[1]), -np.cos(q[1])])
            return 0.5 * L * e1, L * e1 + 0.5 * L * e2

        (a1, a2), (b1, b2) = cgs(q + h * w), cgs(q - h * w)
        v1, v2 = (a1 - b1) / (2 * h), (a2 - b2) / (2 * h)
        Icg = m * L * L / 12
        return 0.5 * m * (v1 @ v1 + v2 @ v2) + 0.5 * Icg * (w[0] ** 2 + w[1] ** 2)

    for _ in range(5):
        s = np.concatenate([rng.uniform(-3, 3, 2), rng.normal(size=2)])
        q, w = s[:2], s[2:]
        T_formula = cf.double_pendulum_energy(q[0], q[1], w[0], w[1]) + m * g * L * (
            1.5 * np.cos(q[0]) + 0.5 * np.cos(q[1]))
        np.testing.assert_allclose(T_formula, kinetic_from_bodies(q, w), rtol=1e-8)
        acc = cf.double_pendulum_rhs(0.0, s)[2:]
        h = 1e-4
        eye = np.eye(2)

        def dL_dw(q, w):
            return np.array([(lagr(q, w + h * e) - lagr(q, w - h * e)) / (2 * h) for e in eye])

        dL_dq = np.array([(lagr(q + h * e, w) - lagr(q - h * e, w)) / (2 * h) for e in eye])
        ddt = (dL_dw(q + h * w, w + h * acc) - dL_dw(q - h * w, w - h * acc)) / (2 * h)
        np.testing.assert_allclose(ddt - dL_dq, 0.0, atol=1e-5)
