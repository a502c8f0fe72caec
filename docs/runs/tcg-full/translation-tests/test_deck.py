"""The translation's own decks are legal decks of the reference."""

import jax
import numpy as np
from translation import deck

from envport.envs.tcg_pocket.cards import ENERGY_TYPES
from envport.envs.tcg_pocket.deck import validate_deck
from envport.envs.tcg_pocket.encode import CARD_NAMES


def test_random_decks_are_legal():
    cards, types = jax.jit(jax.vmap(deck.random_deck))(jax.random.split(jax.random.key(3), 8))
    for c, t in zip(np.asarray(cards), np.asarray(types), strict=True):
        assert deck.is_legal(c, t) is None
        validate_deck([CARD_NAMES[i - 1] for i in c], [ENERGY_TYPES[i] for i in t if i >= 0])


def test_illegal_decks_name_the_rule():
    cards, types = deck.random_deck(jax.random.key(0))
    c = np.asarray(cards).copy()
    assert deck.is_legal(c[:19], np.asarray(types)) == "deck size"
    c[:3] = c[0]
    assert deck.is_legal(c, np.asarray(types)) == "copies per name"
