"""The card table (reference ``cards.py``) as arrays indexed by card id (1 + the position in
``reference/cards.json``; 0 is "no card"), read once at import; jitted code closes over them
as constants."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ENERGY_TYPES = ("Grass", "Fire", "Water", "Lightning", "Psychic", "Fighting", "Darkness", "Metal")
TYPES = (*ENERGY_TYPES, "Colorless", "Dragon")  # a Pokémon's type; Weakness is one of these
COLORLESS = TYPES.index("Colorless")
KIND_NAMES = ("pokemon", "item", "supporter", "fossil")
MAX_ATTACKS = 2
TABLE_PATH = Path(__file__).resolve().parents[1] / "cards.json"

_cards = json.loads(TABLE_PATH.read_text())["cards"]
N_CARDS = len(_cards)
NAMES = ("", *(c["name"] for c in _cards))

KIND = np.zeros(N_CARDS + 1, np.int8)
STAGE = np.zeros(N_CARDS + 1, np.int8)
TYPE = np.full(N_CARDS + 1, -1, np.int8)
HP = np.zeros(N_CARDS + 1, np.int16)
RETREAT = np.zeros(N_CARDS + 1, np.int8)
WEAKNESS = np.full(N_CARDS + 1, -1, np.int8)
EX = np.zeros(N_CARDS + 1, bool)
N_ATK = np.zeros(N_CARDS + 1, np.int8)
ATK_TYPED = np.zeros((N_CARDS + 1, MAX_ATTACKS, len(ENERGY_TYPES)), np.int8)
ATK_COLORLESS = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int8)
ATK_DAMAGE = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int16)
ATK_PLAIN = np.zeros((N_CARDS + 1, MAX_ATTACKS), bool)  # printed damage only, no effect text
EVOLVES_FROM = np.zeros(N_CARDS + 1, np.int16)  # the card id it evolves from, 0: none
NO_ABILITY = np.zeros(N_CARDS + 1, bool)  # a Pokémon without an Ability (none is supported)
KIND[0] = -1
for _i, _c in enumerate(_cards, start=1):
    KIND[_i] = KIND_NAMES.index(_c["kind"])
    if _c["kind"] != "pokemon":
        continue
    NO_ABILITY[_i] = _c["ability"] is None and not _c["unsupported"]
    STAGE[_i] = _c["stage"]
    TYPE[_i] = TYPES.index(_c["type"])
    HP[_i] = _c["hp"]
    RETREAT[_i] = _c["retreat"]
    WEAKNESS[_i] = -1 if _c["weakness"] is None else TYPES.index(_c["weakness"])
    EX[_i] = bool(_c["ex"])
    N_ATK[_i] = len(_c["attacks"])
    for _j, _a in enumerate(_c["attacks"]):
        for _s in _a["cost"]:
            if _s == "Colorless":
                ATK_COLORLESS[_i, _j] += 1
            else:
                ATK_TYPED[_i, _j, ENERGY_TYPES.index(_s)] += 1
        ATK_DAMAGE[_i, _j] = _a["damage"]
        ATK_PLAIN[_i, _j] = _a["effect"] is None and _a["damage_mode"] == ""
_ID = {name: i for i, name in enumerate(NAMES) if i}
for _i, _c in enumerate(_cards, start=1):
    if _c["kind"] == "pokemon" and _c["evolves_from"] is not None:
        EVOLVES_FROM[_i] = _ID.get(_c["evolves_from"], -1)  # -1: not in the pool
IS_POKEMON = KIND == 0
IS_BASIC = IS_POKEMON & (STAGE == 0)
PLAIN = IS_POKEMON & NO_ABILITY & np.all(ATK_PLAIN | (np.arange(MAX_ATTACKS) >= N_ATK[:, None]),
                                         axis=1)
# Plain Pokémon (any stage) and plain Basics: no Ability, every attack printed damage only
# (the reference's ``plain`` and ``basic`` pools)
PLAIN_BASIC = IS_BASIC & NO_ABILITY & np.all(ATK_PLAIN | (np.arange(MAX_ATTACKS) >= N_ATK[:, None]),
                                              axis=1)
