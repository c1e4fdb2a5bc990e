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


@pytest.mark.slow  # (~55 s; the engine-balance orders in the default run: test_engine_balance.py)
def test_engine_balance_json_contract_as_script(tmp_path):
    """One crank-train topology (three 4-cylinder layouts share one compilation)."""
    fig = tmp_path / "fig.png"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "engine_balance.py"), "--json",
                        "--layouts", "inline-4,boxer-4,flat-4", "--samples", "24", "--out", str(fig)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(out["layouts"]) == {"inline-4", "boxer-4", "flat-4"} and out["seconds"] > 0
    assert out["max_rel_error_vs_phasor"] < 1e-6
    i4 = out["layouts"]["inline-4"]
    assert i4["orders"] == [1, 2, 3, 4, 5, 6]
    assert i4["force_y"][1] > 1e3 and i4["force_y"][0] < 1e-6 * i4["force_y"][1]
    assert max(out["layouts"]["boxer-4"]["force_x"]) < 1e-6 * i4["force_y"][1]
    assert fig.stat().st_size > 10_000


def test_knife_edge_parking_json_contract():
    """One parking cycle: sideways by the closed form 4 R (1 - cos phi), back at x = 0 with
    heading 0, knife-edge and driver rows kept to round-off."""
    mod = _load("knife_edge_parking")
    out = mod.main(["--json", "--cycles", "1", "--dt", "2e-3"])
    assert out["status"] == 0
    assert out["lateral_displacement"] == pytest.approx(mod.expected_lateral(1), abs=1e-9)
    assert abs(out["forward_displacement"]) < 1e-9 and abs(out["final_heading"]) < 1e-9
    assert out["max_constraint_error"] < 1e-9 and out["seconds"] > 0


def test_cam_follower_jump_speed_matches_analytic():
    """Eccentric cam, flat follower: w_j = sqrt((m g + k x0 + 2 k e) / (m e)) from the
    closed-form contact force N = k (x0 + e (1 - cos th)) + m (g + e w^2 cos th)."""
    mod = _load("cam_follower")
    out = mod.main(["--json", "--speeds", "80:100:20"])
    m, g, k, x0, e = mod.M_F, mod.G, mod.K, mod.X0, mod.E
    w_ref = np.sqrt((m * g + k * x0 + 2 * k * e) / (m * e))
    assert out["jump_speed_rad_s"] == pytest.approx(w_ref, rel=1e-8)
    # below the jump, the largest contact force is at theta = 0: k x0 + m (g + e w^2)
    assert out["max_contact_force"] == pytest.approx(k * x0 + m * (g + e * 80.0**2), rel=1e-9)


def test_bumpy_road_json_contract(tmp_path):
    out = _load("bumpy_road").main(["--json", "--t1", "0.6", "--speeds", "10,30",
                                    "--out", str(tmp_path / "road.png")])
    assert out["speeds"] == [10.0, 30.0] and out["status"] == [0, 0]
    # the tire never pulls; it stays on the road at 10 m/s and leaves it at 30 m/s
    assert out["min_tire_force"][0] > 0 and out["lift_off_fraction"][0] == 0
    assert out["min_tire_force"][1] == 0 and out["lift_off_fraction"][1] > 0.05
    assert out["max_tire_force"][1] > 2 * out["static_tire_force"]
    assert max(out["energy_drift"]) < 1e-4
    assert (tmp_path / "road.png").stat().st_size > 10000
