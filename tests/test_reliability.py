"""Issue 21 (reliability), items 1, 2, 4 and 13: a blown-up integration is flagged,
redundant constraints give one answer on every path, bad concrete parameters are refused
where they enter, and the module / DOF / assembly reports say what is wrong.

(The fault-injection tables of tests/test_faults.py cover the entry points' bad inputs
one by one; these are the scenarios of the issue.)
"""
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs as mb
import jaxmbs.simulation
from jaxmbs.io.files import load_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPRING = os.path.join(ROOT, "examples", "models", "slider_crank_spring.json")


# ---------------------------------------------------------------- item 1: blow-ups
@pytest.fixture(scope="module")
def spring_crank():
    mech, params, q0, v0 = load_model(SPRING).build()
    s0 = mb.assemble(mech, params, q0, v0)
    return mech, params, s0.q, s0.v


def test_stiff_spring_beyond_rk4_stability_is_flagged(spring_crank):
    """return.k = 1e9 N/m with dt = 1e-3 s (dt sqrt(k/m) ~ 100, RK4 is stable below 2.8):
    the states stay finite and bounded, but the energy balance fails (0.39 of the energy
    exchanged): status ENERGY (the batch paths: the slow test below). energy_tol=None
    turns the check off."""
    mech, params, q, v = spring_crank
    stiff = mech.replace(params, {"return.k": 1e9})
    tr = mb.simulate(mech, stiff, q, v, (0.0, 0.2), 1e-3, save_every=20)
    assert int(tr.status) == mb.status.ENERGY, mb.status.describe(tr.status)
    assert np.all(np.isfinite(np.asarray(tr.q))) and float(tr.energy_error()) > 0.1
    off = mb.simulate(mech, stiff, q, v, (0.0, 0.2), 1e-3, save_every=20, energy_tol=None)
    assert int(off.status) == 0


@pytest.mark.slow
def test_stiff_spring_is_flagged_on_both_batch_paths(spring_crank):
    """The stiff member of a batch (item 1) on the vmap and the element-wise path: status
    ENERGY, the healthy members (k = 50) status 0 with a balance error ~1e-9. (Fast suite:
    simulate above, run_batch and the CLI below.)"""
    mech, params, q, v = spring_crank
    P = jax.vmap(lambda k: mech.replace(params, {"return.k": k}))(jnp.array([50.0] * 7 + [1e9]))
    for vec in ("vmap", "elementwise"):
        b = mb.simulate_batch(mech, P, q, v, (0.0, 0.2), 1e-3, save_every=20, state_axis=None,
                              vectorize=vec)
        st = np.asarray(b.status)
        assert np.all(st[:7] == 0) and st[7] == mb.status.ENERGY, (vec, st)
        assert float(np.max(np.asarray(b.energy_error())[:7])) < 1e-7


def test_stiff_spring_fails_in_run_batch_and_the_cli(spring_crank, tmp_path):
    """run_batch's chunks and `jaxmbs simulate --json` report the stiff member as failed
    (they said status 0 / "failed": 0)."""
    mech, params, q, v = spring_crank
    P = jax.vmap(lambda k: mech.replace(params, {"return.k": k}))(jnp.array([50.0, 1e9]))
    mb.run_batch(mech, P, jnp.stack([q, q]), jnp.stack([v, v]), (0.0, 0.2), 1e-3,
                 str(tmp_path / "run"), chunk_steps=100, progress=False)
    st = mb.load_batch(str(tmp_path / "run"))["status"]
    assert st[0] == 0 and st[1] & mb.status.ENERGY
    with open(SPRING) as f:
        model = json.load(f)
    for call in model["calls"]:
        if call["args"].get("name") == "return":
            call["args"]["k"] = 1e9
    path = tmp_path / "stiff.json"
    path.write_text(json.dumps(model))
    r = subprocess.run([sys.executable, "-m", "jaxmbs.cli", "simulate", str(path), "--t1", "0.2",
                        "--json"], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": ROOT})
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 3 and out["failed"] == 1, r.stderr[-2000:]
    assert "energy balance" in " ".join(out["failed_by_status"])


def test_energy_balance_error_is_independent_of_the_potential_zero():
    """The measure divides by the energy exchanged, not by |E(t0)|: lifting the pendulum's
    pivot by 1 km (potential + 1e4 J) leaves it unchanged. The energy exchanged: the
    kinetic energy, capped at what the initial state can reach (1.99 J: the erroneous
    0.01 J is not counted), plus the range of the potential (1.99 J)."""
    T = np.array([0.0, 1.0, 2.0])
    V = np.array([2.0, 1.0, 0.01])  # E = 2, 2, 2.01: an error of 0.01 J
    W = np.zeros(3)
    err, _ = jaxmbs.simulation.energy_balance_error(jnp.asarray(T), jnp.asarray(V), jnp.asarray(W))
    err2, _ = jaxmbs.simulation.energy_balance_error(jnp.asarray(T), jnp.asarray(V + 1e4), jnp.asarray(W))
    np.testing.assert_allclose(float(err), float(err2), rtol=1e-9)
    assert float(err) == pytest.approx(0.01 / 3.98)


# ---------------------------------------------------------------- item 2: redundancy
def double_parallelogram(theta=-np.pi / 3, omega=1.0):
    """A parallelogram four-bar (crank O1-A, coupler A-B, rocker O2-B) and a fifth link
    O3-C parallel to the crank to the coupler's midpoint: 12 rows of rank 11, one of them
    (C[1]) redundant; 1 DOF. Swings below the horizontal (no change point)."""
    m = mb.Model(gravity=(0.0, -9.81))
    L, W = 0.5, 1.0
    d = L * np.array([np.cos(theta), np.sin(theta)])

    def bar(name, P, Q):
        P, Q = np.asarray(P, float), np.asarray(Q, float)
        n = np.linalg.norm(Q - P)
        m.add_body(name, mass=n, inertia=n**3 / 12, position=(P + Q) / 2,
                   angle=np.arctan2(*(Q - P)[::-1]))

    bar("crank", (0, 0), d)
    bar("coupler", d, d + (W, 0))
    bar("rocker", (W, 0), d + (W, 0))
    bar("link5", (W / 2, 0), d + (W / 2, 0))
    m.add_revolute("O1", "ground", "crank", at=(0, 0))
    m.add_revolute("A", "crank", "coupler", at=d)
    m.add_revolute("B", "coupler", "rocker", at=d + (W, 0))
    m.add_revolute("O2", "ground", "rocker", at=(W, 0))
    m.add_revolute("O3", "ground", "link5", at=(W / 2, 0))
    m.add_revolute("C", "link5", "coupler", at=d + (W / 2, 0))
    mech, params, q0, v0 = m.build()
    s = mb.assemble(mech, params, q0, v0.at[2].set(omega), fixed=("crank.theta",))
    return mech, params, s.q, s.v


def test_redundant_constraints_give_one_answer_on_every_path():
    """The double parallelogram (the redundant row named by constraint_report): simulate
    with the defaults and simulate_batch of 4 (vmap) give the same motion with status 0
    (they blew up to 4e33); DenseLU, which cannot factorise the singular KKT matrix,
    refuses concrete input naming the row and the solver to use. (The element-wise batch,
    the regularised solver, Baumgarte and traced DenseLU: the slow test below.)"""
    mech, params, q, v = double_parallelogram()
    assert mb.constraint_report(mech, params, q)["redundant"] == ["C[1]"]
    kw = dict(save_every=100)
    T = (0.0, 1.0)
    ref = mb.simulate(mech, params, q, v, T, 1e-3, **kw)
    assert int(ref.status) == 0 and float(ref.energy_error()) < 1e-8
    P = jax.tree_util.tree_map(lambda x: jnp.stack([x] * 4), params)
    b = mb.simulate_batch(mech, P, q, v, T, 1e-3, state_axis=None, vectorize="vmap", **kw)
    runs = {"simulate_batch(4, vmap)": jax.tree_util.tree_map(lambda x: x[3], b)}
    _agree(runs, ref)
    with pytest.raises(ValueError, match=r"C\[1\].*redundant.*SchurCholesky"):
        mb.simulate(mech, params, q, v, T, 1e-3, solver=mb.DenseLU(), **kw)


def _agree(runs, ref):
    for name, tr in runs.items():
        assert int(tr.status) == 0, (name, mb.status.describe(tr.status))
        np.testing.assert_allclose(tr.q, ref.q, rtol=0, atol=1e-8, err_msg=name)


@pytest.mark.slow
def test_redundant_constraints_same_answer_elementwise_baumgarte_and_traced_denselu():
    """The double parallelogram's other paths (the fast test above: simulate, the vmap
    batch, concrete DenseLU): the element-wise batch of 16, the regularised solver and
    Baumgarte stabilisation give the default's motion with status 0 (they gave a sane run,
    the sane run and a third answer); DenseLU on traced input sets a status."""
    mech, params, q, v = double_parallelogram()
    kw = dict(save_every=100)
    T = (0.0, 1.0)
    ref = mb.simulate(mech, params, q, v, T, 1e-3, **kw)
    runs = {"Baumgarte": mb.simulate(mech, params, q, v, T, 1e-3, stabilizer=mb.Baumgarte(10.0), **kw),
            "regularised": mb.simulate(mech, params, q, v, T, 1e-3, solver=mb.SchurCholesky(regularization=1e-12), **kw)}
    P = jax.tree_util.tree_map(lambda x: jnp.stack([x] * 16), params)
    b = mb.simulate_batch(mech, P, q, v, T, 1e-3, state_axis=None, vectorize="elementwise", **kw)
    runs["simulate_batch(16, elementwise)"] = jax.tree_util.tree_map(lambda x: x[15], b)
    _agree(runs, ref)
    traced = jax.jit(lambda p: mb.simulate(mech, p, q, v, (0.0, 0.01), 1e-3, solver=mb.DenseLU()))(params)
    assert int(traced.status) != 0


@pytest.mark.slow
def test_redundant_spatial_rows_are_dropped_on_the_dense_path():
    """A spatial mechanism with more than 12 rows (the column-wise factorisation) and a
    redundant row: the default solver gives status 0 and the motion of the regularised
    one. (Fast suite: the planar column-wise path in
    test_banded.py::test_redundant_rows_are_dropped_on_the_banded_path, banded=False.)"""
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    kw = dict(mass=1.0, inertia=(0.01, 0.02, 0.03))
    m.add_body("a", position=(0.5, 0.0, 0.0), angular_velocity=(0.0, 0.0, 1.0), velocity=(0.0, 0.5, 0.0), **kw)
    m.add_body("b", position=(1.5, 0.0, 0.0), **kw)
    m.add_revolute("R", "ground", "a", at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    m.add_parallel_axes("PA", "ground", "a", axis=(0.0, 0.0, 1.0))  # repeats R's axis rows
    m.add_revolute("Q", "a", "b", at=(1.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    m.add_spherical("S", "a", "b", at=(1.0, 0.0, 0.0))  # repeats Q's point rows
    mech, params, q0, v0 = m.build()
    s0 = mb.assemble(mech, params, q0, v0, fixed=("a.wz",))
    assert mech.n_constraints > 12 and len(mb.constraint_report(mech, params, s0.q)["redundant"]) == 5
    tr = mb.simulate(mech, params, s0.q, s0.v, (0.0, 0.2), 1e-3, save_every=100)
    reg = mb.simulate(mech, params, s0.q, s0.v, (0.0, 0.2), 1e-3, save_every=100,
                      solver=mb.SchurCholesky(regularization=1e-12))
    assert int(tr.status) == 0, mb.status.describe(tr.status)
    np.testing.assert_allclose(tr.q, reg.q, rtol=0, atol=1e-8)


# ---------------------------------------------------------------- item 4: bad parameters
def test_bad_concrete_parameters_are_refused_where_they_enter(spring_crank):
    """The issue's cases: replace with a zero / negative / NaN mass, zero or negative
    inertia, NaN gravity or joint point raises naming the key (simulate used to run them
    to a NONFINITE freeze at q0); params built without replace are refused by simulate and
    assemble (which crashed inside its own error report on a NaN joint point)."""
    mech, params, q, v = spring_crank
    for key, value, frag in (("crank.mass", 0.0, "> 0"), ("crank.mass", -1.0, "> 0"),
                             ("crank.mass", np.nan, "finite"), ("crank.inertia", 0.0, "> 0"),
                             ("crank.inertia", -1e-3, "> 0"), ("gravity", [np.nan, 0.0], "finite"),
                             ("A.point_i", [np.nan, 0.0], "finite"), ("crank.mass", True, "bool")):
        with pytest.raises(ValueError, match=f"'{key}'.*") as e:
            mech.replace(params, {key: value})
        assert frag in str(e.value)
    leaf = params.joints["coincident"]["point_i"]
    nan_point = params.replace(joints={**params.joints, "coincident": {
        **params.joints["coincident"], "point_i": leaf.at[1, 0].set(np.nan)}})
    with pytest.raises(ValueError, match=r"'A.point_i' must be finite"):
        mb.assemble(mech, nan_point, q, v)
    with pytest.raises(ValueError, match=r"'A.point_i' must be finite"):
        mb.simulate(mech, nan_point, q, v, (0.0, 0.01), 1e-3)


# ---------------------------------------------------------------- item 13
def test_jaxmbs_simulate_is_the_function_and_its_module_is_simulation():
    """`jaxmbs.simulate` is the function (the module is `jaxmbs.simulation`), and both
    import styles give the same function and the same results."""
    import inspect
    import types

    from jaxmbs.simulation import _simulate, simulate

    assert isinstance(jaxmbs.simulation, types.ModuleType)
    assert jaxmbs.simulate is simulate and callable(_simulate)
    assert "t_span" in inspect.signature(jaxmbs.simulate).parameters
    mech, params, q0, v0 = load_model(SPRING).build()
    s0 = mb.assemble(mech, params, q0, v0)
    a = jaxmbs.simulate(mech, params, s0.q, s0.v, (0.0, 0.01), 1e-3)
    b = simulate(mech, params, s0.q, s0.v, (0.0, 0.01), 1e-3)
    np.testing.assert_array_equal(a.q, b.q)


def test_dof_of_an_unassembled_configuration_is_refused():
    """A 1-DOF slider-crank with crank and rod both vertical (the constraints violated):
    dof() said 2; now it refuses, and check=False still analyses the q as it is."""
    from mechanisms import slider_crank

    mech, params, q0, _ = slider_crank(driven=False)
    assert mb.dof(mech, params, q0) == 1
    bad = q0.at[2].set(np.pi / 2).at[5].set(np.pi / 2)
    with pytest.raises(ValueError, match="violates the constraints.*assemble"):
        mb.dof(mech, params, bad)
    assert mb.dof(mech, params, bad, check=False) == 2


def test_failed_assembly_names_the_joints_that_cannot_close():
    """A pendulum whose tip is tethered to a point it cannot reach: the least-norm Newton
    spread the residual over every joint and the report called a row "redundant" at the
    stretched (singular) configuration. Now it names the loop's joints and says they
    cannot be closed, and no row is called redundant."""
    m = mb.Model()
    m.add_body("rod", mass=1.0, inertia=0.1, position=(0.5, 0.0))
    m.add_revolute("O", "ground", "rod", at=(0.0, 0.0))
    m.add_particle("p", mass=1.0, position=(1.0, 0.0))
    m.add_revolute("tip", "rod", "p", point_i=(0.5, 0.0))
    m.add_distance("tether", "ground", "p", at_i=(3.0, 0.0), at_j=(1.0, 0.0), length=1.5)
    mech, params, q0, _ = m.build()
    with pytest.raises(ValueError) as e:
        mb.assemble(mech, params, q0)
    msg = str(e.value)
    assert "cannot be closed" in msg and "O, tether, tip" in msg and "singular" in msg
    assert "redundant" not in msg
