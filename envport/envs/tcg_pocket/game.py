"""A two-player API around the rules: per-player observations with hidden information hidden,
turn-taking, integer actions with masks.

    game = TcgPocketGame(RulesConfig())
    obs = game.reset(seed, decks=(deck0, deck1))  # {0: obs of player 0, 1: obs of player 1}
    while not game.done:
        p = game.to_act()                          # whose decision it is (setup, turns, choices)
        mask = game.action_mask(p)                 # bool[N_ACTIONS]; all False for the other
        result = game.step(p, action)              # IllegalAction (a ValueError) with the reason
    result.rewards                                 # (+1, -1), (-1, +1) or (0, 0) at the end

Randomness comes from one :class:`~envport.envs.tcg_pocket.rng.Rng` (``rng=`` injects one, e.g.
a ``ReplayRng``); ``game.rng.tape`` lists every draw so far.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from envport.envs.tcg_pocket import rules
from envport.envs.tcg_pocket.actions import N_ACTIONS, decode
from envport.envs.tcg_pocket.cards import ENERGY_TYPES
from envport.envs.tcg_pocket.config import RulesConfig
from envport.envs.tcg_pocket.deck import Deck
from envport.envs.tcg_pocket.rng import Rng
from envport.envs.tcg_pocket.state import GameState, InPlay, Player

PLAYERS = (0, 1)


@dataclass
class StepResult:
    observations: dict[int, dict[str, Any]]
    rewards: tuple[float, float]
    terminated: bool
    info: dict[str, Any]


class TcgPocketGame:
    def __init__(self, config: RulesConfig | None = None):
        self.config = config or RulesConfig()
        self.state: GameState | None = None

    # -- lifecycle
    def reset(self, seed: int, decks: tuple[Deck, Deck], rng: Rng | None = None
              ) -> dict[int, dict[str, Any]]:
        self.rng = rng if rng is not None else Rng(seed)
        self.state = rules.new_game(decks, self.config, self.rng)
        return self.observations()

    @property
    def _s(self) -> GameState:
        if self.state is None:
            raise RuntimeError("call reset(seed, decks) first")
        return self.state

    @property
    def done(self) -> bool:
        return self._s.over

    def to_act(self) -> int | None:
        return self._s.to_act()

    # -- actions
    def why_illegal(self, player: int, action: int) -> str | None:
        try:
            a = decode(action)
        except ValueError as e:
            return str(e)
        return rules.problem(self._s, player, a)

    def action_mask(self, player: int) -> np.ndarray:
        mask = np.zeros(N_ACTIONS, dtype=bool)
        if self._s.to_act() == player:
            for i in range(N_ACTIONS):
                mask[i] = rules.problem(self._s, player, decode(i)) is None
        return mask

    def legal_actions(self, player: int) -> list[int]:
        return [int(i) for i in np.flatnonzero(self.action_mask(player))]

    def step(self, player: int, action: int) -> StepResult:
        s = self._s
        if not 0 <= int(action) < N_ACTIONS:
            raise rules.IllegalAction(f"player {player}: action {action} is outside "
                                      f"0..{N_ACTIONS - 1}")
        rules.apply(s, player, decode(int(action)))
        rewards = (0.0, 0.0)
        if s.over and s.winner in PLAYERS:
            rewards = (1.0, -1.0) if s.winner == 0 else (-1.0, 1.0)
        return StepResult(self.observations(), rewards, s.over,
                          {"winner": s.winner, "end_reason": s.end_reason, "turn": s.turn})

    # -- observations
    def observations(self) -> dict[int, dict[str, Any]]:
        return {p: self.observe(p) for p in PLAYERS}

    def observe(self, player: int) -> dict[str, Any]:
        """What ``player`` may know: their own hand, both boards, counts of hidden zones; during
        setup the opponent's placements stay hidden until both players are done."""
        s = self._s
        hide_board = s.stage == "setup"
        pending = s.pending[0] if s.pending else None
        return {
            "player": player, "turn": s.turn, "current": s.current, "first": s.first,
            "to_act": s.to_act(), "stage": s.stage,
            "decision": None if pending is None or pending.player != player else pending.kind,
            "winner": s.winner,
            "me": side_view(s.players[player], own=True, hide_board=False),
            "opponent": side_view(s.players[1 - player], own=False, hide_board=hide_board),
        }

    def snapshot(self) -> GameState:
        return copy.deepcopy(self._s)


def pokemon_view(p: InPlay | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"name": p.name, "stack": list(p.stack), "hp": rules.hp(p), "damage": p.damage,
            "energy": {t: k for t, k in zip(ENERGY_TYPES, p.energy, strict=True) if k},
            "conditions": sorted(p.conditions)}


def side_view(pl: Player, own: bool, hide_board: bool) -> dict[str, Any]:
    view: dict[str, Any] = {
        "deck_size": len(pl.deck), "hand_size": len(pl.hand), "discard": list(pl.discard),
        "points": pl.points, "energy_types": list(pl.energy_types),
        "energy_current": pl.energy_current, "energy_next": pl.energy_next,
        "active": None if hide_board else pokemon_view(pl.active),
        "bench": [None] * 3 if hide_board else [pokemon_view(b) for b in pl.bench],
    }
    if own:
        view["hand"] = list(pl.hand)
        view["revealed"] = {k: list(v) for k, v in pl.revealed.items()}
    return view
