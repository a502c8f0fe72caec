"""The actor-critic (GRU carry reset, Gaussian head) and the batched references PPO steps."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.spaces import Box, Discrete
from envport.envs.cartpole.vector_reference import CartPoleVectorReference
from envport.envs.pong.jax_env import Pong
from envport.envs.pong.vector_reference import PongVectorReference
from envport.train.backends import make_backend
from envport.train.config import PPOConfig
from envport.train.ppo import DiagGaussian, gae, make_policy
from envport.train.program import INIT_COMPILER_OPTIONS


def init_params(policy):
    key = jax.random.key(0)
    return jax.jit(policy.init).lower(key).compile(INIT_COMPILER_OPTIONS)(key)


def test_gru_policy_step_resets_its_carry_at_episode_starts() -> None:
    cfg = PPOConfig(network="gru", gru_size=8, hidden_sizes=(16,))
    policy = make_policy(cfg, Box(-math.inf, math.inf, (4,)), Discrete(2))
    params = init_params(policy)
    apply = jax.jit(policy.apply)
    obs = jax.random.normal(jax.random.key(1), (1, 3, 4))
    stale = jnp.ones((3, 8))  # a carry from some earlier episode
    first = jnp.array([[True, False, True]])
    carry, dist, value = apply(params, stale, obs, first)
    fresh_carry, _, _ = apply(params, policy.initial_carry(3), obs, first)
    assert carry.shape == (3, 8) and value.shape == (1, 3) and dist.logits.shape == (1, 3, 2)
    # Envs 0 and 2 start an episode: the stale carry is dropped; env 1 keeps its memory.
    np.testing.assert_array_equal(carry[0], fresh_carry[0])
    np.testing.assert_array_equal(carry[2], fresh_carry[2])
    assert not np.allclose(carry[1], fresh_carry[1])
    # A sequence step by step equals the whole sequence at once (the update re-runs it so).
    seq = jax.random.normal(jax.random.key(2), (5, 3, 4))
    firsts = jax.random.bernoulli(jax.random.key(3), 0.3, (5, 3))
    _, whole, _ = apply(params, stale, seq, firsts)
    c = stale
    for t in range(5):
        c, one, _ = apply(params, c, seq[t:t + 1], firsts[t:t + 1])
        np.testing.assert_allclose(one.logits[0], whole.logits[t], rtol=1e-5, atol=1e-6)


def test_gaussian_head_for_box_actions() -> None:
    policy = make_policy(PPOConfig(), Box(0.0, 1.0, (8,)), Box(-1.0, 1.0, (1,)))
    params = init_params(policy)
    _, dist, _ = jax.jit(policy.apply)(params, policy.initial_carry(5), jnp.zeros((1, 5, 8)),
                                       jnp.ones((1, 5), bool))
    assert isinstance(dist, DiagGaussian)
    raw = dist.sample(jax.random.key(1)) * 10  # far outside the box
    assert dist.log_prob(raw).shape == (1, 5) and dist.entropy().shape == (1, 5)
    action = policy.env_action(raw)
    assert float(jnp.abs(action).max()) <= 1.0  # clipped for the env, scored unclipped
    # log_prob of the standard normal at 0 (log_std starts at 0, the mean near 0).
    np.testing.assert_allclose(dist.log_prob(dist.mean), -0.5 * math.log(2 * math.pi),
                               rtol=1e-6)


def test_gae_stops_at_episode_ends() -> None:
    value = jnp.array([[1.0], [2.0], [3.0]])
    reward = jnp.ones((3, 1))
    done = jnp.array([[False], [True], [False]])
    adv, target = gae(value, reward, done, jnp.array([10.0]), gamma=0.5, lam=1.0)
    # t=1 ends its episode: its target is its reward alone; t=0 sees r0 + 0.5 * r1.
    np.testing.assert_allclose(target[:, 0], [1.5, 1.0, 1.0 + 0.5 * 10.0])
    np.testing.assert_allclose(adv, target - value)


def test_cartpole_reference_batch_autoresets_in_the_same_step() -> None:
    vec = CartPoleVectorReference(3, seed=1)
    obs = vec.reset()
    assert obs.shape == (3, 4) and obs.dtype == np.float32
    for _ in range(200):
        obs, reward, terminated, _ = vec.step(np.ones(3, np.int64))
        assert np.all(reward == 1.0)
        if terminated.any():
            break
    assert terminated.any()
    i = int(np.flatnonzero(terminated)[0])
    assert np.all(np.abs(obs[i]) <= 0.05)  # already the next episode's first observation
    assert abs(vec.final_obs[i][0]) > 2.4 or abs(vec.final_obs[i][2]) > 0.2
    # get_state/set_state: a copy continues identically (RNG streams included).
    saved = vec.get_state()
    other = CartPoleVectorReference(3, seed=99)
    other.set_state(saved)
    actions = np.random.default_rng(0).integers(0, 2, (300, 3))
    for a in actions:
        np.testing.assert_array_equal(vec.step(a)[0], other.step(a)[0])


def test_pong_reference_batch_matches_the_translation() -> None:
    n = 6
    backend = make_backend("pong", "reference", n, seed=2, frameskip=4)
    vec = backend.vec
    assert isinstance(vec, PongVectorReference)
    env = Pong(frameskip=4)
    state, obs = jax.vmap(env.reset_from_seed)(jnp.arange(2 * n, 3 * n, dtype=jnp.uint32))
    np.testing.assert_array_equal(vec.reset(), obs)
    step = jax.jit(jax.vmap(lambda s, a: env.step(jax.random.key(0), s, a)))
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = rng.integers(0, 3, n).astype(np.int32)
        got, reward, terminated, truncated = vec.step(a)
        res = step(state, a)
        state = res.state
        np.testing.assert_array_equal(got, res.obs)
        np.testing.assert_array_equal(reward, res.reward)
        np.testing.assert_array_equal(terminated, res.terminated)
        assert not truncated.any()
