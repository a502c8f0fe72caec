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
from collections.abc import Mapping
from typing import Any

import numpy as np

from envport.core.spaces import Box, Discrete
from envport.envs.cartpole.reference import make_gymnasium_cartpole
from envport.references.gymnasium_batch import GymnasiumBatch


class CartPoleVectorReference(GymnasiumBatch):
    """``num_envs`` Gymnasium ``CartPole-v1`` (``gym.make``, with its TimeLimit(500)), each with
    ``params`` (the translation's ``CartPoleParams`` names) set as the single reference does."""

    def __init__(self, num_envs: int, seed: int = 0,
                 params: Mapping[str, Any] | None = None) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        super().__init__([make_gymnasium_cartpole(params) for _ in range(num_envs)], seed,
                         Box(-math.inf, math.inf, (4,)), Discrete(2))

    def env_action(self, action: np.ndarray) -> int:
        return int(action)

    def save_core(self, core: Any) -> dict[str, Any]:
        return {"state": np.array(core.state, np.float64),
                "steps_beyond_terminated": core.steps_beyond_terminated}

    def load_core(self, core: Any, saved: dict[str, Any]) -> None:
        core.state = np.array(saved["state"], np.float64)
        core.steps_beyond_terminated = saved["steps_beyond_terminated"]


def make(num_envs: int, seed: int = 0, **env_kwargs: Any) -> CartPoleVectorReference:
    """Discovered by ``envport.train.backends.vector_reference("cartpole", ...)``; the options
    are CartPole's params (``gravity=9.0``...), as ``envport.make("cartpole", ...)`` takes them."""
    return CartPoleVectorReference(num_envs, seed, env_kwargs)
