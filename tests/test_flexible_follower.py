"""Follower forces and torques on planar ANCF beams (family 'beam_follower',
`Model.add_node_load(..., follower=True)`, `Model.add_node_torque`), against references
independent of the family's kernel:

* generalised forces: autodiff of the virtual work, Q = (dr/dq)^T f + M (dtheta/dq)^T,
  with r the material point and theta = atan2 of its slope written out here from the
  Hermite shape functions, and f = F_t t + F_n n from the tangent dr/dxi (autodiff in xi);
* the work integrated by `simulate`: kinetic + potential - work stays constant for a
  beam driven by a follower force and a torque (the family's power counted);
* a cantilever under a tip moment M: a circular arc. With this model's energy (Green
  axial strain, curvature per deformed length) the exact solution has a uniform stretch
  lambda^2 = 1 + 2 M^2 / (EI EA), curvature kappa = M lambda / EI, tip angle
  theta = M lambda^2 L / EI and tip (sin theta, 1 - cos theta) / kappa; for EA -> inf the
  inextensible arc (EI / M) (sin(ML/EI), 1 - cos(ML/EI));
* Beck's column (examples/beck_column.py): flutter at P_cr = 20.051 EI / L^2 under a
  tangential tip force, divergence at pi^2 / 4 EI / L^2 under the same force dead.

Documented meshes (float64, measured on this tree; EA = 1e6 N): tip moment, error of the
tip position relative to |tip| against the extensible arc: M L / EI = 1: 4.2e-8 at 16
elements (default suite), 2.6e-9 at 32; pi: 1.3e-5 at 16, 8.0e-7 at 32 (slow);
2 pi - 0.3: 2.1e-5 at 48, 6.8e-6 at 64, 4.1e-7 at 128 elements (slow test). EA = 100 N,
M L / EI = 1, 16 elements: 3.6e-8 from the extensible arc, 1.3e-2 from the inextensible.
Beck: 4 / 8 / 16 elements P_cr = 20.0993 / 20.0555 / 20.0524 EI/L^2 (+2.4e-3 / +2.2e-4 /
+6.9e-5), dead load 2.46750 / 2.46742 / 2.46742 (pi^2 / 4 = 2.46740).
"""
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs
import jaxmbs.core.equations
from jaxmbs.core import families as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import beck_column as BC  # noqa: E402

# float64: tests/conftest.py enables it for the whole suite


def _hermite_point(e, xi, L):
    """r(xi) (2,) of an element e (4, 2) = (r_i, r_x,i, r_j, r_x,j), written out."""
    S = jnp.stack([1 - 3 * xi**2 + 2 * xi**3, L * (xi - 2 * xi**2 + xi**3), 3 * xi**2 - 2 * xi**3,
                   L * (xi**3 - xi**2)])
    return S @ e


@jax.jit
def _virtual_work_force(e, xi, L, force, torque):
    """(4, 2): d/de of the virtual work f . dr(xi) + M dtheta(xi) at fixed f, M."""
    tangent = jax.jacfwd(_hermite_point, 1)(e, xi, L)           # dr/dxi, along r_x
    t = tangent / jnp.linalg.norm(tangent)
    n = jnp.array([-t[1], t[0]])
    f = force[0] * t + force[1] * n
    theta = lambda ee: (lambda d: jnp.arctan2(d[1], d[0]))(jax.jacfwd(_hermite_point, 1)(ee, xi, L))
    return jax.jacfwd(lambda ee: _hermite_point(ee, xi, L) @ f)(e) + torque * jax.grad(theta)(e)


def test_follower_force_and_torque_are_the_virtual_work_of_the_load():
    """The family's Q against autodiff of the virtual work for random elements (deformed,
    stretched slopes), xi at both ends and inside, both force components and a torque;
    the power it reports is Q . v and it has no potential."""
    fam = F.force_family("beam_follower")
    rng = np.random.default_rng(11)
    k = 5
    p = {"force": jnp.asarray(rng.normal(size=(k, 2))), "torque": jnp.asarray(rng.normal(size=k)),
         "xi": jnp.asarray([0.0, 1.0, 0.3, 0.55, 0.9]), "length": jnp.asarray(rng.uniform(0.2, 1.5, k))}
    X = jnp.asarray(np.concatenate([np.zeros((k, 3)), rng.normal(size=(k, 8))], 1))
    V = jnp.asarray(rng.normal(size=(k, 11)))
    Qi, Qj, pot, P, info = fam.evaluate(p, F.ForceArgs(X, X, V, V, jnp.asarray(0.0)))
    for i in range(k):
        ref = _virtual_work_force(X[i, 3:].reshape(4, 2), p["xi"][i], p["length"][i], p["force"][i],
                                  p["torque"][i])
        np.testing.assert_allclose(Qj[i, 3:].reshape(4, 2), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(Qj[:, :3], 0.0)
    np.testing.assert_array_equal(Qi, 0.0)
    np.testing.assert_array_equal(pot, 0.0)
    np.testing.assert_allclose(P, jnp.sum(Qj * V, -1), rtol=1e-14)
    # the reported global force has the given magnitude (a rotation of force)
    np.testing.assert_allclose(np.hypot(info["force_x"], info["force_y"]),
                               np.linalg.norm(p["force"], axis=1), rtol=1e-13)


def test_node_torque_is_M_perp_rx_over_rx_squared_in_a_model():
    """Through the builder: a torque on the last node and a follower force at xi = 0.4 of
    the first element of a deformed 2-element beam: the model's generalised forces minus
    those without the loads are M (-y_x, x_x) / |r_x|^2 on the last node's slope and
    the virtual work of the follower force on the first element's nodes."""
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    n = m.add_beam("b", (0.0, 0.0), (1.0, 0.0), elements=2, section=dict(E=100.0, A=1.0, I=0.01, rho=1.0))
    m.add_node_torque("M", n[-1], 0.7)
    m.add_node_load("F", n[0], (0.3, -1.2), follower=True, xi=0.4)
    mech, p, q0, _ = m.build()
    q = q0 + jnp.asarray(np.random.default_rng(2).normal(size=q0.shape)) * 0.2
    z = jnp.zeros(mech.n_vel)
    forces = jax.jit(lambda pp: jaxmbs.core.equations.generalized_forces(mech, pp, q, z, 0.0)[0])
    Q = forces(p)
    Q0 = forces(mech.replace(p, {"M.torque": 0.0, "F.force": [0.0, 0.0]}))
    dQ = np.asarray(Q - Q0).reshape(3, 4)
    xx, yx = np.asarray(q[10:12])
    np.testing.assert_allclose(dQ[2], [0.0, 0.0, -0.7 * yx / (xx**2 + yx**2), 0.7 * xx / (xx**2 + yx**2)],
                               rtol=1e-12, atol=1e-14)
    ref = _virtual_work_force(q[:8].reshape(4, 2), 0.4, 0.5, jnp.asarray([0.3, -1.2]), 0.0)
    np.testing.assert_allclose(dQ[:2].reshape(4, 2), ref, rtol=1e-12, atol=1e-14)
    assert {"M.torque", "M.force", "M.xi", "F.force", "F.xi"} <= set(mech.param_names())
    assert "F.length" not in mech.param_names()  # (the element's own leaf, '<node>.length')
    with pytest.raises(ValueError, match=r"'F.xi' must lie in \[0, 1\]"):
        mech.replace(p, {"F.xi": 1.5})


def test_simulate_counts_the_work_of_follower_loads():
    """A free-free 2-element beam pushed by a follower force and a torque (no potential,
    all their energy is work): kinetic + potential - work stays constant; without the
    family's power in the work the balance would be off by the whole kinetic energy."""
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    n = m.add_beam("b", (0.0, 0.0), (1.0, 0.0), elements=2, section=dict(E=1e3, A=1.0, I=1e-3, rho=1.0))
    m.add_node_load("F", n[-1], (0.5, 2.0), follower=True)
    m.add_node_torque("M", n[0], 0.3)
    mech, p, q0, v0 = m.build()
    traj = jaxmbs.simulate(mech, p, q0, v0, (0.0, 1.0), 1e-3, save_every=50)
    assert int(traj.status) == 0
    kin = np.asarray(traj.kinetic)
    assert kin[-1] > 0.5  # the loads did work: O(1) J
    # RK4's own error at dt = 1e-3 (measured 1.4e-6); leaving the family's power out of
    # the work would make it O(1)
    err = float(traj.energy_error())
    assert err < 1e-4, err


def _arc(M, EA, EI=1.0, L=1.0):
    """Tip (x, y, angle) of the cantilever under a tip moment M (see the module docstring)."""
    lam2 = 1.0 + 2.0 * M * M / (EI * EA)
    kappa, theta = M * np.sqrt(lam2) / EI, M * lam2 * L / EI
    return np.array([np.sin(theta) / kappa, (1.0 - np.cos(theta)) / kappa, theta]), kappa, np.sqrt(lam2)


def _tip_moment_statics(elements, Ms, EA=1e6):
    """Tip (x, y) of the clamped cantilever under each tip moment in Ms, by
    `jaxmbs.equilibrium` from the nodes sampled on the exact arc (guess)."""
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    n = m.add_beam("b", (0.0, 0.0), (1.0, 0.0), elements=elements,
                   section=dict(E=EA, A=1.0, I=1.0 / EA, rho=1.0))  # EI = 1 N m^2
    m.add_node_weld("clamp", n[0])
    m.add_node_torque("M", n[-1], 0.0)
    mech, p, q0, _ = m.build()
    x = np.linspace(0.0, 1.0, elements + 1)
    out = []
    for M in Ms:
        _, kappa, lam = _arc(M, EA)
        s = kappa * lam * x
        guess = np.stack([np.sin(s) / kappa, (1 - np.cos(s)) / kappa, lam * np.cos(s), lam * np.sin(s)], 1)
        # Newton from the arc converges in a few steps (10 iterations instead of 40)
        eq = jaxmbs.equilibrium(mech, mech.replace(p, {"M.torque": M}), jnp.asarray(guess.reshape(-1)),
                                tol=1e-8, iterations=10)
        out.append(np.asarray(eq.q[-4:]))
    return out


@pytest.mark.parametrize("elements, Ms, EA", [
    (16, (1.0,), 1e6),
    (16, (1.0,), 1e2),  # stretch lambda - 1 = 1e-2: the extensible arc, not the inextensible
    pytest.param(32, (1.0, np.pi), 1e6, marks=pytest.mark.slow),
])
def test_tip_moment_rolls_the_cantilever_into_an_arc(elements, Ms, EA):
    """Tip position to 1e-6 of |tip| and tip angle to 1e-6 of its value against the arc."""
    for M, tip in zip(Ms, _tip_moment_statics(elements, Ms, EA)):
        ref, _, _ = _arc(M, EA)
        err = np.hypot(*(tip[:2] - ref[:2])) / np.hypot(*ref[:2])
        assert err < 1e-6, (M, err)
        ang = np.arctan2(tip[3], tip[2])
        assert abs(np.angle(np.exp(1j * (ang - ref[2])))) < 1e-6 * ref[2], (M, ang, ref[2])


@pytest.mark.slow
def test_tip_moment_almost_closes_the_circle():
    """M L / EI = 2 pi - 0.3 (the tip 0.05 m from the clamp), 128 elements: the error
    relative to |tip| falls as h^4 (2.1e-5 at 48, 6.8e-6 at 64 elements) and needs about
    100 elements for 1e-6."""
    M = 2 * np.pi - 0.3
    (tip,) = _tip_moment_statics(128, (M,))
    ref, _, _ = _arc(M, 1e6)
    err = np.hypot(*(tip[:2] - ref[:2])) / np.hypot(*ref[:2])
    assert err < 1e-6, err


def test_beck_column_flutters_at_20_05_and_the_dead_load_buckles_at_euler():
    """8 elements (4, 8 and 16 in the slow example test; 4 costs as much CPU, compile
    dominates): follower P_cr within 0.5 % of 20.051 EI/L^2 (measured +2.2e-4) with a
    complex unstable pair (flutter, frequency near Beck's 11.02 rad/s), the dead load's
    instability a real eigenvalue (divergence) within 0.1 % of pi^2 / 4 (measured
    +9.5e-6): the follower-loaded column stays stable far above the Euler load."""
    r = BC.analyse(8)
    assert abs(r["P_cr"] / BC.P_CR_EXACT - 1) < 5e-3, r
    assert r["flutter_frequency"] > 10.0, r
    assert abs(r["euler_dead_load"] / BC.EULER_EXACT - 1) < 1e-3, r
    assert r["dead_onset_imag"] == 0.0, r


def test_equilibrium_stable_follows_the_kinetic_criterion_under_follower_loads():
    """equilibrium's `stable` on Beck's column (4 elements) agrees with the eigenvalues of
    `linearize` (the example's growth function, the independent oracle): follower force
    15 EI/L^2 stable (the symmetric part of K alone, which the static criterion saw,
    called it unstable: it is below Euler's 2.47 only in its symmetric part), 25 EI/L^2
    flutter; dead load 2.0 stable, 3.0 divergence (conservative: the static criterion)."""
    mech, params, q0, _ = BC.build(4)
    growth = BC.growth_function(4)

    @jax.jit
    def stable(Pf, Pd):
        p = mech.replace(params, {"follower.force": jnp.stack([-Pf, 0.0 * Pf]),
                                  "dead.force": jnp.stack([-Pd, 0.0 * Pd])})
        eq = jaxmbs.equilibrium(mech, p, q0, tol=1e-8, iterations=12, check=False)
        return eq.stable, eq.status, eq.stiffness

    for Pf, Pd, expect in [(15.0, 0.0, True), (25.0, 0.0, False), (0.0, 2.0, True), (0.0, 3.0, False)]:
        ok, status, ev = stable(Pf, Pd)
        re, im, s2 = growth(Pf, Pd)
        assert int(status) == 0 and int(s2) == 0
        assert bool(ok) == expect, (Pf, Pd)
        assert (float(re) <= BC.GROWTH_TOL) == expect, (Pf, Pd, float(re))  # the oracle agrees
        if Pf == 15.0:
            assert float(ev[0]) < 0  # the symmetric part alone is indefinite there
        if Pf == 25.0:
            assert float(im) > 1.0  # flutter: a complex pair, not divergence
        if Pd == 3.0:
            assert float(im) == 0.0 and float(ev[0]) < 0  # divergence, seen by both criteria


@pytest.mark.slow
def test_beck_column_example_mesh_convergence(capsys):
    """examples/beck_column.py --elements 4 8 16 --json: every mesh within 0.5 % of
    20.051 (measured +2.4e-3, +2.2e-4 at 4, 8 elements), the error falling with the mesh,
    and the dead load's divergence within 0.1 % of pi^2 / 4, real (no flutter)."""
    import json

    BC.main(["--elements", "4", "8", "16", "--json"])
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["elements"] == [4, 8, 16] and res["P_cr_exact"] == 20.051
    err = [abs(P / 20.051 - 1) for P in res["P_cr"]]
    assert max(err) < 5e-3 and err[1] < err[0], err
    assert all(abs(P / (np.pi**2 / 4) - 1) < 1e-3 for P in res["euler_dead_load"]), res
    assert res["dead_onset_imag"] == [0.0, 0.0, 0.0], res
