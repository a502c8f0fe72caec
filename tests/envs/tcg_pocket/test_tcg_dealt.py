"""``SPEC``'s engine deals its own resets decks of its pool (``full`` since the full-pool
slice; ``status`` and ``trainers`` decks too): legal decks of the reference's builder, and a
dealt state the reference plays on with the same legal actions."""

from __future__ import annotations

import jax
import numpy as np

from envport.envs.tcg_pocket.cards import ENERGY_TYPES
from envport.envs.tcg_pocket.dealt import StatusDealtTcgPocket, pool_decks, status_decks
from envport.envs.tcg_pocket.deck import (
    TRAINERS_POKEMON_CARDS,
    full_cards,
    full_trainers,
    pool_trainers,
    status_pokemon,
    trainers_cards,
    validate_deck,
)
from envport.envs.tcg_pocket.encode import CARD_NAMES
from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge
from envport.envs.tcg_pocket.spec_support import make_reference


def test_status_decks_are_legal_decks_of_the_pool():
    cards, types = status_decks(16)
    pool = set(status_pokemon())
    for c, t in zip(cards, types, strict=True):
        names = [CARD_NAMES[i - 1] for i in c if i > 0]
        validate_deck(names, [ENERGY_TYPES[i] for i in t if i >= 0])  # raises if illegal
        assert set(names) <= pool
    assert len({tuple(c) for c in cards}) > 8  # not one deck repeated


def test_trainers_decks_are_legal_decks_of_the_pool():
    cards, types = pool_decks("trainers", 16)
    pool, trainers = set(trainers_cards()), set(pool_trainers())
    for c, t in zip(cards, types, strict=True):
        names = [CARD_NAMES[i - 1] for i in c if i > 0]
        validate_deck(names, [ENERGY_TYPES[i] for i in t if i >= 0])
        assert set(names) <= pool
        assert sum(n in trainers for n in names) == 20 - TRAINERS_POKEMON_CARDS
    assert "Koga" not in trainers and len(trainers) == 14


def test_full_decks_are_legal_decks_of_the_whole_pool():
    """The ``full`` decks hold only supported cards, 8 Trainers from all 15 (Koga too), and,
    over the table, Pokémon beyond the ``trainers`` pool and fossil lines."""
    from envport.envs.tcg_pocket.dealt import pool_deck_list

    decks = pool_deck_list("full")
    pool, trainers = set(full_cards()), set(full_trainers())
    beyond = set(full_cards()) - set(trainers_cards())
    for deck in decks[:64]:
        validate_deck(deck.cards, deck.energy_types)
        assert set(deck.cards) <= pool
        assert sum(n in trainers for n in deck.cards) == 20 - TRAINERS_POKEMON_CARDS
    names = {n for d in decks for n in d.cards}
    assert "Koga" in trainers and len(trainers) == 15
    assert sum(bool(set(d.cards) & beyond) for d in decks) > len(decks) // 2
    assert {"Helix Fossil", "Dome Fossil", "Old Amber"} <= names and "Koga" in names


def test_dealt_reset_is_a_state_the_reference_plays_on():
    env = StatusDealtTcgPocket(n_decks=8)
    reset, mask = jax.jit(jax.vmap(env.reset)), jax.jit(jax.vmap(env.action_mask))
    states, _ = reset(jax.random.split(jax.random.key(4), 6))
    bridge, ref = TcgPocketBridge(), make_reference()
    seen = set()
    for i in range(6):
        s = jax.tree_util.tree_map(lambda x, i=i: x[i], states)
        ref.set_state(bridge.from_jax(s))
        assert np.array_equal(ref.action_mask(), np.asarray(mask(states)[i]))
        seen |= {int(x) for x in np.asarray(s.deck).ravel()} | {
            int(x) for x in np.asarray(s.hand).ravel()}
    assert env.decks is not None
    decks = {int(x) for x in np.asarray(env.decks[0]).ravel()}
    assert seen - {0} <= decks and len(seen) > 10
