"""Statics, linearisation and modes (jaxmbs.linear) against closed forms
(tests/reference/linear.py), finite differences of the nonlinear simulation, and the
benchmark bicycle of Meijaard et al. 2007 (tests/reference/bicycle.py)."""
import importlib.util
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import expm

import jaxmbs as mb
from jaxmbs import status as st
from tests.reference import linear as ref

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
G = ref.G


def _example(name):
    spec = importlib.util.spec_from_file_location(f"ex_{name}", os.path.join(ROOT, "examples", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _canon(z):
    """Complex numbers in a canonical order (imaginary part, then real part)."""
    z = np.asarray(z)
    return z[np.lexsort((np.round(np.real(z), 8), np.round(np.imag(z), 8)))]


def _rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


# ------------------------------------------------------------------------------ models
def compound_pendulum(m=2.0, J=0.05, d=0.3, angle=-1.2, dtype=None):
    """A bar pinned at the origin with its CG at distance d along its x axis (theta = 0:
    CG on +x; hanging at theta = -pi/2)."""
    mod = mb.Model(gravity=(0.0, -G))
    mod.add_body("arm", mass=m, inertia=J, cg=(d, 0.0), angle=angle)
    mod.add_revolute("O", "ground", "arm", at=(0.0, 0.0))
    return mod.build()


def double_pendulum(m1=1.0, L1=1.0, m2=1.5, L2=0.7, a1=-1.3, a2=-1.7):
    """Two uniform rods pinned in series at the origin (reference points at the proximal
    pins, CGs at mid-length); hanging at theta = -pi/2."""
    mod = mb.Model(gravity=(0.0, -G))
    mod.add_body("rod1", mass=m1, inertia=m1 * L1**2 / 12, cg=(L1 / 2, 0.0), angle=a1)
    tip = (L1 * np.cos(a1), L1 * np.sin(a1))
    mod.add_body("rod2", mass=m2, inertia=m2 * L2**2 / 12, cg=(L2 / 2, 0.0), position=tip, angle=a2)
    mod.add_revolute("O", "ground", "rod1", at=(0.0, 0.0))
    mod.add_revolute("A", "rod1", "rod2", at=tip)
    return mod.build()


def spring_fourbar(p=None, th2=1.5):
    """The spring-loaded four-bar of tests/reference/linear.py (c), assembled at crank
    angle th2: uniform bars with their reference points at their CGs."""
    p = dict(ref.FOURBAR if p is None else p)
    k = ref.fourbar_kinematics(th2, p)
    A, B, O4 = k["A"], k["B"], np.array([p["d"], 0.0])
    mod = mb.Model(gravity=(0.0, -G))
    for name, P, Q, mass, L in (("crank", np.zeros(2), A, p["m1"], p["a"]),
                                ("coupler", A, B, p["m2"], p["b"]),
                                ("rocker", O4, B, p["m3"], p["c"])):
        mod.add_body(name, mass=mass, inertia=mass * L * L / 12, position=(P + Q) / 2,
                     angle=float(np.arctan2(*(Q - P)[::-1])))
    mod.add_revolute("O2", "ground", "crank", at=(0.0, 0.0))
    mod.add_revolute("A", "crank", "coupler", at=A)
    mod.add_revolute("B", "coupler", "rocker", at=B)
    mod.add_revolute("O4", "ground", "rocker", at=O4)
    mod.add_torsion_spring("coil", "ground", "crank", k=p["k_t"], angle=p["theta0"])
    mod.add_spring("pull", "ground", "coupler", k=p["k_s"], length=p["L0"], at_i=p["S"],
                   at_j=(A + B) / 2)
    return mod.build()


# ------------------------------------------------------------------ planar closed forms
def test_compound_pendulum_hanging_and_upright():
    m, J, d = 2.0, 0.05, 0.3
    mech, p, q0, _ = compound_pendulum(m, J, d)
    eq = mb.equilibrium(mech, p, q0)  # from 1.2 rad off: the hanging position
    assert int(eq.status) == 0 and bool(eq.stable)
    np.testing.assert_allclose(np.asarray(eq.q)[2], -np.pi / 2, atol=1e-12)
    np.testing.assert_allclose(np.asarray(eq.stiffness), [m * G * d], rtol=1e-12)
    lin = mb.linearize(mech, p, eq.q, jnp.zeros(3))
    assert lin.names == ("arm.theta", "arm.theta_dot") and int(lin.status) == 0
    w = ref.compound_pendulum_omega(m, J, d)
    md = mb.modes(lin)
    np.testing.assert_allclose(np.asarray(md.eigenvalues), [1j * w, -1j * w], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(md.damping_ratios), 0.0, atol=1e-14)
    np.testing.assert_allclose(np.asarray(md.frequencies), w, rtol=1e-12)
    # the mode shape in the redundant coordinates: theta alone (reference point pinned)
    np.testing.assert_allclose(np.abs(np.asarray(md.shapes_q)[:, 0]), [0, 0, 1], atol=1e-14)
    # upright: an unstable equilibrium, a real pair
    up = mb.equilibrium(mech, p, jnp.asarray([0.0, 0.0, 1.4]))
    np.testing.assert_allclose(np.asarray(up.q)[2], np.pi / 2, atol=1e-12)
    assert not bool(up.stable) and float(up.stiffness[0]) == pytest.approx(-m * G * d, rel=1e-12)
    ev = np.sort(np.real(np.asarray(mb.modes(mb.linearize(mech, p, up.q, jnp.zeros(3))).eigenvalues)))
    np.testing.assert_allclose(ev, [-w, w], rtol=1e-12)


def test_double_pendulum_frequencies_and_mode_shapes():
    m1, L1, m2, L2 = 1.0, 1.0, 1.5, 0.7
    mech, p, q0, _ = double_pendulum(m1, L1, m2, L2)
    eq = mb.equilibrium(mech, p, q0)
    np.testing.assert_allclose(np.asarray(eq.q)[[2, 5]], -np.pi / 2, atol=1e-12)
    lin = mb.linearize(mech, p, eq.q, jnp.zeros(6))
    assert lin.coordinates == ("rod1.theta", "rod2.theta")  # the automatic choice
    md = mb.modes(lin)
    w, ratios = ref.double_pendulum_modes(m1, L1, m2, L2)
    lam = np.asarray(md.eigenvalues)
    np.testing.assert_allclose(lam[[0, 2]], 1j * w, rtol=1e-12)
    np.testing.assert_allclose(np.real(lam), 0.0, atol=1e-12 * w[1])
    # mode shapes (theta2 / theta1) in the redundant coordinates
    sq = np.asarray(md.shapes_q)
    np.testing.assert_allclose((sq[5] / sq[2])[[0, 2]].real, ratios, rtol=1e-11)
    # and the tip of rod 1 follows theta1 (dq = Tq x)
    np.testing.assert_allclose(sq[3, 0] / sq[2, 0], L1, rtol=1e-12)  # rod2.x = L1 cos(theta1)


def test_spring_loaded_fourbar_equilibrium_and_frequency():
    th2, wn, th3, th4 = ref.fourbar_equilibrium()
    mech, p, q0, _ = spring_fourbar(th2=1.2)  # assembled 0.58 rad from the equilibrium
    eq = mb.equilibrium(mech, p, q0)
    q = np.asarray(eq.q)
    assert int(eq.status) == 0 and bool(eq.stable)
    assert abs(q[2] - th2) < 1e-10 and abs(q[5] - th3) < 1e-10 and abs(q[8] - th4) < 1e-10
    assert float(eq.residual) < 1e-13 and float(eq.force_residual) < 1e-10
    dV, ddV, meff = ref.fourbar_potential_derivatives(th2)
    lin = mb.linearize(mech, p, eq.q, jnp.zeros(9), coordinates=("crank.theta",))
    lam = np.asarray(mb.modes(lin).eigenvalues)
    np.testing.assert_allclose(lam, [1j * wn, -1j * wn], rtol=1e-10)
    # the reduced stiffness is V'' in the crank angle, up to the metric of the chart: its
    # sign and the automatic choice of the independent coordinate
    assert float(eq.stiffness[0]) > 0 and len(np.asarray(eq.stiffness)) == 1
    auto = mb.linearize(mech, p, eq.q, jnp.zeros(9))
    np.testing.assert_allclose(np.sort(np.abs(np.asarray(mb.modes(auto).eigenvalues))), wn, rtol=1e-10)


def _simulate_reduced(mech, p, lin, x0, T, dt=1e-3):
    """Reduced state (planar chart = coordinates) after T s of the nonlinear simulation from
    the operating point perturbed by x0 (made consistent by assemble with the independent
    coordinates held)."""
    names = mech.coordinate_names()
    idx = [names.index(n) for n in lin.coordinates]
    vdx = [names.index(n) for n in lin.velocities]
    q = lin.q + lin.Tq @ x0
    v = lin.v + lin.Tv @ x0
    s = mb.assemble(mech, p, q, v, fixed=lin.coordinates)
    np.testing.assert_allclose(np.asarray(s.q)[idx] - np.asarray(lin.q)[idx], np.asarray(x0)[:len(idx)], atol=1e-15)
    tr = mb.simulate(mech, p, s.q, s.v, (0.0, T), dt, save_every=int(round(T / dt)))
    assert int(tr.status) == 0
    return np.concatenate([np.asarray(tr.q[-1])[idx] - np.asarray(lin.q)[idx],
                           np.asarray(tr.v[-1])[vdx] - np.asarray(lin.v)[vdx]])


@pytest.mark.parametrize("model", ["double_pendulum", "fourbar"])
def test_linearize_matches_finite_differences_of_the_simulation(model):
    """Central differences (+-eps along every reduced state) of the nonlinear simulation
    over T = 0.4 s against expm(A T): the linearisation is the simulation's derivative."""
    if model == "double_pendulum":
        mech, p, q0, _ = double_pendulum()
    else:
        mech, p, q0, _ = spring_fourbar(th2=1.2)
    eq = mb.equilibrium(mech, p, q0)
    lin = mb.linearize(mech, p, eq.q, jnp.zeros(mech.n_vel))
    T, eps = 0.4, 1e-5
    Phi = expm(np.asarray(lin.A) * T)
    n = len(lin.names)
    fd = np.zeros((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = eps
        fd[:, j] = (_simulate_reduced(mech, p, lin, e, T) - _simulate_reduced(mech, p, lin, -e, T)) / (2 * eps)
    err = np.max(np.abs(fd - Phi)) / np.max(np.abs(Phi))
    assert err < 1e-7, (err, fd, Phi)


# ------------------------------------------------------------------------- quarter car
def test_quarter_car_ride_height_and_modes():
    road = _example("bumpy_road")
    mech, p, q0, v0 = road.build(speed=0.0, road_length=10.0)
    guess = np.asarray(q0).copy()
    guess[1] += 0.05  # body 5 cm high, wheel 2 cm low
    guess[4] -= 0.02
    eq = mb.equilibrium(mech, p, jnp.asarray(guess))
    chi = 3.0 * (1.0 - 0.5**2) / (4.0 * 1.0)  # Lankarani-Nikravesh, e = 0.5 at 1 m/s
    qc = ref.quarter_car(road.M_BODY, road.M_WHEEL, road.K_SUSP, road.C_SUSP, road.K_TIRE, chi)
    q = np.asarray(eq.q)
    assert int(eq.status) == 0
    assert abs(q[4] - (road.RADIUS - qc["delta0"])) < 1e-10  # wheel centre height
    assert abs(q[1] - (road.RADIUS - qc["delta0"] + road.GAP)) < 1e-10  # ride height
    lin = mb.linearize(mech, p, eq.q, jnp.zeros(6))
    assert set(lin.coordinates) == {"body.y", "wheel.y", "wheel.theta"}
    md = mb.modes(lin)
    lam = np.asarray(md.eigenvalues)
    osc = lam[np.imag(lam) > 0]
    np.testing.assert_allclose(np.sort_complex(osc), np.sort_complex(qc["eigenvalues"][np.imag(qc["eigenvalues"]) > 0]),
                               rtol=1e-10)
    # the wheel's spin: a zero (its angle is ignorable) and the friction-damped spin rate
    real = np.sort(np.real(lam[np.abs(np.imag(lam)) == 0]))
    assert abs(real[-1]) < 1e-9
    r_eff = road.RADIUS - qc["delta0"] / 2  # the contact point: mid-depth of the overlap
    c_spin = road.MU * (road.M_BODY + road.M_WHEEL) * G / road.V_EPS * r_eff**2
    np.testing.assert_allclose(real[0], -c_spin / road.J_WHEEL, rtol=1e-9)


# --------------------------------------------------------------- batches, gradients, f32
def test_eigenvalues_of_1000_parameter_sets_in_one_vmapped_call():
    mech, p, q0, _ = double_pendulum()
    eq = mb.equilibrium(mech, p, q0)
    lin0 = mb.linearize(mech, p, eq.q, jnp.zeros(6))
    coords = lin0.coordinates
    m2 = jnp.linspace(0.2, 5.0, 1000)
    L2 = jnp.linspace(0.3, 1.5, 1000)[::-1]

    @jax.jit
    def eig(m2, L2):
        pp = mech.replace(p, {"rod2.mass": m2, "rod2.inertia": m2 * L2**2 / 12,
                              "rod2.cg": jnp.stack([L2 / 2, 0.0])})
        lin = mb.linearize(mech, pp, eq.q, jnp.zeros(6), coordinates=coords)
        return mb.modes(lin).eigenvalues, lin.status

    batched = jax.jit(jax.vmap(eig))
    lam, status = batched(m2, L2)
    jax.block_until_ready(lam)
    t0 = time.perf_counter()
    lam, status = batched(m2, L2)
    jax.block_until_ready(lam)
    seconds = time.perf_counter() - t0
    print(f"1000 linearisations + eigenvalues (double pendulum, one vmapped call): {seconds:.3f} s")
    assert lam.shape == (1000, 4) and not np.any(np.asarray(status))
    w = np.array([ref.double_pendulum_modes(1.0, 1.0, float(a), float(b))[0]
                  for a, b in zip(np.asarray(m2), np.asarray(L2))])
    np.testing.assert_allclose(np.imag(np.asarray(lam))[:, [0, 2]], w, rtol=1e-10)


def test_gradient_of_a_natural_frequency_with_respect_to_a_mass():
    mech, p, q0, _ = double_pendulum()
    eq = mb.equilibrium(mech, p, q0)
    coords = mb.linearize(mech, p, eq.q, jnp.zeros(6)).coordinates

    def low(m2):
        pp = mech.replace(p, {"rod2.mass": m2, "rod2.inertia": m2 * 0.7**2 / 12})
        return mb.modes(mb.linearize(mech, pp, eq.q, jnp.zeros(6), coordinates=coords)).frequencies[0]

    g = float(jax.grad(low)(1.5))
    h = 1e-5
    fd = (ref.double_pendulum_modes(1.0, 1.0, 1.5 + h, 0.7)[0][0]
          - ref.double_pendulum_modes(1.0, 1.0, 1.5 - h, 0.7)[0][0]) / (2 * h)
    assert g == pytest.approx(fd, rel=1e-7)
    assert float(low(1.5)) == pytest.approx(ref.double_pendulum_modes(1.0, 1.0, 1.5, 0.7)[0][0], rel=1e-12)


def test_float32():
    mech, p, q0, _ = compound_pendulum()
    p32 = jax.tree_util.tree_map(lambda a: a.astype(jnp.float32), p)
    q32 = jnp.asarray(q0, jnp.float32)
    eq = mb.equilibrium(mech, p32, q32, tol=1e-5)
    assert eq.q.dtype == jnp.float32 and int(eq.status) == 0
    lin = mb.linearize(mech, p32, eq.q, jnp.zeros(3, jnp.float32), tol=1e-5)
    assert lin.A.dtype == jnp.float32
    lam = np.asarray(mb.modes(lin).eigenvalues)
    np.testing.assert_allclose(np.abs(lam), ref.compound_pendulum_omega(2.0, 0.05, 0.3), rtol=1e-5)


def test_float32_equilibrium_default_tolerance_and_stability():
    """In float32 the default tol (100 eps = 1.2e-5) converges where 1e-10 cannot, and
    `stable` stays the static criterion (the round-off asymmetry of K is not taken for
    circulatory forces): a spatial pendulum on a revolute joint, hanging and upright."""
    for hang in (True, False):
        m = mb.SpatialModel(gravity=(0.0, 0.0, -G))
        m.add_body("b", mass=1.0, inertia=(0.1, 0.2, 0.3), position=(0.3, 0.0, -1.0 if hang else 1.0),
                   orientation=(np.cos(0.2), np.sin(0.2), 0.0, 0.0))
        m.add_revolute("O", "ground", "b", at=(0, 0, 0), axis=(0, 1, 0))
        mech, p, q0, _ = m.build()
        f32 = lambda a: jnp.asarray(a, jnp.float32)  # noqa: E731
        eq = mb.equilibrium(mech, jax.tree_util.tree_map(f32, p), f32(q0))
        eq64 = mb.equilibrium(mech, p, q0)
        assert eq.q.dtype == jnp.float32 and int(eq.status) == 0
        assert bool(eq.stable) == hang == bool(eq64.stable)
        # m g d about the pin (d = |CG - pin| = sqrt(0.3^2 + 1), the CG at the reference point),
        # per unit velocity-space vector (w, w x r): |(1, d)|^2 = 1 + d^2
        d = np.hypot(0.3, 1.0)
        np.testing.assert_allclose(float(eq.stiffness[0]), float(eq64.stiffness[0]), rtol=1e-5)
        assert float(eq64.stiffness[0]) == pytest.approx((1 if hang else -1) * G * d / (1 + d * d), rel=1e-10)


def test_stiff_spring_equilibrium_converges_to_its_rounding_floor():
    """A 0.1 kg slider hanging on a 1e9 N/m spring of free length 1 m (prismatic along y):
    y = -(1 + m g / k). Evaluating the spring force at y carries up to k * ulp(1) = 2e-7 N
    of rounding, far above the force tolerance tol * (1 + max|Q|) = 2e-10 N, so Newton
    stalls there (before the rounding floor this raised 'did not converge', residual
    5.2e-8 N after 40 iterations). The floor is 16 eps (1 + max|q|) max|K| = 7e-6 N; y
    matches the closed form to 2 ulp and the stiffness eigenvalue is k."""
    m, k = 0.1, 1e9
    mod = mb.Model(gravity=(0.0, -G))
    mod.add_body("bob", mass=m, inertia=1e-3, position=(0.0, -1.0))
    mod.add_prismatic("slide", "ground", "bob", axis=(0.0, 1.0), at=(0.0, -1.0))
    mod.add_spring("s", "ground", "bob", k=k, length=1.0, at_i=(0.0, 0.0), at_j=(0.0, -1.0))
    mech, p, q0, _ = mod.build()
    eq = mb.equilibrium(mech, p, q0)
    assert int(eq.status) == 0
    y = float(np.asarray(eq.q)[mech.coordinate_index("bob.y")])
    assert abs(y + (1.0 + m * G / k)) <= 2 * np.spacing(1.0)
    floor = 16 * np.finfo(float).eps * 2.0 * k
    assert float(eq.force_residual) <= floor
    np.testing.assert_allclose(float(eq.stiffness[0]), k, rtol=1e-9)


# ------------------------------------------------------------------------ bad input
def test_bad_input_and_per_member_status():
    mech, p, q0, _ = double_pendulum()
    eq = mb.equilibrium(mech, p, q0)
    z = jnp.zeros(6)
    with pytest.raises(ValueError, match="rod3.theta"):
        mb.linearize(mech, p, eq.q, z, coordinates=("rod1.theta", "rod3.theta"))
    with pytest.raises(ValueError, match="not a set of independent coordinates"):
        mb.linearize(mech, p, eq.q, z, coordinates=("rod1.x", "rod1.y"))
    with pytest.raises(ValueError, match="violates the constraints"):
        mb.linearize(mech, p, eq.q.at[0].add(0.01), z)
    with pytest.raises(ValueError, match="must be named"):
        jax.jit(lambda q: mb.linearize(mech, p, q, z).A)(eq.q)
    with pytest.raises(ValueError, match=r"q must have shape \(6,\)"):
        mb.equilibrium(mech, p, q0[:5])
    with pytest.raises(ValueError, match="u must have shape"):
        mb.linearize(mech, p, eq.q, z, u=jnp.ones(2))
    # traced: a member whose link cannot reach gets NEWTON_FAILED, the others converge;
    # a linearisation at an inconsistent point gets DRIFT
    mech4, p4, q4, _ = spring_fourbar(th2=1.2)
    guess = jnp.broadcast_to(q4, (3, 9))
    bs = jnp.asarray([0.8, 3.0, 0.8])  # coupler 3 m: the loop cannot close
    res = jax.vmap(lambda b, g: mb.equilibrium(mech4, mech4.replace(p4, {"B.point_i": jnp.stack([b / 2, 0.0])}), g))(bs, guess)
    assert list(np.asarray(res.status)) == [0, st.NEWTON_FAILED, 0]
    lin = jax.jit(lambda q: mb.linearize(mech, p, q, z, coordinates=("rod1.theta", "rod2.theta")))(eq.q.at[0].add(0.01))
    assert int(lin.status) & st.DRIFT


# --------------------------------------------------------------------- nonholonomic
def towed_caster(v=3.0, e=0.25, angle=0.0):
    """A cart driven straight along x at speed v (x, y and angle prescribed) towing a
    caster pinned at its reference point; the caster's wheel is a knife edge e behind."""
    mod = mb.Model(gravity=(0.0, 0.0))
    mod.add_body("cart", mass=5.0, inertia=0.5, velocity=(v, 0.0))
    c, s = np.cos(angle), np.sin(angle)
    mod.add_body("caster", mass=1.2, inertia=0.02, cg=(-e / 2, 0.0), angle=angle, velocity=(v, 0.0))
    mod.drive_coordinate("drive", "cart", "x", mb.constant_velocity(v))
    mod.drive_coordinate("lane", "cart", "y", mb.constant(0.0))
    mod.drive_coordinate("heading", "cart", "theta", mb.constant(0.0))
    mod.add_revolute("pivot", "cart", "caster", at=(0.0, 0.0))
    mod.add_knife_edge("wheel", "caster", at=(-e * c, -e * s), axis=(c, s))
    return mod.build()


@pytest.mark.parametrize("trailing", [True, False])
def test_towed_caster_steady_motion_nonholonomic(trailing):
    """A steady motion with a knife edge: one position state and no velocity state;
    lambda = -v/e (trailing: stable) or +v/e (leading: the caster swings round)."""
    v, e = 3.0, 0.25
    mech, p, q0, v0 = towed_caster(v, e, 0.0 if trailing else np.pi)
    lin = mb.linearize(mech, p, q0, v0)
    assert lin.names == ("caster.theta",) and lin.n_position == 1
    assert float(lin.A[0, 0]) == pytest.approx((-v if trailing else v) / e, rel=1e-12)
    # the accelerations vanish on the steady motion
    assert float(jnp.max(jnp.abs(lin.acceleration))) < 1e-12


# --------------------------------------------------------------------- spatial: top
@pytest.mark.parametrize("omega", [60.0, 20.0])
def test_sleeping_top_spatial_chart(omega):
    """A spinning symmetric top upright on a ball joint (a steady motion of a spatial body
    about a body-fixed axis): the tilt eigenvalues against the closed form, stable (purely
    imaginary) above the critical spin and unstable below it."""
    m, l, Ixx, Izz = 1.0, 0.1, 2e-3, 4e-3  # CG 0.1 m above the tip, inertias about the CG
    mod = mb.SpatialModel(gravity=(0.0, 0.0, -G))
    mod.add_body("top", mass=m, inertia=(Ixx, Ixx, Izz), cg=(0.0, 0.0, l),
                 angular_velocity_body=(0.0, 0.0, omega))
    mod.add_spherical("tip", "ground", "top", at=(0.0, 0.0, 0.0))
    mech, p, q0, v0 = mod.build()
    lin = mb.linearize(mech, p, q0, v0, coordinates=("top.rx", "top.ry", "top.rz"))
    assert lin.names[3:] == ("top.rx_dot", "top.ry_dot", "top.rz_dot")
    drop = ("top.rz", "top.rz_dot")  # the spin angle and the spin rate
    assert float(lin.coupling(drop)) < 1e-15
    lam = np.asarray(mb.modes(lin.without(drop)).eigenvalues)
    want = ref.sleeping_top_eigenvalues(m, l, Ixx + m * l * l, Izz, omega)
    np.testing.assert_allclose(_canon(lam), _canon(want), rtol=1e-12, atol=1e-12)
    stable = Izz**2 * omega**2 > 4 * (Ixx + m * l * l) * m * G * l
    assert stable == (omega == 60.0)
    assert (np.max(np.abs(np.real(lam))) < 1e-9) == stable


# ------------------------------------------------------------ the benchmark bicycle
def test_bicycle_reference_reproduces_the_paper_and_the_3d_model_builds():
    """Fast: the reference formulas (tests/reference/bicycle.py) reproduce the numbers
    printed in the paper, the example's parameter table is the reference's (Table 1), and
    the 3D model has the expected structure (the slow test below linearises it)."""
    from tests.reference import bicycle as bref

    for name, a in zip(("M", "C1", "K0", "K2"), bref.matrices()):
        np.testing.assert_allclose(a, bref.PUBLISHED[name], rtol=1e-12, atol=1e-13)
    for v, ev in bref.PUBLISHED["eigenvalues"].items():
        np.testing.assert_allclose(_canon(bref.eigenvalues(v)), _canon(ev), rtol=1e-11)
    vw, vc = bref.stability_speeds()
    assert vw == pytest.approx(bref.PUBLISHED["weave_speed"], rel=1e-12)
    assert vc == pytest.approx(bref.PUBLISHED["capsize_speed"], rel=1e-12)
    ex = _example("bicycle")
    assert ex.BENCHMARK == bref.BENCHMARK
    mech, p, q0, v1 = ex.build(speed=1.0)
    assert (mech.n_coords, mech.n_vel, mech.n_constraints) == (28, 24, 21)
    assert len(mech.nonholonomic_rows) == 4


@pytest.mark.slow
def test_benchmark_bicycle_3d_against_the_published_linearisation():
    """The Whipple bicycle built in 3D (examples/bicycle.py: SpatialModel, two rolling
    discs, steer axis tilt and trail) linearised by jaxmbs at forward speed: its
    lean-steer eigenvalues at 0, 4, 4.6, 5 m/s and over 0-10 m/s, and the weave and
    capsize speeds, against the independent computation from the published formulas
    (tests/reference/bicycle.py) and the numbers printed in the paper (Table 2)."""
    from tests.reference import bicycle as bref

    ex = _example("bicycle")
    sweep = np.linspace(0.0, 10.0, 41)
    r = ex.linear_analysis(sweep)
    assert r["status"] == 0 and r["coupling"] < 1e-12  # removed states really ignorable
    for v in ex.REPORT_SPEEDS:
        got, want = _canon(r["report"][v]), _canon(bref.eigenvalues(v))
        assert _rel(got, want) < 1e-8, (v, got, want)
    vw, vc = bref.stability_speeds()
    assert abs(r["weave"] - vw) < 1e-8 * vw and abs(r["capsize"] - vc) < 1e-8 * vc
    assert abs(r["weave"] - bref.PUBLISHED["weave_speed"]) < 1e-8 * vw
    assert abs(r["capsize"] - bref.PUBLISHED["capsize_speed"]) < 1e-8 * vc
    for k, v in enumerate(sweep):  # the root locus against Table 2 at integer speeds
        if v == int(v):
            got, want = _canon(r["lam_sweep"][k]), _canon(bref.PUBLISHED["eigenvalues"][int(v)])
            np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["suspension_modes", "lqr_cartpole"])
def test_example_json_contracts(name, capsys):
    """The statics / linearisation examples run with --json: one JSON line, and their
    checks against the closed forms hold."""
    import json

    out = _example(name).main(["--json"] + (["--n", "200", "--steps", "300"] if name == "lqr_cartpole" else []))
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == json.loads(json.dumps(out))
    if name == "suspension_modes":
        assert out["status"] == 0 and out["max_rel_error_eigenvalues"] < 1e-10
        assert out["max_error_heights"] < 1e-10 and out["neutral"] == 1
    else:
        assert out["linearization_error"] < 1e-12
        assert all(re < 0 for re, _ in out["closed_loop_eigenvalues"])
        assert out["fraction_stabilized"] > 0.8
