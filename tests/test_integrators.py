"""Convergence order of every fixed-step integrator on a closed-loop mechanism, and the
adaptive Dormand-Prince against a tight reference."""
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs as mb
from mechanisms import four_bar_moving


@pytest.fixture(scope="module")
def fourbar_state():
    return four_bar_moving()


def _final(mech, params, q, v, dt, integrator, T=0.4):
    tr = mb.simulate(mech, params, q, v, (0.0, T), dt, save_every=int(round(T / dt)),
                     integrator=integrator, stabilizer=mb.NoStabilization())
    assert int(tr.status) & ~mb.status.DRIFT == 0
    return np.asarray(tr.q[-1])


@pytest.mark.parametrize("integrator,order,dts", [
    (mb.RK4(), 4, (0.02, 0.01, 0.005, 0.0025)),
    (mb.SemiImplicitEuler(), 1, (0.004, 0.002, 0.001, 0.0005)),
    (mb.Euler(), 1, (0.004, 0.002, 0.001, 0.0005)),
])
def test_convergence_order(fourbar_state, integrator, order, dts):
    """Slope of log(error) vs log(dt) equals the integrator's order within 0.2
    (reference: DOP853-class tight adaptive run; no stabilisation, which would add its own
    error terms)."""
    mech, params, q, v = fourbar_state
    ref = mb.simulate(mech, params, q, v, (0.0, 0.4), 0.001, save_every=400,
                      integrator=mb.DormandPrince5(rtol=1e-13, atol=1e-14, max_steps=20000),
                      stabilizer=mb.NoStabilization())
    assert int(ref.status) & ~mb.status.DRIFT == 0
    errs = [np.max(np.abs(_final(mech, params, q, v, dt, integrator) - np.asarray(ref.q[-1]))) for dt in dts]
    slope = np.polyfit(np.log(dts), np.log(errs), 1)[0]
    assert abs(slope - order) < 0.2, (slope, errs)


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
    jaxpr: `lax.cond`s traced under `jaxmbs._rare.rare_cond` (the dropped-row check)."""
    from jaxmbs._rare import RARE_SCOPE
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
    """Rolled RK4 traced under integrators.peeled_first_stage() (simulate's batch-minor
    loop) traces its first stage apart from the loop over the other three: the dropped-row
    conditional is in the first stage only, where every stage holds one otherwise
    (PEEL_FIRST_STAGE False, or outside that context); and the step and its Record are
    those of the loop over all four stages. Double pendulum, Baumgarte, off its velocity
    manifold."""
    import jax
    from jaxmbs import integrators as IG
    from jaxmbs.dynamics import step
    from mechanisms import double_pendulum
    mech, params, q0, v0 = double_pendulum()
    y = (q0 + 1e-3, v0 + 0.05, jnp.zeros(()))
    kw = dict(integrator=mb.RK4(), stabilizer=mb.Baumgarte(10.0), solver=mb.SchurCholesky())

    def one(yy):
        with IG.peeled_first_stage():  # (as simulate's batch-minor loop traces its step)
            return step(mech, params, 0.02, yy, 1e-3, None, record=True, **kw)

    res, conds = {}, {}
    for peel in (True, False):
        IG.PEEL_FIRST_STAGE = peel
        jax.clear_caches()  # (the jitted pieces of the step were traced with the other form)
        try:
            conds[peel] = _rare_conds(jax.make_jaxpr(one)(y).jaxpr)
            res[peel] = jax.jit(one)(y)
        finally:
            IG.PEEL_FIRST_STAGE = True
            jax.clear_caches()
    assert conds[True] == [1, 0], conds  # (first stage only)
    assert conds[False] == [0, 1], conds  # (in the loop: evaluated at every stage)
    # (outside the context, the default for simulate and the other paths: one loop)
    assert _rare_conds(jax.make_jaxpr(
        lambda yy: step(mech, params, 0.02, yy, 1e-3, None, record=True, **kw))(y).jaxpr) == [0, 1]
    for a, b in zip(jax.tree_util.tree_leaves(res[True]), jax.tree_util.tree_leaves(res[False])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    y1, _, status, rec = res[True]
    assert int(status) == 0 and float(rec.velocity_error) > 1e-3
    assert float(jnp.max(jnp.abs(y1[0] - y[0]))) > 1e-5  # (it moved)


def test_dopri_budget_exhaustion_is_reported(fourbar_state):
    mech, params, q, v = fourbar_state
    tr = mb.simulate(mech, params, q, v, (0.0, 0.4), 0.001, save_every=400,
                     integrator=mb.DormandPrince5(rtol=1e-12, atol=1e-14, max_steps=10))
    assert int(tr.status) & mb.status.MAX_STEPS


def test_rk4_chain_form_matches_the_general_tableau():
    """RK4's stage loop in chain form (running sum and last stage carried, rolled or written
    out) takes the same step as the general explicit-RK stage loop with the full tableau,
    on a nonlinear, non-autonomous system in a (q, v, w) state."""
    import jax
    from jaxmbs import integrators as IG

    def f(t, y):
        q, v, w = y
        return (v, -jnp.sin(q) * (1.0 + 0.3 * jnp.cos(2.0 * t)) - 0.1 * v ** 3, jnp.sum(v * v)), jnp.zeros((), jnp.int32)

    y = (jnp.array([0.3, -1.2, 2.0]), jnp.array([1.0, 0.5, -0.7]), jnp.zeros(()))
    A = ((0, 0, 0, 0), (0.5, 0, 0, 0), (0, 0.5, 0, 0), (0, 0, 1.0, 0))
    for h in (1e-3, 0.05):
        ks, s_ref = IG._rk_stages(IG._FnTerm(f), 0.4, y, h, A, IG._RK4_C)
        ref = IG._combine(y, h, IG._RK4_B, ks)
        # (written out; rolled with the first stage peeled, the default; rolled in full)
        for unroll, peel in ((True, True), (False, True), (False, False)):
            IG.PEEL_FIRST_STAGE = peel
            jax.clear_caches()
            try:
                with IG.peeled_first_stage():
                    out, s = jax.jit(lambda yy: mb.RK4(unroll=unroll).step(f, 0.4, yy, h))(y)
            finally:
                IG.PEEL_FIRST_STAGE = True
                jax.clear_caches()
            for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(ref)):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-14, atol=1e-15)
            assert int(s) == int(s_ref) == 0
        # and it moved: the step is not the identity
        assert float(jnp.max(jnp.abs(out[0] - y[0]))) > 0.5 * h
