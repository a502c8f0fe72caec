"""Masked PPO: a discrete head restricted to the legal actions of an environment with an
``action_mask(state, params)`` hook, on a toy contextual bandit (compiles in seconds; the
Pokemon run itself is a slow test and a benchmark command, tests/envs/pokemon_gen1/), and on
a variant with a fixed context sequence that a NumPy host batch replays, so masked PPO on the
reference backend can be checked to be the JAX backend's computation.

The bandit is a test environment for PPO's masking code, not an envport translation: nothing
verifies it against a reference, and its reference and bridge are never built."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.core import registry
from envport.core.api import Environment, StepResult
from envport.core.registry import EnvSpec, Training
from envport.core.spaces import Box, Discrete
from envport.train.config import PPOConfig
from envport.train.ppo import MASKED_LOGIT, Categorical

N_CONTEXTS, N_ACTIONS = 4, 6


class MaskedBandit(Environment[Any, Any]):
    """One-step episodes: context c (one-hot), legal actions c, c+1, c+2; reward 1 for c+2
    (the last legal one), 0 otherwise; the illegal actions would pay 2, so a policy that
    ignored the mask would learn to play them."""

    name = "masked-bandit"

    def default_params(self) -> Any:
        return None

    def observation_space(self, params: Any = None) -> Box:
        return Box(0.0, 1.0, (N_CONTEXTS,))

    def action_space(self, params: Any = None) -> Discrete:
        return Discrete(N_ACTIONS)

    def reset(self, key: jax.Array, params: Any = None) -> tuple[jax.Array, jax.Array]:
        c = jax.random.randint(key, (), 0, N_CONTEXTS)
        return c, jax.nn.one_hot(c, N_CONTEXTS)

    def sample_draws(self, key: jax.Array, state: Any, params: Any = None) -> jax.Array:
        return key

    def action_mask(self, state: jax.Array, params: Any = None) -> jax.Array:
        a = jnp.arange(N_ACTIONS)
        return (a >= state) & (a <= state + 2)

    def transition(self, state: jax.Array, action: jax.Array, draws: Any,
                   params: Any = None) -> StepResult:
        legal = self.action_mask(state)[action]
        reward = jnp.where(legal, (action == state + 2).astype(jnp.float32), 2.0)
        nxt, obs = self.reset(draws)
        return StepResult(nxt, obs, reward, jnp.asarray(True), jnp.asarray(False), {})


def _never(*_: Any, **__: Any) -> Any:
    raise AssertionError("the bandit has no reference: training uses the JAX side only")


class SequencedBandit(MaskedBandit):
    """The bandit with a fixed sequence of contexts instead of draws (state: the position ``k``
    in it), resetting itself: a host batch can play exactly its games (:class:`HostBandits`),
    so PPO on the two backends is one computation."""

    name = "masked-bandit-sequenced"
    autoresets = True

    @staticmethod
    def context(k: Any) -> Any:
        return (3 * k + k // 5) % N_CONTEXTS

    def reset(self, key: jax.Array, params: Any = None) -> tuple[jax.Array, jax.Array]:
        return self.reset_from_seed(jax.random.randint(key, (), 0, 1000), params)

    def reset_from_seed(self, seed: Any, params: Any = None) -> tuple[jax.Array, jax.Array]:
        k = jnp.asarray(seed, jnp.int32)
        return k, jax.nn.one_hot(self.context(k), N_CONTEXTS)

    def action_mask(self, state: jax.Array, params: Any = None) -> jax.Array:
        return super().action_mask(self.context(state))

    def transition(self, state: jax.Array, action: jax.Array, draws: Any,
                   params: Any = None) -> StepResult:
        c = self.context(state)
        legal = self.action_mask(state)[action]
        reward = jnp.where(legal, (action == c + 2).astype(jnp.float32), 2.0)
        nxt, obs = self.reset_from_seed(state + 1)
        return StepResult(nxt, obs, reward, jnp.asarray(True), jnp.asarray(False), {})


def sequenced_seeds(seed: Any, num_envs: int) -> Any:
    return seed * num_envs + jnp.arange(num_envs)


class HostBandits:
    """:class:`SequencedBandit` in NumPy, a host batch for the reference backend."""

    def __init__(self, num_envs: int, seed: int = 0) -> None:
        self.num_envs = num_envs
        self.observation_space = Box(0.0, 1.0, (N_CONTEXTS,))
        self.action_space = Discrete(N_ACTIONS)
        self.k = np.asarray(sequenced_seeds(seed, num_envs), np.int64)

    def _obs(self) -> np.ndarray:
        return np.eye(N_CONTEXTS, dtype=np.float32)[SequencedBandit.context(self.k)]

    def reset(self) -> np.ndarray:
        return self._obs()

    def action_masks(self) -> np.ndarray:
        c = SequencedBandit.context(self.k)[:, None]
        a = np.arange(N_ACTIONS)[None]
        return (a >= c) & (a <= c + 2)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        actions = np.asarray(actions)
        legal = self.action_masks()[np.arange(self.num_envs), actions]
        best = actions == SequencedBandit.context(self.k) + 2
        reward = np.where(legal, best.astype(np.float32), np.float32(2.0))
        self.k = self.k + 1
        n = self.num_envs
        return self._obs(), reward, np.ones(n, bool), np.zeros(n, bool)

    def get_state(self) -> Any:
        return self.k.copy()

    def set_state(self, state: Any) -> None:
        self.k = np.array(state)


PPO = PPOConfig(num_envs=8, num_steps=16, total_steps=8 * 16 * 12, lr=0.02, update_epochs=2,
                num_minibatches=2, hidden_sizes=(16,), ent_coef=0.0)


@pytest.fixture(scope="module")
def bandit() -> Iterator[str]:
    spec = EnvSpec(name="masked-bandit", summary="PPO masking test bandit", reference="none",
                   make=MaskedBandit, make_reference=_never, make_bridge=_never,
                   training=Training(ppo=PPO), status="test")
    registry.register(spec)
    try:
        yield spec.name
    finally:
        registry._REGISTERED.pop(spec.name, None)
        registry._specs.cache_clear()


@pytest.fixture(scope="module")
def sequenced_bandit() -> Iterator[str]:
    spec = EnvSpec(name=SequencedBandit.name, summary="PPO masking test bandit, both backends",
                   reference="none", make=SequencedBandit, make_reference=_never,
                   make_bridge=_never, status="test",
                   training=Training(ppo=PPO, make_vector_reference=HostBandits,
                                     reset_seeds=sequenced_seeds))
    registry.register(spec)
    try:
        yield spec.name
    finally:
        registry._REGISTERED.pop(spec.name, None)
        registry._specs.cache_clear()


def test_masked_categorical_keeps_to_the_legal_actions() -> None:
    logits = jnp.array([[3.0, 0.5, -1.0, 2.0], [0.0, 0.0, 0.0, 0.0]])
    mask = jnp.array([[False, True, True, False], [True, True, True, False]])
    dist = Categorical.masked(logits, mask)
    draws = jax.vmap(dist.sample)(jax.random.split(jax.random.key(0), 2000))
    assert bool(jnp.all(jnp.take_along_axis(mask[None], draws[..., None], -1)))
    # The legal logits' own softmax (row 0: 0.5 and -1.0), written out by hand.
    p = np.exp([0.5, -1.0]) / np.exp([0.5, -1.0]).sum()
    np.testing.assert_allclose(np.exp(dist.log_prob(jnp.array([1, 1]))), [p[0], 1 / 3],
                               rtol=1e-6)
    np.testing.assert_allclose(dist.entropy(), [-(p * np.log(p)).sum(), math.log(3)],
                               rtol=1e-6)
    assert int(dist.mode()[0]) == 1  # the best legal action, not the best one (0)
    # No gradient flows into an illegal logit, from the log-probability or the entropy.
    grad = jax.grad(lambda z: jnp.sum(Categorical.masked(z, mask).log_prob(jnp.array([2, 0])))
                    + jnp.sum(Categorical.masked(z, mask).entropy()))(logits)
    assert np.all(np.asarray(grad)[~np.asarray(mask)] == 0.0)
    assert np.all(np.isfinite(np.asarray(dist.logits)))
    assert float(dist.logits[0, 0]) == MASKED_LOGIT
    # Without a mask: the plain head (what every environment without masks keeps).
    plain = Categorical.masked(logits, None)
    assert plain.mask is None and plain.logits is logits


def test_ppo_samples_legal_actions_and_learns_among_them(bandit: str) -> None:
    from envport.train.program import JaxTrainer, program

    prog = program(bandit, {}, PPO)
    assert prog.masked
    trainer = JaxTrainer(prog)
    runner = trainer.init(0)
    out = prog.rollout(runner)(*prog.rollout_args(runner))
    traj = out[8]
    assert traj.mask is not None and traj.mask.shape == (16, 8, N_ACTIONS)
    taken = np.take_along_axis(np.asarray(traj.mask), np.asarray(traj.action)[..., None], -1)
    assert taken.all()  # 128 sampled actions, every one legal
    # The rewards say the same: an illegal action would have paid 2.
    assert float(np.asarray(traj.reward).max()) <= 1.0

    _, stats = trainer.run(runner, PPO.num_updates)
    returns = [s["return_sum"] / s["episodes"] for s in stats]
    # Uniform over the 3 legal actions returns 1/3 and has entropy log 3; the trained policy
    # picks the rewarded one most of the time, and its entropy (over the legal actions only)
    # falls below log 3.
    assert stats[0]["entropy"] <= math.log(3) + 1e-4
    assert returns[-1] > 0.8, returns
    assert max(returns) <= 1.0  # never an illegal action's 2


def test_unmasked_environments_keep_their_plain_trajectory() -> None:
    from envport.train.program import program
    from envport.train.run import default_config

    cfg, kwargs = default_config("cartpole")
    prog = program("cartpole", kwargs, dataclasses.replace(cfg, num_steps=8))
    assert not prog.masked and prog.example_traj().mask is None


def test_masked_training_is_identical_on_both_backends(
        sequenced_bandit: str, tmp_path: Path, same_leaves: Callable[[Any, Any], None]) -> None:
    """Masked PPO on the reference backend (the host rollout: the batch's ``action_masks``
    before each policy step, the masks in the trajectory) is the JAX backend's computation:
    with the same games (the bandit's fixed context sequence from the reference batch's seeds)
    both give bit-identical parameters and logs. A host path that paired a mask with the wrong
    observation, dropped it from the update or sampled differently would break this."""
    from envport.train import load_params, read_log, train

    for backend in ("jax", "reference"):
        train(sequenced_bandit, backend, seed=5, out=tmp_path / backend, progress=False)
    (_, a), (_, b) = load_params(tmp_path / "jax"), load_params(tmp_path / "reference")
    same_leaves(a, b)
    log_a, log_b = read_log(tmp_path / "jax"), read_log(tmp_path / "reference")
    assert len(log_a) == PPO.num_updates
    for ra, rb in zip(log_a, log_b, strict=True):
        for k in ("mean_return", "policy_loss", "value_loss", "entropy", "approx_kl"):
            assert ra[k] == rb[k], (k, ra, rb)
    # Not two untrained runs alike: the policy learned (uniform over the legal actions
    # returns 1/3), and never from an illegal action's 2.
    returns = [r["mean_return"] for r in log_a]
    assert returns[-1] > 0.8 and max(returns) <= 1.0, returns
