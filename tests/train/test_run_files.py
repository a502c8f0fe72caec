"""A training run's files: damaged or partial ones give an error naming the file and what to do,
resumed logs keep their integer columns, a failed start leaves nothing that blocks the rerun,
and TensorBoard event files hold the same numbers as log.csv.

The tiny CartPole config of ``test_train.py`` (compiled once per session) is reused."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest

from envport.train import read_log, train
from envport.train.run import CHECKPOINT_FILE, CONFIG_FILE, LOG_FIELDS, LOG_FILE

TINY = {"num_steps": 8, "num_minibatches": 2, "update_epochs": 2}
STEPS = 4 * 8 * 4


def tiny_train(out: Path, **kwargs):
    kwargs.setdefault("config_overrides", TINY)
    return train("cartpole", "jax", steps=STEPS, seed=3, out=out, progress=False,
                 chunk_updates=2, **kwargs)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "cartpole"
    tiny_train(out)
    return out


def copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_damaged_config_checkpoint_and_log_name_the_file(finished: Path, tmp_path: Path) -> None:
    run = copy_run(finished, tmp_path / "config")
    (run / CONFIG_FILE).write_text('{"format": "envport-ppo-run/1", "env": ')
    with pytest.raises(ValueError, match=r"config\.json is damaged.*--overwrite"):
        tiny_train(run, resume=True)

    run = copy_run(finished, tmp_path / "checkpoint")
    (run / CHECKPOINT_FILE).write_bytes((run / CHECKPOINT_FILE).read_bytes()[:100])
    with pytest.raises(ValueError, match=r"checkpoint\.pkl is damaged.*--overwrite"):
        tiny_train(run, resume=True)

    run = copy_run(finished, tmp_path / "nolog")
    (run / LOG_FILE).unlink()
    with pytest.raises(ValueError, match=r"log\.csv is missing or holds fewer"):
        tiny_train(run, resume=True)

    run = copy_run(finished, tmp_path / "badlog")
    text = (run / LOG_FILE).read_text().splitlines()
    text[2] = "1,not-a-number" + text[2][text[2].index(",", 2):]
    (run / LOG_FILE).write_text("\n".join(text) + "\n")
    with pytest.raises(ValueError, match=r"log\.csv, line 3, is damaged"):
        tiny_train(run, resume=True)


def test_a_resumed_log_keeps_integer_columns_integers(finished: Path, tmp_path: Path) -> None:
    run = copy_run(finished, tmp_path / "resumed")
    tiny_train(run, resume=True)  # finished: the log is rewritten up to the checkpoint
    with (run / LOG_FILE).open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and list(rows[0]) == list(LOG_FIELDS)
    for row in rows:
        for column in ("update", "env_steps", "episodes"):
            assert row[column].isdigit(), (column, row[column])
    assert [r["update"] for r in read_log(run)] == [1, 2, 3, 4]


def test_a_failed_start_leaves_no_folder_behind(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from envport.train.program import JaxTrainer

    def broken(self: JaxTrainer, state: object) -> None:
        raise RuntimeError("compilation failed")

    monkeypatch.setattr(JaxTrainer, "compile", broken)
    out = tmp_path / "fails"
    with pytest.raises(RuntimeError, match="compilation failed"):
        tiny_train(out)
    assert not out.exists()
    monkeypatch.undo()
    assert tiny_train(out).updates == 4  # the rerun is not blocked by "already holds a run"


def test_tensorboard_events_hold_the_logged_numbers(finished: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(finished))
    events.Reload()
    rows = read_log(finished)
    for key in ("mean_return", "policy_loss", "learning_rate", "episodes"):
        # An update in which no episode ended has no mean return: it is not plotted.
        logged = [r for r in rows if np.isfinite(r[key])]
        scalars = events.Scalars(f"ppo/{key}")
        assert [s.step for s in scalars] == [r["env_steps"] for r in logged]
        np.testing.assert_allclose([s.value for s in scalars], [r[key] for r in logged],
                                   rtol=1e-6)


def test_a_run_started_from_another_runs_network_begins_with_its_parameters(
        finished: Path, tmp_path: Path) -> None:
    """``init_from`` (``envport train --init DIR``): with a learning rate of 0 (updates move
    nothing) the new run ends with the source run's final parameters, where a fresh run ends
    with its own initialization; config.json records the source; a network of another shape
    is refused naming the shapes, before any folder is made; a resume with it is refused."""
    import json

    import jax

    from envport.train.run import load_params

    still = {**TINY, "lr": 0.0}
    _, source = load_params(finished)
    out = tmp_path / "curriculum"
    tiny_train(out, init_from=finished, config_overrides=still)
    assert json.loads((out / CONFIG_FILE).read_text())["init_from"] == str(finished)
    fresh = tmp_path / "fresh"
    tiny_train(fresh, config_overrides=still)
    leaves = lambda run: jax.tree_util.tree_leaves(load_params(run)[1])  # noqa: E731
    for a, b in zip(leaves(out), jax.tree_util.tree_leaves(source), strict=True):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(
        leaves(fresh), jax.tree_util.tree_leaves(source), strict=True))
    wide = tmp_path / "wide"
    with pytest.raises(ValueError, match="does not fit"):
        tiny_train(wide, init_from=finished, config_overrides={**TINY, "hidden_sizes": (8,)})
    assert not wide.exists()
    with pytest.raises(ValueError, match="init_from"):
        tiny_train(out, resume=True, init_from=finished, config_overrides=still)


def test_train_init_names_the_flag_on_a_folder_without_a_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from envport.cli import main

    code = main(["train", "cartpole", "--init", str(tmp_path / "nothing"),
                 "--out", str(tmp_path / "out")])
    assert code == 2
    assert "--init" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
