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
