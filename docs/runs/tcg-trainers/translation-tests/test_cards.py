"""The card arrays against the reference's card table: Pokémon facts, the Trainers' effects
and the ``trainers`` pool."""

import numpy as np
from translation import cards as C

from envport.envs.tcg_pocket import rules as ref_rules
from envport.envs.tcg_pocket.cards import load_table
from envport.envs.tcg_pocket.deck import pool_trainers, status_pokemon, trainers_cards

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
    for name in pool_trainers():
        c = TABLE[name]
        i = ids[name]
        assert C.EFFECTS[C.TRAINER_EFFECT[i]] == c.effect
        assert bool(C.IS_SUPPORTER[i]) == (c.kind == "supporter")
        assert C.IS_TRAINER[i]
    assert not C.IS_TRAINER[ids["Koga"]] and C.TRAINER_EFFECT[ids["Koga"]] == -1
    assert {C.NAMES[i] for i in np.flatnonzero(C.BLAINE)} == set(ref_rules.BLAINE_POKEMON)
    assert {C.NAMES[i] for i in np.flatnonzero(C.BROCK)} == set(ref_rules.BROCK_POKEMON)
    assert {C.NAMES[i] for i in np.flatnonzero(C.SURGE)} == set(ref_rules.SURGE_POKEMON)


def test_pools():
    assert {C.NAMES[i] for i in np.flatnonzero(C.STATUS)} == set(status_pokemon())
    assert {C.NAMES[i] for i in np.flatnonzero(C.TRAINERS)} == set(trainers_cards())
    assert len(pool_trainers()) == 14
