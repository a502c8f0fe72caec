"""The gymnax view: gymnax's own wrappers and PureJaxRL-style code on envport environments."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

try:
    import gymnax
except ImportError as e:  # gymnax comes with the `peers` extra (install.sh's default)
    if "peers" in os.environ.get("ENVPORT_EXTRAS", "peers").split(","):
        raise ImportError(f"gymnax is not importable although install.sh installs it with the "
                          f"`peers` extra: {e}") from e
    pytest.skip(f"ENVPORT_EXTRAS leaves out `peers` (gymnax): {e}", allow_module_level=True)
from gymnax.wrappers import (
    FlattenObservationWrapper,
    GymnaxToDmEnvWrapper,
    GymnaxToGymWrapper,
    GymnaxToVectorGymWrapper,
    LegacyStepAPIWrapper,
    LogWrapper,
    StickyActionWrapper,
)

import envport
import envport.gymnax as envport_gymnax
from envport.core.api import tree_stack
from envport.core.wrappers import AutoReset
from envport.envs.cartpole.jax_env import CartPoleParams

N = 8


def batched_step(env):
    return jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))


def test_api_shape() -> None:
    env, params = envport_gymnax.make("cartpole")
    assert isinstance(env, gymnax.environments.environment.Environment)
    assert params == envport.make("cartpole").default_params() == env.default_params
    assert env.num_actions == 2 and env.name == "cartpole"
    obs_space, act_space = env.observation_space(params), env.action_space(params)
    assert isinstance(obs_space, gymnax.environments.spaces.Box)
    assert isinstance(act_space, gymnax.environments.spaces.Discrete) and act_space.n == 2
    np.testing.assert_array_equal(obs_space.high, np.float32([4.8, np.inf, 0.41887903, np.inf]))
    obs, state = env.reset(jax.random.key(0), params)
    out = env.step(jax.random.key(1), state, 1, params)
    assert len(out) == 6  # gymnax 1.0: obs, state, reward, terminated, truncated, info
    assert set(out[5]) == {"discount", "terminated", "truncated", "final_observation"}
    step_env = env.step_env(jax.random.key(1), state, 1, params)
    assert len(step_env) == 5 and float(step_env[4]["discount"]) == 1.0
    assert env.reset_env(jax.random.key(0), params)[0].shape == obs.shape
    pong, pong_params = envport_gymnax.make("pong")
    assert pong.num_actions == 3
    assert pong.observation_space(pong_params).shape == (8,)


def test_cartpole_view_steps_as_envport_autoreset_under_the_same_keys() -> None:
    """gymnax's step (inherited) resets from ``split(key)[1]``; envport's AutoReset resets
    CartPole (whose step draws nothing) from its key itself: given that key, the same results."""
    env, params = envport_gymnax.make("cartpole", max_steps=30)
    ref = AutoReset(envport.make("cartpole", max_steps=30))
    # Params passed in (traced) on both sides: the same program, so equality is exact (params
    # closed over are folded in as constants instead, which may round an ulp differently).
    step, ref_step = batched_step(env), batched_step(ref)
    keys = jax.random.split(jax.random.key(0), N)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    ref_state, ref_obs = jax.vmap(ref.reset)(keys)
    np.testing.assert_array_equal(obs, ref_obs)
    rng = np.random.default_rng(0)
    ends = {"terminated": 0, "truncated": 0}
    for t in range(120):
        keys = jax.random.split(jax.random.key(t + 1), N)
        actions = jnp.asarray(rng.integers(0, 2, N), jnp.int32)
        obs, state, reward, term, trunc, info = step(keys, state, actions, params)
        reset_keys = jax.vmap(lambda k: jax.random.split(k)[1])(keys)
        res = ref_step(reset_keys, ref_state, actions, params)
        ref_state = res.state
        np.testing.assert_array_equal(obs, res.obs)
        np.testing.assert_array_equal(info["final_observation"], res.info["final_observation"])
        np.testing.assert_array_equal(reward, res.reward)
        np.testing.assert_array_equal(term, res.terminated)
        np.testing.assert_array_equal(trunc, res.truncated)
        np.testing.assert_array_equal(info["discount"], np.where(term, 0.0, 1.0))
        for a, b in zip(jax.tree_util.tree_leaves(state.env_state),
                        jax.tree_util.tree_leaves(res.state), strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(state.time, res.state.time)  # 0 after a reset
        ends["terminated"] += int(term.sum())
        ends["truncated"] += int(trunc.sum())
    assert ends["terminated"] > 0 and ends["truncated"] > 0


def test_view_steps_like_gymnax_own_cartpole() -> None:
    """The same reset draw and Gymnasium's dynamics: gymnax's own CartPole-v1 and the view agree
    from the same keys (float32 both, rounding apart), episode ends and rewards included."""
    env, params = envport_gymnax.make("cartpole")
    theirs, their_params = gymnax.make("CartPole-v1")
    step, their_step = batched_step(env), batched_step(theirs)
    keys = jax.random.split(jax.random.key(3), N)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    t_obs, t_state = jax.vmap(theirs.reset, in_axes=(0, None))(keys, their_params)
    np.testing.assert_array_equal(obs, t_obs)
    rng = np.random.default_rng(3)
    ended = 0
    for t in range(60):
        keys = jax.random.split(jax.random.key(100 + t), N)
        actions = jnp.asarray(rng.integers(0, 2, N), jnp.int32)
        obs, state, reward, term, trunc, _ = step(keys, state, actions, params)
        t_obs, t_state, t_reward, t_term, t_trunc, _ = their_step(keys, t_state, actions,
                                                                  their_params)
        np.testing.assert_allclose(obs, t_obs, rtol=1e-4, atol=1e-5, err_msg=f"step {t}")
        np.testing.assert_array_equal(term, t_term)
        np.testing.assert_array_equal(trunc, t_trunc)
        np.testing.assert_array_equal(reward, t_reward)
        ended += int(term.sum())
    assert ended > 0


def test_vmap_over_params_through_the_view_compiles_once() -> None:
    env, _ = envport_gymnax.make("cartpole")
    gravities = np.linspace(5.0, 15.0, N)
    params = tree_stack([CartPoleParams(gravity=float(g)) for g in gravities])
    traces = 0

    def one(key, state, action, p):
        nonlocal traces
        traces += 1
        return env.step(key, state, action, p)

    step = jax.jit(jax.vmap(one))
    keys = jax.random.split(jax.random.key(0), N)
    same_key = jnp.stack([jax.random.key(0)] * N)
    _, state = jax.vmap(env.reset)(same_key, params)  # one start for all: gravity differs
    for _ in range(3):
        obs, state, *_ = step(keys, state, jnp.zeros(N, jnp.int32), params)
    assert traces == 1
    for i in (0, N - 1):
        _, s = env.reset(jax.random.key(0), CartPoleParams(gravity=float(gravities[i])))
        for _ in range(3):
            o, s, *_ = env.step(keys[i], s, 0, CartPoleParams(gravity=float(gravities[i])))
        np.testing.assert_allclose(obs[i], o, rtol=1e-6, atol=1e-7)
    assert not np.allclose(obs[0], obs[-1])  # the gravities were used


@pytest.mark.parametrize("name, options, steps", [("cartpole", {}, 150),
                                                  ("pong", {"max_score": 1}, 300)])
def test_purejaxrl_style_rollout_with_log_and_flatten_wrappers(name, options, steps) -> None:
    """PureJaxRL's set-up (FlattenObservationWrapper, LogWrapper, vmapped reset/step, scanned
    rollout, jitted), unchanged: LogWrapper's episode returns and lengths match a count made from
    the rollout's own rewards and done flags."""
    env, params = envport_gymnax.make(name, **options)
    env = LogWrapper(FlattenObservationWrapper(env))

    @jax.jit
    def rollout(key):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, N), params)

        def body(carry, k):
            obs, state = carry
            k_act, k_step = jax.random.split(k)
            action = jax.vmap(env.action_space(params).sample)(jax.random.split(k_act, N))
            obs, state, reward, term, trunc, info = jax.vmap(
                env.step, in_axes=(0, 0, 0, None))(jax.random.split(k_step, N), state, action,
                                                   params)
            return (obs, state), (reward, term | trunc, info["returned_episode"],
                                  info["returned_episode_returns"],
                                  info["returned_episode_lengths"])

        return jax.lax.scan(body, (obs, state), jax.random.split(key, steps))[1]

    reward, done, returned, returns, lengths = map(np.asarray, rollout(jax.random.key(0)))
    np.testing.assert_array_equal(returned, done)
    running_return, running_length = np.zeros(N), np.zeros(N, int)
    episodes = 0
    for t in range(steps):
        running_return += reward[t]
        running_length += 1
        for i in np.flatnonzero(done[t]):
            np.testing.assert_allclose(returns[t, i], running_return[i], rtol=1e-5, atol=1e-5)
            assert lengths[t, i] == running_length[i]
            episodes += 1
        running_return[done[t]] = 0
        running_length[done[t]] = 0
    assert episodes >= N


def test_legacy_sticky_and_dm_env_wrappers() -> None:
    env, params = envport_gymnax.make("cartpole")
    key = jax.random.key(5)
    _, state = env.reset(key, params)
    legacy = LegacyStepAPIWrapper(env)
    sticky_never, sticky_always = StickyActionWrapper(env, 0.0), StickyActionWrapper(env, 1.0)
    _, s_never = sticky_never.reset(key, params)
    _, s_always = sticky_always.reset(key, params)
    dm = GymnaxToDmEnvWrapper(env)
    ts = dm.reset(key, params)
    zero_state = state
    plain_state = state
    for t in range(40):
        k = jax.random.key(10 + t)
        o, new, r, term, trunc, info = env.step(k, plain_state, 1, params)
        l_obs, _, l_rew, l_done, l_info = legacy.step(k, plain_state, 1, params)
        np.testing.assert_array_equal(l_obs, o)
        assert bool(l_done) == bool(term | trunc) and float(l_rew) == float(r)
        assert float(l_info["discount"]) == float(info["discount"])
        n_obs, s_never, *_ = sticky_never.step(k, s_never, 1, params)
        np.testing.assert_array_equal(n_obs, o)
        # Replaying (p = 1) always executes the initial action 0, with the key's second half.
        z_obs, zero_state, *_ = env.step(jax.random.split(k)[1], zero_state, 0, params)
        a_obs, s_always, *_ = sticky_always.step(k, s_always, 1, params)
        np.testing.assert_array_equal(a_obs, z_obs)
        ts = dm.step(k, ts, 1, params)
        np.testing.assert_array_equal(ts.observation, o)
        np.testing.assert_array_equal(ts.final_observation, info["final_observation"])
        assert float(ts.discount) == 1.0 - float(term)
        plain_state = new


def test_gymnasium_wrappers_over_the_view() -> None:
    env, params = envport_gymnax.make("cartpole")
    single = GymnaxToGymWrapper(env)
    assert single.observation_space.shape == (4,) and single.action_space.n == 2
    single.reset(seed=0)
    for t in range(100):  # noqa: B007 - t is read after the loop
        _, reward, terminated, truncated, _ = single.step(1)  # always right: falls in ~10
        assert float(reward) == 1.0
        if terminated:
            break
    assert terminated and not truncated and t < 30

    vec = GymnaxToVectorGymWrapper(env, num_envs=3)
    obs, _ = vec.reset(seed=4)
    # The wrapper's own key schedule, reproduced on the view.
    pairs = jax.vmap(jax.random.split)(jax.random.split(jax.random.key(4), 3))
    want, state = jax.vmap(env.reset, in_axes=(0, None))(pairs[:, 1], params)
    np.testing.assert_array_equal(obs, want)
    obs, reward, *_ = vec.step(jnp.ones(3, jnp.int32))
    pairs = jax.vmap(jax.random.split)(pairs[:, 0])
    want, *_ = batched_step(env)(pairs[:, 1], state, jnp.ones(3, jnp.int32), params)
    np.testing.assert_array_equal(obs, want)
    np.testing.assert_array_equal(reward, np.ones(3))


def test_pong_view_resets_from_its_reset_key_at_a_game_end() -> None:
    env, params = envport_gymnax.make("pong", max_score=1)
    step = jax.jit(env.step)
    obs, state = env.reset(jax.random.key(0), params)
    for t in range(400):
        key = jax.random.key(1000 + t)
        obs, state, reward, term, trunc, info = step(key, state, 0, params)
        if term:
            break
    assert bool(term) and not bool(trunc) and abs(float(reward)) == 1.0
    final = np.asarray(info["final_observation"])
    np.testing.assert_allclose(final[2], 0.2)  # the serve Pong started itself
    np.testing.assert_array_equal(final[6:], 0.0)
    want, _ = env.reset_env(jax.random.split(key)[1], params)  # gymnax's reset key
    np.testing.assert_array_equal(obs, want)
    assert int(state.time) == 0 and float(info["discount"]) == 0.0
