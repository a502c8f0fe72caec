"""The Showdown training batch on the JAX rollout's keys (``vector_reference.KeyedDraws``):
given the keys ``ppo.make_rollout`` resets and steps its battles with, ``PokemonVectorReference``
starts the battles the JAX batch (``AutoReset(VsOpponent)``) starts and its random player
chooses what the JAX random player chooses, so both play the same battles: every observation,
mask, reward and end equal along random legal choices of player 0, across battle ends and the
new battles that replace them.

Both lockstep runs are ``slow`` (``python -m pytest -m slow``): the JAX batch's step compiles
for 1-2 minutes on 2 cores. The random opponent's run is the stronger one (it draws from the
step keys as well as the resets; against the heuristic only the resets draw), and ``slow`` also
trains PPO on both backends from one seed to the same network."""

from __future__ import annotations

import functools
from typing import Any

import jax
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import vector_reference as VR


@functools.cache
def jax_batch(opponent: str) -> tuple[Any, Any, Any]:
    """The JAX training batch's reset, step and player-0 mask, compiled once per opponent."""
    from envport.core.wrappers import AutoReset
    from envport.pettingzoo import vs_opponent

    env = AutoReset(vs_opponent("pokemon-gen1", opponent))
    p = env.default_params()
    reset = jax.jit(jax.vmap(lambda k: env.reset(k, p)))
    step = jax.jit(jax.vmap(lambda k, s, a: env.step(k, s, a, p)))
    mask = jax.jit(jax.vmap(lambda s: env.env.action_mask(s, p)))
    return reset, step, mask


def play_both(opponent: str, n: int = 4, steps: int = 90, seed: int = 5) -> int:
    """Both batches on the same keys, as ``make_rollout`` splits them; returns the battles that
    ended. Fails at the first step where anything differs, naming it."""
    reset, step, mask_of = jax_batch(opponent)
    ref = VR.PokemonVectorReference(n, seed=99, opponent=opponent, workers=2)
    rng = np.random.default_rng(seed)
    ended = 0
    try:
        key, k_reset = jax.random.split(jax.random.key(seed))
        keys = jax.random.split(k_reset, n)
        state, obs = reset(keys)
        np.testing.assert_array_equal(ref.reset(keys=np.asarray(jax.random.key_data(keys))),
                                      np.asarray(obs), err_msg="reset")
        for t in range(steps):
            mask = np.asarray(mask_of(state))
            np.testing.assert_array_equal(ref.action_masks(), mask, err_msg=f"mask, step {t}")
            actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask], np.int32)
            key, k_env = jax.random.split(key)
            keys = jax.random.split(k_env, n)
            res = step(keys, state, actions)
            got = ref.step(actions, keys=np.asarray(jax.random.key_data(keys)))
            for name, a, b in zip(("obs", "reward", "terminated"), got[:3],
                                  (res.obs, res.reward, res.terminated), strict=True):
                np.testing.assert_array_equal(a, np.asarray(b), err_msg=f"{name}, step {t}")
            ended += int(np.sum(got[2]))
            state = res.state
    finally:
        ref.close()
    return ended


@pytest.mark.slow
def test_showdown_plays_the_jax_batchs_battles_on_its_keys_against_the_random_player() -> None:
    assert play_both("random") >= 3  # several battles ended and were replaced, keyed


@pytest.mark.slow
def test_showdown_plays_the_jax_batchs_battles_on_its_keys_against_the_heuristic() -> None:
    assert play_both("heuristic") >= 3


def test_bad_keys_are_refused() -> None:
    ref = VR.PokemonVectorReference(2, seed=0, opponent="random", workers=1)
    try:
        assert ref.takes_keys
        with pytest.raises(ValueError, match="uint32 key data of shape"):
            ref.reset(keys=np.zeros((3, 2), np.uint32))
        with pytest.raises(ValueError, match="uint32 key data of shape"):
            ref.reset(keys=np.zeros((2, 2), np.int64))
        ref.reset()
        with pytest.raises(ValueError, match="uint32 key data of shape"):
            ref.step(np.zeros(2, np.int32), keys=np.zeros((2, 4), np.uint32))
    finally:
        ref.close()


@pytest.mark.slow
def test_ppo_on_both_backends_trains_the_same_network(tmp_path: Any) -> None:
    """The Showdown backend, handed the rollout's keys, gives PPO the JAX backend's battles:
    the same log (clock columns aside) and parameters after three updates."""
    from envport.train.run import load_params, read_log, train

    small = {"num_envs": 4, "num_steps": 32, "hidden_sizes": [16, 16], "num_minibatches": 2}
    runs = {}
    for backend in ("jax", "reference"):
        out = tmp_path / backend
        train("pokemon-gen1", backend, steps=384, seed=4, out=out, config_overrides=small,
              env_kwargs={"opponent": "random"}, progress=False)
        runs[backend] = (read_log(out), load_params(out)[1])
    def same(rows: list[dict[str, float]]) -> list[dict[str, Any]]:
        # Clock columns aside; an update in which no battle ended logs NaN returns.
        return [{k: None if v != v else v for k, v in r.items() if k not in ("wall_time", "sps")}
                for r in rows]

    (log_j, p_j), (log_r, p_r) = runs["jax"], runs["reference"]
    assert same(log_j) == same(log_r)
    assert sum(r["episodes"] for r in log_j) >= 1
    for a, b in zip(jax.tree_util.tree_leaves(p_j), jax.tree_util.tree_leaves(p_r), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
