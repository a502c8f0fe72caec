"""Gymnasium CartPole state (float64) <-> JAX ``CartPoleState``."""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
import numpy as np

from envport.core.reference import RefState
from envport.envs.cartpole.jax_env import CartPoleState
from envport.envs.cartpole.reference import STATE_FIELDS


class CartPoleBridge:
    def __init__(self, dtype: jnp.dtype = jnp.float32):
        self.dtype = dtype

    def to_jax(self, state: Mapping[str, np.ndarray]) -> CartPoleState:
        physics = {k: jnp.asarray(state[k], self.dtype) for k in STATE_FIELDS}
        return CartPoleState(**physics, time=jnp.asarray(state["time"], jnp.int32))

    def from_jax(self, state: CartPoleState) -> RefState:
        out = {k: np.asarray(getattr(state, k), np.float64) for k in STATE_FIELDS}
        out["time"] = np.asarray(state.time, np.int32)
        return out

    def draws(self, tape: Mapping[str, np.ndarray], state: Mapping[str, np.ndarray]) -> tuple:
        return ()
