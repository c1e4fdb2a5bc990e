"""Joints and loads at material points of ANCF beams (issue 20): pins between material
points of two beams ('beam_beam_point', 3D 'beam3d_beam_point'), welds between them
('beam_beam_point' + 'beam_beam_slope') and to the ground, dead point loads
between nodes ('beam_load', 'beam3d_load') and the sliding joint along a planar beam
('beam_slider', extra coordinate s).

References, independent of jaxmbs's kernels:
* the Hermite shape functions written out here in NumPy (virtual work of a point load);
* Euler-Bernoulli cantilever deflections (linear statics): for a point load P at x = a,
  w(x) = P x^2 (3a - x) / (6 EI) (x <= a), P a^2 (3x - a) / (6 EI) (x >= a); for a uniform
  load q, w(x) = q x^2 (6 L^2 - 4 L x + x^2) / (24 EI). Cubic Hermite elements with
  consistent loads reproduce these at the nodes exactly; the rest is the geometric
  nonlinearity, O((w / L)^2) relative;
* the rigid-rail bead: s(t) = s0 + g sin(alpha) t^2 / 2 (slow test);
* autodiff of Phi through the assembled model for the Jacobian and gamma;
* a linear Euler-Bernoulli FE solution in NumPy (Hermite stiffness, rows by Lagrange
  multipliers) for welds at interior material points.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs
from jaxmbs.analysis import reactions
from jaxmbs.core.dynamics import accelerations
from jaxmbs.core.equations import constraint_terms, generalized_forces
from jaxmbs.core.shared import block_params


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def hermite(xi, L):
    """NumPy Hermite shape functions (4,) of xi in [0, 1], element length L."""
    return np.array([1 - 3 * xi**2 + 2 * xi**3, L * (xi - 2 * xi**2 + xi**3),
                     3 * xi**2 - 2 * xi**3, L * (xi**3 - xi**2)])


def _terms_checker(mech, params):
    """check(q, v): jac = dPhi/dq and gamma = -d2Phi/dt2 (zero acceleration) of the
    assembled model against autodiff (jitted once per model); returns the terms."""
    terms = jax.jit(lambda q, v: constraint_terms(mech, params, q, v, 0.0))
    phi = lambda qq: constraint_terms(mech, params, qq, jnp.zeros(mech.n_vel), 0.0).phi

    @jax.jit
    def reference(q, v):
        d1 = lambda tau: jax.jvp(phi, (q + tau * v,), (v,))[1]
        return jax.jacfwd(phi)(q), -jax.jvp(d1, (0.0,), (1.0,))[1]

    def check(q, v):
        t = terms(q, v)
        J, gam = reference(q, v)
        np.testing.assert_allclose(t.jac, J, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(t.gamma, gam, rtol=1e-10, atol=1e-10)
        return t
    check.terms = terms
    return check


def _perturbed(mech, q0, v_scale, seed, skip=()):
    rng = np.random.default_rng(seed)
    q = np.asarray(q0) + 0.05 * rng.normal(size=q0.shape)
    for i in skip:
        q[i] = q0[i]
    return jnp.asarray(q), jnp.asarray(v_scale * rng.normal(size=mech.n_vel))


SEC = dict(E=2e11, rho=7800.0, A=1e-4, I=1e-8)  # EI = 2000 N m^2, rho A = 0.78 kg/m


# ------------------------------------------------------------ dead loads between nodes
@pytest.mark.parametrize("dim", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_dead_point_load_is_the_virtual_work_of_the_force(dim):
    """Q of add_node_load(xi=0.3) = S(xi)^T F on the element's nodes (NumPy shape
    functions), zero elsewhere; potential -F . r(xi); at a deformed state."""
    m = jaxmbs.Model(gravity=(0.0, 0.0)) if dim == 2 else jaxmbs.SpatialModel(gravity=(0.0, 0.0, 0.0))
    nodes = m.add_beam("b", np.zeros(dim), np.eye(dim)[0] * 1.2, elements=3, section=SEC)
    F = np.array([3.0, -5.0, 2.0])[:dim]
    m.add_node_load("P", nodes[1], F, xi=0.3)
    mech, params, q0, v0 = m.build()
    rng = np.random.default_rng(1)
    q = q0 + jnp.asarray(0.1 * rng.normal(size=q0.shape))
    Q, V, _ = jax.jit(lambda qq: generalized_forces(mech, params, qq, jnp.zeros(mech.n_vel), 0.0))(q)
    S = hermite(0.3, 0.4)
    Qref = np.zeros(mech.n_vel)
    i1, i2 = (mech.coordinate_index(f"{nd}.x") for nd in nodes[1:3])
    for a, (i0, off) in enumerate([(i1, 0), (i1, dim), (i2, 0), (i2, dim)]):
        Qref[i0 + off: i0 + off + dim] = S[a] * F
    # the elastic forces of the deformed beam are in Q too: remove them by difference
    m0 = jaxmbs.Model(gravity=(0.0, 0.0)) if dim == 2 else jaxmbs.SpatialModel(gravity=(0.0, 0.0, 0.0))
    m0.add_beam("b", np.zeros(dim), np.eye(dim)[0] * 1.2, elements=3, section=SEC)
    mech0, params0, _, _ = m0.build()
    Q0, V0, _ = jax.jit(lambda qq: generalized_forces(mech0, params0, qq, jnp.zeros(mech.n_vel), 0.0))(q)
    np.testing.assert_allclose(Q - Q0, Qref, rtol=0, atol=1e-12 * np.abs(Q0).max())
    e = np.asarray(q[i1: i2 + 2 * dim]).reshape(4, dim)
    # (V - V0: the strain energy of the deformed beam cancels, to its round-off)
    np.testing.assert_allclose(V - V0, -F @ (S @ e), rtol=0, atol=1e-13 * abs(float(V0)))


@pytest.mark.slow
def test_dead_point_load_cantilever_matches_euler_bernoulli():
    """Cantilever L = 1 m, 4 elements, P = 2 N at x = 0.3 m (xi = 0.2 of element 1): the
    nodal deflections are the Euler-Bernoulli ones to 1e-7 relative (the geometric
    nonlinearity is of order (w/L)^2 ~ 2e-9 at w = 4e-5 m; measured 1.4e-9, and 1.4e-13 at
    P = 0.02 N)."""
    L, P, a = 1.0, 2.0, 0.3
    EI = SEC["E"] * SEC["I"]
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    nodes = m.add_beam("b", (0, 0), (L, 0), elements=4, section=SEC)
    m.add_node_weld("clamp", nodes[0])
    m.add_node_load("P", nodes[1], (0.0, -P), xi=0.2)
    mech, params, q0, _ = m.build()
    q = np.asarray(jaxmbs.equilibrium(mech, params, q0, tol=1e-8).q)
    x = np.linspace(0, L, 5)
    w = np.where(x <= a, P * x**2 * (3 * a - x), P * a**2 * (3 * x - a)) / (6 * EI)
    y = np.array([q[mech.coordinate_index(f"{nd}.y")] for nd in nodes])
    np.testing.assert_allclose(-y, w, rtol=1e-7, atol=1e-7 * w.max())


def test_point_load_and_pin_refuse_bad_input_naming_it():
    m = jaxmbs.Model()
    nodes = m.add_beam("b", (0, 0), (1, 0), elements=2, section=SEC)
    other = m.add_beam("c", (0, 0), (0, -1), elements=2, section=SEC)
    with pytest.raises(ValueError, match=r"load 'P': xi must lie in \[0, 1\]"):
        m.add_node_load("P", nodes[0], (0, 1), xi=1.5)
    with pytest.raises(ValueError, match="unknown beam node 'b.n7'"):
        m.add_node_load("P2", "b.n7", (0, 1), xi=0.5)
    with pytest.raises(ValueError, match=r"pin 'p': xi_other must lie in \[0, 1\]"):
        m.add_node_pin("p", nodes[1], other[0], xi=0.5, xi_other=-0.1)
    with pytest.raises(ValueError, match="last node of beam 'b'"):
        m.add_node_pin("p2", nodes[2], other[0], xi=0.5)
    with pytest.raises(ValueError, match="xi_other is for a beam node"):
        m.add_node_pin("p3", nodes[1], xi=0.5, xi_other=0.5)
    with pytest.raises(ValueError, match="unknown beam 'rail'"):
        m.add_beam_slider("s", "rail", "ground", at=(0.5, 0))
    m.add_particle("bead", 1.0, (0.5, 0.1))
    with pytest.raises(ValueError, match="off the centre line of beam 'b'"):
        m.add_beam_slider("s2", "b", "bead")
    with pytest.raises(ValueError, match="outside beam 'b'"):
        m.add_beam_slider("s3", "b", "bead", s=1.5)
    with pytest.raises(ValueError, match="give the ground's point with at="):
        m.add_beam_slider("s4", "b", "ground")


# ------------------------------------------------------ pins between material points
def _hanging(dim, xi_a=0.2, xi_b=0.5, F=2.0, xi_f=0.6):
    """Cantilever A along x (4 elements of 0.25 m, clamped at x = 0) and beam B (0.4 m,
    2 elements) hanging along -y from A's material point x = a = 0.25 (1 + xi_a), pinned
    at B's material point xi_b of its first element (a spherical joint in 3D); a dead
    load F (N) along -y on A at x = b = 0.25 (2 + xi_f) (add_node_load with xi)."""
    g = -9.81
    if dim == 2:
        m = jaxmbs.Model(gravity=(0.0, g))
    else:
        m = jaxmbs.SpatialModel(gravity=(0.0, g, 0.0))
    a = 0.25 * (1 + xi_a)
    e = np.eye(dim)
    A = m.add_beam("A", np.zeros(dim), e[0], elements=4, section=SEC)
    top = a * e[0] + 0.2 * xi_b * e[1]
    Bn = m.add_beam("B", top, top - 0.4 * e[1], elements=2, section=SEC)
    m.add_node_weld("clamp", A[0])
    m.add_node_pin("pin", Bn[0], A[1], xi=xi_b, xi_other=xi_a)
    m.add_node_load("F", A[2], -F * e[1], xi=xi_f)
    return m, A, a, 0.25 * (2 + xi_f), F


def _point_deflection(x, P, a, EI):
    """Euler-Bernoulli cantilever deflection (m, downwards) at x of a point load P at a."""
    return np.where(x <= a, P * x**2 * (3 * a - x), P * a**2 * (3 * x - a)) / (6 * EI)


def _pin_statics(dim):
    m, A, a, b, F = _hanging(dim)
    mech, params, q0, v0 = m.build()
    t0 = constraint_terms(mech, params, q0, v0, 0.0)
    assert float(jnp.abs(t0.phi).max()) < 1e-15
    q, v = _perturbed(mech, q0, 0.5, 3)
    _terms_checker(mech, params)(q, v)
    res = jaxmbs.equilibrium(mech, params, q0, tol=1e-9)
    qe = np.asarray(res.q)
    rhoA, EI = SEC["rho"] * SEC["A"], SEC["E"] * SEC["I"]
    P, qd, L = 0.4 * rhoA * 9.81, rhoA * 9.81, 1.0
    x = np.linspace(0, L, 5)
    w = _point_deflection(x, P, a, EI) + _point_deflection(x, F, b, EI) \
        + qd * x**2 * (6 * L**2 - 4 * L * x + x**2) / (24 * EI)
    y = np.array([qe[mech.coordinate_index(f"{nd}.y")] for nd in A])
    np.testing.assert_allclose(-y, w, rtol=1e-6, atol=1e-6 * w.max())
    R = reactions(mech, params, res.q, res.lam)["pin"]
    np.testing.assert_allclose(np.asarray(R["force"])[:2], [0.0, P], rtol=1e-9, atol=1e-9 * P)


def test_pin_between_material_points_jacobian_and_statics():
    """A beam hanging from a material point of a cantilever (pin at interior points of
    both elements) and a dead load between nodes of the cantilever: Phi = 0 as built,
    Jacobian and gamma of the model against autodiff (1e-12 / 1e-10) at a random state;
    at equilibrium A's nodal deflections are the Euler-Bernoulli ones under its own
    weight, B's weight at x = a and the load at x = b (rel. 1e-6; measured 3.9e-7 in 2D
    and 3D, 2.3e-7 without the load: the geometric nonlinearity, (w/L)^2 = 5e-7 at
    w / L = 7e-4) and the pin carries B's weight (reactions from the equilibrium's
    multipliers)."""
    _pin_statics(2)


@pytest.mark.slow
def test_spherical_pin_between_material_points_of_cables_statics():
    """The same in 3D: cables, a spherical joint between material points, a dead load
    between nodes ('beam3d_beam_point', 'beam3d_load')."""
    _pin_statics(3)


def test_pin_at_element_ends_equals_the_node_pin():
    """xi = 1 of an element (and xi_other = 1) is its next node: the rows, Jacobian and
    gamma of 'beam_beam_point' equal those of the node pin 'ancf_point' at a random
    state (to 1e-12; same mass and forces, hence the same dynamics)."""
    out = []
    for xi in (None, 1.0):
        m = jaxmbs.Model(gravity=(0.0, -9.81))
        A = m.add_beam("A", (0, 0), (1, 0), elements=2, section=SEC)
        B = m.add_beam("B", (1, 0), (1, -0.5), elements=2, section=SEC)
        m.add_node_weld("clamp", A[0])
        if xi is None:
            m.add_node_pin("pin", B[1], A[2])
        else:
            m.add_node_pin("pin", B[0], A[1], xi=1.0, xi_other=1.0)
        mech, params, q0, v0 = m.build()
        assert {f.kind for f in mech.families} >= ({"ancf_point"} if xi is None else {"beam_beam_point"})
        q, v = _perturbed(mech, q0, 0.3, 5)
        t = jax.jit(lambda q, v: constraint_terms(mech, params, q, v, 0.0))(q, v)
        order = np.concatenate([j.rows for j in mech.joints])  # rows by joint (clamp, pin)
        out.append([np.asarray(x)[order] for x in t])
    for a, b in zip(out[0], out[1]):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------ welds between material points
def _linear_weld_reference(beams, weld, P):
    """Independent linear Euler-Bernoulli FE reference (NumPy, transverse only) of beams
    [(x0, element length, elements)] along x, beam 0 clamped at its first node, a weld
    ((beam, element, xi) of one side, same of the other): equal deflection w and slope
    w' there, rows by Lagrange multipliers; a dead load -P on the last beam's last node.
    Returns that node's (w, w'). (Hermite element stiffness EI/L^3 [12 6L -12 6L; ...].)"""
    EI = SEC["E"] * SEC["I"]
    off = np.cumsum([0] + [2 * (n + 1) for _, _, n in beams])
    N = off[-1]
    K = np.zeros((N, N))
    for b, (_, Le, n) in enumerate(beams):
        ke = EI / Le**3 * np.array([[12, 6 * Le, -12, 6 * Le], [6 * Le, 4 * Le**2, -6 * Le, 2 * Le**2],
                                    [-12, -6 * Le, 12, -6 * Le], [6 * Le, 2 * Le**2, -6 * Le, 4 * Le**2]])
        for k in range(n):
            i = off[b] + 2 * k
            K[i:i + 4, i:i + 4] += ke
    C = np.zeros((4, N))
    C[0, 0] = C[1, 1] = 1.0  # the clamp: w = w' = 0 at beam 0's first node
    for sign, (b, k, xi) in zip((1.0, -1.0), weld):
        Le = beams[b][1]
        dS = np.array([-6 * xi + 6 * xi**2, Le * (1 - 4 * xi + 3 * xi**2), 6 * xi - 6 * xi**2,
                       Le * (3 * xi**2 - 2 * xi)]) / Le
        i = off[b] + 2 * k
        C[2, i:i + 4] += sign * hermite(xi, Le)
        C[3, i:i + 4] += sign * dS
    f = np.zeros(N + 4)
    f[N - 2] = -P
    u = np.linalg.solve(np.block([[K, C.T], [C, np.zeros((4, 4))]]), f)
    return u[N - 2], u[N - 1]


def test_weld_between_material_points_matches_a_cantilever():
    """Beam A (0 .. 0.5 m, 2 elements) clamped to the ground, welded at a material point
    to beam B (3 elements, to x = 1 m; its free overhang behind the weld unloaded), dead
    tip load P = 2 N (w / L = 2e-4): a 1 m cantilever. Weld at both elements' ends (A
    xi_other = 1, B xi = 1: 'beam_beam_point' + 'beam_beam_slope' at nodes): the tip
    deflection and slope are Euler-Bernoulli's P L^3 / 3EI, P L^2 / 2EI (cubic Hermite
    elements are exact for point loads at nodes; measured 1.1e-7, the geometric
    nonlinearity O((w/L)^2)). Weld at interior points (A at x = 0.4: xi_other = 0.6 of
    its element 1; B from x = 0.3: xi = 3/7 of its element 0): the elements across the
    weld must each bend as one cubic (the exact curvature jumps there: the overhangs are
    unloaded), so this mesh is 3.4% stiffer than P L^3 / 3EI; the tip deflection and
    slope equal the linear FE solution of the same mesh and rows
    (`_linear_weld_reference`, NumPy) to 1e-6 (measured 1.1e-7, 1.2e-7). Both cases
    have the same shapes: one compile."""
    EI, P = SEC["E"] * SEC["I"], 2.0
    for b0, xi, xo in ((0.25, 1.0, 1.0), (0.3, 3 / 7, 0.6)):
        m = jaxmbs.Model(gravity=(0.0, 0.0))
        A = m.add_beam("A", (0, 0), (0.5, 0), elements=2, section=SEC)
        Bn = m.add_beam("B", (b0, 0), (1, 0), elements=3, section=SEC)
        m.add_node_weld("clamp", A[0])
        m.add_node_weld("weld", Bn[0], A[1], xi=xi, xi_other=xo)
        m.add_node_load("P", Bn[-1], (0.0, -P))
        mech, params, q0, _ = m.build()
        assert {f.kind for f in mech.families} >= {"beam_beam_point", "beam_beam_slope"}
        assert float(params.joints["beam_beam_slope"]["angle"][0]) == 0.0
        q = np.asarray(jaxmbs.equilibrium(mech, params, q0, tol=1e-8).q)
        w, slope = (q[mech.coordinate_index(f"{Bn[-1]}.{c}")] for c in ("y", "y_x"))
        ref = _linear_weld_reference([(0.0, 0.25, 2), (b0, (1 - b0) / 3, 3)],
                                     [(1, 0, xi), (0, 1, xo)], P)
        np.testing.assert_allclose([w, slope], ref, rtol=1e-6)
        if xi == 1.0:
            np.testing.assert_allclose([w, slope], [-P / (3 * EI), -P / (2 * EI)], rtol=1e-6)
        else:
            assert 0.02 < 1 + w / (P / (3 * EI)) < 0.05  # the mesh's stiffening (3.4%)


def test_weld_at_material_points_families_and_bad_input():
    """add_node_weld with xi: to the ground 'beam_point' + 'beam_slope' (the leaves of
    add_beam_body_weld to the ground), between beams 'beam_beam_point' +
    'beam_beam_slope' with the angle between the initial slopes; Phi = 0 as built. Bad
    xi / xi_other raise ValueError naming the weld and leave the builder unchanged (the
    name is free again)."""
    m = jaxmbs.Model()
    A = m.add_beam("A", (0, 0), (1, 0), elements=2, section=SEC)
    Bn = m.add_beam("B", (0.5, 0), (0.5, -1), elements=2, section=SEC)
    S = m.add_shear_beam("S", (0, 1), (1, 1), elements=1, section=dict(SEC, nu=0.3))
    with pytest.raises(ValueError, match=r"weld 'w': xi must lie in \[0, 1\]"):
        m.add_node_weld("w", A[0], xi=1.5)
    with pytest.raises(ValueError, match=r"weld 'w': xi_other must lie in \[0, 1\]"):
        m.add_node_weld("w", Bn[0], A[0], xi=0.5, xi_other=-0.1)
    with pytest.raises(ValueError, match="weld 'w': xi_other is for a beam node; the ground"):
        m.add_node_weld("w", A[0], xi=0.5, xi_other=0.5)
    with pytest.raises(ValueError, match="weld 'w': 'A.n2' is the last node of beam 'A'"):
        m.add_node_weld("w", A[2], Bn[0], xi=0.5)
    with pytest.raises(ValueError, match="weld 'w': 'S.n0' is a shear-beam node"):
        m.add_node_weld("w", S[0], xi=0.5)
    m.add_node_weld("w", A[0], xi=0.5)
    m.add_node_weld("w2", Bn[0], A[1], xi=0.25, xi_other=0.5)
    mech, params, q0, v0 = m.build()
    kinds = {j.name: j.kind for j in mech.joints}
    assert kinds["w"] == "beam_body_weld" and kinds["w2"] == "beam_weld"
    np.testing.assert_allclose(params.joints["beam_point"]["point_i"][0], [0.25, 0.0])
    np.testing.assert_allclose(params.joints["beam_slope"]["axis_i"][0], [1.0, 0.0])
    # (the slope row reads the pin's material points and the elements' lengths: one leaf
    # each, the pin's xi and the beam nodes' length)
    sl = block_params(mech, params, "joints")["beam_beam_slope"]
    np.testing.assert_allclose([sl[f][0] for f in ("angle", "xi_i", "xi_j", "length_i", "length_j")],
                               [-np.pi / 2, 0.5, 0.25, 0.5, 0.5])
    assert set(params.joints["beam_beam_slope"]) == {"angle"}
    assert float(jnp.abs(constraint_terms(mech, params, q0, v0, 0.0).phi).max()) < 1e-15


# ---------------------------------------------------------- sliding along a beam
def _bead_on_rail(E=2e11, elements=3, alpha_deg=30.0, s0=0.1, mass=0.1, both_ends=True,
                  point=None, prismatic=False):
    """A rail of length 1 m inclined by alpha below +x, clamped at its top end (and pinned
    at the other when both_ends), and a bead (particle; with `point`, a body, prismatic or
    not) sliding on it from arc length s0."""
    m = jaxmbs.Model(gravity=(0.0, -9.81))
    al = np.deg2rad(alpha_deg)
    u = np.array([np.cos(al), -np.sin(al)])
    nodes = m.add_beam("rail", (0, 0), tuple(u), elements=elements,
                       section=dict(E=E, rho=1000.0, A=1e-2, I=1e-6))
    m.add_node_weld("clamp", nodes[0])
    if both_ends:
        m.add_node_pin("end", nodes[-1])
    if point is None:
        m.add_particle("bead", mass, tuple(s0 * u))
        m.add_beam_slider("slide", "rail", "bead")
    else:
        m.add_body("bead", mass, 1e-3, tuple(s0 * u - np.asarray(point)))
        m.add_beam_slider("slide", "rail", "bead", point=point, prismatic=prismatic)
    return m, nodes, al


@pytest.mark.parametrize("prismatic", [pytest.param(False, marks=pytest.mark.slow), True])
def test_slider_jacobian_gamma_across_elements_and_continuity(prismatic):
    """Body point sliding on a 3-element rail (prismatic: its axis also kept along the
    tangent): jac and gamma of the model against autodiff with s in each element; at a
    node (s = 1/3 m) Phi and the point rows' jac are continuous from both sides (the
    element changes, ANCF is C1; measured jumps < 1e-15); the angle row's s column, axis
    x r_xx, jumps with the curvature (not checked)."""
    m, nodes, _ = _bead_on_rail(point=(0.05, 0.02), prismatic=prismatic)
    mech, params, q0, v0 = m.build()
    i = mech.coordinate_index("slide.s")
    assert mech.extra_names == ("slide.s",) and float(q0[i]) == pytest.approx(0.1, abs=1e-15)
    rows = np.asarray(next(j for j in mech.joints if j.name == "slide").rows)
    assert len(rows) == (3 if prismatic else 2)
    assert float(jnp.abs(constraint_terms(mech, params, q0, v0, 0.0).phi).max()) < 1e-15
    check = _terms_checker(mech, params)
    for k, s in enumerate((0.1, 0.5, 0.9)):
        q, v = _perturbed(mech, q0, 0.7, 10 + k, skip=(i,))
        check(q.at[i].set(s), v)
    q, v = _perturbed(mech, q0, 0.7, 20, skip=(i,))
    h = 1e-13
    lo = check.terms(q.at[i].set(1 / 3 - h), v)
    hi = check.terms(q.at[i].set(1 / 3 + h), v)
    np.testing.assert_allclose(lo.phi, hi.phi, atol=1e-12)
    point = rows[:2]
    np.testing.assert_allclose(lo.jac[point], hi.jac[point], atol=1e-11)
    if prismatic:  # the node columns of the angle row are continuous too (S_x is)
        cols = np.arange(mech.n_vel) != i
        np.testing.assert_allclose(lo.jac[rows[2], cols], hi.jac[rows[2], cols], atol=1e-11)


def test_slider_reaction_is_normal_to_the_deformed_tangent():
    """Frictionless: on a randomly deformed, moving beam, with the bead placed on it at
    s = 0.45 m and moving with it (r(s), S(s) edot + r_x(s) sdot from NumPy shape
    functions), the rail's force on the bead (the slider's multipliers: the particle's
    Jacobian block is -I) is perpendicular to the beam's tangent r_x(s) (|F . t| / (|F|
    |t|) < 1e-12, measured ~1e-16), and the slider's rows vanish there."""
    m, nodes, al = _bead_on_rail(E=1e7)
    mech, params, q0, v0 = m.build()
    i = mech.coordinate_index("slide.s")
    q, v = (np.array(x) for x in _perturbed(mech, q0, 0.5, 7, skip=(i,)))
    s, k, Le = 0.45, 1, 1 / 3
    xi = s / Le - k
    S = hermite(xi, Le)
    dS = np.array([-6 * xi + 6 * xi**2, Le * (1 - 4 * xi + 3 * xi**2), 6 * xi - 6 * xi**2,
                   Le * (3 * xi**2 - 2 * xi)]) / Le
    c = mech.coordinate_index(f"{nodes[k]}.x")
    e, ed = q[c: c + 8].reshape(4, 2), v[c: c + 8].reshape(4, 2)
    tan = dS @ e
    b = mech.coordinate_index("bead.x")
    q[i], q[b: b + 2] = s, S @ e
    v[b: b + 2] = S @ ed + tan * v[i]
    rows = np.asarray(next(j for j in mech.joints if j.name == "slide").rows)

    @jax.jit
    def run(q, v):
        return (accelerations(mech, params, q, v, 0.0),
                constraint_terms(mech, params, q, v, 0.0))

    acc, t = run(jnp.asarray(q), jnp.asarray(v))
    assert int(acc.status) == 0
    np.testing.assert_allclose(np.asarray(t.phi)[rows], 0.0, atol=1e-15)
    np.testing.assert_allclose(np.asarray(t.jac @ v)[rows], 0.0, atol=1e-13)
    F = np.asarray(acc.lam)[rows]
    assert np.linalg.norm(F) > 0.1
    assert abs(F @ tan) / (np.linalg.norm(F) * np.linalg.norm(tan)) < 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("E", [1e8, 1e9])
def test_slider_on_stiff_rail_follows_the_rigid_incline(E):
    """Bead on a rail clamped at the top, pinned at the bottom, 30 degrees, 4 elements,
    0.4 s (RK4, Projection): s(t) against the rigid incline s0 + g sin(alpha) t^2 / 2.
    The error is the rail's flexibility (its transverse vibration started by the bead's
    weight at t = 0): measured 7.5e-3 m at E = 1e8 Pa, 7.8e-4 m at 1e9 (~1/E); energy
    balance error < 1e-6 (measured 3.6e-7, 1.9e-7)."""
    m, _, al = _bead_on_rail(E=E, elements=4)
    mech, params, q0, v0 = m.build()
    dt = 1e-4 if E < 5e8 else 4e-5
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 0.4), dt, save_every=int(round(0.01 / dt)))
    assert int(np.max(np.asarray(tr.status))) == 0
    s = np.asarray(tr.q[:, mech.coordinate_index("slide.s")])
    tt = np.asarray(tr.t)
    err = np.max(np.abs(s - (0.1 + 0.5 * 9.81 * np.sin(al) * tt**2)))
    assert err < 8e-3 * (1e8 / E), err
    assert float(tr.energy_error()) < 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("prismatic", [False, True])
def test_mass_sliding_along_a_flexible_cantilever_conserves_energy_frictionless(prismatic):
    """A 0.5 kg particle (prismatic: a body of 0.5 kg, 2e-3 kg m^2, its x axis kept along
    the tangent) launched at 1 m/s from s = 0.1 m along a flexible horizontal cantilever
    (L = 1 m, 4 elements, EI = 33 N m^2: the mass's static tip deflection ~5 cm),
    gravity, 0.6 s (RK4 dt = 1e-4, Projection). Particle: the beam bends (tip down to
    -9.4 cm, the particle at s = 0.78 m at the end), the energy balance error stays below
    1e-5 (measured 1.3e-8), and at every saved state the rail's force on the particle
    (the slider's multipliers; 0.8 to 7.1 N, the weight is 4.9 N) is perpendicular to the
    deformed tangent dr/ds (the s column of the Jacobian): |F . t| / (|F| |t|) < 1e-10
    (measured 6e-17). Prismatic: energy error < 1e-5 (measured 9.9e-9; the body turns
    up to 0.12 rad with the beam, tip -9.4 cm), the body's angle equals the tangent's to
    1e-9 rad (measured 6e-17), and the joint does no work along s (the s column of the
    Jacobian times the multipliers, < 1e-10 of them; measured 1.3e-16 in both runs)."""
    m = jaxmbs.Model(gravity=(0.0, -9.81))
    nodes = m.add_beam("beam", (0, 0), (1, 0), elements=4,
                       section=dict(E=3.3e8, rho=1000.0, A=1e-3, I=1e-7))
    m.add_node_weld("clamp", nodes[0])
    if prismatic:
        m.add_body("mass", 0.5, 2e-3, (0.1, 0.0), velocity=(1.0, 0.0))
    else:
        m.add_particle("mass", 0.5, (0.1, 0.0), velocity=(1.0, 0.0))
    m.add_beam_slider("slide", "beam", "mass", prismatic=prismatic)
    mech, params, q0, v0 = m.build()
    i = mech.coordinate_index("slide.s")
    assert float(v0[i]) == pytest.approx(1.0)
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 0.6), 1e-4, save_every=200)
    assert int(np.max(np.asarray(tr.status))) == 0
    s = np.asarray(tr.q[:, i])
    assert s[-1] > 0.5 and s.max() < 1.0
    tip_y = np.asarray(tr.q[:, mech.coordinate_index(f"{nodes[-1]}.y")])
    assert tip_y.min() < -0.01
    assert float(tr.energy_error()) < 1e-5
    rows = np.asarray(next(j for j in mech.joints if j.name == "slide").rows)

    @jax.jit
    def check(q, v):
        acc = accelerations(mech, params, q, v, 0.0)
        jac = constraint_terms(mech, params, q, v, 0.0).jac
        tan = jac[rows[:2], i]
        F = acc.lam[rows[:2]]
        cos = jnp.abs(F @ tan) / (jnp.linalg.norm(F) * jnp.linalg.norm(tan))
        work_s = jnp.abs(jac[rows, i] @ acc.lam[rows]) / jnp.max(jnp.abs(acc.lam[rows]))
        return cos, work_s, jnp.arctan2(tan[1], tan[0]), acc.status

    cos, work_s, ang, status = jax.vmap(check)(tr.q, tr.v)
    assert int(np.max(np.asarray(status))) == 0
    assert float(np.max(np.asarray(work_s))) < 1e-10
    if prismatic:
        th = np.asarray(tr.q[:, mech.coordinate_index("mass.theta")])
        np.testing.assert_allclose(th, np.asarray(ang), atol=1e-9)
    else:
        assert float(np.max(np.asarray(cos))) < 1e-10, np.asarray(cos)


def test_model_file_round_trip_and_params_leaves(tmp_path):
    """A model with a material-point pin, a point load between nodes and a prismatic
    slider is written to a model file and re-read: the same coordinates, rows and Params
    leaves; the new leaves are replaceable by name; the pin is drawn at its material
    point (plot.geometry)."""
    from jaxmbs import io
    from jaxmbs import plot as P

    m = jaxmbs.Model()
    A = m.add_beam("A", (0, 0), (1, 0), elements=2, section=SEC)
    B = m.add_beam("B", (0.5, 0), (0.5, -1), elements=2, section=SEC)
    m.add_node_weld("clamp", A[0])
    m.add_node_pin("pin", B[0], A[0], xi=0.0, xi_other=1.0)
    m.add_node_load("P", A[1], (0.0, -1.0), xi=0.4)
    m.add_body("car", 1.0, 0.01, (0.2, 0.0))
    m.add_beam_slider("slide", "A", "car", prismatic=True)
    mech, params, q0, v0 = m.build()
    path = io.save_model(m, tmp_path / "m.json")
    mech2, params2, q02, _ = io.load_model(path).build()
    assert mech2.n_constraints == mech.n_constraints == 3 + 2 + 3
    np.testing.assert_array_equal(q02, q0)
    p = mech.replace(params, {"P.xi": 0.5, "pin.xi_i": 0.9, "slide.axis_j": [0.0, 1.0],
                              "slide.point_j": [0.0, 0.1]})
    assert float(p.forces["beam_load"]["xi"][0]) == 0.5
    assert float(p.joints["beam_beam_point"]["xi_i"][0]) == 0.9
    with pytest.raises(ValueError, match="xi"):
        mech.replace(params, {"P.xi": 1.5})
    pins = {n: x for n, x, _ in P.geometry(mech, params, np.asarray(q0))["revolutes"]}
    np.testing.assert_allclose(pins["pin"], [0.5, 0.0], atol=1e-15)
