"""jaxlib 0.10-0.11 split batched CPU LAPACK calls over XLA's thread pool and can deadlock
(jaxmbs/_xla.py): simulate_batch's vmap path runs such batches in groups."""
import os
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs as mb
from jaxmbs import _xla, simulate as sim_mod
from mechanisms import four_bar_moving

HERE = os.path.dirname(os.path.abspath(__file__))


def test_version_gate():
    assert _xla.lapack_splits((0, 10, 0)) and _xla.lapack_splits((0, 10, 2))
    assert _xla.lapack_splits((0, 11, 2))
    assert not _xla.lapack_splits((0, 9, 2)) and not _xla.lapack_splits((0, 12, 0))
    assert _xla._version("0.12.0.1") == (0, 12, 0)


def test_lapack_cost_finds_nested_calls():
    def f(a, b):
        def body(c, _):
            lu, piv = jax.scipy.linalg.lu_factor(a)        # 2 r c min = 2 * 5 * 5 * 5 = 250
            return c + jax.scipy.linalg.lu_solve((lu, piv), b), None
        c, _ = jax.lax.scan(body, b, None, length=2)
        s = jax.lax.cond(c[0] > 0, lambda: jnp.linalg.svd(a[:3, :4], compute_uv=False)[0],
                         lambda: 0.0)                       # 10 r c min = 10 * 3 * 4 * 3 = 360
        return c + s

    jp = jax.make_jaxpr(f)(jnp.ones((5, 5)), jnp.ones(5))
    assert _xla.lapack_cost(jp) == 360
    assert _xla.lapack_cost(jax.make_jaxpr(lambda x: jnp.sin(x) @ x)(jnp.ones((5, 5)))) == 0
    assert _xla.lapack_safe_chunk(360) * 360 < _xla.LAPACK_MIN_WORK
    assert (_xla.lapack_safe_chunk(360) + 1) * 360 >= _xla.LAPACK_MIN_WORK


def test_grouped_batch_equals_single_runs(monkeypatch):
    """The grouped run (forced on any jaxlib) gives each member's own simulate results,
    warns once, and leaves a mechanism without LAPACK calls alone."""
    mech, params, q, v = four_bar_moving(4.0)
    B = 400  # LU of the 8 x 9 Jacobian: 1152 flops -> groups of 173 (173, 173, 54)
    rng = np.random.default_rng(0)
    Q = np.tile(np.asarray(q), (B, 1))
    V = np.tile(np.asarray(v), (B, 1)) * (1 + 0.1 * rng.standard_normal((B, 1)))
    kw = dict(solver=mb.CoordinatePartitioning(), save_every=10)
    monkeypatch.setattr(_xla, "lapack_splits", lambda version=None: True)
    monkeypatch.setattr(_xla, "_warned_lapack", set())
    seen = []
    orig = sim_mod._lapack_chunk
    monkeypatch.setattr(sim_mod, "_lapack_chunk", lambda *a: seen.append(orig(*a)) or seen[-1])
    sim_mod._simulate_batch_jit.clear_cache()
    with pytest.warns(RuntimeWarning, match="groups of 173 members"):
        got = mb.simulate_batch(mech, params, Q, V, (0.0, 0.04), 2e-3, params_axis=None,
                                vectorize="vmap", **kw)
    assert seen == [173]
    one = jax.jit(lambda q0, v0: mb.simulate(mech, params, q0, v0, (0.0, 0.04), 2e-3, **kw))
    for i in (0, 172, 173, 346, 399):  # the groups' first and last members
        ref = one(Q[i], V[i])
        np.testing.assert_allclose(np.asarray(got.q[i]), np.asarray(ref.q), rtol=0, atol=1e-12)
        assert int(got.status[i]) == int(ref.status)
    # SchurCholesky has no LAPACK call: no groups, no warning
    seen.clear()
    sim_mod._simulate_batch_jit.clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        mb.simulate_batch(mech, params, Q, V, (0.0, 0.004), 2e-3, params_axis=None, vectorize="vmap")
    assert seen == [None]
    sim_mod._simulate_batch_jit.clear_cache()


REPRO = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    import jaxmbs as mb
    from mechanisms import four_bar_moving
    mech, params, q, v = four_bar_moving(4.0)
    B = 1024
    Q = np.tile(np.asarray(q), (B, 1)); V = np.tile(np.asarray(v), (B, 1))
    f = jax.jit(lambda Q, V: mb.simulate_batch(
        mech, params, Q, V, (0.0, 0.04), 2e-3, params_axis=None,
        solver=mb.CoordinatePartitioning(), vectorize="vmap", save_every=20).q)
    for _ in range(3):
        qT = jax.block_until_ready(f(Q, V))
    print("finished", bool(np.all(np.isfinite(np.asarray(qT)))))
""")


def test_large_lapack_batch_does_not_hang():
    """The run that hung in every try on jaxlib 0.10.2 (2 cores: both XLA pool threads in
    LuDecomposition -> ParallelBatchMap, waiting) finishes. Fails (timeout) when the grouping
    is switched off on an affected jaxlib."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    try:
        out = subprocess.run([sys.executable, "-c", REPRO.format(tests=HERE)], capture_output=True,
                             text=True, env=env, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("simulate_batch of 1024 four-bars with CoordinatePartitioning did not finish "
                    "in 240 s (the batched-LAPACK deadlock of jaxlib 0.10-0.11)")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "finished True" in out.stdout, out.stdout + out.stderr[-2000:]
