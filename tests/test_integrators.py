"""Convergence order of every fixed-step integrator on a closed-loop mechanism, and the
adaptive Dormand-Prince against a tight reference."""
import jax.numpy as jnp
import numpy as np
import pytest
from mechanisms import four_bar_moving

import jaxmbs as mb


@pytest.fixture(scope="module")
def fourbar_state():
    return four_bar_moving()


def _final(mech, params, q, v, dt, integrator, T=0.4):
    tr = mb.simulate(mech, params, q, v, (0.0, T), dt, save_every=int(round(T / dt)),
                     integrator=integrator, stabilizer=mb.NoStabilization())
    # without stabilisation the coarse steps drift, and the first-order method's energy
    # error is real (semi-implicit Euler: 7.7 % at dt = 4 ms, halving with dt): only the
    # other flags would be a failure here
    assert int(tr.status) & ~(mb.status.DRIFT | mb.status.ENERGY) == 0
    return np.asarray(tr.q[-1])


# Kutta's third-order method: its stage 2 reads stages 0 and 1 (a shift register of two)
KUTTA3 = dict(a=((), (0.5,), (-1.0, 2.0)), b=(1 / 6, 2 / 3, 1 / 6), c=(0.0, 0.5, 1.0), order=3)
MIDPOINT = dict(a=((), (0.5,)), b=(0.0, 1.0), c=(0.0, 0.5), order=2)


# DormandPrince8: steps where its error (1e-10 to 4e-13) stays well above the reference's
# (1.5e-14 against DormandPrince8 itself at 2.5 ms); there the slope is still rising toward
# 8 (local slopes 7.8, 7.9), hence its tolerance of 0.3
@pytest.mark.parametrize("integrator,order,dts,tol", [
    (mb.RK4(), 4, (0.02, 0.01, 0.005, 0.0025), 0.2),
    (mb.DormandPrince8(), 8, (0.02, 0.0125, 0.01), 0.3),
    (mb.ExplicitRK(**KUTTA3), 3, (0.02, 0.01, 0.005, 0.0025), 0.2),
    (mb.ExplicitRK(**MIDPOINT), 2, (0.01, 0.005, 0.0025, 0.00125), 0.2),
    (mb.SemiImplicitEuler(), 1, (0.004, 0.002, 0.001, 0.0005), 0.2),
    (mb.Euler(), 1, (0.004, 0.002, 0.001, 0.0005), 0.2),
])
def test_convergence_order(fourbar_state, integrator, order, dts, tol):
    """Slope of log(error) vs log(dt) equals the integrator's order within tol
    (reference: DormandPrince5(rtol=1e-13); no stabilisation, which would add its own
    error terms)."""
    mech, params, q, v = fourbar_state
    ref = mb.simulate(mech, params, q, v, (0.0, 0.4), 0.001, save_every=400,
                      integrator=mb.DormandPrince5(rtol=1e-13, atol=1e-14, max_steps=20000),
                      stabilizer=mb.NoStabilization())
    assert int(ref.status) & ~mb.status.DRIFT == 0
    errs = [np.max(np.abs(_final(mech, params, q, v, dt, integrator) - np.asarray(ref.q[-1]))) for dt in dts]
    slope = np.polyfit(np.log(dts), np.log(errs), 1)[0]
    assert abs(slope - order) < tol, (slope, errs)


def test_dopri_tolerance_proportionality(fourbar_state):
    """Tightening rtol by 100x reduces the error substantially and the step count grows."""
    mech, params, q, v = fourbar_state
    ref = mb.simulate(mech, params, q, v, (0.0, 0.4), 0.001, save_every=400,
                      integrator=mb.DormandPrince5(rtol=1e-13, atol=1e-14, max_steps=20000))
    out = []
    for rtol in (1e-5, 1e-7, 1e-9):
        tr = mb.simulate(mech, params, q, v, (0.0, 0.4), 0.001, save_every=400,
                         integrator=mb.DormandPrince5(rtol=rtol, atol=rtol * 1e-2, max_steps=5000))
        assert int(tr.status) & ~mb.status.DRIFT == 0
        out.append((np.max(np.abs(np.asarray(tr.q[-1] - ref.q[-1]))), int(tr.n_steps)))
    errs, steps = zip(*out)
    assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-8
    assert steps[0] < steps[1] < steps[2]


def _rare_conds(jaxpr, inside_scan=False, out=None):
    """(rare conditionals outside any scan, rare conditionals inside a scan body) of a
    jaxpr: `lax.cond`s traced under `jaxmbs.core._rare.rare_cond` (the dropped-row check)."""
    from jaxmbs.core._rare import RARE_SCOPE
    from jaxmbs.experimental.elementwise._jaxpr import in_scope
    out = [0, 0] if out is None else out
    for e in jaxpr.eqns:
        if e.primitive.name == "cond" and in_scope(e, RARE_SCOPE):
            out[inside_scan] += 1
        for p in e.params.values():
            for sub in (p if isinstance(p, (tuple, list)) else [p]):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    _rare_conds(inner, inside_scan or e.primitive.name == "scan", out)
    return out


def test_rk4_first_stage_is_peeled_from_the_stage_loop():
    """Rolled RK4(peel_first_stage=True) (what the batch-minor loop runs) traces its first
    stage apart from the loop over the other three: the dropped-row conditional is in the
    first stage only, where every stage holds one with the default RK4(); and the step and
    its Record are those of the loop over all four stages. Double pendulum, Baumgarte, off
    its velocity manifold."""
    import jax
    from mechanisms import double_pendulum

    from jaxmbs.core.dynamics import step
    mech, params, q0, v0 = double_pendulum()
    y = (q0 + 1e-3, v0 + 0.05, jnp.zeros(()))
    kw = dict(stabilizer=mb.Baumgarte(10.0), solver=mb.SchurCholesky())

    res, conds = {}, {}
    for peel in (True, False):
        def one(yy, peel=peel):
            return step(mech, params, 0.02, yy, 1e-3, None, record=True,
                        integrator=mb.RK4(peel_first_stage=peel), **kw)
        conds[peel] = _rare_conds(jax.make_jaxpr(one)(y).jaxpr)
        res[peel] = jax.jit(one)(y)
    assert conds[True] == [1, 0], conds  # (first stage only)
    assert conds[False] == [0, 1], conds  # (in the loop: evaluated at every stage)
    # (two programs: equal to round-off; XLA fuses their arithmetic differently)
    for a, b in zip(jax.tree_util.tree_leaves(res[True]), jax.tree_util.tree_leaves(res[False])):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-14, atol=1e-18)
    y1, _, status, rec = res[True]
    assert int(status) == 0 and float(rec.velocity_error) > 1e-3
    assert float(jnp.max(jnp.abs(y1[0] - y[0]))) > 1e-5  # (it moved)


def test_dopri_budget_exhaustion_is_reported(fourbar_state):
    mech, params, q, v = fourbar_state
    tr = mb.simulate(mech, params, q, v, (0.0, 0.4), 0.001, save_every=400,
                     integrator=mb.DormandPrince5(rtol=1e-12, atol=1e-14, max_steps=10))
    assert int(tr.status) & mb.status.MAX_STEPS


def test_dop853_tableau_is_scipys_and_consistent():
    """DormandPrince8's tableau equals the 8th-order formula of SciPy's DOP853 (its first 12
    stages and weights B), independently transcribed, and passes the consistency checks
    (row sums equal the nodes, weights sum to 1)."""
    dop = pytest.importorskip("scipy.integrate._ivp.dop853_coefficients")
    from jaxmbs.integrators import runge_kutta as IG
    s = 12
    assert len(IG._DOP853_A) == len(IG._DOP853_B) == len(IG._DOP853_C) == s
    for i, row in enumerate(IG._DOP853_A):
        np.testing.assert_allclose(row, dop.A[i, :i], rtol=1e-15, atol=0)
    np.testing.assert_allclose(IG._DOP853_B, dop.B, rtol=1e-15, atol=0)
    np.testing.assert_allclose(IG._DOP853_C, dop.C[:s], rtol=1e-15, atol=0)
    IG._check_tableau(IG._DOP853_A, IG._DOP853_B, IG._DOP853_C, "DOP853")


def test_explicit_rk_refuses_a_bad_tableau():
    with pytest.raises(ValueError, match="rows of 0, 1"):
        mb.ExplicitRK(a=((), (0.5, 0.5)), b=(0.0, 1.0), c=(0.0, 0.5))
    with pytest.raises(ValueError, match="inconsistent tableau"):
        mb.ExplicitRK(a=((), (0.4,)), b=(0.0, 1.0), c=(0.0, 0.5))  # row sum 0.4 != c = 0.5
    with pytest.raises(ValueError, match="inconsistent tableau"):
        mb.ExplicitRK(a=((), (0.5,)), b=(0.5, 0.6), c=(0.0, 0.5))  # weights sum to 1.1
    with pytest.raises(ValueError, match="a must be a tuple of finite numbers"):
        mb.ExplicitRK(a=((), (float("nan"),)), b=(0.0, 1.0), c=(0.0, 0.5))
    # lists are taken and stored as tuples: equal configurations hash alike (one compile)
    a = mb.ExplicitRK(a=[[], [0.5]], b=[0.0, 1.0], c=[0.0, 0.5], order=2)
    assert a == mb.ExplicitRK(**MIDPOINT) and hash(a) == hash(mb.ExplicitRK(**MIDPOINT))


def _tableau(m):
    """(a rows, b, c) of RK4, DormandPrince8 or an ExplicitRK."""
    from jaxmbs.integrators import runge_kutta as IG
    if isinstance(m, mb.RK4):
        return ((), (0.5,), (0.0, 0.5), (0.0, 0.0, 1.0)), IG._RK4_B, IG._RK4_C
    if isinstance(m, mb.DormandPrince8):
        return IG._DOP853_A, IG._DOP853_B, IG._DOP853_C
    return m.a, m.b, m.c


@pytest.mark.parametrize("make,rtol,atol", [
    (mb.RK4, 1e-14, 1e-15), (mb.DormandPrince8, 1e-13, 1e-14),
    (lambda unroll=False, peel_first_stage=False: mb.ExplicitRK(
        **KUTTA3, unroll=unroll, peel_first_stage=peel_first_stage), 1e-13, 1e-14)],
    ids=["rk4", "dop853", "kutta3"])
def test_stage_loop_forms_match_the_general_tableau(make, rtol, atol):
    """Every form of the stage loop takes the step of `_rk_stages`'s indexed general form with
    the full tableau: written out, rolled with the first stage peeled
    (`peel_first_stage=True`, what the batch-minor loop runs), rolled in full; for RK4 (its stages read the one before: the
    chain form, last stage and running sum carried), DOP853 (stages read up to 11 back) and
    Kutta's third order (2 back), both through the shift register. On a nonlinear,
    non-autonomous system in a (q, v, w) state. (DOP853's coefficients up to 43 in size
    carry the rounding of their sums to about 1e-14.)"""
    import jax

    from jaxmbs.integrators import runge_kutta as IG

    def f(t, y):
        q, v, w = y
        return (v, -jnp.sin(q) * (1.0 + 0.3 * jnp.cos(2.0 * t)) - 0.1 * v ** 3, jnp.sum(v * v)), jnp.zeros((), jnp.int32)

    y = (jnp.array([0.3, -1.2, 2.0]), jnp.array([1.0, 0.5, -0.7]), jnp.zeros(()))
    a, b, c = _tableau(make())
    A = [list(r) + [0.0] * (len(c) - len(r)) for r in a]
    for h in (1e-3, 0.05):
        ks, s_ref = IG._rk_stages(IG._FnTerm(f), 0.4, y, h, A, c)
        ref = IG._combine(y, h, b, ks)
        for unroll, peel in ((True, True), (False, True), (False, False)):
            out, s = jax.jit(lambda yy: make(unroll=unroll, peel_first_stage=peel).step(
                f, 0.4, yy, h))(y)
            for x, r in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(ref)):
                np.testing.assert_allclose(np.asarray(x), np.asarray(r), rtol=rtol, atol=atol)
            assert int(s) == int(s_ref) == 0
        # and it moved: the step is not the identity
        assert float(jnp.max(jnp.abs(out[0] - y[0]))) > 0.5 * h


def test_dop853_gradient_matches_central_differences():
    """Reverse mode through DormandPrince8's rolled stage loop (shift register included)
    equals central differences of the loss, on the double pendulum w.r.t. a mass."""
    import jax
    from mechanisms import double_pendulum
    mech, params, q0, v0 = double_pendulum()

    def loss(m):
        p = mech.replace(params, {"l2.mass": m})
        tr = mb.simulate(mech, p, q0, v0, (0.0, 0.2), 0.01, save_every=20,
                         integrator=mb.DormandPrince8())
        return jnp.sum(tr.q[-1] ** 2)

    g = float(jax.grad(loss)(1.3))
    e = 1e-5
    fd = float((loss(1.3 + e) - loss(1.3 - e)) / (2 * e))
    assert abs(g) > 1e-4 and abs(g - fd) <= 1e-6 * abs(g), (g, fd)
