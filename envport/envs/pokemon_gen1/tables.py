"""The generated Gen 1 tables (``data/*.json``) as numeric arrays, indexed the way the JAX state is.

Ids (all small integers, 0 meaning "none" where a slot may be empty):

* species: the National Dex number ``num`` (1..151); 0 = an empty team slot.
* moves: Showdown's ``num`` (1..165, Pound .. Struggle, contiguous in Gen 1); 0 = no move.
* types: the order of ``typechart.json``'s ``types`` (0..14); :data:`TYPE_NONE` (15) pads a
  single-typed Pokemon's second type, :data:`TYPE_TYPELESS` (16) is Showdown's ``???`` (no STAB,
  no effectiveness, no immunity: ``sim/pokemon.ts runImmunity``, ``scripts.ts getDamage``).

Everything here is numpy, built once at import from the JSON files, which are themselves written
from the pinned Showdown by ``generate_data.py`` (never by hand).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

DATA_DIR = Path(__file__).resolve().parent / "data"


def _load(name: str) -> dict[str, Any]:
    with open(DATA_DIR / name) as f:
        return json.load(f)


_TYPECHART = _load("typechart.json")
_SPECIES = _load("species.json")["species"]
_MOVES = _load("moves.json")["moves"]
_SETS = _load("random_battle_sets.json")

TYPES: tuple[str, ...] = tuple(_TYPECHART["types"])
TYPE_NONE = len(TYPES)  # 15
TYPE_TYPELESS = len(TYPES) + 1  # 16: '???'
N_TYPES = len(TYPES) + 2
TYPE_ID: dict[str, int] = {t: i for i, t in enumerate(TYPES)} | {"???": TYPE_TYPELESS}

# effectiveness[attack, defend] in {-1, 0, 1}; immune[attack, defend] (Dex.getEffectiveness /
# getImmunity per single defending type). The padding rows/columns are neutral.
EFFECTIVENESS = np.zeros((N_TYPES, N_TYPES), np.int8)
EFFECTIVENESS[: len(TYPES), : len(TYPES)] = np.asarray(_TYPECHART["effectiveness"], np.int8)
IMMUNE = np.zeros((N_TYPES, N_TYPES), np.bool_)
IMMUNE[: len(TYPES), : len(TYPES)] = np.asarray(_TYPECHART["immune"], np.bool_)

STAT_NAMES = ("hp", "atk", "def", "spa", "spd", "spe")
N_SPECIES = 152  # index 0 unused

SPECIES_IDS: dict[str, int] = {s["id"]: s["num"] for s in _SPECIES}
SPECIES_NAMES: dict[int, str] = {s["num"]: s["id"] for s in _SPECIES}
BASE_STATS = np.zeros((N_SPECIES, 6), np.int16)
SPECIES_TYPES = np.full((N_SPECIES, 2), TYPE_NONE, np.uint8)
for _s in _SPECIES:
    BASE_STATS[_s["num"]] = [_s["base_stats"][k] for k in STAT_NAMES]
    for _k, _t in enumerate(_s["types"]):
        SPECIES_TYPES[_s["num"], _k] = TYPE_ID[_t]

# ---- moves ------------------------------------------------------------------------------------

N_MOVES = 166  # index 0 = no move
# Showdown's pseudo-moves that can stand in ``side.lastSelectedMove`` (``state.EXTRA_MOVES``) get
# the ids after the real moves; the move tables have rows for them too, so that a queued
# pseudo-move reads defined data: 'cannotmove' priority 0 (``queue.resolveAction`` of an unknown
# id), and 'nomove' the ActiveMove ``mods/gen1/scripts.ts runMove`` makes of it (below).
EXTRA_MOVES = ("recharge", "cannotmove", "nomove")
N_MOVE_ROWS = N_MOVES + len(EXTRA_MOVES)
NOMOVE = N_MOVES + EXTRA_MOVES.index("nomove")
MOVE_IDS: dict[str, int] = {m["id"]: m["num"] for m in _MOVES}
MOVE_NAMES: dict[int, str] = {m["num"]: m["id"] for m in _MOVES}
MOVES: dict[str, dict[str, Any]] = {m["id"]: m for m in _MOVES}

CATEGORY_PHYSICAL, CATEGORY_SPECIAL, CATEGORY_STATUS = 0, 1, 2
_CATEGORY = {"Physical": CATEGORY_PHYSICAL, "Special": CATEGORY_SPECIAL, "Status": CATEGORY_STATUS}

# How getDamage (scripts.ts) finds a move's damage before the formula.
DAMAGE_FORMULA = 0  # the formula (steps 2-7)
DAMAGE_LEVEL = 1  # move.damage === 'level' (Seismic Toss, Night Shade)
DAMAGE_FIXED = 2  # move.damage a number (Dragon Rage 40, Sonic Boom 20)
DAMAGE_SUPERFANG = 3  # damageCallback: clampIntRange(target.hp / 2, 1)
DAMAGE_PSYWAVE = 4  # damageCallback: random(1, trunc(1.5 * level))
DAMAGE_COUNTER = 5  # damageCallback: 2 * battle.lastDamage if counterable
DAMAGE_OHKO = 6  # move.ohko: 65535

# Secondary effects (move.secondaries[0]; no Gen 1 move has two).
SECONDARY_NONE = 0
SECONDARY_STATUS = 1  # secondary.status (par, brn, frz, psn)
SECONDARY_FLINCH = 2
SECONDARY_CONFUSION = 3
SECONDARY_BOOST = 4

STATUS_NONE, STATUS_BRN, STATUS_FRZ, STATUS_PAR, STATUS_PSN, STATUS_TOX, STATUS_SLP, STATUS_FNT = (
    range(8))
STATUS_CODES: dict[str, int] = {"": STATUS_NONE, "brn": STATUS_BRN, "frz": STATUS_FRZ,
                                "par": STATUS_PAR, "psn": STATUS_PSN, "tox": STATUS_TOX,
                                "slp": STATUS_SLP, "fnt": STATUS_FNT}
STATUS_NAMES: dict[int, str] = {v: k for k, v in STATUS_CODES.items()}

# Boost order of the state (Showdown's BoostsTable order).
BOOST_NAMES = ("atk", "def", "spa", "spd", "spe", "accuracy", "evasion")
BOOST_INDEX = {b: i for i, b in enumerate(BOOST_NAMES)}
BOOST_SPECIAL = (BOOST_INDEX["spa"], BOOST_INDEX["spd"])
STORED_STAT_NAMES = ("atk", "def", "spa", "spd", "spe")  # stat arrays without HP


def _col(dtype: Any, fill: Any = 0) -> np.ndarray:
    return np.full(N_MOVE_ROWS, fill, dtype)


MOVE_TYPE = _col(np.uint8, TYPE_TYPELESS)
MOVE_CATEGORY = _col(np.uint8, CATEGORY_STATUS)
MOVE_BASE_POWER = _col(np.int16)
MOVE_ACCURACY = _col(np.int16)  # percent; 0 when accuracy is true
MOVE_ALWAYS_HITS = _col(np.bool_)  # accuracy: true
MOVE_PP = _col(np.uint8)
MOVE_PRIORITY = _col(np.int8)
MOVE_CRIT_RATIO = _col(np.uint8, 1)
MOVE_MULTIHIT_MIN = _col(np.uint8)  # 0: not multi-hit
MOVE_MULTIHIT_MAX = _col(np.uint8)
MOVE_DAMAGE_KIND = _col(np.uint8)
MOVE_FIXED_DAMAGE = _col(np.int16)
MOVE_SELFDESTRUCT = _col(np.bool_)
MOVE_IGNORE_IMMUNITY = _col(np.bool_)
MOVE_TARGET_SELF = _col(np.bool_)
MOVE_STATUS = _col(np.uint8)  # the primary status a status move inflicts (Sleep Powder: slp)
MOVE_SECONDARY_KIND = _col(np.uint8)
MOVE_SECONDARY_CHANCE = _col(np.uint8)  # percent
MOVE_SECONDARY_STATUS = _col(np.uint8)
MOVE_PARTIAL_TRAP = _col(np.bool_)  # self.volatileStatus == partialtrappinglock
MOVE_RECOIL = np.zeros((N_MOVE_ROWS, 2), np.int16)  # [numerator, denominator]
MOVE_DRAIN = np.zeros((N_MOVE_ROWS, 2), np.int16)

for _m in _MOVES:
    _i = _m["num"]
    MOVE_TYPE[_i] = TYPE_ID[_m["type"]]
    MOVE_CATEGORY[_i] = _CATEGORY[_m["category"]]
    MOVE_BASE_POWER[_i] = _m["basePower"]
    if _m["accuracy"] is True:
        MOVE_ALWAYS_HITS[_i] = True
    else:
        MOVE_ACCURACY[_i] = _m["accuracy"]
    MOVE_PP[_i] = _m["pp"]
    MOVE_PRIORITY[_i] = _m["priority"]
    MOVE_CRIT_RATIO[_i] = _m["critRatio"]
    _hits = _m.get("multihit")
    if _hits is not None:
        _lo, _hi = (_hits, _hits) if isinstance(_hits, int) else _hits
        MOVE_MULTIHIT_MIN[_i], MOVE_MULTIHIT_MAX[_i] = _lo, _hi
    _callbacks = _m.get("callbacks", [])
    if _m.get("ohko"):
        MOVE_DAMAGE_KIND[_i] = DAMAGE_OHKO
    elif "damageCallback" in _callbacks:
        MOVE_DAMAGE_KIND[_i] = {"superfang": DAMAGE_SUPERFANG, "psywave": DAMAGE_PSYWAVE,
                                "counter": DAMAGE_COUNTER}[_m["id"]]
    elif _m.get("damage") == "level":
        MOVE_DAMAGE_KIND[_i] = DAMAGE_LEVEL
    elif isinstance(_m.get("damage"), int):
        MOVE_DAMAGE_KIND[_i] = DAMAGE_FIXED
        MOVE_FIXED_DAMAGE[_i] = _m["damage"]
    MOVE_SELFDESTRUCT[_i] = bool(_m.get("selfdestruct"))
    MOVE_IGNORE_IMMUNITY[_i] = _m["ignoreImmunity"] is True
    MOVE_TARGET_SELF[_i] = _m["target"] == "self"
    MOVE_STATUS[_i] = STATUS_CODES[_m.get("status", "")]
    _secondaries = _m.get("secondaries") or []
    if len(_secondaries) > 1:
        raise ValueError(f"{_m['id']} has {len(_secondaries)} secondaries; Gen 1 moves have one")
    if _secondaries:
        _sec = _secondaries[0]
        MOVE_SECONDARY_CHANCE[_i] = _sec.get("chance", 100)
        if "status" in _sec:
            MOVE_SECONDARY_KIND[_i] = SECONDARY_STATUS
            MOVE_SECONDARY_STATUS[_i] = STATUS_CODES[_sec["status"]]
        elif _sec.get("volatileStatus") == "flinch":
            MOVE_SECONDARY_KIND[_i] = SECONDARY_FLINCH
        elif _sec.get("volatileStatus") == "confusion":
            MOVE_SECONDARY_KIND[_i] = SECONDARY_CONFUSION
        elif "boosts" in _sec:
            MOVE_SECONDARY_KIND[_i] = SECONDARY_BOOST
        else:
            raise ValueError(f"{_m['id']}: unknown secondary {_sec}")
    MOVE_PARTIAL_TRAP[_i] = (_m.get("self") or {}).get("volatileStatus") == "partialtrappinglock"
    if _m.get("recoil"):
        MOVE_RECOIL[_i] = _m["recoil"]
    if _m.get("drain"):
        MOVE_DRAIN[_i] = _m["drain"]

# 'nomove' (a Pokemon thawed before its side ever selected a move): ``runMove`` uses
# ``Object.assign(getActiveMove('fissure'), {basePower: 102, ohko: false, flags: {}, type: '???',
# category: 'Special', accuracy: 100 * 81 / 256, pp: 10})``: Fissure's other fields (critRatio 1,
# priority 0, target normal, no secondary). Its accuracy is not a whole percent: tryMoveHit's
# floor(accuracy * 255 / 100) is 80 (:data:`NOMOVE_ACCURACY_255`), which the engine supplies.
_fissure = MOVE_IDS["fissure"]
for _col_arr in (MOVE_PRIORITY, MOVE_CRIT_RATIO, MOVE_TARGET_SELF):
    _col_arr[NOMOVE] = _col_arr[_fissure]
MOVE_TYPE[NOMOVE] = TYPE_TYPELESS
MOVE_CATEGORY[NOMOVE] = CATEGORY_SPECIAL
MOVE_BASE_POWER[NOMOVE] = 102
MOVE_ACCURACY[NOMOVE] = 31  # 31.640625 %: see NOMOVE_ACCURACY_255
MOVE_PP[NOMOVE] = 10
MOVE_DAMAGE_KIND[NOMOVE] = DAMAGE_FORMULA
NOMOVE_ACCURACY_255 = int(100 * 81 / 256 * 255 / 100)  # 80
NOMOVE_ACTIVE_MOVE = {"basePower": 102, "type": "???", "category": "Special",
                      "accuracy": 100 * 81 / 256}  # the fields that differ from Fissure's

# ---- the gen1randombattle pool ------------------------------------------------------------------

RANDOM_SETS: dict[str, dict[str, Any]] = _SETS["sets"]
POOL_MOVES: tuple[str, ...] = tuple(_SETS["pool_moves"])


def set_moves(entry: dict[str, Any]) -> list[str]:
    """Every move one random-battle species can be given (all its move lists)."""
    keys = ("moves", "essentialMoves", "exclusiveMoves", "comboMoves")
    return sorted({m for k in keys for m in entry.get(k, [])})
