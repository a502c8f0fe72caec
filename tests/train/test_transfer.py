"""L4 transfer on tiny CartPole runs: structure, verdict type, reuse and resumption.

The runs share test_train.py's tiny configuration (4 envs x 8 steps x 4 updates), so the
compiled programs are reused when both files run in one session."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import envport
from envport.core.registry import Training
from envport.train.run import CONFIG_FILE, RESULT_FILE, source_digest, tree_digest
from envport.train.transfer import (
    PLOT_PNG,
    REPORT_MD,
    RESULT_JSON,
    default_margin,
    params_digest,
    policy_summary,
    transfer,
)

TINY = {"num_steps": 8, "num_minibatches": 2, "update_epochs": 2}
STEPS = 4 * 8 * 4


def tiny(out: Path, **kwargs):
    return transfer("cartpole", seeds=1, margin=25.0, steps=STEPS, episodes=4, out=out,
                    progress=False, config_overrides=TINY, **kwargs)


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("transfer")
    return out, tiny(out)


def test_structure_and_verdict(first: tuple[Path, dict]) -> None:
    out, r = first
    assert r.keys() >= {"env", "seeds", "margin", "table", "tost", "equivalent", "episodes"}
    assert (r["env"], r["seeds"], r["margin"], r["episodes"]) == ("cartpole", 1, 25.0, 4)
    assert isinstance(r["equivalent"], bool)
    # One seed: a single (JAX-trained, reference-trained) pair leaves the paired test no
    # variance to work with, so equivalence cannot be shown, whatever the returns.
    assert r["tost"]["train_backend"]["equivalent"] is False and r["equivalent"] is False
    for name in ("sim_to_sim", "train_backend"):
        t = r["tost"][name]
        assert {"p_lower", "p_upper", "ci", "compares", "equivalent"} <= t.keys()
    assert r["tost"]["sim_to_sim"]["n_a"] == 2  # both policies, each on both eval backends
    assert r["tost"]["train_backend"]["method"] == "paired t"
    assert "Welch" in r["train_backend_unpaired"]["method"]
    for tb in ("jax", "reference"):
        for eb in ("jax", "reference"):
            cell = r["table"][tb][eb]
            assert cell["n_policies"] == 1 and cell["mean"] > 0 and cell["std"] == 0.0
    assert [(x["backend"], x["status"]) for x in r["runs"]] == [
        ("jax", "trained"), ("reference", "trained")]
    assert json.loads((out / RESULT_JSON).read_text())["equivalent"] is False
    assert (out / PLOT_PNG).stat().st_size > 0
    assert "not significantly different" in (out / REPORT_MD).read_text()


def test_rerun_reuses_runs_and_resumes_unfinished(first: tuple[Path, dict]) -> None:
    out, r = first
    ckpt = out / "jax-seed0" / "checkpoint.pkl"
    mtime = ckpt.stat().st_mtime_ns
    (out / "reference-seed0" / RESULT_FILE).unlink()  # as if stopped before the end
    again = tiny(out)
    assert [x["status"] for x in again["runs"]] == ["reused", "resumed"]
    assert ckpt.stat().st_mtime_ns == mtime  # not retrained
    assert again["table"] == r["table"]  # cached evaluations, same policies


def test_other_configuration_in_the_same_folder_is_refused(first: tuple[Path, dict]) -> None:
    out, _ = first
    with pytest.raises(ValueError, match="different configuration"):
        transfer("cartpole", seeds=1, margin=25.0, steps=STEPS, episodes=4, out=out,
                 progress=False, config_overrides={**TINY, "lr": 1e-3})


def test_every_run_starts_from_init_and_one_network_is_evaluated_once(
        first: tuple[Path, dict], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``init_from``: with a learning rate of 0 both backends' runs end with the start's
    parameters; the evaluations are keyed by the parameters, so that one network is evaluated
    once per evaluation backend, not once per run; a rerun with another start is refused."""
    import envport.train.transfer as T

    start = first[0] / "jax-seed0"
    calls: list[str] = []
    evaluate = T.evaluate
    monkeypatch.setattr(T, "evaluate", lambda *a, **k: calls.append(a[1]) or evaluate(*a, **k))
    out, still = tmp_path / "from-start", {**TINY, "lr": 0.0}
    r = transfer("cartpole", seeds=1, margin=25.0, steps=STEPS, episodes=4, out=out,
                 progress=False, config_overrides=still, init_from=start)
    digest = params_digest(start)
    assert r["init_from"] == {"dir": str(start.resolve()), "params_sha256": digest}
    assert [x["params_sha256"] for x in r["runs"]] == [digest, digest]
    for x in r["runs"]:
        assert json.loads((Path(x["dir"]) / CONFIG_FILE).read_text())["init_from"] == str(
            start.resolve())
    assert sorted(calls) == ["jax", "reference"]
    assert r["table"]["jax"] == r["table"]["reference"]
    assert f"started from the network of `{start.resolve()}`" in (out / REPORT_MD).read_text()
    with pytest.raises(ValueError, match=r"different configuration.*init_from"):
        transfer("cartpole", seeds=1, margin=25.0, steps=STEPS, episodes=4, out=out,
                 progress=False, config_overrides=still)
    with pytest.raises(ValueError, match="another environment"):
        transfer("pong", seeds=1, margin=1.0, out=tmp_path / "pong", progress=False,
                 init_from=start)


@pytest.mark.parametrize(("kwargs", "match"), [({"seeds": 0}, "seeds"), ({"margin": 0.0}, "margin"),
                                               ({"episodes": 0}, "episodes")])
def test_bad_arguments(tmp_path: Path, kwargs: dict, match: str) -> None:
    args = {"seeds": 1, "margin": 25.0, "episodes": 4} | kwargs
    with pytest.raises(ValueError, match=match):
        transfer("cartpole", steps=STEPS, out=tmp_path, progress=False, **args)


# ----------------------------------------------------------------- the command-line handlers
def test_commands_parse_and_reject_bad_input(tmp_path: Path) -> None:
    import argparse

    from envport.train.commands import parse_set, register

    assert parse_set(["lr=1e-3", "hidden_sizes=128,128", "network=gru", "anneal_lr=false"]) == {
        "lr": 1e-3, "hidden_sizes": [128, 128], "network": "gru", "anneal_lr": False}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_set(["lr"])
    parser = argparse.ArgumentParser()
    handlers = register(parser.add_subparsers(dest="command"))
    assert set(handlers) == {"train", "transfer", "imitate"}

    def run(*argv: str) -> int:
        args = parser.parse_args(list(argv))
        return handlers[args.command](args)

    assert run("train", "nosuchenv", "--out", str(tmp_path / "a")) == 2
    assert run("train", "cartpole", "--steps", "3", "--out", str(tmp_path / "b")) == 2
    assert run("train", "cartpole", "--set", "nosuch=1", "--out", str(tmp_path / "c")) == 2
    assert run("train", "cartpole", "--resume", str(tmp_path / "missing")) == 2
    assert run("transfer", "cartpole", "--init", str(tmp_path / "nothing"), "--out",
               str(tmp_path / "e")) == 2
    assert not (tmp_path / "e").exists()
    with pytest.raises(SystemExit) as exit_:  # argparse names the flag and exits 2
        run("transfer", "cartpole", "--margin", "0", "--out", str(tmp_path / "d"))
    assert exit_.value.code == 2


def test_transfer_command_exit_status(first: tuple[Path, dict], tmp_path: Path) -> None:
    import argparse

    from envport.train.commands import register

    out, _ = first
    parser = argparse.ArgumentParser()
    handlers = register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["transfer", "cartpole", "--seeds", "1", "--margin", "25",
                              "--steps", str(STEPS), "--episodes", "4", "--out", str(out),
                              "--json", str(tmp_path / "t.json"), "--set", "num_steps=8",
                              "--set", "num_minibatches=2", "--set", "update_epochs=2"])
    assert handlers["transfer"](args) == 1  # one seed per backend: equivalence not shown
    assert json.loads((tmp_path / "t.json").read_text())["equivalent"] is False


def test_policy_summary_evaluates_one_policy_on_both_backends(first: tuple[Path, dict]) -> None:
    from envport.train.commands import transfer_line

    out, r = first
    s = policy_summary("cartpole", out / "jax-seed0", episodes=4)
    assert s["margin"] == envport.spec("cartpole").training.margin == 25.0 and s["episodes"] == 4
    # The same policy, seeds and episodes as the transfer's cached evaluation of this run.
    run = next(x for x in r["runs"] if x["backend"] == "jax")
    for b in ("jax", "reference"):
        assert s["scores"][b]["mean"] == pytest.approx(run["eval"][b])
    assert s["tost"]["method"] == "Welch t" and s["tost"]["n_a"] == 4
    line = transfer_line(s)
    verdict = "-> equivalent" if s["tost"]["equivalent"] else "-> equivalence NOT shown"
    assert "over 4 episodes" in line and verdict in line


def test_win_rate_metric_scores_each_policy_by_its_wins(first: tuple[Path, dict],
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``SPEC.training.metric == "win_rate"`` a policy's score is the share of its
    evaluation episodes with a positive return, read from the same cached returns."""
    import shutil

    from rich.console import Console

    from envport.train.commands import transfer_table
    from envport.train.transfer import EVAL_CACHE

    out = tmp_path / "copy"
    shutil.copytree(first[0], out)
    cache = json.loads((out / EVAL_CACHE).read_text())
    outcomes = [[1.0, -1.0, 0.0, 1.0], [1.0, 1.0, 1.0, -1.0], [-1.0, -1.0, 0.0, 1.0],
                [0.0, 1.0, 1.0, 1.0]]
    (out / EVAL_CACHE).write_text(json.dumps(dict(zip(sorted(cache), outcomes, strict=True))))
    real = envport.spec
    games = dataclasses.replace(real("cartpole"), training=dataclasses.replace(
        real("cartpole").training, metric="win_rate"))
    monkeypatch.setattr(envport, "spec", lambda name: games if name == "cartpole"
                        else real(name))
    by_key = dict(zip(sorted(cache), outcomes, strict=True))

    def scored(result: dict, score) -> dict:
        return {(run["backend"], b): run["eval"][b] - score(next(
            v for k, v in by_key.items() if k.startswith(f"{run['params_sha256']}|{b}|")))
            for run in result["runs"] for b in ("jax", "reference")}

    r = tiny(out)
    assert (r["metric"], r["metric_label"]) == ("win_rate", "win rate")
    assert set(scored(r, lambda v: sum(x > 0 for x in v) / len(v)).values()) == {0.0}
    assert "win rate" in (out / REPORT_MD).read_text()
    console = Console(record=True, width=120)
    console.print(transfer_table(r))
    shown = console.export_text()
    assert "win rate per policy" in shown
    cell = r["table"]["jax"]["jax"]
    assert f"{cell['mean']:.3f} ± {cell['std']:.3f}" in shown
    monkeypatch.setattr(envport, "spec", real)
    returns = tiny(out)  # the same cache scored by mean return
    assert returns["metric"] == "return"
    assert set(scored(returns, lambda v: sum(v) / len(v)).values()) == {0.0}
    assert r["table"] != returns["table"]


def test_training_metric_is_checked() -> None:
    with pytest.raises(ValueError, match=r"Training\.metric must be one of return, win_rate"):
        Training(metric="wins")


def test_default_margin_is_documented_or_required(monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_margin("pong") == 1.0
    real = envport.spec
    no_margin = dataclasses.replace(real("cartpole"), training=Training())
    monkeypatch.setattr(envport, "spec", lambda name: no_margin if name == "cartpole"
                        else real(name))
    with pytest.raises(ValueError, match="--margin"):
        default_margin("cartpole")


def test_transfer_help_names_every_documented_margin() -> None:
    """``envport transfer --help`` lists each environment's ``SPEC.training.margin``."""
    import re

    from envport.cli import parser

    sub = next(a for a in parser()._actions if a.dest == "command")
    helptext = next(a.help for a in sub.choices["transfer"]._actions if a.dest == "margin")
    by_return, by_win_rate = helptext.split("in win rate")
    listed = {name: (float(v), metric) for metric, part in (("return", by_return),
                                                            ("win_rate", by_win_rate))
              for name, v in re.findall(r"([a-z][a-z0-9-]*) ([0-9.]+)", part)}
    documented = {name: (envport.spec(name).training.margin, envport.spec(name).training.metric)
                  for name in envport.list_envs() if envport.spec(name).training.margin
                  is not None}
    assert listed == documented


def test_runs_trained_by_different_code_are_reported(first: tuple[Path, dict],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out, r = first
    assert list(r["sources"]) == [source_digest()]
    config = out / "reference-seed0" / CONFIG_FILE
    saved = config.read_text()
    try:  # as a run trained before an engine change, reused from the folder
        config.write_text(json.dumps({**json.loads(saved), "source": "0" * 16}))
        again = tiny(out)
    finally:
        config.write_text(saved)
    assert again["sources"] == {source_digest(): ["jax-seed0"], "0" * 16: ["reference-seed0"]}
    assert "warning: these runs were trained by 2 versions" in capsys.readouterr().err
    assert "**Warning**: these runs were trained by 2 versions" in (out / REPORT_MD).read_text()
    assert again["table"] == r["table"]  # reported, not refused: the runs are still compared


def test_source_digest_follows_the_code(tmp_path: Path) -> None:
    (tmp_path / "engine.py").write_text("X = 1\n")
    (tmp_path / "notes.md").write_text("a\n")
    before = tree_digest(tmp_path)
    (tmp_path / "notes.md").write_text("b\n")  # not code
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "dep.js").write_text("1\n")  # installed, not envport's
    assert tree_digest(tmp_path) == before
    (tmp_path / "engine.py").write_text("X = 2\n")
    assert tree_digest(tmp_path) != before
