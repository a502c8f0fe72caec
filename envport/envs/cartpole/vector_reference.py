"""N real Gymnasium ``CartPole-v1`` environments stepped as one batch on the host.

The reference backend of PPO training (``envport.train``): the batch behaves exactly like the
JAX translation wrapped in :class:`envport.core.wrappers.AutoReset`, i.e. Gymnasium's SAME_STEP
autoreset: the step that ends an episode (terminated or truncated) returns that step's reward and
flags, and the observation of the NEXT episode's reset; the observation the episode ended on is
kept in ``final_obs``.

Seeding (PufferLib's convention): environment ``i`` is reset once with ``seed * num_envs + i``
(disjoint seeds for the same batch size); later resets continue that environment's own
``np_random`` stream, as a Gymnasium env does when ``reset()`` is called without a seed.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from envport.core.spaces import Box, Discrete


class CartPoleVectorReference:
    """``num_envs`` Gymnasium ``CartPole-v1`` (``gym.make``, with its TimeLimit(500))."""

    def __init__(self, num_envs: int, seed: int = 0) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.num_envs = num_envs
        self.seed = int(seed)
        self.observation_space = Box(-math.inf, math.inf, (4,))
        self.action_space = Discrete(2)
        self.envs = [gym.make("CartPole-v1") for _ in range(num_envs)]
        self.final_obs = np.zeros((num_envs, 4), np.float32)
        self._obs: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        obs = [env.reset(seed=self.seed * self.num_envs + i)[0] for i, env in enumerate(self.envs)]
        self._obs = np.asarray(obs, np.float32)
        return self._obs.copy()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One step of every env: ``(obs, reward, terminated, truncated)``, same-step autoreset."""
        if self._obs is None:
            raise RuntimeError("call reset() before step()")
        actions = self.action_space.validate(actions, batch_shape=(self.num_envs,))
        n = self.num_envs
        obs = np.empty((n, 4), np.float32)
        reward = np.empty(n, np.float32)
        terminated = np.empty(n, np.bool_)
        truncated = np.empty(n, np.bool_)
        for i, (env, a) in enumerate(zip(self.envs, actions, strict=True)):
            o, r, term, trunc, _ = env.step(int(a))
            self.final_obs[i] = o
            if term or trunc:
                o, _ = env.reset()  # continues this env's np_random stream
            obs[i], reward[i], terminated[i], truncated[i] = o, r, term, trunc
        self._obs = obs
        return obs.copy(), reward, terminated, truncated

    def get_state(self) -> dict[str, Any]:
        """Everything a later step depends on (picklable): physics, step counters, RNG streams."""
        per_env = []
        for env in self.envs:
            core = env.unwrapped
            per_env.append({
                "state": np.array(core.state, np.float64),
                "elapsed_steps": int(env._elapsed_steps),  # TimeLimit is the outermost wrapper
                "steps_beyond_terminated": core.steps_beyond_terminated,
                "np_random": core.np_random.bit_generator.state,
            })
        obs = None if self._obs is None else self._obs.copy()
        return {"envs": per_env, "obs": obs, "final_obs": self.final_obs.copy()}

    def set_state(self, state: dict[str, Any]) -> None:
        if len(state["envs"]) != self.num_envs:
            raise ValueError(
                f"state holds {len(state['envs'])} environments, this batch has {self.num_envs}")
        if self._obs is None:
            self.reset()  # Gymnasium's OrderEnforcing wants a reset before the first step
        for env, s in zip(self.envs, state["envs"], strict=True):
            core = env.unwrapped
            core.state = np.array(s["state"], np.float64)
            env._elapsed_steps = s["elapsed_steps"]
            core.steps_beyond_terminated = s["steps_beyond_terminated"]
            core.np_random.bit_generator.state = s["np_random"]
        self._obs = None if state["obs"] is None else np.array(state["obs"], np.float32)
        self.final_obs = np.array(state["final_obs"], np.float32)


def make(num_envs: int, seed: int = 0, **env_kwargs: Any) -> CartPoleVectorReference:
    """Discovered by ``envport.train.backends.vector_reference("cartpole", ...)``."""
    if env_kwargs:
        raise ValueError(
            f"the CartPole reference takes no environment options, got {sorted(env_kwargs)}")
    return CartPoleVectorReference(num_envs, seed)
