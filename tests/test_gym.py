"""The Gymnasium vector adapter: spaces, the three autoreset modes, action validation, and
each copy stepping as the translation does with the documented keys."""

from __future__ import annotations

import gymnasium
import jax
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv

import envport
from envport.core.spaces import InvalidActionError
from envport.envs.cartpole.reference import CartPoleReference
from envport.gym import make_vec

N = 4
# CartPole's termination bounds (Gymnasium CartPole-v1).
X_LIMIT, THETA_LIMIT = 2.4, 12 * 2 * np.pi / 360
SAME, NEXT, DISABLED = AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED


@pytest.fixture(scope="module")
def venv() -> VectorEnv:
    return make_vec("cartpole", num_envs=N, seed=0)


def test_spaces_are_gymnasiums_and_next_step_is_the_default(venv: VectorEnv) -> None:
    assert isinstance(venv, VectorEnv)
    assert venv.num_envs == N
    assert venv.metadata["autoreset_mode"] == NEXT  # gymnasium.make_vec's default
    reference = gymnasium.make("CartPole-v1")
    # Equal to what Gymnasium's CartPoleEnv declares: bounds, shape and dtype (int64 actions).
    assert venv.single_observation_space == reference.observation_space
    assert venv.single_action_space == reference.action_space
    assert venv.single_action_space.dtype == np.int64
    high = venv.single_observation_space.high
    np.testing.assert_array_equal(high, np.float32([2 * X_LIMIT, np.inf, 2 * THETA_LIMIT, np.inf]))
    assert venv.observation_space.shape == (N, 4)
    assert venv.action_space.shape == (N,)

    obs, info = venv.reset(seed=1)
    assert isinstance(obs, np.ndarray) and obs.shape == (N, 4) and obs.dtype == np.float32
    assert info == {}
    assert venv.observation_space.contains(obs)
    # Gymnasium's own batched sampler must produce actions the adapter accepts.
    obs, rew, term, trunc, infos = venv.step(venv.action_space.sample())
    assert obs.shape == (N, 4) and obs.dtype == np.float32
    assert rew.shape == (N,) and rew.dtype == np.float64  # as SyncVectorEnv returns them
    assert term.shape == trunc.shape == (N,)
    assert term.dtype == trunc.dtype == np.bool_
    assert infos == {}


def test_cartpole_bounds_follow_its_thresholds() -> None:
    venv = make_vec("cartpole", 2, x_threshold=1.0, theta_threshold=0.1)
    ref = CartPoleReference(params={"x_threshold": 1.0, "theta_threshold": 0.1})
    assert venv.single_observation_space == ref.env.observation_space
    np.testing.assert_array_equal(venv.single_observation_space.high,
                                  np.float32([2.0, np.inf, 0.2, np.inf]))


def test_autoreset_mode_by_value_and_bad_mode() -> None:
    assert make_vec("cartpole", 2, autoreset_mode="SameStep").metadata["autoreset_mode"] == SAME
    with pytest.raises(ValueError, match="autoreset_mode"):
        make_vec("cartpole", 2, autoreset_mode="sometimes")


def run_until_done(venv: VectorEnv, seed: int) -> tuple:
    venv.reset(seed=seed)
    ones = np.ones(venv.num_envs, np.int64)  # always pushing right: episodes end in ~10 steps
    for _ in range(100):
        obs, rew, term, trunc, infos = venv.step(ones)
        if (term | trunc).any():
            return obs, rew, term, trunc, infos
        assert "_final_obs" not in infos
    pytest.fail("no episode ended while always pushing right")


def test_same_step_autoreset_keeps_final_observation() -> None:
    venv = make_vec("cartpole", N, autoreset_mode=SAME)
    obs, _, term, trunc, infos = run_until_done(venv, 2)
    done = term | trunc
    assert np.array_equal(infos["_final_obs"], done)
    assert np.array_equal(infos["_final_info"], done) and infos["final_info"] == {}
    for i in range(N):
        if not done[i]:
            assert infos["final_obs"][i] is None
            continue
        final = infos["final_obs"][i]
        assert final.shape == (4,) and final.dtype == np.float32
        x, theta = final[0], final[2]
        assert abs(x) > X_LIMIT or abs(theta) > THETA_LIMIT  # the terminal state, not a reset
        assert not np.array_equal(final, obs[i])
        assert np.all(np.abs(obs[i]) <= 0.05)  # the next episode's first observation


def test_next_step_autoreset_returns_the_end_then_resets() -> None:
    venv = make_vec("cartpole", N, autoreset_mode=NEXT)
    obs, _, term, trunc, infos = run_until_done(venv, 2)
    done = term | trunc
    assert infos == {}  # no final_obs: the observation returned is the one the episode ended on
    for i in np.flatnonzero(done):
        assert abs(obs[i, 0]) > X_LIMIT or abs(obs[i, 2]) > THETA_LIMIT
    ended = obs.copy()
    obs, rew, term, trunc, infos = venv.step(np.ones(N, np.int64))
    for i in range(N):
        if done[i]:  # the reset step: action ignored, reward 0, not ended, a fresh start
            assert rew[i] == 0.0 and not term[i] and not trunc[i]
            assert np.all(np.abs(obs[i]) <= 0.05)
        else:
            assert rew[i] == 1.0 and not np.array_equal(obs[i], ended[i])
    assert infos == {}  # CartPole's step and reset return no info


@pytest.mark.parametrize("mode", [SAME, NEXT])
def test_truncation_through_env_kwargs(mode: AutoresetMode) -> None:
    venv = make_vec("cartpole", num_envs=2, seed=0, max_steps=3, autoreset_mode=mode)
    venv.reset(seed=0)
    for _ in range(2):
        _, _, _, trunc, _ = venv.step(np.array([0, 1]))
        assert not trunc.any()
    obs, _, term, trunc, infos = venv.step(np.array([0, 1]))
    assert trunc.all() and not term.any()
    if mode == SAME:
        assert infos["_final_obs"].all()
        for i in range(2):
            assert not np.array_equal(infos["final_obs"][i], obs[i])
    else:
        _, rew, _, trunc, _ = venv.step(np.array([0, 1]))
        assert not trunc.any() and np.all(rew == 0.0)


def test_disabled_needs_a_masked_reset() -> None:
    venv = make_vec("cartpole", N, autoreset_mode=DISABLED)
    obs, _, term, trunc, infos = run_until_done(venv, 4)
    done = term | trunc
    assert infos == {}
    with pytest.raises(RuntimeError, match="reset_mask"):
        venv.step(np.ones(N, np.int64))
    after, info = venv.reset(options={"reset_mask": done})
    assert info == {}
    np.testing.assert_array_equal(after[~done], obs[~done])  # the others keep their state
    assert np.all(np.abs(after[done]) <= 0.05) and not np.array_equal(after[done], obs[done])
    venv.step(np.ones(N, np.int64))  # every episode runs again


def test_pong_refuses_disabled() -> None:
    with pytest.raises(ValueError, match="resets itself"):
        make_vec("pong", 2, autoreset_mode=DISABLED)


@pytest.mark.parametrize(
    "actions",
    [
        np.zeros(N + 1, np.int64),  # wrong batch size
        np.zeros((N, 1), np.int64),  # wrong shape
        np.zeros(N, np.float32),  # float dtype
        np.array([0, 1, 2, 0]),  # out of range
        np.array([0, -1, 1, 0]),  # negative
    ],
)
def test_bad_actions_raise(venv: VectorEnv, actions: np.ndarray) -> None:
    venv.reset(seed=3)
    with pytest.raises(InvalidActionError):
        venv.step(actions)


def test_step_before_reset_and_bad_reset_arguments_raise() -> None:
    venv = make_vec("cartpole", num_envs=3)
    with pytest.raises(RuntimeError):
        venv.step(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="one int"):
        venv.reset(seed=[0, 1, 2])
    with pytest.raises(ValueError, match="no reset options"):
        venv.reset(options={"low": -0.1})
    venv.reset(seed=0)
    # SyncVectorEnv's errors for a malformed reset_mask.
    for mask, error in [([True, True, True], TypeError), (np.ones(2, np.bool_), ValueError),
                        (np.ones(3, np.int64), TypeError), (np.zeros(3, np.bool_), ValueError)]:
        with pytest.raises(error, match="reset_mask"):
            venv.reset(options={"reset_mask": mask})


@pytest.mark.parametrize("mode", [SAME, NEXT])
def test_rollout_matches_stepping_by_hand(mode: AutoresetMode) -> None:
    """Each copy, stepped alone with the keys the documented schedule gives it, agrees."""
    n, steps, seed = 3, 40, 5
    venv = make_vec("cartpole", num_envs=n, autoreset_mode=mode)
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
    ended = [False] * n
    for _ in range(steps):
        actions = rng.integers(0, 2, n)
        obs, rew, term, trunc, infos = venv.step(actions)
        key, sub = jax.random.split(key)
        for i, k in enumerate(jax.random.split(sub, n)):
            # CartPole's step draws nothing: its reset takes k itself (AutoReset).
            step_key, reset_key = jax.random.fold_in(k, 0), k
            if mode == NEXT and ended[i]:  # the reset step
                states[i], o = reset(reset_key)
                assert rew[i] == 0.0 and not term[i] and not trunc[i]
                np.testing.assert_allclose(obs[i], np.asarray(o), rtol=1e-6, atol=1e-7)
                ended[i] = False
                resets += 1
                continue
            res = step(step_key, states[i], actions[i])
            assert term[i] == bool(res.terminated) and trunc[i] == bool(res.truncated)
            assert rew[i] == float(res.reward)
            want = np.asarray(res.obs)
            states[i] = res.state
            if res.terminated or res.truncated:
                if mode == SAME:
                    resets += 1
                    np.testing.assert_allclose(infos["final_obs"][i], want, rtol=1e-6,
                                               atol=1e-7)
                    states[i], o = reset(reset_key)
                    want = np.asarray(o)
                else:
                    ended[i] = True
            np.testing.assert_allclose(obs[i], want, rtol=1e-6, atol=1e-7)
    assert resets > 0  # random CartPole episodes last ~20 steps: resets were exercised
