"""The card table (reference ``cards.py``) as arrays indexed by card id (1 + the position in
``reference/cards.json``; 0 is "no card"), read once at import; jitted code closes over them
as constants. Attack effects: ``ATK_TEMPLATE`` (an index into ``TEMPLATES``, 0 none, -1 one
this engine does not play) and the template's numbers (``ATK_COINS``, ``ATK_PER_HEADS``,
``ATK_BONUS``, ``ATK_AMOUNT``: heal, recoil; ``ATK_CONDITION``: an index into ``CONDITIONS``;
``ATK_DISCARD_TYPE``/``ATK_DISCARD_COUNT``: -1/``DISCARD_ALL`` for "all"; and the arrays below
them, one per number of the other templates). Trainers:
``TRAINER_EFFECT`` (an index into ``EFFECTS``; -1: not a Trainer this engine plays) and the
names some of them ask for (``BLAINE``, ``BROCK``, ``SURGE``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ENERGY_TYPES = ("Grass", "Fire", "Water", "Lightning", "Psychic", "Fighting", "Darkness", "Metal")
TYPES = (*ENERGY_TYPES, "Colorless", "Dragon")  # a Pokémon's type; Weakness is one of these
COLORLESS = TYPES.index("Colorless")
KIND_NAMES = ("pokemon", "item", "supporter", "fossil")
MAX_ATTACKS = 2
CONDITIONS = ("poisoned", "burned", "asleep", "paralyzed", "confused")
TEMPLATES = ("", "status", "coin_status", "heal_self", "discard_energy", "recoil", "multi_coin",
             "coin_bonus", "coin_fail", "flip_until_tails", "all_heads_bonus",
             "coin_bonus_or_recoil", "per_count", "bonus_if", "bench_damage",
             "discard_opponent_energy", "draw", "reveal_hand", "snipe", "defending_effect",
             "self_effect", "zone_attach", "search_hand", "search_bench", "switch_opponent",
             "switch_self", "block_supporters", "discard_opponent_hand", "heal_dealt",
             "own_bench_damage")
(T_NONE, T_STATUS, T_COIN_STATUS, T_HEAL_SELF, T_DISCARD_ENERGY, T_RECOIL, T_MULTI_COIN,
 T_COIN_BONUS, T_COIN_FAIL, T_FLIP_UNTIL_TAILS, T_ALL_HEADS_BONUS, T_COIN_BONUS_OR_RECOIL,
 T_PER_COUNT, T_BONUS_IF, T_BENCH_DAMAGE, T_DISCARD_OPPONENT_ENERGY, T_DRAW, T_REVEAL_HAND,
 T_SNIPE, T_DEFENDING_EFFECT, T_SELF_EFFECT, T_ZONE_ATTACH, T_SEARCH_HAND, T_SEARCH_BENCH,
 T_SWITCH_OPPONENT, T_SWITCH_SELF, T_BLOCK_SUPPORTERS, T_DISCARD_OPPONENT_HAND, T_HEAL_DEALT,
 T_OWN_BENCH_DAMAGE) = range(len(TEMPLATES))
DISCARD_ALL = 99
# The numbers of the templates' conditions (reference ``rules.t_per_count``, ``t_bonus_if``)
COUNTS = ("opponent_active_energy", "own_bench")
PREDICATES = ("extra_energy", "self_damaged", "opponent_damaged", "opponent_poisoned")
# T13's effects, in the state's ``effect_until`` order (reference ``encode.EFFECTS``)
ATTACK_EFFECTS = ("cannot_attack", "cannot_retreat", "attack_minus", "takes_minus",
                  "prevent_all")
# The Trainer effects this engine plays (reference ``rules.TRAINER_EFFECTS``; fossils are
# played as Basic Pokémon, not through an effect)
EFFECTS = ("", "potion", "erika", "misty", "brock", "sabrina", "lt_surge", "giovanni",
           "blaine", "x_speed", "hand_scope", "pokedex", "professors_research", "poke_ball",
           "red_card", "koga")
(E_NONE, E_POTION, E_ERIKA, E_MISTY, E_BROCK, E_SABRINA, E_LT_SURGE, E_GIOVANNI, E_BLAINE,
 E_X_SPEED, E_HAND_SCOPE, E_POKEDEX, E_PROFESSORS_RESEARCH, E_POKE_BALL,
 E_RED_CARD, E_KOGA) = range(len(EFFECTS))
FOSSIL_HP = 40  # reference ``cards.FOSSIL_HP``: a fossil is a 40-HP Basic Colorless Pokémon
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
ATK_TEMPLATE = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int8)
ATK_X = np.zeros((N_CARDS + 1, MAX_ATTACKS), bool)  # damage_mode "x": the coins set the damage
ATK_COINS = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int8)
ATK_PER_HEADS = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int16)
ATK_BONUS = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int16)
ATK_AMOUNT = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int16)
ATK_CONDITION = np.full((N_CARDS + 1, MAX_ATTACKS), -1, np.int8)
ATK_DISCARD_TYPE = np.full((N_CARDS + 1, MAX_ATTACKS), -1, np.int8)
ATK_DISCARD_COUNT = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int8)
ATK_COIN = np.zeros((N_CARDS + 1, MAX_ATTACKS), bool)  # a coin decides the effect (heads: it is)
ATK_PER = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int16)  # per_count: damage per counted thing
ATK_COUNT = np.full((N_CARDS + 1, MAX_ATTACKS), -1, np.int8)  # per_count: an index of COUNTS
ATK_PREDICATE = np.full((N_CARDS + 1, MAX_ATTACKS), -1, np.int8)  # bonus_if: of PREDICATES
ATK_N = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int8)  # bonus_if's, zone_attach's, draw's count
ATK_ENERGY = np.full((N_CARDS + 1, MAX_ATTACKS), -1, np.int8)  # an Energy or Pokémon type
ATK_NAME = np.zeros((N_CARDS + 1, MAX_ATTACKS), np.int16)  # a card id the effect names, 0: none
ATK_TARGET_TYPE = np.full((N_CARDS + 1, MAX_ATTACKS), -1, np.int8)  # zone_attach: -1 self
ATK_BENCH_ONLY = np.zeros((N_CARDS + 1, MAX_ATTACKS), bool)  # snipe
ATK_EFFECT = np.full((N_CARDS + 1, MAX_ATTACKS), -1, np.int8)  # T13: of ATTACK_EFFECTS
EVOLVES_FROM = np.zeros(N_CARDS + 1, np.int16)  # the card id it evolves from, 0: none
NO_ABILITY = np.zeros(N_CARDS + 1, bool)  # a Pokémon without an Ability (none is supported)
TRAINER_EFFECT = np.full(N_CARDS + 1, -1, np.int8)
KIND[0] = -1
for _i, _c in enumerate(_cards, start=1):
    KIND[_i] = KIND_NAMES.index(_c["kind"])
    if _c["kind"] in ("item", "supporter") and _c["effect"] in EFFECTS:
        TRAINER_EFFECT[_i] = EFFECTS.index(_c["effect"])
    if _c["kind"] == "fossil":
        HP[_i], TYPE[_i] = FOSSIL_HP, TYPES.index("Colorless")
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
        ATK_X[_i, _j] = _a["damage_mode"] == "x"
        _e = _a["effect"]
        if _e is None:
            continue
        if _e["template"] not in TEMPLATES:
            ATK_TEMPLATE[_i, _j] = -1
            continue
        ATK_TEMPLATE[_i, _j] = TEMPLATES.index(_e["template"])
        ATK_COINS[_i, _j] = _e.get("coins", 0)
        ATK_PER_HEADS[_i, _j] = _e.get("per_heads", 0)
        ATK_BONUS[_i, _j] = _e.get("bonus", 0)
        ATK_AMOUNT[_i, _j] = _e.get("amount", _e.get("recoil", 0))
        if "condition" in _e:
            ATK_CONDITION[_i, _j] = CONDITIONS.index(_e["condition"])
        if _e["template"] == "discard_energy":
            _all = _e["count"] == "all"
            ATK_DISCARD_COUNT[_i, _j] = DISCARD_ALL if _all else _e["count"]
            ATK_DISCARD_TYPE[_i, _j] = -1 if _all else ENERGY_TYPES.index(_e["energy"])
        ATK_COIN[_i, _j] = bool(_e.get("coin", False))
        if _e["template"] == "per_count":
            ATK_COUNT[_i, _j] = COUNTS.index(_e["count"])
            ATK_PER[_i, _j] = _e["per"]
        elif isinstance(_e.get("count"), int):
            ATK_N[_i, _j] = _e["count"]
        if "predicate" in _e:
            ATK_PREDICATE[_i, _j] = PREDICATES.index(_e["predicate"])
        _type = _e.get("energy") or _e.get("type")
        ATK_ENERGY[_i, _j] = -1 if _type is None else TYPES.index(_type)
        if _e.get("target_type") is not None:
            ATK_TARGET_TYPE[_i, _j] = TYPES.index(_e["target_type"])
        ATK_BENCH_ONLY[_i, _j] = bool(_e.get("bench_only", False))
        if "effect" in _e:
            ATK_EFFECT[_i, _j] = ATTACK_EFFECTS.index(_e["effect"])
_ID = {name: i for i, name in enumerate(NAMES) if i}
for _i, _c in enumerate(_cards, start=1):  # the card an effect names (search_bench, per_count)
    for _j, _a in enumerate(_c.get("attacks", ())):
        if _a["effect"] is not None and _a["effect"].get("name"):
            ATK_NAME[_i, _j] = _ID[_a["effect"]["name"]]
for _i, _c in enumerate(_cards, start=1):
    if _c["kind"] == "pokemon" and _c["evolves_from"] is not None:
        EVOLVES_FROM[_i] = _ID.get(_c["evolves_from"], -1)  # -1: not in the pool
IS_POKEMON = KIND == 0
IS_BASIC = IS_POKEMON & (STAGE == 0)
IS_FOSSIL = KIND == KIND_NAMES.index("fossil")  # noqa: SIM300
PLAIN = IS_POKEMON & NO_ABILITY & np.all(ATK_PLAIN | (np.arange(MAX_ATTACKS) >= N_ATK[:, None]),
                                         axis=1)
# Plain Pokémon (any stage) and plain Basics: no Ability, every attack printed damage only
# (the reference's ``plain`` and ``basic`` pools)
PLAIN_BASIC = IS_BASIC & NO_ABILITY & np.all(ATK_PLAIN | (np.arange(MAX_ATTACKS) >= N_ATK[:, None]),
                                              axis=1)
_ATK_OK = (ATK_TEMPLATE >= 0) | (np.arange(MAX_ATTACKS) >= N_ATK[:, None])
IS_SUPPORTER = KIND == KIND_NAMES.index("supporter")  # noqa: SIM300
IS_TRAINER = TRAINER_EFFECT > 0  # an Item or Supporter this engine plays
# The Pokémon a Trainer names (reference ``rules.BLAINE_POKEMON``, ``BROCK_POKEMON``,
# ``SURGE_POKEMON``)
BLAINE = np.asarray([n in ("Ninetales", "Rapidash", "Magmar") for n in NAMES])
BROCK = np.asarray([n in ("Golem", "Onix") for n in NAMES])
SURGE = np.asarray([n in ("Raichu", "Electrode", "Electabuzz") for n in NAMES])
KOGA = np.asarray([n in ("Muk", "Weezing") for n in NAMES])
# The ``trainers`` pool (reference ``deck.trainers_cards``): the ``status`` Pokémon and the
# Trainers above but Koga
_STATUS_TEMPLATES = np.isin(ATK_TEMPLATE, np.arange(T_COIN_BONUS_OR_RECOIL + 1))
STATUS = IS_POKEMON & NO_ABILITY & np.all(_STATUS_TEMPLATES | (np.arange(MAX_ATTACKS)
                                                                >= N_ATK[:, None]), axis=1)
TRAINERS = STATUS | (IS_TRAINER & (TRAINER_EFFECT != E_KOGA))
# The ``full`` pool (reference ``deck.full_cards``): every Pokémon with no Ability whose attacks
# all have a template above, every Trainer, the fossils
FULL = (IS_POKEMON & NO_ABILITY & np.all(_ATK_OK, axis=1)) | IS_TRAINER | IS_FOSSIL
