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
             "mechanics.py": ("arith", "constant"), "prng.py": ("swap_args",)}


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


def test_the_premises_of_the_table_lookups_proofs():
    """The proofs of ``use_move``'s ``move < T.N_MOVES`` mutant and ``mul_hi``'s swapped
    arguments rest on a table row and on ``mul_full``'s symmetry: checked here, so a change to
    either fails a test instead of leaving a stale proof."""
    import numpy as np

    from envport.envs.pokemon_gen1 import prng
    from envport.envs.pokemon_gen1 import tables as T

    assert not T.MOVE_TARGET_SELF[T.N_MOVES]  # 'recharge'
    assert T.MOVE_TARGET_SELF[T.MOVE_IDS["swordsdance"]]  # the column is not all False
    rng = np.random.default_rng(0)
    edge = np.array([0, 1, 0xFFFF, 0x10000, 0xFFFFFFFF, 0x6C078965], np.uint32)
    a = np.concatenate([edge, rng.integers(0, 2**32, 500, dtype=np.uint32)])
    b = np.concatenate([edge[::-1], rng.integers(0, 2**32, 500, dtype=np.uint32)])
    hi_ab, lo_ab = prng.mul_full(a, b)
    hi_ba, lo_ba = prng.mul_full(b, a)
    exact = [int(x) * int(y) for x, y in zip(a, b, strict=True)]
    assert [int(h) << 32 | int(lo) for h, lo in zip(hi_ab, lo_ab, strict=True)] == exact
    assert np.array_equal(hi_ab, hi_ba) and np.array_equal(lo_ab, lo_ba)


def test_the_action_space_prints_what_it_holds():
    """``envport mutate`` looks for a survivor's equivalence only where the mutant's spaces
    print as the original's (``equivalence.fingerprint``); a repr with the object's address
    differed for every mutant, so no survivor of this engine was ever examined."""
    from envport.envs.pokemon_gen1.env import JointChoice

    text = repr(JointChoice())
    assert text == repr(JointChoice()) and " at 0x" not in text
