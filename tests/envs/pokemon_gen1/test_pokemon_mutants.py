"""``pokemon_gen1/mutants.py``: each known-equivalent key names a mutant of the engine, with a
kind and a reason."""

from __future__ import annotations

import importlib

from envport.envs.pokemon_gen1.mutants import known_equivalent
from envport.verify.mutation.generate import generate

# The operators of the table's mutations, per file: generating all ~3,400 of the engine's
# mutants takes minutes on 2 cores, its 289 comparisons and 526 constants seconds. A key of
# another operator fails below until its operator is named here.
OPERATORS = {"engine.py": ("arith", "compare", "constant", "swap_args"),
             "mechanics.py": ("arith", "constant")}


def test_every_known_equivalent_names_a_mutant_of_the_engine():
    sites: set[tuple[object, ...]] = set()
    for file in {key[0] for key in known_equivalent()}:
        module = importlib.import_module(f"envport.envs.pokemon_gen1.{file[:-3]}")
        for ms in generate(module, OPERATORS[file]):
            m = ms.mutant
            sites |= {(file, m.source_line, m.description),
                      (file, m.source_line, m.description, m.column)}
    for key, (kind, reason) in known_equivalent().items():
        assert key in sites, f"{key}: no such mutant of the operators {OPERATORS[key[0]]}"
        assert kind in ("proof", "reachable") and len(reason) > 80


def test_the_action_space_prints_what_it_holds():
    """``envport mutate`` looks for a survivor's equivalence only where the mutant's spaces
    print as the original's (``equivalence.fingerprint``); a repr with the object's address
    differed for every mutant, so no survivor of this engine was ever examined."""
    from envport.envs.pokemon_gen1.env import JointChoice

    text = repr(JointChoice())
    assert text == repr(JointChoice()) and " at 0x" not in text
