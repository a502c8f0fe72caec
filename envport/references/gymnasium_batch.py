"""N Gymnasium environments stepped as one host batch: the reference backend of PPO training for
references that are Gymnasium environments (CartPole, HalfCheetah).

The batch behaves like a JAX translation under :class:`envport.core.wrappers.AutoReset`
(Gymnasium's SAME_STEP autoreset): the step that ends an episode returns that step's reward and
flags with the observation of the NEXT episode's reset; the observation the episode ended on is
kept in ``final_obs``. Observations and rewards are float32, as the translations return them.

Seeding (PufferLib's convention): environment ``i`` is reset once with ``seed * num_envs + i``;
later resets continue that environment's own ``np_random`` stream, as a Gymnasium env does when
``reset()`` is called without a seed.

:meth:`GymnasiumBatch.get_state` / ``set_state`` resume a batch exactly: the per-environment
simulator state (each subclass's ``save_core`` / ``load_core``), TimeLimit's counter and the
reset RNG's state.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envport.core.spaces import Space


class GymnasiumBatch:
    """``envs`` (each ``gym.make(...)``, TimeLimit outermost) as one batch."""

    def __init__(self, envs: list[Any], seed: int, observation_space: Space,
                 action_space: Space) -> None:
        if len(envs) < 1:
            raise ValueError(f"num_envs must be at least 1, got {len(envs)}")
        self.envs = envs
        self.num_envs = len(envs)
        self.seed = int(seed)
        self.observation_space = observation_space
        self.action_space = action_space
        self.final_obs = np.zeros((self.num_envs, *observation_space.shape), np.float32)
        self._obs: np.ndarray | None = None

    # ------------------------------------------------------------------ per-env hooks
    def env_action(self, action: np.ndarray) -> Any:
        """One validated action as the Gymnasium env takes it."""
        return action

    def save_core(self, core: Any) -> dict[str, Any]:
        """The unwrapped env's simulator state (picklable)."""
        raise NotImplementedError

    def load_core(self, core: Any, saved: dict[str, Any]) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ the batch
    def reset(self) -> np.ndarray:
        obs = [env.reset(seed=self.seed * self.num_envs + i)[0] for i, env in enumerate(self.envs)]
        self._obs = np.asarray(obs, np.float32)
        return self._obs.copy()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One step of every env: ``(obs, reward, terminated, truncated)``, same-step autoreset.
        Actions are validated against the action space (never clipped)."""
        if self._obs is None:
            raise RuntimeError("call reset() before step()")
        actions = self.action_space.validate(actions, batch_shape=(self.num_envs,))
        n = self.num_envs
        obs = np.empty_like(self.final_obs)
        reward = np.empty(n, np.float32)
        terminated = np.empty(n, np.bool_)
        truncated = np.empty(n, np.bool_)
        for i, (env, a) in enumerate(zip(self.envs, actions, strict=True)):
            o, r, term, trunc, _ = env.step(self.env_action(a))
            self.final_obs[i] = o
            if term or trunc:
                o, _ = env.reset()  # continues this env's np_random stream
            obs[i], reward[i], terminated[i], truncated[i] = o, r, term, trunc
        self._obs = obs
        return obs.copy(), reward, terminated, truncated

    def get_state(self) -> dict[str, Any]:
        """Everything a later step depends on (picklable): simulator states, TimeLimit
        counters, reset RNG streams."""
        per_env = [{**self.save_core(env.unwrapped),
                    "elapsed_steps": int(env._elapsed_steps or 0),  # TimeLimit, the outermost
                    "np_random": env.unwrapped.np_random.bit_generator.state}
                   for env in self.envs]
        obs = None if self._obs is None else self._obs.copy()
        return {"envs": per_env, "obs": obs, "final_obs": self.final_obs.copy()}

    def set_state(self, state: dict[str, Any]) -> None:
        if len(state["envs"]) != self.num_envs:
            raise ValueError(
                f"state holds {len(state['envs'])} environments, this batch has {self.num_envs}")
        if self._obs is None:
            self.reset()  # Gymnasium's OrderEnforcing wants a reset before the first step
        for env, s in zip(self.envs, state["envs"], strict=True):
            self.load_core(env.unwrapped, s)
            env._elapsed_steps = s["elapsed_steps"]
            env.unwrapped.np_random.bit_generator.state = s["np_random"]
        self._obs = None if state["obs"] is None else np.array(state["obs"], np.float32)
        self.final_obs = np.array(state["final_obs"], np.float32)

    def close(self) -> None:
        for env in self.envs:
            env.close()
