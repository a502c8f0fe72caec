"""The L1 component checks (``components.py``): they pass on the engine, and they fail on a
seeded bug in the Checkup's Burn (20 -> 21 damage), in that check and not in the others that
never meet a Burn; ``mask:legal`` fails on a seeded bug in the evolution mask. Slow: one
compilation of the transition over ~400 cases, twice."""

from __future__ import annotations

import pytest

from envport.envs.tcg_pocket import components as K
from envport.envs.tcg_pocket.jax_engine import rules
from envport.verify.mutation.generate import OPERATORS, applied, generate

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
