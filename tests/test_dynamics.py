"""Forward and inverse dynamics against independent references."""
import jax.numpy as jnp
import numpy as np
import pytest
from mechanisms import double_pendulum, four_bar, slider_crank
from reference import closed_forms as cf

import jaxmbs as mb


def test_double_pendulum_energy_and_reference():
    """RK4, dt = 1e-3, 10 s: relative energy drift < 1e-8; tip agrees with a minimal-
    coordinate DOP853 solution (rtol 1e-13) while the motion is still predictable."""
    mech, params, q0, v0 = double_pendulum()
    tr = mb.simulate(mech, params, q0, v0, (0.0, 10.0), 1e-3, save_every=100)
    assert int(tr.status) == 0
    # E0 = 0 here, so drift is relative to the largest kinetic energy
    assert float(tr.energy_drift()) < 1e-8
    assert float(jnp.max(tr.constraint_error)) < 1e-12
    ref = cf.double_pendulum_solve(2.0, t_eval=np.asarray(tr.t[:21]))
    # tip of link 2: reference point + A (0.5, 0)
    th2 = tr.q[:21, 5]
    tip = np.stack([tr.q[:21, 3] + 0.5 * np.cos(th2), tr.q[:21, 4] + 0.5 * np.sin(th2)], -1)
    np.testing.assert_allclose(tip, ref["tip"], atol=1e-9)


def test_pendulum_period_against_elliptic_integral():
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_particle("mass", mass=1.0, position=(1.0, 0.0))
    m.add_distance("rod", "ground", "mass", at_i=(0.0, 0.0), at_j=(1.0, 0.0))
    mech, params, q0, v0 = m.build()
    tr = mb.simulate(mech, params, q0, v0, (0.0, 5.0), 1e-3)
    x = np.asarray(tr.q[:, 0])
    t = np.asarray(tr.t)
    # downward zero crossings of x (mass passes the bottom moving in -x); interpolate
    idx = np.nonzero((x[:-1] > 0) & (x[1:] <= 0))[0]
    tc = t[idx] - x[idx] * (t[idx + 1] - t[idx]) / (x[idx + 1] - x[idx])
    # period from the first two crossings in the same direction
    assert len(tc) >= 2
    T_num = tc[1] - tc[0]
    T_ref = cf.pendulum_period(1.0, 9.81, np.pi / 2)
    assert abs(T_num - T_ref) < 1e-6  # linear interpolation of samples at 1 ms: ~1e-7 s
    exact = cf.pendulum_exact(t)
    np.testing.assert_allclose(tr.q[:, 0], exact["x"], atol=1e-9)
    np.testing.assert_allclose(tr.q[:, 1], exact["y"], atol=1e-9)


def test_slider_crank_kinematics_and_inverse_dynamics():
    mech, params, q0, v0 = slider_crank()
    ts = jnp.linspace(0.0, 2 * np.pi / 150.0, 49)
    res = mb.inverse_dynamics(mech, params, q0, ts)
    assert int(res.status) == 0
    phi = 150.0 * np.asarray(ts)
    x, xd, xdd = cf.slider_kinematics(phi)
    i = mech.coordinate_index("slider.x")
    np.testing.assert_allclose(res.q[:, i], x, atol=1e-13)
    np.testing.assert_allclose(res.v[:, i], xd, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(res.a[:, i], xdd, rtol=1e-10, atol=1e-8)
    assert abs(float(res.a[0, i]) + 5062.5) < 1e-9
    ne = cf.crank_inverse_dynamics_newton_euler(phi)
    R = res.reactions
    np.testing.assert_allclose(R["motor"]["effort"], ne["torque"], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(R["motor"]["effort"], cf.crank_torque_lagrange(phi), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(R["O"]["force"], ne["R_O"], rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(R["A"]["force"], ne["F_A"], rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(R["B"]["force"], -ne["F_B"], rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(R["P"]["force"][:, 1], ne["N"], rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(R["P"]["force"][:, 0], 0.0, atol=1e-9)
    # revolute joints transmit no moment about their own point
    np.testing.assert_allclose(R["A"]["moment"], 0.0, atol=1e-10)


def test_hanging_pendulum_reaction_sign():
    """A body hanging at rest from a pin: the pin pushes it up with m g."""
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_body("bob", mass=2.0, inertia=0.1, position=(0.0, -1.0))
    m.add_revolute("pin", "ground", "bob", at=(0.0, 0.0))
    mech, params, q0, v0 = m.build()
    acc = mb.accelerations(mech, params, q0, v0, 0.0)
    r = mb.reactions(mech, params, q0, acc.lam)
    np.testing.assert_allclose(r["pin"]["force"], [0.0, 2.0 * 9.81], atol=1e-12)
    np.testing.assert_allclose(acc.qdd, 0.0, atol=1e-12)


def test_dense_lu_agrees_with_schur_cholesky():
    mech, params, q0, v0 = four_bar()
    res = mb.assemble(mech, params, q0, fixed=("crank.theta",))
    v = jnp.zeros_like(res.q).at[2].set(1.3)
    res = mb.assemble(mech, params, res.q, v, fixed=("crank.theta",))
    a1 = mb.accelerations(mech, params, res.q, res.v, 0.0, solver=mb.SchurCholesky())
    a2 = mb.accelerations(mech, params, res.q, res.v, 0.0, solver=mb.DenseLU())
    np.testing.assert_allclose(a1.qdd, a2.qdd, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(a1.lam, a2.lam, rtol=1e-10, atol=1e-10)
    big = mb.SchurCholesky(unroll_max=0)  # LAPACK path
    a3 = mb.accelerations(mech, params, res.q, res.v, 0.0, solver=big)
    np.testing.assert_allclose(a1.qdd, a3.qdd, rtol=1e-10, atol=1e-10)


def test_four_bar_energy_and_stabilizers():
    mech, params, q0, v0 = four_bar()
    res = mb.assemble(mech, params, q0, fixed=("crank.theta",))
    for stab, tol in ((mb.Projection(), 1e-8), (mb.Baumgarte(10.0), 1e-6)):
        tr = mb.simulate(mech, params, res.q, res.v, (0.0, 3.0), 1e-3, save_every=50, stabilizer=stab)
        assert int(tr.status) == 0, mb.status.describe(tr.status)
        assert float(tr.energy_drift()) < tol
        assert float(jnp.max(tr.constraint_error)) < 1e-8


def test_damped_and_driven_energy_balance():
    """With dampers, actuators, loads and a user force: T + V - W is conserved, and with
    dampers only the mechanical energy never increases."""
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_body("l1", mass=1.0, inertia=1 / 12, position=(0.5, 0.0), cg=(0.05, 0.0))
    m.add_body("l2", mass=1.0, inertia=1 / 12, position=(1.5, 0.0))
    m.add_revolute("O", "ground", "l1", at=(0.0, 0.0))
    m.add_revolute("A", "l1", "l2", at=(1.0, 0.0))
    m.add_spring("s", "ground", "l2", k=30.0, c=1.5, at_i=(1.0, 1.0), at_j=(2.0, 0.0))
    m.add_torsion_spring("t", "l1", "l2", k=5.0, c=0.3)
    mech, params, q0, v0 = m.build()
    tr = mb.simulate(mech, params, q0, v0, (0.0, 3.0), 1e-3, save_every=10)
    E = np.asarray(tr.kinetic + tr.potential)
    assert np.all(np.diff(E) <= 1e-9)
    assert E[-1] < E[0] - 1.0
    assert float(tr.energy_drift()) < 1e-8
    # actuation: a control torque load and a time-dependent force
    m.add_load("motor", "l1", torque=1.0, control=0)
    m.add_load("push", "l2", fn=lambda t: jnp.array([jnp.sin(3 * t), 0.0, 0.0]), at=(2.0, 0.0))
    mech, params, q0, v0 = m.build()
    u = jnp.sin(jnp.linspace(0, 6, 3000))[:, None]
    tr = mb.simulate(mech, params, q0, v0, (0.0, 3.0), 1e-3, save_every=10, controls=u)
    assert float(jnp.max(jnp.abs(tr.work))) > 0.1
    assert float(tr.energy_drift()) < 1e-7
    tr2 = mb.simulate(mech, params, q0, v0, (0.0, 3.0), 1e-3, save_every=10,
                      controls=lambda t: jnp.array([jnp.sin(2 * t)]))
    assert float(tr2.energy_drift()) < 1e-7


def test_driven_simulation_matches_inverse_dynamics():
    """Forward dynamics of the driven slider-crank reproduces the prescribed motion, and
    the driving torque from simulate's multipliers equals inverse dynamics."""
    mech, params, q0, v0 = slider_crank()
    res = mb.assemble(mech, params, q0, v0)
    tr = mb.simulate(mech, params, res.q, res.v, (0.0, 0.04), 1e-4, save_every=40)
    inv = mb.inverse_dynamics(mech, params, res.q, tr.t)
    np.testing.assert_allclose(tr.q, inv.q, atol=1e-10)
    row = mech.joint("motor").rows[0]
    np.testing.assert_allclose(-tr.lam[:, row], inv.reactions["motor"]["effort"], rtol=1e-7, atol=1e-6)


def test_free_slider_crank_against_numpy_reference():
    """The undriven slider-crank (crank at 150 rad/s, no gravity) conserves energy and
    keeps its loop closed; DOP853 at tight tolerance agrees with RK4 at small dt."""
    mech, params, q0, v0 = slider_crank(driven=False)
    a = mb.simulate(mech, params, q0, v0, (0.0, 0.1), 1e-4, save_every=100)
    b = mb.simulate(mech, params, q0, v0, (0.0, 0.1), 1e-4, save_every=100,
                    integrator=mb.DormandPrince5(rtol=1e-11, atol=1e-12, max_steps=20000))
    assert int(a.status) == 0 and int(b.status) == 0
    # RK4's energy error at omega*dt = 0.015 rad per step: ~2e-9 measured
    assert float(a.energy_drift()) < 1e-8
    assert float(b.energy_drift()) < 1e-9
    np.testing.assert_allclose(a.q[-1], b.q[-1], atol=1e-8)


@pytest.mark.parametrize("integrator", [mb.RK4(), mb.RK4(unroll=True), mb.Euler(),
                                        mb.SemiImplicitEuler()])
def test_step_record_is_the_solve_at_the_start_state(integrator):
    """dynamics.step(record=True) hands out the Record at its start state, read off its
    first evaluation of the vector field (what simulate_batch saves at a save point): it
    equals an independent accelerations solve and energy evaluation there, and the step
    itself is the step taken without recording. Driven slider-crank off its constraint
    manifold's velocity level (so velocity_error is not 0), Baumgarte (its feedback enters
    lam)."""
    from jaxmbs.core.dynamics import step
    mech, params, q0, v0 = slider_crank()
    q = q0 + 1e-4 * jnp.arange(q0.size)
    v = v0 + 0.01 * jnp.cos(jnp.arange(v0.size))
    y, t, h = (q, v, jnp.zeros(())), 0.03, 1e-3
    kw = dict(integrator=integrator, stabilizer=mb.Baumgarte(10.0), solver=mb.SchurCholesky())
    y1, _, s1, rec = step(mech, params, t, y, h, None, record=True, **kw)
    y0, _, s0 = step(mech, params, t, y, h, None, **kw)
    for a, b in zip(y1, y0):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(s1) == int(s0)
    acc = mb.accelerations(mech, params, q, v, t, stabilizer=mb.Baumgarte(10.0))
    from jaxmbs.core.equations import constraint_terms, energy_terms
    T, V = energy_terms(mech, params, q, v, t)
    terms = constraint_terms(mech, params, q, v, t)
    np.testing.assert_allclose(rec.lam, acc.lam, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rec.constraint_error, np.max(np.abs(terms.phi)), rtol=1e-12)
    np.testing.assert_allclose(rec.velocity_error, np.max(np.abs(terms.jac @ v + terms.phit)),
                               rtol=1e-12)
    assert float(rec.velocity_error) > 1e-4  # (off the velocity manifold: a real check)
    np.testing.assert_allclose(rec.kinetic, T, rtol=1e-13)
    np.testing.assert_allclose(rec.potential, V, rtol=1e-13, atol=1e-13)


def test_step_record_refused_by_an_integrator_without_it():
    """record=True with an integrator that does not hand out its start state's Record
    (here the symplectic RATTLE, which works on the DAE, not the vector field) is a
    ValueError naming the integrators that do."""
    from jaxmbs.core.dynamics import records, step
    mech, params, q0, v0 = double_pendulum()
    assert records(mb.RK4()) and not records(mb.Rattle())
    with pytest.raises(ValueError, match="RK4, Euler or SemiImplicitEuler"):
        step(mech, params, 0.0, (q0, v0, jnp.zeros(())), 1e-3, None, integrator=mb.Rattle(),
             stabilizer=mb.Projection(), solver=mb.SchurCholesky(), record=True)


def _pendulum_chain(n, L=0.5):
    """n rods pinned in series to the ground (2n rows: the banded path's automatic case)."""
    m = mb.Model(gravity=(0.0, -9.81))
    e = np.array([np.cos(-1.0), np.sin(-1.0)])
    for k in range(n):
        m.add_body(f"l{k}", mass=1.0 + 0.1 * k, inertia=(1.0 + 0.1 * k) * L**2 / 12,
                   position=(k + 0.5) * L * e, angle=-1.0)
        m.add_revolute(f"j{k}", "ground" if k == 0 else f"l{k - 1}", f"l{k}", at=k * L * e)
    return m.build()


def _spatial_slider_crank():
    import importlib
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    ex = importlib.import_module("spatial_slider_crank")
    mech, params, q0, v0 = ex.build()
    s0 = ex.initial_state(mech, params, q0, v0)
    return mech, params, s0.q, s0.v


@pytest.mark.parametrize("build, dt", [(lambda: slider_crank(driven=False), 0.002),
                                       (lambda: _pendulum_chain(12), 0.01),
                                       (_spatial_slider_crank, 0.02)],
                         ids=["dense", "banded", "spatial"])
def test_projection_shares_one_factorisation(build, dt):
    """`project` takes the velocity correction from the factor of its position correction
    (refactor=False, the default): (1) `SchurCholesky.projector` is the solver's own
    least-M-norm correction (dense and banded paths); (2) from a drifted state the positions
    are those of refactor=True, and the velocity residual left is first order in the
    position correction |dq| (documented bound), where refactor=True leaves round-off; the
    velocities differ from the exact projection's by as little, relative to the correction."""
    from jaxmbs.core.equations import constraint_terms, mass_matrix
    from jaxmbs.formulations.banded import wants_sparse
    mech, params, q0, v0 = build()
    solver = mb.SchurCholesky()
    sparse = wants_sparse(solver, mech)
    assert sparse == (mech.n_constraints == 24)
    # a drifted state: 10 RK4 steps of dt with no stabilisation
    tr = mb.simulate(mech, params, q0, v0, (0.0, 10 * dt), dt, save_every=10,
                     stabilizer=mb.NoStabilization())
    q, v, t = tr.q[-1], tr.v[-1], 10 * dt
    terms = constraint_terms(mech, params, q, v, t, sparse)
    M = mass_matrix(mech, params, q)
    r = jnp.asarray(np.random.default_rng(0).standard_normal(mech.n_constraints))
    dx, _, _ = solver.solve(M, terms.jac, jnp.zeros(mech.n_vel), -r)
    np.testing.assert_allclose(solver.projector(M, terms.jac)(r), dx, rtol=1e-10,
                               atol=1e-12 * float(jnp.max(jnp.abs(dx))))
    r0 = float(jnp.max(jnp.abs(terms.jac @ v + terms.phit)))
    out = {rf: mb.project(mech, params, q, v, t, solver, 1, None, rf) for rf in (True, False)}
    (qa, va, sa), (qb, vb, sb) = out[True], out[False]
    assert int(sa) == int(sb) == 0
    dq = float(jnp.max(jnp.abs(qa - q)))
    assert 1e-9 < dq < 1e-2 and r0 > 1e-8  # (a real drift to correct)
    np.testing.assert_allclose(qb, qa, rtol=0, atol=1e-13)
    ta = constraint_terms(mech, params, qa, va, t)
    tb = constraint_terms(mech, params, qb, vb, t)
    ra = float(jnp.max(jnp.abs(ta.jac @ va + ta.phit)))
    rb = float(jnp.max(jnp.abs(tb.jac @ vb + tb.phit)))
    assert ra < 1e-12 * max(1.0, r0)
    assert rb < 10.0 * dq * r0
    # (first order in dq, its constant set by the mechanism: 18 measured for the dense case)
    assert float(jnp.max(jnp.abs(vb - va))) < 100.0 * dq * float(jnp.max(jnp.abs(va - v)))
