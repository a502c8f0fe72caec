"""Two simple players for tests and baselines: uniformly random legal actions, and a greedy
heuristic (bench Basics, evolve, attach to the Active, attack with the strongest legal attack).
Both take their randomness from the source they are given, never from the game's Rng, so a
game's tape holds only the game's own draws: a NumPy generator, or a :class:`Chooser` that makes
each uniform choice from a named stream (``batch_draws.Choices``: the JAX players' draws, so that
a reference batch can be handed the JAX batch's choices). The streams are those of the JAX
players' keys (``jax_engine/agents.py``): ``random`` for the random player, ``any``, ``play``
and ``attach`` for the heuristic."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from envport.envs.tcg_pocket import rules
from envport.envs.tcg_pocket.actions import ATTACH, END, decode
from envport.envs.tcg_pocket.game import TcgPocketGame


class Chooser(Protocol):
    def choice(self, candidates: Sequence[int], stream: str) -> int: ...


def uniform(rng: np.random.Generator | Chooser, candidates: Sequence[int], stream: str) -> int:
    """One of ``candidates``, uniformly: from ``rng``, or from its ``stream``."""
    if isinstance(rng, np.random.Generator):
        return int(rng.choice(candidates))
    return int(rng.choice(candidates, stream))


def random_action(game: TcgPocketGame, player: int, rng: np.random.Generator | Chooser) -> int:
    return uniform(rng, game.legal_actions(player), "random")


def heuristic_action(game: TcgPocketGame, player: int, rng: np.random.Generator | Chooser
                     ) -> int:
    legal = game.legal_actions(player)
    s = game.state
    assert s is not None
    if s.pending or len(legal) == 1:
        return uniform(rng, legal, "any")
    kinds = {a: decode(a) for a in legal}
    plays = [a for a, k in kinds.items() if k.kind == "play"]
    if plays:  # Basics, evolutions, Trainers: anything the rules allow now
        return uniform(rng, plays, "play")
    if ATTACH in legal:
        return ATTACH  # the Active first: it is the one that attacks
    attaches = [a for a, k in kinds.items() if k.kind == "attach"]
    if attaches:
        return uniform(rng, attaches, "attach")
    attacks = [a for a, k in kinds.items() if k.kind == "attack"]
    if attacks:
        active = s.players[player].active
        assert active is not None
        return max(attacks, key=lambda a: rules.card(active.name).attacks[kinds[a].a].damage)
    return END if END in legal else uniform(rng, legal, "any")
