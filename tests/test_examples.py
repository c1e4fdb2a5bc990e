"""The core examples run as scripts and keep their JSON contracts (short horizons here;
the full runs are in benchmarks/accuracy.py and VALIDATION.md)."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "examples", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pendulum_json_contract():
    out = _load("pendulum").main(["--json", "--t1", "2"])
    assert out["t"] == [0.5, 1.0, 2.0]
    assert len(out["x"]) == len(out["y"]) == 3
    np.testing.assert_allclose(np.hypot(out["x"], out["y"]), 1.0, atol=1e-12)
    assert out["energy_drift"] < 1e-8


def test_slider_crank_json_contract_as_script(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "slider_crank.py"), "--json"],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["crank_angle_deg"] == list(range(0, 360, 15))
    assert len(out["driving_torque"]) == len(out["slider_acceleration"]) == 24
    assert out["slider_acceleration"][0] == pytest.approx(-5062.5, abs=1e-8)
    assert out["driving_torque"][0] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("name,key", [("double_pendulum", "tip"), ("four_bar", "crank_angle")])
def test_forward_dynamics_examples(name, key):
    out = _load(name).main(["--json", "--t1", "0.5"])
    assert key in out and out["energy_drift"] < 1e-8 and out["max_constraint_error"] < 1e-10
