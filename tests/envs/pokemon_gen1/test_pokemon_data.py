"""The committed Gen 1 tables: regenerated from the installed Showdown and compared, and checked
against the facts of the spec (counts, Gen 1 type chart and category rules)."""

from __future__ import annotations

import pytest

from envport.envs.pokemon_gen1 import generate_data
from envport.envs.pokemon_gen1.reference import SHOWDOWN_VERSION, ReferenceUnavailable


def test_committed_tables_equal_a_fresh_dump_of_the_installed_package():
    try:
        fresh = generate_data.generate()
    except ReferenceUnavailable as e:
        pytest.fail(f"Showdown reference not available (the set-up installs it): {e}")
    assert sorted(fresh) == sorted(generate_data.FILES)
    for name, text in fresh.items():
        committed = (generate_data.DATA_DIR / name).read_text()
        assert committed == text, f"data/{name} is stale: run `{generate_data.GENERATED_BY}`"


@pytest.fixture(scope="module")
def tables():
    return {name: generate_data.load(name) for name in
            ("species", "moves", "typechart", "random_battle_sets")}


def test_every_table_names_the_pinned_version(tables):
    assert {t["showdown_version"] for t in tables.values()} == {SHOWDOWN_VERSION}


def test_counts_match_the_spec(tables):
    species = tables["species"]["species"]
    assert len(species) == 151 and [s["num"] for s in species] == list(range(1, 152))
    assert len(tables["moves"]["moves"]) == 165
    assert len(tables["typechart"]["types"]) == 15
    sets = tables["random_battle_sets"]
    assert len(sets["sets"]) == 146
    missing = {s["id"] for s in species} - set(sets["sets"])
    assert missing == {"caterpie", "metapod", "weedle", "kakuna", "magikarp"}
    assert len(sets["pool_moves"]) == 67
    assert all(60 <= entry.get("level", 80) <= 100 for entry in sets["sets"].values())


def test_gen1_special_is_one_stat_and_types_have_no_dark_steel_fairy(tables):
    for s in tables["species"]["species"]:
        assert s["base_stats"]["spa"] == s["base_stats"]["spd"], s["id"]
    assert not {"Dark", "Steel", "Fairy"} & set(tables["typechart"]["types"])


def test_gen1_type_chart_entries(tables):
    chart = tables["typechart"]
    index = {t: i for i, t in enumerate(chart["types"])}

    def mult(a, d):
        return chart["multiplier"][index[a]][index[d]]

    assert mult("Ghost", "Psychic") == 0.0  # the Gen 1 bug
    assert mult("Bug", "Poison") == 2.0 and mult("Poison", "Bug") == 2.0
    assert mult("Ice", "Fire") == 1.0
    assert mult("Normal", "Ghost") == 0.0 and mult("Electric", "Ground") == 0.0
    assert mult("Water", "Fire") == 2.0 and mult("Fire", "Water") == 0.5


def test_move_category_follows_the_gen1_type_rule(tables):
    physical = {"Normal", "Fighting", "Flying", "Ground", "Rock", "Bug", "Ghost", "Poison"}
    special = {"Fire", "Water", "Grass", "Electric", "Ice", "Psychic", "Dragon"}
    moves = {m["id"]: m for m in tables["moves"]["moves"]}
    for m in moves.values():
        if m["category"] == "Status" or m["type"] == "???":  # Bide is typeless in Gen 1
            continue
        assert m["category"] == ("Physical" if m["type"] in physical else "Special"), m["id"]
        assert m["type"] in physical | special, m["id"]
    # Gen 1 changes the mod makes to move data (data/mods/gen1/moves.ts)
    assert moves["bite"]["type"] == moves["gust"]["type"] == moves["karatechop"]["type"] == "Normal"
    assert moves["karatechop"]["critRatio"] == 2 and moves["slash"]["critRatio"] == 2
    assert moves["swift"]["accuracy"] is True and moves["bodyslam"]["accuracy"] == 100
    assert moves["quickattack"]["priority"] == 1 and moves["counter"]["priority"] == -1
    assert moves["bodyslam"]["secondary"] == {"chance": 30, "status": "par"}
    assert "damageCallback" in moves["counter"]["callbacks"]


def test_pool_moves_are_gen1_moves(tables):
    ids = {m["id"] for m in tables["moves"]["moves"]}
    pool = set(tables["random_battle_sets"]["pool_moves"])
    assert pool <= ids
    assert {"bodyslam", "blizzard", "thunderwave", "substitute", "counter", "mimic",
            "mirrormove", "transform", "skyattack"} <= pool
    assert len(ids - pool) == 98
