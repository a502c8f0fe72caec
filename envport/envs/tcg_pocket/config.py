"""The specification's open points (section 10) as one configuration record.

Every field has the specification's default; a game records its config (``RulesConfig.to_json``)
so a saved game says which rules it was played under.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

CHOICES: dict[str, tuple[Any, ...]] = {
    "opening_hand_method": ("basic_first", "redraw_until_basic"),
    "first_player": ("coin", "p1"),
    "energy_roll": ("uniform",),
    "simultaneous_win": ("draw",),
    "promotion_order": ("non_current_first", "current_first"),
    "confusion_tails": ("nothing", "self_damage_30"),
    "retreat_discard_choice": ("player", "random"),
    "extra_energy_rule": ("spec",),
}


@dataclass(frozen=True)
class RulesConfig:
    # one uniformly random Basic from the deck, then 4 cards after shuffling the rest
    opening_hand_method: str = "basic_first"
    # "coin": a fair coin decides; "p1": player 0 always starts
    first_player: str = "coin"
    max_energy_types: int = 3
    # may the first player play a Supporter on turn 1?
    supporter_on_turn_1: bool = False
    energy_roll: str = "uniform"
    # a draw with this many cards in hand is skipped; None: no limit
    hand_limit: int | None = 10
    # does the limit also stop searches (Poké Ball)?
    hand_limit_applies_to_search: bool = False
    # the game is a draw when this global turn ends with no winner
    turn_limit: int = 30
    simultaneous_win: str = "draw"
    # after Knock Outs, who promotes first
    promotion_order: str = "non_current_first"
    # points for Knocking Out a fossil in play
    fossil_ko_points: int = 1
    # True: +20 Weakness, then reductions; False: reductions first (the simulator's order)
    weakness_before_reduction: bool = True
    # "nothing": a Confused attacker's tails ends the turn; "self_damage_30": paper TCG
    confusion_tails: str = "nothing"
    # "player": the retreating player chooses the Energy to discard; "random"
    retreat_discard_choice: str = "player"
    # may a card whose effect would change nothing be played?
    allow_no_effect_plays: bool = False
    extra_energy_rule: str = "spec"

    def __post_init__(self) -> None:
        for name, allowed in CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"RulesConfig.{name}={getattr(self, name)!r}: expected one of "
                                 f"{', '.join(map(repr, allowed))}")
        if self.max_energy_types < 1:
            raise ValueError("RulesConfig.max_energy_types must be at least 1")
        if self.hand_limit is not None and self.hand_limit < 1:
            raise ValueError("RulesConfig.hand_limit must be at least 1 (or None for no limit)")
        if self.turn_limit < 1:
            raise ValueError("RulesConfig.turn_limit must be at least 1")
        if self.fossil_ko_points not in (0, 1):
            raise ValueError("RulesConfig.fossil_ko_points must be 0 or 1")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RulesConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown RulesConfig flag(s): {', '.join(unknown)}")
        return cls(**data)
