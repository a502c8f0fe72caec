"""``pokemon_gen1/mutants.py``: each known-equivalent key names a mutant of the engine, with a
kind and a reason."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from envport.envs.pokemon_gen1.mutants import known_equivalent
from envport.verify.mutation.equivalence import EVERY_SITE, check_known_table
from envport.verify.mutation.generate import generate

# The operators of the table's mutations, per file: generating all ~3,400 of the engine's
# mutants takes minutes on 2 cores, its 289 comparisons and 526 constants seconds. A key of
# another operator fails below until its operator is named here.
OPERATORS = {"engine.py": ("arith", "compare", "constant", "swap_args"),
             "mechanics.py": ("arith", "constant"), "prng.py": ("swap_args",)}


def test_every_known_equivalent_names_a_mutant_of_the_engine():
    sites: set[tuple[object, ...]] = set()
    mutants = []
    for file in {key[0] for key in known_equivalent()}:
        module = importlib.import_module(f"envport.envs.pokemon_gen1.{file[:-3]}")
        for ms in generate(module, OPERATORS[file]):
            m = ms.mutant
            mutants.append((file, m))
            sites |= {(file, m.source_line, m.description),
                      (file, m.source_line, m.description, m.column),
                      (file, m.source_line, m.description, EVERY_SITE)}
    for key, (kind, reason) in known_equivalent().items():
        assert key in sites, f"{key}: no such mutant of the operators {OPERATORS[key[0]]}"
        assert kind in ("proof", "reachable") and len(reason) > 80
    check_known_table(known_equivalent(), mutants)


def test_the_premises_of_the_table_lookups_proofs():
    """The proofs of ``use_move``'s ``move < T.N_MOVES`` mutant and ``mul_hi``'s swapped
    arguments rest on a table row and on ``mul_full``'s symmetry: checked here, so a change to
    either fails a test instead of leaving a stale proof."""
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


def test_the_premises_of_the_stored_accuracy_and_boost_proofs():
    """The proofs of ``move_hit``'s two ``acc.stored >= 0`` mutants and ``move_hit``'s
    ``MOVE_BOOSTS != 0`` -> ``== 0`` rest on ``mechanics.accuracy``'s ``stored`` never being 0
    (every move, stage pair, a spread of overrides, both flags) and on no move changing all 7
    stages: both checked here."""
    from envport.envs.pokemon_gen1 import mechanics as M
    from envport.envs.pokemon_gen1 import moves as MV
    from envport.envs.pokemon_gen1 import tables as T

    boosts = np.asarray(MV.MOVE_BOOSTS)
    assert boosts.shape[-1] == 7 and (boosts != 0).any(-1).sum() >= 10  # the column is filled
    assert not (boosts != 0).all(-1).any()  # move_hit's boost: no move changes all 7 stages
    moves = np.arange(len(T.MOVE_ACCURACY))[:, None, None, None]
    stages = np.arange(-6, 7)
    overrides = np.array([-1, 0, 1, 2, 3, 100, 200, 254, 255, 256, 1000])
    for must_recharge in (False, True):
        for trapped in (False, True):
            acc = M.accuracy(moves, stages[:, None, None], stages[:, None], must_recharge,
                             overrides, trapped)
            stored = np.asarray(acc.stored)
            assert stored.shape == (len(T.MOVE_ACCURACY), 13, 13, len(overrides))
            assert ((stored == -1) | ((stored >= 1) & (stored <= 255))).all()
            assert (stored == -1).any() and (stored == 1).any() and (stored == 255).any()


def test_the_premise_of_the_recoil_divisor_proof():
    """The proof of ``move_hit``'s recoil divisor floored at 2 instead of 1 rests on no row of
    ``MOVE_RECOIL`` having a denominator of 1: checked here, with the column filled."""
    from envport.envs.pokemon_gen1 import tables as T

    denominators = np.asarray(T.MOVE_RECOIL)[:, 1]
    assert (denominators > 0).sum() >= 3  # the column is filled
    assert not (denominators == 1).any()


def test_the_premise_of_the_recoil_true_division_proof():
    """The proof of ``move_hit``'s recoil amount with ``/`` for ``//`` rests on float32's
    quotient truncating to the floor for every amount a recoil move can have dealt (an int16,
    0 .. 32,767) and every row of ``MOVE_RECOIL``: compared here, as the engine computes it."""
    import jax
    import jax.numpy as jnp

    from envport.envs.pokemon_gen1 import tables as T

    recoil_rows = jnp.asarray(np.unique(np.asarray(T.MOVE_RECOIL), axis=0))
    assert recoil_rows.shape[0] >= 4  # 0 and the recoil moves' fractions
    dealt = jnp.arange(32768, dtype=jnp.int32)

    @jax.jit
    def both(recoil):
        floor = jnp.maximum(dealt * recoil[0] // jnp.maximum(recoil[1], 1), 1)
        true = jnp.maximum(dealt * recoil[0] / jnp.maximum(recoil[1], 1), 1)
        return floor.astype(jnp.int32), true.astype(jnp.int32)

    for recoil in recoil_rows:
        floor, true = both(recoil)
        assert np.array_equal(np.asarray(floor), np.asarray(true)), recoil


def test_the_action_space_prints_what_it_holds():
    """``envport mutate`` looks for a survivor's equivalence only where the mutant's spaces
    print as the original's (``equivalence.fingerprint``); a repr with the object's address
    differed for every mutant, so no survivor of this engine was ever examined."""
    from envport.envs.pokemon_gen1.env import JointChoice

    text = repr(JointChoice())
    assert text == repr(JointChoice()) and " at 0x" not in text


def test_showdown_cannot_play_a_frozen_fight_from_a_slot_a_transform_emptied():
    """The premise of the "reachable" reason for ``move_hit``'s ``t_has_pp`` with ``moves > 0``
    -> ``>= 0`` (its key names column 12; ``t_pp > 0`` on the same line is another mutant, run
    K's engine:m1075, which ``move_effects`` kills): the one path on which the engine's
    ``deduct_pp`` would take PP from an empty slot (``last_selected_slot`` past the moves a
    Transform left, used without a new choice) is a frozen or sleeping Pokemon's "fight", and
    Showdown's Gen 1 ``side.commitChoices`` throws there ("moveSlot is null"), so no battle
    goes on from such a state. Mew transforms from its fourth slot into a Snorlax of two
    moves, whose Ice Beam freezes it."""
    from envport.envs.pokemon_gen1.env import ShowdownReference
    from envport.envs.pokemon_gen1.reference import ShowdownError, gen1_set

    ref = ShowdownReference()
    try:
        w = ref.battle.worker
        mew = w.pack_team([gen1_set("mew", ["psychic", "thunderbolt", "softboiled", "transform"])])
        snorlax = w.pack_team([gen1_set("snorlax", ["icebeam", "fireblast"])])
        frozen = 0
        for seed in range(400):
            ref.reset_with_teams(seed, (mew, snorlax))
            ref.step(np.array([3, 0]))  # Transform (slot 4) against Ice Beam
            side = ref.battle.export()["sides"][0]
            mon = side["pokemon"][0]
            if not (mon.get("transformed") and mon.get("status") == "frz"):
                continue
            assert len(mon["moveSlots"]) == 2 and side["lastSelectedMoveSlot"] == 3
            with pytest.raises(ShowdownError, match="moveSlot is null"):
                ref.step(np.array([0, 1]))
            frozen += 1
            if frozen == 2:
                break
    finally:
        ref.close()
    assert frozen == 2
