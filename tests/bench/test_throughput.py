"""Throughput measurement and plots, on tiny batches so the tests take seconds."""

from __future__ import annotations

import os
from pathlib import Path

import jax
import numpy as np

import envport
from envport.bench.benchmark import run_benchmark
from envport.bench.plots import plot_throughput
from envport.bench.throughput import (
    _reset_batch,
    jax_throughput,
    make_rollout,
    state_bytes_per_env,
)
from envport.bench.timing import (
    actions_from_bits,
    counter_bits,
    legal_actions_from_bits,
    sample_actions,
)
from envport.core.api import Environment, StepResult
from envport.core.spaces import Box, Discrete

ROW_KEYS = {"backend", "mode", "batch_size", "steps_per_second"}


def test_jax_throughput_rows() -> None:
    rows = jax_throughput(envport.make("cartpole"), [1, 4], steps=8, repeats=1)
    assert [r["batch_size"] for r in rows] == [1, 4]
    for r in rows:
        assert r.keys() >= ROW_KEYS
        assert r["backend"] == "jax"
        assert r["mode"] == f"jax {jax.default_backend()}, jitted loop, 1 device(s)"
        assert r["steps"] == 8 and r["repeats"] == 1 and r["compile_seconds"] > 0
        assert r["devices"] == 1
        assert isinstance(r["steps_per_second"], float) and r["steps_per_second"] > 0


def test_sample_actions_in_range() -> None:
    key = jax.random.key(0)
    a = np.asarray(sample_actions(Discrete(3), key, 1000))
    assert a.shape == (1000,) and a.dtype == np.int32
    assert set(np.unique(a)) == {0, 1, 2}
    b = np.asarray(sample_actions(Box(-2.0, 0.5, (2,)), key, 1000))
    assert b.shape == (1000, 2) and b.dtype == np.float32
    assert b.min() >= -2.0 and b.max() <= 0.5


def test_counter_bits_uniform_and_distinct() -> None:
    index = jax.numpy.arange(30_000, dtype=jax.numpy.uint32)
    a = np.asarray(counter_bits(jax.numpy.uint32(0), jax.numpy.uint32(5), 0, index))
    b = np.asarray(counter_bits(jax.numpy.uint32(0), jax.numpy.uint32(6), 0, index))
    c = np.asarray(counter_bits(jax.numpy.uint32(1), jax.numpy.uint32(5), 0, index))
    assert len(np.unique(a)) == a.size  # a bijection of the env index
    assert (a != b).mean() > 0.99 and (a != c).mean() > 0.99  # new words each step and seed
    actions = np.asarray(actions_from_bits(Discrete(3), jax.numpy.asarray(a)))
    assert np.allclose(np.bincount(actions) / a.size, 1 / 3, atol=0.02)
    boxes = np.asarray(actions_from_bits(Box(-1.0, 1.0, (2,)), jax.numpy.asarray(a)))
    assert boxes.shape == (a.size, 2) and boxes.min() >= -1 and boxes.max() < 1
    assert abs(boxes.mean()) < 0.02 and abs(np.corrcoef(boxes.T)[0, 1]) < 0.03


def test_legal_actions_from_bits_uniform_over_the_legal_ones() -> None:
    rng = np.random.default_rng(3)
    mask = rng.random((64, 9)) < 0.4
    mask[0] = False  # no legal action: action 0, the environment's own rule
    mask[1] = [False] * 8 + [True]
    counts = mask.sum(1)
    # bits 0..k-1 of a row with k legal actions give each legal action exactly once
    for word in range(9):
        bits = jax.numpy.full((64,), word, jax.numpy.uint32)
        chosen = np.asarray(legal_actions_from_bits(jax.numpy.asarray(mask), bits))
        rows = np.flatnonzero(counts > 0)
        assert mask[rows, chosen[rows]].all()
        for r in np.flatnonzero(counts > word):
            assert chosen[r] == np.flatnonzero(mask[r])[word]
    assert int(legal_actions_from_bits(jax.numpy.asarray(mask[:1]),
                                       jax.numpy.zeros(1, jax.numpy.uint32))[0]) == 0


def _legal(state: jax.Array) -> jax.Array:
    return (jax.numpy.arange(5) + state) % 3 == 0  # 1 or 2 of the 5 actions


class _Counter(Environment):
    """A test game of 5 actions whose legal ones move with a counter: reward 1 for a legal
    action, -1 for an illegal one; it does not tell the benchmark which are legal."""

    def default_params(self) -> None:
        return None

    def reset(self, key, params=None):  # type: ignore[no-untyped-def]
        return jax.numpy.int32(0), jax.numpy.zeros((1,), jax.numpy.float32)

    def sample_draws(self, key, state, params=None):  # type: ignore[no-untyped-def]
        return ()

    def transition(self, state, action, draws, params=None):  # type: ignore[no-untyped-def]
        reward = jax.numpy.where(_legal(state)[action], 1.0, -1.0)
        obs = jax.numpy.full((1,), state, jax.numpy.float32)
        return StepResult(state + 1, obs, reward, jax.numpy.bool_(False), jax.numpy.bool_(False),
                          {})

    def observation_space(self, params=None):  # type: ignore[no-untyped-def]
        return Box(0.0, 1e9, (1,))

    def action_space(self, params=None):  # type: ignore[no-untyped-def]
        return Discrete(5)


class _MaskedCounter(_Counter):
    """The same game, declaring its legal actions."""

    def action_mask(self, state):  # type: ignore[no-untyped-def]
        return _legal(state)


def test_rollout_draws_legal_actions_of_a_masked_game() -> None:
    def reward_sums(env: Environment) -> np.ndarray:
        state, obs = _reset_batch(env, 16, jax.random.key(0))
        rollout = make_rollout(env, 16)
        return np.asarray(rollout(state, obs, jax.numpy.uint32(7), jax.numpy.int32(30))[2])

    assert reward_sums(_MaskedCounter()).tolist() == [30.0] * 16  # every drawn action legal
    assert reward_sums(_Counter()).mean() < 10  # without the mask, mostly illegal


def test_state_bytes_per_env() -> None:
    # CartPole: four float32 physics fields and an int32 step counter.
    assert state_bytes_per_env(envport.make("cartpole"), 16) == 20


def test_run_benchmark_and_plot(tmp_path: Path) -> None:
    result = run_benchmark("cartpole", batch_sizes=[2], steps=8, peers=False)
    assert result["env"] == "cartpole"
    backends = {r["backend"] for r in result["results"]}
    assert backends == {"jax", "reference"}
    assert all(r.keys() >= ROW_KEYS for r in result["results"])
    assert result["speedup"] > 0
    # The JAX side ran in a child process with one device per core, on 1 and all of them.
    counts = {r["devices"] for r in result["results"] if r["backend"] == "jax"}
    assert counts == {1, min(os.cpu_count() or 1, 2)}
    assert result["best"]["jax"]["backend"] == "jax"
    assert result["machine"]["jax_version"] == jax.__version__
    assert result["memory"]["state_bytes_per_env"] == 20

    path = tmp_path / "throughput.png"
    plot_throughput(result, path)
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 1000
