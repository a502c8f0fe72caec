"""The extra L2 source of pokemon-gen1's mutation plan: Showdown battles of any-move teams."""

from __future__ import annotations

import numpy as np
import pytest

from envport.core.registry import spec
from envport.envs.pokemon_gen1 import moves as MV
from envport.envs.pokemon_gen1 import mutation_states as MS
from envport.envs.pokemon_gen1 import tables as T
from envport.verify.mutation import execute


def test_the_plan_records_l2_cases_from_the_any_move_battles_too():
    plan = execute.mutation_plan(spec("pokemon-gen1"))
    assert plan["interaction_sources"] == (
        "envport.envs.pokemon_gen1.mutation_states:any_move_reference",)


def test_l3_plays_battles_of_every_supported_move_too():
    """The partial-trapping moves and Metronome, which L2's states leave out, reach L3."""
    assert execute.mutation_plan(spec("pokemon-gen1"))["rollout_sources"] == (
        "envport.envs.pokemon_gen1.mutation_states:any_move_battles",)
    ref = MS.any_move_battles()
    try:
        assert ref.moves == MV.SUPPORTED_MOVES
        carried: set[int] = set()
        for seed in range(6):
            ref.reset(seed)
            state = ref.get_state()
            carried |= set(state["team.moves"][state["team.present"]].ravel().tolist())
    finally:
        ref.close()
    assert carried & {T.MOVE_IDS[m] for m in MV.FAMILIES["trap"] + MV.FAMILIES["metronome"]}


def test_any_move_teams_leave_out_only_the_moves_whose_states_showdown_cannot_reinject():
    left_out = set(MV.SUPPORTED_MOVES) - set(MS.MOVES)
    assert left_out == set(MV.FAMILIES["trap"]) | set(MV.FAMILIES["metronome"])


@pytest.fixture(scope="module")
def any_move() -> MS.AnyMoveReference:
    ref = MS.any_move_reference()
    yield ref
    ref.close()


def test_any_move_battles_play_moves_off_the_pool_and_reinject_unchanged(any_move):
    pool_moves = {T.MOVE_IDS[m] for m in T.POOL_MOVES if m in T.MOVE_IDS}
    rng = np.random.default_rng(0)
    off_pool = 0
    for seed in (1, 2):
        any_move.reset(seed)
        state = any_move.get_state()
        moves = set(state["team.moves"][state["team.present"]].ravel().tolist()) - {0}
        assert moves <= {T.MOVE_IDS[m] for m in MS.MOVES}
        off_pool += len(moves - pool_moves)
        for _ in range(6):  # a few random legal turns, each state injected back as L2 does
            if state["battle.ended"]:
                break
            action = [rng.choice(np.flatnonzero(state["mask"][p])) for p in (0, 1)]
            any_move.step(np.asarray(action))
            state = any_move.get_state()
            any_move.set_state(state)  # raises if Showdown restores anything else
            again = any_move.get_state()
            assert all(np.array_equal(again[k], state[k]) for k in state)
    assert off_pool > 0  # the point of the source: moves random-battle teams never carry


def test_one_seed_in_eight_plays_ghost_teams_and_the_others_keep_theirs():
    """The L2 source's all-Ghost battles (the Endless Battle Clause's foe of Ghosts alone) come
    from the seed alone: every other seed plays the teams it played without them."""
    with_ghosts, without = MS.any_move_reference(), MS.AnyMoveReference()
    ghosts = {T.SPECIES_IDS[g] for g in MS.GHOSTS}
    ghost_seeds = 0
    try:
        for seed in range(24):
            with_ghosts.reset(seed)
            without.reset(seed)
            a, b = with_ghosts.get_state(), without.get_state()
            species = set(a["team.species"][a["team.present"]].tolist())
            if species <= ghosts:
                ghost_seeds += 1
                assert (a["team.moves"][a["team.present"]] > 0).all()
            else:
                assert np.array_equal(a["team.species"], b["team.species"])
                assert np.array_equal(a["team.moves"], b["team.moves"])
    finally:
        with_ghosts.close()
        without.close()
    assert 1 <= ghost_seeds <= 8
