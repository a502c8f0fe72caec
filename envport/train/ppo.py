"""PPO, PureJaxRL-style: the algorithm in one file.

Sections, in reading order:

1. The actor-critic (flax linen): MLP or GRU torso, Categorical or diagonal Gaussian head.
2. The PPO update (:func:`make_learn`): GAE, then ``update_epochs`` passes of minibatch steps.
   ONE function, used by both backends.
3. The JAX backend's rollout (:func:`make_rollout`): ``lax.scan`` over the vmapped,
   AutoReset-wrapped translation.

The hyperparameters are :class:`~envport.train.config.PPOConfig` (defaults as PureJaxRL/CleanRL:
the PPO paper's lr 2.5e-4, gamma 0.99, GAE lambda 0.95, clip 0.2, with 4 epochs of 4
minibatches). Compiling these pieces for a set of devices is ``program.py``; stepping the real
reference on the host instead of :func:`make_rollout` is ``host_rollout.py``; a training run
(config.json, log, checkpoints, resume, Ctrl-C) is ``run.py``.

Devices: the functions here run per device inside ``shard_map`` over a 1-D mesh with axis
:data:`AXIS`. Each device steps its own environments, computes gradients on its share of every
minibatch, and the gradients are averaged with ``pmean`` (as ``pmap`` data parallelism does), so
the parameters stay identical everywhere.

Simplification kept from PureJaxRL: an episode cut by truncation (CartPole's 500-step limit) is
treated as terminal in GAE (no bootstrap from the final observation). Both backends do the same.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple, cast

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from envport.core.api import Environment
from envport.core.spaces import Box, Discrete, Space
from envport.train.config import PPOConfig

AXIS = "batch"  # the mesh axis the environment batch is split over
Array = jax.Array
Params = Any

# ============================================================================ 1. network
# The logit of an action the mask forbids: exp(MASKED_LOGIT - max) is exactly 0 in float32, so
# such an action is never sampled and adds nothing to the entropy or the gradient, and an
# all-illegal row (never fed to a mask-aware env) stays finite rather than NaN.
MASKED_LOGIT = -1e9


class Categorical(NamedTuple):
    logits: Array  # already masked (MASKED_LOGIT) where ``mask`` is given
    mask: Array | None = None  # bool, legal actions; None: every action is legal

    @classmethod
    def masked(cls, logits: Array, mask: Array | None) -> Categorical:
        if mask is None:
            return cls(logits)
        return cls(jnp.where(mask, logits, MASKED_LOGIT), mask)

    def sample(self, key: Array) -> Array:
        return jax.random.categorical(key, self.logits).astype(jnp.int32)

    def log_prob(self, action: Array) -> Array:
        logp = jax.nn.log_softmax(self.logits)
        return jnp.take_along_axis(logp, action[..., None].astype(jnp.int32), axis=-1)[..., 0]

    def entropy(self) -> Array:
        logp = jax.nn.log_softmax(self.logits)
        plogp = jnp.exp(logp) * logp
        if self.mask is not None:  # the entropy of the distribution over the legal actions
            plogp = jnp.where(self.mask, plogp, 0.0)
        return -jnp.sum(plogp, axis=-1)

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

    def apply(self, params: Params, carry: Array, obs: Array, first: Array,
              mask: Array | None = None) -> tuple[Array, Distribution, Array]:
        """``mask`` (bool ``[T, B, A]``, discrete actions only): the legal actions; the others
        get :data:`MASKED_LOGIT`. None (environments without masks): the plain head."""
        carry, head, value = cast(tuple[Array, Any, Array],
                                  self.net.apply(params, carry, obs, first))
        if self.net.continuous:
            if mask is not None:
                raise ValueError("action masks apply to discrete actions only")
            mean, log_std = head
            return carry, DiagGaussian(mean, log_std), value
        return carry, Categorical.masked(head, mask), value

    def act(self, params: Params, carry: Array, obs: Array, first: Array, mask: Array | None,
            key: Array, deterministic: bool = False) -> tuple[Array, Array]:
        """One step of a batch outside training: ``obs[B, ...]``, ``first[B]``, ``mask``
        (bool ``[B, A]``, the legal actions, or None) -> ``(carry, env actions[B])``, sampled
        with ``key`` (``deterministic``: the most likely), masked as masked PPO trains."""
        carry, dist, _ = self.apply(params, carry, obs[None], first[None],
                                    None if mask is None else mask[None])
        raw = dist.mode() if deterministic else dist.sample(key)
        return carry, self.env_action(raw[0])

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


# ============================================================================ 2. the PPO update
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
    # bool [..., A]: the legal actions at obs (environments with an ``action_mask``); None
    # otherwise, so an unmasked run's trajectory, and its compiled update, are unchanged.
    mask: Array | None = None


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
        _, dist, value = policy.apply(params, carry, tr.obs, tr.first, tr.mask)
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


# ============================================================================ 3. the JAX rollout
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
    # The environment's params where training changes them (``backends.params_update_of``: a
    # self-play pool), else () (no arrays: the defaults, constants of the compiled rollout).
    env_params: Any = ()


def make_rollout(env: Environment, policy: Policy, num_steps: int,
                 action_mask: Callable[[Any, Any], Array] | None = None,
                 update_params: Callable[[Any, Any], Any] | None = None
                 ) -> Callable[..., tuple[Any, ...]]:
    """``rollout(params, env_state, obs, first, carry, ep_return, ep_length, key)``: ``num_steps``
    steps of this device's environments (``env`` auto-resets), sampling actions from the
    policy; with ``action_mask`` (``(state, params) -> bool[A]`` of one unwrapped environment
    state, see ``backends.action_mask_of``) only among the legal actions. Returns
    ``(env_state, obs, first, carry, ep_return, ep_length, key, k_learn, traj,
    episode stats)``: what the next rollout starts from, the key of the update, the (T, n)
    trajectory and the statistics of the episodes that ended.

    With ``update_params`` (``backends.params_update_of``: a self-play pool) the rollout takes
    the environment's params as a last argument, first updates them with the policy's
    ``params`` (``update_params(env_params, params)``), steps with them, and returns them
    last; without it the params are the defaults, constants of the compiled rollout."""
    default_params = env.default_params()

    def rollout(params: Params, env_state: Any, obs: Array, first: Array, carry: Array,
                ep_return: Array, ep_length: Array, key: Array, *env_params: Any
                ) -> tuple[Any, ...]:
        p = default_params if update_params is None else update_params(env_params[0], params)
        vstep = jax.vmap(lambda k, s, a: env.step(k, s, a, p))
        n_local = obs.shape[0]
        key, k_roll, k_learn = jax.random.split(key, 3)
        k_roll = jax.random.fold_in(k_roll, jax.lax.axis_index(AXIS))

        def env_step(c: tuple, _: None) -> tuple[tuple, tuple]:
            env_state, obs, first, h, ep_ret, ep_len, key = c
            key, k_act, k_env = jax.random.split(key, 3)
            mask = (None if action_mask is None
                    else jax.vmap(lambda s: action_mask(s, p))(env_state))
            h, dist, value = policy.apply(params, h, obs[None], first[None],
                                          None if mask is None else mask[None])
            raw = dist.sample(k_act)
            logp = dist.log_prob(raw)[0]
            raw = raw[0]
            res = vstep(jax.random.split(k_env, n_local), env_state, policy.env_action(raw))
            done = res.terminated | res.truncated
            ep_ret, ep_len = ep_ret + res.reward, ep_len + 1
            tr = Transition(obs.astype(jnp.float32), first, raw, logp, value[0],
                            res.reward.astype(jnp.float32), done, mask)
            finished = (done, ep_ret, ep_len)
            ep_ret, ep_len = jnp.where(done, 0.0, ep_ret), jnp.where(done, 0, ep_len)
            return (res.state, res.obs, done, h, ep_ret, ep_len, key), (tr, finished)

        c = (env_state, obs, first, carry, ep_return, ep_length, k_roll)
        c, (traj, finished) = jax.lax.scan(env_step, c, None, length=num_steps)
        env_state, obs, first, carry, ep_return, ep_length, _ = c
        return (env_state, obs, first, carry, ep_return, ep_length, key, k_learn, traj,
                episode_stats(*finished), *(() if update_params is None else (p,)))

    return rollout
