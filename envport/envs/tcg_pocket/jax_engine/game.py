"""The two-player API (reference ``game.py``) as pure functions: whose turn, the mask for a
player, and one step with both players' rewards (+1/-1 at a win, 0 otherwise)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from envport.envs.tcg_pocket.jax_engine import rules
from envport.envs.tcg_pocket.jax_engine.config import Params
from envport.envs.tcg_pocket.jax_engine.state import S_OVER, State


def to_act(s: State) -> jax.Array:
    return rules.to_act(s)


def action_mask(s: State, player: jax.Array) -> jax.Array:
    """bool[106]; all False for the player who does not act (and once the game is over)."""
    return rules.legal_mask(s) & (to_act(s) == player)


def rewards(s: State) -> jax.Array:
    """float32[2] for a finished game: (1, -1), (-1, 1) or (0, 0) for a draw."""
    w = jnp.asarray(s.winner, jnp.int32)
    over = s.stage == S_OVER
    r0 = jnp.where(over & (w == 0), 1.0, jnp.where(over & (w == 1), -1.0, 0.0))
    return jnp.stack([r0, -r0]).astype(jnp.float32)


def step(s: State, action: jax.Array, params: Params
         ) -> tuple[State, jax.Array, jax.Array, jax.Array]:
    """(next state, rewards[2], terminated, legal) for the action of whoever must act; an
    illegal action (or any action once the game is over) changes nothing and ends nothing."""
    nxt, legal = rules.apply(s, action, params)
    terminated = legal & (nxt.stage == S_OVER)
    return nxt, jnp.where(terminated, rewards(nxt), 0.0).astype(jnp.float32), terminated, legal
