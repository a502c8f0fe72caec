"""The Gymnasium vector adapter: spaces, same-step auto-reset, action validation, equivalence."""

from __future__ import annotations

import gymnasium
import jax
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv

import envport
from envport.core.spaces import InvalidActionError
from envport.gym import make_vec

N = 4
# CartPole's termination bounds (Gymnasium CartPole-v1).
X_LIMIT, THETA_LIMIT = 2.4, 12 * 2 * np.pi / 360


@pytest.fixture(scope="module")
def venv() -> VectorEnv:
    return make_vec("cartpole", num_envs=N, seed=0)


def test_spaces_shapes_and_dtypes(venv: VectorEnv) -> None:
    assert isinstance(venv, VectorEnv)
    assert venv.num_envs == N
    assert venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert venv.single_action_space == gymnasium.spaces.Discrete(2, dtype=np.int32)
    obs_space = venv.single_observation_space
    assert isinstance(obs_space, gymnasium.spaces.Box)
    assert obs_space.shape == (4,) and obs_space.dtype == np.float32
    assert np.all(np.isneginf(obs_space.low)) and np.all(np.isposinf(obs_space.high))
    assert venv.observation_space.shape == (N, 4)
    assert venv.action_space.shape == (N,)

    obs, info = venv.reset(seed=1)
    assert isinstance(obs, np.ndarray) and obs.shape == (N, 4) and obs.dtype == np.float32
    assert info == {}
    assert venv.observation_space.contains(obs)
    # Gymnasium's own batched sampler must produce actions the adapter accepts.
    obs, rew, term, trunc, infos = venv.step(venv.action_space.sample())
    assert obs.shape == (N, 4) and obs.dtype == np.float32
    assert rew.shape == (N,) and np.issubdtype(rew.dtype, np.floating)
    assert term.shape == trunc.shape == (N,)
    assert term.dtype == trunc.dtype == np.bool_
    assert isinstance(infos, dict)


def test_same_step_autoreset_keeps_final_observation(venv: VectorEnv) -> None:
    venv.reset(seed=2)
    ones = np.ones(N, np.int32)  # always pushing right: every episode terminates in ~10 steps
    for _ in range(100):
        obs, _, term, trunc, infos = venv.step(ones)
        done = term | trunc
        if done.any():
            break
        assert "_final_obs" not in infos or not infos["_final_obs"].any()
    else:
        pytest.fail("no episode ended while always pushing right")
    assert np.array_equal(infos["_final_obs"], done)
    for i in range(N):
        if not done[i]:
            assert infos["final_obs"][i] is None
            continue
        final = infos["final_obs"][i]
        assert final.shape == (4,)
        x, theta = final[0], final[2]
        assert abs(x) > X_LIMIT or abs(theta) > THETA_LIMIT  # the terminal state, not a reset
        assert not np.array_equal(final, obs[i])
        assert np.all(np.abs(obs[i]) <= 0.05)  # the next episode's first observation


def test_truncation_through_env_kwargs() -> None:
    venv = make_vec("cartpole", num_envs=2, seed=0, max_steps=3)
    venv.reset(seed=0)
    for _ in range(2):
        _, _, _, trunc, _ = venv.step(np.array([0, 1]))
        assert not trunc.any()
    obs, _, term, trunc, infos = venv.step(np.array([0, 1]))
    assert trunc.all() and not term.any()
    assert infos["_final_obs"].all()
    for i in range(2):
        assert not np.array_equal(infos["final_obs"][i], obs[i])


@pytest.mark.parametrize(
    "actions",
    [
        np.zeros(N + 1, np.int32),  # wrong batch size
        np.zeros((N, 1), np.int32),  # wrong shape
        np.zeros(N, np.float32),  # float dtype
        np.array([0, 1, 2, 0]),  # out of range
        np.array([0, -1, 1, 0]),  # negative
    ],
)
def test_bad_actions_raise(venv: VectorEnv, actions: np.ndarray) -> None:
    venv.reset(seed=3)
    with pytest.raises(InvalidActionError):
        venv.step(actions)


def test_step_before_reset_raises() -> None:
    with pytest.raises(RuntimeError):
        make_vec("cartpole", num_envs=2).step(np.zeros(2, np.int32))


def test_rollout_matches_stepping_by_hand() -> None:
    """Each copy, stepped alone with the keys the documented schedule gives it, agrees."""
    n, steps, seed = 3, 40, 5
    venv = make_vec("cartpole", num_envs=n)
    env = envport.make("cartpole")
    reset, step = jax.jit(env.reset), jax.jit(env.step)

    key = jax.random.key(seed)
    key, sub = jax.random.split(key)
    states, expected = [], []
    for k in jax.random.split(sub, n):
        s, o = reset(k)
        states.append(s)
        expected.append(np.asarray(o))
    obs, _ = venv.reset(seed=seed)
    np.testing.assert_allclose(obs, np.stack(expected), rtol=1e-6, atol=1e-7)

    rng = np.random.default_rng(0)
    resets = 0
    for _ in range(steps):
        actions = rng.integers(0, 2, n).astype(np.int32)
        obs, rew, term, trunc, infos = venv.step(actions)
        key, sub = jax.random.split(key)
        for i, k in enumerate(jax.random.split(sub, n)):
            step_key, reset_key = jax.random.split(k)  # AutoReset's split of a step key
            res = step(step_key, states[i], actions[i])
            assert term[i] == bool(res.terminated) and trunc[i] == bool(res.truncated)
            assert rew[i] == float(res.reward)
            want = np.asarray(res.obs)
            if res.terminated or res.truncated:
                resets += 1
                np.testing.assert_allclose(infos["final_obs"][i], want, rtol=1e-6, atol=1e-7)
                states[i], o = reset(reset_key)
                want = np.asarray(o)
            else:
                states[i] = res.state
            np.testing.assert_allclose(obs[i], want, rtol=1e-6, atol=1e-7)
    assert resets > 0  # random CartPole episodes last ~20 steps: resets were exercised
