"""The functional environment base (gymnax 1.0 conventions) on top of the jaxmbs engine.

    env = jaxmbs.envs.make("cartpole")
    obs, state = env.reset(key, params)                 # params default: env.default_params
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)

An environment object is static configuration (the mechanism topology, spaces, number of
integrator substeps); every number lives in the `EnvParams` pytree (the mechanism `Params`
plus task constants), so domain randomisation is a batch of params under `jax.vmap`,
never a mutation of the environment. `step` resets automatically on termination or
truncation; the pre-reset observation is in `info["final_observation"]`.

One control period dt is `substeps` steps of the engine's RK4 integrator, each followed by
the `Projection` stabiliser (M-weighted Newton projection onto Phi = 0 and
Phi_q v = -Phi_t), so closed loops stay closed to round-off. Gradients of the outputs of
`step` / `reset` are cut (`jax.lax.stop_gradient`) unless the environment is built with
`differentiable=True` (analytic policy gradients through the dynamics).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import status as st
from ..core._tree import pytree_dataclass
from ..core.dynamics import step as physics_step
from ..core.equations import constraint_terms
from ..core.stabilize import Projection
from ..formulations.schur import SchurCholesky
from ..integrators.runge_kutta import RK4

__all__ = ["Env", "EnvParams", "EnvState", "MechanismEnv"]

tmap = jax.tree_util.tree_map


@pytree_dataclass
class EnvParams:
    """Every number of an environment: `mech` (a jaxmbs `Params`: masses, inertias, joint
    geometry, gravity, ...) and `task` (dict name -> array: dt in s, max_steps, force or
    torque limits, reward weights, ...). Batch it (leading axis on every leaf) and vmap
    `reset` / `step` over it for domain randomisation; see `Env.replace_params`."""

    mech: Any
    task: dict


@pytree_dataclass
class EnvState:
    """Environment state: coordinates q (n,), velocities v (n,) of the mechanism (SI), time
    t (s), step count within the episode (int32) and env-specific `extra` (dict of arrays,
    e.g. the target of a reaching task)."""

    q: Any
    v: Any
    t: Any
    step: Any
    extra: dict


class Env:
    """Functional environment base class: subclasses implement `reset_env` and `step_env`.

    Attributes: observation_space, action_space (`Box` / `Discrete`), default_params
    (`EnvParams`), differentiable (bool), name.
    """

    name = "env"
    differentiable = False

    # -- to implement -----------------------------------------------------------------
    def reset_env(self, key, params):
        raise NotImplementedError

    def step_env(self, key, state, action, params):
        """One step without automatic reset: (obs, state, reward, terminated, truncated, info)."""
        raise NotImplementedError

    @property
    def default_params(self) -> EnvParams:
        raise NotImplementedError

    # -- public API -------------------------------------------------------------------
    def reset(self, key, params=None):
        """Start an episode. key: a PRNG key; params: `EnvParams` (default_params if None).
        Returns (obs, state): obs shaped and typed as `observation_space`."""
        params = self.default_params if params is None else params
        obs, state = self.reset_env(key, params)
        return self._cut((obs, state))

    def step(self, key, state, action, params=None):
        """Advance one control period dt and reset automatically at the end of an episode.

        Args: key (PRNG key, used for the reset and any task randomness), state
          (`EnvState`), action (an element of `action_space`), params (`EnvParams`,
          default_params if None).
        Returns (obs, state, reward, terminated, truncated, info): reward a float scalar,
          terminated / truncated bool scalars; where either is true, obs and state are
          already those of a new episode and info["final_observation"] holds the last
          observation of the old one. info["status"]: jaxmbs status bit flags of the
          physics step (0 = ok).
        """
        params = self.default_params if params is None else params
        k_step, k_reset = jax.random.split(key)
        obs_st, state_st, reward, term, trunc, info = self.step_env(k_step, state, action, params)
        obs_re, state_re = self.reset_env(k_reset, params)
        done = term | trunc
        state_out = tmap(lambda a, b: jnp.where(done, a, b), state_re, state_st)
        obs = jnp.where(done, obs_re, obs_st)
        info = dict(info)
        info["final_observation"] = obs_st
        return self._cut((obs, state_out, reward, term, trunc, info))

    def _cut(self, out):
        if self.differentiable:
            return out
        return tmap(lambda x: jax.lax.stop_gradient(x) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact)
                    else x, out)

    def replace_params(self, params: EnvParams, values: dict) -> EnvParams:
        """New EnvParams with named values set (pure; works under jit / vmap / grad).

        Names are task constants (`params.task` keys, e.g. "max_force") or mechanism
        parameters (`env.mechanism.param_names()`, e.g. "pole.mass", "gravity").
        Example: jax.vmap(lambda m: env.replace_params(p, {"pole.mass": m}))(masses).
        """
        task = dict(params.task)
        mech_vals = {}
        for k, v in values.items():
            if k in task:
                task[k] = jnp.asarray(v, jnp.asarray(task[k]).dtype)
            else:
                mech_vals[k] = v
        mp = params.mech
        if mech_vals:
            mech = getattr(self, "mechanism", None)
            if mech is None:
                raise ValueError(f"unknown parameter(s) {sorted(mech_vals)}; task constants: {sorted(task)}")
            try:
                mp = mech.replace(mp, mech_vals)
            except ValueError as e:
                raise ValueError(f"{e}; task constants: {', '.join(sorted(task))}") from None
        return EnvParams(mp, task)


class MechanismEnv(Env):
    """An environment whose dynamics are a jaxmbs mechanism with control inputs.

    Subclasses build `self.mechanism`, `self._mech_params` (from `Model.build()`), the
    spaces, `self._task` (dict of task constants, must contain 'dt' and 'max_steps'),
    and implement `_initial(key, p) -> (q, v, extra)`, `_controls(action, state, p) -> u`,
    `_observe(state, p)`, `_reward(state, action, u, next_state, p)`,
    `_terminated(next_state, p)`.

    Args (common to all subclasses):
      substeps: RK4 substeps per control period (static).
      differentiable: keep gradients through `step` / `reset` (default False: cut).
      integrator: a fixed-step jaxmbs integrator (default RK4(): stages in a scan, fast to
        compile; the small cart-pole, acrobot and pendulum use RK4(unroll=True), faster to
        run); e.g. SemiImplicitEuler() for speed at lower accuracy.
      stabilizer: default Projection() (exact closure after every substep);
        environments whose constraints are linear in q (cart-pole, pendulum) default to
        NoStabilization(), which RK4 keeps satisfied exactly (to round-off).
    """

    substeps = 1
    solver = SchurCholesky()
    stabilizer = Projection()
    integrator = RK4()

    def __init__(self, substeps=None, differentiable=False, integrator=None, stabilizer=None):
        if integrator is not None:
            self.integrator = integrator
        if stabilizer is not None:
            self.stabilizer = stabilizer
        if substeps is not None:
            if not isinstance(substeps, (int, np.integer)) or substeps < 1:
                raise ValueError(f"substeps must be a positive integer, got {substeps!r}")
            self.substeps = int(substeps)
        self.differentiable = bool(differentiable)
        self.dtype = jnp.dtype(jnp.result_type(float))

    @property
    def default_params(self) -> EnvParams:
        task = {k: jnp.asarray(v, jnp.int32 if k == "max_steps" else self.dtype)
                for k, v in self._task.items()}
        mp = tmap(lambda a: jnp.asarray(a, self.dtype), self._mech_params)
        return EnvParams(mp, task)

    # -- physics ----------------------------------------------------------------------
    def physics(self, params, q, v, t, u):
        """Integrate the mechanism over one control period dt = params.task['dt'] with the
        controls u (n_controls,) held constant. Returns (q, v, t, status)."""
        mech, mp = self.mechanism, params.mech
        h = params.task["dt"] / self.substeps

        def sub(carry, _):
            q, v, t, status = carry
            (q, v, _), _, status = physics_step(
                mech, mp, t, (q, v, jnp.zeros((), q.dtype)), h, u, integrator=self.integrator,
                stabilizer=self.stabilizer, solver=self.solver, status=status)
            return (q, v, t + h, status), None

        carry = (q, v, t, jnp.zeros((), jnp.int32))
        if self.substeps == 1:
            carry, _ = sub(carry, None)
        else:  # traced once: compile time independent of the number of substeps
            carry, _ = jax.lax.scan(sub, carry, None, length=self.substeps)
        return carry

    def constraint_error(self, state, params=None):
        """max |Phi(q, t)| of a state (m or rad): 0 up to round-off for a consistent state."""
        params = self.default_params if params is None else params
        terms = constraint_terms(self.mechanism, params.mech, state.q, state.v, state.t)
        return jnp.max(jnp.abs(terms.phi), initial=0.0)

    # -- Env --------------------------------------------------------------------------
    def reset_env(self, key, params):
        q, v, extra = self._initial(key, params)
        state = EnvState(q, v, jnp.zeros((), self.dtype), jnp.zeros((), jnp.int32), extra)
        return self._observe(state, params), state

    def step_env(self, key, state, action, params):
        u = self._controls(action, state, params)
        q, v, t, status = self.physics(params, state.q, state.v, state.t, u)
        new = EnvState(q, v, t, state.step + 1, self._advance_extra(key, state, params))
        reward = jnp.asarray(self._reward(state, action, u, new, params), self.dtype)
        term = jnp.asarray(self._terminated(new, params), bool) | ((status & st.NONFINITE) > 0)
        trunc = (new.step >= params.task["max_steps"]) & ~term
        return self._observe(new, params), new, reward, term, trunc, {"status": status}

    def _advance_extra(self, key, state, params):
        return state.extra
