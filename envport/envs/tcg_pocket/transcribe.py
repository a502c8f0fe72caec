"""Transcribe the Genetic Apex (A1) card list into the project's own card table, ``cards.json``.

    python -m envport.envs.tcg_pocket.transcribe [--source PATH] [--out PATH] [--check]

The source is the community data set described in ``shared/data/tcg/README.md`` (ISC licence,
Hugo Burguete; see this folder's README). Only facts are carried over: names, stages, types, HP,
costs, damage, weakness, retreat cost, evolves-from, and the attack text, from which each attack's
effect template is read here, once, by the patterns below. All printings of one name carry
identical game data (the data set's README), so the table has one entry per name with the ids of
its printings. Trainer effects are not in the source: they come from the rules specification
(section 8), as do the seven Promo-A Trainers (ids ``p-a-001`` ... ``p-a-007``).

``--check`` regenerates in memory and exits 1 if ``--out`` differs (the test runs this).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "cards.json"
SOURCE_NAME = "a1-genetic-apex.json"
ENERGY_WORDS = ("Grass", "Fire", "Water", "Lightning", "Psychic", "Fighting", "Darkness",
                "Metal")
SYMBOLS = {"[G]": "Grass", "[R]": "Fire", "[W]": "Water", "[L]": "Lightning", "[P]": "Psychic",
           "[F]": "Fighting", "[D]": "Darkness", "[M]": "Metal"}
CONDITION = {"Asleep": "asleep", "Poisoned": "poisoned", "Paralyzed": "paralyzed",
             "Burned": "burned", "Confused": "confused"}
NUMBER = {"a": 1, "an": 1, "1": 1, "2": 2, "3": 3, "4": 4}

# Trainers: effect ids implemented in rules.py, texts from the specification (section 8).
A1_TRAINERS = {
    "Helix Fossil": ("fossil", "Play as a 40-HP Basic Colorless Pokémon; evolves into Omanyte."),
    "Dome Fossil": ("fossil", "Play as a 40-HP Basic Colorless Pokémon; evolves into Kabuto."),
    "Old Amber": ("fossil", "Play as a 40-HP Basic Colorless Pokémon; evolves into Aerodactyl."),
    "Erika": ("erika", "Heal 50 damage from 1 of your Grass Pokémon."),
    "Misty": ("misty", "Choose 1 of your Water Pokémon, flip a coin until you get tails; for "
              "each heads attach a Water Energy from your Energy Zone to it."),
    "Blaine": ("blaine", "This turn, attacks by your Ninetales, Rapidash or Magmar do +30 "
               "damage to your opponent's Active Pokémon."),
    "Koga": ("koga", "Put your Muk or Weezing in the Active Spot into your hand."),
    "Giovanni": ("giovanni", "This turn, your attacks do +10 damage to your opponent's Active "
                 "Pokémon."),
    "Brock": ("brock", "Take a Fighting Energy from your Energy Zone and attach it to Golem or "
              "Onix."),
    "Sabrina": ("sabrina", "Switch out your opponent's Active Pokémon to the Bench (your "
                "opponent chooses the new Active Pokémon)."),
    "Lt. Surge": ("lt_surge", "Move all Lightning Energy from your Benched Pokémon to your "
                  "Active Raichu, Electrode or Electabuzz."),
}
PROMO_A = [  # (id, name, kind, effect id, text), in the specification's order
    ("p-a-001", "Potion", "item", "potion", "Heal 20 damage from 1 of your Pokémon."),
    ("p-a-002", "X Speed", "item", "x_speed", "During this turn, the Retreat Cost of your "
     "Active Pokémon is 1 less."),
    ("p-a-003", "Hand Scope", "item", "hand_scope", "Your opponent reveals their hand."),
    ("p-a-004", "Pokédex", "item", "pokedex", "Look at the top 3 cards of your deck."),
    ("p-a-005", "Poké Ball", "item", "poke_ball", "Put 1 random Basic Pokémon from your deck "
     "into your hand."),
    ("p-a-006", "Red Card", "item", "red_card", "Your opponent shuffles their hand into their "
     "deck and draws 3 cards."),
    ("p-a-007", "Professor's Research", "supporter", "professors_research", "Draw 2 cards."),
]
FOSSIL_EVOLUTIONS = {"Helix Fossil", "Dome Fossil", "Old Amber"}


def _energy(word: str) -> str:
    word = SYMBOLS.get(word, word)
    if word not in ENERGY_WORDS:
        raise ValueError(f"unknown Energy word {word!r}")
    return word


# ---------------------------------------------------------------- attack effect templates
# Each pattern is the full effect text; a match gives (template, parameters). The order only
# matters where two patterns could both match (none do today; the test checks it).
E = "(Grass|Fire|Water|Lightning|Psychic|Fighting|Darkness|Metal|\\[[GRWLPFDM]\\])"
PATTERNS: list[tuple[str, str, Any]] = [
    ("T01", r"Your opponent's Active Pokémon is now (Asleep|Poisoned|Paralyzed|Burned|Confused)\.",
     lambda m: {"template": "status", "condition": CONDITION[m[1]]}),
    ("T02", r"Flip a coin\. If heads, your opponent's Active Pokémon is now "
     r"(Asleep|Poisoned|Paralyzed|Burned|Confused)\.",
     lambda m: {"template": "coin_status", "condition": CONDITION[m[1]]}),
    ("T03", r"Heal (\d+) damage from this Pokémon\.",
     lambda m: {"template": "heal_self", "amount": int(m[1])}),
    ("T04", r"Discard (a|an|1|2|3) " + E + r" Energy from this Pokémon\.",
     lambda m: {"template": "discard_energy", "count": NUMBER[m[1]], "energy": _energy(m[2])}),
    ("T04", r"Discard all Energy from this Pokémon\.",
     lambda m: {"template": "discard_energy", "count": "all", "energy": None}),
    ("T05", r"This Pokémon also does (\d+) damage to itself\.",
     lambda m: {"template": "recoil", "amount": int(m[1])}),
    ("T06", r"Flip (\d) coins\. This attack does (\d+) damage for each heads\.",
     lambda m: {"template": "multi_coin", "coins": int(m[1]), "per_heads": int(m[2])}),
    ("T07", r"Flip a coin\. If heads, this attack does (\d+) more damage\.",
     lambda m: {"template": "coin_bonus", "bonus": int(m[1])}),
    ("T08", r"Flip a coin\. If tails, this attack does nothing\.",
     lambda m: {"template": "coin_fail"}),
    ("T09", r"This attack also does (\d+) damage to each of your opponent's Benched Pokémon\.",
     lambda m: {"template": "bench_damage", "amount": int(m[1])}),
    ("T10", r"This attack does (\d+) (?:more )?damage for each Energy attached to your "
     r"opponent's Active Pokémon\.",
     lambda m: {"template": "per_count", "per": int(m[1]), "count": "opponent_active_energy"}),
    ("T10", r"This attack does (\d+) (?:more )?damage for each of your Benched "
     r"(?:(Grass|Fire|Water|Lightning|Psychic|Fighting|Darkness|Metal) )?Pokémon\.",
     lambda m: {"template": "per_count", "per": int(m[1]), "count": "own_bench",
                "energy": m[2], "name": None}),
    ("T10", r"This attack does (\d+) more damage for each of your Benched ([A-Z][a-z]+)\.",
     lambda m: {"template": "per_count", "per": int(m[1]), "count": "own_bench",
                "energy": None, "name": m[2]}),
    ("T11", r"If this Pokémon has at least (\d) extra " + E + r" Energy attached, this attack "
     r"does (\d+) more damage\.",
     lambda m: {"template": "bonus_if", "bonus": int(m[3]), "predicate": "extra_energy",
                "count": int(m[1]), "energy": _energy(m[2])}),
    ("T11", r"If this Pokémon has damage on it, this attack does (\d+) more damage\.",
     lambda m: {"template": "bonus_if", "bonus": int(m[1]), "predicate": "self_damaged"}),
    ("T11", r"If your opponent's Active Pokémon has damage on it, this attack does (\d+) more "
     r"damage\.",
     lambda m: {"template": "bonus_if", "bonus": int(m[1]), "predicate": "opponent_damaged"}),
    ("T11", r"If your opponent's Active Pokémon is Poisoned, this attack does (\d+) more "
     r"damage\.",
     lambda m: {"template": "bonus_if", "bonus": int(m[1]), "predicate": "opponent_poisoned"}),
    ("T15", r"Discard a random Energy from your opponent's Active Pokémon\.",
     lambda m: {"template": "discard_opponent_energy", "coin": False}),
    ("T15", r"Flip a coin\. If heads, discard a random Energy from your opponent's Active "
     r"Pokémon\.",
     lambda m: {"template": "discard_opponent_energy", "coin": True}),
    ("T16", r"Draw 1 card\.", lambda m: {"template": "draw", "count": 1}),
    ("X01", r"Flip a coin until you get tails\. This attack does (\d+) damage for each heads\.",
     lambda m: {"template": "flip_until_tails", "per_heads": int(m[1])}),
    ("X02", r"Flip 2 coins\. If both of them are heads, this attack does (\d+) more damage\.",
     lambda m: {"template": "all_heads_bonus", "coins": 2, "bonus": int(m[1])}),
    ("X03", r"Flip a coin\. If heads, this attack does (\d+) more damage\. If tails, this "
     r"Pokémon also does (\d+) damage to itself\.",
     lambda m: {"template": "coin_bonus_or_recoil", "bonus": int(m[1]), "recoil": int(m[2])}),
    ("X04", r"Your opponent reveals their hand\.",
     lambda m: {"template": "reveal_hand"}),
    ("T12", r"This attack does (\d+) damage to 1 of your opponent's Pokémon\.",
     lambda m: {"template": "snipe", "amount": int(m[1]), "bench_only": False}),
    ("T12", r"This attack does (\d+) damage to 1 of your opponent's Benched Pokémon\.",
     lambda m: {"template": "snipe", "amount": int(m[1]), "bench_only": True}),
    ("T13", r"During your opponent's next turn, attacks used by the Defending Pokémon do "
     r"-(\d+) damage\.",
     lambda m: {"template": "defending_effect", "effect": "attack_minus", "amount": int(m[1]),
                "coin": False}),
    ("T13", r"During your opponent's next turn, the Defending Pokémon can't attack\.",
     lambda m: {"template": "defending_effect", "effect": "cannot_attack", "amount": 0,
                "coin": False}),
    ("T13", r"Flip a coin\. If heads, the Defending Pokémon can't attack during your "
     r"opponent's next turn\.",
     lambda m: {"template": "defending_effect", "effect": "cannot_attack", "amount": 0,
                "coin": True}),
    ("T13", r"During your opponent's next turn, the Defending Pokémon can't retreat\.",
     lambda m: {"template": "defending_effect", "effect": "cannot_retreat", "amount": 0,
                "coin": False}),
    ("T13", r"During your opponent's next turn, this Pokémon takes -(\d+) damage from "
     r"attacks\.",
     lambda m: {"template": "self_effect", "effect": "takes_minus", "amount": int(m[1]),
                "coin": False}),
    ("T13", r"Flip a coin\. If heads, during your opponent's next turn, prevent all damage "
     r"from—and effects of—attacks done to this Pokémon\.",
     lambda m: {"template": "self_effect", "effect": "prevent_all", "amount": 0,
                "coin": True}),
    ("T14", r"Take (a|an|1) " + E + r" Energy from your Energy Zone and attach it to this "
     r"Pokémon\.",
     lambda m: {"template": "zone_attach", "energy": _energy(m[2]), "coins": 0, "count": 1,
                "target": "self", "target_type": None}),
    ("T14", r"Take (a|an|1) " + E + r" Energy from your Energy Zone and attach it to 1 of your "
     r"Benched (Grass|Fire|Water|Lightning|Psychic|Fighting|Darkness|Metal) Pokémon\.",
     lambda m: {"template": "zone_attach", "energy": _energy(m[2]), "coins": 0, "count": 1,
                "target": "bench", "target_type": m[3]}),
    ("T14", r"Flip (\d) coins\. Take an amount of " + E + r" Energy from your Energy Zone "
     r"equal to the number of heads and attach it to your Benched "
     r"(Grass|Fire|Water|Lightning|Psychic|Fighting|Darkness|Metal) Pokémon in any way you "
     r"like\.",
     lambda m: {"template": "zone_attach", "energy": _energy(m[2]), "coins": int(m[1]),
                "count": 0, "target": "bench", "target_type": m[3]}),
    ("T16", r"Put 1 random (Grass|Fire|Water|Lightning|Psychic|Fighting|Darkness|Metal) Pokémon "
     r"from your deck into your hand\.",
     lambda m: {"template": "search_hand", "type": m[1]}),
    ("T16", r"Put 1 random (.+) from your deck onto your Bench\.",
     lambda m: {"template": "search_bench", "name": m[1]}),
    ("T17", r"Switch out your opponent's Active Pokémon to the Bench\. \(Your opponent "
     r"chooses the new Active Pokémon\.\)",
     lambda m: {"template": "switch_opponent"}),
    ("T17", r"Switch this Pokémon with 1 of your Benched Pokémon\.",
     lambda m: {"template": "switch_self"}),
    ("X05", r"Your opponent can't use any Supporter cards from their hand during their next "
     r"turn\.",
     lambda m: {"template": "block_supporters"}),
    ("X06", r"Flip a coin\. If heads, discard a random card from your opponent's hand\.",
     lambda m: {"template": "discard_opponent_hand", "coin": True}),
    ("X07", r"Heal from this Pokémon the same amount of damage you did to your opponent's "
     r"Active Pokémon\.",
     lambda m: {"template": "heal_dealt"}),
    ("X08", r"This attack also does (\d+) damage to 1 of your Benched Pokémon\.",
     lambda m: {"template": "own_bench_damage", "amount": int(m[1])}),
]


def parse_effect(text: str) -> tuple[str, dict[str, Any]] | None:
    """(template id, parameters) of an attack's effect text, or None if no template reads it."""
    hits = []
    for tid, pattern, build in PATTERNS:
        m = re.fullmatch(pattern, text)
        if m:
            hits.append((tid, build(m)))
    if len(hits) > 1:
        raise ValueError(f"effect text matches {len(hits)} templates: {text!r}")
    return hits[0] if hits else None


def parse_damage(text: str) -> tuple[int, str]:
    """``"60"`` -> (60, ""), ``"40+"`` -> (40, "+"), ``"30x"`` -> (30, "x"), ``""`` -> (0, "")."""
    if text == "":
        return 0, ""
    m = re.fullmatch(r"(\d+)([+x]?)", text)
    if not m:
        raise ValueError(f"damage text {text!r}")
    return int(m[1]), m[2]


def pokemon_entry(card: dict[str, Any]) -> dict[str, Any]:
    attacks, unsupported = [], []
    for a in card["attacks"]:
        base, mode = parse_damage(a["damage"])
        text = a.get("effect")
        effect = None
        if text is not None:
            parsed = parse_effect(text)
            if parsed is None:
                unsupported.append(f"attack {a['name']}: {text}")
            else:
                effect = {"id": parsed[0], **parsed[1]}
        attacks.append({"name": a["name"], "cost": list(a["cost"]), "damage": base,
                        "damage_mode": mode, "text": text, "effect": effect})
    ability = None
    if card["abilities"]:
        ab = card["abilities"][0]
        ability = {"name": ab["name"], "text": ab["effect"]}
        unsupported.append(f"ability {ab['name']}")
    stage = {"Basic": 0, "Stage 1": 1, "Stage 2": 2}[card["subtype"]]
    return {"name": card["name"], "ids": [card["id"]], "kind": "pokemon", "stage": stage,
            "type": card["element"], "hp": card["health"], "retreat": card["retreatCost"],
            "weakness": card["weakness"], "evolves_from": card["evolvesFrom"],
            "ex": card["name"].endswith(" ex"), "attacks": attacks, "ability": ability,
            "unsupported": unsupported}


def trainer_entry(card_id: str, name: str, kind: str, effect: str, text: str) -> dict[str, Any]:
    return {"name": name, "ids": [card_id], "kind": kind, "effect": effect, "text": text,
            "unsupported": []}


def transcribe(source: list[dict[str, Any]]) -> dict[str, Any]:
    by_name: dict[str, dict[str, Any]] = {}
    for card in source:
        if card["type"] == "Pokemon":
            entry = pokemon_entry(card)
        else:
            effect, text = A1_TRAINERS[card["name"]]
            kind = "fossil" if effect == "fossil" else card["subtype"].lower()
            entry = trainer_entry(card["id"], card["name"], kind, effect, text)
        seen = by_name.get(card["name"])
        if seen is None:
            by_name[card["name"]] = entry
            continue
        ids = seen.pop("ids")
        if {k: v for k, v in entry.items() if k != "ids"} != seen:
            raise ValueError(f"printings of {card['name']} differ: {ids} and {card['id']}")
        seen["ids"] = [*ids, card["id"]]
        seen.update({k: seen.pop(k) for k in list(seen) if k != "ids"})  # keep key order stable
        by_name[card["name"]] = {k: seen[k] for k in entry}
    for card_id, name, kind, effect, text in PROMO_A:
        by_name[name] = trainer_entry(card_id, name, kind, effect, text)
    cards = sorted(by_name.values(), key=lambda c: c["ids"][0])
    return {"source": "hugoburguete/pokemon-tcg-pocket-card-database cards/en/"
                      "a1-genetic-apex.json @ ce218bdc2133e74683cecd99954f8a7b7189597e (ISC); "
                      "Trainer effects and Promo-A entries from the project's rules spec",
            "generated_by": "python -m envport.envs.tcg_pocket.transcribe",
            "cards": cards}


def find_source() -> Path | None:
    """The shared data file: $ENVPORT_TCG_DATA, else a ``shared/data/tcg`` beside or above the
    repository (worktrees sit one level deeper than the main checkout)."""
    if os.environ.get("ENVPORT_TCG_DATA"):
        return Path(os.environ["ENVPORT_TCG_DATA"])
    root = HERE.parents[2]
    for up in (root.parent, root.parent.parent):
        p = up / "shared" / "data" / "tcg" / SOURCE_NAME
        if p.exists():
            return p
    return None


def render(table: dict[str, Any]) -> str:
    return json.dumps(table, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    source = args.source or find_source()
    if source is None or not source.exists():
        print(f"--source: {source or SOURCE_NAME} not found (set ENVPORT_TCG_DATA)",
              file=sys.stderr)
        return 2
    text = render(transcribe(json.loads(source.read_text())))
    if args.check:
        same = args.out.exists() and args.out.read_text() == text
        print(f"{args.out}: {'up to date' if same else 'differs from a fresh transcription'}")
        return 0 if same else 1
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
