"""The spatial examples against independent SciPy references (tests/reference/spatial.py:
minimal coordinates, Euler's equations, closed forms; no jaxmbs inside)."""
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import spatial as ref

from jaxmbs.spatial.geometry import mv, quat_to_R

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))


def _points(mech, q, body, s):
    i = mech.coordinate_index(f"{body}.x")
    r, R = q[:, i:i + 3], jax.vmap(quat_to_R)(q[:, i + 3:i + 7])
    return np.asarray(r + mv(R, jnp.asarray(s, float)))


def test_spatial_slider_crank_positions_and_energy():
    """Positions of the crank pin B, the slider C and both CGs within 1e-8 m of the
    1-DOF Lagrange solution over 5 s (RK4, dt = 2.5e-4 s, projection); energy drift below
    1e-9 at dt = 2.5e-4 (RK4's drift is 1e-7 at dt = 1e-3 over 5 s)."""
    import spatial_slider_crank as ex
    mech, params, traj, _ = ex.run(5.0, 2.5e-4)
    assert int(traj.status) == 0
    t = np.asarray(traj.t)
    q = np.asarray(traj.q)
    R = ref.spatial_slider_crank(t)
    got = {"B": _points(mech, q, "crank", [0, 0, ex.L_CRANK]),
           "C": _points(mech, q, "slider", [0, 0, 0]),
           "rod_cg": _points(mech, q, "rod", [ex.L_ROD / 2, 0, 0]),
           "crank_cg": _points(mech, q, "crank", [0, 0, 0.04])}
    for k, v in got.items():
        err = np.max(np.abs(v - R[k]))
        assert err < 1e-8, (k, err)
    np.testing.assert_allclose(ex.crank_angle(q), R["crank_angle"], atol=1e-7)
    E = np.asarray(traj.kinetic + traj.potential)
    np.testing.assert_allclose(E, R["energy"], rtol=1e-9)
    assert float(traj.energy_drift()) < 1e-9
    assert float(np.max(traj.constraint_error)) < 1e-12


def test_tennis_racket_flip_times_and_conservation():
    import tennis_racket as ex
    mech, traj, t, w, L = ex.run(10.0, 1e-3)
    R = ref.tennis_racket(t)
    np.testing.assert_allclose(w, R["omega_body"], atol=2e-6)
    flips = ex.sign_changes(t, w)
    np.testing.assert_allclose(flips, R["omega_y_sign_changes"], atol=1e-6)
    assert float(traj.energy_drift()) < 1e-9
    assert np.max(np.linalg.norm(L - L[0], axis=1)) / np.linalg.norm(L[0]) < 1e-9
    norms = np.linalg.norm(np.asarray(traj.q[:, 3:7]), axis=1)
    assert np.max(np.abs(norms - 1.0)) < 1e-12


def test_heavy_top_nutation_bounds_period_precession():
    """Nutation bounds within 1e-8 rad of the closed form (cubic roots), the period within
    1e-7 s of the elliptic quadrature, theta(t) and the precession at 2 s."""
    import top as ex
    mech, traj = ex.run(2.0, 2.5e-4)
    t, q = np.asarray(traj.t), np.asarray(traj.q)
    theta, prec = ex.axis_angles(q)
    tmax, vmax = ex.extremes(t, theta, 1)
    R = ref.heavy_top()
    assert abs(theta[0] - R["theta_min"]) < 1e-12
    assert np.max(np.abs(vmax - R["theta_max"])) < 1e-8
    assert abs(np.mean(np.diff(tmax)) - R["nutation_period"]) < 1e-7
    assert theta.min() >= R["theta_min"] - 1e-10 and theta.max() <= R["theta_max"] + 1e-8
    for tt in (0.5, 1.0, 2.0):
        i = int(np.argmin(np.abs(t - tt)))
        assert abs(theta[i] - R["theta_t"][tt]) < 1e-8
    assert abs(prec[-1] - R["precession_angle_t2"]) < 1e-7
    assert float(traj.energy_drift()) < 1e-9


@pytest.mark.slow  # (~80 s, 20000 steps; Bricard through its redundant row in the default run: test_formulations.py)
def test_bricard_dof_redundancy_and_P3():
    """Bricard's linkage: dof 1, one redundant row, simulated through it (regularised
    Schur complement, no failed status); P3 against the reference's Kane solution."""
    import bricard as ex
    mech, params, rep, traj = ex.run(10.0, 5e-4)
    assert rep["dof"] == 1 and len(rep["redundant"]) == 1
    assert int(traj.status) == 0
    t = np.asarray(traj.t)
    pts = ex.p3(mech, np.asarray(traj.q))
    R = ref.bricard(t)
    assert np.max(np.abs(pts - R["P3"])) < 1e-7
    assert float(traj.energy_drift()) < 1e-9
    assert float(np.max(traj.constraint_error)) < 1e-12


def test_double_wishbone_camber_toe_nominal_and_perturbed_members():
    """Camber and toe over +-80 mm against the minimal-coordinate reference, for the
    nominal hardpoints and three members of a +-0.5 mm Monte-Carlo batch (one vmapped
    call)."""
    import double_wishbone as ex
    data = ex.load()
    mech, params, q0, v0 = ex.build(data)
    travel = jnp.linspace(-0.08, 0.08, 9)
    spindle0 = np.asarray(data["spindle_axis"], float)
    hp = ex.draws(data, 3, jax.random.PRNGKey(1))
    hp = {k: jnp.concatenate([jnp.asarray(data["hardpoints"][k])[None], v]) for k, v in hp.items()}
    P = jax.vmap(lambda h: ex.params_for(mech, params, h))(hp)
    cam, toe, st = jax.jit(jax.vmap(lambda p: ex.sweep(mech, p, q0, travel, spindle0)))(P)
    assert np.all(np.asarray(st) == 0)
    for k in range(4):
        pts = {n: np.asarray(v[k]) for n, v in hp.items()}
        R = ref.double_wishbone(pts, np.asarray(travel), spindle_axis=spindle0)
        np.testing.assert_allclose(cam[k], R["camber"], atol=1e-10)
        np.testing.assert_allclose(toe[k], R["toe"], atol=1e-10)
