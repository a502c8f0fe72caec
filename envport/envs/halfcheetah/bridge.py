"""Gymnasium HalfCheetah state (MuJoCo's float64 qpos/qvel + TimeLimit's counter) <-> JAX."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax.numpy as jnp
import numpy as np

from envport.core.reference import RefState
from envport.envs.halfcheetah.jax_env import HalfCheetahState


class HalfCheetahBridge:
    def __init__(self, dtype: Any = jnp.float32):
        self.dtype = jnp.dtype(dtype)

    def to_jax(self, state: Mapping[str, np.ndarray]) -> HalfCheetahState:
        return HalfCheetahState(qpos=jnp.asarray(state["qpos"], self.dtype),
                                qvel=jnp.asarray(state["qvel"], self.dtype),
                                time=jnp.asarray(state["time"], jnp.int32))

    def from_jax(self, state: HalfCheetahState) -> RefState:
        return {"qpos": np.asarray(state.qpos, np.float64),
                "qvel": np.asarray(state.qvel, np.float64),
                "time": np.asarray(state.time, np.int32)}

    def draws(self, tape: Mapping[str, np.ndarray], state: Mapping[str, np.ndarray]) -> tuple:
        return ()  # a step draws nothing (the reset noise is the only randomness)
