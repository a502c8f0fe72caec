"""PPO on a host translation (``EnvSpec.backend == "host"``): gb-catch, the Rust Game Boy core,
whose translation side trains through ``Training.make_vector_translation`` and the host rollout.

Tiny runs (4 environments, 8-step rollouts, 2 updates); PyBoy and the core are real, nothing
is mocked.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import jax
import numpy as np
import pytest

import envport
from envport.core import registry
from envport.core.spaces import Box, Discrete
from envport.envs.gameboy.env import CoreVectorEnv, PyBoyVectorEnv
from envport.train import read_log, train
from envport.train.backends import check_backend, make_backend
from envport.train.run import CHECKPOINT_FILE, CONFIG_FILE, RESULT_FILE, TrainResult

TINY = {"num_envs": 4, "num_steps": 8, "num_minibatches": 2, "update_epochs": 2}
STEPS = 4 * 8 * 2  # two updates


def tiny(backend: str, out: Path) -> TrainResult:
    return train("gb-catch", backend, steps=STEPS, seed=3, out=out, config_overrides=TINY,
                 progress=False)


def test_make_backend_of_a_host_spec_gives_the_core_and_pyboy_batches() -> None:
    ours = make_backend("gb-catch", "translation", 2, seed=1)
    theirs = make_backend("gb-catch", "reference", 2, seed=1)
    assert ours.kind == "jax" and ours.env is None and isinstance(ours.vec, CoreVectorEnv)
    assert isinstance(theirs.vec, PyBoyVectorEnv)
    for b in (ours, theirs):
        assert isinstance(b.observation_space, Box) and b.observation_space.shape == (6,)
        assert isinstance(b.action_space, Discrete) and b.action_space.n == 6
    assert ours.vec is not None and theirs.vec is not None
    np.testing.assert_array_equal(ours.vec.reset(), theirs.vec.reset())


def test_translation_is_another_name_of_the_jax_backend() -> None:
    assert check_backend("translation") == "jax"
    with pytest.raises(ValueError, match="unknown backend 'mjx'"):
        check_backend("mjx")


def test_a_few_updates_on_each_backend_write_a_run_and_agree(tmp_path: Path) -> None:
    runs = {b: tiny(b, tmp_path / b) for b in ("translation", "reference")}
    for result in runs.values():
        assert (result.updates, result.env_steps) == (2, STEPS)
        rows = read_log(result.run_dir)
        assert [int(r["update"]) for r in rows] == [1, 2]
        assert all(np.isfinite(r["policy_loss"]) for r in rows)
        # (no plot: no episode ends in 16 steps per environment, so no return to draw)
        for f in (CONFIG_FILE, CHECKPOINT_FILE, RESULT_FILE):
            assert (result.run_dir / f).is_file(), f
    assert json.loads((tmp_path / "translation" / CONFIG_FILE).read_text())["backend"] == "jax"
    # Same seed: the core batch plays PyBoy's games, the PPO keys are shared, and the core is
    # exact, so the two trainings are the same computation.
    a, b = (jax.tree_util.tree_leaves(r.params) for r in runs.values())
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.fixture
def host_spec_without_batch() -> Iterator[str]:
    base = envport.spec("gb-catch")
    spec = dataclasses.replace(base, name="gb-catch-unbatched", training=dataclasses.replace(
        base.training, make_vector_translation=None))
    registry.register(spec)
    try:
        yield spec.name
    finally:
        registry._REGISTERED.pop(spec.name, None)
        registry._specs.cache_clear()


def test_a_host_spec_without_make_vector_translation_is_refused(
        host_spec_without_batch: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from envport.cli import main

    out = tmp_path / "run"
    with pytest.raises(ValueError, match="make_vector_translation"):
        train(host_spec_without_batch, "jax", steps=STEPS, out=out, config_overrides=TINY,
              progress=False)
    assert not out.exists()  # refused before any folder is made
    code = main(["train", host_spec_without_batch, "--backend", "translation", "--steps",
                 str(STEPS), "--out", str(out)])
    assert code == 2
    assert "make_vector_translation" in capsys.readouterr().err


def test_ppo_bench_measures_the_translation_on_the_host_rollout() -> None:
    """``envport bench gb-catch --ppo``'s "jax" row: the core batch on the host rollout (the
    tiny runs' Program, so nothing new compiles)."""
    from envport.bench.ppo_throughput import PHASES, measure_reference
    from envport.train.program import program
    from envport.train.run import resolve_config

    cfg, kwargs = resolve_config("gb-catch", "jax", STEPS, 0, TINY, None, None)
    row = measure_reference(program("gb-catch", kwargs, cfg), iterations=1, warmup=0,
                            kind="jax")
    assert row["sps"] > 0 and set(row["phases"]["share"]) == set(PHASES)
    assert row["phases"]["seconds"]["env"] > 0  # the core batch's step, timed on its own
