"""Gradients through each stage: check_grads, implicit assembly, checkpointed rollouts."""
import jax
import jax.numpy as jnp
import numpy as np
from jax.test_util import check_grads

import jaxmbs as mb
from mechanisms import double_pendulum, four_bar


def test_check_grads_accelerations_wrt_params_and_state():
    mech, params, q0, v0 = four_bar()
    s = mb.assemble(mech, params, q0, jnp.zeros_like(q0).at[2].set(1.5), fixed=("crank.theta",))

    def f(mass, inertia, q, v):
        p = params.replace(mass=mass, inertia=inertia)
        a = mb.accelerations(mech, p, q, v, 0.0)
        return jnp.concatenate([a.qdd, a.lam])

    check_grads(f, (params.mass, params.inertia, s.q, s.v), order=1, modes=("fwd", "rev"), eps=1e-6)


def test_assembly_implicit_gradient_matches_finite_differences():
    mech, params, q0, v0 = four_bar()

    def f(L):
        p = mech.replace(params, {"A.point_j": jnp.array([-L / 2, 0.0]), "B.point_i": jnp.array([L / 2, 0.0])})
        r = mb.assemble(mech, p, q0, jnp.zeros_like(q0).at[2].set(2.0), fixed=("crank.theta",))
        return jnp.sum(r.q[6:] ** 2) + jnp.sum(r.v ** 2)

    g_rev, g_fwd = jax.grad(f)(0.6), jax.jacfwd(f)(0.6)
    fd = (f(0.6 + 1e-6) - f(0.6 - 1e-6)) / 2e-6
    assert abs(g_rev - fd) < 1e-7 * max(1.0, abs(fd))
    assert abs(g_rev - g_fwd) < 1e-12 * max(1.0, abs(fd))


def test_checkpointed_gradient_equals_plain_and_saves_memory():
    mech, params, q0, v0 = double_pendulum()

    def make(ck):
        def loss(m):
            p = mech.replace(params, {"l2.mass": m})
            return jnp.sum(mb.simulate(mech, p, q0, v0, (0.0, 1.0), 1e-3, save_every=100, checkpoint=ck).q[-1])
        return jax.jit(jax.grad(loss))

    plain, ck = make(False), make(True)
    np.testing.assert_allclose(ck(1.0), plain(1.0), rtol=1e-10)
    mp = plain.lower(1.0).compile().memory_analysis()
    mc = ck.lower(1.0).compile().memory_analysis()
    if mp is not None and mc is not None:
        assert mc.temp_size_in_bytes < 0.5 * mp.temp_size_in_bytes


def test_gradient_through_adaptive_integrator_is_finite():
    mech, params, q0, v0 = double_pendulum()

    def loss(m):
        p = mech.replace(params, {"l2.mass": m})
        tr = mb.simulate(mech, p, q0, v0, (0.0, 0.2), 1e-3, save_every=200,
                         integrator=mb.DormandPrince5(rtol=1e-8, atol=1e-10, max_steps=300))
        return tr.q[-1, 3]

    g = jax.grad(loss)(1.0)
    fd = (loss(1.0 + 1e-6) - loss(1.0 - 1e-6)) / 2e-6
    assert np.isfinite(g) and abs(g - fd) < 1e-4 * max(1.0, abs(fd))
