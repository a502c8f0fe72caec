"""PPO compiled for one (environment, config, devices): the pieces both backends run.

A :class:`Program` compiles, once per process (:func:`program` caches it), the initialisation,
the JAX backend's rollout (``ppo.make_rollout``), the PPO update both backends share
(``ppo.make_learn``) and the reference backend's per-step policy call, each over every device
of ``jax.devices()`` (a 1-D ``Mesh`` with axis ``"batch"``, ``shard_map``). ``check_vma`` is off
on purpose: with it on, JAX already sums the gradient of a replicated parameter over devices
(the transpose of its implicit broadcast) and the explicit ``pmean`` in ``ppo.make_learn``
would double it. :class:`JaxTrainer` runs the JAX backend's updates; ``host_rollout.py`` has
the reference backend's.

Determinism: on one machine and software stack, a run is a pure function of (config, seed,
number of devices); :func:`host_tree` / :func:`restore_tree` move every piece of state
(parameters, optimizer, RNG keys, environment states, observations, GRU carries, episode
accumulators) to NumPy and back, so a checkpoint resumes bit for bit.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import envport
from envport.core.spaces import Box, Discrete
from envport.train.backends import (
    Backend,
    action_mask_of,
    make_backend,
    params_update_of,
    translation,
    translation_spaces,
)
from envport.train.config import PPOConfig
from envport.train.ppo import (
    AXIS,
    Array,
    Params,
    Runner,
    TrainState,
    Transition,
    make_learn,
    make_optimizer,
    make_policy,
    make_rollout,
)


class PhaseClock:
    """Where the time of a training iteration goes. The trainers call ``lap(phase, value)`` at
    each phase boundary: it waits for ``value`` (device arrays) and adds the time since the
    previous lap to ``phase``. The default (:data:`NO_CLOCK`) neither waits nor times, so
    training itself is unchanged; ``envport bench --ppo`` passes a real one to the trainers
    ``envport train`` runs."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def start(self) -> None:
        self._last = time.perf_counter()

    def lap(self, phase: str, value: Any = None) -> Any:
        jax.block_until_ready(value)
        now = time.perf_counter()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self._last
        self._last = now
        return value


class _NoClock(PhaseClock):
    def lap(self, phase: str, value: Any = None) -> Any:
        return value


NO_CLOCK: PhaseClock = _NoClock()

REP, BAT, TIME_BAT = PartitionSpec(), PartitionSpec(AXIS), PartitionSpec(None, AXIS)
# A Runner of partition specs, one per field.
RUNNER_SPECS: Any = Runner(*cast(Any, (REP, BAT, BAT, BAT, BAT, BAT, BAT, REP, REP)))
# learn(train, traj, last_obs, last_first, last_carry, init_carry, key) -> (train, stats)
LEARN_SPECS = (REP, TIME_BAT, BAT, BAT, BAT, BAT, REP)
# Initialisation runs once per run, so it is compiled with XLA's backend optimisations off:
# several times faster to compile on CPU (orthogonal inits are QR decompositions), same values
# every time it runs.
INIT_COMPILER_OPTIONS: dict[str, Any] = {"xla_backend_optimization_level": 0}


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
        obs_space, action_space = translation_spaces(name, **env_kwargs)
        self.policy = make_policy(cfg, obs_space, action_space)
        # The dtype of the observations the update's last_obs comes in (the trajectory's own
        # are float32): an int16 board (tcg-pocket) is not cast before the call.
        self.obs_dtype = np.dtype(getattr(obs_space, "dtype", np.float32))
        # Masked PPO where the translation has an ``action_mask`` hook (two-player games
        # against an opponent): the trajectory then carries the masks (Transition.mask).
        self.masked = (not envport.spec(name).host
                       and action_mask_of(translation(name, **env_kwargs)) is not None)
        self.tx = make_optimizer(cfg)
        self._compiled: dict[str, Any] = {}

    @functools.cached_property
    def backend(self) -> Backend:
        """The JAX backend (AutoReset-wrapped translation), for :meth:`rollout`; a self-play
        opponent is built with this program's policy (``backends.translation``)."""
        return make_backend(self.name, "jax", self.cfg.num_envs, 0, policy=self.policy,
                            **self.env_kwargs)

    @functools.cached_property
    def updates_params(self) -> bool:
        """Whether the environment's params follow training (a self-play pool): the Runner
        then carries them (``Runner.env_params``) and the rollout takes and returns them."""
        return params_update_of(self.backend.env) is not None

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
                      jnp.zeros(n, jnp.int32), key, params if self.updates_params else ())

    def init_runner(self, seed: int) -> Runner:
        def build() -> Any:
            # The backend is built here, not first inside the trace below: an environment
            # that makes arrays when built would otherwise hold (and leak) that trace's tracers.
            _ = self.backend
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
        fields: list[np.ndarray] = [obs, flag, action, f32, f32, f32, flag]
        if self.masked:
            assert isinstance(space, Discrete)
            fields.append(np.zeros((t, n, space.n), np.bool_))
        return Transition(*(jax.device_put(x, self.sharding(TIME_BAT)) for x in fields))

    def learn(self, train: TrainState) -> Any:
        """The compiled PPO update (:func:`make_learn` over the devices), for both backends."""
        def build() -> Any:
            n = self.cfg.num_envs
            traj = self.example_traj()
            carry = jax.device_put(self.policy.initial_carry(n), self.sharding(BAT))
            key = jax.random.key(0)
            # The key by shape only: device_put of a key to a mesh that spans other processes'
            # devices (jax.distributed) is refused; lowering needs no value.
            last_obs = jax.device_put(np.zeros(traj.obs.shape[1:], self.obs_dtype),
                                      self.sharding(BAT))
            args = (train, traj, last_obs, traj.first[0], carry, carry,
                    jax.ShapeDtypeStruct(key.shape, key.dtype, sharding=self.sharding(REP)))
            fn = self._shard_jit(make_learn(self.policy, self.cfg, self.tx), LEARN_SPECS,
                                 (REP, REP))
            return fn.lower(*args).compile()
        return self._cached("learn", build)

    # ------------------------------------------------------------------ JAX backend
    def rollout(self, runner: Runner) -> Any:
        """The compiled JAX rollout: ``(params, env_state, obs, first, carry, ep_return,
        ep_length, key) -> (those after num_steps steps, with the next key), k_learn, traj,
        episode stats``."""
        def build() -> Any:
            r = RUNNER_SPECS
            env = self.backend.env
            assert env is not None
            body = make_rollout(env, self.policy, self.cfg.num_steps, action_mask_of(env),
                                params_update_of(env))
            extra = (REP,) if self.updates_params else ()
            fn = self._shard_jit(body, (r.train, *r[1:8], *extra),
                                 (*r[1:8], REP, TIME_BAT, REP, *extra))
            return fn.lower(*self.rollout_args(runner)).compile()
        return self._cached("rollout", build)

    def rollout_args(self, runner: Runner) -> tuple[Any, ...]:
        """What :meth:`rollout`'s compiled call takes from ``runner`` (its env params only
        where they follow training)."""
        extra = (runner.env_params,) if self.updates_params else ()
        return (runner.train.params, *runner[1:8], *extra)

    def jax_update(self, runner: Runner, clock: PhaseClock | None = None
                   ) -> tuple[Runner, dict[str, Array]]:
        """One PPO update on the JAX backend: rollout, then the shared update. Both calls are
        dispatched asynchronously; nothing waits for them here unless a ``clock`` times the
        phases (``envport bench --ppo``)."""
        clock = clock or NO_CLOCK
        out = clock.lap("rollout", self.rollout(runner)(*self.rollout_args(runner)))
        env_state, obs, first, carry, ep_return, ep_length, key, k_learn, traj, ep_stats = out[:10]
        env_params = out[10] if self.updates_params else ()
        train, stats = clock.lap("update", self.learn(runner.train)(
            runner.train, traj, obs, first, carry, runner.carry, k_learn))
        runner = Runner(train, env_state, obs, first, carry, ep_return, ep_length, key,
                        env_params)
        return runner, {**stats, **ep_stats}

    # ------------------------------------------------------------------ reference backend
    def host_keys(self, key: Array) -> tuple[Array, Array, Array]:
        """The keys of one reference-backend iteration, split exactly as ``ppo.make_rollout``
        splits them: ``(next run key, rollout key per device (a key array, one per device,
        split over the devices), k_learn)``. With :meth:`host_act` drawing actions from the
        same per-step splits, both backends sample with the same keys."""
        def keys(key: Array) -> tuple[Array, Array, Array]:
            key, k_roll, k_learn = jax.random.split(key, 3)
            return key, jax.random.fold_in(k_roll, jax.lax.axis_index(AXIS))[None], k_learn

        return self._cached("host_keys", lambda: self._shard_jit(
            keys, (REP,), (REP, BAT, REP)).lower(key).compile())(key)

    def host_act(self, train: TrainState, carry: Array, obs: Array, first: Array,
                 k_roll: Array, mask: Array | None = None, env_keys: bool = False) -> Any:
        """Compiled ``(params, carry, obs, first, k_roll) -> (carry, raw action, env action,
        logp, value, k_roll)`` for a host-stepped batch, split over the devices like the
        rollout; ``k_roll`` is :meth:`host_keys`' per-device key, advanced as the rollout
        advances its own. With ``env_keys``, one more output: the keys the JAX rollout steps
        its environments with at this step (uint32 key data, one row per environment), for a
        host batch that draws from them (``backends.HostVectorEnv``'s ``takes_keys``); other
        batches draw their own and the compiled call splits none.
        With ``mask`` (masked PPO: the host batch's legal actions) the compiled call is
        ``(params, carry, obs, first, mask, k_roll)`` and samples among the legal actions as
        ``ppo.make_rollout`` does with its ``action_mask``."""
        policy = self.policy

        def act(params: Params, carry: Array, obs: Array, first: Array, *rest: Array
                ) -> tuple[Array, ...]:
            k_roll = rest[-1]
            k, k_act, k_env = jax.random.split(k_roll[0], 3)
            legal = [m[None] for m in rest[:-1]]  # the mask, when there is one
            carry, dist, value = policy.apply(params, carry, obs[None], first[None], *legal)
            raw = dist.sample(k_act)
            logp = dist.log_prob(raw)[0]
            out: tuple[Array, ...] = (carry, raw[0], policy.env_action(raw[0]), logp, value[0],
                                      k[None])
            if env_keys:
                out += (jax.random.key_data(jax.random.split(k_env, obs.shape[0])),)
            return out

        args = (train.params, carry, obs, first) + (() if mask is None else (mask,)) + (k_roll,)
        name = ("act" if mask is None else "act_masked") + ("_keys" if env_keys else "")
        return self._cached(name, lambda: self._shard_jit(
            act, (REP,) + (BAT,) * (len(args) - 1), (BAT,) * (7 if env_keys else 6)).lower(
                *args).compile())


@functools.lru_cache(maxsize=16)
def _program(name: str, env_items: tuple[tuple[str, Any], ...], cfg: PPOConfig,
             devices: tuple[jax.Device, ...]) -> Program:
    return Program(name, dict(env_items), cfg, devices)


def program(name: str, env_kwargs: dict[str, Any], cfg: PPOConfig) -> Program:
    """The cached :class:`Program` (shared by both backends); the seed is not part of the
    compiled code."""
    return _program(name, tuple(sorted(env_kwargs.items())), dataclasses.replace(cfg, seed=0),
                    tuple(jax.devices()))


def host_tree(tree: Any) -> list[np.ndarray]:
    """The leaves of a device pytree as NumPy arrays (PRNG keys as their raw key data).

    Across processes (``jax.distributed``), a leaf split over the batch axis has shards on
    other processes' devices that this one cannot read: it is gathered (a collective, so every
    process calls this at the same point, as :func:`envport.train.run.train` does), and every
    process gets the whole array. Replicated leaves (parameters, keys) are read locally."""
    from jax.experimental import multihost_utils

    out = []
    for x in jax.tree_util.tree_leaves(tree):
        x = jax.random.key_data(x) if _is_key(x) else x
        if isinstance(x, jax.Array) and not (x.is_fully_addressable or x.is_fully_replicated):
            x = multihost_utils.process_allgather(x, tiled=True)
        out.append(np.asarray(x))
    return out


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def restore_tree(template: Any, leaves: list[np.ndarray]) -> Any:
    """``leaves`` (from :func:`host_tree`) put back in ``template``'s structure and shardings."""
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
        x = jax.random.wrap_key_data(jnp.asarray(v)) if _is_key(t) else v
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

    def run(self, state: Runner, n_updates: int, clock: PhaseClock | None = None
            ) -> tuple[Runner, list[dict[str, float]]]:
        stats = []
        for _ in range(n_updates):  # dispatched asynchronously; one wait for the chunk
            state, s = self.prog.jax_update(state, clock)
            stats.append(s)
        host = (clock or NO_CLOCK).lap("transfer", jax.device_get(stats))
        return state, [{k: float(v) for k, v in s.items()} for s in host]

    def params(self, state: Runner) -> Params:
        return jax.device_get(state.train.params)

    def save(self, state: Runner) -> dict[str, Any]:
        return {"device": host_tree(state)}

    def load(self, seed: int, saved: dict[str, Any]) -> Runner:
        return restore_tree(self.init(seed), saved["device"])
