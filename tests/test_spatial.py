"""Spatial (3D) bodies end to end: quaternion kinematics, joints, analyses, reactions,
gradients, batches and model files. The examples' figures against independent SciPy
references are in tests/test_spatial_references.py."""
import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs as mb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))


def spatial_pendulum():
    """A rod (1 kg, 0.5 m, CG 0.25 m along body x) on a ball joint at the origin,
    g along -z, released tilted and spinning."""
    m = mb.SpatialModel()
    R = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])  # body x along -z
    m.add_body("rod", mass=1.0, inertia=(1e-4, 2e-2, 2e-2), orientation=R, cg=(0.25, 0, 0),
               angular_velocity=(0.0, 1.0, 3.0))
    m.add_spherical("O", "ground", "rod", at=(0, 0, 0))
    return m.build()


def test_sizes_names_and_quaternion_norm():
    mech, params, q0, v0 = spatial_pendulum()
    assert mech.n_coords == 7 and mech.n_vel == 6 and mech.n_constraints == 3
    assert mech.coordinate_names()[3:] == ("rod.q0", "rod.q1", "rod.q2", "rod.q3")
    assert mech.velocity_names()[3:] == ("rod.wx", "rod.wy", "rod.wz")
    s0 = mb.assemble(mech, params, q0, v0, fixed=("rod.wx", "rod.wy", "rod.wz"))
    tr = mb.simulate(mech, params, s0.q, s0.v, (0.0, 2.0), 1e-3, save_every=100)
    assert int(tr.status) == 0
    norms = np.linalg.norm(np.asarray(tr.q[:, 3:7]), axis=1)
    assert np.max(np.abs(norms - 1.0)) < 1e-12
    assert float(np.max(tr.constraint_error)) < 1e-12
    assert float(tr.energy_drift()) < 1e-8


def test_ball_joint_reaction_statics():
    """At rest, a body hanging on a ball joint: reaction = -weight, no moment."""
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    m.add_body("b", mass=2.0, inertia=(0.1, 0.2, 0.3), position=(0, 0, -1.0))
    m.add_spherical("O", "ground", "b", at=(0, 0, 0))
    mech, params, q0, v0 = m.build()
    acc = mb.accelerations(mech, params, q0, v0, 0.0)
    np.testing.assert_allclose(acc.qdd, 0.0, atol=1e-12)
    r = mb.reactions(mech, params, q0, acc.lam)["O"]
    np.testing.assert_allclose(r["force"], [0, 0, 2.0 * 9.81], atol=1e-12)
    np.testing.assert_allclose(r["moment"], 0.0, atol=1e-12)


def test_revolute_driven_inverse_dynamics_against_closed_form():
    """A bar turning at constant rate about a horizontal revolute axis (x) under gravity
    (-z): driving torque = m g l_cg cos-component, bearing force = centripetal + weight."""
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    M, lc, J = 1.5, 0.3, 0.05
    m.add_body("bar", mass=M, inertia=(J, J, 1e-3), cg=(0.0, lc, 0.0))
    m.add_revolute("A", "ground", "bar", at=(0, 0, 0), axis=(1, 0, 0))
    w = 2.0
    m.drive_joint("motor", "A", mb.constant_velocity(w))
    mech, params, q0, v0 = m.build()
    ts = jnp.linspace(0.0, 2.0, 21)
    inv = mb.inverse_dynamics(mech, params, q0, ts)
    assert int(inv.status) == 0
    phi = w * np.asarray(ts)
    # CG at lc (0, cos phi, sin phi): torque about +x needed = m g lc cos(phi)
    np.testing.assert_allclose(inv.reactions["motor"]["effort"], M * 9.81 * lc * np.cos(phi), atol=1e-9)
    yG = lc * np.stack([np.zeros_like(phi), np.cos(phi), np.sin(phi)], 1)
    F = -M * w**2 * yG - M * np.array([0, 0, -9.81])  # m a_G - m g: force the bearing applies
    np.testing.assert_allclose(inv.reactions["A"]["force"], F, atol=1e-9)


def test_every_joint_keeps_its_geometry_in_a_simulation():
    """A chain of bodies with every spatial joint type, simulated 0.5 s: constraints
    closed to round-off, dof as expected, energy conserved."""
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    kw = dict(mass=1.0, inertia=(0.01, 0.02, 0.03))
    m.add_body("a", position=(0.5, 0, 0), angular_velocity=(0, 0, 1.0), **kw)
    m.add_body("b", position=(1.0, 0, 0), **kw)
    m.add_body("c", position=(1.5, 0, 0), **kw)
    m.add_body("d", position=(2.0, 0, 0.0), **kw)
    m.add_body("e", position=(2.5, 0, 0), **kw)
    m.add_revolute("A", "ground", "a", at=(0, 0, 0), axis=(0, 0, 1))
    m.add_universal("B", "a", "b", at=(0.75, 0, 0), axis_i=(0, 0, 1), axis_j=(0, 1, 0))
    m.add_cylindrical("C", "b", "c", at=(1.25, 0, 0), axis=(1, 0, 0))
    m.add_spherical("D", "c", "d", at=(1.75, 0, 0))
    m.add_prismatic("E", "d", "e", at=(2.25, 0, 0), axis=(1, 0, 0))
    m.add_spring("s", "ground", "e", k=50.0, c=0.0, at_i=(2.5, 0, 1.0), at_j=(2.5, 0, 0))
    mech, params, q0, v0 = m.build()
    s0 = mb.assemble(mech, params, q0, v0, fixed=("a.wz",))
    rep = mb.constraint_report(mech, params, s0.q)
    # 5 bodies * 6 - (5 + 4 + 4 + 3 + 5) = 9 degrees of freedom
    assert rep["dof"] == 9 and not rep["redundant"]
    tr = mb.simulate(mech, params, s0.q, s0.v, (0.0, 0.5), 5e-4, save_every=100)
    assert int(tr.status) == 0
    assert float(np.max(tr.constraint_error)) < 1e-10
    assert float(tr.energy_drift()) < 1e-8


def test_weld_point_on_plane_line_parallel_perpendicular_distance():
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    kw = dict(mass=1.0, inertia=(0.01, 0.02, 0.03))
    m.add_body("a", position=(0, 0, 0), **kw)
    m.add_body("b", position=(1, 0, 0), **kw)
    m.add_particle("p", mass=0.5, position=(0, 1, 0))
    m.add_weld("W", "a", "b", at=(0.5, 0, 0))
    m.add_point_on_plane("PP", "ground", "a", at=(0, 0, 0), normal=(0, 0, 1))
    m.add_point_on_line("PL", "ground", "b", at=(1, 0, 0), axis=(1, 0, 0))
    m.add_parallel_axes("PA", "ground", "a", axis=(0, 0, 1))
    m.add_distance("rod", "a", "p", at_i=(0, 0, 0), at_j=(0, 1, 0))
    m.add_perpendicular_axes("PX", "ground", "b", axis_i=(0, 0, 1), axis_j=(1, 0, 0))
    mech, params, q0, v0 = m.build()
    rep = mb.constraint_report(mech, params, q0)
    assert rep["redundant"], "the perpendicular axes row repeats the parallel-axes rows"
    tr = mb.simulate(mech, params, q0, v0, (0.0, 0.2), 1e-3, save_every=50,
                     solver=mb.SchurCholesky(regularization=1e-10))
    assert float(np.max(tr.constraint_error)) < 1e-10


def test_gradient_of_spatial_pendulum_rollout_matches_central_differences():
    """d(final state)/d(mass, CG offset) through 0.05 s of a spatial pendulum on a revolute
    joint (quaternion retract, projection, reverse mode), against central differences (the
    closed-loop slider-crank version runs with -m slow)."""
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    m.add_body("rod", mass=1.0, inertia=(0.02, 0.03, 0.01), position=(0.3, 0.0, 0.0),
               cg=(0.05, 0.0, 0.0), angular_velocity=(0.0, 0.0, 1.0))
    m.add_revolute("O", "ground", "rod", at=(0.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0))
    mech, params, q0, v0 = m.build()
    s0 = mb.assemble(mech, params, q0, v0)
    ix = mech.coordinate_index("rod.z")

    def f(theta):
        p = mech.replace(params, {"rod.mass": theta[0], "rod.cg": jnp.asarray([theta[1], 0.0, 0.0])})
        tr = mb.simulate(mech, p, s0.q, s0.v, (0.0, 0.05), 1e-3, save_every=50, check_initial=False)
        return tr.q[-1, ix] + 0.1 * tr.v[-1, mech.velocity_index("rod.wy")]

    th = jnp.asarray([1.0, 0.05])
    g = jax.grad(f)(th)
    h = 1e-5
    fd = np.array([(f(th.at[i].add(h)) - f(th.at[i].add(-h))) / (2 * h) for i in range(2)])
    assert np.all(np.abs(fd) > 1e-6)  # (both parameters matter)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


@pytest.mark.slow  # (~70-100 s: the spatial pendulum's gradient test above runs by default)
def test_gradient_of_spatial_closed_loop_rollout_matches_central_differences():
    """d(final slider position)/d(rod mass, crank CG) through 0.2 s of the spatial
    slider-crank (closed loop, projection), against central differences."""
    import spatial_slider_crank as ssc
    mech, params, q0, v0 = ssc.build()
    s0 = ssc.initial_state(mech, params, q0, v0)
    ix = mech.coordinate_index("slider.x")

    def f(theta):
        p = mech.replace(params, {"rod.mass": theta[0], "crank.cg": jnp.asarray([0.0, 0.0, theta[1]])})
        tr = mb.simulate(mech, p, s0.q, s0.v, (0.0, 0.2), 1e-3, save_every=200,
                         check_initial=False)
        return tr.q[-1, ix] + 0.1 * tr.v[-1, mech.velocity_index("crank.wx")]

    th = jnp.asarray([0.5, 0.04])
    g = jax.grad(f)(th)
    h = 1e-5
    fd = np.array([(f(th.at[i].add(h)) - f(th.at[i].add(-h))) / (2 * h) for i in range(2)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)


def test_batch_model_file_and_float32(tmp_path):
    import spatial_slider_crank as ssc
    mech, params, q0, v0 = ssc.build()
    s0 = ssc.initial_state(mech, params, q0, v0)
    masses = jnp.linspace(1.5, 2.5, 3)
    P = jax.vmap(lambda mm: mech.replace(params, {"slider.mass": mm}))(masses)
    tr = mb.simulate_batch(mech, P, s0.q, s0.v, (0.0, 0.1), 1e-3, state_axis=None, save_every=50)
    assert tr.q.shape == (3, 3, 21) and np.all(np.asarray(tr.status) == 0)
    one = mb.simulate(mech, mech.replace(params, {"slider.mass": 2.5}), s0.q, s0.v, (0.0, 0.1),
                      1e-3, save_every=50)
    np.testing.assert_allclose(tr.q[2], one.q, atol=1e-12)
    # model file round trip (version 2, kind spatial): same mechanism, params, state
    model = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    model.add_body("b", mass=1.0, inertia=(0.1, 0.2, 0.3), position=(0, 0, -1),
                   orientation=(math.cos(0.2), math.sin(0.2), 0.0, 0.0))
    model.add_spherical("O", "ground", "b", at=(0, 0, 0))
    model.add_load("L", "b", force=(1.0, 0, 0), control=0)
    path = tmp_path / "sp.json"
    mb.save_model(model, path)
    again = mb.load_model(path)
    a, b = model.build(), again.build()
    assert a.mechanism == b.mechanism
    np.testing.assert_array_equal(a.q0, b.q0)
    for x, y in zip(jax.tree_util.tree_leaves(a.params), jax.tree_util.tree_leaves(b.params)):
        np.testing.assert_array_equal(x, y)
    # float32 runs
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    tr32 = mb.simulate(mech, jax.tree_util.tree_map(f32, params), f32(s0.q), f32(s0.v), (0.0, 0.1),
                       1e-3, save_every=50)
    assert tr32.q.dtype == jnp.float32 and int(tr32.status) == 0
    ref64 = mb.simulate(mech, params, s0.q, s0.v, (0.0, 0.1), 1e-3, save_every=50).q[-1]
    np.testing.assert_allclose(tr32.q[-1], ref64, atol=2e-4)


def test_rolling_disc_rolls_without_slip():
    """A thin disc rolling upright in a straight line: centre speed = r * spin rate; the
    contact point's velocity stays zero; energy conserved (nonholonomic rows)."""
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    r = 0.3
    # disc axle along global y, centre at height r, rolling along +x at 2 m/s
    m.add_body("disc", mass=2.0, inertia=(0.045, 0.09, 0.045), position=(0, 0, r),
               velocity=(2.0, 0.0, 0.0), angular_velocity=(0.0, 2.0 / r, 0.0))
    m.add_rolling_disc("roll", "disc", radius=r, axle=(0, 1, 0))
    mech, params, q0, v0 = m.build()
    rep = mb.constraint_report(mech, params, q0)
    assert rep["nonholonomic"] == 2
    tr = mb.simulate(mech, params, q0, v0, (0.0, 1.0), 1e-3, save_every=100)
    assert int(tr.status) == 0
    np.testing.assert_allclose(tr.q[-1, 0], 2.0, atol=1e-9)
    np.testing.assert_allclose(tr.q[:, 2], r, atol=1e-12)
    assert float(np.max(tr.velocity_error)) < 1e-10
    assert float(tr.energy_drift()) < 1e-9


def test_contacts_and_bushing_and_torsion_run():
    """A ball dropped on the ground plane (sphere-plane contact) bounces below its release
    height; a bushing and a torsion spring oscillate with conserved energy."""
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    m.add_body("ball", mass=0.1, inertia=4e-5, position=(0, 0, 0.2))
    m.add_sphere_plane_contact("floor", "ground", "ball", radius=0.02, k=1e6, exponent=1.5,
                               restitution=0.8, impact_velocity=1.9, friction=0.3)
    mech, params, q0, v0 = m.build()
    tr = mb.simulate(mech, params, q0, v0, (0.0, 0.5), 1e-5, save_every=100)
    assert int(tr.status) == 0
    z = np.asarray(tr.q[:, 2])
    # deepest penetration: below the undamped elastic bound k d^2.5 / 2.5 = m v^2 / 2
    # (v = sqrt(2 g 0.18)), and well inside the sphere; never back to the release height
    v_imp = math.sqrt(2 * 9.81 * 0.18)
    d_el = (2.5 * 0.5 * 0.1 * v_imp**2 / 1e6) ** 0.4
    assert 0.02 - d_el < z.min() < 0.02 - 0.5 * d_el and z.max() <= 0.2 + 1e-12
    out = mb.force_outputs(mech, params, tr.q[0], tr.v[0])
    assert float(out["floor"]["normal"]) == 0.0
    m = mb.SpatialModel(gravity=(0.0, 0.0, 0.0))
    m.add_body("a", mass=1.0, inertia=(0.01, 0.02, 0.03), position=(0, 0, 0),
               velocity=(0.1, 0.0, 0.2), angular_velocity=(0.5, -0.3, 0.2))
    m.add_bushing("bu", "ground", "a", k_translation=(100, 200, 300), k_rotation=(5, 6, 7),
                  at=(0, 0, 0))
    m.add_body("w", mass=1.0, inertia=(0.01, 0.02, 0.03), position=(1, 0, 0),
               angular_velocity=(2.0, 0, 0))
    m.add_revolute("R", "ground", "w", at=(1, 0, 0), axis=(1, 0, 0))
    m.add_torsion_spring("ts", "R", k=3.0)
    mech, params, q0, v0 = m.build()
    tr = mb.simulate(mech, params, q0, v0, (0.0, 1.0), 1e-3, save_every=100)
    assert int(tr.status) == 0 and float(tr.energy_drift()) < 1e-9


def test_spatial_drawing_and_animation(tmp_path):
    """plot.draw / plot.animate dispatch to the 3D drawing for spatial mechanisms: every
    body, joint, rod and spring is drawn from params and q, and a GIF is written."""
    import matplotlib
    matplotlib.use("Agg")
    import spatial_slider_crank as ssc

    from jaxmbs import plot
    from jaxmbs.spatial.draw import geometry3d
    mech, params, q0, v0 = ssc.build()
    geo = geometry3d(mech, params, np.asarray(q0))
    assert [b[0] for b in geo["bodies"]] == ["crank", "rod", "slider"]
    assert {j[0] for j in geo["joints"]} == {"A", "B", "C", "guide"}
    # the crank pin B is drawn where the crank's point is
    B = [j for j in geo["joints"] if j[0] == "B"][0][2]
    np.testing.assert_allclose(B, ssc.A + np.array([0, 0, ssc.L_CRANK]), atol=1e-12)
    ax = plot.draw(mech, params, q0)
    assert ax.name == "3d"
    s0 = ssc.initial_state(mech, params, q0, v0)
    tr = mb.simulate(mech, params, s0.q, s0.v, (0.0, 0.05), 1e-3, save_every=10)
    path = plot.animate(mech, params, tr, str(tmp_path / "sc.gif"), max_frames=4)
    assert (tmp_path / "sc.gif").stat().st_size > 1000 and path.endswith("sc.gif")
