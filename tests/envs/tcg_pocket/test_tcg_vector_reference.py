"""tcg-pocket's reference backend for training (``vector_reference.TcgVectorReference``): the
rules engine's games, player 0 of each against a fixed opponent on the host. Player 0 acts at
every step, an ended game is replaced in the same step, the reward is the game's outcome, the
opponent is the one asked for, a saved batch resumes exactly, and it matches the JAX side's
spaces and opponents; bad input is refused before any game is dealt."""

from __future__ import annotations

import numpy as np
import pytest

from envport.envs.tcg_pocket import vector_reference as VR
from envport.envs.tcg_pocket.vector_reference import TcgVectorReference

N = 8
STEPS = 160  # of player 0, per game slot: about 5 games each (a game takes it ~30 actions)


def play(opponent: str, seed: int = 1) -> dict[str, np.ndarray]:
    """A random legal player 0 in a batch of N: per step, who is to act in every game, the
    reward, the end, and each ended game's summed reward."""
    batch = TcgVectorReference(N, seed, opponent)
    batch.reset()
    rng = np.random.default_rng(seed)
    out: dict[str, list] = {"to_act": [], "reward": [], "done": [], "returns": []}
    ret = np.zeros(N)
    for _ in range(STEPS):
        mask = batch.action_masks()
        assert mask.any(axis=1).all(), "player 0 has no legal action in a live game"
        _, reward, done, truncated = batch.step([rng.choice(np.flatnonzero(m)) for m in mask])
        assert not truncated.any()
        out["to_act"].append([ref.game.to_act() for ref in batch.games])
        out["reward"].append(reward)
        out["done"].append(done)
        ret += reward
        out["returns"] += ret[done].tolist()
        ret[done] = 0
    return {k: np.asarray(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def games() -> dict[str, dict[str, np.ndarray]]:
    return {o: play(o) for o in VR.OPPONENTS}


def test_player_0_acts_after_every_step_and_ended_games_are_replaced(games):
    for played in games.values():
        assert (played["to_act"] == 0).all()  # also right after a game ended: a new one
        assert played["done"].sum() >= 2 * N  # games ended and were replaced
        # a reward comes only with the end of a game
        assert (played["reward"][~played["done"]] == 0).all()
        assert set(np.unique(played["returns"])) <= {-1.0, 0.0, 1.0}


def test_the_opponent_is_the_one_asked_for(games):
    # A random player 0 loses most games to the heuristic (the JAX side's test: ~80%) and few
    # to the random player, whose games mostly reach the turn limit: ~40 games each.
    heuristic, random = games["heuristic"]["returns"], games["random"]["returns"]
    assert (heuristic < 0).mean() > 0.5
    assert (random < 0).mean() < 0.3


def test_a_saved_batch_resumes_exactly():
    batch = TcgVectorReference(4, 7, "heuristic")
    batch.reset()
    rng = np.random.default_rng(0)
    for _ in range(40):  # into games, past some ends
        batch.step([rng.choice(np.flatnonzero(m)) for m in batch.action_masks()])
    saved = batch.get_state()

    def continue_(b: TcgVectorReference) -> list[np.ndarray]:
        r = np.random.default_rng(1)
        out = []
        for _ in range(40):
            out += [*b.step([r.choice(np.flatnonzero(m)) for m in b.action_masks()])]
        return out

    first = continue_(batch)
    other = TcgVectorReference(4, 99, "heuristic")  # another seed: the state overrides it
    other.set_state(saved)
    for a, b in zip(first, continue_(other), strict=True):
        np.testing.assert_array_equal(a, b)


def test_it_matches_the_jax_side():
    from envport.pettingzoo import OPPONENTS
    from envport.train.backends import _same_space, translation

    assert VR.OPPONENTS == OPPONENTS
    env = translation("tcg-pocket", opponent="heuristic")
    batch = VR.make(2, 0, opponent="heuristic")
    assert _same_space(batch.observation_space, env.observation_space(env.default_params()))
    assert _same_space(batch.action_space, env.action_space(env.default_params()))
    obs = batch.reset()
    assert obs.shape == (2, *batch.observation_space.shape)
    assert obs.dtype == batch.observation_space.dtype


@pytest.mark.parametrize(("make", "says"), [
    (lambda: TcgVectorReference(0), "num_envs"),
    (lambda: TcgVectorReference(2, opponent="pool"), "opponent must be one of"),
    (lambda: VR.make(2, pool_size=3), "takes only opponent"),
])
def test_bad_input_is_refused(make, says):
    with pytest.raises(ValueError, match=says):
        make()


def test_stepping_before_a_reset_is_refused():
    with pytest.raises(RuntimeError, match="reset"):
        TcgVectorReference(1).step([0])
