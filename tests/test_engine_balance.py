"""Engine balance (jaxmbs.planar.engines, examples/engine_balance.py): shaking forces and rocking
couples of crank trains by inverse dynamics, checked against

* the exact Fourier coefficients of the slider-crank piston acceleration (NumPy FFT of the
  analytic x''(theta)), themselves checked against the spectral derivative of x(theta)
  and the lambda-series A_2 = l + l^3/4 + 15 l^5/128, A_4 = -(l^3/4 + 3 l^5/16),
  A_6 = 9 l^5/128 (l = r/l), whose truncation error must shrink like lambda^7;
* hand-written closed forms per layout (which orders cancel, which add up n-fold, the
  couples from the stations), written out here, not taken from the library;
* the momentum balance: the forces the mechanism exerts on the ground = -dp/dt and the
  moment about the crank axis = -dH/dt, with p and H computed here from the kinematics;
* the textbook formulas: first order m r w^2 (exact), inline-4 second order
  4 m r w^2 (r/l) (leading order: the ratio tends to 1 like (r/l)^2 / 4).
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmbs.planar import engines

SAMPLES = 36
ORDERS = 6
EXACT = 1e-6  # the criterion: relative to the single-cylinder amplitude of the order


def _analytic_A(r, l, orders, samples=2048):
    """A_n from the spectral second derivative of x(theta) (not x''(theta) itself)."""
    th = 2 * np.pi * np.arange(samples) / samples
    x = r * np.cos(th) + np.sqrt(l * l - (r * np.sin(th)) ** 2)
    c = 2 * np.fft.rfft(x).real / samples
    n = np.arange(len(c))
    return (n ** 2 * c / r)[1:orders + 1]  # -x''/r = sum n^2 c_n / r cos(n theta)


# ---------------------------------------------------------------------- NumPy only
def test_piston_coefficients_exact_and_independent():
    for lam in (0.2, 0.31, 0.45):
        A = engines.piston_coefficients(1.0, 1.0 / lam, ORDERS)
        # first order exactly 1 for every rod length; odd orders >= 3 exactly 0
        assert abs(A[0] - 1.0) < 1e-14
        assert np.all(np.abs(A[2::2]) < 1e-14)
        np.testing.assert_allclose(A, _analytic_A(1.0, 1.0 / lam, ORDERS), rtol=0, atol=1e-12)
    # the lambda-series: truncation error bounded by lambda^7 and shrinking like lambda^7
    res = []
    for lam in (0.1, 0.05):
        A = engines.piston_coefficients(1.0, 1.0 / lam, ORDERS)
        ser = np.array([lam + lam ** 3 / 4 + 15 * lam ** 5 / 128,
                        -(lam ** 3 / 4 + 3 * lam ** 5 / 16), 9 * lam ** 5 / 128])
        d = A[[1, 3, 5]] - ser
        assert np.all(np.abs(d) < lam ** 7)
        res.append(d)
    rate = np.log2(np.abs(res[0] / res[1]))
    np.testing.assert_allclose(rate, 7.0, atol=0.1)


def test_harmonics_recovers_a_known_series():
    psi = 2 * np.pi * np.arange(40) / 40
    P = np.array([3.0 - 1.0j, 0.0, 0.5j, -2.0])
    sig = sum((P[n - 1] * np.exp(1j * n * psi)).real for n in range(1, 5)) + 7.0
    np.testing.assert_allclose(np.asarray(engines.harmonics(jnp.asarray(sig), 4)), P, atol=1e-13)
    with pytest.raises(ValueError, match="samples"):
        engines.harmonics(jnp.zeros(8), 4)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="phases, banks and z"):
        engines.CrankTrain(phases=(0.0, 1.0), banks=(0.0,), z=(0.0, 0.1))
    with pytest.raises(ValueError, match="rod_length"):
        engines.CrankTrain.layout("single", rod_length=0.04)
    with pytest.raises(ValueError, match="rod_cg"):
        engines.CrankTrain.layout("single", rod_cg=0.2)
    with pytest.raises(ValueError, match="piston_mass"):
        engines.CrankTrain.layout("single", piston_mass=0.0)
    with pytest.raises(ValueError, match="omega"):
        engines.CrankTrain.layout("single", omega=-5.0)
    with pytest.raises(ValueError, match="unknown layout"):
        engines.CrankTrain.layout("v12")
    with pytest.raises(ValueError, match="piston_coefficients"):
        engines.piston_coefficients(0.2, 0.1, 4)


# ---------------------------------------------------------------------- inverse dynamics
@pytest.fixture(scope="module")
def runs():
    out = {}
    for name in engines.LAYOUTS:
        tr = engines.CrankTrain.layout(name)
        mech, params, q0, _ = tr.build()
        loads = engines.block_loads(tr, mech, params, q0, SAMPLES)
        assert int(loads["status"]) == 0
        out[name] = (tr, mech, params, loads)
    return out


def _h(x):
    return np.asarray(engines.harmonics(x, ORDERS))


def _scales(tr):
    """S (N): single-cylinder reciprocating m_rec r w^2, R: rotating m_rot r w^2, A_n."""
    r, l, w2 = tr.crank_radius, tr.rod_length, tr.omega ** 2
    beta = tr.rod_cg / l
    S = (tr.piston_mass + beta * tr.rod_mass) * r * w2
    R = ((1 - beta) * tr.rod_mass + tr.throw_mass * tr.throw_cg / r) * r * w2
    return S, R, _analytic_A(r, l, ORDERS)


def _expected(name, tr):
    """Hand-derived amplitudes (orders, 4): |F_x|, |F_y| (N), |M_x|, |M_y| (N m)."""
    S, R, A = _scales(tr)
    d = tr.z[1] - tr.z[0] if tr.n > 1 else 0.0
    E = np.zeros((ORDERS, 4))
    n = np.arange(1, ORDERS + 1)
    even = n % 2 == 0
    if name == "single":                   # vertical cylinder: recip along y, rotating circle
        E[0, :2] = [R, R + S]
        E[1:, 1] = S * np.abs(A[1:])
    elif name == "inline-4":               # odd orders cancel, even add four-fold; no couple
        E[even, 1] = 4 * S * np.abs(A[even])
    elif name == "boxer-4":                # forces cancel; even-order couple 2 d S A_n about y
        E[even, 3] = 2 * d * S * np.abs(A[even])
    elif name == "flat-4":                 # forces cancel; two pins a distance z apart, each
        z = tr.z[2] - tr.z[0]              # with two cylinders at +-z/2: first-order couple only
        E[0, 2:] = [2 * z * R, 2 * z * (R + S)]
    elif name == "inline-3":               # only multiples of 3 survive in the force
        k3 = n % 3 == 0
        E[k3, 1] = 3 * S * np.abs(A[k3])
        c = math.sqrt(3) * d               # |sum z'_k exp(i n phi_k)| for n not a multiple of 3
        E[0, 2:] = [c * (S + R), c * R]
        E[~k3 & (n > 1), 2] = c * S * np.abs(A[~k3 & (n > 1)])
    return E


@pytest.mark.parametrize("name", list(engines.LAYOUTS))
def test_orders_match_closed_form(runs, name):
    tr, _, _, loads = runs[name]
    S, R, A = _scales(tr)
    zmax = max(np.max(np.abs(np.asarray(tr.z) - np.mean(tr.z))), 1e-300)
    got = np.concatenate([np.abs(_h(loads["force"])), np.abs(_h(loads["couple"]))], axis=1)
    E = _expected(name, tr)
    # single-cylinder amplitude of each order (first-order one where A_n = 0: odd n >= 3)
    single = S * np.abs(A) + np.r_[R, np.zeros(ORDERS - 1)]
    single[2::2] = single[0]
    ref = np.maximum(np.abs(E), np.c_[single, single, single * zmax, single * zmax])
    rel = np.abs(got - E) / ref
    assert np.max(rel) <= EXACT, (name, rel)
    # and the library's phasor sums (complex, phases included) agree as well
    tab = engines.balance_table(tr, loads, ORDERS)
    assert tab["max_rel_error"] <= EXACT


def test_shaking_force_is_minus_momentum_rate(runs):
    for _name, (tr, mech, params, loads) in runs.items():
        res = loads["result"]
        q, v, a = (np.asarray(x) for x in (res.q, res.v, res.a))
        rb = params.bodies["planar_rigid"]
        m, J, cg = np.asarray(rb["mass"]), np.asarray(rb["inertia"]), np.asarray(rb["cg"])
        nb = mech.n_bodies
        th, om, al = q[:, 2:3 * nb:3], v[:, 2:3 * nb:3], a[:, 2:3 * nb:3]
        sx = np.cos(th) * cg[:, 0] - np.sin(th) * cg[:, 1]
        sy = np.sin(th) * cg[:, 0] + np.cos(th) * cg[:, 1]
        rx, ry = q[:, 0:3 * nb:3] + sx, q[:, 1:3 * nb:3] + sy
        ax = a[:, 0:3 * nb:3] - al * sy - om ** 2 * sx
        ay = a[:, 1:3 * nb:3] + al * sx - om ** 2 * sy
        dp = np.stack([(m * ax).sum(1), (m * ay).sum(1)], -1)
        dH = (m * (rx * ay - ry * ax) + J * al).sum(1)
        S, _, _ = _scales(tr)
        F = np.asarray(loads["force"])
        np.testing.assert_allclose(F, -dp, rtol=0, atol=1e-10 * S)
        np.testing.assert_allclose(np.asarray(loads["cylinder"]).sum(1), F, rtol=0, atol=1e-10 * S)
        scale = S * tr.crank_radius
        np.testing.assert_allclose(np.asarray(loads["torque"]), -dH, rtol=0, atol=1e-10 * scale)
        dp2, dH2 = engines.momentum_rates(mech, params, res.q, res.v, res.a)
        np.testing.assert_allclose(np.asarray(dp2), dp, rtol=0, atol=1e-10 * S)
        np.testing.assert_allclose(np.asarray(dH2), dH, rtol=0, atol=1e-10 * scale)
        # per cylinder: the force of its parts = -(m_rot a_pin + m_rec a_piston) exactly
        r, w = tr.crank_radius, tr.omega
        psi = np.asarray(loads["psi"])[:, None]
        ph, bk = np.asarray(tr.phases), np.asarray(tr.banks)
        th_k = psi + ph - bk
        l = tr.rod_length
        s_, c_ = np.sin(th_k), np.cos(th_k)
        Sq = np.sqrt(l * l - r * r * s_ * s_)
        xdd = w ** 2 * (-r * c_ - r * r * (c_ * c_ - s_ * s_) / Sq - r ** 4 * s_ * s_ * c_ * c_ / Sq ** 3)
        e = np.stack([-np.sin(bk), np.cos(bk)], -1)
        u = np.stack([-np.sin(psi + ph), np.cos(psi + ph)], -1)
        Fk = -(tr.reciprocating_mass * xdd[..., None] * e) + tr.rotating_mass * r * w ** 2 * u
        np.testing.assert_allclose(np.asarray(loads["cylinder"]), Fk, rtol=0, atol=1e-10 * S)


def test_first_order_formulas_exact_with_unbalanced_and_balanced_crank():
    """First order of a single cylinder: |F_x| = m_rot r w^2, |F_y| = (m_rot + m_rec) r w^2
    for any rod length; with the throw's counterweight cancelling the rotating mass
    (m_throw throw_cg = -(1 - beta) m_rod r) the x force vanishes at every order and the
    first-order y force is exactly m_rec r w^2."""
    base = engines.CrankTrain.layout("single")
    beta = base.rod_cg / base.rod_length
    bal = -(1 - beta) * base.rod_mass * base.crank_radius / base.throw_mass
    for tr in (base.replace(throw_cg=0.02), base.replace(throw_cg=bal)):
        mech, params, q0, _ = tr.build()
        loads = engines.block_loads(tr, mech, params, q0, SAMPLES)
        H = np.abs(_h(loads["force"]))
        rw2 = tr.crank_radius * tr.omega ** 2
        m_rot = (1 - beta) * tr.rod_mass + tr.throw_mass * tr.throw_cg / tr.crank_radius
        m_rec = tr.piston_mass + beta * tr.rod_mass
        assert abs(H[0, 1] - (m_rot + m_rec) * rw2) <= EXACT * (m_rot + m_rec) * rw2
        if tr.throw_cg > 0:
            assert abs(H[0, 0] - m_rot * rw2) <= EXACT * m_rot * rw2
        else:
            assert np.max(H[:, 0]) <= EXACT * m_rec * rw2
            assert abs(H[0, 1] - m_rec * rw2) <= EXACT * m_rec * rw2


def test_inline4_secondary_leading_order_converges_like_lambda_squared():
    """|F_2| / (4 m_rec r w^2 lambda) -> 1 as lambda = r/l -> 0, the error ~ lambda^2/4."""
    errs, lams = [], (0.3, 0.15, 0.075)
    for lam in lams:
        tr = engines.CrankTrain.layout("inline-4")
        tr = tr.replace(rod_length=tr.crank_radius / lam, rod_cg=0.3 * tr.crank_radius / lam)
        mech, params, q0, _ = tr.build()
        loads = engines.block_loads(tr, mech, params, q0, SAMPLES)
        F2 = np.abs(_h(loads["force"]))[1, 1]
        lead = 4 * tr.reciprocating_mass * tr.crank_radius * tr.omega ** 2 * lam
        errs.append(F2 / lead - 1.0)
    errs = np.array(errs)
    rates = np.log2(errs[:-1] / errs[1:])
    np.testing.assert_allclose(rates, 2.0, atol=0.1)
    assert abs(rates[1] - 2.0) < abs(rates[0] - 2.0)          # approaching the asymptotic rate
    np.testing.assert_allclose(errs / np.square(lams), 0.25, rtol=0.1)


def test_block_loads_rejects_a_foreign_mechanism():
    tr4 = engines.CrankTrain.layout("inline-4")
    mech, params, q0, _ = engines.CrankTrain.layout("inline-3").build()
    with pytest.raises(ValueError, match="not built from this"):
        engines.block_loads(tr4, mech, params, q0, SAMPLES)


@pytest.mark.slow
def test_float32_runs_and_agrees():
    tr = engines.CrankTrain.layout("inline-3")
    mech, params, q0, _ = tr.build()
    f32 = lambda x: jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float32), x)
    loads = engines.block_loads(tr, mech, f32(params), f32(q0), SAMPLES)
    assert loads["force"].dtype == jnp.float32 and int(loads["status"]) == 0
    tab = engines.balance_table(tr, loads, 4)
    # float32 round-off (eps 1.2e-7) amplified by the forces' size; orders 1-4 to 1e-4
    assert tab["max_rel_error"] < 1e-4, tab["rel_error"]


@pytest.mark.slow
def test_grad_and_vmap_over_piston_mass():
    """The inline-4 second-order force |F_2| = 4 (m_piston + beta m_rod) r w^2 A_2 is linear
    in the piston mass: jax.grad through the inverse dynamics and the FFT gives
    4 r w^2 A_2, and jax.vmap over three masses gives the formula's three values."""
    tr = engines.CrankTrain.layout("inline-4")
    mech, params, q0, _ = tr.build()
    names = [f"piston{k}.mass" for k in range(1, 5)]

    def amp2(m):
        p = mech.replace(params, {n: m for n in names})
        loads = engines.block_loads(tr, mech, p, q0, SAMPLES)
        return jnp.abs(engines.harmonics(loads["force"], 2)[1, 1])

    A2 = _analytic_A(tr.crank_radius, tr.rod_length, 2)[1]
    rw2 = tr.crank_radius * tr.omega ** 2
    g = float(jax.grad(amp2)(tr.piston_mass))
    assert abs(g - 4 * rw2 * A2) <= EXACT * 4 * rw2 * A2
    ms = np.array([0.3, 0.35, 0.4])
    got = np.asarray(jax.vmap(amp2)(jnp.asarray(ms)))
    want = 4 * (ms + tr.rod_mass * tr.rod_cg / tr.rod_length) * rw2 * A2
    np.testing.assert_allclose(got, want, rtol=EXACT)
