"""The Gen 1 mechanics in JAX: the spec's measured numbers (no Node needed), then the L1
component checks against Showdown's own functions (reference/probe.js).

The numbers of the first part come from ../shared/specs/pokemon-gen1.md section 4 (measured in
Showdown by the spec's author), not from this code. The component checks need Node and the
pinned package; they are skipped (saying so) only where the reference cannot start.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import components as C
from envport.envs.pokemon_gen1 import mechanics as M
from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1 import tables as T
from envport.envs.pokemon_gen1.reference import ReferenceUnavailable

DV15 = [30] * 6
EV255 = [255] * 6


def stats_of(species: str, level: int = 100) -> list[int]:
    return [int(v) for v in M.calc_stats(T.SPECIES_IDS[species], level, DV15, EV255)]


def test_stats_of_the_worked_example():
    tauros, chansey, starmie = stats_of("tauros"), stats_of("chansey"), stats_of("starmie")
    assert tauros[1] == 298 and tauros[5] == 318  # Atk, Spe (spec 4)
    assert chansey[0] == 703 and chansey[2] == 108  # HP, Def
    assert starmie[2] == 268


def test_odd_ivs_are_made_even_and_evs_clamped():
    base = M.calc_stats(T.SPECIES_IDS["mew"], 50, [31] * 6, [300] * 6)
    assert np.array_equal(base, M.calc_stats(T.SPECIES_IDS["mew"], 50, [30] * 6, [255] * 6))


def _inputs(attacker: str, defender: str, move: str = "bodyslam") -> M.DamageInputs:
    a, d = stats_of(attacker), stats_of(defender)
    return M.DamageInputs(
        move=T.MOVE_IDS[move], attacker_level=100,
        attacker_base_speed=int(T.BASE_STATS[T.SPECIES_IDS[attacker], 5]),
        attacker_types=T.SPECIES_TYPES[T.SPECIES_IDS[attacker]], attacker_modified=a[1:],
        attacker_unmodified=a[1:], attacker_focus_energy=False,
        target_types=T.SPECIES_TYPES[T.SPECIES_IDS[defender]], target_modified=d[1:],
        target_unmodified=d[1:], target_reflect=False, target_light_screen=False,
        target_hp=d[0])


def test_worked_example_damage_before_and_after_the_roll():
    # spec 4: crit chance 55 (Tauros base Speed 110), 295 before the roll on Chansey, 120 on
    # Starmie; the raw draws 226 (>= 55: no crit) then R = 242 give 279 and 113.
    assert int(M.crit_chance(110, False, 1)) == 55
    for defender, expected in (("chansey", 279), ("starmie", 113)):
        # the state whose next two draws are the crit draw (226) and R (242): seed 1,2,3,4 after
        # its first (accuracy) draw
        state, _ = prng.next_u32(prng.seed_state([1, 2, 3, 4]))
        state, dmg = M.get_damage(state, _inputs("tauros", defender))
        assert not bool(dmg.crit) and int(dmg.roll) == 242
        assert int(dmg.damage) == expected


def test_secondary_chances_of_the_spec():
    assert [int(M.secondary_numerator(c, False)) for c in (30, 10, 33)] == [77, 26, 85]
    assert int(M.secondary_numerator(10, True)) == 25


def test_every_multihit_move_is_2_to_5_or_a_fixed_count():
    """``multihit_count`` leaves out Showdown's ``random(lo, hi + 1)`` for other ranges: the
    generated table must have none (the spec's 2-5 moves, and Double Kick, Twineedle and
    Bonemerang at 2)."""
    lo = np.asarray(T.MOVE_MULTIHIT_MIN, np.int32)
    hi = np.asarray(T.MOVE_MULTIHIT_MAX, np.int32)
    two_to_five = (lo == 2) & (hi == 5)
    assert not ((lo > 0) & (lo != hi) & ~two_to_five).any()
    fixed = sorted(T.MOVE_NAMES[m] for m in np.flatnonzero((lo > 0) & (lo == hi)))
    assert fixed == ["bonemerang", "doublekick", "twineedle"]
    assert two_to_five.sum() >= 5  # the column is filled
    state = prng.seed_state([9, 9, 9, 9])
    for name, hits in (("doublekick", 2), ("tackle", 1)):  # neither draws
        s, n, drew = M.multihit_count(state, T.MOVE_IDS[name])
        assert np.array_equal(s, state) and int(n) == hits and not bool(drew)
    s, n, drew = M.multihit_count(state, T.MOVE_IDS["furyattack"])
    assert not np.array_equal(s, state) and 2 <= int(n) <= 5 and bool(drew)


def test_no_draw_when_nothing_is_drawn():
    state = prng.seed_state([9, 9, 9, 9])
    s, crit = M.crit_check(state, 0)  # c = 0: no draw, no crit
    assert np.array_equal(s, state) and not bool(crit)
    acc = M.accuracy(T.MOVE_IDS["swift"], 0, 0)  # accuracy: true
    s, hit = M.accuracy_check(state, acc)
    assert np.array_equal(s, state) and bool(hit)
    # a fixed-damage move: no crit draw and no roll
    s, dmg = M.get_damage(state, _inputs("tauros", "chansey", "seismictoss"))
    assert np.array_equal(s, state) and int(dmg.damage) == 100


def test_the_functions_jit_and_vmap():
    x = _inputs("tauros", "chansey")
    batched = [jnp.stack([jnp.asarray(v)] * 3) for v in x]
    states = prng.seed_state(jnp.asarray([[1, 2, 3, 4], [5, 6, 7, 8], [0, 0, 0, 1]]))
    s, d = jax.jit(M.get_damage)(states, M.DamageInputs(*batched))
    s1, d1 = jax.vmap(M.get_damage)(states, M.DamageInputs(*batched))
    assert np.array_equal(s, s1) and np.array_equal(d.damage, d1.damage)
    for i in range(3):
        si, di = M.get_damage(states[i], x)
        assert np.array_equal(s[i], si) and int(d.damage[i]) == int(di.damage)


# ---- against Showdown ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reference():
    try:
        C.worker()
    except ReferenceUnavailable as e:
        pytest.fail(f"Showdown reference not available (the set-up installs it): {e}")


@pytest.mark.parametrize("name", sorted(set(C.CHECKS) - {"move_effects"}))  # test_pokemon_moves
def test_component_against_showdown(reference, name):
    C.component_checks("default")[name]()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(C.CHECKS))
def test_component_against_showdown_thousands(reference, name):
    C.component_checks("slow", seed=1)[name]()


def test_a_wrong_mechanic_is_caught(reference, monkeypatch):
    """The checks can fail: Focus Energy multiplying instead of halving (the Gen 1 bug undone)
    must be reported, naming the component and the differing field."""
    real = M.crit_chance
    monkeypatch.setattr(M, "crit_chance", lambda b, fe, r: real(b, jnp.zeros_like(fe), r))
    C._jax_damage.clear_cache()
    try:
        with pytest.raises(AssertionError, match=r"component 'crit'.*differs"):
            C.check_crit(100, 0)
    finally:
        C._jax_damage.clear_cache()


def test_component_checks_reject_an_unknown_scale():
    with pytest.raises(ValueError, match="scale"):
        C.component_checks("huge")


def test_a_crit_draw_missing_from_the_tape_at_numerator_1_is_caught(monkeypatch):
    """The ``crit`` component's attackers of every base Speed reach the one numerator of 1
    (Slowpoke with Focus Energy): mutant ``mechanics:m440`` of run F (``drew_crit = formula &
    (chance > 1)``: the draw still made, but left off the tape) fails it, naming the draws."""
    from envport.verify.mutation.apply import applied
    from envport.verify.mutation.generate import generate

    [m440] = [ms for ms in generate(M, ("constant",))
              if ms.mutant.source_line == "drew_crit = formula & (chance > 0)"
              and ms.mutant.description == "0 -> 1"]
    with applied(M, m440):
        monkeypatch.setattr(C, "_jax_damage", jax.jit(
            lambda state, cols: M.get_damage(state, M.DamageInputs(**cols))))
        with pytest.raises(AssertionError, match=r"component 'crit': case \d+ differs in draws"
                                                 r"(.|\n)*Slowpoke"):
            C.check_crit(300, 0)
