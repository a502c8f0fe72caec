"""Build game states by hand for the rule tests: boards, hands and a scripted tape of draws
(every coin and Energy roll the test expects, in order; ReplayRng fails on any other draw)."""

from __future__ import annotations

from collections.abc import Iterable

from envport.envs.tcg_pocket import rules
from envport.envs.tcg_pocket.actions import Action
from envport.envs.tcg_pocket.cards import ENERGY_INDEX
from envport.envs.tcg_pocket.config import RulesConfig
from envport.envs.tcg_pocket.rng import ReplayRng
from envport.envs.tcg_pocket.state import GameState, InPlay, Player

FILLER = ["Potion"] * 10  # deck cards to draw that play no part in a test


def mon(name: str, energy: dict[str, int] | None = None, damage: int = 0,
        conditions: Iterable[str] = (), entered: int = 0,
        below: Iterable[str] = ()) -> InPlay:
    p = InPlay(stack=[*below, name], entered_turn=entered, damage=damage,
               conditions=set(conditions))
    for t, k in (energy or {}).items():
        p.energy[ENERGY_INDEX[t]] = k
    return p


def side(active: InPlay | None = None, bench: Iterable[InPlay | None] = (),
         hand: Iterable[str] = (), deck: Iterable[str] | None = None,
         types: tuple[str, ...] = ("Grass",), current: str | None = None,
         nxt: str | None = "Grass", points: int = 0) -> Player:
    b = list(bench)
    pl = Player(deck=list(FILLER if deck is None else deck), energy_types=types,
                hand=list(hand), active=active, bench=b + [None] * (3 - len(b)),
                energy_current=current, energy_next=nxt, points=points)
    return pl


def game(p0: Player, p1: Player, turn: int = 3, current: int = 0,
         config: RulesConfig | None = None, draws: Iterable[tuple[str, int, int]] = (),
         first: int = 0) -> GameState:
    return GameState(config=config or RulesConfig(), players=[p0, p1], first=first,
                     current=current, turn=turn, stage="main", rng=ReplayRng(list(draws)))


def coin(heads: bool) -> tuple[str, int, int]:
    return ("coin", 2, int(heads))


def roll(n_types: int = 1, value: int = 0) -> tuple[str, int, int]:
    return ("energy", n_types, value)


def act(state: GameState, kind: str, a: int = 0, b: int = 0, player: int | None = None) -> None:
    rules.apply(state, state.current if player is None else player, Action(kind, a, b))


def why(state: GameState, kind: str, a: int = 0, b: int = 0,
        player: int | None = None) -> str | None:
    return rules.problem(state, state.current if player is None else player, Action(kind, a, b))
