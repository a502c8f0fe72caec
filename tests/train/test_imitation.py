"""``envport imitate``: behaviour cloning of a fixed player into a PPO run folder at update 0
(``envport.train.imitation``), on pokemon-gen1 with a small network and batch.

The clone is judged on battles it has not been fitted to: each iteration measures the network's
agreement with the heuristic on its new battles before fitting them, which must rise far above
the initial network's. The folder must be what ``envport train --init`` and ``load_params``
read.

The clone tests are ``slow``: the iteration (the batched engine, the heuristic and the network
fused in one program) takes ~140 s of XLA compilation on 2 cores, which no other default test
shares. The default suite keeps the refused inputs; ``pytest -m slow`` runs the rest."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import jax
import numpy as np
import pytest

from envport.train.imitation import ImitationResult, imitate

NAME = "pokemon-gen1"
# Small enough to compile and run in seconds; the folder records it as its PPO config.
SMALL = {"num_envs": 16, "num_steps": 16, "hidden_sizes": [64, 64], "num_minibatches": 2,
         "lr": 3e-3}
ITERATIONS = 40


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> ImitationResult:
    out = tmp_path_factory.mktemp("imitate") / "run"
    steps = ITERATIONS * SMALL["num_envs"] * SMALL["num_steps"]
    return imitate(NAME, "heuristic", steps=steps, out=out, seed=0, config_overrides=SMALL,
                   progress=False)


@pytest.mark.slow
def test_the_clone_learns_the_heuristics_choices(clone: ImitationResult) -> None:
    """Each iteration plays new battles; the network's agreement with the heuristic on their
    decisions is measured before it is fitted to them (held out). The initial network is
    nearly uniform over the legal choices; the heuristic is deterministic, so a network that
    learns its choices agrees on most decisions."""
    with (clone.run_dir / "imitation.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == ITERATIONS
    assert clone.iterations == ITERATIONS and not clone.interrupted
    held_out = [float(r["held_out_accuracy"]) for r in rows]
    assert held_out[0] < 0.45, held_out[0]
    late = float(np.mean(held_out[-5:]))
    assert late > held_out[0] + 0.2, (held_out[0], late)
    assert clone.held_out_accuracy == held_out[-1]
    # Heuristic against heuristic: the expert wins about half its battles.
    assert abs(clone.expert_return) < 0.5, clone.expert_return


@pytest.mark.slow
def test_the_folder_is_a_ppo_run_at_update_zero_holding_the_clone(clone: ImitationResult) -> None:
    from envport.train.run import _start_params, load_checkpoint, load_params, read_log

    config, params = load_params(clone.run_dir)
    assert config["imitation"]["expert"] == "heuristic"
    assert config["imitation"]["iterations"] == ITERATIONS
    assert config["ppo"]["hidden_sizes"] == SMALL["hidden_sizes"]
    for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(clone.params),
                    strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert load_checkpoint(clone.run_dir)["update"] == 0
    assert read_log(clone.run_dir) == []
    # What `envport train --init DIR` checks against the new run's shapes.
    start = _start_params(clone.run_dir, NAME, params)
    assert len(jax.tree_util.tree_leaves(start)) == len(jax.tree_util.tree_leaves(params))


def test_imitate_refuses_bad_input_before_making_a_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from envport.cli import main

    out = tmp_path / "never"
    assert main(["imitate", "cartpole", "--out", str(out)]) == 2
    assert "--expert" in capsys.readouterr().err
    assert main(["imitate", NAME, "--expert", "champion", "--out", str(out)]) == 2
    assert "--expert champion" in capsys.readouterr().err
    assert main(["imitate", NAME, "--opponent", "champion", "--out", str(out)]) == 2
    assert "--opponent champion" in capsys.readouterr().err
    assert main(["imitate", NAME, "--steps", "100", "--out", str(out)]) == 2
    assert "--steps 100" in capsys.readouterr().err
    assert not out.exists()
    # A folder holding a run is never overwritten without --overwrite.
    held = tmp_path / "held"
    held.mkdir()
    (held / "config.json").write_text('{"kept": true}')
    assert main(["imitate", NAME, "--out", str(held)]) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert json.loads((held / "config.json").read_text()) == {"kept": True}
