"""JSON model files: exact round trip for every builder method, clear errors, and the CLI."""
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs as mb
from jaxmbs import io

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# builder methods that take Python functions: they cannot be written to a data file
FUNCTION_METHODS = {"add_constraint", "add_force", "add_velocity_constraint", "add_circle_profile_contact"}


def core_model():
    """Every core joint, driver (every data profile kind) and force, with offsets."""
    m = mb.Model(gravity=(0.3, -9.81))
    m.add_body("a", mass=1.2, inertia=0.1, position=(0.1, 0.2), angle=0.3, cg=(0.05, -0.02),
               velocity=(0.1, 0.0), angular_velocity=0.2)
    m.add_body("b", mass=0.7, inertia=0.05, position=(0.8, -0.1), angle=-0.4, cg=(0.1, 0.03))
    m.add_body("c", mass=0.4, inertia=0.02, position=(1.3, 0.4), angle=1.1)
    m.add_body("d", mass=0.9, inertia=0.03, position=(0.4, 1.0), angle=0.2)
    m.add_particle("p", mass=0.3, position=(1.5, 1.2), velocity=(0.0, 0.1))
    m.add_revolute("r1", "ground", "a", at=(0.0, 0.0))
    m.add_revolute("r2", "a", "b", point_i=(0.5, 0.1), point_j=(-0.2, 0.0))
    m.add_revolute("r3", "c", "p", at=(1.5, 1.2))
    m.add_prismatic("pr", "b", "c", axis=(0.6, 0.8), at=(1.0, 0.2))
    m.add_weld("w", "ground", "d", at=(0.4, 0.9))
    m.add_distance("rod", "a", "p", at_i=(0.2, 0.3), at_j=(1.5, 1.2))
    m.add_distance("act", "b", "d", at_i=(0.9, 0.0), at_j=(0.4, 1.1), length=mb.sinusoid(0.1, 3.0, 0.2, 1.2))
    m.add_point_on_line("pol", "ground", "p", axis=(1.0, 0.3), at=(0.0, 1.0), point_j=(0.0, 0.0))
    m.drive_joint("dr1", "r2", mb.polynomial([0.1, 0.5, -0.2, 0.05]))
    m.drive_coordinate("dx", "c", "x", mb.constant_velocity(0.3, 1.0))
    m.drive_angle("da", "c", 0.7, relative_to="b")
    m.add_spring("s1", "a", "c", k=50.0, c=2.0, at_i=(0.0, 0.2), at_j=(1.3, 0.5), force=1.0)
    m.add_torsion_spring("ts", "a", "b", k=3.0, c=0.1, torque=0.2)
    m.add_load("f1", "b", force=(1.0, -2.0), torque=0.3, at=(0.9, 0.0))
    m.add_load("f2", "c", force=(0.0, 1.0), local=True, control=0)
    return m


MODELS = {"core": core_model}
# Models for the joint and force types of the planar catalogue, one small model each.
# Each is a function returning a Model; a method is covered when some model calls it.
try:
    from catalogue_models import CATALOGUE  # noqa: E402  (tests/catalogue_models.py)

    MODELS.update(CATALOGUE)
except ImportError:  # pragma: no cover - the catalogue models are optional
    pass


def _same(b1, b2):
    assert b1.mechanism == b2.mechanism
    l1, t1 = jax.tree_util.tree_flatten(b1.params)
    l2, t2 = jax.tree_util.tree_flatten(b2.params)
    assert t1 == t2
    for x, y in zip(l1, l2):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))  # bit-exact
    np.testing.assert_array_equal(np.asarray(b1.q0), np.asarray(b2.q0))
    np.testing.assert_array_equal(np.asarray(b1.v0), np.asarray(b2.v0))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_round_trip_exact(name, tmp_path):
    m = MODELS[name]()
    path = tmp_path / f"{name}.json"
    io.save_model(m, path)
    m2 = io.load_model(path)
    _same(m.build(), m2.build())
    # and a second generation writes the identical file
    io.save_model(m2, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == path.read_text()


def test_every_builder_method_has_a_round_trip_model():
    used = set()
    for f in MODELS.values():
        used |= {c[0] for c in f()._calls}
    missing = io.files._builder_methods() - FUNCTION_METHODS - used
    assert not missing, f"no JSON round-trip model uses: {sorted(missing)} (add one to tests/catalogue_models.py)"


def test_functions_are_refused_with_the_call_named(tmp_path):
    m = mb.Model()
    m.add_body("a", mass=1.0, inertia=0.1)
    m.add_revolute("r", "ground", "a", at=(0.0, 0.0))
    m.drive_joint("motor", "r", lambda t: 0.1 * t)
    with pytest.raises(ValueError, match=r"calls\[2\] \(drive_joint 'motor'\) argument 'profile'"):
        io.save_model(m, tmp_path / "x.json")
    m = mb.Model()
    m.add_body("a", mass=1.0, inertia=0.1)
    m.add_force("drag", lambda q, v, t, u: -v)
    with pytest.raises(ValueError, match=r"add_force 'drag'.*Python function"):
        io.model_to_dict(m)


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d.update(format="other"), "field 'format'"),
    (lambda d: d.update(version=99), "field 'version'.*newer jaxmbs"),
    (lambda d: d.update(extra=1), "unknown top-level field"),
    (lambda d: d["calls"].append({"method": "rm_body", "args": {}}), r"calls\[3\]\.method.*rm_body"),
    (lambda d: d["calls"][0]["args"].update(mass=-1.0), r"calls\[0\] \(add_body 'a'\).*mass must be positive"),
    (lambda d: d["calls"][1]["args"].update(colour=1), r"calls\[1\]\.args \(add_revolute\).*colour"),
    (lambda d: d["calls"][2]["args"].update(profile={"profile": {"coef": [1.0], "freq": 2}}),
     r"calls\[2\].*unknown profile field"),
    (lambda d: d["model"].update(gravity=[0.0]), "field 'model'.*gravity"),
])
def test_invalid_files_name_the_field(mutate, match, tmp_path):
    m = mb.Model()
    m.add_body("a", mass=1.0, inertia=0.1)
    m.add_revolute("r", "ground", "a", at=(0.0, 0.0))
    m.drive_joint("motor", "r", mb.constant_velocity(1.0))
    d = json.loads(json.dumps(io.model_to_dict(m)))
    mutate(d)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ValueError, match=match):
        io.load_model(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        io.load_model(path)


def test_cli_simulate_matches_library(tmp_path):
    """`jaxmbs simulate` on the shipped model file: the npz holds the library's trajectory."""
    model = os.path.join(ROOT, "examples", "models", "slider_crank_spring.json")
    out, png = tmp_path / "r.npz", tmp_path / "r.png"
    cmd = [sys.executable, "-m", "jaxmbs.cli", "simulate", model, "--t1", "0.2", "--batch", "3",
           "--perturb", "crank.inertia=0.2", "--out", str(out), "--plot", str(png), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["failed"] == 0 and summary["batch"] == 3 and summary["steps"] == 200
    assert png.stat().st_size > 10_000
    res = np.load(out)
    assert res["q"].shape[:2] == (3, res["t"].size)
    # member 1 re-simulated through the library with its perturbed mass
    mech, params, q0, v0 = io.load_model(model).build()
    p = mech.replace(params, {"crank.inertia": jnp.asarray(res["param:crank.inertia"][1])})
    asm = mb.assemble(mech, p, q0, v0)
    every = int(round((res["t"][1] - res["t"][0]) / 1e-3))
    tr = mb.simulate(mech, p, asm.q, asm.v, (0.0, 0.2), 1e-3, save_every=every)
    np.testing.assert_allclose(res["q"][1], np.asarray(tr.q), atol=1e-12)
    assert not np.allclose(res["q"][0], res["q"][1])  # the perturbation changed the motion
    # bad input: exit status 2 and a message naming the problem
    r = subprocess.run(cmd[:5] + ["--t1", "0.2", "--perturb", "crank.masss=0.1"], capture_output=True,
                       text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 2 and "unknown parameter 'crank.masss'" in r.stderr


# keys of earlier files whose value is now read from another key's leaf (the spatial
# revolute's and prismatic's second axis rows, the prismatic's line rows, a driver on a
# revolute): old key -> the key that holds the value
SHARED_SINCE = {"spatial_slider_crank_v2": {
    "A.dot1.b_j": "A.b_j", "D.dot1.b_j": "D.b_j", "D.dot1_2.a_i": "D.a_i", "D.dot2.a_i": "D.a_i",
    "D.dot2.point_i": "D.point_i", "D.dot2.point_j": "D.point_j", "D.dot2_2.a_i": "D.dot1.a_i",
    "motor.f_i": "A.a_i", "motor.g_i": "A.dot1.a_i"}}


@pytest.mark.parametrize("name", ["planar_fourbar_v1", "planar_slider_crank_v1",
                                  "spatial_slider_crank_v2"])
def test_model_files_of_earlier_versions_load_the_same(name):
    """Model files written by earlier releases (format versions 1 and 2, pinned in
    tests/data with what they built then: coordinates, rows, every named parameter and the
    initial state) load and build the same mechanism today."""
    import json
    import os

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    ref = json.load(open(os.path.join(here, f"{name}.expected.json")))
    mech, params, q0, v0 = mb.load_model(os.path.join(here, f"{name}.json")).build()
    assert list(mech.coordinate_names()) == ref["coordinates"]
    assert mech.n_constraints == ref["n_constraints"]
    # (every parameter by where it is stored; the names of the second and later constraint
    # parts of a joint follow the one key rule of jaxmbs.core.build.joint_keys since then:
    # 'A.dot12.a_i' became 'A.dot1.a_i')
    renamed = {"dot12": "dot1", "dot13": "dot1_2", "dot22": "dot2", "dot23": "dot2_2"}

    def today(key):
        parts = key.split(".")
        return ".".join(renamed.get(x, x) for x in parts)

    # (and a value that two constraint parts stored twice then is one leaf now, named by
    # its first key: the second copy's key is gone, its value is the first's)
    shared = SHARED_SINCE.get(name, {})
    assert sorted(mech.param_names()) == sorted(today(k) for k in ref["params"]
                                                if today(k) not in shared)
    for key, value in ref["params"].items():
        np.testing.assert_array_equal(np.asarray(mech.get(params, shared.get(today(key), today(key)))),
                                      np.asarray(value), err_msg=key)
    np.testing.assert_array_equal(np.asarray(q0), np.asarray(ref["q0"]))
    np.testing.assert_array_equal(np.asarray(v0), np.asarray(ref["v0"]))


def test_a_3d_file_marked_version_1_and_a_file_without_calls_say_what_is_wrong(tmp_path):
    m = mb.SpatialModel()
    m.add_body("a", mass=1.0, inertia=(0.1, 0.1, 0.1))
    d = io.model_to_dict(m)
    assert d["version"] == 2
    d["version"] = 1
    path = tmp_path / "spatial_v1.json"
    path.write_text(json.dumps(d))
    with pytest.raises(ValueError, match=str(path) + ".*'model.kind'.*needs a version 2 file"):
        io.load_model(path)
    path = tmp_path / "no_calls.json"
    path.write_text('{"format": "jaxmbs-model", "version": 1, "model": {}, "calls": []}')
    with pytest.raises(ValueError, match=str(path) + ": field 'calls' is empty.*no bodies"):
        io.load_model(path)


def test_cli_without_a_command_prints_the_help_and_exits_2(capsys):
    from jaxmbs import cli

    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert "usage: jaxmbs" in err and "demo" in err and "simulate" in err
    assert "no command given" in err


def test_cli_summary_has_no_null_energy_drift(tmp_path):
    """Every member failed (a rod driven to zero length: singular): the summary leaves the
    energy drift out and says why, instead of a null."""
    from jaxmbs import cli

    m = mb.Model(gravity=(0.0, -9.81))
    m.add_particle("p", mass=1.0, position=(1.0, 0.0))
    m.add_distance("rod", "ground", "p", at_i=(0.0, 0.0), at_j=(1.0, 0.0),
                   length=mb.polynomial([1.0, -100.0]))
    path = io.save_model(m, tmp_path / "singular.json")
    res = cli.simulate_file(path, 0.02, quiet=True)
    assert res["failed"] == 1
    assert "max_energy_drift" not in res and "no member ran" in res["max_energy_drift_omitted"]
