"""The last five Gen 1 moves (Wrap, Bind, Clamp, Fire Spin, Metronome) and the 'nomove' thaw,
in lockstep with the real Showdown.

Every step of these battles compares the whole comparable state (the partial-trapping volatiles
and their counters included, the PRNG words), both sides' legal choices (the trapped Pokemon's
"Fight", the trapper's semi-lock and ``maybeLocked``) and the draw tape (the lock's 2-5 draw, the
residual and DisableMove handlers' tie draws, Metronome's ``sample``) with Showdown's. Each batch
checks from Showdown's own log that its focused moves were used. The jitted step is the one
compiled for the whole test folder (``engine.compiled``).
"""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import sys
from collections import Counter

import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import lockstep as L
from envport.envs.pokemon_gen1 import moves as MV
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1.reference import REFERENCE_DIR, gen1_set

# (focus, battles, seed): new seeds, small batches
RUNS = [("trap", 2, 41), ("metronome", 2, 42)]


@pytest.mark.parametrize(("focus", "battles", "seed"), RUNS)
def test_new_moves_in_lockstep_with_showdown(worker, focus, battles, seed):
    summary = L.run(battles, seed=seed, teams="moves", moves=focus, worker=worker)
    assert summary.diverged == 0, "\n".join(d.describe() for d in summary.divergences)
    assert summary.identical + summary.showdown_errors == summary.battles
    assert summary.identical >= summary.battles - 1
    used = {m: summary.moves_used[m] for m in L.focus_moves(focus)}
    assert all(n > 0 for n in used.values()), f"focused moves never used: {used}"


def test_metronome_samples_showdowns_own_list():
    # mods/gen1/moves.ts metronome.onHit's list, computed by the installed Showdown itself
    script = ("const {Dex} = require('pokemon-showdown'); const dex = Dex.mod('gen1');"
              "const m = dex.moves.all().filter(x => (!x.isNonstandard || x.isNonstandard === "
              "'Unobtainable') && x.flags['metronome']); m.sort((a, b) => a.num - b.num);"
              "console.log(JSON.stringify(m.map(x => x.id)));")
    out = subprocess.run(["node", "-e", script], cwd=REFERENCE_DIR, capture_output=True,
                         text=True, timeout=60, check=True)
    assert tuple(json.loads(out.stdout)) == MV.METRONOME_MOVES
    assert len(MV.METRONOME_MOVES) == 163


# Turn 1: p1 switches to Slowbro (so its side never selected a move: lastSelectedMove 'nomove')
# and Jynx's Ice Beam freezes it; turn 2: Slowbro's "Fight" queues 'nomove', Jynx's Ember thaws
# it first, and Slowbro uses runMove's 'nomove' ActiveMove (Fissure's animation, 102 power, ???).
# Seeds found by playing these turns in Showdown: 38 (it hits), 3 (it misses).
NOMOVE_SEEDS = [[38, 7, 11, 13], [3, 7, 11, 13]]


@pytest.mark.parametrize("seed", NOMOVE_SEEDS)
def test_nomove_after_a_thaw_in_lockstep_with_showdown(worker, seed):
    t1 = worker.pack_team([gen1_set("rattata", ["tackle"], level=60),
                           gen1_set("slowbro", ["tackle", "surf"], level=60)])
    t2 = worker.pack_team([gen1_set("jynx", ["icebeam", "ember"], level=60)])
    used: Counter = Counter()
    div, steps, _, _ = L.run_battle(worker, 0, seed, (t1, t2), random.Random(0), moves_used=used,
                                    script=[(E.SWITCH + 1, 0), (0, 1)])
    assert div is None, div.describe()
    assert steps > 2
    # nobody has Fissure: the one in Showdown's log is the 'nomove' ActiveMove
    assert used["fissure"] >= 1


def test_a_move_outside_gen_1_is_still_refused_by_name():
    MV.check_supported(set(MV.T.MOVE_IDS) - {"struggle"}, "all Gen 1 moves")
    assert MV.unsupported(MV.T.MOVE_IDS) == ["struggle"]  # played, but never in a team
    with pytest.raises(ValueError, match="crunch"):
        MV.check_supported(["bodyslam", "crunch"])


# `lockstep --battles 100 --seed 5151 --teams moves` diverged in these battles before the two
# partial-trapping fixes (README "L3 lockstep"): 6 (every hit of a trapping move restarts the
# target's partiallytrapped, seen when the trapper then faints from its own poison) and 8 (a
# lock made by a Metronome-called trapping move goes back to Metronome when the target switches
# out). Each battle is the whole run's battle i (same teams, seed and players).
@pytest.mark.parametrize("battle", [6, 8])
def test_battles_of_seed_5151_that_diverged_now_match_showdown(worker, battle):
    summary = L.run(100, seed=5151, teams="moves", worker=worker, only=[battle])
    assert summary.battles == 1
    assert summary.identical == 1, "\n".join(d.describe() for d in summary.divergences)
    assert summary.ended == 1


# Values no counter of these volatiles holds at rest, written where the volatile is absent.
JUNK = {"trapped_duration": 3, "trapped_move": S.MOVE_ID["surf"], "trapped_maybe_locked": True,
        "lock_duration": 4, "lock_total": 5, "lock_damage": 77, "lock_move": S.MOVE_ID["surf"],
        "fake_trapped_duration": 3, "flinch_duration": 2}


def test_nothing_reads_the_counters_of_an_absent_trapping_or_flinch_volatile(worker):
    """The reason ``mutants.py`` gives for ``drop_vol``'s ``0 -> 1`` (engine:m060 of run F):
    after every step the counters of each of these volatiles an active does not hold are
    overwritten with junk, and the battles, with trapping and flinching moves, still match
    Showdown step by step (state, legal choices, draws). Flinch comes and goes within a step,
    so only the trapping volatiles are counted going away between steps."""
    focus = L.focus_moves("trap,bite,stomp,headbutt,rollingkick,hyperfang,lowkick")
    gone: Counter = Counter()
    changed = 0
    before = np.zeros(2, np.uint32)  # the volatiles after the previous step

    def tamper(step: int, state: S.Battle) -> S.Battle:
        nonlocal changed, before
        vol = np.asarray(state.active.volatiles)
        fields = {}
        for name, leaves in E._VOLATILE_LEAVES.items():
            bit = np.uint32(S.VOLATILE_BIT[name])
            absent = (vol & bit) == 0
            gone[name] += int((((before & bit) != 0) & absent).sum())
            for leaf in leaves:
                old = getattr(state.active, leaf)
                new = jnp.where(absent, jnp.asarray(JUNK[leaf], old.dtype), old)
                changed += int((np.asarray(new) != np.asarray(old)).sum())
                fields[leaf] = new
        before = vol
        return dataclasses.replace(state, active=dataclasses.replace(state.active, **fields))

    for i in range(2):
        rng = random.Random(f"absent-counters:{i}")
        teams = (L.moves_team(rng, worker, focus), L.moves_team(rng, worker, focus))
        before = np.zeros(2, np.uint32)
        div, steps, _, _ = L.run_battle(worker, i, [rng.randrange(65536) for _ in range(4)],
                                        teams, rng, tamper=tamper)
        assert div is None, div.describe()
        assert steps > 20
    assert changed > 0
    assert all(gone[v] > 0 for v in ("partiallytrapped", "partialtrappinglock",
                                      "fakepartiallytrapped")), gone


def test_lockstep_drives_the_heuristic_player(worker, monkeypatch):
    from envport.envs.pokemon_gen1 import agents as A

    calls: Counter = Counter()
    real = A.heuristic_showdown

    def counted(request, state, side, ended=False):
        calls[side] += 1
        return real(request, state, side, ended)

    monkeypatch.setattr(A, "heuristic_showdown", counted)
    summary = L.run(2, seed=8484, teams="pool", worker=worker, players="heuristic")
    assert summary.identical == 2, "\n".join(d.describe() for d in summary.divergences)
    # battle 0: the heuristic is p1, battle 1: p2; it chose at every step of its side
    assert calls[0] > 0 and calls[1] > 0
    assert calls[0] + calls[1] == summary.steps


def test_lockstep_refuses_bad_players_and_battle_indices():
    with pytest.raises(ValueError, match="--players"):
        L.run(1, players="greedy")
    with pytest.raises(ValueError, match="--only"):
        L.run(3, only=[3])


@pytest.mark.parametrize("only", ["5", "x,1"])
def test_lockstep_cli_bad_input_exits_2(only):
    out = subprocess.run([sys.executable, "-m", "envport.envs.pokemon_gen1.lockstep",
                          "--battles", "2", "--only", only], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 2, out.stderr
    assert "--only" in out.stderr
