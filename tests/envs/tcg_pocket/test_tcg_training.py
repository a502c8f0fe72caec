"""PPO on tcg-pocket: player 0 against a fixed opponent, on the reference backend (the rules
engine's games on the host, ``vector_reference.py``) and on the JAX engine
(``envport.pettingzoo.TurnVsOpponent``); masked to the legal actions on both, evaluated by
games played to their end, and resumed exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

TINY = {"num_envs": 4, "num_steps": 16, "num_minibatches": 2, "update_epochs": 1,
        "hidden_sizes": [32]}


def test_the_spec_trains_against_the_heuristic_on_both_backends() -> None:
    import envport
    from envport.pettingzoo import OPPONENTS
    from envport.train.backends import OPPONENT, check_opponent, check_trainable

    training = envport.spec("tcg-pocket").training
    assert training.env_kwargs[OPPONENT] == "heuristic"
    assert training.margin is not None and training.margin_note
    for opponent in OPPONENTS:
        check_opponent("tcg-pocket", opponent)  # accepted
    for backend in ("jax", "reference"):
        check_trainable("tcg-pocket", backend)  # a batch for each backend


def test_a_reference_run_trains_and_resumes_exactly(tmp_path: Path, stopped_and_resumed,
                                                    same_leaves) -> None:
    """Three updates on the host batch (the policy's compile only: seconds), and the same run
    stopped by Ctrl-C after its first update and resumed: the same network."""
    from envport.train import train

    def run(out: Path, **kw):
        return train("tcg-pocket", "reference", steps=4 * 16 * 3, seed=3, out=out,
                     config_overrides=TINY, progress=False, chunk_updates=1, **kw)

    whole = run(tmp_path / "whole")
    assert whole.updates == 3 and np.isfinite(whole.final_mean_return)
    same_leaves(whole.params, stopped_and_resumed(run, tmp_path / "half").params)


@pytest.mark.slow  # compiles the engine and the opponent's turn loop into the rollout: minutes
def test_a_jax_run_samples_legal_actions_and_is_evaluated(tmp_path: Path) -> None:
    from envport.train import train
    from envport.train.evaluation import play_vs_opponents
    from envport.train.program import JaxTrainer, program

    result = train("tcg-pocket", "jax", steps=4 * 16 * 2, seed=1, out=tmp_path / "run",
                   config_overrides=TINY, progress=False, env_kwargs={"opponent": "heuristic"})
    prog = program("tcg-pocket", {"opponent": "heuristic"}, result.config)
    assert prog.masked
    runner = JaxTrainer(prog).init(2)
    traj = prog.rollout(runner)(*prog.rollout_args(runner))[8]
    mask, action = np.asarray(traj.mask), np.asarray(traj.action)
    assert np.take_along_axis(mask, action[..., None], -1).all()
    games = play_vs_opponents("tcg-pocket", result.params, {"heuristic": 8, "random": 8}, seed=3,
                              config=result.config, max_steps=400)
    for played in games.values():
        assert played.battles == 8 and set(np.unique(played.returns)) <= {-1.0, 0.0, 1.0}
