"""The card arrays against the reference's card table: Pokémon facts, the Trainers' effects
the attack templates' numbers, fossils and the pools up to ``full``."""

import numpy as np
from translation import cards as C

from envport.envs.tcg_pocket import rules as ref_rules
from envport.envs.tcg_pocket.cards import load_table
from envport.envs.tcg_pocket.deck import (
    full_cards,
    full_trainers,
    pool_trainers,
    status_pokemon,
    trainers_cards,
)

TABLE = load_table()


def test_pokemon_facts():
    for i, name in enumerate(C.NAMES[1:], start=1):
        c = TABLE[name]
        assert C.KIND_NAMES[C.KIND[i]] == c.kind
        if c.is_pokemon:
            assert (C.HP[i], C.STAGE[i], C.RETREAT[i], C.N_ATK[i]) == (c.hp, c.stage, c.retreat,
                                                                      len(c.attacks))
            assert C.TYPES[C.TYPE[i]] == c.type and bool(C.EX[i]) == bool(c.ex)
            assert bool(C.IS_BASIC[i]) == c.is_basic


def test_trainer_effects_and_supporters():
    ids = {n: i for i, n in enumerate(C.NAMES)}
    for name in full_trainers():
        c = TABLE[name]
        i = ids[name]
        assert C.EFFECTS[C.TRAINER_EFFECT[i]] == c.effect
        assert bool(C.IS_SUPPORTER[i]) == (c.kind == "supporter")
        assert C.IS_TRAINER[i]
    assert {C.NAMES[i] for i in np.flatnonzero(C.KOGA)} == set(ref_rules.KOGA_POKEMON)
    assert {C.NAMES[i] for i in np.flatnonzero(C.BLAINE)} == set(ref_rules.BLAINE_POKEMON)
    assert {C.NAMES[i] for i in np.flatnonzero(C.BROCK)} == set(ref_rules.BROCK_POKEMON)
    assert {C.NAMES[i] for i in np.flatnonzero(C.SURGE)} == set(ref_rules.SURGE_POKEMON)


def test_pools():
    assert {C.NAMES[i] for i in np.flatnonzero(C.STATUS)} == set(status_pokemon())
    assert {C.NAMES[i] for i in np.flatnonzero(C.TRAINERS)} == set(trainers_cards())
    assert len(pool_trainers()) == 14
    assert {C.NAMES[i] for i in np.flatnonzero(C.FULL)} == set(full_cards())
    assert len(full_trainers()) == 15


def test_fossils_are_40_hp_colorless_basics():
    for i in np.flatnonzero(C.IS_FOSSIL):
        assert TABLE[C.NAMES[i]].kind == "fossil"
        assert (C.HP[i], C.TYPES[C.TYPE[i]], C.STAGE[i]) == (ref_rules.FOSSIL_HP, "Colorless", 0)
    assert C.IS_FOSSIL.sum() == 3


def test_attack_numbers():
    """Each attack's template and the numbers its template reads, from the card table."""
    for i, name in enumerate(C.NAMES[1:], start=1):
        c = TABLE[name]
        for j, a in enumerate(c.attacks if c.is_pokemon else ()):
            e = a.effect
            if e is None or e["template"] not in C.TEMPLATES:
                continue
            assert C.TEMPLATES[C.ATK_TEMPLATE[i, j]] == e["template"], (name, j)
            t = e["template"]
            if t in ("bench_damage", "snipe", "own_bench_damage", "heal_self", "recoil",
                     "defending_effect", "self_effect"):
                assert C.ATK_AMOUNT[i, j] == e["amount"], (name, j)
            if t == "per_count":
                assert C.COUNTS[C.ATK_COUNT[i, j]] == e["count"] and C.ATK_PER[i, j] == e["per"]
                kind = e.get("energy")
                assert C.ATK_ENERGY[i, j] == (-1 if kind is None else C.TYPES.index(kind))
                assert C.NAMES[C.ATK_NAME[i, j]] == (e.get("name") or "")
            if t == "bonus_if":
                assert C.PREDICATES[C.ATK_PREDICATE[i, j]] == e["predicate"]
                assert C.ATK_N[i, j] == e.get("count", 0)
            if t in ("defending_effect", "self_effect"):
                assert C.ATTACK_EFFECTS[C.ATK_EFFECT[i, j]] == e["effect"]
            if t in ("defending_effect", "self_effect", "discard_opponent_energy",
                     "discard_opponent_hand"):
                assert bool(C.ATK_COIN[i, j]) == e["coin"], (name, j)
            if t == "zone_attach":
                assert C.TYPES[C.ATK_ENERGY[i, j]] == e["energy"]
                assert (C.ATK_N[i, j], C.ATK_COINS[i, j]) == (e["count"], e["coins"])
                want = -1 if e["target"] == "self" else C.TYPES.index(e["target_type"])
                assert C.ATK_TARGET_TYPE[i, j] == want
            if t == "snipe":
                assert bool(C.ATK_BENCH_ONLY[i, j]) == e["bench_only"]
            if t == "search_hand":
                assert C.TYPES[C.ATK_ENERGY[i, j]] == e["type"]
            if t == "search_bench":
                assert C.NAMES[C.ATK_NAME[i, j]] == e["name"]
            if t == "draw":
                assert C.ATK_N[i, j] == e["count"]
