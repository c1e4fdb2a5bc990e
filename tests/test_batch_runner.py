"""Resumable chunked runner and device sharding."""
import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np

import jaxmbs as mb
from mechanisms import double_pendulum


def _batch(B=4):
    mech, params, q0, v0 = double_pendulum()
    masses = jnp.linspace(0.5, 2.0, B)
    batch = jax.vmap(lambda m: mech.replace(params, {"l2.mass": m}))(masses)
    return mech, batch, jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1))


def test_interrupted_run_resumes_to_the_same_result(tmp_path, monkeypatch):
    mech, params, q0, v0 = _batch()
    full = mb.simulate_batch(mech, params, q0, v0, (0.0, 0.4), 1e-3, save_every=100)
    out = str(tmp_path / "run")
    # interrupt: make the third chunk's write fail as if the process were killed
    real = np.savez
    calls = {"n": 0}

    def dying_savez(path, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("simulated interruption")
        return real(path, **kw)

    monkeypatch.setattr(np, "savez", dying_savez)
    try:
        mb.run_batch(mech, params, q0, v0, (0.0, 0.4), 1e-3, out, chunk_steps=100, progress=False)
    except KeyboardInterrupt:
        pass
    monkeypatch.setattr(np, "savez", real)
    done = sorted(f for f in os.listdir(out) if f.startswith("chunk_") and f.endswith(".npz") and "tmp" not in f)
    assert done == ["chunk_00000.npz", "chunk_00001.npz"]
    mb.run_batch(mech, params, q0, v0, (0.0, 0.4), 1e-3, out, chunk_steps=100, progress=False)
    res = mb.load_batch(out)
    np.testing.assert_allclose(res["q"], full.q, rtol=0, atol=1e-13)
    np.testing.assert_allclose(res["t"], full.t, atol=1e-15)
    np.testing.assert_allclose(res["work"], full.work, atol=1e-12)
    assert json.load(open(os.path.join(out, "run.json")))["chunk_steps"] == 100


def test_sharded_batch_equals_single_device(tmp_path):
    """Runs in a subprocess with 4 host devices (XLA_FLAGS must be set before jax starts):
    jit over sharded inputs (GSPMD) and run_batch(shard=True) (shard_map) against one device."""
    script = textwrap.dedent("""
        import os, sys, json
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp, numpy as np
        sys.path.insert(0, sys.argv[1])
        import jaxmbs as mb
        from mechanisms import double_pendulum
        assert len(jax.devices()) == 4
        mech, params, q0, v0 = double_pendulum()
        masses = jnp.linspace(0.5, 2.0, 8)
        batch = jax.vmap(lambda m: mech.replace(params, {"l2.mass": m}))(masses)
        Q, V = jnp.tile(q0, (8, 1)), jnp.tile(v0, (8, 1))
        f = jax.jit(lambda p, q, v: mb.simulate_batch(mech, p, q, v, (0.0, 0.2), 1e-3, save_every=50).q)
        ref = np.asarray(jax.device_get(f(batch, Q, V)))
        ps, qs, vs = mb.shard_batch((batch, Q, V))
        out = f(ps, qs, vs)
        n_dev = len(out.sharding.device_set)
        # the runner with shard=True: shard_map over the 4 devices
        paths = mb.run_batch(mech, batch, Q, V, (0.0, 0.2), 1e-3, sys.argv[2], chunk_steps=100,
                             save_every=50, shard=True, progress=False)
        runner = mb.load_batch(sys.argv[2])["q"]
        print(json.dumps({"devices": n_dev, "maxdiff": float(np.max(np.abs(np.asarray(out) - ref))),
                          "runner_maxdiff": float(np.max(np.abs(runner - ref)))}))
    """)
    path = tmp_path / "shard.py"
    path.write_text(script)
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, str(path), tests_dir, str(tmp_path / "run")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["devices"] == 4
    # identical up to round-off: XLA may vectorise a per-device slice of 2 members differently
    # from the whole batch of 8 (FMA contraction, SIMD remainder loops): a few ulp at most
    assert res["maxdiff"] <= 1e-14
    assert res["runner_maxdiff"] <= 1e-14
