"""The card table (``cards.json``) as read-only records, and which effects the engine supports.

A card is identified by its name (all printings of a name carry the same game data); ``by_id``
maps a printing id (``a1-001``, ``p-a-005``) to its name.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENERGY_TYPES = ("Grass", "Fire", "Water", "Lightning", "Psychic", "Fighting", "Darkness", "Metal")
ENERGY_INDEX = {t: i for i, t in enumerate(ENERGY_TYPES)}
FOSSIL_HP = 40

# Attack templates the engine implements (rules.py); any other effect makes its card unsupported.
SUPPORTED_TEMPLATES = frozenset({
    "status", "coin_status", "heal_self", "discard_energy", "recoil", "multi_coin",
    "coin_bonus", "coin_fail", "bench_damage", "per_count", "bonus_if",
    "discard_opponent_energy", "draw", "flip_until_tails", "all_heads_bonus",
    "coin_bonus_or_recoil", "reveal_hand", "snipe", "defending_effect", "self_effect",
    "zone_attach", "search_hand", "search_bench", "switch_opponent", "switch_self",
    "block_supporters", "discard_opponent_hand", "heal_dealt", "own_bench_damage",
})
TRAINER_EFFECTS = frozenset({
    "fossil", "erika", "misty", "blaine", "koga", "giovanni", "brock", "sabrina", "lt_surge",
    "potion", "x_speed", "hand_scope", "pokedex", "poke_ball", "red_card",
    "professors_research",
})


@dataclass(frozen=True)
class Attack:
    name: str
    cost: tuple[str, ...]
    damage: int
    damage_mode: str  # "" fixed, "+" base plus effect, "x" effect multiplies
    text: str | None
    effect: dict[str, Any] | None  # {"id": "T06", "template": "multi_coin", ...}


@dataclass(frozen=True)
class Card:
    name: str
    ids: tuple[str, ...]
    kind: str  # pokemon | item | supporter | fossil
    stage: int = 0
    type: str | None = None
    hp: int = 0
    retreat: int = 0
    weakness: str | None = None
    evolves_from: str | None = None
    ex: bool = False
    attacks: tuple[Attack, ...] = ()
    ability: str | None = None
    effect: str | None = None  # Trainers: the effect id rules.py implements
    unsupported: tuple[str, ...] = ()  # why the engine cannot play this card (empty: it can)

    @property
    def is_pokemon(self) -> bool:
        return self.kind == "pokemon"

    @property
    def is_basic(self) -> bool:
        return self.kind == "pokemon" and self.stage == 0

    @property
    def supported(self) -> bool:
        return not self.unsupported


def _card(entry: dict[str, Any]) -> Card:
    ids = tuple(entry["ids"])
    if entry["kind"] != "pokemon":
        unsupported = [] if entry["effect"] in TRAINER_EFFECTS else [f"effect {entry['effect']}"]
        return Card(name=entry["name"], ids=ids, kind=entry["kind"], effect=entry["effect"],
                    unsupported=tuple(unsupported))
    attacks = tuple(Attack(a["name"], tuple(a["cost"]), a["damage"], a["damage_mode"], a["text"],
                           a["effect"]) for a in entry["attacks"])
    unsupported = list(entry["unsupported"])
    for a in attacks:  # a template the table knows but the engine does not (yet)
        if a.effect is not None and a.effect["template"] not in SUPPORTED_TEMPLATES:
            unsupported.append(f"attack {a.name}: template {a.effect['template']}")
    return Card(name=entry["name"], ids=ids, kind="pokemon", stage=entry["stage"],
                type=entry["type"], hp=entry["hp"], retreat=entry["retreat"],
                weakness=entry["weakness"], evolves_from=entry["evolves_from"], ex=entry["ex"],
                attacks=attacks, ability=(entry["ability"] or {}).get("name"),
                unsupported=tuple(unsupported))


@dataclass(frozen=True)
class CardTable:
    cards: dict[str, Card]
    by_id: dict[str, str]

    def __getitem__(self, name: str) -> Card:
        return self.cards[name]

    def __contains__(self, name: object) -> bool:
        return name in self.cards

    def resolve(self, name_or_id: str) -> str | None:
        """The card name of a name or a printing id; None if the pool has neither."""
        if name_or_id in self.cards:
            return name_or_id
        return self.by_id.get(name_or_id)

    def supported(self) -> list[Card]:
        return [c for c in self.cards.values() if c.supported]

    def unsupported(self) -> list[Card]:
        return [c for c in self.cards.values() if not c.supported]


TABLE_PATH = Path(__file__).resolve().parent / "cards.json"


@functools.cache
def load_table(path: str | None = None) -> CardTable:
    data = json.loads(Path(path or TABLE_PATH).read_text())
    cards = {e["name"]: _card(e) for e in data["cards"]}
    by_id = {i: c.name for c in cards.values() for i in c.ids}
    return CardTable(cards, by_id)
