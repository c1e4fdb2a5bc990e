"""Floating-frame-of-reference (FFR) bodies with modal reduction (jaxmbs.flexible.ffr).

Independent references: the closed-form consistent mass of an Euler-Bernoulli element
(Przemieniecki) and the rigid beam's mass, first and second moment (for the Gauss-point
shape integrals); the cantilever's Euler-Bernoulli eigenvalues beta_n L (frequencies);
the linear tip deflection P L^3 / 3 EI and rotation P L^2 / 2 EI (statics); energy
conservation of an undamped free motion (dynamics); central differences (gradients).
The family kernels (M(q), the quadratic-velocity forces, Jacobians and gamma of the
joints) are checked against autodiff in tests/families/test_conformance.py.
"""
import jax
import numpy as np
import pytest

import jaxmbs
from jaxmbs.flexible import ffr

L, EI, RHO_A = 1.0, 1.0, 1.0
AREA, INERTIA = 1e-2, 1e-6
SECTION = dict(E=EI / INERTIA, rho=RHO_A / AREA, A=AREA, I=INERTIA)
BETA_L = np.array([1.875104068711961, 4.694091132974175, 7.854757438237613])


def _cantilever(basis, modes, elements=8, load=None):
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    m.add_ffr_beam("b", (0.0, 0.0), (L, 0.0), section=SECTION, elements=elements, modes=modes,
                   basis=basis)
    m.add_weld("clamp", "ground", "b", at=(0.0, 0.0))
    if load is not None:
        m.add_load("P", "b", force=(0.0, load), at=(L, 0.0))
    return m, m.build()


def test_shape_integrals_against_closed_form_element_matrices():
    n, A, I = 3, 0.02, 3e-6
    fe = ffr.beam_fe(L, n, A, I)
    h = L / n
    me = A * h / 420 * np.array([[156, 22 * h, 54, -13 * h], [22 * h, 4 * h * h, 13 * h, -3 * h * h],
                                 [54, 13 * h, 156, -22 * h], [-13 * h, -3 * h * h, -22 * h, 4 * h * h]])
    ma = A * h / 6 * np.array([[2.0, 1.0], [1.0, 2.0]])
    M = np.zeros((3 * (n + 1),) * 2)
    for k in range(n):
        ia, ib = [3 * k, 3 * k + 3], [3 * k + 1, 3 * k + 2, 3 * k + 4, 3 * k + 5]
        M[np.ix_(ia, ia)] += ma
        M[np.ix_(ib, ib)] += me
    np.testing.assert_allclose(fe["mass"], M, rtol=1e-12, atol=1e-15)
    Phi = ffr.modal_basis(fe, "clamped", 4)
    s = ffr.shape_integrals(fe, Phi)
    np.testing.assert_allclose(s["vol"], A * L, rtol=1e-13)
    np.testing.assert_allclose(s["s0"], [A * L**2 / 2, 0.0], rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(s["J0"], A * L**3 / 3, rtol=1e-13)
    np.testing.assert_allclose(s["Mff"], Phi.T @ M @ Phi, rtol=1e-12, atol=1e-15)
    # the normal modes are mass- and stiffness-orthogonal
    off = ~np.eye(4, dtype=bool)
    assert np.max(np.abs(s["Mff"][off])) < 1e-12 * np.max(np.abs(s["Mff"]))
    assert np.max(np.abs(s["Kff"][off])) < 1e-9 * np.max(np.abs(s["Kff"]))
    # free-interface modes satisfy the mean-axis conditions: no linear or angular momentum
    # of the deformation about the undeformed body
    sf = ffr.shape_integrals(fe, ffr.modal_basis(fe, "free", 4))
    assert np.max(np.abs(sf["S1"])) < 1e-12 and np.max(np.abs(sf["c0"])) < 1e-12


@pytest.mark.parametrize("basis,modes", [("clamped", 4), ("craig_bampton", 8)])
def test_cantilever_frequencies_match_euler_bernoulli(basis, modes):
    """Linearised about the straight state (jaxmbs.linearize / modes): the first three
    natural frequencies of the FFR cantilever (8 elements) against beta_n L of the
    Euler-Bernoulli cantilever."""
    _, (mech, params, q0, v0) = _cantilever(basis, modes)
    f = np.unique(np.round(np.asarray(jaxmbs.modes(jaxmbs.linearize(mech, params, q0, v0)).frequencies), 9))
    f = f[f > 0][:3]
    wa = BETA_L**2 / L**2 * np.sqrt(EI / RHO_A)  # rad/s, as Modes.frequencies
    np.testing.assert_allclose(f, wa, rtol=1e-3)


def test_craig_bampton_tip_load_statics_is_exact():
    """A dead tip load on the Craig-Bampton cantilever: the end's static modes hold the
    exact finite-element (= Euler-Bernoulli, nodal load) tip deflection P L^3 / 3 EI and
    rotation P L^2 / 2 EI. The linear model: the frame's rotation is the small rotation."""
    P = 1e-4
    m, (mech, params, q0, v0) = _cantilever("craig_bampton", 4, elements=4, load=-P)
    res = jaxmbs.equilibrium(mech, params, q0)
    q = np.asarray(res.q)
    d = m.ffr_data("b")
    N, slope, _ = ffr.beam_rows([L], L, d["elements"])
    eta = q[mech.coordinate_index("b.eta1"): mech.coordinate_index("b.eta1") + 4]
    np.testing.assert_allclose(N[0, 1] @ d["Phi"] @ eta, -P * L**3 / (3 * EI), rtol=1e-9)
    np.testing.assert_allclose(slope[0] @ d["Phi"] @ eta, -P * L**2 / (2 * EI), rtol=1e-9)
    # deformed shape and strain output: the tip of the centre line, and the curvature at
    # the root against P L / EI (the linear bending moment)
    i0 = mech.coordinate_index("b.x")
    line = np.asarray(ffr.centerline(q[i0: i0 + 7], d, points=5))
    np.testing.assert_allclose(line[-1], [L, -P * L**3 / (3 * EI)], rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(ffr.curvature(q[i0: i0 + 7], d, [0.0, L / 2]),
                               [-P * L / EI, -P * L / (2 * EI)], rtol=1e-9)
    # the drawing (jaxmbs.plot.geometry, from Params and q alone) shows the same line
    from jaxmbs import plot
    geo = plot.geometry(mech, params, q)
    (name, drawn, ends), = geo["beams"]
    assert name == "b" and drawn.shape == (ffr.DRAW_POINTS, 2)
    np.testing.assert_allclose(drawn[-1], line[-1], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(geo["grounds"][0], [0.0, 0.0], atol=1e-15)
    # the frame stays clamped (weld rows)
    np.testing.assert_allclose(q[mech.coordinate_index("b.theta")], 0.0, atol=1e-12)


def _pendulum(E=SECTION["E"], basis="free"):
    m = jaxmbs.Model(gravity=(0.0, -9.81))
    m.add_ffr_beam("b", (0.0, 0.0), (L, 0.0), section=dict(SECTION, E=E), elements=4, modes=3,
                   basis=basis)
    m.add_revolute("O", "ground", "b", at=(0.0, 0.0))
    return m.build()


def test_free_swinging_pendulum_conserves_energy():
    """A flexible pendulum (pinned at its start, released horizontally, free-interface
    modes) under RK4: the energy balance error stays at the integrator's level and the
    beam deforms (the elastic coordinates are excited)."""
    mech, params, q0, v0 = _pendulum(E=SECTION["E"] * 50)
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 0.4), 2e-4, save_every=50)
    e = np.asarray(tr.energy)
    scale = 9.81 * RHO_A * L * L / 2
    assert np.max(np.abs(e - e[0])) / scale < 1e-6
    eta = np.asarray(tr.q[:, mech.coordinate_index("b.eta1")])
    assert np.max(np.abs(eta)) > 1e-5
    assert int(np.max(np.asarray(tr.status))) == 0


def test_gradient_wrt_young_modulus_matches_central_differences():
    """d(modal coordinate at t = 0.1 s)/dE through the whole simulation (E a Params leaf)
    against central differences."""
    mech, params, q0, v0 = _pendulum(E=SECTION["E"] * 50)
    i = mech.coordinate_index("b.eta1")

    def out(E):
        p = mech.replace(params, {"b.E": E})
        tr = jaxmbs.simulate(mech, p, q0, v0, (0.0, 0.1), 1e-3, save_every=100)
        return tr.q[-1, i]

    E0 = SECTION["E"] * 50
    g = jax.grad(out)(E0)
    h = E0 * 1e-4
    cd = (out(E0 + h) - out(E0 - h)) / (2 * h)
    np.testing.assert_allclose(g, cd, rtol=1e-6)


def _spun(hub):
    """A clamped-basis FFR beam spun up about its start by a driver (theta = t^2 / 2 +
    2 t): on its own reference frame (hub=False) or through a weld to a driven rigid hub
    pinned at the origin (hub=True); gravity bends it."""
    m = jaxmbs.Model(gravity=(0.0, -9.81))
    m.add_ffr_beam("b", (0.0, 0.0), (L, 0.0), section=dict(SECTION, E=SECTION["E"] * 50),
                   elements=4, modes=3, angular_velocity=2.0)
    profile = jaxmbs.polynomial([0.0, 2.0, 0.5])
    if hub:
        m.add_body("hub", mass=0.3, inertia=0.01, angular_velocity=2.0)
        m.add_revolute("O", "ground", "hub", at=(0.0, 0.0))
        m.drive_angle("spin", "hub", profile)
        m.add_weld("root", "hub", "b", at=(0.0, 0.0))
    else:
        m.add_revolute("O", "ground", "b", at=(0.0, 0.0))
        m.drive_angle("spin", "b", profile)
    return m.build()


def test_planar_driver_acts_on_the_reference_frame():
    """drive_angle (a planar family) on the FFR body's reference frame moves it exactly as
    a weld ('ffr_angle' + 'ffr_point') to a driven rigid hub does (the hub's motion is
    prescribed, so its inertia changes the drive torque only): same modal coordinates."""
    out = []
    for hub in (False, True):
        mech, params, q0, v0 = _spun(hub)
        tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 0.3), 1e-3, save_every=100)
        i = mech.coordinate_index("b.eta1")
        out.append(np.asarray(tr.q[:, i: i + 3]))
        assert int(np.max(np.asarray(tr.status))) == 0
    assert np.max(np.abs(out[0])) > 1e-4  # the beam bends
    np.testing.assert_allclose(out[0], out[1], rtol=1e-8, atol=1e-12)


def test_prismatic_joint_and_spring_on_the_reference_frame():
    """add_prismatic and add_spring (planar families) on an FFR beam's frame: the beam
    slides along its own axis on a spring k, its bending modes not excited by an axial
    motion, so it oscillates as a rigid mass rho A L: x(t) = x0 + a cos(sqrt(k / m) t)."""
    k, a = 4.0, 0.1
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    m.add_ffr_beam("b", (a, 0.0), (L + a, 0.0), section=SECTION, elements=4, modes=3)
    m.add_prismatic("slide", "ground", "b", axis=(1.0, 0.0), at=(a, 0.0))
    m.add_spring("k", "ground", "b", k=k, length=1.0, at_i=(-1.0, 0.0), at_j=(a, 0.0))
    mech, params, q0, v0 = m.build()
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 1.0), 1e-3, save_every=250)
    x = np.asarray(tr.q[:, mech.coordinate_index("b.x")])
    w = np.sqrt(k / (RHO_A * L))
    np.testing.assert_allclose(x, a * np.cos(w * np.asarray(tr.t)), atol=1e-9)
    assert np.max(np.abs(np.asarray(tr.q[:, mech.coordinate_index("b.eta1")]))) < 1e-12


def test_bad_attachments_are_refused_naming_the_problem():
    m = jaxmbs.Model()
    m.add_ffr_beam("b", (0.0, 0.0), (L, 0.0), section=SECTION, elements=2, modes=2)
    m.add_particle("p", mass=1.0, position=(L, 0.0))
    with pytest.raises(ValueError, match="centre line"):
        m.add_revolute("r", "ground", "b", at=(0.5, 0.1))
    with pytest.raises(ValueError, match="centre line"):
        m.add_revolute("r", "ground", "b", at=(1.5, 0.0))
    with pytest.raises(ValueError, match="cannot be welded"):
        m.add_weld("w", "p", "b", at=(L, 0.0))
    with pytest.raises(ValueError, match="only a dead force"):
        m.add_load("f", "b", force=(0.0, 1.0), torque=1.0, at=(L, 0.0))
    with pytest.raises(ValueError, match="modes"):
        m.add_ffr_beam("c", (0.0, 0.0), (L, 0.0), section=SECTION, elements=1, modes=4,
                       basis="craig_bampton")
    m.add_revolute("r", "b", "p", at=(L, 0.0))  # still usable after the refusals
    m.build()


# ----------------------------------------------------------- general finite-element bodies
def truss_stiffness(nodes, bars, k):
    """(2n, 2n) stiffness of pin-jointed bars of axial stiffness k (N/m) between nodes."""
    nodes = np.asarray(nodes, float)
    K = np.zeros((2 * len(nodes),) * 2)
    for a, b in bars:
        d = nodes[b] - nodes[a]
        e = np.zeros(2 * len(nodes))
        e[2 * a: 2 * a + 2], e[2 * b: 2 * b + 2] = -d / np.linalg.norm(d), d / np.linalg.norm(d)
        K += k * np.outer(e, e)
    return K


def test_fe_body_dumbbell_frequency_and_steady_spin():
    """Two point masses (m1 at the origin, m2 at L) joined by a spring k, as a general FE
    body with its one free-interface mode, pinned at m1: the linearised frequency is
    sqrt(k / m2); spinning at W about the pin with the steady stretch
    delta = m2 W^2 L / (k - m2 W^2) (centrifugal force = spring force), it stays there."""
    m1, m2, k, L, W = 1.0, 2.0, 100.0, 1.0, 5.0
    nodes = [[0.0, 0.0], [L, 0.0]]
    K = truss_stiffness(nodes, [(0, 1)], k)

    def build(w):
        m = jaxmbs.Model(gravity=(0.0, 0.0))
        m.add_ffr_body("d", nodes, np.diag([m1, m2]), K, modes=1, angular_velocity=w)
        m.add_revolute("O", "ground", "d", at=(0.0, 0.0))
        return m, m.build()

    _, (mech, params, q0, v0) = build(0.0)
    w = np.asarray(jaxmbs.modes(jaxmbs.linearize(mech, params, q0, v0)).frequencies)
    np.testing.assert_allclose(np.max(w), np.sqrt(k / m2), rtol=1e-10)
    m, (mech, params, q0, v0) = build(W)
    Phi = m.ffr_data("d")["Phi"][:, 0]
    delta = m2 * W**2 * L / (k - m2 * W**2)
    eta = delta / (Phi[2] - Phi[0])  # the mode's stretch; node 0 kept at the pin
    q, v = np.array(q0), np.array(v0)
    i = mech.coordinate_index("d.eta1")
    q[i], q[mech.coordinate_index("d.x")] = eta, -Phi[0] * eta
    v[mech.coordinate_index("d.y")] = -W * Phi[0] * eta
    tr = jaxmbs.simulate(mech, params, q, v, (0.0, 1.0), 1e-3, save_every=100)
    np.testing.assert_allclose(np.asarray(tr.q[:, i]), eta, rtol=1e-10)


def test_fe_body_craig_bampton_truss_matches_the_full_model():
    """A 6-panel Pratt-like truss (lumped masses) pinned at both bottom corners: the FFR
    body reduced by Craig-Bampton (interface: the two pinned nodes) has the full finite-
    element model's lowest frequencies (NumPy eigenproblem of the constrained model): its
    fixed-interface modes are that model's modes. The free-interface basis with as many
    modes is a Ritz approximation: above the exact values (measured: +5.0 %, +6.9 %, +22 %
    for the first three, the supports being enforced through the joints only)."""
    nx, h = 6, 0.2
    nodes = [[i * h, 0.0] for i in range(nx + 1)] + [[i * h, h] for i in range(nx + 1)]
    top = lambda i: nx + 1 + i
    bars = [(i, i + 1) for i in range(nx)] + [(top(i), top(i + 1)) for i in range(nx)] \
        + [(i, top(i)) for i in range(nx + 1)] + [(i, top(i + 1)) for i in range(nx)]
    K = truss_stiffness(nodes, bars, 1e5)
    masses = np.linspace(0.5, 1.5, len(nodes))
    right = nx
    keep = [d for d in range(2 * len(nodes)) if d not in (0, 1, 2 * right, 2 * right + 1)]
    M2 = np.kron(np.diag(masses), np.eye(2))
    lam = np.linalg.eigvals(np.linalg.solve(M2[np.ix_(keep, keep)], K[np.ix_(keep, keep)]))
    ref = np.sqrt(np.sort(lam.real))[:3]
    got = {}
    for basis in ("craig_bampton", "free"):
        m = jaxmbs.Model(gravity=(0.0, 0.0))
        m.add_ffr_body("t", nodes, np.diag(masses), K, modes=6, basis=basis, interface=(0, right))
        m.add_revolute("A", "ground", "t", at=(0.0, 0.0))
        m.add_revolute("B", "ground", "t", at=(nx * h, 0.0))
        mech, params, q0, v0 = m.build()
        w = np.unique(np.round(np.asarray(jaxmbs.modes(jaxmbs.linearize(mech, params, q0, v0)).frequencies), 8))
        got[basis] = w[w > 0][:3]
    np.testing.assert_allclose(got["craig_bampton"], ref, rtol=1e-8)
    assert np.all(got["free"] >= ref * (1 - 1e-9))


def test_fe_body_bad_input_is_refused():
    nodes = [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    K = truss_stiffness(nodes, [(0, 1), (1, 2), (0, 2)], 100.0)
    m = jaxmbs.Model()
    with pytest.raises(ValueError, match="mass"):
        m.add_ffr_body("b", nodes, -np.eye(3), K)
    with pytest.raises(ValueError, match="stiffness"):
        m.add_ffr_body("b", nodes, np.eye(3), K[:4, :4])
    with pytest.raises(ValueError, match="interface"):
        m.add_ffr_body("b", nodes, np.eye(3), K, modes=2, basis="craig_bampton", interface=(0,))
    with pytest.raises(ValueError, match="modes"):
        m.add_ffr_body("b", nodes, np.eye(3), K, modes=4)
    m.add_ffr_body("b", nodes, np.eye(3), K, modes=3)
    with pytest.raises(ValueError, match="one of its nodes"):
        m.add_revolute("r", "ground", "b", at=(0.5, 0.5))
    m.add_revolute("r", "ground", "b", at=(1.0, 0.0))
    m.build()
