"""Shear-deformable planar beams (jaxmbs.flexible.reissner, `Model.add_shear_beam`):
element kernels against autodiff, the consistent mass against the Hessian of the kinetic
energy, and closed forms independent of the element:

* linear cantilever tip deflection vs Timoshenko P L^3 / (3 E I) + P L / (k G A), thick
  (L/h = 5) and slender (L/h = 100, 1000: no shear locking), 32 elements; the linear
  element with one-point shear integration has, in the linear theory, nodal rotations
  that are exact and a tip deflection that is the trapezoidal rule of them, i.e. exactly
  w_T - P L^3 / (12 E I n^2) whatever G (derived in the test's docstring): checked too;
* large deflection (alpha = P L^2 / E I = 1, 2) vs the elastica of tests/reference
  (large G A, 32 elements);
* natural frequencies: slender (L/h = 1000) vs Euler-Bernoulli beta_n L, thick (L/h = 5)
  vs the Timoshenko cantilever frequency equation (tests/reference/timoshenko.py), from
  the generalised eigenproblem of the assembled K (the Hessian of U) and M, and (slow) from
  `jaxmbs.linearize` + `jaxmbs.modes` of the clamped model;
* an undamped flexible pendulum (pinned to the ground, and a beam welded to a rigid hub
  on a revolute) conserving energy to RK4's order.

Measured on this tree (float64): see the figures quoted in each test. The default run
covers the kernels, the linear statics, the elastica and the K, M frequencies; the
`jaxmbs.linearize` frequencies, the pendulums' energy and the float32 simulation are
marked slow (compiles of `simulate` and `linearize`).
"""
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs
from jaxmbs.flexible import reissner as R

sys.path.insert(0, str(Path(__file__).resolve().parent / "reference"))
from elastica import beta_L, elastica_tip  # noqa: E402
from timoshenko import timoshenko_cantilever_omegas  # noqa: E402


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _random_elements(seed=0, k=6):
    rng = np.random.default_rng(seed)
    e = jnp.asarray(rng.normal(size=(k, 2, 3)))
    L = jnp.asarray(rng.uniform(0.2, 2.0, k))
    EA, GAs, EI = (jnp.asarray(rng.uniform(lo, hi, k)) for lo, hi in ((1, 1e3), (1, 5e2), (0.1, 2)))
    return e, L, EA, GAs, EI


def _strain_vector(e, L):
    g1, g2, kap = R.element_strains(e, L)[0]
    return jnp.stack([g1, g2, kap], -1)


@jax.jit
def _strain_jacobian(e, L):
    """d(Gamma_1, Gamma_2, kappa)/de (k, 3, 2, 3) by autodiff."""
    return jax.vmap(jax.jacfwd(lambda x, l: _strain_vector(x[None], l[None])[0]))(e, L)


def test_element_forces_are_minus_grad_of_strain_energy_and_damping_is_strain_rate():
    e, L, EA, GAs, EI = _random_elements()
    Q = R.element_forces(e, L, EA, GAs, EI)
    g = jax.jit(jax.grad(lambda x: jnp.sum(R.element_energy(x, L, EA, GAs, EI))))(e)
    np.testing.assert_allclose(Q, -g, rtol=1e-10, atol=1e-10 * float(jnp.max(jnp.abs(g))))
    # damping: -beta L J^T diag(EA, GAs, EI) J ed, J = d(Gamma_1, Gamma_2, kappa)/de (autodiff)
    rng = np.random.default_rng(1)
    ed = jnp.asarray(rng.normal(size=e.shape))
    beta = jnp.asarray(rng.uniform(0.01, 0.1, e.shape[0]))
    Qd = R.element_forces(e, L, EA, GAs, EI, ed, beta) - Q
    J = _strain_jacobian(e, L)  # (k, 3, 2, 3)
    rate = jnp.einsum("ksab,kab->ks", J, ed)
    np.testing.assert_allclose(rate, jnp.stack(R.element_strains(e, L, ed)[3], -1), rtol=1e-12, atol=1e-12)
    D = jnp.stack([EA, GAs, EI], -1)
    want = -(beta * L)[:, None, None, None] * jnp.einsum("ksab,ks->kab", J, D * rate)[:, None]
    np.testing.assert_allclose(Qd, want[:, 0], rtol=1e-10, atol=1e-12)
    assert float(jnp.sum(Qd * ed)) < 0
    # objective: a rigid rotation rate (omega z x r, omega) makes no damping force
    w = 0.7
    edr = jnp.stack([-w * e[..., 1], w * e[..., 0], jnp.full(e.shape[:2], w)], -1)
    np.testing.assert_allclose(R.element_forces(e, L, EA, GAs, EI, edr, beta) - Q, 0.0, atol=1e-10)


def test_strain_energy_of_rigid_motion_is_zero_and_of_pure_shear_is_kGA():
    L = jnp.asarray([0.7])
    th = 0.9
    t = np.array([np.cos(th), np.sin(th)])
    r0 = np.array([0.3, -1.2])
    e = jnp.asarray([[[*r0, th + 2 * np.pi], [*(r0 + 0.7 * t), th + 2 * np.pi]]])
    args = (jnp.asarray([1e6]), jnp.asarray([1e5]), jnp.asarray([1.0]))
    assert abs(float(R.element_energy(e, L, *args)[0])) < 1e-18
    # the sections turned by gamma against the (unchanged) centre line: pure shear strain
    # Gamma_2 = -sin(gamma), Gamma_1 = cos(gamma) - 1
    gam = 0.01
    es = e.at[:, :, 2].add(gam)
    U = float(R.element_energy(es, L, *args)[0])
    want = 0.5 * 0.7 * (1e6 * (np.cos(gam) - 1) ** 2 + 1e5 * np.sin(gam) ** 2)
    assert abs(U / want - 1) < 1e-12


def test_consistent_mass_is_the_hessian_of_the_kinetic_energy_and_constant():
    rng = np.random.default_rng(2)
    k = 3
    L = jnp.asarray(rng.uniform(0.2, 1.5, k))
    rhoA = jnp.asarray(rng.uniform(0.5, 3.0, k))
    rhoI = jnp.asarray(rng.uniform(0.01, 0.1, k))
    xg, wg = np.polynomial.legendre.leggauss(3)
    xg, wg = 0.5 * (xg + 1), 0.5 * wg

    def T(ed, l, ra, ri):  # ed (6,): rates of (x, y, theta) of both nodes, linear in xi
        v = (1 - xg)[:, None] * ed[None, :3] + xg[:, None] * ed[None, 3:]
        dens = ra * jnp.sum(v[:, :2] ** 2, -1) + ri * v[:, 2] ** 2
        return 0.5 * l * jnp.sum(wg * dens)

    H = jax.jit(jax.vmap(jax.hessian(T), (None, 0, 0, 0)))(jnp.zeros(6), L, rhoA, rhoI)
    np.testing.assert_allclose(R.element_mass(L, rhoA, rhoI), H, rtol=1e-13, atol=1e-15)
    # the body family's assembled mass (4 elements, last node: no element) is constant
    # and carries the whole beam's mass in a rigid translation
    fam = R.ReissnerBeam()
    k = 5
    p = {f: jnp.full(k, v) for f, v in dict(rho=2.0, area=0.1, E=1.0, G=1.0, I=1e-3,
                                            shear_factor=KS, alpha=0.0, beta=0.0).items()}
    p["length"] = jnp.asarray([0.25] * 4 + [0.0])
    X = jnp.asarray(rng.normal(size=(k, 3)))
    M0, M1 = fam.mass_part(p, X).dense(), fam.mass_part(p, 2 * X + 1).dense()
    np.testing.assert_array_equal(M0, M1)
    ones = jnp.tile(jnp.asarray([0.0, 1.0, 0.0]), k)
    assert abs(float(ones @ M0 @ ones) - 2.0 * 0.1 * 1.0) < 1e-14
    spin = jnp.tile(jnp.asarray([0.0, 0.0, 1.0]), k)      # rotary inertia rho I L
    assert abs(float(spin @ M0 @ spin) - 2.0 * 1e-3 * 1.0) < 1e-15


# ------------------------------------------------------------ the cantilever models
L_BEAM, E_MOD, NU, RHO, KS = 1.0, 1.0e6, 0.3, 1.0e3, 5.0 / 6.0
G_MOD = E_MOD / (2 * (1 + NU))


def _section(slenderness, **extra):
    """A rectangular section b = 1 m, h = L / slenderness, E = 1 MPa, nu = 0.3."""
    h = L_BEAM / slenderness
    return dict(E=E_MOD, nu=NU, rho=RHO, A=h, I=h**3 / 12, **extra)


def _cantilever(n, section):
    """(mech, params, q0, v0, tip): clamped at the origin (add_node_weld), along +x, a tip
    load 'tip.force' (0 N)."""
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    nodes = m.add_shear_beam("beam", (0.0, 0.0), (L_BEAM, 0.0), elements=n, section=section)
    m.add_node_weld("clamp", nodes[0])
    m.add_node_load("tip", nodes[-1], (0.0, 0.0))
    return (*m.build(), nodes[-1])


def test_linear_cantilever_matches_timoshenko_thick_and_slender_without_locking():
    """Tip deflection under a tip load P, 32 elements, from the linear statics K u = f of
    the assembled stiffness (the Hessian of U at the straight state, node 0 clamped).
    Reference: Timoshenko w_T = P L^3 / (3 E I) + P L / (k G A). Relative error measured:
    -2.37e-4 (L/h = 5, where the shear part is 3.0 % of w_T), -2.44e-4 (L/h = 100 and
    1000): the same at every slenderness, no locking. The discrete value is known in
    closed form: with one-point shear sampling each element carries the exact constant
    shear force P and a bending moment equal to the exact one at its midpoint, so the
    nodal rotations (midpoint rule of a linear moment) are exact and the tip deflection
    is the trapezoidal rule of the quadratic rotation plus P L / (k G A):
    w_n = w_T - P L^3 / (12 E I n^2), independent of G; checked to 1e-9 relative
    (measured <= 1e-12). The thick case through the model (`add_node_weld`,
    `add_node_load`, `jaxmbs.equilibrium`): the slow test below."""
    n = 32
    for slender in (5.0, 100.0, 1000.0):
        s = _section(slender)
        EI, kGA = E_MOD * s["I"], KS * G_MOD * s["A"]
        P = 1e-4 * EI / L_BEAM**2
        K, _ = _clamped_K_M(n, s)
        f = np.zeros(K.shape[0])
        f[-2] = P                                # the tip node's y
        w = np.linalg.solve(K, f)[-2]
        w_T = P * L_BEAM**3 / (3 * EI) + P * L_BEAM / kGA
        w_n = w_T - P * L_BEAM**3 / (12 * EI * n * n)
        assert abs(w / w_T - 1) < 3e-4, (slender, w / w_T - 1)
        assert abs(w / w_n - 1) < 1e-9, (slender, w / w_n - 1)
        if slender == 5.0:  # the shear part matters here: Euler-Bernoulli alone is 3 % off
            assert abs(w / (w_T - P * L_BEAM / kGA) - 1) > 0.02


def test_large_deflection_matches_the_elastica():
    """alpha = P L^2 / E I = 1, 2 (load in 2 steps each), 32 elements, a slender section
    with large shear and axial stiffness (E A / E I = 1e6 / m^2, k G A / E I = 3.2e5 / m^2):
    tip deflection, shortening and section rotation within 1e-4 of the elastica
    (measured max 5.5e-5 at alpha = 1, 8.9e-5 at alpha = 2; 16 elements: 3.6e-4, O(h^2))."""
    sec = dict(E=1.0e9, A=1.0e-3, I=1.0e-9, rho=1.0e3, nu=0.3)
    mech, params, q, _, tip = _cantilever(32, sec)
    i = mech.coordinate_index(f"{tip}.x")
    a_prev = 0.0
    for a in (1.0, 2.0):
        for s in np.linspace(a_prev, a, 3)[1:]:
            p = mech.replace(params, {"tip.force": [0.0, s]})  # E I = 1 N m^2, L = 1 m
            q = jaxmbs.equilibrium(mech, p, q, tol=1e-8).q
        a_prev = a
        got = np.array([q[i + 1], L_BEAM - q[i], q[i + 2]])
        err = np.abs(got - np.array(elastica_tip(a)))
        assert err.max() < 1e-4, (a, err)


@jax.jit
@jax.hessian
def _hessian_U(q, L, EA, GAs, EI):
    """The Hessian of the strain energy (J) of a chain of elements in q (3 (n + 1),)."""
    X = q.reshape(-1, 3)
    return jnp.sum(R.element_energy(jnp.stack([X[:-1], X[1:]], 1), L, EA, GAs, EI))


def _clamped_K_M(n, section):
    """Assembled stiffness (Hessian of the strain energy at the straight state) and mass
    of n elements, node 0 clamped (its rows and columns removed)."""
    s = section
    G = s["E"] / (2 * (1 + s["nu"]))
    L = jnp.full(n, L_BEAM / n)
    EA, GAs, EI = (jnp.full(n, v) for v in (s["E"] * s["A"], KS * G * s["A"], s["E"] * s["I"]))
    q0 = jnp.stack([jnp.linspace(0.0, L_BEAM, n + 1), jnp.zeros(n + 1), jnp.zeros(n + 1)], -1).reshape(-1)

    K = np.asarray(_hessian_U(q0, L, EA, GAs, EI))
    Me = np.asarray(R.element_mass(L, jnp.full(n, s["rho"] * s["A"]), jnp.full(n, s["rho"] * s["I"])))
    M = np.zeros_like(K)
    for k in range(n):
        M[3 * k:3 * k + 6, 3 * k:3 * k + 6] += Me[k]
    return K[3:, 3:], M[3:, 3:]


def _bending_omegas(K, M, count):
    """The lowest `count` angular frequencies of the transverse modes (rad/s)."""
    from scipy.linalg import eigh

    lam, vec = eigh(K, M)
    ys = vec[1::3]                              # transverse components
    xs = vec[0::3]
    bend = np.sum(ys**2, 0) > np.sum(xs**2, 0)  # drop the axial modes
    return np.sqrt(lam[bend][:count])


def test_frequencies_slender_euler_bernoulli_and_thick_timoshenko():
    """64 elements. Slender (L/h = 1000) vs Euler-Bernoulli beta_n L: relative errors
    measured 3.5e-5, 6.0e-4, 1.7e-3, 3.4e-3 (modes 1-4; O(h^2): 1.1e-4 .. 1.4e-2 at 32
    elements). Thick (L/h = 5) vs the roots of the Timoshenko cantilever frequency
    equation (shear and rotary inertia put them 3.0, 16.7, 29.2, 40.0 % below
    Euler-Bernoulli here): measured 2.9e-5, 4.7e-4, 1.1e-3, 1.9e-3 (32 elements: 1.2e-4,
    1.9e-3, 4.5e-3, 7.8e-3)."""
    n = 64
    s = _section(1000.0)
    K, M = _clamped_K_M(n, s)
    w = _bending_omegas(K, M, 4)
    ref = np.asarray(beta_L(4)) ** 2 / L_BEAM**2 * np.sqrt(E_MOD * s["I"] / (RHO * s["A"]))
    rel = w / ref - 1
    np.testing.assert_array_less(np.abs(rel), [5e-5, 1e-3, 2.5e-3, 5e-3])
    s = _section(5.0)
    K, M = _clamped_K_M(n, s)
    w = _bending_omegas(K, M, 4)
    ref_T = timoshenko_cantilever_omegas(4, L_BEAM, E_MOD * s["I"], KS * G_MOD * s["A"],
                                         RHO * s["A"], RHO * s["I"], grid=1500)
    rel = w / ref_T - 1
    np.testing.assert_array_less(np.abs(rel), [5e-5, 1e-3, 2.5e-3, 5e-3])


@pytest.mark.slow
def test_model_statics_and_frequencies_agree_with_K_M_and_timoshenko():
    """The clamped thick cantilever (L/h = 5, 32 elements) through the model
    (`add_node_weld`, `add_node_load`): `jaxmbs.equilibrium` at P L^2 / E I = 1e-4 gives
    the tip deflection of the linear K u = f to 1e-6 (the geometric nonlinearity; measured
    1.2e-9); `jaxmbs.linearize` + `jaxmbs.modes` (weld constraint, consistent mass) give
    frequencies equal to those of the K, M eigenproblem with node 0 removed (to 1e-8),
    the first four bending ones within the 32-element mesh error of the Timoshenko
    frequency equation's roots (measured 1.2e-4, 1.9e-3, 4.5e-3, 7.8e-3)."""
    n = 32
    s = _section(5.0)
    mech, params, q0, _, tip = _cantilever(n, s)
    K, M = _clamped_K_M(n, s)
    P = 1e-4 * E_MOD * s["I"] / L_BEAM**2
    f = np.zeros(K.shape[0])
    f[-2] = P
    w = np.linalg.solve(K, f)[-2]
    q = jaxmbs.equilibrium(mech, mech.replace(params, {"tip.force": [0.0, P]}), q0, tol=1e-8).q
    rel = float(q[mech.coordinate_index(f"{tip}.y")]) / w - 1
    assert abs(rel) < 1e-6
    lin = jaxmbs.linearize(mech, params, q0, jnp.zeros(mech.n_vel))
    w = np.sort(np.asarray(jaxmbs.modes(lin).frequencies))
    w = w[w > 1e-6][::2]                      # each undamped mode is a pair +- i w
    from scipy.linalg import eigh
    w_all = np.sqrt(eigh(K, M, eigvals_only=True))
    np.testing.assert_allclose(w[:8], w_all[:8], rtol=1e-8)
    wb = _bending_omegas(K, M, 4)
    ref_T = timoshenko_cantilever_omegas(4, L_BEAM, E_MOD * s["I"], KS * G_MOD * s["A"],
                                         RHO * s["A"], RHO * s["I"], grid=1500)
    np.testing.assert_array_less(np.abs(wb / ref_T - 1), [2e-4, 3e-3, 7e-3, 1.2e-2])


SEC_PENDULUM = dict(E=0.7e6, A=0.0018, I=1.215e-8, rho=5540.0, nu=0.3)  # Berzeri-Shabana's, nu


def _pendulums(n=4):
    """Two undamped flexible pendulums under gravity, released from rest horizontally:
    beam 'a' pinned to the ground at node 0 (`add_node_pin`); beam 'b' clamped to a rigid
    hub (`add_node_weld` to a body) that turns on a revolute to the ground, a rigid tip
    mass pinned to its last node (`add_node_pin` to a body)."""
    m = jaxmbs.Model(gravity=(0.0, -9.81))
    a = m.add_shear_beam("a", (0.0, 0.0), (1.2, 0.0), elements=n, section=SEC_PENDULUM)
    m.add_node_pin("pin", a[0])
    m.add_body("hub", mass=1.0, inertia=0.05, position=(0.0, -3.0))
    m.add_revolute("axle", "ground", "hub", at=(0.0, -3.0))
    b = m.add_shear_beam("b", (0.0, -3.0), (1.2, -3.0), elements=n, section=SEC_PENDULUM)
    m.add_node_weld("clamp", b[0], "hub")
    m.add_body("tipmass", mass=0.5, inertia=1e-3, position=(1.2, -3.0))
    m.add_node_pin("tip_pin", b[-1], "tipmass")
    return m.build(), a, b


@pytest.mark.slow
def test_flexible_pendulums_conserve_energy_to_rk4_order():
    """0.3 s of RK4 with projection, 4 elements per beam: the energy drift (kinetic +
    gravity + strain, max |E - E0| / max kinetic) measured 2.5e-11 at dt = 2.5e-4 s and
    9.5e-13 at dt = 1.25e-4 s (ratio 26; fourth order: 16); the weld keeps the hub's angle
    and the clamped section's angle equal, the pins keep the points together."""
    (mech, params, q0, v0), a, b = _pendulums()
    drifts = []
    for dt in (2.5e-4, 1.25e-4):
        tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 0.3), dt, save_every=int(round(0.01 / dt)))
        assert int(np.max(np.asarray(tr.status))) == 0
        E = jax.vmap(lambda q, v: jaxmbs.energy(mech, params, q, v))(tr.q, tr.v)
        drifts.append(float(jnp.max(jnp.abs(E["total"] - E["total"][0])) / jnp.max(E["kinetic"])))
    assert drifts[0] < 1e-10 and drifts[0] / drifts[1] > 12, drifts
    q = np.asarray(tr.q[-1])
    ix = lambda nm: mech.coordinate_index(nm)
    np.testing.assert_allclose(q[ix("hub.theta")], q[ix(f"{b[0]}.theta")], atol=1e-10)
    np.testing.assert_allclose(q[ix(f"{b[0]}.x"):ix(f"{b[0]}.x") + 2], [0.0, -3.0], atol=1e-10)
    np.testing.assert_allclose(q[ix("tipmass.x"):ix("tipmass.x") + 2],
                               q[ix(f"{b[-1]}.x"):ix(f"{b[-1]}.x") + 2], atol=1e-10)
    np.testing.assert_allclose(q[ix(f"{a[0]}.x"):ix(f"{a[0]}.x") + 2], [0.0, 0.0], atol=1e-10)
    assert q[ix(f"{a[-1]}.y")] < -0.3 and abs(q[ix("hub.theta")]) > 0.05  # they did swing


@pytest.mark.slow
def test_float32_runs():
    """Without x64 the model builds and simulates in float32 (finite, status 0)."""
    with jax.enable_x64(False):
        (mech, params, q0, v0), a, _ = _pendulums(2)
        tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 0.02), 5e-4, save_every=10)
        assert tr.q.dtype == jnp.float32
        assert np.all(np.isfinite(np.asarray(tr.q))) and int(np.max(np.asarray(tr.status))) == 0
        assert float(tr.q[-1, mech.coordinate_index(f"{a[-1]}.y")]) < 0


def test_float32_kernels():
    e, L, EA, GAs, EI = (x.astype(jnp.float32) for x in _random_elements())
    with jax.enable_x64(False):
        Q = jax.jit(R.element_forces)(e, L, EA, GAs, EI, e * 0.1, L * 0.01)
        M = jax.jit(R.element_mass)(L, EA * 0 + 1, EI * 0 + 0.1)
    assert Q.dtype == M.dtype == jnp.float32 and np.all(np.isfinite(np.asarray(Q)))


def test_builder_section_and_joint_api():
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    base = dict(E=1.0, rho=1.0, A=1.0, I=1.0)
    with pytest.raises(ValueError, match="G or nu"):
        m.add_shear_beam("b", (0, 0), (1, 0), elements=2, section=base)
    with pytest.raises(ValueError, match="G or nu"):
        m.add_shear_beam("b", (0, 0), (1, 0), elements=2, section=dict(base, G=1.0, nu=0.3))
    with pytest.raises(ValueError, match="nu"):
        m.add_shear_beam("b", (0, 0), (1, 0), elements=2, section=dict(base, nu=0.7))
    with pytest.raises(ValueError, match="elements"):
        m.add_shear_beam("b", (0, 0), (1, 0), elements=0, section=dict(base, G=0.4))
    nodes = m.add_shear_beam("b", (0, 0), (0, 2), elements=2, section=dict(base, nu=0.25, k=0.9, beta=0.01))
    m.add_node_weld("w", nodes[0])
    m.add_body("body", 1.0, 0.1, position=(0.0, 2.0))
    m.add_weld("w2", "body", nodes[-1])            # the nodes are planar frames
    m.add_beam_line_load("ll", "b", (0.3, 0.0))
    mech, params, q0, _ = m.build()
    assert mech.get(params, "b.n0.G") == 0.4 and mech.get(params, "b.n1.shear_factor") == 0.9
    assert mech.get(params, "b.n2.length") == 0 and mech.get(params, "b.n0.length") == 1.0
    np.testing.assert_allclose(q0[mech.coordinate_index("b.n1.theta")], np.pi / 2)
    assert mech.get(params, "b.n1.beta") == 0.01
    np.testing.assert_allclose(mech.get(params, "b.n0.line_load"), [0.3, 0.0])


@pytest.mark.slow
def test_tip_moment_rolls_the_cantilever_into_a_circular_arc():
    """A tip moment M (`add_node_torque` on a shear-beam node: `add_load`'s torque) bends
    the cantilever (16 elements, large G A and E A) into an arc, stepped up to
    M L / E I = pi (a half circle). The element reproduces it exactly in its own terms:
    each element carries kappa = M / E I and no axial or shear strain, so the tip section
    turns by exactly M L / E I and the nodes lie on the circle through the origin of radius
    R' = L_e / (2 sin(kappa L_e / 2)) (chords of length L_e): both to 1e-8; the tip is
    within O(h^2) of the continuum arc of radius E I / M (1.02e-3 m at L = 1 m).
    The clamp's reaction (`jaxmbs.reactions`) is the moment -M and no force."""
    n, EI = 16, 1.0
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    nodes = m.add_shear_beam("beam", (0.0, 0.0), (L_BEAM, 0.0), elements=n,
                             section=dict(E=1.0e9, A=1.0e-3, I=1.0e-9, rho=1.0e3, nu=0.3))
    m.add_node_weld("clamp", nodes[0])
    m.add_node_torque("moment", nodes[-1], 0.0)
    mech, params, q, _ = m.build()
    i = mech.coordinate_index(f"{nodes[-1]}.x")
    for M in np.linspace(0.0, np.pi, 9)[1:]:
        p = mech.replace(params, {"moment.torque": M})
        eq = jaxmbs.equilibrium(mech, p, q, tol=1e-8)
        q = eq.q
    x, y, th = (float(v) for v in q[i:i + 3])
    kap, Le = M / EI, L_BEAM / n
    assert abs(th - kap * L_BEAM) < 1e-8
    Rp = Le / (2 * np.sin(kap * Le / 2))
    np.testing.assert_allclose([x, y], [Rp * np.sin(th), Rp * (1 - np.cos(th))], atol=1e-8)
    R0 = EI / M
    cont = np.array([R0 * np.sin(th), R0 * (1 - np.cos(th))])
    assert abs(np.hypot(x - cont[0], y - cont[1]) - 2 * (Rp - R0)) < 1e-8  # 1.02e-3 m
    r = jaxmbs.reactions(mech, p, q, eq.lam)["clamp"]
    np.testing.assert_allclose(r["force"], [0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(r["moment"], -M, rtol=1e-7)


def test_plot_geometry_draws_shear_beams(tmp_path):
    """`jaxmbs.plot.geometry` lists a shear beam as the polyline through its nodes (its
    elements are linear) and its weld to a body as a body attachment; `draw` renders it."""
    import matplotlib
    matplotlib.use("Agg")
    from jaxmbs import plot as P

    m = jaxmbs.Model()
    nodes = m.add_shear_beam("b", (0, 0), (1, 0), elements=3, section=_section(20.0))
    m.add_node_pin("pin", nodes[0])
    m.add_body("hub", 1.0, 0.1, position=(1.0, 0.0))
    m.add_node_weld("w", nodes[-1], "hub")
    mech, params, q0, _ = m.build()
    q = np.asarray(q0).copy()
    q[mech.coordinate_index("b.n1.y")] = 0.1
    g = P.geometry(mech, params, q)
    assert [b[0] for b in g["beams"]] == ["b"]
    np.testing.assert_allclose(g["beams"][0][1], [[0, 0], [1 / 3, 0.1], [2 / 3, 0], [1, 0]], atol=1e-15)
    assert [r[0] for r in g["revolutes"]] == ["pin"]
    P.draw(mech, params, q).figure.savefig(tmp_path / "shear.png")
    assert (tmp_path / "shear.png").stat().st_size > 0
