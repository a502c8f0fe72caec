"""PPO on an envport environment, PureJaxRL-style, on either backend, in one file.

Sections, in reading order:

1. :class:`PPOConfig`: the hyperparameters (defaults as PureJaxRL/CleanRL: the PPO paper's
   lr 2.5e-4, gamma 0.99, GAE lambda 0.95, clip 0.2, with 4 epochs of 4 minibatches).
2. The actor-critic (flax linen): MLP or GRU torso, Categorical or diagonal Gaussian head.
3. The PPO update (:func:`make_learn`): GAE, then ``update_epochs`` passes of minibatch steps.
   ONE function, used by both backends.
4. The JAX backend's rollout: ``lax.scan`` over the vmapped, AutoReset-wrapped translation,
   jitted; then the SAME compiled update executable the reference backend calls (its rollout,
   stepped on the host, is in ``host_rollout.py``). Updates are dispatched asynchronously in
   chunks: Python only waits once per chunk, to log, checkpoint and refresh the progress bar.
5. The run: config.json, the CSV log, checkpoints, progress bar, Ctrl-C, learning-curve plot,
   and the public entries :func:`train` and :func:`resume`.

Devices: the environment batch is split over every device of ``jax.devices()`` (a 1-D ``Mesh``
with axis ``"batch"``) by ``shard_map``. Each device steps its own environments, computes
gradients on its share of every minibatch, and the gradients are averaged with ``pmean`` (as
``pmap`` data parallelism does), so the parameters stay identical everywhere. ``check_vma`` is
off on purpose: with it on, JAX already sums the gradient of a replicated parameter over devices
(the transpose of its implicit broadcast) and an explicit ``pmean`` would double it.

Determinism: on one machine and software stack, a run is a pure function of (config, seed,
number of devices). Checkpoints hold
every piece of state (parameters, optimizer, RNG keys, environment states, observations, GRU
carries, episode accumulators, counters), so :func:`resume` continues bit for bit.

Simplification kept from PureJaxRL: an episode cut by truncation (CartPole's 500-step limit) is
treated as terminal in GAE (no bootstrap from the final observation). Both backends do the same.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import math
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import envport
from envport.core.spaces import Box, Discrete, Space
from envport.train.backends import Backend, check_backend, make_backend

AXIS = "batch"  # the mesh axis the environment batch is split over
Array = jax.Array
Params = Any


# ============================================================================ 1. configuration
@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO hyperparameters. ``total_steps`` counts environment steps (agent steps)."""

    num_envs: int = 4
    num_steps: int = 128  # rollout length per environment per update
    total_steps: int = 500_000
    lr: float = 2.5e-4
    anneal_lr: bool = True  # linear decay to 0 over the run (per update, as PureJaxRL)
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2  # clips the policy ratio and the value change
    update_epochs: int = 4
    num_minibatches: int = 4
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    network: str = "mlp"  # "mlp" or "gru"
    hidden_sizes: tuple[int, ...] = (64, 64)  # actor and critic MLPs (separate weights)
    gru_size: int = 128  # GRU width (network="gru"): embedding Dense + GRU before the MLPs
    seed: int = 0

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_updates(self) -> int:
        return self.total_steps // self.batch_size

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["hidden_sizes"] = list(self.hidden_sizes)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PPOConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown PPO hyperparameter(s) {sorted(unknown)}; "
                             f"known: {', '.join(sorted(known))}")
        d = dict(d)
        if "hidden_sizes" in d:
            d["hidden_sizes"] = tuple(int(h) for h in d["hidden_sizes"])
        return cls(**d)

    def check(self, devices: int) -> None:
        """Raise ValueError naming the first problem (before anything is built)."""
        positive = ("num_envs", "num_steps", "total_steps", "update_epochs", "num_minibatches",
                    "gru_size")
        for name in positive:
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.network not in ("mlp", "gru"):
            raise ValueError(f"network must be 'mlp' or 'gru', got {self.network!r}")
        if self.total_steps < self.batch_size:
            raise ValueError(
                f"steps={self.total_steps} is less than one batch (num_envs * num_steps = "
                f"{self.num_envs} * {self.num_steps} = {self.batch_size}): nothing to train")
        if self.num_envs % devices:
            raise ValueError(f"num_envs={self.num_envs} must be a multiple of the {devices} "
                             "devices the batch is split over")
        local_envs = self.num_envs // devices
        if self.network == "gru" and local_envs % self.num_minibatches:
            raise ValueError(
                f"with a GRU, minibatches are made of whole environments: num_envs per device "
                f"({local_envs}) must be a multiple of num_minibatches={self.num_minibatches}")
        if self.network == "mlp" and (local_envs * self.num_steps) % self.num_minibatches:
            raise ValueError(
                f"the per-device batch ({local_envs * self.num_steps}) must be a multiple of "
                f"num_minibatches={self.num_minibatches}")


# ============================================================================ 2. network
class Categorical(NamedTuple):
    logits: Array

    def sample(self, key: Array) -> Array:
        return jax.random.categorical(key, self.logits).astype(jnp.int32)

    def log_prob(self, action: Array) -> Array:
        logp = jax.nn.log_softmax(self.logits)
        return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def entropy(self) -> Array:
        logp = jax.nn.log_softmax(self.logits)
        return -jnp.sum(jnp.exp(logp) * logp, axis=-1)

    def mode(self) -> Array:
        return jnp.argmax(self.logits, axis=-1).astype(jnp.int32)


class DiagGaussian(NamedTuple):
    mean: Array
    log_std: Array  # state-independent, broadcast against mean

    def sample(self, key: Array) -> Array:
        return self.mean + jnp.exp(self.log_std) * jax.random.normal(key, self.mean.shape)

    def log_prob(self, action: Array) -> Array:
        z = (action - self.mean) * jnp.exp(-self.log_std)
        return jnp.sum(-0.5 * z**2 - self.log_std - 0.5 * math.log(2 * math.pi), axis=-1)

    def entropy(self) -> Array:
        per_dim = jnp.broadcast_to(0.5 + 0.5 * math.log(2 * math.pi) + self.log_std,
                                   self.mean.shape)
        return jnp.sum(per_dim, axis=-1)

    def mode(self) -> Array:
        return self.mean


Distribution = Categorical | DiagGaussian


class ScannedGRU(nn.Module):
    """A GRU over a (time, batch, features) sequence whose carry restarts (zeros) wherever
    ``first`` marks the first observation of an episode."""

    features: int

    @functools.partial(nn.scan, variable_broadcast="params", in_axes=0, out_axes=0,
                       split_rngs={"params": False})
    @nn.compact
    def __call__(self, carry: Array, x: tuple[Array, Array]) -> tuple[Array, Array]:
        inputs, first = x
        carry = jnp.where(first[:, None], jnp.zeros_like(carry), carry)
        carry, y = nn.GRUCell(features=self.features)(carry, inputs)
        return carry, y


class ActorCritic(nn.Module):
    """``(carry, obs[T, B, ...], first[T, B]) -> (carry, policy head, value[T, B])``.

    Always sequence-shaped so one signature serves the MLP and the GRU; a rollout step is T=1.
    Orthogonal initialisation with the usual gains (sqrt 2 hidden, 0.01 policy, 1 value).
    """

    action_dim: int
    continuous: bool
    network: str
    hidden_sizes: tuple[int, ...]
    gru_size: int

    @nn.compact
    def __call__(self, carry: Array, obs: Array, first: Array
                 ) -> tuple[Array, Array | tuple[Array, Array], Array]:
        x = obs.reshape(*obs.shape[:2], -1).astype(jnp.float32)
        hidden = nn.initializers.orthogonal(math.sqrt(2.0))
        zeros = nn.initializers.zeros
        if self.network == "gru":
            x = nn.tanh(nn.Dense(self.gru_size, kernel_init=hidden, bias_init=zeros)(x))
            carry, x = ScannedGRU(self.gru_size)(carry, (x, first))
        actor, critic = x, x
        for h in self.hidden_sizes:
            actor = nn.tanh(nn.Dense(h, kernel_init=hidden, bias_init=zeros)(actor))
        for h in self.hidden_sizes:
            critic = nn.tanh(nn.Dense(h, kernel_init=hidden, bias_init=zeros)(critic))
        head = nn.Dense(self.action_dim, kernel_init=nn.initializers.orthogonal(0.01),
                        bias_init=zeros)(actor)
        value = nn.Dense(1, kernel_init=nn.initializers.orthogonal(1.0), bias_init=zeros)(critic)
        if self.continuous:
            log_std = self.param("log_std", zeros, (self.action_dim,))
            return carry, (head, log_std), value[..., 0]
        return carry, head, value[..., 0]


@dataclasses.dataclass(frozen=True)
class Policy:
    """The network plus what it needs to know about the spaces."""

    net: ActorCritic
    obs_shape: tuple[int, ...]
    action_space: Space

    @property
    def carry_size(self) -> int:
        # An MLP has no memory: a dummy width-1 carry keeps one signature for both networks
        # (not width 0: XLA drops the sharding of zero-size arrays).
        return self.net.gru_size if self.net.network == "gru" else 1

    def initial_carry(self, batch: int) -> Array:
        return jnp.zeros((batch, self.carry_size), jnp.float32)

    def init(self, key: Array) -> Params:
        obs = jnp.zeros((1, 1, *self.obs_shape), jnp.float32)
        return self.net.init(key, self.initial_carry(1), obs, jnp.ones((1, 1), jnp.bool_))

    def apply(self, params: Params, carry: Array, obs: Array, first: Array
              ) -> tuple[Array, Distribution, Array]:
        carry, head, value = self.net.apply(params, carry, obs, first)
        if self.net.continuous:
            mean, log_std = head
            return carry, DiagGaussian(mean, log_std), value
        return carry, Categorical(head), value

    def env_action(self, raw: Array) -> Array:
        """What the environment receives. A Gaussian sample is clipped to the Box (its
        unclipped value is what the loss scores); a categorical sample is an int32 index."""
        space = self.action_space
        if isinstance(space, Box):
            return jnp.clip(raw, space.low, space.high).astype(jnp.float32)
        return raw.astype(jnp.int32)


def make_policy(cfg: PPOConfig, obs_space: Space, action_space: Space) -> Policy:
    if isinstance(action_space, Discrete):
        action_dim, continuous = action_space.n, False
    elif isinstance(action_space, Box):
        if len(action_space.shape) != 1:
            raise ValueError(f"Box actions must be 1-D, got shape {action_space.shape}")
        action_dim, continuous = action_space.shape[0], True
    else:
        raise ValueError(f"no policy head for action space {action_space!r}")
    net = ActorCritic(action_dim, continuous, cfg.network, tuple(cfg.hidden_sizes), cfg.gru_size)
    return Policy(net, tuple(obs_space.shape), action_space)


# ============================================================================ 3. the PPO update
class TrainState(NamedTuple):
    params: Params
    opt_state: optax.OptState


class Transition(NamedTuple):
    """One rollout step of every environment (a leading (T, N) in a trajectory)."""

    obs: Array
    first: Array  # obs is the first observation of an episode (the GRU restarts here)
    action: Array  # the sampled action, before any clipping to the action space
    logp: Array
    value: Array
    reward: Array
    done: Array  # the episode ended on this step (terminated or truncated)


def make_optimizer(cfg: PPOConfig) -> optax.GradientTransformation:
    steps_per_update = cfg.num_minibatches * cfg.update_epochs

    def schedule(count: Array) -> Array:
        # Constant within an update, linearly down to 0 at the end of the run (PureJaxRL).
        return cfg.lr * (1.0 - (count // steps_per_update) / cfg.num_updates)

    lr: float | Callable[[Array], Array] = schedule if cfg.anneal_lr else cfg.lr
    return optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(lr, eps=1e-5))


def learning_rate(cfg: PPOConfig, update: int) -> float:
    """The learning rate of update ``update`` (0-based), for the log."""
    return cfg.lr * (1.0 - update / cfg.num_updates) if cfg.anneal_lr else cfg.lr


def gae(value: Array, reward: Array, done: Array, last_value: Array, gamma: float,
        lam: float) -> tuple[Array, Array]:
    """Generalised advantage estimates and value targets over a (T, N) trajectory."""

    def back(carry: tuple[Array, Array], x: tuple[Array, Array, Array]
             ) -> tuple[tuple[Array, Array], Array]:
        next_adv, next_value = carry
        v, r, d = x
        live = 1.0 - d.astype(jnp.float32)
        delta = r + gamma * next_value * live - v
        adv = delta + gamma * lam * live * next_adv
        return (adv, v), adv

    init = (last_value * 0.0, last_value)
    _, adv = jax.lax.scan(back, init, (value, reward, done), reverse=True)
    return adv, adv + value


def make_learn(policy: Policy, cfg: PPOConfig, tx: optax.GradientTransformation
               ) -> Callable[..., tuple[TrainState, dict[str, Array]]]:
    """The PPO update of one rollout, run per device inside ``shard_map``.

    ``learn(train, traj, last_obs, last_first, last_carry, init_carry, key)``: ``traj`` is this
    device's (T, n) trajectory, ``last_*`` what follows it (to bootstrap the last value),
    ``init_carry`` the network carry at the trajectory's start (re-run for a GRU), ``key``
    replicated. Returns the new state and the update's mean losses (identical on all devices).
    """
    m = cfg.num_minibatches

    def loss_fn(params: Params, carry: Array, tr: Transition, adv: Array, target: Array
                ) -> tuple[Array, dict[str, Array]]:
        _, dist, value = policy.apply(params, carry, tr.obs, tr.first)
        logp = dist.log_prob(tr.action)
        log_ratio = logp - tr.logp
        ratio = jnp.exp(log_ratio)
        policy_loss = -jnp.mean(jnp.minimum(
            ratio * adv, jnp.clip(ratio, 1 - cfg.clip_eps, 1 + cfg.clip_eps) * adv))
        value_clipped = tr.value + jnp.clip(value - tr.value, -cfg.clip_eps, cfg.clip_eps)
        value_loss = 0.5 * jnp.mean(jnp.maximum(jnp.square(value - target),
                                                jnp.square(value_clipped - target)))
        entropy = jnp.mean(dist.entropy())
        total = policy_loss + cfg.vf_coef * value_loss - cfg.ent_coef * entropy
        return total, {
            "policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy,
            "approx_kl": jnp.mean((ratio - 1.0) - log_ratio),
            "clip_frac": jnp.mean((jnp.abs(ratio - 1.0) > cfg.clip_eps).astype(jnp.float32)),
        }

    def minibatch_step(train: TrainState, mb: tuple[Array, Transition, Array, Array]
                       ) -> tuple[TrainState, dict[str, Array]]:
        carry, tr, adv, target = mb
        # Normalise advantages over the whole minibatch, all devices' shares together.
        mean = jax.lax.pmean(jnp.mean(adv), AXIS)
        var = jax.lax.pmean(jnp.mean(jnp.square(adv - mean)), AXIS)
        adv = (adv - mean) / (jnp.sqrt(var) + 1e-8)
        grads, stats = jax.grad(loss_fn, has_aux=True)(train.params, carry, tr, adv, target)
        # Equal shares per device: the mean of the devices' gradients is the minibatch's.
        grads, stats = jax.lax.pmean((grads, stats), AXIS)
        updates, opt_state = tx.update(grads, train.opt_state, train.params)
        return TrainState(optax.apply_updates(train.params, updates), opt_state), stats

    def learn(train: TrainState, traj: Transition, last_obs: Array, last_first: Array,
              last_carry: Array, init_carry: Array, key: Array
              ) -> tuple[TrainState, dict[str, Array]]:
        key = jax.random.fold_in(key, jax.lax.axis_index(AXIS))  # each device its own shuffles
        _, _, last_value = policy.apply(train.params, last_carry, last_obs[None], last_first[None])
        adv, target = gae(traj.value, traj.reward, traj.done, last_value[0], cfg.gamma,
                          cfg.gae_lambda)
        t, n = traj.reward.shape

        def epoch(carry: tuple[TrainState, Array], _: None
                  ) -> tuple[tuple[TrainState, Array], dict[str, Array]]:
            train, key = carry
            key, sub = jax.random.split(key)
            if cfg.network == "gru":
                # Minibatches of whole environments, so each sequence replays from its start.
                perm = jax.random.permutation(sub, n)

                def by_env(x: Array, axis: int) -> Array:
                    x = jnp.take(x, perm, axis=axis)
                    x = x.reshape(*x.shape[:axis], m, n // m, *x.shape[axis + 1:])
                    return jnp.moveaxis(x, axis, 0)

                mbs = (by_env(init_carry, 0),
                       *jax.tree_util.tree_map(lambda x: by_env(x, 1), (traj, adv, target)))
            else:
                # Independent samples: shuffle all t * n of them; each minibatch is a T=1 batch.
                perm = jax.random.permutation(sub, t * n)

                def by_sample(x: Array) -> Array:
                    x = jnp.take(x.reshape(t * n, *x.shape[2:]), perm, axis=0)
                    return x.reshape(m, 1, t * n // m, *x.shape[1:])

                carries = jnp.zeros((m, t * n // m, policy.carry_size), jnp.float32)
                mbs = (carries, *jax.tree_util.tree_map(by_sample, (traj, adv, target)))
            train, stats = jax.lax.scan(minibatch_step, train, mbs)
            return (train, key), stats

        (train, _), stats = jax.lax.scan(epoch, (train, key), None, length=cfg.update_epochs)
        return train, jax.tree_util.tree_map(jnp.mean, stats)

    return learn


def episode_stats(done: Array, ep_return: Array, ep_length: Array) -> dict[str, Array]:
    """Sums over every device of the returns and lengths of the episodes that ended."""
    return jax.lax.psum({
        "episodes": jnp.sum(done.astype(jnp.int32)),
        "return_sum": jnp.sum(jnp.where(done, ep_return, 0.0)),
        "length_sum": jnp.sum(jnp.where(done, ep_length, 0)),
    }, AXIS)


# ============================================================================ 4. JAX rollout
class Runner(NamedTuple):
    """Everything a JAX-backend run carries from one update to the next."""

    train: TrainState
    env_state: Any
    obs: Array
    first: Array
    carry: Array
    ep_return: Array  # running sums of the unfinished episodes
    ep_length: Array
    key: Array


REP, BAT, TIME_BAT = PartitionSpec(), PartitionSpec(AXIS), PartitionSpec(None, AXIS)
RUNNER_SPECS = Runner(REP, BAT, BAT, BAT, BAT, BAT, BAT, REP)
# learn(train, traj, last_obs, last_first, last_carry, init_carry, key) -> (train, stats)
LEARN_SPECS = (REP, TIME_BAT, BAT, BAT, BAT, BAT, REP)
# Initialisation runs once per run, so it is compiled with XLA's backend optimisations off:
# several times faster to compile on CPU (orthogonal inits are QR decompositions), same values
# every time it runs.
INIT_COMPILER_OPTIONS = {"xla_backend_optimization_level": 0}


class Program:
    """The compiled pieces of one (environment, config, devices), built once and cached
    (:func:`program`) so repeated runs, resumptions and tests reuse compiled code.

    Both backends call the SAME compiled update (:meth:`learn`, one executable per Program);
    they differ only in how the trajectory it consumes is collected (:meth:`rollout` here,
    ``host_rollout.py`` on the host).
    """

    def __init__(self, name: str, env_kwargs: dict[str, Any], cfg: PPOConfig,
                 devices: Sequence[jax.Device]) -> None:
        self.name, self.cfg = name, cfg
        self.env_kwargs = dict(env_kwargs)
        self.mesh = Mesh(np.array(devices), (AXIS,))
        # The spaces from the translation (the reference's are checked equal in make_backend).
        translation = envport.make(name, **env_kwargs)
        p = translation.default_params()
        self.policy = make_policy(cfg, translation.observation_space(p),
                                  translation.action_space(p))
        self.tx = make_optimizer(cfg)
        self._compiled: dict[str, Any] = {}

    @functools.cached_property
    def backend(self) -> Backend:
        """The JAX backend (AutoReset-wrapped translation), for :meth:`rollout`."""
        return make_backend(self.name, "jax", self.cfg.num_envs, 0, **self.env_kwargs)

    def sharding(self, spec: PartitionSpec) -> NamedSharding:
        return NamedSharding(self.mesh, spec)

    def _shard_jit(self, fn: Callable[..., Any], in_specs: Any, out_specs: Any) -> Any:
        # check_vma=False: see the module docstring (explicit pmean of gradients).
        return jax.jit(jax.shard_map(fn, mesh=self.mesh, in_specs=in_specs,
                                     out_specs=out_specs, check_vma=False))

    def _cached(self, name: str, build: Callable[[], Any]) -> Any:
        if name not in self._compiled:
            self._compiled[name] = build()
        return self._compiled[name]

    # ------------------------------------------------------------------ initialisation
    def _init_train(self, seed: Array) -> tuple[TrainState, Array]:
        key, k_net = jax.random.split(jax.random.key(seed))
        params = self.policy.init(k_net)
        return TrainState(params, self.tx.init(params)), key

    def init_train(self, seed: int) -> tuple[TrainState, Array]:
        """Parameters, optimizer state and the run's key after them (the same on both
        backends for the same seed), replicated over the devices."""
        fn = self._cached("init_train", lambda: jax.jit(
            self._init_train, out_shardings=self.sharding(REP)).lower(jnp.int32(0)).compile(
                INIT_COMPILER_OPTIONS))
        return fn(jnp.int32(seed))

    def _init_runner(self, seed: Array) -> Runner:
        env = self.backend.env
        assert env is not None
        n = self.cfg.num_envs
        train, key = self._init_train(seed)
        key, k_env = jax.random.split(key)
        params = env.default_params()
        if self.backend.seeded_reset is not None:  # the reference batch's seeds (backends.py)
            env_state, obs = self.backend.seeded_reset(seed)
        else:
            env_state, obs = jax.vmap(lambda k: env.reset(k, params))(jax.random.split(k_env, n))
        return Runner(train, env_state, obs, jnp.ones(n, jnp.bool_),
                      self.policy.initial_carry(n), jnp.zeros(n, jnp.float32),
                      jnp.zeros(n, jnp.int32), key)

    def init_runner(self, seed: int) -> Runner:
        def build() -> Any:
            shardings = jax.tree_util.tree_map(self.sharding, RUNNER_SPECS,
                                               is_leaf=lambda x: isinstance(x, PartitionSpec))
            return jax.jit(self._init_runner, out_shardings=shardings).lower(
                jnp.int32(0)).compile(INIT_COMPILER_OPTIONS)
        return self._cached("init_runner", build)(jnp.int32(seed))

    # ------------------------------------------------------------------ the shared update
    def example_traj(self) -> Transition:
        """Zeros shaped like a trajectory (T, N), sharded as :meth:`learn` takes it."""
        t, n = self.cfg.num_steps, self.cfg.num_envs
        space = self.policy.action_space
        action = (np.zeros((t, n, *space.shape), np.float32) if isinstance(space, Box)
                  else np.zeros((t, n), np.int32))
        f32, flag = np.zeros((t, n), np.float32), np.zeros((t, n), np.bool_)
        obs = np.zeros((t, n, *self.policy.obs_shape), np.float32)
        return Transition(*(jax.device_put(x, self.sharding(TIME_BAT))
                            for x in (obs, flag, action, f32, f32, f32, flag)))

    def learn(self, train: TrainState) -> Any:
        """The compiled PPO update (:func:`make_learn` over the devices), for both backends."""
        def build() -> Any:
            n = self.cfg.num_envs
            traj = self.example_traj()
            carry = jax.device_put(self.policy.initial_carry(n), self.sharding(BAT))
            args = (train, traj, traj.obs[0], traj.first[0], carry, carry,
                    jax.device_put(jax.random.key(0), self.sharding(REP)))
            fn = self._shard_jit(make_learn(self.policy, self.cfg, self.tx), LEARN_SPECS,
                                 (REP, REP))
            return fn.lower(*args).compile()
        return self._cached("learn", build)

    # ------------------------------------------------------------------ JAX backend
    def _rollout_body(self, params: Params, env_state: Any, obs: Array, first: Array,
                      carry: Array, ep_return: Array, ep_length: Array, key: Array
                      ) -> tuple[Any, ...]:
        """``num_steps`` steps of this device's environments (inside shard_map)."""
        env, policy = self.backend.env, self.policy
        assert env is not None
        env_params = env.default_params()
        vstep = jax.vmap(lambda k, s, a: env.step(k, s, a, env_params))
        n_local = obs.shape[0]
        key, k_roll, k_learn = jax.random.split(key, 3)
        k_roll = jax.random.fold_in(k_roll, jax.lax.axis_index(AXIS))

        def env_step(c: tuple, _: None) -> tuple[tuple, tuple]:
            env_state, obs, first, h, ep_ret, ep_len, key = c
            key, k_act, k_env = jax.random.split(key, 3)
            h, dist, value = policy.apply(params, h, obs[None], first[None])
            raw = dist.sample(k_act)
            logp = dist.log_prob(raw)[0]
            raw = raw[0]
            res = vstep(jax.random.split(k_env, n_local), env_state, policy.env_action(raw))
            done = res.terminated | res.truncated
            ep_ret, ep_len = ep_ret + res.reward, ep_len + 1
            tr = Transition(obs.astype(jnp.float32), first, raw, logp, value[0],
                            res.reward.astype(jnp.float32), done)
            finished = (done, ep_ret, ep_len)
            ep_ret, ep_len = jnp.where(done, 0.0, ep_ret), jnp.where(done, 0, ep_len)
            return (res.state, res.obs, done, h, ep_ret, ep_len, key), (tr, finished)

        c = (env_state, obs, first, carry, ep_return, ep_length, k_roll)
        c, (traj, finished) = jax.lax.scan(env_step, c, None, length=self.cfg.num_steps)
        env_state, obs, first, carry, ep_return, ep_length, _ = c
        return (env_state, obs, first, carry, ep_return, ep_length, key, k_learn, traj,
                episode_stats(*finished))

    def rollout(self, runner: Runner) -> Any:
        """The compiled JAX rollout: ``(params, env_state, obs, first, carry, ep_return,
        ep_length, key) -> (those after num_steps steps, with the next key), k_learn, traj,
        episode stats``."""
        def build() -> Any:
            r = RUNNER_SPECS
            fn = self._shard_jit(self._rollout_body, (r.train, *r[1:]),
                                 (*r[1:], REP, TIME_BAT, REP))
            return fn.lower(runner.train.params, *runner[1:]).compile()
        return self._cached("rollout", build)

    def jax_update(self, runner: Runner) -> tuple[Runner, dict[str, Array]]:
        """One PPO update on the JAX backend: rollout, then the shared update. Both calls are
        dispatched asynchronously; nothing waits for them here."""
        out = self.rollout(runner)(runner.train.params, *runner[1:])
        env_state, obs, first, carry, ep_return, ep_length, key, k_learn, traj, ep_stats = out
        train, stats = self.learn(runner.train)(runner.train, traj, obs, first, carry,
                                                 runner.carry, k_learn)
        runner = Runner(train, env_state, obs, first, carry, ep_return, ep_length, key)
        return runner, {**stats, **ep_stats}

    # ------------------------------------------------------------------ reference backend
    def host_keys(self, key: Array) -> tuple[Array, Array, Array]:
        """The keys of one reference-backend iteration, split exactly as :meth:`_rollout_body`
        splits them: ``(next run key, rollout key per device (a key array, one per device,
        split over the devices), k_learn)``. With :meth:`host_act` drawing actions from the
        same per-step splits, both backends sample with the same keys."""
        def keys(key: Array) -> tuple[Array, Array, Array]:
            key, k_roll, k_learn = jax.random.split(key, 3)
            return key, jax.random.fold_in(k_roll, jax.lax.axis_index(AXIS))[None], k_learn

        return self._cached("host_keys", lambda: self._shard_jit(
            keys, (REP,), (REP, BAT, REP)).lower(key).compile())(key)

    def host_act(self, train: TrainState, carry: Array, obs: Array, first: Array,
                 k_roll: Array) -> Any:
        """Compiled ``(params, carry, obs, first, k_roll) -> (carry, raw action, env action,
        logp, value, k_roll)`` for a host-stepped batch, split over the devices like the
        rollout; ``k_roll`` is :meth:`host_keys`' per-device key, advanced as the rollout
        advances its own (``k_env`` is split off and unused: the host batch draws its own)."""
        policy = self.policy

        def act(params: Params, carry: Array, obs: Array, first: Array, k_roll: Array
                ) -> tuple[Array, ...]:
            k, k_act, _k_env = jax.random.split(k_roll[0], 3)
            carry, dist, value = policy.apply(params, carry, obs[None], first[None])
            raw = dist.sample(k_act)
            logp = dist.log_prob(raw)[0]
            return carry, raw[0], policy.env_action(raw[0]), logp, value[0], k[None]

        return self._cached("act", lambda: self._shard_jit(
            act, (REP, BAT, BAT, BAT, BAT), (BAT, BAT, BAT, BAT, BAT, BAT)).lower(
                train.params, carry, obs, first, k_roll).compile())


@functools.lru_cache(maxsize=16)
def _program(name: str, env_items: tuple[tuple[str, Any], ...], cfg: PPOConfig,
             devices: tuple[jax.Device, ...]) -> Program:
    return Program(name, dict(env_items), cfg, devices)


def program(name: str, env_kwargs: dict[str, Any], cfg: PPOConfig) -> Program:
    """The cached :class:`Program` (shared by both backends); the seed is not part of the
    compiled code."""
    return _program(name, tuple(sorted(env_kwargs.items())), dataclasses.replace(cfg, seed=0),
                    tuple(jax.devices()))


def _host_tree(tree: Any) -> list[np.ndarray]:
    """The leaves of a device pytree as NumPy arrays (PRNG keys as their raw key data)."""
    leaves = jax.tree_util.tree_leaves(tree)
    return [np.asarray(jax.random.key_data(x) if _is_key(x) else x) for x in leaves]


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _restore_tree(template: Any, leaves: list[np.ndarray]) -> Any:
    """``leaves`` (from :func:`_host_tree`) put back in ``template``'s structure and shardings."""
    t_leaves, treedef = jax.tree_util.tree_flatten(template)
    if len(t_leaves) != len(leaves):
        raise ValueError(f"checkpoint holds {len(leaves)} arrays, this run has {len(t_leaves)}: "
                         "it was saved by a different network or environment")
    out = []
    for t, v in zip(t_leaves, leaves, strict=True):
        want = jax.eval_shape(jax.random.key_data, t) if _is_key(t) else t
        if tuple(v.shape) != tuple(want.shape) or v.dtype != want.dtype:
            raise ValueError(f"checkpoint array of shape {v.shape} {v.dtype} where this run has "
                             f"{want.shape} {want.dtype}: saved by a different configuration")
        x = jax.random.wrap_key_data(v) if _is_key(t) else v
        # A template from jax.eval_shape has no sharding: the default device then.
        out.append(jax.device_put(x, getattr(t, "sharding", None)))
    return jax.tree_util.tree_unflatten(treedef, out)


class JaxTrainer:
    """The JAX backend: a jitted rollout and the shared compiled update per PPO update."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog

    def init(self, seed: int) -> Runner:
        return self.prog.init_runner(seed)

    def compile(self, state: Runner) -> None:
        self.prog.rollout(state)
        self.prog.learn(state.train)

    def run(self, state: Runner, n_updates: int) -> tuple[Runner, list[dict[str, float]]]:
        stats = []
        for _ in range(n_updates):  # dispatched asynchronously; one wait for the chunk
            state, s = self.prog.jax_update(state)
            stats.append(s)
        return state, [{k: float(v) for k, v in s.items()} for s in jax.device_get(stats)]

    def params(self, state: Runner) -> Params:
        return jax.device_get(state.train.params)

    def save(self, state: Runner) -> dict[str, Any]:
        return {"device": _host_tree(state)}

    def load(self, seed: int, saved: dict[str, Any]) -> Runner:
        return _restore_tree(self.init(seed), saved["device"])


# ============================================================================ 5. the run
CONFIG_FILE, LOG_FILE, CHECKPOINT_FILE, PLOT_FILE, RESULT_FILE = (
    "config.json", "log.csv", "checkpoint.pkl", "learning_curve.png", "result.json")
LOG_FIELDS = ("update", "env_steps", "wall_time", "sps", "mean_return", "mean_length", "episodes",
              "learning_rate", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac")
RUN_FORMAT = "envport-ppo-run/1"
# Chunks of about this many env steps between progress updates, log lines and checkpoints.
CHUNK_ENV_STEPS = 2**16


class TrainingDiverged(ValueError):
    """An update's loss was not finite: the environment returned a NaN/inf observation or
    reward, or the update blew up. Raised at the end of the chunk that contains it; the run's
    checkpoint stays at the last chunk whose losses were all finite (resumable from there). A
    ValueError, so the CLI reports it in one line like other bad runs."""


@dataclasses.dataclass
class TrainResult:
    run_dir: Path
    env: str
    backend: str
    config: PPOConfig
    env_kwargs: dict[str, Any]
    params: Params  # host (NumPy) pytree of the final network parameters
    updates: int
    env_steps: int
    wall_time: float  # seconds spent training, compilation excluded, all sessions together
    compile_time: float  # seconds compiling, this session
    sps: float  # env steps per second over the training time
    final_mean_return: float  # see final_return()
    interrupted: bool  # stopped by Ctrl-C; resume(run_dir) continues
    log_path: Path
    checkpoint_path: Path
    plot_path: Path | None


def run_config(name: str, backend: str, cfg: PPOConfig, env_kwargs: dict[str, Any]
               ) -> dict[str, Any]:
    """What config.json records: enough to rebuild the run and to compare runs."""
    import flax
    return {
        "format": RUN_FORMAT, "env": name, "backend": backend, "env_kwargs": dict(env_kwargs),
        "ppo": cfg.to_dict(), "devices": len(jax.devices()),
        "versions": {"jax": jax.__version__, "flax": flax.__version__,
                     "optax": optax.__version__, "numpy": np.__version__},
    }


def load_run_config(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"{run_dir} is not a training run: it has no {CONFIG_FILE}")
    config = json.loads(path.read_text())
    if config.get("format") != RUN_FORMAT:
        raise ValueError(f"{path} is not an envport PPO run config (format "
                         f"{config.get('format')!r}, expected {RUN_FORMAT!r})")
    return config


def hyperparameter_diff(a: dict[str, Any], b: dict[str, Any],
                        ignore: Sequence[str] = ()) -> list[str]:
    """Differences between two run configs in what defines the experiment: the environment, its
    options and every PPO hyperparameter (minus ``ignore``, e.g. "seed")."""
    diffs = []
    for key in ("env", "env_kwargs"):
        if a[key] != b[key]:
            diffs.append(f"{key}: {a[key]!r} vs {b[key]!r}")
    for key in sorted(set(a["ppo"]) | set(b["ppo"])):
        if key not in ignore and a["ppo"].get(key) != b["ppo"].get(key):
            diffs.append(f"ppo.{key}: {a['ppo'].get(key)!r} vs {b['ppo'].get(key)!r}")
    return diffs


def assert_matched(*run_dirs: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Refuse (ValueError) to compare runs unless they share the environment, its options and
    every hyperparameter; only the seed and the backend may differ. Returns their configs.

    Matched hyperparameters are enforced, not assumed: a cross-backend comparison then differs
    in the environment implementation alone.
    """
    configs = [load_run_config(d) for d in run_dirs]
    for d, c in zip(run_dirs[1:], configs[1:], strict=True):
        diffs = hyperparameter_diff(configs[0], c, ignore=("seed",))
        if diffs:
            raise ValueError(f"runs {run_dirs[0]} and {d} cannot be compared: their "
                             "hyperparameters differ (matched hyperparameters are enforced): "
                             + "; ".join(diffs))
    return configs


def read_log(run_dir: str | os.PathLike[str]) -> list[dict[str, float]]:
    path = Path(run_dir) / LOG_FILE
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def final_return(rows: Sequence[dict[str, float]], fraction: float = 0.05) -> float:
    """Mean return of the episodes that ended in the last ``fraction`` of updates (at least
    one update; episode-weighted). NaN when none ended there."""
    if not rows:
        return math.nan
    tail = rows[-max(1, math.ceil(len(rows) * fraction)):]
    episodes = sum(r["episodes"] for r in tail)
    total = sum(r["mean_return"] * r["episodes"] for r in tail if r["episodes"] > 0)
    return total / episodes if episodes else math.nan


def plot_learning_curve(run_dir: str | os.PathLike[str]) -> Path | None:
    """``learning_curve.png`` in ``run_dir``: mean episodic return against env steps."""
    rows = [r for r in read_log(run_dir) if r["episodes"] > 0]
    if not rows:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    config = load_run_config(run_dir)
    steps = np.array([r["env_steps"] for r in rows])
    ret = np.array([r["mean_return"] for r in rows])
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, ret, ".", alpha=0.3, label="per update")
    window = max(1, len(rows) // 50)
    if window > 1:
        smooth = np.convolve(ret, np.ones(window) / window, mode="valid")
        ax.plot(steps[window - 1:], smooth, label=f"mean of {window} updates")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean episodic return")
    ax.set_title(f"PPO on {config['env']} ({config['backend']} backend, "
                 f"seed {config['ppo']['seed']})")
    ax.grid(alpha=0.3)
    ax.legend()
    path = Path(run_dir) / PLOT_FILE
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _save_checkpoint(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as f:
        pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)  # atomic: a crash never leaves half a checkpoint


def load_checkpoint(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(run_dir) / CHECKPOINT_FILE
    if not path.is_file():
        raise ValueError(f"{run_dir} has no checkpoint ({CHECKPOINT_FILE}) to resume from")
    with path.open("rb") as f:
        return pickle.load(f)


def _write_log(path: Path, rows: Sequence[dict[str, float]], append: bool) -> None:
    with path.open("a" if append else "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=LOG_FIELDS)
        if not append:
            writer.writeheader()
        for row in rows:
            writer.writerow({k: row[k] for k in LOG_FIELDS})


class _StopFlag:
    """Ctrl-C asks the loop to stop after the chunk in flight (so the checkpoint and the log
    agree); a second Ctrl-C interrupts at once."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\nCtrl-C: saving a checkpoint after this chunk (Ctrl-C again to abort)",
              flush=True)

    def __enter__(self) -> _StopFlag:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def _progress_bar(enabled: bool, total: int, description: str) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("steps  {task.fields[sps]:>9,.0f} SPS  return {task.fields[ret]:>8.2f}"),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        disable=not enabled, transient=False)


def _chunk_rows(stats: list[dict[str, float]], cfg: PPOConfig, first_update: int,
                wall_before: float, seconds: float) -> list[dict[str, float]]:
    rows = []
    sps = len(stats) * cfg.batch_size / max(seconds, 1e-9)
    for i, s in enumerate(stats):
        update = first_update + i + 1
        episodes = s["episodes"]
        rows.append({
            "update": update, "env_steps": update * cfg.batch_size,
            "wall_time": wall_before + seconds * (i + 1) / len(stats), "sps": sps,
            "mean_return": s["return_sum"] / episodes if episodes else math.nan,
            "mean_length": s["length_sum"] / episodes if episodes else math.nan,
            "episodes": episodes, "learning_rate": learning_rate(cfg, update - 1),
            **{k: s[k] for k in ("policy_loss", "value_loss", "entropy", "approx_kl",
                                 "clip_frac")},
        })
    return rows


def _resolve_config(name: str, backend: str, steps: int | None, seed: int | None,
                    overrides: dict[str, Any] | None, env_kwargs: dict[str, Any] | None,
                    saved: dict[str, Any] | None) -> tuple[PPOConfig, dict[str, Any]]:
    """The run's config: the saved one when resuming (anything given must agree with it), else
    the environment's defaults from ``configs.py``, with the overrides applied."""
    from envport.train.configs import get_config

    if saved is not None:
        base, base_env = PPOConfig.from_dict(saved["ppo"]), dict(saved["env_kwargs"])
    else:
        base, base_env = get_config(name)
    values = base.to_dict()
    for key, value in (overrides or {}).items():
        if key not in values:
            raise ValueError(f"unknown PPO hyperparameter {key!r} in config_overrides; known: "
                             f"{', '.join(sorted(values))}")
        values[key] = value
    if steps is not None:
        values["total_steps"] = int(steps)
    if seed is not None:
        values["seed"] = int(seed)
    cfg = PPOConfig.from_dict(values)
    kwargs = base_env if env_kwargs is None else dict(env_kwargs)
    if saved is not None:
        diffs = hyperparameter_diff(saved, run_config(name, backend, cfg, kwargs))
        if diffs:
            raise ValueError("cannot resume with different hyperparameters (matched "
                             "hyperparameters are enforced): " + "; ".join(diffs))
    return cfg, kwargs


def train(name: str, backend: str = "jax", steps: int | None = None, seed: int | None = None,
          out: str | os.PathLike[str] = "runs/x", config_overrides: dict[str, Any] | None = None,
          resume: bool = False, *, env_kwargs: dict[str, Any] | None = None,
          progress: bool = True, chunk_updates: int | None = None, overwrite: bool = False,
          on_chunk: Callable[[dict[str, float]], None] | None = None) -> TrainResult:
    """Train PPO on ``name`` with ``backend`` ("jax": the translation, rollout under jit;
    "reference": the real reference stepped on the host) and write the run to ``out``.

    ``steps`` (total env steps) and ``seed`` default to the environment's config
    (``envport.train.configs``), as do hyperparameters not in ``config_overrides`` and the
    environment options (``env_kwargs``). ``resume=True`` continues the run in ``out`` exactly;
    anything given must then agree with its config.json (ValueError otherwise). ``out`` holding
    a run is never overwritten unless ``overwrite=True``.

    Writes ``config.json``, ``log.csv`` (one row per update), ``checkpoint.pkl`` (after every
    chunk), ``learning_curve.png`` and ``result.json``. Ctrl-C stops after the chunk in flight,
    saves, and returns with ``interrupted=True``. ``on_chunk`` is called with the last log row
    after each chunk. ``chunk_updates`` (updates between log writes, checkpoints and progress
    refreshes; default about 65k env steps) never changes the results.
    """
    check_backend(backend)
    envport.spec(name)  # unknown environment: UnknownEnvironmentError naming the known ones
    run_dir = Path(out)
    has_run = (run_dir / CONFIG_FILE).is_file() or (run_dir / CHECKPOINT_FILE).is_file()
    saved = None
    if resume:
        saved = load_run_config(run_dir)
        if saved["env"] != name:
            raise ValueError(f"{run_dir} holds a run of {saved['env']!r}, not {name!r}: a "
                             "checkpoint from another environment cannot be resumed")
        if saved["backend"] != backend:
            raise ValueError(f"{run_dir} holds a {saved['backend']!r}-backend run, not "
                             f"{backend!r}")
        if not (run_dir / CHECKPOINT_FILE).is_file():
            raise ValueError(f"{run_dir} has no checkpoint ({CHECKPOINT_FILE}) to resume from")
    elif has_run and not overwrite:
        raise ValueError(f"{run_dir} already holds a run; pass resume=True to continue it, "
                         "overwrite=True to replace it, or choose another `out`")
    cfg, env_kwargs = _resolve_config(name, backend, steps, seed, config_overrides, env_kwargs,
                                      saved)
    devices = len(jax.devices())
    cfg.check(devices)
    if saved is not None and saved.get("devices") != devices:
        import warnings
        warnings.warn(f"{run_dir} was trained on {saved.get('devices')} device(s), resumed on "
                      f"{devices}: it continues correctly but not bit for bit", stacklevel=2)

    prog = program(name, env_kwargs, cfg)
    if backend == "jax":
        trainer: Any = JaxTrainer(prog)
    else:
        from envport.train.host_rollout import HostTrainer
        trainer = HostTrainer(prog)

    run_dir.mkdir(parents=True, exist_ok=True)
    log_path, ckpt_path = run_dir / LOG_FILE, run_dir / CHECKPOINT_FILE
    if saved is not None:
        ckpt = load_checkpoint(run_dir)
        if ckpt.get("env") != name:
            raise ValueError(f"{ckpt_path} was saved by a {ckpt.get('env')!r} run, not {name!r}")
        state = trainer.load(cfg.seed, ckpt["state"])
        done_updates, wall = int(ckpt["update"]), float(ckpt["wall_time"])
        # Rows past the checkpoint (a crash between log and checkpoint) would repeat: drop them.
        _write_log(log_path, [r for r in read_log(run_dir) if r["update"] <= done_updates],
                   append=False)
    else:
        for stale in (CHECKPOINT_FILE, RESULT_FILE, PLOT_FILE):  # from an overwritten run
            (run_dir / stale).unlink(missing_ok=True)
        (run_dir / CONFIG_FILE).write_text(
            json.dumps(run_config(name, backend, cfg, env_kwargs), indent=2) + "\n")
        state = trainer.init(cfg.seed)
        done_updates, wall = 0, 0.0
        _write_log(log_path, [], append=False)

    def checkpoint() -> None:
        _save_checkpoint(ckpt_path, {
            "format": RUN_FORMAT, "env": name, "backend": backend, "update": done_updates,
            "env_steps": done_updates * cfg.batch_size, "wall_time": wall,
            "state": trainer.save(state)})

    if saved is None:
        checkpoint()  # resumable from the start, even if stopped while compiling

    total = cfg.num_updates
    chunk = chunk_updates or max(1, round(CHUNK_ENV_STEPS / cfg.batch_size))
    interrupted = False
    rows_so_far = read_log(run_dir)
    with _StopFlag() as stop, _progress_bar(progress, total * cfg.batch_size,
                                            f"{name}/{backend}") as bar:
        t0 = time.perf_counter()
        if done_updates < total:
            trainer.compile(state)
        compile_time = time.perf_counter() - t0
        task = bar.add_task(f"{name}/{backend}", total=total * cfg.batch_size,
                            completed=done_updates * cfg.batch_size, sps=0.0,
                            ret=final_return(rows_so_far))
        while done_updates < total:
            if stop.requested:
                interrupted = True
                break
            n = min(chunk, total - done_updates)
            t = time.perf_counter()
            new_state, stats = trainer.run(state, n)
            seconds = time.perf_counter() - t
            rows = _chunk_rows(stats, cfg, done_updates, wall, seconds)
            _write_log(log_path, rows, append=True)
            bad = [r["update"] for r in rows
                   if not (math.isfinite(r["policy_loss"]) and math.isfinite(r["value_loss"]))]
            if bad:  # carrying NaN parameters on would waste the rest of the run
                raise TrainingDiverged(
                    f"{name}/{backend} seed {cfg.seed}: the loss of update {int(bad[0])} is not "
                    f"finite (a NaN or inf from the environment, or an exploding update); "
                    f"{run_dir} keeps the checkpoint of update {done_updates} (log rows after "
                    "it are dropped on resume)")
            state, done_updates, wall = new_state, done_updates + n, wall + seconds
            checkpoint()
            rows_so_far += rows
            bar.update(task, completed=done_updates * cfg.batch_size, sps=rows[-1]["sps"],
                       ret=final_return(rows_so_far, 0.02))
            if on_chunk is not None:
                on_chunk(rows[-1])
        if stop.requested and done_updates < total:
            interrupted = True

    plot_path = plot_learning_curve(run_dir)
    result = TrainResult(
        run_dir=run_dir, env=name, backend=backend, config=cfg, env_kwargs=env_kwargs,
        params=trainer.params(state), updates=done_updates,
        env_steps=done_updates * cfg.batch_size, wall_time=wall, compile_time=compile_time,
        sps=done_updates * cfg.batch_size / wall if wall > 0 else math.nan,
        final_mean_return=final_return(rows_so_far), interrupted=interrupted,
        log_path=log_path, checkpoint_path=ckpt_path, plot_path=plot_path)
    summary = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)
               if f.name not in ("params", "config")}
    summary["config"] = cfg.to_dict()
    (run_dir / RESULT_FILE).write_text(json.dumps(summary, indent=2, default=str) + "\n")
    if interrupted:
        print(f"Stopped after {done_updates}/{total} updates; checkpoint and log saved in "
              f"{run_dir}. Continue with envport.train.resume({str(run_dir)!r}).", flush=True)
    return result


def resume(run_dir: str | os.PathLike[str], *, progress: bool = True,
           chunk_updates: int | None = None,
           on_chunk: Callable[[dict[str, float]], None] | None = None) -> TrainResult:
    """Continue the run in ``run_dir`` exactly where its checkpoint left it (same results as
    an uninterrupted run with the same seed, on the same number of devices)."""
    config = load_run_config(run_dir)
    return train(config["env"], config["backend"], out=run_dir, resume=True, progress=progress,
                 chunk_updates=chunk_updates, on_chunk=on_chunk)


def load_params(run_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], Params]:
    """``(run config, final network parameters)`` of a run, from its checkpoint."""
    config = load_run_config(run_dir)
    ckpt = load_checkpoint(run_dir)
    cfg = PPOConfig.from_dict(config["ppo"])
    prog = program(config["env"], config["env_kwargs"], cfg)
    # Shapes only (no compilation): the parameters come from the checkpoint.
    template = jax.eval_shape(prog._init_train, jnp.int32(0))[0].params
    n = len(jax.tree_util.tree_leaves(template))
    leaves = ckpt["state"]["device"][:n]  # TrainState.params is the first field of both states
    return config, jax.device_get(_restore_tree(template, leaves))
