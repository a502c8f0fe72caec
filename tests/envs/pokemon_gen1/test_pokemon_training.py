"""pokemon-gen1 for training: the team position in the observation (so a policy can tell what a
switch choice brings in), ``envport train --opponent`` and its bad input, and (slow) a short
masked PPO run against each opponent with its evaluation.

The observation checks run on the Showdown side (``spec_support.observe`` over numpy, from
Showdown's own export): no engine compilation, and the switch's outcome is Showdown's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import spec_support as SS
from envport.envs.pokemon_gen1 import state as S


def own_positions(obs_row: np.ndarray) -> np.ndarray:
    """The one-hot position columns of a player's own team, ``[6 members, 6 positions]``."""
    team = obs_row[: S.TEAM_SIZE * SS.OWN_MON].reshape(S.TEAM_SIZE, SS.OWN_MON)
    return team[:, SS.OWN_MON - S.TEAM_SIZE:]


def test_the_observation_says_which_pokemon_a_switch_brings_in(worker) -> None:
    """Along random legal Showdown battles: each player's own-team position columns are
    Showdown's positions, and the member the observation puts at position k is the one
    Showdown sends in on ``switch k+1`` (choice SWITCH + k)."""
    from envport.envs.pokemon_gen1.env import ShowdownReference, legal_action

    ref = ShowdownReference(worker)
    rng = np.random.default_rng(11)
    switches = 0
    try:
        for seed in (3, 4):
            obs = ref.reset(seed)
            for _ in range(120):
                state = ref.get_state()
                if state["battle.ended"]:
                    break
                for p in (0, 1):
                    pos = own_positions(obs[p])
                    present = state["team.present"][p]
                    want = np.zeros((S.TEAM_SIZE, S.TEAM_SIZE), np.float32)
                    want[present, state["team.position"][p][present]] = 1.0
                    np.testing.assert_array_equal(pos, want)
                action = legal_action(state, rng)
                predicted = {}
                for p in (0, 1):
                    k = int(action[p]) - E.SWITCH
                    if 0 < k < S.TEAM_SIZE:
                        predicted[p] = int(np.flatnonzero(own_positions(obs[p])[:, k])[0])
                obs, *_ = ref.step(action)
                after = ref.get_state()
                for p, member in predicted.items():
                    assert int(after["active.slot"][p]) == member, (seed, p, action)
                    switches += 1
    finally:
        ref.close()
    assert switches >= 5  # the property was exercised


def test_the_opponents_team_order_stays_hidden(worker) -> None:
    """Player 0's row depends on player 1's team positions nowhere: only its own side shows
    positions (numpy observe of a Showdown state with player 1's bench order permuted)."""
    from envport.envs.pokemon_gen1.env import ShowdownReference

    ref = ShowdownReference(worker)
    try:
        ref.reset(5)
        state = ref.get_state()
    finally:
        ref.close()
    pos = state["team.position"].copy()
    bench = [m for m in range(S.TEAM_SIZE) if state["team.present"][1, m] and pos[1, m] > 0]
    assert len(bench) >= 2
    pos[1, bench[0]], pos[1, bench[1]] = pos[1, bench[1]], pos[1, bench[0]]
    changed = {**state, "team.position": pos}
    a, b = SS.observe(state, state["mask"], np), SS.observe(changed, state["mask"], np)
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[1], b[1])
    # 350 + 6 x 6 own position columns + 6 x 2 opponent type columns
    assert a.shape == (2, SS.OBS_SIZE) and SS.OBS_SIZE == 572  # 398 + 174 matchup columns


def test_train_refuses_a_bad_opponent_before_making_a_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from envport.cli import main

    out = tmp_path / "run"
    assert main(["train", "pokemon-gen1", "--opponent", "champion", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--opponent champion" in err and "heuristic" in err and "random" in err
    assert main(["train", "cartpole", "--opponent", "random", "--out", str(out)]) == 2
    assert "--opponent random" in capsys.readouterr().err
    assert not out.exists()


def test_the_spec_trains_against_the_heuristic_by_default() -> None:
    import envport
    from envport.pettingzoo import OPPONENTS
    from envport.train.backends import OPPONENT, check_opponent

    training = envport.spec("pokemon-gen1").training
    assert training.env_kwargs[OPPONENT] in OPPONENTS
    assert training.ppo is not None and training.ppo.batch_size >= 1024
    for opponent in OPPONENTS:
        check_opponent("pokemon-gen1", opponent)  # accepted


@pytest.mark.slow
def test_masked_ppo_runs_against_each_opponent_and_is_evaluated(tmp_path: Path) -> None:
    """A tiny run per opponent (compiles the engine into the rollout: minutes): every sampled
    choice is legal (the env's own mask, from the rollout's trajectory), the loss is finite,
    and the evaluation plays every battle to its end once."""
    import jax

    from envport.train import train
    from envport.train.evaluation import play_vs_opponent
    from envport.train.program import JaxTrainer, program

    tiny = {"num_envs": 8, "num_steps": 16, "num_minibatches": 2, "update_epochs": 1,
            "hidden_sizes": [32]}
    for opponent in ("random", "heuristic"):
        result = train("pokemon-gen1", "jax", steps=8 * 16 * 2, seed=1,
                       out=tmp_path / opponent, config_overrides=tiny, progress=False,
                       env_kwargs={"opponent": opponent})
        prog = program("pokemon-gen1", {"opponent": opponent}, result.config)
        assert prog.masked
        runner = JaxTrainer(prog).init(2)
        traj = prog.rollout(runner)(*prog.rollout_args(runner))[8]
        mask, action = np.asarray(traj.mask), np.asarray(traj.action)
        assert np.take_along_axis(mask, action[..., None], -1).all()
        battles = play_vs_opponent("pokemon-gen1", opponent, result.params, 16, seed=3,
                                   config=result.config)
        assert battles.battles == 16 and set(np.unique(battles.returns)) <= {-1.0, 0.0, 1.0}
        assert jax.tree_util.tree_leaves(result.params)


def test_a_run_trained_on_the_old_observation_is_refused_clearly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose network reads the 398-column observation of before the matchup features
    (``matchup.features``; the 386-column one before the client form is refused the same way):
    ``envport play`` exits 2 before any battle, naming both shapes, and loading its parameters
    raises the same error."""
    import json
    import pickle

    import jax

    from envport.cli import main
    from envport.core.spaces import Box, Discrete
    from envport.envs.pokemon_gen1.training import ENV_KWARGS, PPO
    from envport.train.ppo import make_policy
    from envport.train.program import host_tree
    from envport.train.run import RUN_FORMAT, load_params, run_config

    old = make_policy(PPO, Box(-1.0, 2.0, (398,)), Discrete(E.N_CHOICES))
    params = old.init(jax.random.key(0))
    run = tmp_path / "old-run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(run_config("pokemon-gen1", "jax", PPO,
                                                           ENV_KWARGS)))
    with (run / "checkpoint.pkl").open("wb") as f:
        pickle.dump({"format": RUN_FORMAT, "env": "pokemon-gen1", "backend": "jax",
                     "update": 1, "env_steps": PPO.batch_size, "wall_time": 1.0,
                     "state": {"device": host_tree(params)}}, f)
    with pytest.raises(ValueError, match=r"398.*572"):
        load_params(run)
    code = main(["play", "pokemon-gen1", "--policy", str(run), "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert "398" in err and "572" in err
