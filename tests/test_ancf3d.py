"""Spatial ANCF cables (jaxmbs.flexible.ancf3d): element kernels against autodiff, the
3D cantilever against the planar ANCF beam and the elastica, its natural frequencies
against Euler-Bernoulli (references in tests/reference/elastica.py, SciPy, independent
of jaxmbs), energy conservation of a 3D cable pendulum and a cable hanging from a rigid
body by a spherical beam-body pin, and the cable-body weld (`add_beam_body_weld`): a
cantilever welded to the ground against Euler-Bernoulli, a cable welded to a spinning
body (energy, weld rows) and its refused inputs. The conformance of the families
(Jacobians, gamma, forces = -grad V, mass part) is in tests/families/test_conformance.py.
"""
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs
from jaxmbs.flexible import ancf

sys.path.insert(0, str(Path(__file__).resolve().parent / "reference"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import cantilever as C  # noqa: E402
from elastica import beta_L, elastica_tip  # noqa: E402
from test_ancf import _random_elements, _x64  # noqa: E402,F401  (_x64: autouse fixture)

# the cantilever of examples/cantilever.py and tests/test_ancf.py: L = 1 m, EI = 1 N m^2,
# EA = 1e6 N, rho A = 1 kg/m (C.SECTION); the element sampler and the float64 fixture of
# the planar tests
L, EI, RHOA = C.L, C.EI, C.RHOA
SECTION = C.SECTION


def test_cable_forces_are_minus_grad_of_strain_energy_also_when_straight():
    """Analytic internal forces = -jax.grad of the strain energy at random states and at a
    straight, stretched element (r_x x r_xx = 0, where |r_x x r_xx| has no derivative:
    the energy uses kappa^2, so the gradient exists and is finite); the strain-rate
    damping forces = -grad of the Rayleigh dissipation function of the strain rates
    (autodiff through eps(e) and kv(e)). One jitted call (eager autodiff dispatches op
    by op and took most of this test's time)."""
    e, Le, EA, EIe = _random_elements(d=3)
    t = jnp.asarray([0.3, -0.5, 0.8]) * 1.1      # straight, stretched, a random direction
    r0 = jnp.asarray([0.2, 0.1, -0.4])
    e = jnp.concatenate([e, jnp.stack([r0, t, r0 + Le[0] * t, t])[None]])
    Le, EA, EIe = (jnp.concatenate([x, x[:1]]) for x in (Le, EA, EIe))
    ed = jnp.asarray(np.random.default_rng(1).normal(size=e.shape))
    beta = jnp.asarray(np.linspace(0.01, 0.05, e.shape[0]))

    @jax.jit
    def forces_and_grads(e, ed):
        def rayleigh(edot):
            eps_d = jax.jvp(lambda x: ancf._strains(x, Le)[2], (e,), (edot,))[1]
            kv_d = jax.jvp(lambda x: ancf._strains(x, Le)[3], (e,), (edot,))[1]
            dens = 0.5 * EA[:, None] * eps_d**2 + 0.5 * EIe[:, None] * jnp.sum(kv_d**2, -1)
            return jnp.sum(beta * Le * (dens @ jnp.asarray(ancf.GAUSS_POINTS[1])))

        g = jax.grad(lambda x: jnp.sum(ancf.element_energy(x, Le, EA, EIe)))(e)
        return (ancf.element_forces(e, Le, EA, EIe), -g,
                ancf.element_damping(e, ed, Le, EA, EIe, beta), -jax.grad(rayleigh)(ed))

    Q, mg, Qd, mgd = (np.asarray(x) for x in forces_and_grads(e, ed))
    assert np.all(np.isfinite(mg))
    for k in range(e.shape[0]):  # per element: the straight one's forces are small
        np.testing.assert_allclose(Q[k], mg[k], rtol=1e-10, atol=1e-10 * np.max(np.abs(mg[k])))
        np.testing.assert_allclose(Qd[k], mgd[k], rtol=1e-9, atol=1e-9 * np.max(np.abs(mgd[k])))


def test_cable_mass_is_hessian_of_kinetic_energy_and_constant():
    """The element mass against the Hessian of T = rho A / 2 integral |S(xi) ed|^2 dx
    (autodiff, 12-point Gauss here), and the assembled model mass constant in q with total
    rigid-translation mass rho A L and consistent weight rho A L g."""
    Le, rhoA = jnp.asarray([0.8, 1.3]), jnp.asarray([2.5, 0.7])
    xg, wg = np.polynomial.legendre.leggauss(12)
    xg, wg = 0.5 * (xg + 1), 0.5 * wg

    def T(edf, Lk, mk):
        S, _, _ = ancf.shape_functions(jnp.asarray(xg), Lk)
        r_d = S @ edf.reshape(4, 3)
        return 0.5 * mk * Lk * jnp.sum(jnp.asarray(wg) * jnp.sum(r_d * r_d, -1))

    H = jax.jit(jax.vmap(jax.hessian(T), in_axes=(None, 0, 0)))(jnp.zeros(12), Le, rhoA)
    np.testing.assert_allclose(ancf.element_mass(Le, rhoA, 3), H, rtol=1e-13, atol=1e-14)
    m = jaxmbs.SpatialModel(gravity=(0.0, 0.0, -9.81))
    m.add_beam("c", (0.0, 0.0, 0.0), (0.6, 0.8, 0.0), elements=3, section=SECTION)
    mech, params, q0, _ = m.build()
    M0 = jaxmbs.mass_matrix(mech, params, q0).dense()
    M1 = jaxmbs.mass_matrix(mech, params, q0 + 0.3 * jnp.sin(jnp.arange(q0.size))).dense()
    np.testing.assert_array_equal(M0, M1)
    ones = jnp.tile(jnp.asarray([0.0, 0.0, 1.0, 0.0, 0.0, 0.0]), q0.size // 6)
    assert abs(float(ones @ M0 @ ones) - 1.0) < 1e-12  # rho A = 1 kg/m, length 1 m
    # gravity: the consistent weight sums to rho A L g
    Q, _, _ = jaxmbs.generalized_forces(mech, params, q0, jnp.zeros_like(q0), 0.0)
    assert abs(float(np.asarray(Q).reshape(-1, 6)[:, 2].sum()) + 9.81) < 1e-12


def _cantilever3d(elements):
    return C.build(elements, spatial=True)


def _solve(mech, params, q, force, steps=1):
    for s in np.linspace(0.0, 1.0, steps + 1)[1:]:
        p = mech.replace(params, {"tip_load.force": list(s * np.asarray(force))})
        q = jaxmbs.equilibrium(mech, p, q, tol=1e-8).q
    return np.asarray(q)


ELEMENTS = 8


def test_cantilever_3d_matches_planar_ancf_and_elastica_in_the_load_plane():
    """Dead tip load P = alpha EI / L^2 (alpha = 1) along -z, then along the skew direction
    (0, cos 35deg, -sin 35deg) of the y-z plane: the problem stays planar in the load's
    plane, so the tip's (axial, in-plane) position and slope equal the planar ANCF beam's
    at the same mesh (8 elements) to 1e-9 relative (measured 2.4e-15: the same kernels in
    another basis) and, out of the plane, stay 0 (measured < 3e-16); the in-plane
    deflection, shortening and rotation equal the elastica's to 1e-3 of L (the planar mesh error at 8 elements;
    measured 3.0e-4 in the deflection; 32 elements: the slow test below)."""
    alpha = 1.0
    P = alpha * EI / L**2
    m2, p2, q2, tip2 = C.build(ELEMENTS)
    x2 = _solve(m2, p2, q2, (0.0, P))
    i2 = m2.coordinate_index(f"{tip2}.x")
    px, py, sx, sy = x2[i2:i2 + 4]
    ref = np.asarray(elastica_tip(alpha))
    mech, params, q0, tip = _cantilever3d(ELEMENTS)
    i = mech.coordinate_index(f"{tip}.x")
    for ang in (0.0, np.deg2rad(35.0)):
        n = np.array([0.0, np.cos(ang), -np.sin(ang)]) if ang else np.array([0.0, 0.0, -1.0])
        x = _solve(mech, params, q0, P * n)
        r, s = x[i:i + 3], x[i + 3:i + 6]
        # in-plane (x, along n) and out-of-plane (x cross n) components
        o = np.cross([1.0, 0.0, 0.0], n)
        got = np.array([r[0], r @ n, s[0], s @ n])
        np.testing.assert_allclose(got, [px, py, sx, sy], rtol=1e-9, atol=1e-12)
        assert abs(r @ o) < 1e-12 and abs(s @ o) < 1e-12, (r @ o, s @ o)
        tip_vals = np.array([r @ n / L, (L - r[0]) / L, np.arctan2(s @ n, s[0])])
        assert np.max(np.abs(tip_vals - ref)) < 1e-3, tip_vals - ref


def test_cantilever_3d_frequencies_match_euler_bernoulli_in_pairs():
    """The straight cantilever's first six natural frequencies (16 elements,
    jaxmbs.linearize + modes as examples/cantilever.py): the first three Euler-Bernoulli
    bending frequencies (beta_n L = 1.8751, 4.6941, 7.8548) each twice (bending in y and
    in z), to 1e-4 relative: the mesh's discretisation error, which grows with the mode
    number (measured 1.3e-7, 5.1e-6, 4.0e-5 at 16 elements; issue 20 asks 1e-3)."""
    mech, params, q0, _ = _cantilever3d(16)
    lin = jaxmbs.linearize(mech, params, q0, jnp.zeros(mech.n_vel))
    w = np.sort(np.asarray(jaxmbs.modes(lin).frequencies))
    w = w[w > 1e-6][::2]  # each undamped mode is a conjugate pair +- i w
    f = w[:6] / (2 * np.pi)
    bl = np.asarray(beta_L(3))
    ref = np.repeat(bl**2 / (2 * np.pi) * np.sqrt(EI / (RHOA * L**4)), 2)
    np.testing.assert_allclose(f, ref, rtol=1e-4)
    # the pairs are degenerate (isotropic bending) to round-off, and the 7th is above
    # the 3rd bending pair
    np.testing.assert_allclose(f[::2], f[1::2], rtol=1e-9)
    assert w[6] / (2 * np.pi) > 1.01 * ref[-1]


def test_cable_pendulum_conserves_energy_to_the_integrators_order():
    """A soft cable (Berzeri and Shabana's pendulum section, 2 elements, L = 1.2 m)
    spherically pinned at one end, released horizontally along x with a sideways velocity
    (y) under gravity (-z): a genuinely 3D motion. Undamped RK4 with projection, 0.2 s:
    the energy drift over max kinetic energy is < 1e-6 at dt = 5e-4 s (measured 2.7e-11)
    and falls by more than 8x when dt halves (fourth order: 16x; measured 15.1x)."""
    sec = dict(E=0.7e6, A=0.0018, I=1.215e-8, rho=5540.0)
    m = jaxmbs.SpatialModel(gravity=(0.0, 0.0, -9.81))
    nodes = m.add_beam("c", (0.0, 0.0, 0.0), (1.2, 0.0, 0.0), elements=2, section=sec)
    m.add_node_pin("pin", nodes[0])
    mech, params, q0, v0 = m.build()
    # a rigid rotation about z at 1 rad/s as initial velocity (consistent with the pin)
    X = np.asarray(q0).reshape(-1, 6)
    V = np.zeros_like(X)
    V[:, :3] = np.cross([0.0, 0.0, 1.0], X[:, :3])
    V[:, 3:] = np.cross([0.0, 0.0, 1.0], X[:, 3:])
    v0 = jnp.asarray(V.reshape(-1))

    energies = jax.jit(jax.vmap(lambda q, v: jaxmbs.energy(mech, params, q, v)))

    def drift(dt):
        tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 0.2), dt, save_every=int(round(0.02 / dt)))
        En = energies(tr.q, tr.v)
        assert int(np.max(np.asarray(tr.status))) == 0
        return float(jnp.max(jnp.abs(En["total"] - En["total"][0])) / jnp.max(En["kinetic"])), tr

    d1, tr = drift(5e-4)
    d2, _ = drift(2.5e-4)
    assert d1 < 1e-6, d1
    assert d1 > 8 * d2, (d1, d2)
    i = mech.coordinate_index(f"{nodes[-1]}.x")
    tipf = np.asarray(tr.q[-1, i:i + 3])
    assert tipf[1] > 0.05 and tipf[2] < -0.05, tipf  # it swung sideways and fell


@pytest.mark.slow
def test_cable_hanging_from_the_ground_holding_a_rigid_ball():
    """A cable (4 elements, rho A = 0.1 kg/m, L = 1 m) hangs from the ground by a
    spherical beam-body pin at its first node and holds a rigid ball (2 kg) by a second
    one at xi = 0.5 of its last element, 0.1 m above the ball's centre (body point).
    Statics (jaxmbs.equilibrium): the force on the cable at the upper pin is the weight of
    cable + ball, (rho A L + m) g = 20.601 N upwards, at the ball's pin the ball's weight
    downwards (to 1e-7 N). Then, the ball pushed sideways (0.5 m/s along y, velocities
    made consistent by jaxmbs.assemble), RK4 dt = 1e-4 s over 0.05 s: energy constant to
    < 1e-6 of the max kinetic energy and the constraints held to < 1e-9 m (measured:
    reactions exact to print precision, drift 1.2e-11, residual 3e-33; the ball moved
    8.4 mm). Slow: about 56 s, mostly compiling the rigid-body + cable model."""
    from jaxmbs.core.equations import constraint_terms

    g = 9.81
    sec = dict(E=1.0e7, A=1.0e-4, I=1.0e-10, rho=1.0e3)  # rho A = 0.1 kg/m, EA = 1e3 N
    m = jaxmbs.SpatialModel(gravity=(0.0, 0.0, -g))
    nodes = m.add_beam("c", (0.1, 0.0, 0.0), (0.1, 0.0, -1.0), elements=4, section=sec)
    m.add_beam_body_pin("hang", nodes[0], "ground")
    m.add_body("ball", mass=2.0, inertia=(0.02, 0.02, 0.02), position=(0.1, 0.0, -0.975))
    m.add_beam_body_pin("hold", nodes[3], "ball", xi=0.5, point=(0.0, 0.0, 0.1))
    mech, params, q0, v0 = m.build()
    eq = jaxmbs.equilibrium(mech, params, q0, tol=1e-9)
    rc = jaxmbs.reactions(mech, params, eq.q, eq.lam)
    W = 0.1 * 1.0 * g + 2.0 * g
    np.testing.assert_allclose(rc["hang"]["force"], [0.0, 0.0, W], rtol=0, atol=1e-7)
    np.testing.assert_allclose(rc["hold"]["force"], [0.0, 0.0, -2.0 * g], rtol=0, atol=1e-7)
    # a spherical pin at the element's first node (xi = 0) transmits no moment about it
    np.testing.assert_allclose(rc["hang"]["moment"], np.zeros(3), atol=1e-9)
    v = jnp.zeros(mech.n_vel).at[mech.velocity_index("ball.y")].set(0.5)
    st = jaxmbs.assemble(mech, params, eq.q, v)
    tr = jaxmbs.simulate(mech, params, st.q, st.v, (0.0, 0.05), 1e-4, save_every=50)
    assert int(np.max(np.asarray(tr.status))) == 0
    En = jax.vmap(lambda q, vv: jaxmbs.energy(mech, params, q, vv))(tr.q, tr.v)
    drift = float(jnp.max(jnp.abs(En["total"] - En["total"][0])) / jnp.max(En["kinetic"]))
    assert drift < 1e-6, drift
    qf = tr.q[-1]
    assert abs(float(qf[mech.coordinate_index("ball.y")])) > 5e-3  # it moved
    phi = constraint_terms(mech, params, qf, tr.v[-1], 0.05).phi
    assert float(jnp.max(jnp.abs(phi))) < 1e-9


@pytest.mark.slow
def test_cantilever_3d_matches_the_elastica_at_32_elements():
    """The skew-loaded 3D cantilever (alpha = 1, 32 elements) against the elastica to
    1e-6 of L in deflection, shortening and rotation (the planar beam's documented 32
    element error at alpha = 1 is 6.3e-7; measured here 6.3e-7, i.e. 7.3e-6 relative to the
    small shortening, 1.7e-6 to the deflection); the clamp's reaction is minus the load
    and minus its moment about the clamp, r_tip x F (statics of the whole cable)."""
    mech, params, q0, tip = _cantilever3d(32)
    i = mech.coordinate_index(f"{tip}.x")
    ang = np.deg2rad(35.0)
    Fo = EI / L**2 * np.array([0.0, np.cos(ang), -np.sin(ang)])
    p = mech.replace(params, {"tip_load.force": list(Fo)})
    eq = jaxmbs.equilibrium(mech, p, q0, tol=1e-8)
    x = np.asarray(eq.q)
    r, s = x[i:i + 3], x[i + 3:i + 6]
    n = Fo / np.linalg.norm(Fo)
    tip_vals = np.array([r @ n / L, (L - r[0]) / L, np.arctan2(s @ n, s[0])])
    err = tip_vals - np.asarray(elastica_tip(1.0))
    assert np.max(np.abs(err)) < 1e-6, err
    rc = jaxmbs.reactions(mech, p, eq.q, eq.lam)["clamp"]
    np.testing.assert_allclose(rc["force"], -Fo, atol=1e-7)
    np.testing.assert_allclose(rc["moment"], -np.cross(r, Fo), atol=1e-7)


def _hermite_rows(xi, Le):
    """S(xi) and dS/dx(xi) (4,) of the cubic Hermite element of length Le, written out
    (NumPy, independent of jaxmbs.flexible.ancf)."""
    S = np.array([1 - 3 * xi**2 + 2 * xi**3, Le * (xi - 2 * xi**2 + xi**3), 3 * xi**2 - 2 * xi**3,
                  Le * (xi**3 - xi**2)])
    Sx = np.array([(6 * xi**2 - 6 * xi) / Le, 1 - 4 * xi + 3 * xi**2, (6 * xi - 6 * xi**2) / Le,
                   3 * xi**2 - 2 * xi])
    return S, Sx


def test_cable_tangential_follower_tension_equals_the_dead_load_and_follows_the_tangent():
    """'beam3d_follower' (add_node_load(..., follower=True) on a cable: F_t along the
    deformed unit tangent). One model: a cable along x (L = 1 m, C.SECTION: EA = 1e6 N,
    EI = 1 N m^2, 4 elements), clamped at x = 0, no gravity, with a dead tip load, a
    follower tip load and a follower load at xi = 0.5 of the second element, switched by
    their Params leaves.

    1. Tip tension F_t = T = 100 N (the others zero): the tangent stays along x, so the
       statics equal those under the dead load (T, 0, 0) alone (to 1e-12), and the tip
       stretch is the bar's, T L / EA = 1e-4 m (to 2e-4 relative; exactly, with this
       energy's Green strain, the stretch lambda - 1 of T = EA lambda (lambda^2 - 1) / 2,
       checked to 1e-9 relative).
    2. The cable bent by the dead tip load (0, 0, -EI / L^2), with F_t = 1 N at the tip and
       -0.3 N (compressive) at the material point: at equilibrium the followers'
       generalised force (the model's Q minus Q with them zeroed) equals S(xi)^T F_t t with
       S and t = r_x / |r_x| written out in NumPy from the equilibrium nodes (to 1e-12),
       the tip tangent turned noticeably from x, and the clamp's reaction force is minus
       the dead load minus the followers' forces F_t t (statics of the whole cable).
    Measured: follower vs dead statics identical (difference 0.0), stretch 2.2e-12 from the
    Green-strain value and 1.5e-4 from T L / EA, Q 1.1e-16 from NumPy, reaction exact."""
    m = jaxmbs.SpatialModel(gravity=(0.0, 0.0, 0.0))
    nodes = m.add_beam("c", (0.0, 0.0, 0.0), (L, 0.0, 0.0), elements=4, section=SECTION)
    m.add_node_weld("clamp", nodes[0])
    m.add_node_load("dead", nodes[4], (0.0, 0.0, 0.0))
    m.add_node_load("tip", nodes[4], 0.0, follower=True)
    m.add_node_load("mid", nodes[1], 0.0, follower=True, xi=0.5)
    mech, params, q0, _ = m.build()
    load = lambda dead, tip, mid: mech.replace(params, {"dead.force": list(dead), "tip.force_t": tip,
                                                        "mid.force_t": mid})
    solve = lambda p: jaxmbs.equilibrium(mech, p, q0, tol=1e-10)
    node_q = lambda q, k: np.asarray(q)[mech.coordinate_index(f"{nodes[k]}.x"):][:6]

    T = 100.0
    tip_f = node_q(solve(load((0.0, 0.0, 0.0), T, 0.0)).q, 4)
    tip_d = node_q(solve(load((T, 0.0, 0.0), 0.0, 0.0)).q, 4)
    np.testing.assert_allclose(tip_f, tip_d, rtol=0, atol=1e-12)
    lam = max(np.roots([1.0, 0.0, -1.0, -2 * T / C.EA]).real)       # lambda^3 - lambda = 2T/EA
    stretch = tip_f[0] - L
    np.testing.assert_allclose(stretch, L * (lam - 1), rtol=1e-9)
    np.testing.assert_allclose(stretch, T * L / C.EA, rtol=2e-4)
    np.testing.assert_allclose(tip_f[1:], [0.0, 0.0, lam, 0.0, 0.0], atol=1e-12)

    P = EI / L**2
    Ft = {"tip": 1.0, "mid": -0.3}
    p = load((0.0, 0.0, -P), Ft["tip"], Ft["mid"])
    eq = solve(p)
    z = jnp.zeros(mech.n_vel)
    forces = jax.jit(lambda pp: jaxmbs.generalized_forces(mech, pp, eq.q, z, 0.0)[0])  # eager: 9 s
    dQ = np.asarray(forces(p) - forces(load((0.0, 0.0, -P), 0.0, 0.0)))
    Le = L / 4
    ref = np.zeros_like(dQ)
    f_total = np.zeros(3)
    for name, k, xi in (("tip", 3, 1.0), ("mid", 1, 0.5)):   # tip: xi = 1 of the last element
        a, b = node_q(eq.q, k), node_q(eq.q, k + 1)
        e = np.stack([a[:3], a[3:], b[:3], b[3:]])
        S, Sx = _hermite_rows(xi, Le)
        rx = Sx @ e
        f = Ft[name] * rx / np.linalg.norm(rx)
        f_total += f
        for w, (kk, part) in zip(S, ((k, 0), (k, 3), (k + 1, 0), (k + 1, 3))):
            i = mech.velocity_index(f"{nodes[kk]}.x") + part
            ref[i:i + 3] += w * f
        if name == "tip":
            assert abs(rx[2] / np.linalg.norm(rx)) > 0.3, rx     # the tangent turned
    np.testing.assert_allclose(dQ, ref, rtol=0, atol=1e-12)
    rc = jaxmbs.reactions(mech, p, eq.q, eq.lam)["clamp"]
    np.testing.assert_allclose(rc["force"], -(np.array([0.0, 0.0, -P]) + f_total), atol=1e-7)


def _skew_frame():
    """A unit cable axis d, a unit load direction n perpendicular to it and o = d x n (no
    two of them along global axes)."""
    d = np.array([2.0, -1.0, 2.0]) / 3.0
    a = np.cross(d, [0.0, 0.0, 1.0])
    a /= np.linalg.norm(a)
    ang = np.deg2rad(35.0)
    n = np.cos(ang) * a + np.sin(ang) * np.cross(d, a)
    return d, n, np.cross(d, n)


def test_cable_welded_to_the_ground_by_beam_body_weld_is_an_euler_bernoulli_cantilever():
    """`add_beam_body_weld` to the ground ('beam3d_point' + 'beam3d_slope', default axis:
    the initial slope, global): the cantilever of tests/test_ancf.py (L = 1 m, EI = 1 N
    m^2, EA = 1e6 N, 8 elements) along the skew axis d = (2, -1, 2) / 3 under a dead tip
    load P n (P = 1e-3 EI / L^2, n perpendicular to d, skew). Linear statics about the
    straight cable (one saddle-point solve with the stiffness -dQ/dq by autodiff and the
    constraint Jacobian; it compiles in about 3 s where jaxmbs.equilibrium took 18 s of
    CPU, over this file's time budget): the tip deflection along n equals Euler-Bernoulli's
    P L^3 / 3 EI to 1e-9 relative (the cubic Hermite element holds the cubic solution
    exactly; measured 1.7e-10), nothing out of the load's plane or along d (< 1e-12 m). The
    weld's reaction on the cable is -P n and its moment about the weld point
    -(r_tip - r_weld) x P n (statics of the whole cable, to 1e-12: the slope rows carry
    the moment)."""
    from jaxmbs.core.equations import constraint_terms

    d, n, o = _skew_frame()
    r0 = np.array([0.2, 0.1, -0.3])
    m = jaxmbs.SpatialModel(gravity=(0.0, 0.0, 0.0))
    nodes = m.add_beam("c", r0, r0 + L * d, elements=ELEMENTS, section=SECTION)
    m.add_beam_body_weld("weld", nodes[0], "ground")
    P = 1e-3 * EI / L**2
    m.add_node_load("tip_load", nodes[-1], P * n)
    mech, params, q0, _ = m.build()

    @jax.jit
    def linear_statics(q):  # q = v space here (cable nodes only): Q + K dq - G^T lam = 0, G dq = 0
        z = jnp.zeros_like(q)
        Q = lambda x: jaxmbs.generalized_forces(mech, params, x, z, 0.0)[0]
        G = constraint_terms(mech, params, q, z, 0.0).jac
        k = G.shape[0]
        A = jnp.block([[-jax.jacfwd(Q)(q), G.T], [G, jnp.zeros((k, k), q.dtype)]])
        s = jnp.linalg.solve(A, jnp.concatenate([Q(q), jnp.zeros((k,), q.dtype)]))
        return q + s[:q.size], s[q.size:]

    q, lam = linear_statics(q0)
    i = mech.coordinate_index(f"{nodes[-1]}.x")
    tip = np.asarray(q[i:i + 3])
    u = tip - (r0 + L * d)
    ref = P * L**3 / (3.0 * EI)
    assert abs(u @ n - ref) < 1e-9 * ref, (u @ n - ref) / ref
    assert abs(u @ o) < 1e-12 and abs(u @ d) < 1e-12, (u @ o, u @ d)
    rc = jaxmbs.reactions(mech, params, q, lam)["weld"]
    np.testing.assert_allclose(rc["force"], -P * n, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rc["moment"], -np.cross(tip - r0, P * n), rtol=0, atol=1e-12)


def test_cable_welded_to_a_spinning_body_conserves_energy_and_holds_the_weld():
    """A free rigid hub (0.5 kg, turned by a quaternion) in zero gravity with a soft cable
    (the pendulum section of the test above, 2 elements, 0.6 m) welded at its first node
    by `add_beam_body_weld` (default axis: the cable's initial slope in the hub's axes);
    the assembly starts as a rigid body spinning at w = (0.3, -0.4, 2) rad/s (velocities
    consistent with the weld by construction), so the cable bends and stretches under its
    centrifugal load while the weld turns. Undamped RK4 WITHOUT projection (so the rows'
    acceleration terms, gamma, alone keep them), dt = 5e-4 s over 0.1 s: the energy
    constant to < 1e-8 of the max kinetic energy (measured 7e-12; 4e-7 with the quad
    term's factor 2 on the cross rate term made 1), the 5 weld rows (position 3, slope
    direction 2) held to < 1e-9 (measured 6e-11) and their rates to < 1e-8, the strain
    energy grown above 1e-4 J (measured max 2.7e-3 J: the weld bends the cable)."""
    from jaxmbs.core.equations import constraint_terms

    sec = dict(E=0.7e6, A=0.0018, I=1.215e-8, rho=5540.0)
    w = np.array([0.3, -0.4, 2.0])
    m = jaxmbs.SpatialModel(gravity=(0.0, 0.0, 0.0))
    h = np.deg2rad(20.0)
    m.add_body("hub", mass=0.5, inertia=(2e-3, 3e-3, 4e-3), angular_velocity=w,
               orientation=(np.cos(h), 0.6 * np.sin(h), 0.0, 0.8 * np.sin(h)))
    nodes = m.add_beam("c", (0.05, 0.0, 0.0), (0.65, 0.0, 0.0), elements=2, section=sec)
    m.add_beam_body_weld("weld", nodes[0], "hub")
    mech, params, q0, v0 = m.build()
    i, iv = mech.coordinate_index(f"{nodes[0]}.x"), mech.velocity_index(f"{nodes[0]}.x")
    X = np.asarray(q0[i:]).reshape(-1, 6)                # the cable's nodes, after the hub's
    V = np.concatenate([np.cross(w, X[:, :3]), np.cross(w, X[:, 3:])], 1)
    v0 = jnp.asarray(np.r_[np.asarray(v0[:iv]), V.ravel()])
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 0.1), 5e-4, save_every=20,
                         stabilizer=jaxmbs.NoStabilization())
    assert int(np.max(np.asarray(tr.status))) == 0

    def check(q, v):
        ct = constraint_terms(mech, params, q, v, 0.0)
        return jaxmbs.energy(mech, params, q, v), ct.phi, ct.jac @ v

    En, phi, phid = jax.jit(jax.vmap(check))(tr.q, tr.v)
    drift = float(jnp.max(jnp.abs(En["total"] - En["total"][0])) / jnp.max(En["kinetic"]))
    assert drift < 1e-8, drift
    assert phi.shape[1] == 5 and float(jnp.max(jnp.abs(phi))) < 1e-9, phi
    assert float(jnp.max(jnp.abs(phid))) < 1e-8, phid   # velocity level (also at t = 0)
    assert float(jnp.max(En["potential"])) > 1e-4, En["potential"]


def test_beam_body_weld_refuses_bad_input_naming_the_weld():
    """A zero axis (global or body), xi outside [0, 1] and a particle (no orientation) are
    refused with a ValueError naming the weld; the name stays free."""
    m = jaxmbs.SpatialModel()
    nodes = m.add_beam("b", (0, 0, 0), (1, 0, 0), elements=2, section=SECTION)
    m.add_body("hub", mass=1.0, inertia=(0.1, 0.1, 0.1))
    m.add_particle("pt", mass=1.0, position=(0.0, 0.0, 0.0))
    for bad in (dict(axis=(0.0, 0.0, 0.0)), dict(axis_i=(0.0, 0.0, 0.0)), dict(xi=1.5),
                dict(xi=-0.1)):
        with pytest.raises(ValueError, match="beam-body weld 'w'.*(axis|xi)"):
            m.add_beam_body_weld("w", nodes[0], "hub", **bad)
    with pytest.raises(ValueError, match="beam-body weld 'w'.*particle"):
        m.add_beam_body_weld("w", nodes[0], "pt")
    assert m.add_beam_body_weld("w", nodes[1], "hub", xi=0.5, axis=(0.0, 1.0, 0.0)) == "w"


def test_builder_refuses_bad_input_naming_it():
    m = jaxmbs.SpatialModel()
    with pytest.raises(ValueError, match="start"):
        m.add_beam("b", (0, 0), (1, 0, 0), elements=2, section=SECTION)
    with pytest.raises(ValueError, match="coincide"):
        m.add_beam("b", (0, 0, 0), (0, 0, 0), elements=2, section=SECTION)
    with pytest.raises(ValueError, match="section"):
        m.add_beam("b", (0, 0, 0), (1, 0, 0), elements=2, section=dict(E=1.0))
    nodes = m.add_beam("b", (0, 0, 0), (1, 0, 0), elements=2, section=SECTION)
    assert nodes == ("b.n0", "b.n1", "b.n2")
    with pytest.raises(ValueError, match="unknown beam node"):
        m.add_node_weld("w", "b.n7")
    with pytest.raises(ValueError, match="not along the initial slope"):
        m.add_node_weld("w", "b.n0", direction=(0, 1, 0))
    with pytest.raises(ValueError, match="force"):
        m.add_node_load("f", "b.n2", (0.0, 1.0))
    with pytest.raises(ValueError, match="load 'ft'.*follower force is a number F_t"):
        m.add_node_load("ft", "b.n2", (1.0, 0.0, 0.0), follower=True)
    m.add_node_load("pull", "b.n0", 2.5, follower=True, xi=0.5)
    with pytest.raises(ValueError, match="unknown body"):
        m.add_beam_body_pin("p", "b.n1", "nobody")
    m.add_beam_line_load("wind", "b", (0.5, -0.25, -1.0))
    mech, params, q0, _ = m.build()
    assert mech.coordinate_index("b.n2.z_x") == mech.coordinate_index("b.n2.x") + 5
    np.testing.assert_array_equal(mech.get(params, "b.n0.line_load"), [0.5, -0.25, -1.0])
    assert (float(mech.get(params, "pull.force_t")), float(mech.get(params, "pull.xi"))) == (2.5, 0.5)
    # parameter checks: a line load of any sign is valid (it was refused as 'must be >= 0'
    # before this change, planar too); a negative E is refused naming the leaf
    from jaxmbs.core.validate import check_params

    check_params(mech, params)
    with pytest.raises(ValueError, match="b.n1.E"):
        check_params(mech, mech.replace(params, {"b.n1.E": -1.0}))


def test_geometry3d_and_draw3d_show_a_deformed_cable_with_a_body(tmp_path):
    """A cable hung from the ground holding a ball (spherical pins at a node and at a
    material point) is drawn in 3D: with its nodes placed on a circular arc in a tilted
    plane (radius 0.5 m, 90 deg, exact slopes), the drawn centre line lies on the arc to
    within the cubic Hermite bound R theta_e^4 / 384 (theta_e the element's angle), passes
    through the nodes exactly, and the pins are drawn at the body point and the node."""
    import matplotlib
    matplotlib.use("Agg")
    from jaxmbs import plot as P
    from jaxmbs.spatial.draw import draw3d, geometry3d

    m = jaxmbs.SpatialModel(gravity=(0.0, 0.0, -9.81))
    nodes = m.add_beam("c", (0.1, 0.0, 0.0), (0.1, 0.0, -1.0), elements=4, section=SECTION)
    m.add_node_pin("hang", nodes[0])
    m.add_body("ball", mass=2.0, inertia=(0.02, 0.02, 0.02), position=(0.1, 0.0, -0.975))
    m.add_beam_body_pin("hold", nodes[3], "ball", xi=0.5, point=(0.0, 0.0, 0.1))
    mech, params, q0, _ = m.build()
    q = np.array(q0, float)
    R, span = 0.5, np.pi / 2
    u, w = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.6, -0.8])  # the arc's plane
    C = np.array([0.1, 0.0, 0.0]) - R * u
    for k in range(5):
        a = span * k / 4
        i = mech.coordinate_index(f"c.n{k}.x")
        q[i:i + 6] = [*(C + R * (np.cos(a) * u + np.sin(a) * w)), *(R * span * (-np.sin(a) * u + np.cos(a) * w))]
    g = geometry3d(mech, params, q)
    (name, line, nd), = g["cables"]
    assert name == "c" and g["particles"] == []
    np.testing.assert_array_equal(line[::P.BEAM_SAMPLES - 1], nd)
    err = np.max(np.abs(np.linalg.norm(line - C, axis=1) - R))
    assert err <= 1.001 * R * (span / 4) ** 4 / 384, err
    joints = {n: p for n, _, p, _ in g["joints"]}
    np.testing.assert_allclose(joints["hang"], nd[0], atol=1e-15)
    ball = [b for b in g["bodies"] if b[0] == "ball"][0]
    np.testing.assert_allclose(joints["hold"], ball[1] + ball[2] @ np.array([0.0, 0.0, 0.1]), atol=1e-15)
    ax = draw3d(mech, params, q)
    ax.figure.savefig(tmp_path / "cable.png")
    assert (tmp_path / "cable.png").stat().st_size > 0
