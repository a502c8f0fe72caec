"""The JAX turn loop (``engine.py``) in lockstep with the real Showdown (``lockstep.py``).

Every comparison is with Showdown running the same battle: after each step the JAX state's
comparable view must equal the one read from Showdown's ``toJSON`` (PRNG words included), the
JAX legal choices must equal those of Showdown's requests, and the draws of the step must have
Showdown's arguments in Showdown's order. Skipped (saying so) only where Node or the pinned
package is missing. The jitted step is compiled once per process (``engine.compiled``).
"""

from __future__ import annotations

import dataclasses
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import bridge as B
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import lockstep as L
from envport.envs.pokemon_gen1 import moves as MV
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1.reference import gen1_set


def test_lockstep_battles_are_identical_to_showdown(worker):
    summary = L.run(4, seed=101, worker=worker)
    assert summary.divergences == [], "\n".join(d.describe() for d in summary.divergences)
    assert summary.identical == summary.battles == 4
    assert summary.ended == 4 and summary.turns > 80


def test_lockstep_on_showdown_generated_teams(worker):
    """Teams.generate teams (kept when every move is supported), as gen1randombattle plays."""
    summary = L.run(2, seed=202, teams="showdown", worker=worker)
    assert summary.divergences == [], "\n".join(d.describe() for d in summary.divergences)
    assert summary.identical == 2 and summary.ended == 2


def test_lockstep_on_hand_built_teams_of_one_family_each(worker):
    """Teams concentrated on Counter, sleep/paralysis/confusion moves, stat stages, the
    user-side moves, Substitute and Sky Attack, so each family is exercised many times."""
    families = [
        ["counter", "bodyslam", "submission", "seismictoss"],
        ["sleeppowder", "thunderwave", "confuseray", "psybeam"],
        ["swordsdance", "agility", "screech", "sandattack"],
        ["rest", "recover", "reflect", "hyperbeam"],
        ["substitute", "skyattack", "doubleedge", "explosion"],
    ]
    species = ["tauros", "snorlax", "hitmonchan", "chansey", "starmie", "gengar"]
    rng = random.Random("families")
    uses = 0
    for k, moves in enumerate(families):
        other = families[(k + 1) % len(families)]
        teams = (worker.pack_team([gen1_set(s, moves, level=80) for s in species]),
                 worker.pack_team([gen1_set(s, other, level=80) for s in rng.sample(species, 6)]))
        div, steps, _, _ = L.run_battle(worker, k, [k + 1, 9, 9, 9], teams, rng,
                                        max_steps=300)
        assert div is None, div.describe()
        assert steps > 5
        uses += steps
    assert uses > 60


def test_a_wrong_state_is_reported_with_its_field(worker):
    rng = random.Random("tamper")
    teams = (L.pool_team(rng, worker), L.pool_team(rng, worker))

    def tamper(step: int, state: S.Battle) -> S.Battle:
        if step != 2:
            return state
        team = dataclasses.replace(state.team, hp=state.team.hp.at[1, 3].add(-1))
        return dataclasses.replace(state, team=team)

    div, _, _, _ = L.run_battle(worker, 0, [1, 2, 3, 4], teams, random.Random(7),
                                    tamper=tamper)
    assert div is not None and div.step == 2 and div.what == "state"
    assert any(f.startswith(".sides[1].pokemon[3].hp:") for f in div.fields), div.fields
    assert "turn" in div.describe()


def test_a_wrong_draw_is_reported_with_its_index(worker):
    rng = random.Random("tamper-prng")
    teams = (L.pool_team(rng, worker), L.pool_team(rng, worker))

    def tamper(step: int, state: S.Battle) -> S.Battle:
        return dataclasses.replace(state, prng=state.prng ^ jnp.uint32(1)) if step == 1 else state

    div, _, _, _ = L.run_battle(worker, 0, [5, 6, 7, 8], teams, random.Random(3), tamper=tamper)
    assert div is not None and div.step == 1
    assert any(f.startswith(".prng") for f in div.fields), div.fields


def test_first_draw_names_where_two_tapes_part():
    assert L._first_draw([(256, -1), (217, 256)], [(256, -1), (217, 256)]) is None
    assert L._first_draw([(256, -1), (0, 2)], [(256, -1), (217, 256)]) == 1
    assert L._first_draw([(256, -1)], [(256, -1), (0, 2)]) == 1


def test_an_unsupported_move_is_rejected_up_front(worker):
    # every Gen 1 move is played now: moves of later generations stand in
    team = worker.pack_team([gen1_set("snorlax", ["bodyslam", "crunch"], level=70)])
    with pytest.raises(ValueError, match="crunch"):
        L.run_battle(worker, 0, [1, 2, 3, 4], (team, team), random.Random(0))
    with pytest.raises(ValueError, match="crunch, flamewheel"):
        MV.check_supported(["bodyslam", "flamewheel", "crunch"])


def test_choices_map_to_showdown_strings():
    assert [E.choice_string(c) for c in (0, 3, 5, 9, E.NO_CHOICE)] == [
        "move 1", "move 4", "switch 2", "switch 6", None]
    with pytest.raises(ValueError, match="choice 4"):
        E.choice_string(4)


@pytest.mark.slow  # a second compilation (the vmapped step), ~30 s on 2 shared cores
def test_the_batched_step_equals_the_single_one(worker):
    """vmap over battles: each battle of the batch ends as the unbatched step leaves it."""
    rng = random.Random("batch")
    states = []
    for k in range(3):
        teams = (L.pool_team(rng, worker), L.pool_team(rng, worker))
        bid = f"batch-{k}"
        worker.create(bid, [k + 1, 2, 3, 4], *teams)
        states.append(B.from_showdown(worker.export(bid)))
        worker.destroy(bid)
    batch = S.to_jax(S.stack(states))
    c = np.zeros(3, np.int32)
    out, _ = jax.jit(jax.vmap(E.step_with_tape))(batch, c, c)
    for k in range(3):
        single, _ = E.compiled(False)(S.to_jax(states[k]), np.int32(0), np.int32(0))
        assert B.comparable(S.index(out, k)) == B.comparable(single)


@pytest.mark.slow  # a second compilation of the step (an 8-word PRNG state), ~60 s
def test_lockstep_on_sodium_seeds_and_a_wrong_chacha_state_caught(worker):
    """Showdown's default ChaCha20 generator: battles identical to Showdown, and one bit of the
    8-word state flipped after a step is reported as a PRNG difference."""
    summary = L.run(3, seed=303, worker=worker, prng_kind="sodium")
    assert summary.divergences == [], "\n".join(d.describe() for d in summary.divergences)
    assert summary.identical == summary.ended == 3 and summary.turns > 40
    rng = random.Random("tamper-sodium")
    teams = (L.pool_team(rng, worker), L.pool_team(rng, worker))

    def tamper(step: int, state: S.Battle) -> S.Battle:
        return dataclasses.replace(state, prng=state.prng ^ jnp.uint32(1)) if step == 1 else state

    div, _, _, _ = L.run_battle(worker, 0, "sodium," + "5" * 64, teams, random.Random(3),
                                tamper=tamper)
    assert div is not None and div.step == 1
    assert any(f.startswith(".prng") for f in div.fields), div.fields


@pytest.mark.slow
def test_lockstep_hundred_battles(worker):
    summary = L.run(100, seed=2024, worker=worker)
    assert summary.identical == 100, "\n".join(d.describe() for d in summary.divergences[:3])


@pytest.mark.slow
def test_lockstep_hundred_battles_on_showdown_teams(worker):
    summary = L.run(100, seed=2025, teams="showdown", worker=worker)
    assert summary.identical == 100, "\n".join(d.describe() for d in summary.divergences[:3])
