"""Decks for the JAX engine's own resets (reference ``deck.py``).

The verifier starts every compared game from the reference's dealt state, so these decks need
only be legal decks of the cards the engine plays: ten distinct plain Basics whose attacks cost
Colorless only (any Energy type pays them), two copies each, and one random Energy type."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.tcg_pocket.jax_engine import cards

DECK_SIZE = 20
MAX_COPIES = 2
COLORLESS_ONLY = cards.PLAIN_BASIC & (cards.ATK_TYPED.sum(axis=(1, 2)) == 0) & (cards.N_ATK > 0)
POOL = jnp.asarray(np.flatnonzero(COLORLESS_ONLY), jnp.int16)


def random_deck(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(card ids int16[20], Energy types int8[3] padded with -1) of a random legal deck."""
    k_cards, k_type = jax.random.split(key)
    names = jax.random.permutation(k_cards, POOL)[:DECK_SIZE // MAX_COPIES]
    deck = jnp.repeat(names, MAX_COPIES).astype(jnp.int16)
    energy = jax.random.randint(k_type, (), 0, len(cards.ENERGY_TYPES)).astype(jnp.int8)
    return deck, jnp.asarray([energy, -1, -1], jnp.int8)


def is_legal(deck: np.ndarray, energy_types: np.ndarray) -> str | None:
    """The reference's deck rules on arrays: None if legal, else the rule broken."""
    ids = [int(x) for x in deck if int(x) != 0]
    if len(ids) != DECK_SIZE:
        return "deck size"
    if max(ids.count(i) for i in ids) > MAX_COPIES:
        return "copies per name"
    if not any(cards.IS_BASIC[i] for i in ids):
        return "basic pokemon"
    types = [int(t) for t in energy_types if int(t) >= 0]
    if not types or len(set(types)) != len(types):
        return "energy types"
    return None
