"""Resumable chunked runner and device sharding."""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mechanisms import double_pendulum

import jaxmbs as mb


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


def _interrupt_at(monkeypatch, n, mid_write):
    """Make the n-th chunk write die as if the process were killed: before anything is
    written, or (mid_write) after half the file's bytes are on disk."""
    real = np.savez
    calls = {"n": 0}

    def dying_savez(file, **kw):
        calls["n"] += 1
        if calls["n"] == n:
            if mid_write:
                import io
                buf = io.BytesIO()
                real(buf, **kw)
                if isinstance(file, str):  # (np.savez to a path, as before issue 21)
                    with open(file if file.endswith(".npz") else file + ".npz", "wb") as f:
                        f.write(buf.getvalue()[: len(buf.getvalue()) // 2])
                else:
                    file.write(buf.getvalue()[: len(buf.getvalue()) // 2])
                    file.flush()
            raise KeyboardInterrupt("simulated kill")
        return real(file, **kw)

    monkeypatch.setattr(np, "savez", dying_savez)
    return lambda: monkeypatch.setattr(np, "savez", real)


def test_resume_with_other_inputs_is_refused_not_spliced(tmp_path, monkeypatch):
    """Issue 21 item 7: an interrupted run resumed with another initial velocity used to be
    spliced onto the first run without a word; now the folder's run.json digest refuses it,
    names the input, and leaves the folder as it was; the same inputs resume it."""
    mech, params, q0, v0 = _batch()
    out = str(tmp_path / "run")
    restore = _interrupt_at(monkeypatch, 3, mid_write=False)
    with pytest.raises(KeyboardInterrupt):
        mb.run_batch(mech, params, q0, v0, (0.0, 0.4), 1e-3, out, chunk_steps=100, progress=False)
    restore()
    before = sorted(os.listdir(out))
    other = v0.at[:, 2].set(0.5)  # another initial angular velocity of link 1
    with pytest.raises(ValueError, match=r"different run: v0 differ"):
        mb.run_batch(mech, params, q0, other, (0.0, 0.4), 1e-3, out, chunk_steps=100, progress=False)
    with pytest.raises(ValueError, match=r"params"):
        mb.run_batch(mech, jax.vmap(lambda p: mech.replace(p, {"l1.mass": 1.1}))(params), q0, v0,
                     (0.0, 0.4), 1e-3, out, chunk_steps=100, progress=False)
    with pytest.raises(ValueError, match=r"option stabilizer"):
        mb.run_batch(mech, params, q0, v0, (0.0, 0.4), 1e-3, out, chunk_steps=100, progress=False,
                     stabilizer=mb.Baumgarte(5.0))
    assert sorted(os.listdir(out)) == before
    meta = json.load(open(os.path.join(out, "run.json")))
    assert len(meta["digest"]) == 64 and "option integrator" in meta["inputs"]
    mb.run_batch(mech, params, q0, v0, (0.0, 0.4), 1e-3, out, chunk_steps=100, progress=False)
    assert mb.load_batch(out)["q"].shape == (4, 5, 6)


def test_kill_in_the_middle_of_a_chunk_write(tmp_path, monkeypatch):
    """Issue 21 item 8: a kill while chunk 2 is written left 'chunk_00002.npz.tmp.npz', which
    load_batch read (BadZipFile), and an incomplete run loaded as a shorter horizon. Now the
    temporary is 'chunk_00002.partial', load_batch names the missing chunks (or, asked to,
    loads the complete ones with a warning), and the resumed run is bit-identical."""
    mech, params, q0, v0 = _batch()
    out, ref = str(tmp_path / "run"), str(tmp_path / "ref")
    restore = _interrupt_at(monkeypatch, 3, mid_write=True)
    with pytest.raises(KeyboardInterrupt):
        mb.run_batch(mech, params, q0, v0, (0.0, 0.4), 1e-3, out, chunk_steps=100, progress=False)
    restore()
    assert sorted(os.listdir(out)) == ["chunk_00000.npz", "chunk_00001.npz", "chunk_00002.partial",
                                       "run.json"]
    with pytest.raises(ValueError, match=r"incomplete run: 2 of 4 chunks \(missing chunk_00002.npz, "
                                         r"chunk_00003.npz\).*t = 0.2 of 0.4 s"):
        mb.load_batch(out)
    with pytest.warns(UserWarning, match="incomplete run"):
        part = mb.load_batch(out, allow_incomplete=True)
    assert part["t"].shape == (4, 3) and part["t"][0, -1] == pytest.approx(0.2)
    mb.run_batch(mech, params, q0, v0, (0.0, 0.4), 1e-3, out, chunk_steps=100, progress=False)
    assert "chunk_00002.partial" not in os.listdir(out)
    mb.run_batch(mech, params, q0, v0, (0.0, 0.4), 1e-3, ref, chunk_steps=100, progress=False)
    a, b = mb.load_batch(out), mb.load_batch(ref)
    for k in a:
        assert np.array_equal(a[k], b[k]), k


def test_stray_temporaries_are_ignored(tmp_path):
    """Left-overs of an interrupted write (this version's *.partial and the old *.tmp.npz)
    are not chunks: load_batch reads exactly the chunks run.json calls for."""
    mech, params, q0, v0 = _batch()
    out = str(tmp_path / "run")
    mb.run_batch(mech, params, q0, v0, (0.0, 0.4), 1e-3, out, chunk_steps=100, progress=False)
    for junk in ("chunk_00001.partial", "chunk_00005.npz.tmp.npz", "chunk_00002.npz.tmp.npz"):
        with open(os.path.join(out, junk), "wb") as f:
            f.write(b"PK\x03\x04 truncated")
    res = mb.load_batch(out)
    assert res["t"].shape == (4, 5)


def test_controls_array_is_cut_per_chunk(tmp_path):
    """An array of controls over the whole horizon drives each chunk with its own steps
    (it used to be handed whole to every chunk, which simulate refused)."""
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_body("arm", mass=1.0, inertia=0.02, cg=(0.3, 0.0))
    m.add_revolute("O", "ground", "arm", at=(0.0, 0.0))
    m.add_load("motor", "arm", torque=1.0, control=0)
    mech, params, q0, v0 = m.build()
    B, n = 3, 300
    batch = jax.vmap(lambda x: mech.replace(params, {"arm.mass": x}))(jnp.linspace(0.8, 1.2, B))
    Q, V = jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1))
    u = jnp.sin(jnp.linspace(0.0, 6.0, n))[:, None] * 2.0  # (n_steps, 1), N m
    full = mb.simulate_batch(mech, batch, Q, V, (0.0, 0.3), 1e-3, save_every=50, controls=u,
                             vectorize="vmap")
    out = str(tmp_path / "run")
    mb.run_batch(mech, batch, Q, V, (0.0, 0.3), 1e-3, out, chunk_steps=100, save_every=50,
                 controls=u, vectorize="vmap", progress=False)
    res = mb.load_batch(out)
    np.testing.assert_allclose(res["q"], full.q, rtol=0, atol=1e-13)
    with pytest.raises(ValueError, match=r"controls array must have shape \(300, 1\)"):
        mb.run_batch(mech, batch, Q, V, (0.0, 0.3), 1e-3, str(tmp_path / "r2"), chunk_steps=100,
                     controls=u[:100], progress=False)


def test_input_digest():
    """The digest sees every number and the code of user functions, is the same for equal
    inputs built twice, and does not use hash() or id() (see also test_faults: a run
    resumed by another process, with a user force, is accepted)."""
    from jaxmbs.batch.fingerprint import _digest

    def model(c, fn=None):
        m = mb.Model(gravity=(0.0, -9.81))
        m.add_body("rod", mass=1.0, inertia=0.1, position=(0.5, 0.0))
        m.add_revolute("O", "ground", "rod", at=(0.0, 0.0))
        m.add_force("air", fn or (lambda q, v, t, u: -c * v))
        return m.build()

    a, b = model(0.05), model(0.05)
    assert _digest(a[0]) == _digest(b[0]) and _digest(a[1]) == _digest(b[1])
    assert _digest(model(0.06)[0]) != _digest(a[0])  # closure constant
    assert _digest(model(0.05, lambda q, v, t, u: -0.05 * v * v)[0]) != _digest(a[0])  # code
    assert _digest(a[1]) != _digest(a[0].replace(a[1], {"rod.mass": 1.0000000000000002}))  # 1 ulp
    assert _digest(np.float64(1.0)) != _digest(np.float32(1.0))
    assert _digest({"a": 1, "b": 2}) == _digest({"b": 2, "a": 1})
    assert _digest(mb.RK4()) != _digest(mb.RK4(unroll=True)) != _digest(mb.Euler())


def test_another_run_writing_the_folder_meanwhile_is_refused(tmp_path, monkeypatch):
    """Two calls with different inputs started on one new folder: the one that finds, after
    its first chunk, a run.json that is not its own writes nothing (no lock file: the
    second digest check closes the window between the first check and the first write)."""
    import jaxmbs.batch.runner as batch

    mech, params, q0, v0 = _batch()
    out = str(tmp_path / "run")
    real = batch._chunk

    def meanwhile(*args, **kw):  # the other call finishes its first chunk first
        with open(os.path.join(out, "run.json"), "w") as f:
            json.dump({"t0": 0.0, "t1": 0.4, "dt": 1e-3, "chunk_steps": 100, "digest": "f" * 64}, f)
        return real(*args, **kw)

    monkeypatch.setattr(batch, "_chunk", meanwhile)
    with pytest.raises(ValueError, match="another run_batch call"):
        mb.run_batch(mech, params, q0, v0, (0.0, 0.4), 1e-3, out, chunk_steps=100, progress=False)
    assert sorted(os.listdir(out)) == ["run.json"]


def test_run_batch_takes_the_folded_batch_path_without_a_warning(tmp_path, monkeypatch):
    """run_batch calls simulate_batch with concrete params (not inside a jit of its own), so
    the batch-minor path reads their zero entries (fold_zeros) and nothing warns that
    params are traced; the chunks equal one simulate_batch run."""
    from jaxmbs.batch import vectorize as V

    monkeypatch.setattr(V, "_WARNED", set())  # (warnings shown once per process: start afresh)
    mech, params, q0, v0 = _batch(B=8)
    assert mb.batch_vectorization(mech, 8) == "elementwise"  # (the path that folds zeros)
    ew = V.strategy("elementwise")
    keys = []
    real = ew.static_key
    monkeypatch.setattr(ew, "static_key", lambda *a, **k: keys.append(real(*a, **k)) or keys[-1])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        full = mb.simulate_batch(mech, params, q0, v0, (0.0, 0.2), 1e-3, save_every=50)
        out = str(tmp_path / "run")
        mb.run_batch(mech, params, q0, v0, (0.0, 0.2), 1e-3, out, chunk_steps=100,
                     save_every=50, progress=False)
    assert not [str(x.message) for x in w if "traced" in str(x.message)]
    assert len(keys) == 3 and keys[0] is not None and keys[1:] == keys[:1] * 2  # folded, same zeros
    res = mb.load_batch(out)
    np.testing.assert_allclose(res["q"], full.q, rtol=0, atol=1e-13)
    np.testing.assert_allclose(res["work"], full.work, rtol=0, atol=1e-12)
