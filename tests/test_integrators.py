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
        for unroll in (False, True):
            out, s = jax.jit(lambda yy: mb.RK4(unroll=unroll).step(f, 0.4, yy, h))(y)
            for a, b in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(ref)):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-14, atol=1e-15)
            assert int(s) == int(s_ref) == 0
        # and it moved: the step is not the identity
        assert float(jnp.max(jnp.abs(out[0] - y[0]))) > 0.5 * h
