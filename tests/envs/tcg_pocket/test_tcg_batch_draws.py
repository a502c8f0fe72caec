"""The reference batch handed the JAX batch's keys (``batch_draws.py``,
``TcgVectorReference.takes_keys``) plays the JAX training batch's games: stepped with the same
keys and the same player-0 actions as ``AutoReset(TurnVsOpponent)`` (what ``envport train
tcg-pocket`` on JAX vmaps), every observation, mask, reward and end is the same, across games
that end and are dealt again. Training on the two backends is then one computation (slow test:
identical networks after two updates), which is what makes L4's pairing by seed common random
numbers. The lockstep runs are ``slow`` (``python -m pytest -m slow``): their compilations cost
minutes on 2 cores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.core.wrappers import AutoReset
from envport.envs.tcg_pocket.vector_reference import TcgVectorReference
from envport.pettingzoo import vs_opponent

GAMES, STEPS = 6, 70  # of player 0: long enough that games end and new ones are dealt


def key_data(keys: jax.Array) -> np.ndarray:
    return np.asarray(jax.random.key_data(keys))


def lockstep(opponent: str) -> dict[str, Any]:
    """A random legal player 0 against ``opponent`` on the JAX batch and on the keyed reference
    batch, the same keys (split as ``ppo.make_rollout`` splits them) and actions on both; the
    first step where they part fails the test, naming what differs."""
    env = AutoReset(vs_opponent("tcg-pocket", opponent))
    params = env.default_params()
    reset = jax.jit(jax.vmap(lambda k: env.reset(k, params)))
    step = jax.jit(jax.vmap(lambda k, s, a: env.step(k, s, a, params)))
    masks_of = jax.jit(jax.vmap(lambda s: env.env.action_mask(s)))
    key, k_env = jax.random.split(jax.random.key(11))
    keys = jax.random.split(k_env, GAMES)
    state, obs = reset(keys)
    ref = TcgVectorReference(GAMES, 0, opponent)
    assert (np.asarray(obs) == ref.reset(keys=key_data(keys))).all(), "the first deals differ"
    rng = np.random.default_rng(5)
    ends, choices = 0, 0
    for t in range(STEPS):
        mask = np.asarray(masks_of(state))
        assert (mask == ref.action_masks()).all(), f"step {t}: the masks differ"
        choices += int((mask.sum(1) > 1).sum())
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in mask])
        key, k_env = jax.random.split(key)
        keys = jax.random.split(k_env, GAMES)
        res = step(keys, state, jnp.asarray(actions, jnp.int32))
        state = res.state
        obs, reward, done, _ = ref.step(actions, keys=key_data(keys))
        jax_done = np.asarray(res.terminated | res.truncated)
        assert (jax_done == done).all(), f"step {t}: games ended {done}, JAX {jax_done}"
        assert (np.asarray(res.reward) == reward).all(), f"step {t}: rewards {reward}"
        parted = np.flatnonzero((np.asarray(res.obs) != obs).any(1))
        assert parted.size == 0, f"step {t}: the observations of games {parted} differ"
        ends += int(done.sum())
    return {"ends": ends, "choices": choices}


@pytest.mark.slow  # its compilations of the batch's reset and step with the opponent's turn
# loop (3-4 minutes on 2 cores, 8% of the default suite)
def test_the_keyed_batch_plays_the_jax_batchs_games_against_the_heuristic() -> None:
    played = lockstep("heuristic")
    assert played["ends"] >= GAMES, played  # new games were dealt from the step's keys
    assert played["choices"] > STEPS, played


@pytest.mark.slow  # a second compile of the opponent's turn loop (~1-2 minutes on 2 cores)
def test_the_keyed_batch_plays_the_jax_batchs_games_against_the_random_player() -> None:
    played = lockstep("random")
    assert played["ends"] >= GAMES, played


def test_keys_of_another_batch_are_refused() -> None:
    ref = TcgVectorReference(2, 0, "heuristic")
    with pytest.raises(ValueError, match="one row per game"):
        ref.reset(keys=key_data(jax.random.split(jax.random.key(0), 3)))
    ref.reset()  # without keys the batch draws its own
    with pytest.raises(ValueError, match="uint32 key data"):
        ref.step(np.zeros(2, np.int64), keys=np.zeros((2, 2), np.int64))


@pytest.mark.slow  # compiles the engine and the opponent's turn loop into the rollout: minutes
def test_training_on_the_two_backends_is_one_computation(tmp_path: Path, same_leaves) -> None:
    """``envport train tcg-pocket`` on JAX and on the reference, the same seed: the reference
    batch takes the rollout's keys, so the runs play the same games and end with the same
    network and the same log."""
    from envport.train import train

    tiny = {"num_envs": 8, "num_steps": 16, "num_minibatches": 2, "update_epochs": 2,
            "hidden_sizes": [32]}
    runs = {b: train("tcg-pocket", b, steps=8 * 16 * 2, seed=3, out=tmp_path / b,
                     config_overrides=tiny, progress=False) for b in ("jax", "reference")}
    same_leaves(runs["jax"].params, runs["reference"].params)
    logs = [(tmp_path / b / "log.csv").read_text().splitlines() for b in runs]
    header = logs[0][0].split(",")
    timed = {header.index("wall_time"), header.index("sps")}  # the clock's, not the run's
    for row_jax, row_ref in zip(logs[0][1:], logs[1][1:], strict=True):
        a, b = row_jax.split(","), row_ref.split(",")
        assert [x for i, x in enumerate(a) if i not in timed] == \
            [x for i, x in enumerate(b) if i not in timed]
