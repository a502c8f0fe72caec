"""The JAX players (``jax_engine/agents.py``) are the reference's (``agents.py``): the opponent
that JAX training and evaluation play is a translation of its own, which L2 and L3 never call
(their players' actions come from the reference side). In the states of reference games, the
actions the JAX heuristic (and the random player) can choose are exactly the candidates the
reference's choice is drawn from."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

from envport.envs.tcg_pocket import agents
from envport.envs.tcg_pocket.dealt import pool_deck_list
from envport.envs.tcg_pocket.game import TcgPocketGame
from envport.envs.tcg_pocket.jax_engine import agents as jax_agents
from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge
from envport.envs.tcg_pocket.reference import TcgPocketReference
from envport.envs.tcg_pocket.spec_support import POOL

GAMES = 6
# Both players draw uniformly from at most a few dozen actions (the heuristic's largest set in
# these games holds 5): with this many keys a candidate of a set of 40 is missed with
# probability below 1e-20 per state.
KEYS = 2048


class Candidates:
    """A stand-in chooser (``agents.Chooser``) for the reference's players: records the set a
    choice is drawn from and returns its first element (so the game goes on deterministically)."""

    def __init__(self) -> None:
        self.drawn_from: list[int] | None = None

    def choice(self, seq: list[int], stream: str) -> int:
        self.drawn_from = [int(a) for a in seq]
        return int(seq[0])


def reference_candidates(player: Any, game: TcgPocketGame, who: int) -> set[int]:
    rng = Candidates()
    action = player(game, who, rng)  # type: ignore[arg-type]
    return set(rng.drawn_from) if rng.drawn_from is not None else {action}


@pytest.fixture(scope="module")
def decisions() -> list[tuple[dict[str, np.ndarray], set[int], set[int]]]:
    """Every decision of ``GAMES`` reference games of the pool's decks (player 0 random,
    player 1 the heuristic, both drawing from a seeded generator): the state, and the
    reference heuristic's and random player's candidates in it."""
    decks, play = pool_deck_list(POOL), np.random.default_rng(7)
    out = []
    for g in range(GAMES):
        ref = TcgPocketReference(pool=POOL)
        ref.decks = (decks[2 * g], decks[2 * g + 1])
        ref.reset(100 + g)
        while (who := ref.game.to_act()) is not None:
            out.append((ref.get_state(), reference_candidates(agents.heuristic_action,
                                                              ref.game, who),
                        reference_candidates(agents.random_action, ref.game, who)))
            player = agents.random_action if who == 0 else agents.heuristic_action
            ref.step(player(ref.game, who, play))
    return out


def jax_candidates(player: Any, states: list[dict[str, np.ndarray]]) -> list[set[int]]:
    bridge, keys = TcgPocketBridge(), jax.random.split(jax.random.key(0), KEYS)
    choose = jax.jit(jax.vmap(player, in_axes=(0, None)))
    return [set(np.asarray(choose(keys, bridge.to_jax(s))).tolist()) for s in states]


def test_games_reach_the_heuristics_branches(decisions) -> None:
    # plays, attaches to the Active and the Bench, attacks, ends, forced choices: each rule
    # of the heuristic decides somewhere in these games, or the comparison below is thin
    sizes = [len(h) for _, h, _ in decisions]
    assert len(decisions) > 300
    assert sum(n == 1 for n in sizes) > 100 and sum(n > 1 for n in sizes) > 50


def test_jax_heuristic_draws_from_the_reference_heuristics_candidates(decisions) -> None:
    got = jax_candidates(jax_agents.heuristic_action, [s for s, _, _ in decisions])
    wrong = [(i, sorted(h), sorted(j)) for i, ((_, h, _), j) in enumerate(zip(decisions, got,
                                                                              strict=True))
             if h != j]
    assert not wrong, f"{len(wrong)} of {len(decisions)} states differ, first (state, " \
                      f"reference, jax): {wrong[:3]}"


def test_jax_random_player_draws_from_the_legal_actions(decisions) -> None:
    got = jax_candidates(jax_agents.random_action, [s for s, _, _ in decisions])
    assert all(r == j for (_, _, r), j in zip(decisions, got, strict=True))
