"""Reinforcement-learning environments on jaxmbs mechanisms (functional, gymnax-style).

    import jax, jaxmbs.envs as envs
    env = envs.make("cartpole_swingup")
    params = env.default_params
    obs, state = env.reset(jax.random.key(0), params)
    obs, state, r, term, trunc, info = env.step(jax.random.key(1), state, env.action_space.sample(key), params)

Everything jits and vmaps; a Gymnasium adapter is in `jaxmbs.envs.gymnasium` (optional
extra `jaxmbs[rl]`).
"""
from .catalogue import (
    ENVIRONMENTS,
    Acrobot,
    CartPole,
    CartPoleSwingUp,
    FiveBarReach,
    Pendulum,
    SliderCrankEngine,
    make,
)
from .core import Env, EnvParams, EnvState, MechanismEnv
from .spaces import Box, Discrete

__all__ = ["make", "ENVIRONMENTS", "Env", "MechanismEnv", "EnvParams", "EnvState", "Box", "Discrete",
           "CartPole", "CartPoleSwingUp", "Acrobot", "Pendulum", "FiveBarReach", "SliderCrankEngine"]
