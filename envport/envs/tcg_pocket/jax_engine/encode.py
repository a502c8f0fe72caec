"""One player's observation (reference ``encode.observation_arrays``/``observation_vector``):
the player's own side first; both decks and the opponent's hand as counts only; the
opponent's revealed information dropped; the opponent's board hidden during setup; the fields
flattened to int16 in sorted name order. The generator (``rng``) is never observed."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from envport.envs.tcg_pocket.jax_engine.state import FIELDS, S_SETUP, State

PER_PLAYER = ("deck", "hand", "discard", "stack", "energy", "damage", "entered_turn",
              "evolved_turn", "conditions", "effect_until", "effect_amount", "energy_types",
              "energy_current", "energy_next", "points", "x_speed", "attached_energy",
              "played_supporter", "retreated", "giovanni", "blaine",
              "supporters_blocked_until", "revealed_hand", "revealed_hand_shown",
              "revealed_top", "revealed_top_shown")
BOARD = ("stack", "energy", "damage", "entered_turn", "evolved_turn", "conditions",
         "effect_until", "effect_amount")
PUBLIC = ("stage", "turn", "winner", "attack_open", "pending_kind", "pending_left",
          "pending_energy", "pending_bench", "pending_amount", "pending_options",
          "pending_has_options")
RELATIVE = ("first", "current", "pending_player")
KEYS = tuple(sorted((*PER_PLAYER, "deck_size", "hand_size", *PUBLIC, *RELATIVE)))


def _size(k: str) -> int:
    if k in ("deck_size", "hand_size"):
        return 2
    n = 1
    for d in FIELDS[k][0]:
        n *= d
    return n


OBS_SIZE = sum(_size(k) for k in KEYS)


def observation_arrays(s: State, player: jax.Array) -> dict[str, jax.Array]:
    p = jnp.asarray(player, jnp.int32)
    order = jnp.stack([p, 1 - p])
    out = {k: getattr(s, k)[order] for k in PER_PLAYER}
    out["deck_size"] = jnp.sum(out["deck"] != 0, axis=1).astype(jnp.int16)
    out["hand_size"] = jnp.sum(out["hand"] != 0, axis=1).astype(jnp.int16)
    out["deck"] = jnp.zeros_like(out["deck"])
    for k in ("hand", "revealed_hand", "revealed_hand_shown", "revealed_top",
              "revealed_top_shown"):
        out[k] = out[k].at[1].set(jnp.zeros_like(out[k][1]))
    setup = s.stage == S_SETUP
    for k in BOARD:
        out[k] = out[k].at[1].set(jnp.where(setup, jnp.zeros_like(out[k][1]), out[k][1]))
    for k in PUBLIC:
        out[k] = getattr(s, k)
    for k in RELATIVE:
        v = jnp.asarray(getattr(s, k), jnp.int8)
        out[k] = jnp.where(v < 0, v, (v.astype(jnp.int32) != p).astype(jnp.int8))
    return out


def observation_vector(s: State, player: jax.Array) -> jax.Array:
    obs = observation_arrays(s, player)
    return jnp.concatenate([jnp.asarray(obs[k]).astype(jnp.int16).ravel() for k in KEYS])
