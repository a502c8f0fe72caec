"""The facts the JAX engine's known-equivalent mutants rest on (``tcg_pocket/mutants.py``):
each key names a line that exists, and the card-table facts the reasons cite hold for the
committed table (a new card table that broke one would make its reason false)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from envport.envs.tcg_pocket.jax_engine import cards as C
from envport.envs.tcg_pocket.mutants import known_equivalent
from envport.verify.mutation.equivalence import EVERY_SITE, check_known_table

ENGINE = Path(C.__file__).parent


def test_every_known_equivalent_names_a_mutant_of_the_engine():
    import importlib

    from envport.verify.mutation.generate import generate

    sites: set[tuple[object, ...]] = set()
    mutants = []
    for file in {key[0] for key in known_equivalent()}:
        module = importlib.import_module(f"envport.envs.tcg_pocket.jax_engine.{file[:-3]}")
        for ms in generate(module):
            m = ms.mutant
            mutants.append((file, m))
            sites |= {(file, m.source_line, m.description),
                      (file, m.source_line, m.description, m.column),
                      (file, m.source_line, m.description, EVERY_SITE)}
    for key, (kind, reason) in known_equivalent().items():
        assert key in sites, key
        assert kind in ("proof", "reachable") and len(reason) > 80
    check_known_table(known_equivalent(), mutants)


def test_a_column_key_holds_for_its_site_only():
    """A key naming a column holds for that site of its line only: the two 0s of
    ``jnp.where(occ[0], bench_free, 0)`` (``put_in_play``), the second keyed, in a table of
    this test's own (the engine's own table has no column key since the full-pool slice)."""
    from types import SimpleNamespace

    from envport.envs.tcg_pocket.jax_engine import rules
    from envport.verify.mutation.equivalence import known_reason
    from envport.verify.mutation.generate import generate

    line = "slot = jnp.where(occ[0], bench_free, 0)"
    zeros = [ms.mutant for ms in generate(rules)
             if ms.mutant.source_line == line and ms.mutant.description == "0 -> 1"]
    assert [m.column for m in zeros] == [21, 37]
    table = {("rules.py", line, "0 -> 1", 37): ("proof", "this test's own entry")}
    spec = SimpleNamespace(verification=SimpleNamespace(equivalent_mutants=lambda: table))
    kinds = [known_reason(spec, rules.__file__, m)[0] for m in zeros]
    assert kinds == ["", "proof"]


def test_the_shorter_tables_lose_no_written_value():
    pokemon = np.flatnonzero(C.IS_POKEMON)
    assert pokemon.max() <= C.N_CARDS - 2  # the two-shorter table holds every Pokémon id
    last = np.arange(C.N_CARDS - 2, C.N_CARDS + 1)  # id 230 (the clamp target) and 231-232
    assert not C.IS_POKEMON[last].any() and not (C.KIND[last] == 3).any()
    for table in (C.HP, C.EVOLVES_FROM, C.ATK_AMOUNT):
        assert not table[last].any()
        written = C.IS_POKEMON | (C.IS_FOSSIL if table is C.HP else False)
        assert not table[~written].any()  # written for Pokémon only (HP: and fossils)


def test_a_card_that_evolves_is_a_stage_1_or_2_pokemon():
    evolves = C.EVOLVES_FROM > 0
    assert evolves.any()
    assert (C.IS_POKEMON[evolves] & (C.STAGE[evolves] > 0)).all()
    assert (C.IS_POKEMON[C.STAGE > 0]).all()
    assert C.EVOLVES_FROM[0] == 0 and C.STAGE[0] == 0
