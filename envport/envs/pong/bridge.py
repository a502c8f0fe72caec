"""C reference state <-> JAX ``PongState``: the same ten fields, the same dtypes."""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
import numpy as np

from envport.core.reference import RefState
from envport.envs.pong.jax_env import PongDraws, PongState
from envport.envs.pong.reference import STATE_DTYPES


class PongBridge:
    def to_jax(self, state: Mapping[str, np.ndarray]) -> PongState:
        return PongState(**{k: jnp.asarray(np.asarray(state[k], dt))
                            for k, dt in STATE_DTYPES.items()})

    def from_jax(self, state: PongState) -> RefState:
        return {k: np.asarray(getattr(state, k), dt) for k, dt in STATE_DTYPES.items()}

    def draws(self, tape: Mapping[str, np.ndarray], state: Mapping[str, np.ndarray]) -> PongDraws:
        # A step consumes at most one rand_r value (a point returns at once); with none, unused.
        return PongDraws(jnp.asarray(tape.get("r", 0), jnp.int32))
