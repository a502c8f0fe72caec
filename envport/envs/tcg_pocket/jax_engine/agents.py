"""The two players of the reference's ``agents.py`` as jittable policies of a state and a key:
a uniformly random legal action, and the greedy heuristic (a random play if any, else attach to
the Active, else a random attach, else the strongest legal attack, else END). Their keys are
their own, never the game's generator."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from envport.envs.tcg_pocket.jax_engine import actions as A
from envport.envs.tcg_pocket.jax_engine import rules
from envport.envs.tcg_pocket.jax_engine.state import State


def uniform_choice(key: jax.Array, mask: jax.Array) -> jax.Array:
    """A uniformly random index where ``mask`` is True (0 if none is)."""
    logits = jnp.where(mask, 0.0, -jnp.inf)
    return jnp.where(mask.any(), jax.random.categorical(key, logits), 0).astype(jnp.int32)


def random_action(key: jax.Array, s: State) -> jax.Array:
    return uniform_choice(key, rules.legal_mask(s))


def heuristic_action(key: jax.Array, s: State) -> jax.Array:
    mask = rules.legal_mask(s)
    k_any, k_play, k_attach = jax.random.split(key, 3)
    idx = jnp.arange(A.N_ACTIONS)
    plays = mask & (idx >= A.PLAY) & (idx < A.CHOOSE)
    attaches = mask & (idx >= A.ATTACH) & (idx < A.DISCARD)
    attacks = mask & (idx >= A.ATTACK) & (idx < A.RETREAT)
    active = rules.card_at(s, rules.to_act(s).clip(0, 1), 0)
    damage = jnp.where(attacks, rules.ATK_DAMAGE[active, jnp.clip(idx - A.ATTACK, 0, 1)], -1)
    strongest = jnp.argmax(damage).astype(jnp.int32)  # the first of equals, as max() takes
    choice = jnp.where(mask[A.END], A.END, uniform_choice(k_any, mask))
    choice = jnp.where(attacks.any(), strongest, choice)
    choice = jnp.where(attaches.any(), uniform_choice(k_attach, attaches), choice)
    choice = jnp.where(mask[A.ATTACH], A.ATTACH, choice)
    choice = jnp.where(plays.any(), uniform_choice(k_play, plays), choice)
    forced = rules.has_pending(s) | (mask.sum() == 1)
    return jnp.where(forced, uniform_choice(k_any, mask), choice).astype(jnp.int32)
