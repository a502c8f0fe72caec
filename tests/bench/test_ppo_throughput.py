"""PPO throughput under training: one small model, one timed iteration, through the command
handler the CLI calls (`envport bench ENV --ppo`), checking keys and positive numbers."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest

from envport.bench.ppo_throughput import PHASES, bench_config, param_count, parse_size
from envport.train.commands import add_ppo_bench, run_ppo_bench


def test_model_sizes_hit_their_targets() -> None:
    assert parse_size("0.1M") == 1e5 and parse_size("500k") == 5e5 and parse_size(2e6) == 2e6
    with pytest.raises(ValueError, match="model size"):
        parse_size("big")
    for size, target in (("0.1M", 1e5), ("2M", 2e6), ("20M", 2e7)):
        cfg, kwargs = bench_config("cartpole", size, iterations=2)
        assert abs(param_count(cfg, "cartpole", kwargs) / target - 1) < 0.02
        assert cfg.batch_size <= {"0.1M": 8192, "2M": 2048, "20M": 256}[size]


def test_ppo_bench_command(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("env")
    parser.add_argument("--json")
    parser.add_argument("--plot")
    add_ppo_bench(parser)
    args = parser.parse_args(["cartpole", "--ppo", "--model-sizes", "0.1M", "--iterations", "1",
                              "--json", str(tmp_path / "ppo.json"),
                              "--plot", str(tmp_path / "ppo.png")])
    assert run_ppo_bench(args) == 0
    result = json.loads((tmp_path / "ppo.json").read_text())
    assert result.keys() >= {"env", "rows", "speedup", "sps", "machine", "model_sizes"}
    assert result["machine"]["cores"] >= 1 and result["machine"]["jax_backend"] == "cpu"
    assert [(r["model_size"], r["backend"]) for r in result["rows"]] == [
        ("0.1M", "jax"), ("0.1M", "reference")]
    for r in result["rows"]:
        assert r["sps"] > 0 and r["params"] > 50_000
        assert set(r["phases"]["share"]) == set(PHASES)
        assert r["phases"]["seconds"]["update"] > 0 and r["phases"]["seconds"]["env"] >= 0
        assert math.isclose(sum(r["phases"]["share"].values()), 1.0, rel_tol=1e-6)
    ref = result["rows"][1]["phases"]["seconds"]
    assert ref["env"] > 0 and ref["forward"] > 0 and ref["transfer"] > 0
    assert result["speedup"]["0.1M"] > 0
    shares = result["rows"][1]["phases"]["share"]
    assert math.isclose(result["speedup_bound"]["0.1M"], 1.0 / shares["update"])
    assert (tmp_path / "ppo.png").stat().st_size > 0


def test_bad_size_exits_2(capsys: pytest.CaptureFixture) -> None:
    args = argparse.Namespace(env="cartpole", model_sizes=["huge"], iterations=1, json=None,
                              plot=None)
    assert run_ppo_bench(args) == 2
