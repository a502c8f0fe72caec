"""Random-play games for the tests: legal actions drawn uniformly from the mask."""

from __future__ import annotations

import numpy as np

from envport.envs.tcg_pocket.config import RulesConfig
from envport.envs.tcg_pocket.deck import random_deck
from envport.envs.tcg_pocket.game import TcgPocketGame
from envport.envs.tcg_pocket.rng import Rng


def play_random(seed: int, choices: np.random.Generator, config: RulesConfig | None = None,
                rng: Rng | None = None, end_weight: float = 0.1) -> TcgPocketGame:
    """One game to the end. ``end_weight``: how often END is taken when other actions are
    legal (uniform choice would end most turns at once and most games at the turn limit)."""
    g = TcgPocketGame(config)
    decks = (random_deck(np.random.default_rng(seed)),
             random_deck(np.random.default_rng(seed + 10_000)))
    g.reset(seed, decks, rng=rng)
    while not g.done:
        p = g.to_act()
        legal = g.legal_actions(p)
        others = [a for a in legal if a != 0]
        if others and (0 not in legal or choices.random() > end_weight):
            a = int(choices.choice(others))
        else:
            a = int(choices.choice(legal))
        g.step(p, a)
    return g
