"""The JAX engine whose own resets deal decks of the reference's pool (``SPEC``'s ``make``).

The loop's engine (``jax_engine/jax_env.TcgPocket``) deals its own resets ten Colorless-cost
plain Basics (its translation needed only some legal deck: the verifier starts every compared
game from the reference's dealt state). A benchmark or a training run of the ``status`` engine
should play ``status`` games, so this subclass deals each player one of ``N_DECKS`` decks that
the reference's own deck builder (``deck.random_status_deck``) made once, at construction, from
fixed seeds, each with its Energy types; the rest of the reset (the shuffles, the opening hands,
the first-player coin, the setup decisions) is the loop's ``rules.new_game``. Nothing of the
step changes: L2 and L3 never call ``reset``.
"""

from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.seeds import derive_seed
from envport.envs.tcg_pocket.jax_engine import rng as R
from envport.envs.tcg_pocket.jax_engine import rules
from envport.envs.tcg_pocket.jax_engine.config import Params
from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket
from envport.envs.tcg_pocket.jax_engine.state import MAX_TYPES, ZONE, State, blank

N_DECKS = 512
DECK_SEED = 20261201  # the decks are the same in every process


@cache
def status_decks(n: int = N_DECKS, seed: int = DECK_SEED) -> tuple[np.ndarray, np.ndarray]:
    """(card ids int16[n, 20], Energy type indices int8[n, 3] padded with -1) of ``n`` decks
    of the ``status`` pool, as the reference deals them (``derive_seed(seed, i)``); built once
    per process (~2 s)."""
    from envport.envs.tcg_pocket.cards import ENERGY_INDEX
    from envport.envs.tcg_pocket.deck import random_status_deck
    from envport.envs.tcg_pocket.encode import CARD_ID

    cards = np.zeros((n, ZONE), np.int16)
    types = np.full((n, MAX_TYPES), -1, np.int8)
    for i in range(n):
        deck = random_status_deck(np.random.default_rng(derive_seed(seed, i)))
        cards[i, :len(deck.cards)] = [CARD_ID[c] for c in deck.cards]
        types[i, :len(deck.energy_types)] = [ENERGY_INDEX[t] for t in deck.energy_types]
    return cards, types


class StatusDealtTcgPocket(TcgPocket):
    """:class:`TcgPocket` whose resets deal two of :func:`status_decks` (uniformly, with
    replacement) instead of the loop's Colorless Basics."""

    def __init__(self, n_decks: int = N_DECKS) -> None:
        if n_decks < 1:
            raise ValueError(f"n_decks must be at least 1, got {n_decks}")
        cards, types = status_decks(n_decks)
        self.deck_cards, self.deck_types = jnp.asarray(cards), jnp.asarray(types)

    def reset(self, key: jax.Array, params: Params | None = None) -> tuple[State, jax.Array]:
        params = self.default_params() if params is None else params
        k0, k1, k2 = jax.random.split(key, 3)
        n = self.deck_cards.shape[0]
        i = jnp.stack([jax.random.randint(k, (), 0, n) for k in (k0, k1)])
        seed = jax.random.bits(k2, (), jnp.uint32)
        s = blank().replace(deck=self.deck_cards[i], energy_types=self.deck_types[i],
                            rng=jnp.stack([R.seed_key(seed), jnp.uint32(0)]))
        s = rules.new_game(s, params)
        return s, self.observe(s)
