"""The JAX engine whose own resets deal decks of the reference's pool (``SPEC``'s ``make``).

The loop's engine (``jax_engine/jax_env.TcgPocket``) deals its own resets ten Colorless-cost
plain Basics (its translation needed only some legal deck: the verifier starts every compared
game from the reference's dealt state). A benchmark or a training run of the engine should play
games of the pool it covers, so this factory's engine deals each player one of ``N_DECKS`` decks
that the reference's own deck builder of that pool (``deck.random_status_deck``,
``deck.random_trainers_deck``, ``deck.random_full_deck``) made once, at construction, from fixed
seeds, each with its Energy types (``TcgPocket(decks=...)``, a hand edit of the loop's class,
kept in the workspace since the ``trainers`` run); the rest of the reset (the shuffles, the
opening hands, the first-player coin, the setup decisions) is the loop's ``rules.new_game``.
Nothing of the step changes: L2 and L3 never call ``reset``. A factory, not a subclass: a
subclass would bind the original class, and a mutant of ``TcgPocket`` would never be built
(``envport mutate`` would call it equivalent).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from envport.core.seeds import derive_seed
from envport.envs.tcg_pocket.deck import Deck
from envport.envs.tcg_pocket.jax_engine import jax_env
from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket
from envport.envs.tcg_pocket.jax_engine.state import MAX_TYPES, ZONE

N_DECKS = 512
DECK_SEED = 20261201  # the decks are the same in every process
DEALT_POOLS = ("status", "trainers", "full")


@cache
def pool_deck_list(pool: str, n: int = N_DECKS, seed: int = DECK_SEED) -> tuple[Deck, ...]:
    """``n`` decks of ``pool`` as the reference's deck builder deals them
    (``derive_seed(seed, i)``); built once per process (~2 s)."""
    from envport.envs.tcg_pocket.deck import (
        random_full_deck,
        random_status_deck,
        random_trainers_deck,
    )

    if pool not in DEALT_POOLS:
        raise ValueError(f"pool {pool!r}: one of {', '.join(DEALT_POOLS)}")
    deal = {"status": random_status_deck, "trainers": random_trainers_deck,
            "full": random_full_deck}[pool]
    return tuple(deal(np.random.default_rng(derive_seed(seed, i))) for i in range(n))


@cache
def pool_decks(pool: str, n: int = N_DECKS, seed: int = DECK_SEED
               ) -> tuple[np.ndarray, np.ndarray]:
    """(card ids int16[n, 20], Energy type indices int8[n, 3] padded with -1) of
    :func:`pool_deck_list`'s decks, as the engine holds them."""
    from envport.envs.tcg_pocket.cards import ENERGY_INDEX
    from envport.envs.tcg_pocket.encode import CARD_ID

    cards = np.zeros((n, ZONE), np.int16)
    types = np.full((n, MAX_TYPES), -1, np.int8)
    for i, deck in enumerate(pool_deck_list(pool, n, seed)):
        cards[i, :len(deck.cards)] = [CARD_ID[c] for c in deck.cards]
        types[i, :len(deck.energy_types)] = [ENERGY_INDEX[t] for t in deck.energy_types]
    return cards, types


def status_decks(n: int = N_DECKS, seed: int = DECK_SEED) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pool_decks` of the ``status`` pool."""
    return pool_decks("status", n, seed)


def DealtTcgPocket(n_decks: int = N_DECKS, pool: str | None = None) -> TcgPocket:
    """The loop's :class:`TcgPocket`, looked up in its module at call time (so that a mutant of
    the class, which ``envport mutate`` executes in that module, is the one built), dealing
    two of :func:`pool_decks` of ``pool`` (default ``spec_support.POOL``; uniformly, with
    replacement) at each reset."""
    if n_decks < 1:
        raise ValueError(f"n_decks must be at least 1, got {n_decks}")
    if pool is None:
        from envport.envs.tcg_pocket.spec_support import POOL

        pool = POOL
    return jax_env.TcgPocket(decks=pool_decks(pool, n_decks))


def StatusDealtTcgPocket(n_decks: int = N_DECKS) -> TcgPocket:
    """:func:`DealtTcgPocket` of the ``status`` pool."""
    return DealtTcgPocket(n_decks, "status")
