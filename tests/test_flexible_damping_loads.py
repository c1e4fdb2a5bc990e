"""Rayleigh damping and distributed (line) loads of planar ANCF beams, against analytic
references independent of jaxmbs:

* Rayleigh damping C = alpha M + beta K gives mode n of a linear system the damping ratio
  zeta_n = alpha / (2 omega_n) + beta omega_n / 2 (Caughey's classical result), omega_n
  the undamped frequency; for a clamped-free Euler-Bernoulli beam omega_1 = (1.875104)^2
  sqrt(EI / (rho A L^4)). The strain-rate form of the stiffness part linearises to beta K
  about the straight, unstressed beam (checked directly), does no work in a rigid motion
  and always dissipates.
* A cantilever under a uniform transverse load q: tip deflection q L^4 / (8 EI), tip
  rotation q L^3 / (6 EI) (small deflections); under a uniform axial load q: tip
  displacement q L^2 / (2 EA). Hermite cubic elements with consistent loads give the exact
  nodal values of linear Euler-Bernoulli theory at any mesh; the ANCF beam is nonlinear,
  so q is chosen small (w / L = 1.25e-5: the nonlinear corrections are O((w / L)^2)).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs
from jaxmbs.core import families as F

L = 1.0
BETA1 = 1.8751040687  # first root of cos(b) cosh(b) = -1
SEC = dict(E=1.0e4, rho=1.0, A=1.0, I=1.0e-4)  # EA = 1e4 N, EI = 1 N m^2, rho A = 1 kg/m


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _cantilever(elements, section, load=None):
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    nodes = m.add_beam("beam", (0.0, 0.0), (L, 0.0), elements=elements, section=section)
    m.add_node_weld("clamp", nodes[0])
    if load is not None:
        m.add_beam_line_load("q", "beam", load)
    mech, params, q0, v0 = m.build()
    return mech, params, q0, v0, nodes[-1]


@jax.jit
def _beam_loads(p, X, V):
    return F.body_family("ancf2d_beam").loads(p, X, V, jnp.zeros(2))[0]


# d Q / d (X, V) of a block of 4 nodes, one compilation for the tests below
_beam_jacobians = jax.jit(jax.jacfwd(_beam_loads, argnums=(1, 2)))


def _free_beam_params(alpha, beta, k=4):
    """Params of a free 3-element beam block (k = 4 nodes), lengths 0.3, 0.5, 0.2 m."""
    rng = np.random.default_rng(3)
    return {"rho": jnp.asarray(rng.uniform(0.5, 2, k)), "area": jnp.asarray(rng.uniform(0.5, 2, k)),
            "E": jnp.asarray(rng.uniform(50, 200, k)), "I": jnp.asarray(rng.uniform(0.05, 0.2, k)),
            "length": jnp.asarray([0.3, 0.5, 0.2, 0.0]), "alpha": jnp.full(k, alpha),
            "beta": jnp.full(k, beta), "line_load": jnp.zeros((k, 2))}


def test_damping_linearises_to_rayleigh_about_the_straight_beam():
    """-dQ/dv = alpha M + beta K at the straight unstressed beam (any rigid placement),
    K = -dQ/dq of the undamped beam; beta K is the tangent stiffness of the elastic forces."""
    alpha, beta = 0.7, 0.03
    p = _free_beam_params(alpha, beta)
    c, s = np.cos(0.4), np.sin(0.4)
    x = np.cumsum([0.0, 0.3, 0.5, 0.2])
    X = jnp.asarray(np.stack([1.0 + c * x, 2.0 + s * x, np.full(4, c), np.full(4, s)], -1))
    V0 = jnp.zeros_like(X)
    K, C = (-d.reshape(16, 16) for d in _beam_jacobians(p, X, V0))
    M = F.body_family("ancf2d_beam").mass_part(p, X).dense()
    np.testing.assert_allclose(C, alpha * M + beta * K, rtol=1e-10, atol=1e-10 * float(jnp.max(jnp.abs(K))))


def test_stiffness_damping_is_objective_and_dissipative():
    """In a deformed state the beta force vanishes for a rigid velocity (translation +
    rotation: strain rates 0), and v . Q_d < 0 for random velocities."""
    p = _free_beam_params(0.0, 0.05)
    rng = np.random.default_rng(5)
    X = jnp.asarray(rng.normal(size=(4, 4)) * 0.3 + np.array([0.0, 0.0, 1.0, 0.0]))
    w, u = 1.7, np.array([0.3, -0.8])
    J = np.array([[0.0, -1.0], [1.0, 0.0]])
    Xn = np.asarray(X)
    Vr = np.concatenate([u + w * Xn[:, :2] @ J.T, w * Xn[:, 2:] @ J.T], -1)
    Q0 = _beam_loads(p, X, jnp.zeros_like(X))
    Qr = _beam_loads(p, X, jnp.asarray(Vr)) - Q0
    # zero to the rounding of the elastic forces it is computed beside
    np.testing.assert_allclose(Qr, 0.0, atol=1e-13 * float(jnp.max(jnp.abs(Q0))))
    for _ in range(5):
        V = jnp.asarray(rng.normal(size=(4, 4)))
        Qd = _beam_loads(p, X, V) - Q0
        assert float(jnp.sum(Qd * V)) < 0


@pytest.mark.slow  # 10 s of compilation (linearize); the default suite checks C directly
@pytest.mark.parametrize("alpha,beta", [(0.4, 0.0), (0.0, 0.004), (0.3, 0.002)])
def test_cantilever_modal_damping_matches_rayleigh_formula(alpha, beta):
    """4 elements: omega_1 agrees with Euler-Bernoulli to 1e-4 (relative), and the first
    three modes' damping ratios with alpha / (2 omega_n) + beta omega_n / 2 to 1e-6 (exact
    for C = alpha M + beta K: one compilation, the three cases differ in Params only)."""
    mech, params, q0, v0, _ = _cantilever(4, dict(SEC, alpha=alpha, beta=beta))
    lin = jaxmbs.linearize(mech, params, q0, jnp.zeros(mech.n_vel))
    m = jaxmbs.modes(lin)
    wn, zeta = np.asarray(m.frequencies), np.asarray(m.damping_ratios)
    osc = np.abs(np.imag(np.asarray(m.eigenvalues))) > 1e-9
    order = np.argsort(wn[osc])
    wn, zeta = wn[osc][order][::2], zeta[osc][order][::2]  # conjugate pairs
    w1 = BETA1**2 * np.sqrt(SEC["E"] * SEC["I"] / (SEC["rho"] * SEC["A"] * L**4))
    assert wn[0] == pytest.approx(w1, rel=1e-4)
    np.testing.assert_allclose(zeta[:3], alpha / (2 * wn[:3]) + beta * wn[:3] / 2, rtol=1e-6)


@pytest.mark.slow
def test_cantilever_free_decay_matches_rayleigh_damping_ratio():
    """Time domain: the tip of a cantilever released from the exact first-mode shape
    (Euler-Bernoulli, 8 elements; amplitude 1e-3 L) decays as exp(-zeta omega_1 t) with
    zeta = alpha / (2 omega_1) + beta omega_1 / 2; generalized-alpha with rho_inf = 1 (no
    numerical damping), 200 steps per period; the decay rate from the tip's positive peaks
    over 3 periods agrees to 1 % (error budget: the parabolic peak refinement, h omega =
    2 pi / 200, ~1e-3 of each peak, i.e. ~0.3 % of the log ratio 0.67; the higher modes
    in the interpolated initial shape and the trapezoidal rule's O((h omega)^2) ~1e-3;
    measured: 2.5e-4)."""
    alpha, beta = 0.2, 0.004
    n = 8
    mech, params, q0, v0, tip = _cantilever(n, dict(SEC, alpha=alpha, beta=beta))
    b = BETA1
    sig = (np.cosh(b) + np.cos(b)) / (np.sinh(b) + np.sin(b))
    xs = np.linspace(0, L, n + 1) * b / L
    phi = np.cosh(xs) - np.cos(xs) - sig * (np.sinh(xs) - np.sin(xs))
    dphi = (np.sinh(xs) + np.sin(xs) - sig * (np.cosh(xs) - np.cos(xs))) * b / L
    amp = 1e-3 * L / phi[-1]
    q = np.array(q0)
    for k in range(n + 1):
        i = mech.coordinate_index(f"beam.n{k}.y")
        q[i] = amp * phi[k]
        q[i + 2] = amp * dphi[k]  # y_x
    w1 = b**2 * np.sqrt(SEC["E"] * SEC["I"] / (SEC["rho"] * SEC["A"] * L**4))
    T = 2 * np.pi / w1
    dt = T / 200
    tr = jaxmbs.simulate(mech, params, jnp.asarray(q), v0, (0.0, 4.5 * T), dt,
                         integrator=jaxmbs.GeneralizedAlpha(rho_inf=1.0),
                         stabilizer=jaxmbs.NoStabilization(), save_every=1, energy_tol=None)
    assert int(np.max(np.asarray(tr.status))) == 0
    y = np.asarray(tr.q[:, mech.coordinate_index(f"{tip}.y")])
    t = np.asarray(tr.t)
    pk = [i for i in range(1, len(y) - 1) if y[i] > y[i - 1] and y[i] >= y[i + 1] and y[i] > 0]
    # parabolic refinement of each peak
    vals, times = [], []
    for i in pk:
        a, bb, c = y[i - 1], y[i], y[i + 1]
        d = 0.5 * (a - c) / (a - 2 * bb + c)
        vals.append(bb - 0.25 * (a - c) * d)
        times.append(t[i] + d * dt)
    zeta = alpha / (2 * w1) + beta * w1 / 2
    rate = np.log(vals[0] / vals[-1]) / (times[-1] - times[0])  # = zeta omega_1
    assert rate == pytest.approx(zeta * w1, rel=0.01)


def test_uniform_line_load_linear_statics_of_a_clamped_block():
    """Linear statics of 3 equal elements (the family's loads and tangent stiffness, no
    builder): clamp node 0 (x, y and the slope's y_x), solve K u = f for the consistent
    load of a transverse q: the tip deflection q L^4 / (8 EI) and rotation q L^3 / (6 EI)
    are exact at any mesh (Hermite cubics, consistent loads) to rounding."""
    q, EI = 3.0, 2.0
    p = {**_free_beam_params(0.0, 0.0), "length": jnp.asarray([L / 3] * 3 + [0.0]),
         "E": jnp.full(4, 100.0), "I": jnp.full(4, EI / 100.0),
         "line_load": jnp.asarray([[0.0, q]] * 3 + [[0.0, 0.0]])}
    x = np.arange(4) * L / 3
    X = jnp.asarray(np.stack([x, 0 * x, np.ones(4), 0 * x], -1))
    f = np.asarray(_beam_loads(p, X, jnp.zeros_like(X))).reshape(16)
    K = -np.asarray(_beam_jacobians(p, X, jnp.zeros_like(X))[0]).reshape(16, 16)
    free = np.setdiff1d(np.arange(16), [0, 1, 3])
    u = np.zeros(16)
    u[free] = np.linalg.solve(K[np.ix_(free, free)], f[free])
    np.testing.assert_allclose([u[13], u[15]], [q * L**4 / (8 * EI), q * L**3 / (6 * EI)], rtol=1e-10)


@pytest.mark.slow  # 5-9 s of compilation (equilibrium); the linear test above is the default
def test_uniform_line_loads_on_a_cantilever():
    """Transverse q: w_tip = q L^4 / (8 EI), rotation q L^3 / (6 EI), exact at any mesh
    (consistent loads on Hermite cubics; 2 elements), relative tolerance 1e-4 (the
    nonlinear terms: (w / L)^2 ~ 1e-10). Axial q (same model, the Params leaf replaced):
    the tip moves by q L^2 / (2 EA) (to O(eps) = 1e-4 relative: Green strain)."""
    q = 1e-4  # N/m: w = 1.25e-5 m
    mech, params, q0, _, tip = _cantilever(2, SEC, load=(0.0, -q))
    i = mech.coordinate_index(f"{tip}.x")
    x, y, xx, yx = (float(v) for v in np.asarray(jaxmbs.equilibrium(mech, params, q0, tol=1e-11).q)[i:i + 4])
    EI, EA = SEC["E"] * SEC["I"], SEC["E"] * SEC["A"]
    assert y == pytest.approx(-q * L**4 / (8 * EI), rel=1e-4)
    assert np.arctan2(yx, xx) == pytest.approx(-q * L**3 / (6 * EI), rel=1e-4)
    qa = 2.0  # N/m, EA = 1e4 N: 1e-4 m
    p2 = mech.replace(params, {"beam.n0.line_load": [qa, 0.0], "beam.n1.line_load": [qa, 0.0]})
    x2 = float(np.asarray(jaxmbs.equilibrium(mech, p2, q0, tol=1e-11).q)[i])
    # (the linear formula against ANCF's Green strain: they differ at the order of the
    # strain, qa L / EA = 2e-4; measured -2.0e-4 relative)
    assert x2 - L == pytest.approx(qa * L**2 / (2 * EA), rel=2 * qa * L / EA)


def test_line_loads_add_in_the_params_leaf():
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    m.add_beam("beam", (0.0, 0.0), (L, 0.0), elements=2, section=SEC)
    m.add_beam_line_load("q1", "beam", (1.0, 0.5))
    m.add_beam_line_load("q2", "beam", (1.0, -2.0))
    mech, params, _, _ = m.build()
    np.testing.assert_allclose(params.bodies["ancf2d_beam"]["line_load"],
                               [[2.0, -1.5], [2.0, -1.5], [0.0, 0.0]])


def test_line_load_and_damping_validation():
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    with pytest.raises(ValueError, match="beta.*>= 0"):
        m.add_beam("b0", (0.0, 0.0), (1.0, 0.0), elements=2, section=dict(SEC, beta=-1.0))
    with pytest.raises(ValueError, match="unknown \\['gamma'\\]"):
        m.add_beam("b0", (0.0, 0.0), (1.0, 0.0), elements=2, section=dict(SEC, gamma=1.0))
    m.add_beam("b", (0.0, 0.0), (1.0, 0.0), elements=2, section=SEC)
    with pytest.raises(ValueError, match="unknown beam 'c'"):
        m.add_beam_line_load("q", "c", (0.0, 1.0))
    with pytest.raises(ValueError, match="load"):
        m.add_beam_line_load("q", "b", (0.0, float("nan")))


def test_damping_and_line_load_survive_a_model_file_round_trip():
    from jaxmbs import io

    m = jaxmbs.Model(gravity=(0.0, 0.0))
    nodes = m.add_beam("b", (0.0, 0.0), (L, 0.0), elements=2, section=dict(SEC, alpha=0.1, beta=0.01))
    m.add_node_weld("c", nodes[0])
    m.add_beam_line_load("q", "b", (0.0, -1.0))
    p1 = m.build()[1].bodies["ancf2d_beam"]
    p2 = io.model_from_dict(io.model_to_dict(m)).build()[1].bodies["ancf2d_beam"]
    for k in ("alpha", "beta", "line_load"):
        np.testing.assert_array_equal(p2[k], p1[k])
