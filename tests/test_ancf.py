"""Planar ANCF Euler-Bernoulli beams (jaxmbs.flexible.ancf): element kernels against
autodiff and the textbook mass matrix, the cantilever's large-deflection statics against
the elastica and its natural frequencies against Euler-Bernoulli (both references in
tests/reference/elastica.py, SciPy, independent of jaxmbs).

Documented meshes (examples/cantilever.py, measured on this tree, float64):
  tip values (per L, rad), max error over vertical / shortening / rotation:
    alpha =    1        2        5        10
    4 el.   3.2e-3   5.2e-3   8.1e-3   1.3e-2
    16 el.  7.0e-6   3.0e-5   1.1e-4   2.4e-4
    32 el.  6.3e-7   2.5e-6   6.1e-6   6.6e-6   (all < 1e-4: the documented mesh)
  frequencies, max relative error of the first four: 4 el. 1.5e-2, 8 el. 2e-3,
    16 el. 1.5e-4 (< 1e-3: the documented mesh), 32 el. 9.6e-6.
The fast tests check alpha = 1, 2 at 16 elements, the convergence 4 -> 8 -> 16 at
alpha = 1 and the frequencies at 16 elements; the slow one all alphas at 32 elements.
"""
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs
from jaxmbs.flexible import ancf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent / "reference"))
import cantilever as C  # noqa: E402
from elastica import beta_L, elastica_tip  # noqa: E402


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


def _random_elements(seed=0, k=5, d=2):
    """k random elements in d dimensions: nodal vectors e (k, 4, d), L, EA, EI (k,)."""
    rng = np.random.default_rng(seed)
    e = jnp.asarray(rng.normal(size=(k, 4, d)))
    L = jnp.asarray(rng.uniform(0.2, 2.0, k))
    EA = jnp.asarray(rng.uniform(1.0, 1e3, k))
    EI = jnp.asarray(rng.uniform(0.1, 2.0, k))
    return e, L, EA, EI


def test_element_forces_are_minus_grad_of_strain_energy():
    e, L, EA, EI = _random_elements()
    Q = ancf.element_forces(e, L, EA, EI)
    g = jax.grad(lambda x: jnp.sum(ancf.element_energy(x, L, EA, EI)))(e)
    np.testing.assert_allclose(Q, -g, rtol=1e-10, atol=1e-9 * float(jnp.max(jnp.abs(g))))


def test_strain_energy_of_rigid_motion_and_of_pure_bending():
    """Zero strain energy for any rigid placement of a straight element (translation +
    rotation, unit slopes); a circular arc of curvature k discretised by its end points
    and tangents has bending energy ~ EI k^2 L / 2 (exact curvature, inextensible)."""
    L = jnp.asarray([0.7])
    th = 0.9
    t = jnp.asarray([np.cos(th), np.sin(th)])
    r0 = jnp.asarray([0.3, -1.2])
    e = jnp.stack([r0, t, r0 + L[0] * t, t])[None]
    U = ancf.element_energy(e, L, jnp.asarray([1e6]), jnp.asarray([1.0]))
    assert abs(float(U[0])) < 1e-20
    k, Lb = 0.5, 1.0
    ang = k * Lb
    r1 = jnp.asarray([np.sin(ang) / k, (1 - np.cos(ang)) / k])
    e = jnp.stack([jnp.zeros(2), jnp.asarray([1.0, 0.0]), r1,
                   jnp.asarray([np.cos(ang), np.sin(ang)])])[None]
    U = float(ancf.element_energy(e, jnp.asarray([Lb]), jnp.asarray([0.0]), jnp.asarray([1.0]))[0])
    assert abs(U / (0.5 * k * k * Lb) - 1.0) < 2e-3


def test_consistent_mass_is_the_hermite_matrix_and_constant():
    L, rhoA = 0.8, 2.5
    M = np.asarray(ancf.element_mass(jnp.asarray([L]), jnp.asarray([rhoA]))[0])
    H = rhoA * L / 420 * np.array([[156, 22 * L, 54, -13 * L], [22 * L, 4 * L**2, 13 * L, -3 * L**2],
                                   [54, 13 * L, 156, -22 * L], [-13 * L, -3 * L**2, -22 * L, 4 * L**2]])
    np.testing.assert_allclose(M, np.kron(H, np.eye(2)), rtol=1e-13, atol=1e-15)
    mech, params, q0, _ = C.build(3)
    M0 = jaxmbs.mass_matrix(mech, params, q0).dense()
    M1 = jaxmbs.mass_matrix(mech, params, q0 + 0.3 * jnp.sin(jnp.arange(q0.size))).dense()
    np.testing.assert_array_equal(M0, M1)
    # total mass: rho A L of the whole beam moves with a rigid translation
    ones = jnp.tile(jnp.asarray([1.0, 0.0, 0.0, 0.0]), q0.size // 4)
    assert abs(float(ones @ M0 @ ones) - C.RHOA * C.L) < 1e-12


def test_gravity_is_consistent_weight_and_beam_params_are_leaves():
    m = jaxmbs.Model(gravity=(0.0, -9.81))
    nodes = m.add_beam("b", (0, 0), (2.0, 0), elements=4, section=dict(E=2e11, rho=7800, A=1e-4, I=1e-9))
    mech, params, q0, v0 = m.build()
    Q, V, _ = jaxmbs.generalized_forces(mech, params, q0, v0, 0.0)
    fy = np.asarray(Q).reshape(-1, 4)[:, 1]
    assert abs(fy.sum() + 9.81 * 7800 * 1e-4 * 2.0) < 1e-9
    assert mech.get(params, f"{nodes[1]}.E") == 2e11 and mech.get(params, f"{nodes[-1]}.length") == 0
    # E is a traced leaf: the strain energy of a bent state is linear in it
    q = q0.at[mech.coordinate_index(f"{nodes[-1]}.y")].set(0.1)
    dV = jax.grad(lambda E: jaxmbs.generalized_forces(
        mech, mech.replace(params, {f"{nodes[3]}.E": E}), q, v0, 0.0)[1])(2e11)
    assert float(dV) > 0


def test_builder_refuses_bad_input_naming_it():
    m = jaxmbs.Model()
    sec = dict(E=1.0, rho=1.0, A=1.0, I=1.0)
    with pytest.raises(ValueError, match="section"):
        m.add_beam("b", (0, 0), (1, 0), elements=2, section=dict(E=1.0))
    with pytest.raises(ValueError, match="elements"):
        m.add_beam("b", (0, 0), (1, 0), elements=0, section=sec)
    with pytest.raises(ValueError, match="coincide"):
        m.add_beam("b", (0, 0), (0, 0), elements=2, section=sec)
    nodes = m.add_beam("b", (0, 0), (1, 0), elements=2, section=sec)
    assert nodes == ("b.n0", "b.n1", "b.n2")
    with pytest.raises(ValueError, match="unknown beam node"):
        m.add_node_weld("w", "b.n7")
    with pytest.raises(ValueError, match="itself"):
        m.add_node_pin("p", "b.n1", "b.n1")


def _tip_errors(elements, alphas, substeps=2):
    r = C.statics(elements, alphas, substeps)
    got = np.array([r["tip_vertical"], r["tip_shortening"], r["tip_rotation"]]).T
    ref = np.array([elastica_tip(a) for a in alphas])
    return np.abs(got - ref)


def test_cantilever_tip_matches_elastica_and_converges():
    """alpha = 1, 2 at 16 elements to 1e-4; at alpha = 1 the error falls by > 8x per
    mesh halving (4 -> 8 -> 16 elements)."""
    err16 = _tip_errors(16, (1.0, 2.0), 1)
    assert err16.max() < 1e-4, err16
    e4, e8 = _tip_errors(4, (1.0,), 1).max(), _tip_errors(8, (1.0,), 1).max()
    assert e4 > 8 * e8 > 64 * err16[0].max(), (e4, e8, err16[0])


@pytest.mark.slow
def test_cantilever_tip_matches_elastica_all_alphas_32_elements():
    err = _tip_errors(32, C.ALPHAS)
    assert err.max() < 1e-4, err


def test_cantilever_frequencies_match_euler_bernoulli():
    f = np.asarray(C.frequencies(16))
    ref = np.asarray(beta_L(4)) ** 2 / (2 * np.pi) * np.sqrt(C.EI / (C.RHOA * C.L**4))
    np.testing.assert_allclose(f, ref, rtol=1e-3)


def _with_E(params, E):
    b = dict(params.bodies["ancf2d_beam"])
    b["E"] = jnp.full_like(b["E"], E)
    return params.replace(bodies={**params.bodies, "ancf2d_beam": b})


def test_flexible_pendulum_conserves_energy_batched_over_stiffness():
    """Berzeri-Shabana's flexible pendulum (examples/flexible_pendulum.py), 2 elements,
    0.2 s, RK4 dt = 5e-4 with projection, vmapped over three Young's moduli in one call:
    kinetic + gravity + strain energy constant to < 1e-6 of the largest kinetic energy
    (measured ~1e-9 at 4 elements over 0.5 s)."""
    sys.path.insert(0, str(ROOT / "examples"))
    import flexible_pendulum as FP

    mech, params, q0, v0, tip = FP.build(2)
    Es = jnp.asarray([0.7e6, 2e6, 7e6])

    def run(E):
        p = _with_E(params, E)
        tr = jaxmbs.simulate(mech, p, q0, v0, (0.0, 0.2), 5e-4, save_every=40)
        En = jax.vmap(lambda q, v: jaxmbs.energy(mech, p, q, v))(tr.q, tr.v)
        drift = jnp.max(jnp.abs(En["total"] - En["total"][0])) / jnp.max(En["kinetic"])
        return drift, tr.q[-1], jnp.max(tr.status)

    drift, qf, status = jax.vmap(run)(Es)
    assert np.all(np.asarray(status) == 0)
    assert np.all(np.asarray(drift) < 1e-6), drift
    i = mech.coordinate_index(f"{tip}.x")
    reach = np.hypot(np.asarray(qf[:, i]), np.asarray(qf[:, i + 1]))
    # the members really differ (the batch carries E), all within 10 % of the length
    assert np.all(np.abs(reach / FP.L - 1) < 0.1) and np.min(np.abs(np.diff(reach))) > 1e-3, reach


@pytest.mark.slow
def test_tip_deflection_gradient_wrt_E_matches_central_differences():
    """d(tip deflection)/dE through `jaxmbs.equilibrium` (4 elements, alpha = 1): autodiff
    against a central difference."""
    mech, params, q0, tip = C.build(4)
    i = mech.coordinate_index(f"{tip}.y")
    p0 = mech.replace(params, {"tip_load.force": [0.0, 1.0]})
    qs = jaxmbs.equilibrium(mech, p0, q0, tol=1e-8).q

    def defl(E):
        return jaxmbs.equilibrium(mech, _with_E(p0, E), qs, tol=1e-8, check=False).q[i]

    E0 = 1e9
    g = float(jax.grad(defl)(E0))
    h = 1e5
    fd = float((defl(E0 + h) - defl(E0 - h)) / (2 * h))
    assert g < 0 and abs(g / fd - 1) < 1e-5, (g, fd)


@pytest.mark.slow
def test_cantilever_example_json_contract(capsys):
    import json

    C.main(["--elements", "4", "--json"])
    res = json.loads(capsys.readouterr().out)
    assert res["alpha"] == [1.0, 2.0, 5.0, 10.0] and len(res["frequencies_hz"]) == 4
    for k in ("tip_vertical", "tip_shortening", "tip_rotation"):
        assert len(res[k]) == 4 and all(np.isfinite(res[k]))
    ref = elastica_tip(10.0)
    assert abs(res["tip_rotation"][3] - ref[2]) < 2e-2  # 4 elements: 1.3e-2 measured


def test_clamp_reaction_balances_the_tip_load():
    """At the equilibrium of the loaded cantilever (4 elements, alpha = 2) the clamp's
    reaction force is minus the tip load and its moment is minus the load's moment about
    the clamp, P x_tip (statics of the whole beam)."""
    mech, params, q0, tip = C.build(4)
    p = mech.replace(params, {"tip_load.force": [0.0, 2.0]})
    eq = jaxmbs.equilibrium(mech, p, q0, tol=1e-8)
    r = jaxmbs.reactions(mech, p, eq.q, eq.lam)["clamp"]
    x_tip = float(eq.q[mech.coordinate_index(f"{tip}.x")])
    np.testing.assert_allclose(r["force"], [0.0, -2.0], atol=1e-7)
    np.testing.assert_allclose(r["moment"], -2.0 * x_tip, rtol=1e-7)


def test_beam_shape_and_tip_state():
    """beam_shape interpolates through the nodes with their slopes; tip_state reads the
    slope angle."""
    X = jnp.asarray([[0.0, 0.0, 1.0, 0.0], [0.5, 0.1, 0.8, 0.6], [1.0, 0.3, 0.0, 1.0]])
    P = ancf.beam_shape(X, jnp.asarray([0.5, 0.5, 0.0]), points=5)
    assert P.shape == (2, 5, 2)
    np.testing.assert_allclose(P[:, 0], X[:2, :2], atol=1e-15)
    np.testing.assert_allclose(P[:, -1], X[1:, :2], atol=1e-15)
    np.testing.assert_allclose(ancf.tip_state(X[2])[2], np.pi / 2, atol=1e-15)


def test_prepared_beam_mass_is_factored_once_and_agrees():
    """`prepare_params` (called once per `simulate`) stores the assembled consistent mass
    and its inverse; the prepared mass part solves like the per-call Cholesky one and is
    the inverse of the unprepared dense mass."""
    from jaxmbs.core.equations import prepare_params

    mech, params, q0, _ = C.build(3)
    pp = prepare_params(mech, params)
    assert "mass_inverse" in pp.bodies["ancf2d_beam"] and "mass_inverse" not in params.bodies["ancf2d_beam"]
    M0, M1 = jaxmbs.mass_matrix(mech, params, q0), jaxmbs.mass_matrix(mech, pp, q0)
    np.testing.assert_array_equal(M0.dense(), M1.dense())
    x = jnp.asarray(np.random.default_rng(0).normal(size=(q0.size, 3)))
    np.testing.assert_allclose(M1.solve(x), M0.solve(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(M0.dense() @ M1.inverse_dense(), np.eye(q0.size), atol=1e-10)


def test_geometry_and_draw_show_a_deformed_beam_with_rigid_bodies(tmp_path):
    """Plotting a mechanism that mixes rigid bodies and a beam (the flexible
    slider-crank) used to fail ("mixes frame kinds"). Its beam is drawn as the deformed
    centre line: with the rod's nodes placed on a circular arc (radius 0.3 m, 60 deg, exact
    slopes), every drawn point lies on the arc to within the cubic Hermite interpolation's
    error bound h^4 max|d4r/ds4| / 384 = R theta_e^4 / 384 (h = R theta_e the element's arc,
    |d4r/ds4| = 1 / R^3 on a circle; 3.7e-6 m here, measured 3.67e-6 at the elements'
    midpoints), the line passes through the nodes exactly, the beam nodes
    are not drawn as particles, and the crank-rod pin is a revolute at the crank's pin."""
    import matplotlib
    matplotlib.use("Agg")
    import flexible_slider_crank as ex

    from jaxmbs import plot as P

    mech, params, q0, _ = ex.build(elements=4)[:4]
    q = np.array(q0, float)
    R, span, C = 0.3, np.pi / 3, np.array([0.15, -0.3])
    for k in range(5):
        a = np.pi / 2 - span * k / 4
        i = mech.coordinate_index(f"rod.n{k}.x")
        stretch = R * span / 0.3  # (arc length / undeformed length: the slope's magnitude)
        q[i:i + 4] = [*(C + R * np.array([np.cos(a), np.sin(a)])), *(stretch * np.array([np.sin(a), -np.cos(a)]))]
    g = P.geometry(mech, params, q)
    assert g["particles"] == [] and len(g["beams"]) == 1
    name, line, nodes = g["beams"][0]
    assert name == "rod" and line.shape == (4 * (P.BEAM_SAMPLES - 1) + 1, 2)
    np.testing.assert_array_equal(line[::P.BEAM_SAMPLES - 1], nodes)
    err = np.max(np.abs(np.linalg.norm(line - C, axis=1) - R))
    assert err <= 1.001 * R * (span / 4) ** 4 / 384, err
    pins = {n: p for n, p, _ in g["revolutes"]}
    crank = [b for b in g["bodies"] if b[0] == "crank"][0][1]
    assert np.min(np.linalg.norm(crank - pins["A"], axis=1)) < 1e-12
    ax = P.draw(mech, params, q)
    ax.figure.savefig(tmp_path / "flexible_slider_crank.png")
    assert (tmp_path / "flexible_slider_crank.png").stat().st_size > 0
