"""Gymnasium adapters (optional extra: `pip install "jaxmbs[rl]"`).

    from jaxmbs.envs.gymnasium import GymnasiumEnv, GymnasiumVectorEnv
    env = GymnasiumEnv("cartpole")                 # a gymnasium.Env (passes check_env)
    venv = GymnasiumVectorEnv("five_bar", num_envs=1024)   # one jitted, vmapped step

Observations are NumPy arrays of the functional environment's dtype. The single-env
adapter does not reset by itself (Gymnasium's convention); the vector adapter resets
finished sub-environments in the same step (`autoreset_mode = SAME_STEP`): their last
observation is in info["final_obs"] with the mask info["_final_obs"].
"""
from __future__ import annotations

import jax
import numpy as np

try:
    import gymnasium as gym
    from gymnasium.vector.utils import batch_space
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError("jaxmbs.envs.gymnasium needs gymnasium: pip install 'jaxmbs[rl]'") from e

from . import spaces as jspaces
from .catalogue import make

__all__ = ["GymnasiumEnv", "GymnasiumVectorEnv", "to_gymnasium_space"]


def to_gymnasium_space(space):
    """The gymnasium.spaces equivalent of a jaxmbs.envs Box / Discrete."""
    if isinstance(space, jspaces.Discrete):
        return gym.spaces.Discrete(space.n)
    if isinstance(space, jspaces.Box):
        return gym.spaces.Box(space.low.astype(space.dtype), space.high.astype(space.dtype),
                              space.shape, np.dtype(space.dtype))
    raise ValueError(f"cannot convert {space!r}: expected jaxmbs.envs.Box or Discrete")


def _resolve(env, kwargs):
    if isinstance(env, str):
        return make(env, **kwargs)
    if kwargs:
        raise ValueError("keyword arguments are only used when the environment is given by name")
    return env


def _key(rng):
    return jax.random.key(int(rng.integers(0, 2**31 - 1)))


class GymnasiumEnv(gym.Env):
    """One functional environment as a `gymnasium.Env`.

    Args: env (a name for `jaxmbs.envs.make` or an Env), params (EnvParams, default the
    env's default_params), **kwargs passed to `make`.
    """

    metadata = {"render_modes": []}

    def __init__(self, env="cartpole", params=None, **kwargs):
        self.env = _resolve(env, kwargs)
        self.params = self.env.default_params if params is None else params
        self.observation_space = to_gymnasium_space(self.env.observation_space)
        self.action_space = to_gymnasium_space(self.env.action_space)
        self._reset = jax.jit(self.env.reset)
        self._step = jax.jit(lambda k, s, a, p: self.env._cut(self.env.step_env(k, s, a, p)))
        self._state = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        obs, self._state = self._reset(_key(self.np_random), self.params)
        return np.array(obs), {}

    def step(self, action):
        if self._state is None:
            raise ValueError("call reset() before step()")
        a = np.asarray(action, self.action_space.dtype)
        obs, self._state, r, term, trunc, info = self._step(_key(self.np_random), self._state, a, self.params)
        return np.array(obs), float(r), bool(term), bool(trunc), {"status": int(info["status"])}


class GymnasiumVectorEnv(gym.vector.VectorEnv):
    """`num_envs` copies of a functional environment stepped in one jitted, vmapped call.

    Args: env (name or Env), num_envs, params (EnvParams shared by all, or batched with a
    leading num_envs axis when batched_params=True: domain randomisation), **kwargs for make.
    """

    metadata = {"render_modes": [], "autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}

    def __init__(self, env="cartpole", num_envs=16, params=None, batched_params=False, **kwargs):
        self.env = _resolve(env, kwargs)
        self.num_envs = int(num_envs)
        self.params = self.env.default_params if params is None else params
        self.single_observation_space = to_gymnasium_space(self.env.observation_space)
        self.single_action_space = to_gymnasium_space(self.env.action_space)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        pa = 0 if batched_params else None
        self._reset = jax.jit(jax.vmap(self.env.reset, in_axes=(0, pa)))
        self._step = jax.jit(jax.vmap(self.env.step, in_axes=(0, 0, 0, pa)))
        self._state = None
        self._rng = np.random.default_rng()

    def _keys(self):
        return jax.random.split(_key(self._rng), self.num_envs)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        obs, self._state = self._reset(self._keys(), self.params)
        return np.array(obs), {}

    def step(self, actions):
        if self._state is None:
            raise ValueError("call reset() before step()")
        a = np.asarray(actions, self.single_action_space.dtype)
        obs, self._state, r, term, trunc, info = self._step(self._keys(), self._state, a, self.params)
        done = np.asarray(term) | np.asarray(trunc)
        infos = {"status": np.asarray(info["status"]), "_status": np.ones(self.num_envs, bool)}
        if done.any():
            infos["final_obs"] = np.array(info["final_observation"])
            infos["_final_obs"] = done
        return np.array(obs), np.asarray(r), np.asarray(term), np.asarray(trunc), infos
