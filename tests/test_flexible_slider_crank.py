"""The slider-crank with an elastic ANCF connecting rod (examples/flexible_slider_crank.py),
attached to the rigid crank and slider by `add_beam_body_pin`.

References, all independent of jaxmbs's dynamics:
* the analytic slider-crank kinematics x_B = r cos(theta) + sqrt(l^2 - r^2 sin^2(theta));
* a quasi-static estimate of the rod's midpoint deflection: a simply supported beam
  under the transverse d'Alembert load of the rigid rod (linear along it), 5 (q_A + q_B)
  l^4 / (768 EI) (`quasi_static_deflection`, NumPy);
* central differences (5-point stencil) for the gradients.
"""
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import flexible_slider_crank as FSC  # noqa: E402


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _slider_force_bound(E):
    """A priori bound (m) of the rod's axial shortening: the rod force is at most the
    inertia of slider and rod at the largest acceleration in the mechanism (crank pin:
    r omega^2; slider: r omega^2 (1 + r/l)), F L / (E A)."""
    a_max = FSC.CRANK * FSC.OMEGA**2 * (1 + FSC.CRANK / FSC.ROD)
    F = (FSC.M3 + FSC.RHO * FSC.SIDE**2 * FSC.ROD) * a_max
    return F * FSC.ROD / (E * FSC.SIDE**2)


def test_rigid_limit_matches_analytic_slider_crank():
    """E = 2.1e15 Pa (1e4 x steel), 2 elements, 2 revolutions at dt = 1e-4 (the run of the
    next test: one compilation for both, params differ only): the slider
    follows the analytic kinematics to within 10x the a priori axial shortening bound
    (2.6e-9 m; bending shortening ~ deflection^2 / l ~ 1e-14 m is far below), and the
    midpoint deflection is below twice the quasi-static estimate at this E (1.5e-7 m)."""
    E = 2.1e15
    mech, params, q0, v0, nodes = FSC.build(2, E=E)
    tr = FSC.simulate(mech, params, q0, v0, revolutions=2.0, dt=1e-4, save_every=5)
    assert int(np.max(np.asarray(tr.status))) == 0
    theta = FSC.OMEGA * np.asarray(tr.t)
    x = np.asarray(tr.q[:, mech.coordinate_index("slider.x")])
    err = np.max(np.abs(x - FSC.rigid_kinematics(theta)[0]))
    bound = _slider_force_bound(E)
    assert err < 10 * bound, (err, bound)
    defl = np.abs(np.asarray(FSC.midpoint_deflection(mech, tr.q, nodes)))
    qs = np.max(np.abs(FSC.quasi_static_deflection(theta, E=E)))
    assert np.max(defl) < 2 * qs, (np.max(defl), qs)
    # the crank pin follows the crank: node 0 at r (cos theta, sin theta)
    i = mech.coordinate_index(f"{nodes[0]}.x")
    np.testing.assert_allclose(np.asarray(tr.q[:, i:i + 2]), FSC.rigid_kinematics(theta)[1],
                               atol=1e-9)


def test_steel_rod_deflection_is_of_the_quasi_static_order():
    """Steel rod, 2 elements (first bending frequency 0.4 % above the analytic 1310
    rad/s), 2 revolutions at dt = 1e-4. Over the second revolution the midpoint deflection
    follows the quasi-static estimate: peak ratio in [0.8, 1.5] and RMS difference below
    0.3 of the quasi-static peak.

    Why these bounds (set from the physics, before the run): the estimate ignores (a) the
    free bending vibration started at t = 0, where the rod is straight and moves rigidly
    while the quasi-static deflection grows at about omega * peak: amplitude ~ (omega /
    omega_1) peak ~ 0.11 peak, undamped; (b) the dynamic amplification of the load's
    harmonics (2 omega: 1 / (1 - (300/1310)^2) - 1 ~ 5 %); (c) the softening of bending by
    the rod's axial compression, 1 / (1 - P / P_cr) with P <= 1.2 kN, P_cr = pi^2 EI / l^2
    = 7.9 kN (<= 18 %, much less on average). Sum: ~ 0.1-0.35 of the peak at most."""
    mech, params, q0, v0, nodes = FSC.build(2)
    tr = FSC.simulate(mech, params, q0, v0, revolutions=2.0, dt=1e-4, save_every=5)
    assert int(np.max(np.asarray(tr.status))) == 0
    t = np.asarray(tr.t)
    second = t >= t[-1] - 2 * np.pi / FSC.OMEGA
    defl = np.asarray(FSC.midpoint_deflection(mech, tr.q, nodes))[second]
    qs = FSC.quasi_static_deflection(FSC.OMEGA * t[second])
    peak_qs = np.max(np.abs(qs))
    # the estimate itself: by hand at theta = 60 deg, n . a_A = -3365 m/s^2, n . a_B =
    # -372 m/s^2 -> 1.38 mm; its peak (near 48 deg) ~1.5 mm, 0.5 % of the rod
    assert 1.3e-3 < peak_qs < 2e-3, peak_qs
    ratio = np.max(np.abs(defl)) / peak_qs
    rms = np.sqrt(np.mean((defl - qs) ** 2)) / peak_qs
    assert 0.8 < ratio < 1.5 and rms < 0.3, (ratio, rms)


def test_beam_body_joints_refuse_bad_attachments():
    import jaxmbs

    m = jaxmbs.Model()
    m.add_particle("p", mass=1.0, position=(0.0, 0.0))
    n = m.add_beam("b", (0.0, 0.0), (1.0, 0.0), elements=2, section=FSC.section())
    with pytest.raises(ValueError, match="last node"):
        m.add_beam_body_pin("j", n[-1], "ground", xi=0.5)
    with pytest.raises(ValueError, match="particle"):
        m.add_beam_body_weld("j", n[0], "p")
    with pytest.raises(ValueError, match=r"xi must lie in \[0, 1\]"):
        m.add_beam_body_pin("j", n[0], "ground", xi=1.2)
    m.add_beam_body_pin("j", n[-1], "ground")  # the last node itself: xi = 1 of element 1
    mech, params, q0, v0 = m.build()
    assert mech.get(params, "j.xi") == 1.0


def test_material_point_weld_holds_the_slope_and_reports_the_clamp_reaction():
    """A cantilever (EI = 1 N m^2, EA = 1e6 N, 2 elements) clamped to the ground through
    `add_beam_body_weld` at xi = 0 of its first element, a tip load P = (0, 2) N: at the
    equilibrium the clamp's reaction is minus the load and its moment -P x_tip about the
    clamp (statics of the whole beam; only the slope row can carry that moment), and the
    clamped slope stays along x."""
    import jaxmbs

    m = jaxmbs.Model(gravity=(0.0, 0.0))
    n = m.add_beam("b", (0.0, 0.0), (1.0, 0.0), elements=2, section=dict(E=1e6, rho=1.0, A=1.0, I=1e-6))
    m.add_beam_body_weld("c", n[0], "ground")
    m.add_node_load("P", n[-1], (0.0, 2.0))
    mech, params, q0, _ = m.build()
    eq = jaxmbs.equilibrium(mech, params, q0, tol=1e-8)
    r = jaxmbs.reactions(mech, params, eq.q, eq.lam)["c"]
    x_tip = float(eq.q[mech.coordinate_index(f"{n[-1]}.x")])
    assert x_tip < 0.9  # a large deflection (alpha = 2)
    np.testing.assert_allclose(r["force"], [0.0, -2.0], atol=1e-7)
    np.testing.assert_allclose(r["moment"], -2.0 * x_tip, rtol=1e-7)
    assert abs(float(eq.q[mech.coordinate_index(f"{n[0]}.y_x")])) < 1e-12


def _surrogate(mech, params, q0, v0, nodes, E, side, revolutions=0.5, p=8):
    """Smooth surrogate of the peak |midpoint deflection| (m): the p-mean (mean d^p)^(1/p)
    over the saved states (p = 8: within a factor 0.87-1 of the peak for a sine-like
    history, and differentiable everywhere, unlike max)."""
    prm = FSC.with_section(mech, params, E=E, side=side)
    tr = FSC.simulate(mech, prm, q0, v0, revolutions=revolutions, dt=1e-4, save_every=5)
    d = FSC.midpoint_deflection(mech, tr.q, nodes)
    return jnp.mean(d**p) ** (1.0 / p)


def _central(f, x, h):
    """5-point central difference (error O(h^4))."""
    return (8 * (f(x + h) - f(x - h)) - (f(x + 2 * h) - f(x - 2 * h))) / (12 * h)


@pytest.mark.slow
def test_deflection_gradient_wrt_E_and_side_matches_central_differences():
    """d(surrogate)/dE and d/dside by forward-mode autodiff through generalized-alpha
    (implicit differentiation of each step's Newton solve) against 5-point central
    differences with relative steps 1e-3 (truncation ~ (1e-3)^4): 1e-6 relative."""
    mech, params, q0, v0, nodes = FSC.build(2)
    f = jax.jit(lambda E, s: _surrogate(mech, params, q0, v0, nodes, E, s))
    E0, s0 = FSC.E, FSC.SIDE
    gE, gs = jax.jacfwd(f, argnums=(0, 1))(E0, s0)
    fdE = _central(lambda E: f(E, s0), E0, 1e-3 * E0)
    fds = _central(lambda s: f(E0, s), s0, 1e-3 * s0)
    assert float(gE) < 0 and float(gs) < 0  # stiffer / thicker rods bend less
    np.testing.assert_allclose(float(gE), float(fdE), rtol=1e-6)
    np.testing.assert_allclose(float(gs), float(fds), rtol=1e-6)


@pytest.mark.slow
def test_batch_of_slider_cranks_with_random_sections_in_one_call():
    """1024 members with random sides (6-10 mm), half a revolution, in one simulate_batch
    call (vmap; ~1 min on 2 cores): every member ok, the first and last agree with single
    runs, and the peak deflection falls with the side as the quasi-static 1/a^2 (EI ~ a^4
    against the load ~ a^2; log-log slope within 0.5 of -2)."""
    import jaxmbs

    mech, params, q0, v0, nodes = FSC.build(2)
    sides = jnp.asarray(np.random.default_rng(3).uniform(0.006, 0.010, 1024))
    pb = jax.vmap(lambda s: FSC.with_section(mech, params, side=s))(sides)
    t1 = FSC.t_end(0.5, 1e-4, 5)
    tr = jaxmbs.simulate_batch(mech, pb, q0, v0, (0.0, t1), 1e-4, params_axis=0, state_axis=None,
                               integrator=FSC.integrator(), stabilizer=jaxmbs.NoStabilization(),
                               save_every=5, energy_tol=None, vectorize="vmap")
    assert np.all(np.asarray(tr.status) == 0)
    peak = np.max(np.abs(np.asarray(FSC.midpoint_deflection(mech, tr.q, nodes))), axis=1)
    for k in (0, 1023):
        one = FSC.simulate(mech, FSC.with_section(mech, params, side=sides[k]), q0, v0,
                           revolutions=0.5, dt=1e-4, save_every=5)
        np.testing.assert_allclose(tr.q[k], one.q, atol=1e-12)
    s = np.asarray(sides)
    slope = np.polyfit(np.log(s), np.log(peak), 1)[0]
    assert -2.5 < slope < -1.5, slope


@pytest.mark.slow
def test_example_help_and_json_contract_as_script(tmp_path):
    """--help documents the options; --json's last line is one JSON object with the
    histories and peaks (2 elements, one revolution)."""
    import json
    import subprocess

    script = str(ROOT / "examples" / "flexible_slider_crank.py")
    h = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True, timeout=120)
    assert h.returncode == 0
    for opt in ("--elements", "--revolutions", "--dt", "--E", "--side", "--rho-inf", "--json"):
        assert opt in h.stdout
    r = subprocess.run([sys.executable, script, "--json", "--elements", "2", "--revolutions", "1"],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    n = len(out["t"])
    for k in ("theta", "midpoint_deflection", "quasi_static_deflection", "slider_x",
              "slider_x_rigid", "slider_x_analytic"):
        assert len(out[k]) == n
    assert out["status"] == 0 and out["elements"] == 2
    # the rigid model follows the analytic kinematics (RK4 + projection, dt 1e-4)
    assert np.max(np.abs(np.subtract(out["slider_x_rigid"], out["slider_x_analytic"]))) < 1e-8
    # RK4's bound for 2 elements: 2.785 / 2.2e5 rad/s (the rod's axial mode)
    assert 1.0e-5 < out["rk4_dt_limit"] < 1.5e-5
    assert 0.5 < out["peak_deflection"] / out["peak_quasi_static"] < 2.0
