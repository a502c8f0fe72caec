"""The L1 component checks (``components.py``): they pass on the engine, and they fail on a
seeded bug in the Checkup's Burn (20 -> 21 damage), in that check and not in the others that
never meet a Burn; ``mask:legal`` fails on a seeded bug in the evolution mask, ``reset:deal``
and ``reset:decks`` on seeded bugs in the reset (an opening hand, the deck choice). Slow: one
compilation of the transition over ~400 cases, twice."""

from __future__ import annotations

import pytest

from envport.envs.tcg_pocket import components as K
from envport.envs.tcg_pocket.jax_engine import rules
from envport.verify.mutation.apply import applied
from envport.verify.mutation.generate import OPERATORS, generate

pytestmark = pytest.mark.slow


def test_every_check_passes_on_the_engine():
    for check in K.components().values():
        check()  # raises ComponentMismatch naming the check and the fields


def test_a_seeded_burn_bug_fails_the_burn_check_only():
    burn = [ms for ms in generate(rules, tuple(OPERATORS))
            if ms.mutant.operator == "constant" and ms.mutant.original == "20"
            and "C_BURNED" in _line(ms.mutant.line)]
    assert burn, "the Burn's 20 is no longer in rules.py: update this test"
    with applied(rules, burn[0]):
        with pytest.raises(K.ComponentMismatch, match="checkup:burned"):
            K.components()["checkup:burned"]()
        K.components()["checkup:poisoned"]()  # no Burn in those cases: still passes


def test_a_seeded_evolution_mask_bug_fails_the_mask_check():
    # ``evo & match`` -> ``evo | match``: an evolution card offered onto any Pokémon in play
    wide = [ms for ms in generate(rules, tuple(OPERATORS))
            if ms.mutant.operator == "arith" and ms.mutant.original == "evo[:, None] & match"]
    assert wide, "the evolution mask's `evo[:, None] & match` is no longer in rules.py"
    with applied(rules, wide[0]), pytest.raises(K.ComponentMismatch,
                                                match=r"mask:legal: .* offers \[[0-9]"):
        K.components()["mask:legal"]()
    K.components()["mask:legal"]()  # the engine again: passes


def _line(n: int) -> str:
    import inspect

    return inspect.getsource(rules).splitlines()[n - 1]


def test_seeded_reset_bugs_fail_the_reset_checks():
    # ``deal_opening_hand(s, 0)`` -> ``(s, 1)``: player 1 dealt twice, player 0 no hand
    twice = _mutant(rules, "new_game", "deal_opening_hand(s, 0)", "deal_opening_hand(s, 1)")
    with applied(rules, twice), pytest.raises(K.ComponentMismatch, match="reset:deal: reset 0"):
        K.components()["reset:deal"]()
    # the dealt deck index drawn from 1..n-1: deck 0 never dealt, every deal still a deck
    from envport.envs.tcg_pocket.jax_engine import jax_env

    skip0 = _mutant(jax_env, "TcgPocket", "randint(k, (), 0,", "randint(k, (), 1,")
    with applied(jax_env, skip0):
        K.components()["reset:deal"]()  # the game start after the choice is the same
        with pytest.raises(K.ComponentMismatch, match=r"1 of the 512 decks were never dealt"):
            K.components()["reset:decks"]()
    K.components()["reset:decks"]()  # the engine again: passes


@pytest.mark.parametrize("original, mutated", [
    # the bonus on "not all heads" instead of "all heads"
    ("(h == n)", "(h != n)"),
    # the all-heads bonus never given (and given to the other templates on h == n)
    ("(t == C.T_ALL_HEADS_BONUS) & (h == n)", "(t != C.T_ALL_HEADS_BONUS) & (h == n)")])
def test_seeded_all_heads_bugs_fail_its_template_check(original, mutated):
    # seen only where the defender outlives the attack: Run 3's cases had Kingler's 80 knock
    # out a 70-HP Wooloo on every outcome, and both survived
    bug = _mutant(rules, "use_attack", original, mutated, operator="compare")
    with applied(rules, bug), pytest.raises(K.ComponentMismatch,
                                            match="template:all_heads_bonus: case"):
        K.components()["template:all_heads_bonus"]()


def _mutant(module, top_level: str, original: str, mutated: str, operator: str = "constant"):
    """The one ``operator`` mutant of ``module``'s ``top_level`` turning ``original`` into
    ``mutated`` in its statement's source."""
    found = [ms for ms in generate(module, tuple(OPERATORS))
             if ms.mutant.top_level == top_level and ms.mutant.operator == operator
             and mutated in ms.statement_code and original not in ms.statement_code]
    assert len(found) == 1, f"{len(found)} mutants {original!r} -> {mutated!r}: update this test"
    return found[0]


def test_seeded_trainer_bugs_fail_the_trainer_and_mask_checks():
    # Blaine's +30 -> -30: seen only in an attack after Blaine was played
    blaine = _mutant(rules, "damage_to_active", "damage + jnp.where((base > 0) & s.blaine[p]",
                     "damage - jnp.where((base > 0) & s.blaine[p]", operator="arith")
    with applied(rules, blaine), pytest.raises(K.ComponentMismatch, match="trainer:blaine: case"):
        K.components()["trainer:blaine"]()
    # Red Card playable on an opponent with no hand only if its deck holds 2 cards, not 1
    red = _mutant(rules, "trainer_mask", "(zcount(s.deck[o]) > 0)", "(zcount(s.deck[o]) > 1)")
    with applied(rules, red), pytest.raises(K.ComponentMismatch, match=r"lacks \[14\]"):
        K.components()["mask:legal"]()


def test_a_seeded_condition_bug_fails_the_status_checks():
    # an inflicted Asleep/Paralyzed/Confused keeps only the other exclusive conditions (drops
    # Poison, keeps Sleep): seen only on a defender that already has a condition
    bug = _mutant(rules, "add_condition", "row & ~EXCLUSIVE", "row & EXCLUSIVE",
                  operator="negation")
    with applied(rules, bug), pytest.raises(K.ComponentMismatch, match="template:status: case"):
        K.components()["template:status"]()
