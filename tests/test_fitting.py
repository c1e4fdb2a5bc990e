"""jaxmbs.fitting: trainable selection, measurements, gradient fits (L-BFGS, Adam,
multi-start), Gauss-Newton covariance and identifiability, and the linear regressor.

Small problems (a one-body pendulum, a driven four-bar) keep each test well under 30 s
on two cores; the fits share one compilation per problem structure.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mechanisms import four_bar_points

import jaxmbs as mb
from jaxmbs import fitting as fit

# ----------------------------------------------------------------------------- pendulum
T_END, DT, SAVE = 2.0, 5e-3, 4
SIM = dict(integrator=mb.SemiImplicitEuler(), stabilizer=mb.Baumgarte(20.0))
TRUE = {"arm.mass": 1.0, "ts.k": 5.0, "ts.c": 0.2}


def pendulum(mass=1.0, inertia=0.02, k=5.0, c=0.2):
    """A bar pinned at O (its reference point), CG 0.3 m out, torsion spring-damper at O."""
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_body("arm", mass=mass, inertia=inertia, position=(0.0, 0.0), cg=(0.3, 0.0), angle=0.5)
    m.add_revolute("O", "ground", "arm", at=(0.0, 0.0))
    m.add_torsion_spring("ts", "ground", "arm", k=k, c=c, angle=0.0)
    return m.build()


@pytest.fixture(scope="module")
def pend():
    mech, params, q0, v0 = pendulum()
    traj = mb.simulate(mech, params, q0, v0, (0.0, T_END), DT, save_every=SAVE, **SIM)
    outputs = [fit.angle("arm"), fit.reaction("O", "force")]
    data = fit.synthetic(mech, params, traj, outputs, rel_noise=0.01, key=jax.random.PRNGKey(1))
    return mech, params, q0, v0, traj, data


def _problem(mech, base, q0, v0, data, names=tuple(TRUE)):
    tr = fit.Trainable(mech, base, list(names))
    return fit.Problem(mech, tr, q0, v0, (0.0, T_END), DT, data, save_every=SAVE, **SIM)


# --------------------------------------------------------------------- no simulation
def test_trainable_transforms_and_roundtrip():
    mech, params, _, _ = pendulum()
    tr = fit.Trainable(mech, params, ["arm.mass", "ts.c", "arm.cg[1]", "ts.angle"],
                       bounds={"ts.c": (0.0, 1.0)})
    kinds = {s[0]: s[3] for s in tr.slots}
    assert kinds == {"arm.mass": "log", "ts.c": "box", "arm.cg[1]": "identity", "ts.angle": "identity"}
    assert tr.labels == ("arm.mass", "ts.c", "arm.cg[1]", "ts.angle")
    th = tr.to_theta({"arm.mass": 2.0, "ts.c": 0.25, "arm.cg[1]": -0.1, "ts.angle": 0.3})
    np.testing.assert_allclose(th[0], np.log(2.0))
    np.testing.assert_allclose(th[1], np.log(0.25 / 0.75))
    p = tr.to_params(th)
    assert float(mech.get(p, "arm.mass")) == pytest.approx(2.0)
    assert float(mech.get(p, "ts.c")) == pytest.approx(0.25)
    np.testing.assert_allclose(np.asarray(mech.get(p, "arm.cg")), [0.3, -0.1])  # x kept
    assert float(mech.get(p, "ts.angle")) == pytest.approx(0.3)
    np.testing.assert_allclose(tr.to_theta(p), th, atol=1e-14)
    # any theta maps inside the box and to a positive mass; pure under jit/vmap
    thetas = jnp.array([[-50.0, 40.0, 0.0, 0.0], [50.0, -40.0, 1.0, 2.0]])
    ps = jax.jit(jax.vmap(tr.to_params))(thetas)
    assert np.all(np.asarray(ps.bodies["planar_rigid"]["mass"]) > 0)
    c = np.asarray(ps.forces["torsion"]["c"])
    assert np.all((c >= 0) & (c <= 1))
    np.testing.assert_allclose(tr.dphysical(th), [2.0, 0.25 * 0.75, 1.0, 1.0])


def test_trainable_errors():
    mech, params, _, _ = pendulum()
    with pytest.raises(ValueError, match="unknown parameter 'arm.masss'"):
        fit.Trainable(mech, params, ["arm.masss"])
    with pytest.raises(ValueError, match="component 5 out of range"):
        fit.Trainable(mech, params, ["arm.cg[5]"])
    with pytest.raises(ValueError, match="positive"):
        fit.Trainable(mech, params, ["ts.angle"], transforms={"ts.angle": "log"})
    with pytest.raises(ValueError, match="lo < hi"):
        fit.Trainable(mech, params, ["ts.k"], bounds={"ts.k": (2.0, 1.0)})
    with pytest.raises(ValueError, match="no trainable"):
        fit.Trainable(mech, params, {"ts.k": False})
    tr = fit.Trainable(mech, params, ["ts.c"], bounds={"ts.c": (0.0, 0.1)})
    with pytest.raises(ValueError, match="outside its bounds"):
        tr.initial()  # the base value 0.2 is outside (0, 0.1)


def test_measurements_must_lie_on_the_save_grid():
    mech, params, q0, v0 = pendulum()
    tr = fit.Trainable(mech, params, ["ts.k"])
    t = np.arange(0, 11) * DT * SAVE
    good = fit.Measurement(fit.angle("arm"), t, np.zeros(t.size), 0.01)
    prob = fit.Problem(mech, tr, q0, v0, (0.0, T_END), DT, [good], save_every=SAVE, **SIM)
    np.testing.assert_array_equal(np.asarray(prob.measurements[0].index), np.arange(11))
    off = fit.Measurement(fit.angle("arm"), t + 0.003, np.zeros(t.size), 0.01)
    with pytest.raises(ValueError, match="not on the simulation's save grid"):
        fit.Problem(mech, tr, q0, v0, (0.0, T_END), DT, [off], save_every=SAVE, **SIM)
    late = fit.Measurement(fit.angle("arm"), [T_END + DT * SAVE], [0.0], 0.01)
    with pytest.raises(ValueError, match="not on the simulation's save grid"):
        fit.Problem(mech, tr, q0, v0, (0.0, T_END), DT, [late], save_every=SAVE, **SIM)
    with pytest.raises(ValueError, match=r"values must have shape \(11, 2\)"):
        fit.Problem(mech, tr, q0, v0, (0.0, T_END), DT,
                    [fit.Measurement(fit.point("arm", (0.6, 0.0)), t, np.zeros(t.size), 0.01)],
                    save_every=SAVE, **SIM)
    with pytest.raises(ValueError, match="sigma must be positive"):
        fit.Problem(mech, tr, q0, v0, (0.0, T_END), DT,
                    [fit.Measurement(fit.angle("arm"), t, np.zeros(t.size), 0.0)], save_every=SAVE, **SIM)
    with pytest.raises(ValueError, match="component must be one of"):
        fit.Problem(mech, tr, q0, v0, (0.0, T_END), DT,
                    [fit.Measurement(fit.reaction("O", "effort"), t, np.zeros(t.size), 1.0)],
                    save_every=SAVE, **SIM)


def test_outputs_evaluate_points_and_reactions(pend):
    mech, params, _, _, traj, _ = pend
    tip, F = fit.evaluate_outputs(mech, params, traj, [fit.point("arm", (0.6, 0.0)),
                                                       fit.reaction("O", "force")])
    th = np.asarray(traj.q[:, 2])
    np.testing.assert_allclose(np.asarray(tip), 0.6 * np.stack([np.cos(th), np.sin(th)], -1), atol=1e-12)
    ref = jax.vmap(lambda q, l: mb.reactions(mech, params, q, l)["O"]["force"])(traj.q, traj.lam)
    np.testing.assert_allclose(np.asarray(F), np.asarray(ref), rtol=1e-12)


# ------------------------------------------------------------------------ gradient fits
def test_lbfgs_fit_recovers_parameters_with_covariance(pend):
    mech, ptrue, q0, v0, _, data = pend
    start = mech.replace(ptrue, {"arm.mass": 1.5, "ts.k": 3.0, "ts.c": 0.5})
    prob = _problem(mech, start, q0, v0, data)
    res = fit.fit(prob)
    assert res.converged and res.iterations < 100
    assert res.history[0] > 100 * res.loss and abs(res.loss - 0.5) < 0.15  # noise floor
    for k, v in TRUE.items():
        assert abs(res.values[k] - v) / v < 0.01, (k, res.values[k])
    an = fit.analyze(prob, res.theta)
    assert an.rank == 3 and an.identifiable and not an.null_directions
    for i, k in enumerate(an.labels):
        assert abs(an.values[i] - TRUE[k]) < 5 * an.std[i]  # consistent with the noise
        assert an.rel_std[i] < 0.01
    assert 0.7 < an.chi2_dof < 1.3
    np.testing.assert_allclose(an.cov, an.cov.T, rtol=1e-10, atol=1e-30)
    # the same structure with new data reuses the compilation (fast second fit)
    res2 = fit.fit(prob, {"arm.mass": 0.7, "ts.k": 8.0, "ts.c": 0.1})
    np.testing.assert_allclose(res2.theta, res.theta, atol=1e-4)


def test_multistart_is_a_vmapped_batch_and_picks_the_best(pend):
    mech, ptrue, q0, v0, _, data = pend
    prob = _problem(mech, ptrue, q0, v0, data)
    center = prob.trainable.to_theta({"arm.mass": 1.3, "ts.k": 4.0, "ts.c": 0.3})
    starts = fit.random_starts(prob.trainable, jax.random.PRNGKey(0), 3, spread=0.7, center=center)
    assert starts.shape == (3, 3)
    np.testing.assert_allclose(starts[0], center)
    res = fit.fit(prob, starts, max_iter=60)
    assert res.all_theta.shape == (3, 3) and res.start_losses.shape == (3,)
    assert res.loss == pytest.approx(np.nanmin(res.start_losses))
    for k, v in TRUE.items():
        assert abs(res.values[k] - v) / v < 0.01


def test_adam_decreases_the_loss(pend):
    mech, ptrue, q0, v0, _, data = pend
    start = mech.replace(ptrue, {"arm.mass": 1.3, "ts.k": 4.0, "ts.c": 0.3})
    prob = _problem(mech, start, q0, v0, data)
    res = fit.fit(prob, method="adam", learning_rate=0.05, max_iter=40)
    assert res.iterations == 40 and res.history.shape == (41,)
    assert res.loss < 0.1 * res.history[0]
    assert abs(res.values["ts.k"] - 5.0) < abs(4.0 - 5.0)


def test_horizon_continuation_reuses_the_problem(pend):
    mech, ptrue, q0, v0, _, data = pend
    start = mech.replace(ptrue, {"arm.mass": 1.5, "ts.k": 3.0, "ts.c": 0.5})
    prob = _problem(mech, start, q0, v0, data)
    short = prob.up_to(0.5)
    assert jax.tree_util.tree_structure(short) == jax.tree_util.tree_structure(prob)
    t = np.asarray(short.measurements[0].times)
    sig = np.asarray(short.measurements[0].sigma)[:, 0]
    assert np.all(np.isinf(sig[t > 0.5])) and np.all(np.isfinite(sig[t <= 0.5]))
    r = np.asarray(short.residuals(prob.trainable.initial()))[: t.size]
    assert np.all(r[t > 0.5] == 0) and np.all(r[t <= 0.5][1:] != 0)
    res = fit.fit(prob, horizons=(0.5, 1.0))  # same compiled optimiser for all three stages
    assert res.history.size == res.iterations + 3
    for k, v in TRUE.items():
        assert abs(res.values[k] - v) / v < 0.01


# --------------------------------------------------------------------- identifiability
def test_identifiability_flags_mass_and_inertia_of_a_free_pendulum(pend):
    """Angle alone: a free pendulum's motion depends on J_O / (m c) only, so scaling mass
    and inertia together changes nothing; a measured bearing force fixes the scale."""
    mech, ptrue, q0, v0, _, _ = pend
    free = mech.replace(ptrue, {"ts.k": 0.0, "ts.c": 0.0})
    traj = mb.simulate(mech, free, q0, v0, (0.0, T_END), DT, save_every=SAVE, **SIM)
    outs = [fit.angle("arm"), fit.reaction("O", "force")]
    data = fit.synthetic(mech, free, traj, outs, sigma=[0.01, 0.1])
    tr = fit.Trainable(mech, free, ["arm.mass", "arm.inertia"])
    angle_only = fit.Problem(mech, tr, q0, v0, (0.0, T_END), DT, data[:1], save_every=SAVE, **SIM)
    an = fit.identifiability(angle_only, tr.initial())
    assert an.rank == 1 and not an.identifiable
    assert an.singular_values[1] < 1e-9 * an.singular_values[0]
    (d,) = an.null_directions
    assert set(d) == {"arm.mass", "arm.inertia"}
    np.testing.assert_allclose([d["arm.mass"], d["arm.inertia"]], [2**-0.5, 2**-0.5], atol=1e-6)
    assert set(an.non_identifiable) == {"arm.mass", "arm.inertia"}
    assert np.all(np.isinf(an.std))
    assert "not separable" in an.summary()
    with_force = fit.Problem(mech, tr, q0, v0, (0.0, T_END), DT, data, save_every=SAVE, **SIM)
    an2 = fit.identifiability(with_force, tr.initial())
    assert an2.rank == 2 and an2.identifiable and np.all(np.isfinite(an2.std))


def test_jacobian_report_names_zero_columns_and_combinations():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(50, 2))
    J = np.column_stack([A[:, 0], A[:, 1], np.zeros(50), A[:, 0] + 2 * A[:, 1]])
    rank, s, nulls, _ = fit.jacobian_report(J, ("a", "b", "c", "d"))
    assert rank == 2 and s[2] < 1e-10 * s[0]
    assert {"c": 1.0} in nulls
    (combo,) = [d for d in nulls if "c" not in d]
    v = np.array([combo.get(k, 0.0) for k in "abd"])
    np.testing.assert_allclose(v / v[2], [-1.0, -2.0, 1.0], atol=1e-10)


# ------------------------------------------------------------------ linear regressor
def driven_four_bar(th0=np.pi / 3):
    """Four-bar with offset CGs, a torsion spring-damper on the rocker, driven at O with a
    non-uniform speed (so that accelerations excite every inertial parameter)."""
    A, B, D = four_bar_points(th0)
    m = mb.Model(gravity=(0.0, -9.81))

    def bar(name, P, Q, cg, mass):
        L = np.linalg.norm(Q - P)
        m.add_body(name, mass=mass, inertia=mass * L**2 / 12, position=P,
                   angle=np.arctan2(*(Q - P)[::-1]), cg=cg)

    bar("crank", np.zeros(2), A, (0.1, 0.02), 0.4)
    bar("coupler", A, B, (0.3, -0.03), 1.1)
    bar("rocker", D, B, (0.2, 0.05), 0.7)
    m.add_revolute("O", "ground", "crank", at=(0.0, 0.0))
    m.add_revolute("A", "crank", "coupler", at=A)
    m.add_revolute("B", "coupler", "rocker", at=B)
    m.add_revolute("D", "ground", "rocker", at=D)
    m.add_torsion_spring("ts", "ground", "rocker", k=3.0, c=0.1)
    m.drive_joint("motor", "O", lambda t: th0 + 3.0 * t + 0.8 * jnp.sin(5.0 * t))
    return m.build()


@pytest.fixture(scope="module")
def four_bar_motion():
    mech, params, q0, _ = driven_four_bar()
    idy = mb.inverse_dynamics(mech, params, q0, jnp.linspace(0.0, 2.0, 101))
    assert int(idy.status) == 0
    wrong = mech.replace(params, {"crank.mass": 0.6, "coupler.mass": 0.8, "rocker.inertia": 0.05,
                                  "coupler.cg": [0.25, 0.0], "crank.inertia": 0.01})
    return mech, params, wrong, idy


def test_inertial_parameters_roundtrip(four_bar_motion):
    mech, params, _, _ = four_bar_motion
    phi = fit.inertial_parameters(mech, params)
    assert phi.shape == (12,) and len(fit.inertial_labels(mech)) == 12
    back = fit.params_from_inertial(mech, params, phi)
    for f in ("mass", "inertia", "cg"):
        np.testing.assert_allclose(np.asarray(back.bodies["planar_rigid"][f]),
                                   np.asarray(params.bodies["planar_rigid"][f]), rtol=1e-13)


def test_regressor_recovers_inertial_parameters_noise_free(four_bar_motion):
    """All joint reactions and the driver effort known: every body's (m, m c, J_ref)."""
    mech, ptrue, wrong, idy = four_bar_motion
    reg = fit.inertial_regressor(mech, wrong, idy.q, idy.v, idy.a, idy.t, lam=idy.lam, known="all")
    phi = np.asarray(fit.inertial_parameters(mech, ptrue))
    np.testing.assert_allclose(np.asarray(reg.Y) @ phi, np.asarray(reg.b), rtol=0,
                               atol=1e-10 * np.abs(reg.b).max())
    sol = fit.solve_linear(reg)
    assert sol.rank == 12 and not sol.null_directions
    assert np.max(np.abs(sol.x - phi) / np.abs(phi)) < 1e-8
    for f in ("mass", "inertia", "cg"):
        np.testing.assert_allclose(np.asarray(sol.params.bodies["planar_rigid"][f]),
                                   np.asarray(ptrue.bodies["planar_rigid"][f]),
                                   rtol=1e-8, atol=1e-10)


def test_regressor_from_driver_effort_reports_base_parameters(four_bar_motion):
    """Only the motor torque measured: the masses of links turning about a fixed reference
    point do not enter, and some combinations regroup (base parameters)."""
    mech, ptrue, wrong, idy = four_bar_motion
    reg = fit.inertial_regressor(mech, wrong, idy.q, idy.v, idy.a, idy.t, lam=idy.lam,
                                 known=("motor",))
    assert reg.rows_per_sample == 1
    sol = fit.solve_linear(reg)
    assert sol.rank < 12
    assert {"crank.m": 1.0} in sol.null_directions and {"rocker.m": 1.0} in sol.null_directions
    assert len(sol.null_directions) == 12 - sol.rank
    phi = np.asarray(fit.inertial_parameters(mech, ptrue))
    Y = np.asarray(reg.Y)
    # the identifiable part is exact: the fitted parameters reproduce the motor torque
    np.testing.assert_allclose(Y @ sol.x, Y @ phi, atol=1e-9 * np.abs(Y @ phi).max())
    # unidentifiable components keep the nominal values
    assert sol.values["crank.m"] == pytest.approx(0.6)
    assert np.isinf(sol.std[reg.labels.index("crank.m")])


def test_linear_regressor_for_masses_springs_and_nonlinear_rejection(four_bar_motion):
    mech, ptrue, _, idy = four_bar_motion
    names = ["crank.mass", "coupler.mass", "rocker.mass", "ts.k", "ts.c"]
    guess = mech.replace(ptrue, {"crank.mass": 1.0, "coupler.mass": 1.0, "rocker.mass": 1.0,
                                 "ts.k": 1.0, "ts.c": 1.0})
    reg = fit.linear_regressor(mech, guess, names, idy.q, idy.v, idy.a, idy.t, lam=idy.lam,
                               known=("motor",))
    sol = fit.solve_linear(reg)
    truth = np.array([0.4, 1.1, 0.7, 3.0, 0.1])
    assert sol.rank == 5
    assert np.max(np.abs(sol.x - truth) / truth) < 1e-8
    with pytest.raises(ValueError, match="do not enter the equations of motion linearly"):
        fit.linear_regressor(mech, guess, ["ts.k", "ts.angle"], idy.q, idy.v, idy.a, idy.t,
                             lam=idy.lam, known=("motor",))
    with pytest.raises(ValueError, match="change the constraint equations"):
        fit.linear_regressor(mech, guess, ["A.point_j"], idy.q, idy.v, idy.a, idy.t,
                             lam=idy.lam, known=("motor",))


def test_loss_between_a_trajectory_and_measurements(pend):
    mech, ptrue, _, _, traj, data = pend
    # noise of 1 % RMS with sigma = that noise: loss about 0.5 at the truth
    assert 0.4 < float(fit.loss(mech, ptrue, traj, data)) < 0.6
    al = fit.align(mech, data, (0.0, T_END), DT, SAVE)
    r_eager = fit.residuals(mech, ptrue, traj, data)
    r_jit = jax.jit(fit.residuals, static_argnums=0)(mech, ptrue, traj, al)
    np.testing.assert_allclose(np.asarray(r_jit), np.asarray(r_eager), rtol=1e-12)
    sub = [fit.Measurement(d.output, d.times[::7], d.values[::7], d.sigma[::7]) for d in data]
    np.testing.assert_allclose(np.asarray(fit.residuals(mech, ptrue, traj, sub)[: sub[0].times.size]),
                               np.asarray(r_eager[: data[0].times.size:7]), rtol=1e-12)


@pytest.mark.slow
def test_fit_parameters_example_recovers_every_parameter_within_one_percent():
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples", "fit_parameters.py")
    spec = importlib.util.spec_from_file_location("fit_parameters_example", path)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    out = ex.main(["--json"])
    assert out["identifiable"] and out["rank"] == out["n_params"] == 7
    assert out["max_rel_error"] < 0.01, out["rel_error"]
    assert out["regressor"]["exact_states_max_rel_error"] < 1e-8
    assert set(out["fitted"]) == set(out["true"])
