"""Gymnasium vector-API adapter: ``make_vec(name, num_envs)`` for code written against Gymnasium.

The batch is stepped by one jitted, vmapped :class:`~envport.core.wrappers.AutoReset` step, so
episodes reset in the same step they end (Gymnasium's ``SAME_STEP`` autoreset mode): the returned
observation of a finished environment is already the next episode's first, and the observation
it ended on is in ``infos["final_obs"]``.

Key schedule (documented because tests and users may reproduce it): ``reset(seed)`` sets
``key = jax.random.key(seed)``; every ``reset`` and ``step`` then does
``key, sub = jax.random.split(key)`` and gives environment ``i`` the key
``jax.random.split(sub, num_envs)[i]``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

import envport
from envport.core.api import Array, Environment
from envport.core.spaces import Box, Discrete, Space
from envport.core.wrappers import AutoReset

__all__ = ["EnvportVectorEnv", "make_vec", "to_gymnasium_space"]


def to_gymnasium_space(space: Space) -> gymnasium.Space:
    """The Gymnasium equivalent of an envport space (same shape and dtype)."""
    if isinstance(space, Discrete):
        return gymnasium.spaces.Discrete(space.n, dtype=space.dtype)
    if isinstance(space, Box):
        dtype = np.dtype(space.dtype)
        low, high = float(space.low), float(space.high)
        if np.issubdtype(dtype, np.integer):
            # Gymnasium rejects infinite bounds on integer boxes: use the dtype's own range.
            info = np.iinfo(dtype)
            low, high = max(low, info.min), min(high, info.max)
            return gymnasium.spaces.Box(int(low), int(high), space.shape, dtype)
        return gymnasium.spaces.Box(low, high, space.shape, dtype)
    raise TypeError(f"no Gymnasium equivalent for {type(space).__name__}")


class EnvportVectorEnv(VectorEnv):
    """A batch of ``num_envs`` copies of an envport environment behind Gymnasium's vector API."""

    metadata: dict[str, Any] = {  # noqa: RUF012 - Gymnasium declares it a plain class dict
        "autoreset_mode": AutoresetMode.SAME_STEP,
        "render_modes": [],
    }

    def __init__(self, env: Environment, num_envs: int, seed: int = 0):
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.env = env
        self.num_envs = num_envs
        self._wrapped = AutoReset(env)
        params = env.default_params()
        self._envport_action_space = env.action_space(params)
        self.single_observation_space = to_gymnasium_space(env.observation_space(params))
        self.single_action_space = to_gymnasium_space(self._envport_action_space)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

        wrapped = self._wrapped
        reset_batch = jax.vmap(lambda k: wrapped.reset(k, params))
        step_batch = jax.vmap(lambda k, s, a: wrapped.step(k, s, a, params))
        # The key splits run inside the compiled calls: split eagerly, they cost more than the
        # step itself on a small batch (two dispatches per step).
        self._reset_fn = jax.jit(lambda key: (lambda k: (k[0], *reset_batch(k[1])))(
            self._env_keys(key)))
        self._step_fn = jax.jit(lambda key, s, a: (lambda k: (k[0], step_batch(k[1], s, a)))(
            self._env_keys(key)))
        self._key = jax.random.key(seed)
        self._state: Any = None

    def _env_keys(self, key: Array) -> tuple[Array, Array]:
        """The schedule in the module docstring: (next key, one key per environment)."""
        key, sub = jax.random.split(key)
        return key, jax.random.split(sub, self.num_envs)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)  # seeds Gymnasium's np_random, as other vector envs do
        if options:
            raise ValueError(f"envport environments take no reset options, got {options!r}")
        if seed is not None:
            self._key = jax.random.key(seed)
        self._key, self._state, obs = self._reset_fn(self._key)
        return np.array(obs), {}

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        # Reject rather than clip or cast: a wrong action is a bug in the caller.
        actions = self._envport_action_space.validate(actions, batch_shape=(self.num_envs,))
        self._key, res = self._step_fn(self._key, self._state, actions)
        self._state = res.state
        obs = np.array(res.obs)  # a writable copy: callers may keep or edit it
        rewards = np.asarray(res.reward)
        terminations = np.asarray(res.terminated, dtype=np.bool_)
        truncations = np.asarray(res.truncated, dtype=np.bool_)

        info = {k: np.asarray(v) for k, v in res.info.items()}
        final_obs = np.array(info.pop("final_observation"))
        done = terminations | truncations
        infos: dict[str, Any] = {}
        for k, v in info.items():
            infos[k], infos[f"_{k}"] = v, np.ones(self.num_envs, np.bool_)
        if done.any():
            # Gymnasium's SAME_STEP layout: per-env objects, None where the episode goes on.
            infos["final_obs"] = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):
                infos["final_obs"][i] = final_obs[i]
            infos["_final_obs"] = done.copy()
            infos["final_info"] = {}
            for k, v in info.items():
                infos["final_info"][k] = v
                infos["final_info"][f"_{k}"] = done.copy()
            infos["_final_info"] = done.copy()
        return obs, rewards, terminations, truncations, infos


def make_vec(name: str, num_envs: int, seed: int = 0, **env_kwargs: Any) -> EnvportVectorEnv:
    """Gymnasium ``VectorEnv`` over ``num_envs`` copies of ``envport.make(name, **env_kwargs)``."""
    return EnvportVectorEnv(envport.make(name, **env_kwargs), num_envs, seed)
