"""The move families added after the first 131 moves, each in lockstep with the real Showdown.

``lockstep --teams moves`` builds teams of any species whose move slots are half drawn from the
focused moves, so that those moves meet each other and the rest of the engine often; every step
compares the whole comparable state (PRNG words included), the legal choices and the draw tape
with Showdown's. Each test also checks, from Showdown's own log, that the focused moves were
really used, so that a family cannot pass by not being played. The jitted step is the one
compiled for the whole test folder (``engine.compiled``).
"""

from __future__ import annotations

import numpy as np
import pytest

from envport.envs.pokemon_gen1 import components as C
from envport.envs.pokemon_gen1 import lockstep as L
from envport.envs.pokemon_gen1 import moves as MV
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

# (focus, battles, seed): small batches; a family's moves must each appear in Showdown's log
FAMILY_RUNS = [
    ("copy", 2, 31),  # Mimic, Mirror Move, Transform, Conversion
    ("residual,noeffect", 2, 32),  # Toxic, Leech Seed, Haze; Splash, Teleport, Roar, Whirlwind
    ("twoturn,disable", 2, 33),  # the six two-turn moves (Dig / Fly invulnerable), Disable
    ("thrash,payday,fissure,guillotine,horndrill,minimize,defensecurl,dreameater", 2, 34),
]


def _check(summary: L.Summary, focus: str) -> None:
    assert summary.diverged == 0, "\n".join(d.describe() for d in summary.divergences)
    # a battle that Showdown itself cannot go on with is compared up to that point only
    assert summary.identical + summary.showdown_errors == summary.battles
    assert summary.identical >= summary.battles - 1
    used = {m: summary.moves_used[m] for m in L.focus_moves(focus)}
    assert all(n > 0 for n in used.values()), f"focused moves never used: {used}"


@pytest.mark.parametrize(("focus", "battles", "seed"), FAMILY_RUNS)
def test_family_in_lockstep_with_showdown(worker, focus, battles, seed):
    summary = L.run(battles, seed=seed, teams="moves", moves=focus, worker=worker)
    _check(summary, focus)
    assert summary.turns > 30 * battles


def test_each_moves_effect_on_one_turn_against_showdown():
    """L1's ``move_effects`` check at its default size: every supported move used twice, once
    by each side, from random-battle states with random plain volatiles and stages (here, not
    in test_pokemon_mechanics.py, because it steps the engine's compiled step, which this file's
    worker shares with the other files that step it)."""
    C.component_checks("default")["move_effects"]()


def test_move_effects_sizes_cover_every_entry_twice_and_24_times():
    """The default and slow sizes are whole rounds (2 and 24) of the entries: each move once per
    setup, so a second setup of a move (Bide's) is not cut off at the default size."""
    entries = C.move_effect_entries()
    assert [C.SCALES[s]["move_effects"] for s in ("default", "slow")] == [
        2 * len(entries), 24 * len(entries)]
    bide = [setup for m, setup in entries if m == S.MOVE_ID["bide"]]
    assert bide == list(C.SETUPS["bide"]) and len(bide) == 2


def _setup_cases(move: str, which: int = 0, step: bool = False, turns: int = 1) -> list[tuple]:
    """``move_effects``' states for ``move`` with its setup ``which`` of :data:`SETUPS`, as
    Showdown takes them back: ``(user, state, slot, the replies' slots)``, at least 5 of 20
    tries; with ``step``, each followed by Showdown's state and log after each of ``turns``
    turns while both sides have a move to choose (the user on ``slot``, then on its first legal
    move; the other side on that turn's reply, else its first legal move)."""
    from envport.envs.pokemon_gen1 import env as V

    ref = V.ShowdownReference()
    rng = np.random.default_rng(3)
    made: list[tuple] = []
    try:
        for seed in range(40, 60):
            user = seed % 2
            got = C._move_effect_state(ref, rng, seed, S.MOVE_ID[move], user, False,
                                       C.SETUPS[move][which])
            if got is None:
                continue
            made.append((user, *got))
            state, slot, replies = got
            for turn in range(turns if step else 0):
                if not C.at_move_request(state):
                    break  # over, or a forced switch
                action = np.zeros(2, np.int32)
                action[user] = slot if turn == 0 else np.flatnonzero(state["mask"][user, :4])[0]
                action[1 - user] = (replies[turn] if turn < len(replies)
                                    else np.flatnonzero(state["mask"][1 - user, :4])[0])
                _, _, _, _, info = ref.step(action)
                state = ref.get_state()
                made[-1] += (state, info["log"])
    finally:
        ref.close()
    assert len(made) >= 5
    return made


def test_a_setup_case_starts_disabled_with_the_replies_known():
    """``move_effects``' Bide setup: the user with no status, disabled for at least the turns a
    case follows on another move than Bide, the other side knowing Growl and Spore in the
    slots returned, as Showdown takes the state back."""
    for user, state, slot, replies in _setup_cases("bide"):
        k, j = int(state["active.slot"][user]), int(state["active.slot"][1 - user])
        assert state["team.moves"][user, k, slot] == S.MOVE_ID["bide"]
        assert state["team.status"][user, k] == 0
        assert int(state["active.volatiles"][user]) & S.VOLATILE_BIT["disable"]
        assert state["active.disable_slot"][user] != slot
        assert state["active.disable_time"][user] >= C.FOLLOW_TURNS - 1
        assert state["team.moves"][1 - user, j, replies].tolist() == [
            S.MOVE_ID["growl"], S.MOVE_ID["spore"]]


def test_a_bide_setup_case_starts_against_a_slower_foe_behind_a_full_substitute():
    """``move_effects``' second Bide setup (run H's survivor engine:m604, a Substitute left at 0
    HP when it outlasts Bide's release): the foe's active behind a Substitute of floor(maxhp /
    4) + 1 HP, at -6 Speed with the stat that stage gives, knowing Sonic Boom then Growl (its
    replies: Growl twice, one slot); as Showdown takes the state back."""
    from envport.envs.pokemon_gen1 import spec_support as SS

    spe = T.BOOST_INDEX["spe"]
    for user, state, slot, replies in _setup_cases("bide", 1):
        foe, j = 1 - user, int(state["active.slot"][1 - user])
        assert state["team.moves"][user, int(state["active.slot"][user]), slot] == S.MOVE_ID["bide"]
        assert state["team.moves"][foe, j, replies].tolist() == [
            S.MOVE_ID["sonicboom"], S.MOVE_ID["growl"], S.MOVE_ID["growl"]]
        assert replies[1] == replies[2]
        assert int(state["active.volatiles"][foe]) & S.VOLATILE_BIT["substitute"]
        assert state["active.substitute_hp"][foe] == state["team.maxhp"][foe, j] // 4 + 1
        assert state["active.boosts"][foe, spe] == -6
        assert state["team.modified"][foe, j, spe] == SS.stage_stat(
            state["active.stored"][foe, spe], -6)


@pytest.mark.parametrize("move", ["jumpkick", "highjumpkick"])
def test_a_crash_setup_case_starts_confused_at_one_hp_against_plus_six_evasion(move):
    """``move_effects``' setup where a confusion self-hit or a crash must knock the user out:
    the user at 1 HP, confused for this turn at least, knowing the move; the foe at +6
    evasion, knowing Growl (its reply, which cannot knock the user out first); as Showdown
    takes the state back."""
    evasion = T.BOOST_INDEX["evasion"]
    for user, state, slot, replies in _setup_cases(move):
        k, j = int(state["active.slot"][user]), int(state["active.slot"][1 - user])
        assert state["team.moves"][user, k, slot] == S.MOVE_ID[move]
        assert state["team.moves"][1 - user, j, replies].tolist() == [S.MOVE_ID["growl"]]
        assert state["team.hp"][user, k] == 1
        assert int(state["active.volatiles"][user]) & S.VOLATILE_BIT["confusion"]
        assert 2 <= state["active.confusion_time"][user] <= 5
        assert state["active.boosts"][1 - user, evasion] == 6


def test_focus_moves_reads_ids_and_families():
    assert L.focus_moves("copy") == MV.FAMILIES["copy"]
    assert L.focus_moves("toxic, copy,toxic") == ("toxic",) + MV.FAMILIES["copy"]
    assert L.focus_moves(None) == MV.FOCUS_DEFAULT
    with pytest.raises(ValueError, match="nosuchmove"):
        L.focus_moves("nosuchmove")
    with pytest.raises(ValueError, match="crunch"):  # a Gen 2 move
        L.focus_moves("crunch")
    with pytest.raises(ValueError, match="--moves needs --teams moves"):
        L.run(1, teams="pool", moves="copy")
    with pytest.raises(ValueError, match="--teams"):
        L.run(1, teams="nosuch")


def test_default_focus_is_supported_and_the_state_fits_one_kib():
    MV.check_supported(MV.FOCUS_DEFAULT, "FOCUS_DEFAULT")
    assert S.nbytes(S.empty()) <= 1024
    # the pool of gen1randombattle is fully played now
    assert MV.unsupported(MV.T.POOL_MOVES) == []


@pytest.mark.parametrize("move", ["recover", "softboiled", "rest"])
def test_a_recovery_setup_case_starts_255_hp_below_the_max(move):
    """``move_effects``' setup for the Gen 1 recovery glitch (the move fails 255 or 511 HP below
    the max unless the HP is a multiple of 256): the user knows the move, 255 HP below its
    max, as Showdown takes the state back."""
    for user, state, slot, replies in _setup_cases(move):
        k = int(state["active.slot"][user])
        assert state["team.moves"][user, k, slot] == S.MOVE_ID[move] and replies == []
        assert state["team.maxhp"][user, k] - state["team.hp"][user, k] == 255


def test_a_haze_setup_case_starts_with_the_foe_frozen_at_minus_six_speed():
    """``move_effects``' Haze setup (run H's survivor engine:m2180, the queued move of a foe
    that has yet to act): the foe's active frozen, alone frozen on its side, at -6 Speed with
    the stat that stage gives, offered only its lone "Fight"; as Showdown takes it back."""
    from envport.envs.pokemon_gen1 import spec_support as SS

    spe = T.BOOST_INDEX["spe"]
    for user, state, slot, replies in _setup_cases("haze"):
        foe, j = 1 - user, int(state["active.slot"][1 - user])
        assert state["team.moves"][user, int(state["active.slot"][user]), slot] == S.MOVE_ID["haze"]
        assert state["team.status"][foe].tolist().count(T.STATUS_FRZ) == 1
        assert state["team.status"][foe, j] == T.STATUS_FRZ and replies == []
        assert state["active.boosts"][foe, spe] == -6
        assert state["team.modified"][foe, j, spe] == SS.stage_stat(
            state["active.stored"][foe, spe], -6)
        assert state["mask"][foe, :4].tolist() == [True, False, False, False]


def test_a_zero_damage_submission_setup_case_takes_no_recoil_in_showdown():
    """``move_effects``' Submission setups (run I's survivor engine:m849, recoil after a hit
    dealing 0): Chansey at -6 Attack and +6 accuracy with Focus Energy, against the lead of the
    other side at +6 Defense without Reflect, of a species whose both types resist Fighting,
    answering Growl. In Showdown the hit deals 0 (getDamage's 2 halved twice) and no recoil
    follows, on all but a crit or a miss."""
    from envport.envs.pokemon_gen1 import spec_support as SS

    b = T.BOOST_INDEX
    fighting = T.TYPE_ID["Fighting"]
    foes = {T.SPECIES_IDS[sp] for sp in C._double_resisting("Fighting")}
    assert len(foes) >= 5
    assert all(T.EFFECTIVENESS[fighting, t] < 0 for sp in foes for t in T.SPECIES_TYPES[sp])
    zero = 0
    cases = _setup_cases("submission", 1, step=True)
    for user, state, slot, replies, _, log in cases:
        foe, k, j = 1 - user, int(state["active.slot"][user]), int(state["active.slot"][1 - user])
        assert state["team.species"][user, k] == T.SPECIES_IDS["chansey"]
        assert state["team.species"][foe, j] in foes
        assert state["team.moves"][user, k, slot] == S.MOVE_ID["submission"]
        assert state["team.moves"][foe, j, replies].tolist() == [S.MOVE_ID["growl"]]
        assert [state["active.boosts"][user, b["atk"]], state["active.boosts"][user, b["accuracy"]],
                state["active.boosts"][foe, b["def"]]] == [-6, 6, 6]
        assert state["team.modified"][foe, j, b["def"]] == SS.stage_stat(
            state["active.stored"][foe, b["def"]], 6)
        assert int(state["active.volatiles"][user]) & S.VOLATILE_BIT["focusenergy"]
        assert not int(state["active.volatiles"][foe]) & S.VOLATILE_BIT["reflect"]
        hit = [i for i, line in enumerate(log)
               if line.startswith("|move|") and "|Submission|" in line]
        assert len(hit) == 1, log
        after_hit = next((line for line in log[hit[0]:] if line.startswith("|-damage|")
                          and f"p{foe + 1}a:" in line), "")
        before_hp = f"{state['team.hp'][foe, j]}/{state['team.maxhp'][foe, j]}"
        zero += (after_hit.split("|")[3].split()[0] == before_hp
                 and not any("[from] Recoil" in x for x in log))
    assert zero >= len(cases) - 2, f"{zero} of {len(cases)} hits dealt 0 without recoil"


@pytest.mark.parametrize("move", ["wrap", "bind", "clamp", "firespin"])
def test_a_trapping_last_turn_setup_case_restarts_the_trap_at_one_hp_in_showdown(move):
    """``move_effects``' trapping setup (run I's survivor engine:m898): the user, poisoned at 1
    HP, in the last turn of its lock of the move (as the turns before leave it: duration 1, the
    move selected last, the foe trapped by it for 1 more turn), the foe at the stored damage + 1
    HP. In Showdown the repeated hit leaves the foe at 1 HP and restarts its partiallytrapped
    (duration 2); poison then knocks the user out and the turn ends there, so the restarted
    trap is what the state holds (the foe's HP, not: a Leech Seed on the user heals it)."""
    for user, state, slot, _, after, log in _setup_cases(move, 1, step=True):
        foe, k, j = 1 - user, int(state["active.slot"][user]), int(state["active.slot"][1 - user])
        assert slot == 0 and state["mask"][user, :4].tolist() == [True, False, False, False]
        assert int(state["active.volatiles"][user]) & S.VOLATILE_BIT["partialtrappinglock"]
        assert state["active.lock_duration"][user] == 1 and state["active.lock_move"][user] == (
            S.MOVE_ID[move])
        assert 2 <= state["active.lock_total"][user] <= 5
        assert state["side.last_selected_move"][user] == S.MOVE_ID[move]
        assert state["team.hp"][user, k] == 1 and state["team.status"][user, k] == T.STATUS_PSN
        assert int(state["active.volatiles"][foe]) & S.VOLATILE_BIT["partiallytrapped"]
        assert state["active.trapped_duration"][foe] == 1
        assert state["team.hp"][foe, j] == state["active.lock_damage"][user] + 1
        hit = next(line for line in log if line.startswith(f"|-damage|p{foe + 1}a:"))
        assert hit.split("|")[3].split()[0] == f"1/{state['team.maxhp'][foe, j]}", "\n".join(log)
        assert after["team.hp"][user, k] == 0, "\n".join(log)  # the user's Leech Seed may heal
        assert int(after["active.volatiles"][foe]) & S.VOLATILE_BIT["partiallytrapped"]
        assert after["active.trapped_duration"][foe] == 2


def test_a_fire_spin_lock_that_stored_0_repeats_0_in_showdown():
    """``move_effects``' third Fire Spin setup (run L's survivor mechanics:m410, ``trap_lock
    >= 0`` -> ``> 0`` in getDamage): the lock's last turn with 0 stored, as a first hit into
    a Rock/Water lead leaves it (a double resistance halves getDamage's 2 to 0), the foe at
    1 HP. In Showdown the repeated hit deals 0 and crits nothing: the foe is left at 1 HP."""
    foes = {T.SPECIES_IDS[sp] for sp in C._double_resisting("Fire")}
    assert len(foes) >= 2
    for user, state, slot, _, _after, log in _setup_cases("firespin", 2, step=True):
        foe, j = 1 - user, int(state["active.slot"][1 - user])
        assert slot == 0 and state["active.lock_move"][user] == S.MOVE_ID["firespin"]
        assert int(state["active.volatiles"][user]) & S.VOLATILE_BIT["partialtrappinglock"]
        assert state["active.lock_damage"][user] == 0 and state["active.lock_duration"][user] == 1
        assert state["team.species"][foe, j] in foes and state["team.hp"][foe, j] == 1
        assert any(line.startswith(f"|move|p{user + 1}a:") and "|Fire Spin|" in line
                   for line in log), "\n".join(log)
        assert not any(line.startswith("|-crit|") for line in log), "\n".join(log)
        # the hit's line (a Leech Seed on the user may heal the foe later in the turn)
        hit = next(line for line in log if line.startswith(f"|-damage|p{foe + 1}a:"))
        assert hit.split("|")[3].split()[0] == f"1/{state['team.maxhp'][foe, j]}", "\n".join(log)


def test_a_transform_setup_case_between_three_move_leads_leaves_no_fourth_slot_in_showdown():
    """``move_effects``' second Transform setup (run L's survivor engine:m1409, one more
    separate base slot past both move lists): Ditto and the other side's lead each knowing 3
    moves, the user Transform among them. Where Showdown's Transform works, the user holds the
    foe's 3 moves as virtual slots over its own 3 base slots, and nothing in slot 4, base or
    not."""
    worked = 0
    for user, state, slot, _, after, log in _setup_cases("transform", 1, step=True):
        foe = 1 - user
        k, j = int(state["active.slot"][user]), int(state["active.slot"][foe])
        assert state["team.species"][user, k] == T.SPECIES_IDS["ditto"]
        assert state["team.moves"][user, k, slot] == S.MOVE_ID["transform"]
        assert [(state["team.moves"][s, i] > 0).sum() for s, i in ((user, k), (foe, j))] == [3, 3]
        if not any(line.startswith(f"|-transform|p{user + 1}a:") for line in log) or (
                after["team.hp"][user, k] == 0):  # no Transform, or the user out after it
            continue
        worked += 1
        assert after["active.base_separate"][user].tolist() == [True, True, True, False]
        assert after["active.slot_virtual"][user].tolist() == [True, True, True, False]
        assert after["team.moves"][user, k, 3] == 0
        assert after["active.base_moves"][user, 3] == 0
    assert worked >= 3


def test_a_transform_setup_case_between_leads_of_one_level_takes_the_foe_s_speed_in_showdown():
    """``move_effects``' third Transform setup (run P's survivor engine:m1443, Transform's
    cached speed written nowhere): Tauros against a lead of its level (68) with another base
    Speed, the foe at Speed stage 0 and not paralysed. Both have one level, Speed IV and EV, so
    where Showdown's Transform works the user's Speed becomes the foe's, which its own was not:
    setSpecies caches that speed, and the eachEvent('Update') after the move ties the two."""
    worked = 0
    foes = {T.SPECIES_IDS[sp] for sp in C.SETUPS["transform"][2].foe_leads}
    for user, state, slot, _, after, log in _setup_cases("transform", 2, step=True):
        foe = 1 - user
        k, j = int(state["active.slot"][user]), int(state["active.slot"][foe])
        assert state["team.species"][user, k] == T.SPECIES_IDS["tauros"]
        assert state["team.species"][foe, j] in foes
        assert state["team.moves"][user, k, slot] == S.MOVE_ID["transform"]
        for field in ("team.level", "team.spe_iv", "team.spe_ev"):
            assert state[field][user, k] == state[field][foe, j]
        assert state["active.boosts"][foe, 4] == 0 and state["team.status"][foe, j] != T.STATUS_PAR
        speeds = [int(state["active.stored"][s, 4]) for s in (user, foe)]
        assert speeds[0] != speeds[1]
        if not any(line.startswith(f"|-transform|p{user + 1}a:") for line in log) or (
                after["team.hp"][user, k] == 0):  # no Transform, or the user out after it
            continue
        worked += 1
        assert after["active.stored"][user, 4] == speeds[1]
    assert worked >= 3


def test_a_headbutt_setup_case_after_a_trap_flinches_the_foe_in_showdown():
    """``move_effects``' Headbutt setups (run M's survivor engine:m2252, the slower side's count
    in ``residual``): both actives with fakepartiallytrapped for one more turn, the user at +6
    Speed, the foe at -6 answering Growl, and an LCG seed under which Showdown's turn flinches
    the foe; so the residual has the foe's two duration volatiles against the user's one."""
    spe = T.BOOST_INDEX["spe"]
    users = set()
    for user, state, slot, replies, _after, log in _setup_cases("headbutt", 1, step=True):
        foe, k, j = 1 - user, int(state["active.slot"][user]), int(state["active.slot"][1 - user])
        users.add(user)
        assert state["team.moves"][user, k, slot] == S.MOVE_ID["headbutt"]
        assert state["team.moves"][foe, j, replies].tolist() == [S.MOVE_ID["growl"]]
        for s in (user, foe):
            assert int(state["active.volatiles"][s]) & S.VOLATILE_BIT["fakepartiallytrapped"]
            assert state["active.fake_trapped_duration"][s] == 1
        assert [state["active.boosts"][user, spe], state["active.boosts"][foe, spe]] == [6, -6]
        assert any(line.startswith(f"|cant|p{foe + 1}a:") and line.endswith("|flinch")
                   for line in log), "\n".join(log)
    assert users == {0, 1}


def test_a_wrap_setup_case_between_two_leads_of_one_species_ties_the_lock_and_the_trap():
    """``move_effects``' third Wrap setup (run N's survivor engine:m2258, ``n[0] + n[1]`` ->
    ``n[0] - n[1]`` in ``residual``'s one tied group): the two leads of one species at Speed
    stage 0, so their speeds tie, the user at +6 accuracy and the foe answering Growl. Where
    Showdown's Wrap hits and both stand, the residual has one duration volatile a side (the lock,
    the trap) at equal speeds: one group of two handlers."""
    spe, acc = T.BOOST_INDEX["spe"], T.BOOST_INDEX["accuracy"]
    stat = C.STORED.index("spe")
    tied = 0
    for user, state, slot, replies, after, log in _setup_cases("wrap", 2, step=True):
        foe, k, j = 1 - user, int(state["active.slot"][user]), int(state["active.slot"][1 - user])
        assert state["team.species"][user, k] == state["team.species"][foe, j] == (
            T.SPECIES_IDS["tauros"])
        assert state["team.stats"][user, k, stat] == state["team.stats"][foe, j, stat]
        assert state["active.boosts"][:, spe].tolist() == [0, 0]
        assert state["active.boosts"][user, acc] == 6
        assert state["team.moves"][user, k, slot] == S.MOVE_ID["wrap"]
        assert state["team.moves"][foe, j, replies].tolist() == [S.MOVE_ID["growl"]]
        assert any(line.startswith(f"|move|p{user + 1}a:") and "|Wrap|" in line
                   for line in log), "\n".join(log)
        if after["battle.ended"] or not (
                int(after["active.volatiles"][user]) & S.VOLATILE_BIT["partialtrappinglock"]):
            continue  # missed (1 in 256 at +6), or the battle over
        tied += 1
        assert int(after["active.volatiles"][foe]) & S.VOLATILE_BIT["partiallytrapped"]
        assert after["team.stats"][user, k, stat] == after["team.stats"][foe, j, stat]
    assert tied >= 3


def test_a_thrash_user_trapped_on_its_lock_s_second_turn_keeps_its_counter_in_showdown():
    """``move_effects``' second Thrash setup (run O's survivor engine:m639, ``thrash & locked``
    -> ``thrash | locked`` where tryMoveHit counts the lock down): Thrash begins its lock while
    the faster foe answers Growl; on the lock's second turn the foe's Wrap (at +6 accuracy)
    traps the user, which cannot move. In Showdown it keeps lockedmove with its counter as the
    first turn left it."""
    kept = 0
    for user, state, slot, replies, after, _log, after2, log2 in (
            c for c in _setup_cases("thrash", 1, step=True, turns=2) if len(c) == 8):
        foe, k, j = 1 - user, int(state["active.slot"][user]), int(state["active.slot"][1 - user])
        assert state["team.moves"][user, k, slot] == S.MOVE_ID["thrash"]
        assert state["team.moves"][foe, j, replies].tolist() == [S.MOVE_ID["growl"],
                                                                 S.MOVE_ID["wrap"]]
        if not int(after["active.volatiles"][user]) & S.VOLATILE_BIT["lockedmove"] or not any(
                line.startswith(f"|cant|p{user + 1}a:") and "partiallytrapped" in line
                for line in log2):
            continue  # no lock (the user could not move on turn 1), or Wrap did not trap it
        kept += 1
        assert int(after2["active.volatiles"][user]) & S.VOLATILE_BIT["lockedmove"]
        assert after2["active.locked_time"][user] == after["active.locked_time"][user] > 0
    assert kept >= 3


def test_a_transformed_metronome_user_s_base_slot_wraps_from_63_pp_to_0_in_showdown():
    """``move_effects``' second Metronome setup (run O's survivor engine:m1692, ``% 64`` ->
    ``% 65`` in useMove's base-slot PP): the user transformed (by Showdown's own turn) into a
    foe that knows Metronome in the slot where the user's own move holds 63 PP. Where the user
    uses Metronome, Showdown gives that base slot one PP modulo 64: 0."""
    wrapped = 0
    for user, state, slot, _, after, log in _setup_cases("metronome", 1, step=True):
        k = int(state["active.slot"][user])
        assert state["active.transformed"][user]
        assert state["team.moves"][user, k, slot] == S.MOVE_ID["metronome"]
        assert state["active.base_pp"][user, slot] == 63
        if not any(line.startswith(f"|move|p{user + 1}a:") and line.split("|")[3] == "Metronome"
                   for line in log) or not after["active.transformed"][user]:
            continue  # the user could not move, or left the field (fainted)
        wrapped += 1
        assert after["active.base_pp"][user, slot] == 0
    assert wrapped >= 3


@pytest.mark.parametrize("move", ["jumpkick", "highjumpkick"])
def test_a_confused_kick_behind_a_substitute_hurts_the_foes_substitute_in_showdown(move):
    """``move_effects``' second setup of the kicks (seed 2030's survivor engine:m550): the
    confused user and the foe each behind a full Substitute, the foe at +6 evasion. Where the
    user hurts itself or crashes (Showdown's log hints at Gen 1's rule), the foe's Substitute
    takes the damage (left above 0, or broken) and the user's own Substitute stays."""
    hurt = 0
    for user, state, _slot, _, after, log in _setup_cases(move, 1, step=True):
        foe = 1 - user
        for s in (user, foe):
            k = int(state["active.slot"][s])
            assert int(state["active.volatiles"][s]) & S.VOLATILE_BIT["substitute"]
            assert state["active.substitute_hp"][s] == state["team.maxhp"][s, k] // 4 + 1
        if not any(line.startswith("|-hint|In Gen 1, if a Pokemon with a Substitute hurts")
                   for line in log):
            continue
        hurt += 1
        left = after["active.substitute_hp"][foe]
        assert left < state["active.substitute_hp"][foe]
        assert bool(int(after["active.volatiles"][foe]) & S.VOLATILE_BIT["substitute"]) == (
            left > 0), "\n".join(log)
        assert after["active.substitute_hp"][user] == state["active.substitute_hp"][user]
    assert hurt >= 3


@pytest.mark.parametrize(("move", "stage", "volatile"), [("minimize", 6, "minimize"),
                                                          ("defensecurl", 1, "defensecurl")])
def test_a_self_boost_at_plus_6_fails_before_its_volatile_in_showdown(move, stage, volatile):
    """``move_effects``' second setup of Minimize and Defense Curl (run J again's survivor
    engine:m1239): the user at +6 in the stage the move raises. The boost changes nothing, so
    Showdown's moveHit fails the move before its volatile: a user without it stays without."""
    failed = 0
    for user, state, _slot, _, after, log in _setup_cases(move, 1, step=True):
        assert state["active.boosts"][user, stage] == 6
        bit = S.VOLATILE_BIT[volatile]
        used = any(line.startswith(f"|move|p{user + 1}a:") for line in log)
        if used and not int(state["active.volatiles"][user]) & bit and not after["battle.ended"]:
            assert not int(after["active.volatiles"][user]) & bit, "\n".join(log)
            assert after["active.boosts"][user, stage] == 6
            failed += 1
    assert failed >= 3


def test_disable_against_a_foe_with_pp_in_one_move_disables_that_move_in_showdown():
    """``move_effects``' second Disable setup (run K's survivor engine:m1075, ``t_pp > 0`` ->
    ``>= 0``: Disable's sample among all the foe's moves): the user at +6 accuracy, the foe's
    active with PP in one move only. Where Showdown's Disable starts, it disables that move
    (named by the log's ``-start``: the volatile may end within the turn)."""
    started = 0
    for user, state, slot, _, _after, log in _setup_cases("disable", 1, step=True):
        foe, j = 1 - user, int(state["active.slot"][1 - user])
        moves, pp = state["team.moves"][foe, j], state["team.pp"][foe, j]
        with_pp = np.flatnonzero((moves > 0) & (pp > 0))
        assert len(with_pp) == 1 and (moves > 0).sum() > 1
        k = int(state["active.slot"][user])
        assert state["team.moves"][user, k, slot] == S.MOVE_ID["disable"]
        assert state["active.boosts"][user, T.BOOST_INDEX["accuracy"]] == 6
        for line in log:
            if line.startswith(f"|-start|p{foe + 1}a:") and "|Disable|" in line:
                name = "".join(ch for ch in line.split("|")[4].lower() if ch.isalnum())
                assert name == S.MOVE_NAME[int(moves[with_pp[0]])], "\n".join(log)
                started += 1
    assert started >= 3


@pytest.mark.parametrize("move", ["takedown", "megadrain"])
def test_a_recoil_or_drain_setup_case_starts_against_a_full_substitute(move):
    """``move_effects``' second setup of the recoil and drain moves (run H's engine:m799 after
    session 43's new cases: recoil and drain where a Substitute holds, none where it breaks):
    the foe's active behind a Substitute of floor(maxhp / 4) + 1 HP, the user knowing the
    move; as Showdown takes the state back."""
    for user, state, slot, replies in _setup_cases(move, 1):
        foe, j = 1 - user, int(state["active.slot"][1 - user])
        assert state["team.moves"][user, int(state["active.slot"][user]), slot] == S.MOVE_ID[move]
        assert int(state["active.volatiles"][foe]) & S.VOLATILE_BIT["substitute"]
        assert state["active.substitute_hp"][foe] == state["team.maxhp"][foe, j] // 4 + 1
        assert replies == []
