"""Wrappers over the functional API."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from envport.core.api import Array, Environment, StepResult


class AutoReset(Environment):
    """Resets an episode inside ``step`` when it ends, keeping what the final step returned.

    ``info["final_observation"]`` holds the observation the episode ended on (never a cached
    first state). Environments that already reset themselves (``autoresets = True``, e.g. Pong)
    pass through unchanged, with their own returned observation as the final one.
    """

    def __init__(self, env: Environment):
        self.env = env
        self.name = env.name  # type: ignore[misc]
        self.autoresets = True  # type: ignore[misc]

    def default_params(self) -> Any:
        return self.env.default_params()

    def observation_space(self, params: Any = None) -> Any:
        return self.env.observation_space(params)

    def action_space(self, params: Any = None) -> Any:
        return self.env.action_space(params)

    def reset(self, key: Array, params: Any = None) -> tuple[Any, Array]:
        return self.env.reset(key, params)

    def sample_draws(self, key: Array, state: Any, params: Any = None) -> Any:
        if self.env.autoresets:
            # Nothing to reset, so no key split (a PRNG call per env per step, as costly as a
            # small env's whole step); the unused key keeps the draws' structure.
            return self.env.sample_draws(key, state, params), key
        step_draws = self.env.sample_draws(jax.random.fold_in(key, 0), state, params)
        if not jax.tree_util.tree_leaves(step_draws):
            # The step draws nothing (CartPole): the key is the reset's alone. Deriving one
            # would cost a PRNG call per environment and step, a fifth of CartPole's step.
            return step_draws, key
        # fold_in rather than split: one PRNG call per derived key.
        return step_draws, jax.random.fold_in(key, 1)

    def transition(self, state: Any, action: Array, draws: Any, params: Any = None) -> StepResult:
        params = self.default_params() if params is None else params
        step_draws, reset_key = draws
        res = self.env.transition(state, action, step_draws, params)
        info = dict(res.info)
        info["final_observation"] = res.obs
        if self.env.autoresets:
            return res._replace(info=info)
        done = jnp.logical_or(res.terminated, res.truncated)
        reset_state, reset_obs = self.env.reset(reset_key, params)
        state = jax.tree_util.tree_map(
            lambda r, s: jnp.where(done, r, s), reset_state, res.state
        )
        obs = jnp.where(done, reset_obs, res.obs)
        return res._replace(state=state, obs=obs, info=info)
