"""One compiled fixed-step loop for the sweeps and tables of issue 17 (benchmarks/stiff.py,
benchmarks/formulations.py): the step h and the stride between saved samples are traced,
so one compilation serves every step size and run length of a (mechanism, integrator,
stabiliser, solver, number of samples) combination, and the loop vmaps over states and
parameters. It runs the same physics step as `jaxmbs.simulate` (`jaxmbs.core.dynamics.step`,
the integrator's state kept between steps) without simulate's per-sample diagnostics
(multipliers, energies), which the callers compute once per mechanism (`diagnostics`)."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

import jaxmbs as mb
from jaxmbs.core import dynamics
from jaxmbs.core.equations import constraint_terms, energy_terms


@functools.partial(jax.jit, static_argnames=("mech", "integrator", "stabilizer", "solver", "n_save"))
def run_fixed(mech, params, q, v, h, stride, *, integrator, stabilizer, solver=mb.SchurCholesky(),
              n_save):
    """n_save * stride fixed steps of h (s) from t = 0 (h and stride traced). Returns
    ((q, v, w) at t_j = j stride h, j = 1..n_save, each (n_save, ...); w the work of
    non-conservative forces, drivers and constraint forces since t = 0), status."""
    return run_fixed_unjitted(mech, params, q, v, h, stride, integrator=integrator,
                              stabilizer=stabilizer, solver=solver, n_save=n_save)


def run_fixed_unjitted(mech, params, q, v, h, stride, *, integrator, stabilizer, solver, n_save):
    """`run_fixed` without its jit (to vmap inside another compiled function)."""
    y = (q, v, jnp.zeros((), q.dtype))
    u = jnp.zeros((mech.n_controls,), q.dtype)
    kw = dict(integrator=integrator, stabilizer=stabilizer, solver=solver)
    state = dynamics.init_state(mech, params, 0.0, y, h, u, **kw)

    def body(k, c):
        y, state, status, ys = c
        y, state, status = dynamics.step(mech, params, k * h, y, h, u, state=state, status=status, **kw)
        j = (k + 1) // stride - 1
        hit = (k + 1) % stride == 0
        ys = jax.tree_util.tree_map(lambda b, a: b.at[j].set(jnp.where(hit, a, b[j])), ys, y)
        return y, state, status, ys

    ys0 = jax.tree_util.tree_map(lambda a: jnp.zeros((n_save,) + a.shape, a.dtype), y)
    c0 = (y, state, jnp.zeros((), jnp.int32), ys0)
    _, _, status, ys = jax.lax.fori_loop(0, n_save * stride, body, c0)
    return ys, status


@functools.partial(jax.jit, static_argnames=("mech",))
def diagnostics(mech, params, qs, vs, ts):
    """max |Phi| and the energies (kinetic, potential) at the samples (one compilation per
    mechanism, whatever the integrator)."""
    def one(q, v, t):
        phi = constraint_terms(mech, params, q, v, t).phi
        T, V = energy_terms(mech, params, q, v, t)
        return jnp.max(jnp.abs(phi), initial=0.0), T, V
    return jax.vmap(one)(qs, vs, ts)
