"""Penalty contact (circle-line, circle-circle, circle-profile, circle-terrain) and the
rotating-frame pseudo-forces, each checked against an independent reference: autodiff of
the potential, closed-form impact/sliding/rolling results, the exact Hunt-Crossley
restitution relation, conservation laws and the analytic free motion seen from a rotating
frame."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import brentq

import jaxmbs
from jaxmbs.core.equations import force_outputs, generalized_forces
from jaxmbs.planar.forces import terrain_eval as _terrain_eval

terrain_eval = jax.jit(_terrain_eval)

R, M = 0.1, 1.0  # ball radius (m) and mass (kg)
SPAN, DT, EVERY = (0.0, 0.6), 1e-4, 20


def ball_on_floor(y0=0.3, vel=(0.0, 0.0), g=9.81, k=1e6, n=1.5, damping=0.0, mu=0.0, veps=1e-3):
    """A particle carrying a circle of radius R above the floor line y = 0."""
    m = jaxmbs.Model(gravity=(0.0, -g))
    m.add_particle("ball", mass=M, position=(0.0, y0), velocity=vel)
    m.add_circle_line_contact("floor", "ground", "ball", radius=R, k=k, exponent=n,
                              damping=damping, friction=mu, slip_velocity=veps)
    return m.build()


def run(mech, params, q0, v0, span=SPAN, dt=DT, every=EVERY):
    return jaxmbs.simulate(mech, params, q0, v0, span, dt, save_every=every)


def outputs(mech, params, traj, name):
    f = jax.vmap(lambda q, v, t: force_outputs(mech, params, q, v, t)[name])
    return {k: np.asarray(x) for k, x in f(traj.q, traj.v, traj.t).items()}


def bowl(x):
    return 0.5 * x**2


def two_wheels(x0=0.3, mu=0.5, xs=None):
    """Wheel 'wf' on the profile y = bowl(x) and wheel 'wt' on the same bowl sampled on a
    non-uniform grid (the interpolant reproduces a parabola exactly)."""
    if xs is None:
        xs = np.sort(np.r_[-2.0, 2.0, np.random.default_rng(0).uniform(-2, 2, 40)])
    m = jaxmbs.Model()
    y0 = bowl(x0) + R / math.cos(math.atan(x0)) - 0.002
    for name in ("wf", "wt"):
        m.add_body(name, mass=M, inertia=0.5 * M * R**2, position=(x0, y0))
    # slip_velocity: RK4 at dt = 1e-4 needs dt mu F_n (1/m + R^2/J) / v_eps < 2.8 at sticking
    law = dict(k=1e6, exponent=1.5, damping=0.5, friction=mu, slip_velocity=0.05)
    m.add_circle_profile_contact("cf", "wf", R, bowl, **law)
    m.add_circle_terrain_contact("ct", "wt", R, xs, bowl(xs), **law)
    return m.build()


# ---------------------------------------------------------------- Q, V and P vs autodiff
def _mixed_model(omega):
    m = jaxmbs.Model(gravity=(0.3, -9.81))
    ca = np.array([0.1, 0.1]) + 0.02 * np.array([math.cos(0.3), math.sin(0.3)])  # circle of a
    cb = ca + 0.24 * np.array([math.cos(0.4), math.sin(0.4)])  # 1 cm overlap with b's circle
    m.add_body("a", 2.0, 0.03, position=(0.1, 0.1), angle=0.3, cg=(0.02, -0.01))
    m.add_body("b", 1.5, 0.02, position=cb, angle=-0.2, cg=(0.01, 0.03))
    m.add_body("c", 1.0, 0.01, position=(1.0, bowl(1.0) + 0.09), angle=0.1)
    m.add_body("d", 1.0, 0.01, position=(-1.0, bowl(-1.0) + 0.095), angle=0.7)
    m.add_body("plate", 3.0, 0.2, position=(0.4, 0.6), angle=0.4)
    m.add_particle("p", 0.5, position=(0.5, 0.52))
    law = dict(k=2e5, exponent=1.5, damping=0.7, friction=0.4, slip_velocity=0.05)
    m.add_circle_line_contact("floor", "ground", "a", R, at_j=(0.1, 0.095), **law)
    m.add_circle_circle_contact("ab", "a", "b", R, 0.15, point_i=(0.02, 0.0), **law)
    m.add_circle_profile_contact("cf", "c", R, bowl, point=(0.0, 0.0), **law)
    xs = np.linspace(-2, 2, 25)
    m.add_circle_terrain_contact("dt", "d", R, xs, bowl(xs) + 0.01 * np.sin(5 * xs), **law)
    # a line fixed in a moving, rotated plate touching a particle's circle
    m.add_circle_line_contact("wall", "plate", "p", 0.05, normal=(0.0, -1.0), at_i=(0.5, 0.56),
                              **law)
    m.add_spring("s", "a", "plate", k=50.0, c=1.0)
    m.add_rotating_frame(omega)
    return m.build()


@pytest.mark.parametrize("omega", [1.5, jaxmbs.sinusoid(0.8, 2.0, 0.3, 1.0)])
def test_conservative_forces_are_minus_grad_V_and_power_balances(omega):
    mech, params, q0, _ = _mixed_model(omega)
    rng = np.random.default_rng(1)
    q = q0 + 1e-3 * jnp.asarray(rng.standard_normal(q0.shape))
    out = force_outputs(mech, params, q, jnp.zeros_like(q), 0.0)
    for name in ("floor", "ab", "cf", "dt", "wall"):
        assert out[name]["penetration"] > 0, name  # every contact is closed here
    t = jnp.asarray(0.37)
    v = jnp.asarray(rng.standard_normal(q0.shape))
    V = lambda qq, tt: generalized_forces(mech, params, qq, jnp.zeros_like(qq), tt)[1]

    @jax.jit
    def terms(qq, vv, tt):  # one compilation for all the terms compared below
        Q0 = generalized_forces(mech, params, qq, jnp.zeros_like(qq), tt)[0]
        Q, _, P = generalized_forces(mech, params, qq, vv, tt)
        _, dV = jax.jvp(V, (qq, tt), (vv, jnp.ones_like(tt)))
        return Q0, jax.grad(V)(qq, tt), Q, P, dV

    Q0, gradV, Q, P, dV = terms(q, v, t)
    if isinstance(omega, float):  # static frame: at rest every force is conservative
        np.testing.assert_allclose(Q0, -gradV, rtol=1e-10, atol=1e-9)
    # P = (Q - quadratic-velocity inertia terms) . v + dV/dt along (v, 1), for any v
    nb = mech.n_bodies
    c = jaxmbs.planar.geometry.rotate(q[2:3 * nb:3], params.bodies["planar_rigid"]["cg"])
    Qin = jnp.zeros_like(q).reshape(-1)
    Qin = Qin.at[:3 * nb].set(jnp.concatenate([params.bodies["planar_rigid"]["mass"][:, None] * c * v[2:3 * nb:3, None] ** 2,
                                               jnp.zeros((nb, 1))], 1).reshape(-1))
    np.testing.assert_allclose(P, (Q - Qin) @ v + dV, rtol=1e-10, atol=1e-8)


def test_forces_and_gradients_finite_at_and_beyond_contact_onset():
    mech, params, q0, v0 = ball_on_floor(damping=0.5, mu=0.3)
    jac = jax.jit(jax.jacfwd(lambda qq, vv, p: generalized_forces(mech, p, qq, vv, 0.0)[:2], (0, 1, 2)))
    for y in (R, R + 1e-3, R - 1e-3):  # touching, separated, penetrating
        q = q0.at[1].set(y)
        v = jnp.asarray([0.2, -0.5])
        J = jac(q, v, params)
        assert all(np.all(np.isfinite(x)) for x in jax.tree_util.tree_leaves(J))
        out = force_outputs(mech, params, q, v)["floor"]
        assert out["normal"] >= 0.0
        if y >= R:
            assert out["normal"] == 0.0 and out["friction"] == 0.0


# ------------------------------------------------------------------ ball on a floor line
def test_ball_drop_energy_and_unilateral_force():
    mech, params, q0, v0 = ball_on_floor()
    drift = {}
    for dt in (2e-4, 1e-4):
        for chi in (0.0, 0.3):
            p = mech.replace(params, {"floor.damping": chi})
            tr = run(mech, p, q0, v0, dt=dt, every=int(round(0.002 / dt)))
            assert int(tr.status) == 0
            Emech = np.asarray(tr.kinetic + tr.potential)
            E0 = Emech[0]
            out = outputs(mech, p, tr, "floor")
            assert np.all(out["normal"] >= 0.0)
            assert np.all(out["normal"][out["penetration"] <= 0] == 0.0)
            assert out["normal"].max() > 50 * M * 9.81  # it did hit the floor
            # without damping T + V, with it T + V - (dissipated work), is conserved up to
            # an integration error that vanishes with dt (checked below)
            drift[dt, chi] = float(tr.energy_drift())
            if chi > 0:
                assert np.all(np.diff(Emech) <= 1e-12 * E0)  # never gains energy
                assert Emech[-1] < 0.9 * E0  # and loses some
                assert np.max(out["penetration"][-60:]) > 0  # still bouncing at the end
    for chi in (0.0, 0.3):
        assert drift[1e-4, chi] < 1e-5
        # the error falls faster than first order in dt (RK4 loses orders at the C^1 onset
        # of the d^1.5 force)
        assert drift[1e-4, chi] < drift[2e-4, chi] / 2.5


def _hc_exact_restitution(x):
    """e from the exact Hunt-Crossley relation for chi v_minus = x: the rebound speed
    y = chi v_plus solves y - ln(1 + y) = x - ln(1 + x) with -1 < y < 0."""
    rhs = x - math.log1p(x)
    y = brentq(lambda y: y - math.log1p(y) - rhs, -1 + 1e-15, -1e-15, xtol=1e-15)
    return -y / x


def test_coefficient_of_restitution():
    vin = 2.0
    mech, params, q0, v0 = ball_on_floor()
    q0 = q0.at[1].set(R + 1e-3)
    v0 = jnp.asarray([0.0, -vin])
    params = mech.replace(params, {"gravity": [0.0, 0.0]})
    errors = {}
    for e in (0.9, 0.95):
        chi = 3 * (1 - e * e) / (4 * vin)  # Lankarani-Nikravesh
        for n in (1.5, 1.0):
            p = mech.replace(params, {"floor.damping": chi, "floor.exponent": n,
                                      "floor.k": 1e6 if n == 1.5 else 1e5})
            tr = run(mech, p, q0, v0)
            e_sim = float(tr.v[-1, 1]) / vin
            assert float(tr.q[-1, 1]) > R + 0.1  # separated, in free flight
            # exact relation of the Hunt-Crossley force law, independent of k and n; the
            # bound is the RK4 error at this dt (1.5e-5 measured for n = 1, which falls with
            # dt), 100x below the error of the L-N design formula checked next
            assert e_sim == pytest.approx(_hc_exact_restitution(chi * vin), abs=1e-4)
        errors[e] = abs(e_sim - e)
    # the L-N design formula is first-order accurate in (1 - e): halving (1 - e) cuts its
    # error about four times
    assert errors[0.95] < errors[0.9] / 3
    # the builder's restitution input gives the same damping
    m2 = ball_on_floor()
    b = jaxmbs.Model()
    b.add_particle("ball", M, (0, 0.3))
    b.add_circle_line_contact("floor", "ground", "ball", R, 1e6, restitution=0.9, impact_velocity=vin)
    mb, pb, _, _ = b.build()
    assert float(mb.get(pb, "floor.damping")) == pytest.approx(3 * (1 - 0.81) / (4 * vin))
    del m2


def test_sliding_to_rest_distance():
    mu, veps, v0x, g, k = 0.5, 0.01, 1.0, 9.81, 1e5
    mech, params, q0, v0 = ball_on_floor()
    p = mech.replace(params, {"floor.mu": mu, "floor.v_eps": veps, "floor.exponent": 1.0,
                              "floor.k": k, "floor.damping": 0.2})
    q0 = q0.at[1].set(R - M * g / k)  # static equilibrium penetration, F_n = m g
    v0 = jnp.asarray([v0x, 0.0])
    tr = run(mech, p, q0, v0)
    d = float(tr.q[-1, 0])
    # m x'' = -mu m g tanh(x'/veps): distance to rest v0^2/(2 mu g) + pi^2 veps^2/(12 mu g)
    # (exact up to terms of order exp(-2 v0/veps))
    exact = v0x**2 / (2 * mu * g) + math.pi**2 * veps**2 / (12 * mu * g)
    assert d == pytest.approx(exact, rel=1e-5)
    assert abs(float(tr.v[-1, 0])) < 1e-6
    out = outputs(mech, p, tr, "floor")
    np.testing.assert_allclose(out["normal"], M * g, rtol=1e-9)


# ------------------------------------------------------------------- two circles collide
def test_two_circles_conserve_momentum():
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    J = 0.5 * M * R**2
    m.add_body("A", M, J, position=(-0.3, 0.0), velocity=(2.0, 0.0), angular_velocity=10.0)
    m.add_body("B", 2 * M, 2 * J, position=(0.3, 0.08), angular_velocity=-3.0)
    m.add_circle_circle_contact("AB", "A", "B", R, R, k=1e6, damping=0.5, friction=0.4,
                                slip_velocity=0.05)
    mech, params, q0, v0 = m.build()
    tr = run(mech, params, q0, v0)
    masses = np.array([M, 2 * M])
    inert = np.array([J, 2 * J])
    q, v = np.asarray(tr.q).reshape(-1, 2, 3), np.asarray(tr.v).reshape(-1, 2, 3)
    p = np.einsum("b,sbk->sk", masses, v[:, :, :2])
    L = np.sum(inert * v[:, :, 2] + masses * (q[:, :, 0] * v[:, :, 1] - q[:, :, 1] * v[:, :, 0]), 1)
    np.testing.assert_allclose(p, p[:1].repeat(len(p), 0), atol=1e-12)
    # linear momentum: exact (RK4 keeps linear invariants); angular momentum about the
    # origin (quadratic in the state) to the integration error, 2e-10 measured here, far
    # below the ~1e-2 N m s that a contact moment arm wrong by d/2 would leave
    np.testing.assert_allclose(L, L[0], atol=1e-9)
    out = outputs(mech, params, tr, "AB")
    assert out["normal"].max() > 100 and np.all(out["normal"] >= 0)
    assert np.all(np.abs(out["friction"]) <= 0.4 * out["normal"] + 1e-12)
    assert out["penetration"][-1] < 0  # separated again
    assert abs(v[-1, 0, 2] - 10.0) > 0.1  # friction changed the spins


# --------------------------------------------------------- profile and sampled terrain
def test_terrain_interpolant_exact_for_quadratic_and_third_order():
    rng = np.random.default_rng(3)
    xs = np.sort(rng.uniform(-1, 1, 30))
    x = jnp.asarray(rng.uniform(-1.3, 1.3, 200))  # inside and beyond the ends
    a, b, c = 0.7, -0.3, 0.2
    ys = a * xs**2 + b * xs + c
    h, h1, h2 = terrain_eval(jnp.asarray(xs)[None].repeat(200, 0), jnp.asarray(ys)[None].repeat(200, 0), x)
    inside = (x >= xs[0]) & (x <= xs[-1])
    np.testing.assert_allclose(np.where(inside, h, 0), np.where(inside, a * x**2 + b * x + c, 0), atol=1e-13)
    np.testing.assert_allclose(np.where(inside, h1, 0), np.where(inside, 2 * a * x + b, 0), atol=1e-12)
    np.testing.assert_allclose(np.where(inside, h2, 0), np.where(inside, 2 * a, 0), atol=1e-10)
    # C^1 beyond the ends: tangent-line continuation
    xe = jnp.asarray([xs[-1] - 1e-9, xs[-1] + 1e-9])
    he, h1e, _ = terrain_eval(jnp.asarray(xs)[None].repeat(2, 0), jnp.asarray(ys)[None].repeat(2, 0), xe)
    assert abs(float(h1e[1] - h1e[0])) < 1e-7
    # smooth terrain: the value error falls ~8x (third order) when the spacing halves
    errs = []
    for N in (41, 81, 161):
        g = jnp.linspace(0.0, 2.0, N)
        xq = jnp.linspace(0.3, 1.7, 997)
        hq = terrain_eval(g[None].repeat(997, 0), jnp.sin(3 * g)[None].repeat(997, 0), xq)[0]
        errs.append(float(jnp.max(jnp.abs(hq - jnp.sin(3 * xq)))))
    assert errs[0] / errs[1] > 6.5 and errs[1] / errs[2] > 6.5


def test_profile_function_and_sampled_terrain_agree_and_rolling():
    mech, params, q0, v0 = two_wheels()
    tr = run(mech, params, q0, v0)
    assert int(tr.status) == 0
    q = np.asarray(tr.q)
    np.testing.assert_allclose(q[:, 3:], q[:, :3], atol=1e-11)
    assert np.ptp(q[:, 0]) > 0.05  # it rolled down the bowl
    # rolling without slip on the bowl: at the end, v_contact ~ 0 (friction holds)
    for name in ("cf", "ct"):
        out = outputs(mech, params, tr, name)
        assert np.all(out["normal"] >= 0) and out["normal"].max() > 5
        assert np.all(np.abs(out["friction"]) <= 0.5 * out["normal"] + 1e-12)

    # flat terrain: a disc spinning at omega0 with no forward speed ends up rolling with
    # v = J omega0 rho / (J + m rho^2), rho = R - d/2 (d: static penetration), by the
    # conservation of angular momentum about the ground contact line
    p = mech.replace(params, {"ct.ys": np.zeros(42)})
    k, g = 1e6, 9.81
    d = (M * g / k) ** (1 / 1.5)
    p = mech.replace(p, {"gravity": [0.0, -g]})
    qf = q0.at[3:6].set(jnp.asarray([0.0, R - d, 0.0]))
    w0 = 20.0
    vf = v0.at[3:6].set(jnp.asarray([0.0, 0.0, w0]))
    tr = run(mech, p, qf, vf)
    J, rho = 0.5 * M * R**2, R - d / 2
    v_exact = -J * w0 * rho / (J + M * rho**2)
    assert float(tr.v[-1, 3]) == pytest.approx(v_exact, rel=2e-4)
    assert float(tr.v[-1, 5]) * rho == pytest.approx(-v_exact, rel=2e-4)


# ---------------------------------------------------------- gradients across contact onset
def test_gradient_through_contact_onset_is_finite_and_matches_fd():
    mech, params, q0, v0 = ball_on_floor(k=1e5, damping=0.3, mu=0.4, veps=0.05, vel=(0.5, 0.0))

    def final(p, y0):
        tr = jaxmbs.simulate(mech, p, q0.at[1].set(y0), v0, (0.0, 0.3), 1e-3, save_every=300,
                             check_initial=False)
        return tr.q[-1, 0] + tr.q[-1, 1] + 0.1 * tr.v[-1, 1]

    keys = ("floor.k", "floor.damping", "floor.mu", "floor.exponent")

    def f(x):
        p = mech.replace(params, dict(zip(keys, x[:4])))
        return final(p, x[4])

    x0 = jnp.asarray([1e5, 0.3, 0.4, 1.5, 0.3])
    with jax.debug_nans(True):
        g = jax.grad(f)(x0)
    assert np.all(np.isfinite(g))
    for i in range(5):
        h = 1e-5 * max(abs(float(x0[i])), 1.0)
        fd = (f(x0.at[i].add(h)) - f(x0.at[i].add(-h))) / (2 * h)
        assert float(g[i]) == pytest.approx(float(fd), rel=1e-4, abs=1e-9 / h)


# ------------------------------------------------------------------- rotating frame
def _rotating_model(w0, alpha):
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    m.add_particle("p", 0.7, position=(0.5, 0.2), velocity=(0.3, -0.4))
    m.add_body("b", 2.0, 0.02, position=(-0.3, 0.4), angle=0.4, cg=(0.1, 0.05),
               velocity=(-0.2, 0.1), angular_velocity=1.5)
    m.add_rotating_frame(jaxmbs.polynomial([w0, alpha]))
    return m.build()


def test_rotating_frame_free_motion_is_an_inertial_straight_line():
    w0, alpha = 2.0, 0.8
    mech, params, q0, v0 = _rotating_model(w0, alpha)
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 1.0), 1e-3, save_every=50)
    t = np.asarray(tr.t)
    phi = w0 * t + 0.5 * alpha * t**2  # frame angle
    rot = lambda a, x: np.stack([np.cos(a) * x[..., 0] - np.sin(a) * x[..., 1],
                                 np.sin(a) * x[..., 0] + np.cos(a) * x[..., 1]], -1)
    perp = lambda x: np.stack([-x[..., 1], x[..., 0]], -1)
    q0n, v0n = np.asarray(q0), np.asarray(v0)
    # particle: inertial position r0 + (v_rel0 + w0 z x r0) t, seen in the frame
    r0, vr0 = q0n[3:5], v0n[3:5]
    vin = vr0 + w0 * perp(r0)
    exact = rot(-phi, r0 + np.outer(t, vin))
    np.testing.assert_allclose(np.asarray(tr.q[:, 3:5]), exact, atol=1e-9)
    # body: CG on an inertial straight line, absolute angle theta + phi linear in t
    cg = np.array([0.1, 0.05])
    c0 = rot(q0n[2], cg)
    rG0, vG0 = q0n[:2] + c0, v0n[:2] + perp(c0) * v0n[2]
    vGin = vG0 + w0 * perp(rG0)
    theta = q0n[2] + (v0n[2] + w0) * t - phi
    rG = rot(-phi, rG0 + np.outer(t, vGin))
    exact_ref = rG - rot(theta, cg)
    np.testing.assert_allclose(np.asarray(tr.q[:, 2]), theta, atol=1e-9)
    np.testing.assert_allclose(np.asarray(tr.q[:, :2]), exact_ref, atol=1e-9)
    assert float(tr.energy_drift()) < 1e-9  # T + V - W with the Euler work


def test_rotating_frame_jacobi_integral():
    mech, params, q0, v0 = _rotating_model(2.0, 0.8)
    params = mech.replace(params, {"frame.coef": [3.0, 0, 0, 0, 0, 0]})
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 1.0), 1e-3, save_every=50)
    jac = np.asarray(tr.kinetic + tr.potential)
    # independent Jacobi integral: T_rel - omega^2/2 sum m |r_G|^2
    q, v = np.asarray(tr.q), np.asarray(tr.v)
    th = q[:, 2]
    c = np.stack([0.1 * np.cos(th) - 0.05 * np.sin(th), 0.1 * np.sin(th) + 0.05 * np.cos(th)], -1)
    rG = q[:, :2] + c
    vG = v[:, :2] + np.stack([-c[:, 1], c[:, 0]], -1) * v[:, 2:3]
    T = 0.5 * 0.7 * np.sum(v[:, 3:5] ** 2, 1) + 0.5 * 2.0 * np.sum(vG**2, 1) + 0.5 * 0.02 * v[:, 2] ** 2
    Vc = -4.5 * (0.7 * np.sum(q[:, 3:5] ** 2, 1) + 2.0 * np.sum(rG**2, 1))
    np.testing.assert_allclose(jac, T + Vc, rtol=1e-12)
    assert np.max(np.abs(jac - jac[0])) < 1e-9 * np.max(np.abs(T))
    assert np.ptp(T) > 0.1  # the relative kinetic energy itself is not constant


# ------------------------------------------------------------------- builder validation
@pytest.mark.parametrize("kwargs,match", [
    (dict(exponent=0.5), "exponent"),
    (dict(restitution=0.8), "impact_velocity"),
    (dict(restitution=0.8, impact_velocity=1.0, damping=0.1), "not both"),
    (dict(restitution=0.8, impact_velocity=1.0, damping_model="x"), "damping_model"),
    (dict(friction=-1), "friction"),
    (dict(slip_velocity=0), "slip_velocity"),
])
def test_contact_law_validation(kwargs, match):
    m = jaxmbs.Model()
    m.add_particle("p", 1.0, (0, 1))
    with pytest.raises(ValueError, match=match):
        m.add_circle_line_contact("c", "ground", "p", 0.1, 1e5, **kwargs)


def test_terrain_and_frame_validation():
    m = jaxmbs.Model()
    m.add_body("w", 1.0, 0.01, (0, 1))
    with pytest.raises(ValueError, match="strictly increasing"):
        m.add_circle_terrain_contact("t", "w", 0.1, [0, 2, 1], [0, 0, 0], 1e5)
    m.add_circle_terrain_contact("t1", "w", 0.1, [0, 1, 2], [0, 0, 0], 1e5)
    with pytest.raises(ValueError, match="same number of samples"):
        m.add_circle_terrain_contact("t2", "w", 0.1, [0, 1, 2, 3], [0, 0, 0, 0], 1e5)
    with pytest.raises(ValueError, match="JAX function"):
        m.add_circle_profile_contact("pr", "w", 0.1, [1, 2], 1e5)
    with pytest.raises(ValueError, match="not the ground"):
        m.add_circle_profile_contact("pr", "ground", 0.1, bowl, 1e5)
    m.add_rotating_frame(1.0)
    with pytest.raises(ValueError, match="already has a rotating frame"):
        m.add_rotating_frame(2.0, name="f2")


def test_float32():
    mech, params, q0, v0 = two_wheels()
    p32 = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float32), params)
    q = q0.astype(jnp.float32)
    gf = jax.jit(lambda p, q, v: generalized_forces(mech, p, q, v, 0.0))
    Q, V, P = gf(p32, q, v0.astype(jnp.float32))
    assert Q.dtype == jnp.float32 and np.all(np.isfinite(Q))
    np.testing.assert_allclose(Q, gf(params, q0, v0)[0], rtol=2e-3, atol=1e-2)


def test_model_file_round_trip():
    m = jaxmbs.Model()
    m.add_body("w", 1.0, 0.01, (0, 0.2))
    m.add_body("v", 1.0, 0.01, (0.5, 0.2))
    m.add_circle_line_contact("floor", "ground", "w", 0.1, 1e5, restitution=0.8, impact_velocity=1.0)
    m.add_circle_circle_contact("wv", "w", "v", 0.1, 0.2, 1e5, friction=0.3)
    m.add_circle_terrain_contact("road", "v", 0.1, np.linspace(0, 1, 5), np.zeros(5), 1e5)
    m.add_rotating_frame(jaxmbs.sinusoid(0.5, 2.0))
    mech, params, _, _ = m.build()
    mech2, params2, _, _ = jaxmbs.io.model_from_dict(jaxmbs.io.model_to_dict(m)).build()
    assert mech2 == mech
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(params2)):
        np.testing.assert_array_equal(a, b)
    m.add_circle_profile_contact("bowl", "w", 0.1, bowl, 1e5)
    with pytest.raises(ValueError, match="profile"):
        jaxmbs.io.model_to_dict(m)


def test_geometry_and_draw_show_contacts(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxmbs import plot as jplot

    mech, params, q0, _ = _mixed_model(1.0)
    geo = jplot.geometry(mech, params, np.asarray(q0))
    assert len(geo["circles"]) == 6 and len(geo["lines"]) == 2 and len(geo["profiles"]) == 2
    name, C, r = [c for c in geo["circles"] if c[0] == "wall"][0]
    np.testing.assert_allclose(C, [0.5, 0.52])
    assert r == 0.05
    _, P, n = [x for x in geo["lines"] if x[0] == "wall"][0]
    np.testing.assert_allclose(P, [0.5, 0.56], atol=1e-12)
    np.testing.assert_allclose(n, [0.0, -1.0], atol=1e-12)  # global normal
    ax = jplot.draw(mech, params, np.asarray(q0))
    ax.figure.savefig(tmp_path / "c.png")
    plt.close(ax.figure)
