"""Two simple players for tests and baselines: uniformly random legal actions, and a greedy
heuristic (bench Basics, evolve, attach to the Active, attack with the strongest legal attack).
Both take their randomness from the NumPy generator they are given, never from the game's Rng,
so a game's tape holds only the game's own draws."""

from __future__ import annotations

import numpy as np

from envport.envs.tcg_pocket import rules
from envport.envs.tcg_pocket.actions import ATTACH, END, decode
from envport.envs.tcg_pocket.game import TcgPocketGame


def random_action(game: TcgPocketGame, player: int, rng: np.random.Generator) -> int:
    return int(rng.choice(game.legal_actions(player)))


def heuristic_action(game: TcgPocketGame, player: int, rng: np.random.Generator) -> int:
    legal = game.legal_actions(player)
    s = game.state
    assert s is not None
    if s.pending or len(legal) == 1:
        return int(rng.choice(legal))
    kinds = {a: decode(a) for a in legal}
    plays = [a for a, k in kinds.items() if k.kind == "play"]
    if plays:  # Basics, evolutions, Trainers: anything the rules allow now
        return int(rng.choice(plays))
    if ATTACH in legal:
        return ATTACH  # the Active first: it is the one that attacks
    attaches = [a for a, k in kinds.items() if k.kind == "attach"]
    if attaches:
        return int(rng.choice(attaches))
    attacks = [a for a, k in kinds.items() if k.kind == "attack"]
    if attacks:
        active = s.players[player].active
        assert active is not None
        return max(attacks, key=lambda a: rules.card(active.name).attacks[kinds[a].a].damage)
    return END if END in legal else int(rng.choice(legal))
