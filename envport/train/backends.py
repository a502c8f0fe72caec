"""The two backends PPO trains on, behind one interface so a comparison isolates the environment.

- ``"jax"``: the verified JAX translation, wrapped in :class:`~envport.core.wrappers.AutoReset`
  and stepped inside the jitted rollout (``lax.scan`` over the vmapped env).
- ``"reference"``: the real reference, ``num_envs`` copies stepped on the host as one batch.
  Each environment names it in ``SPEC.training.make_vector_reference``: ``(num_envs, seed,
  **env_kwargs)`` -> a :class:`HostVectorEnv`, with same-step autoreset semantics matching
  AutoReset.

Everything else (network, PPO update, hyperparameters) is shared: :func:`make_backend` checks
that both sides declare the same observation and action spaces, so the same network fits both.

A host translation (``EnvSpec.backend == "host"``: a Rust core stepped from Python) has no JAX
environment to jit: its translation side (kind ``"jax"``, also accepted as ``"translation"``)
is the translation batched on the host, ``SPEC.training.make_vector_translation`` (same
signature as ``make_vector_reference``), and BOTH backends then run the host rollout
(``host_rollout.py``); the spaces are the translation's ``observation_space`` /
``action_space`` attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import jax
import numpy as np

import envport
from envport.core.api import Environment
from envport.core.spaces import Box, Discrete, Space
from envport.core.wrappers import AutoReset

BackendKind = Literal["jax", "reference"]
BACKENDS: tuple[str, ...] = ("jax", "reference")
# Another name of the translation side ("jax"), for host translations, whose translation is not
# a JAX environment; runs, tables and folders keep the one name "jax".
ALIASES: dict[str, str] = {"translation": "jax"}


class HostVectorEnv(Protocol):
    """A batch of environments stepped on the host (NumPy in, NumPy out), same-step autoreset:
    the step that ends an episode returns the next episode's first observation.

    A batch for masked PPO (its translation has an ``action_mask`` hook: a two-player game
    against a fixed opponent) also has ``action_masks() -> bool[num_envs, A]``, the legal
    actions at the observations the last ``reset`` / ``step`` returned (``host_rollout.py``
    reads it before each policy step).

    A batch with ``takes_keys = True`` draws, when it is given them, from the keys the JAX
    backend's rollout would reset and step its environments with: ``reset(keys=...)`` and
    ``step(actions, keys=...)``, ``keys`` the uint32 key data ``[num_envs, 2]`` of
    ``ppo.make_rollout``'s per-environment keys (``host_rollout.py`` passes them; without them it
    draws its own). The two backends' runs of a seed then meet common random numbers in their
    episodes, as Pong's do through :func:`seeded_reset` the other way round.

    A batch with ``set_active(active: bool[num_envs])`` steps only the active environments from
    then on (until the next ``reset``): an inactive one is not stepped (or, where stepping the
    whole batch costs the same, its results are dropped) and never restarted, its observation
    and mask stay as they were, its reward is 0 and it neither terminates nor truncates. The
    evaluation (``evaluation._play``) stops each environment once its first episode has ended,
    so a slow reference spends no steps on episodes nobody counts. A reference batch and its
    matched translation (``SPEC.training.make_matched_translation``) must stop alike, so that
    they still draw the same for the environments that play on."""

    num_envs: int
    observation_space: Space
    action_space: Space

    def reset(self) -> np.ndarray: ...

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(obs, reward, terminated, truncated)``, each with a leading ``num_envs`` axis."""
        ...

    def get_state(self) -> Any:
        """Everything later steps depend on, picklable (for exact resumption)."""
        ...

    def set_state(self, state: Any) -> None: ...


def check_backend(kind: str) -> str:
    """``kind`` by its canonical name ("translation" -> "jax"); ValueError for an unknown one."""
    kind = ALIASES.get(kind, kind)
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend {kind!r}; choose one of "
                         f"{', '.join((*BACKENDS, *ALIASES))}")
    return kind


def check_trainable(name: str, kind: str) -> None:
    """ValueError, before anything is built, when ``name`` has no batch for backend ``kind``:
    a reference without ``make_vector_reference``, a host translation without
    ``make_vector_translation``."""
    kind = check_backend(kind)
    training = envport.spec(name).training
    if kind == "reference" and training.make_vector_reference is None:
        vector_reference(name, 1)  # raises, naming the missing field
    if kind == "jax" and is_host(name) and training.make_vector_translation is None:
        vector_translation(name, 1)  # raises, naming the missing field


def is_host(name: str) -> bool:
    """Whether ``name``'s translation is a host translation (no JAX environment)."""
    return envport.spec(name).host


# The training option that turns a two-player game into one player's environment against a
# fixed opponent (``envport train ENV --opponent NAME``; ``SPEC.training.env_kwargs``).
OPPONENT = "opponent"


def check_opponent(name: str, opponent: str, flag: str = "--opponent") -> None:
    """ValueError naming ``flag`` unless ``name`` is a two-player game that can be trained
    against the opponent ``opponent`` (``envport.pettingzoo.check_vs_opponent``)."""
    from envport.pettingzoo import check_vs_opponent

    envport.spec(name)  # an unknown environment: UnknownEnvironmentError naming them
    try:
        check_vs_opponent(name, opponent)
    except ValueError as e:
        raise ValueError(f"{flag} {opponent}: {e}") from None


def translation(name: str, *, policy: Any = None, **env_kwargs: Any) -> Any:
    """What training steps as ``name``'s translation: ``envport.make(name, **env_kwargs)``,
    or, with the option ``opponent`` (a two-player game), player 0 of the game against that
    fixed JAX opponent (``envport.pettingzoo.vs_opponent(name, opponent)``), or against a pool
    of the run's past policies (``opponent="pool"``: ``VsPool(name, policy)``, ``policy`` the
    run's network, which it needs to step)."""
    if OPPONENT not in env_kwargs:
        return envport.make(name, **env_kwargs)
    from envport.pettingzoo import POOL, VsPool, vs_opponent

    pool = env_kwargs[OPPONENT] == POOL
    rest = {k for k in env_kwargs if k != OPPONENT and not (pool and k in POOL_OPTIONS)}
    if rest:
        raise ValueError(f"{name} against an opponent takes no other options"
                         f"{' than ' + ', '.join(POOL_OPTIONS) if pool else ''}, got "
                         f"{sorted(rest)}")
    check_opponent(name, env_kwargs[OPPONENT], flag="opponent")
    if pool:
        return VsPool(name, policy, **{POOL_OPTIONS[k]: int(v) for k, v in env_kwargs.items()
                                       if k in POOL_OPTIONS})
    return vs_opponent(name, env_kwargs[OPPONENT])


# A self-play pool's options (``envport train --pool-size N --pool-every K``), by the
# ``VsPool`` argument each sets: the ring's members, and the PPO updates between two writes.
POOL_OPTIONS = {"pool_size": "size", "pool_every": "every"}


def is_self_play(env_kwargs: dict[str, Any]) -> bool:
    """Whether these options train against the run's own past policies (a pool)."""
    from envport.pettingzoo import POOL

    return env_kwargs.get(OPPONENT) == POOL


def check_self_play_backend(kind: str, env_kwargs: dict[str, Any]) -> None:
    """ValueError unless self-play options (if any) train on the JAX backend: a reference
    batch plays a fixed opponent on the host."""
    if kind != "jax" and is_self_play(env_kwargs):
        raise ValueError(f"--opponent {env_kwargs[OPPONENT]} (self-play) trains on the JAX "
                         f"backend only, not {kind!r}: the reference backend's batch plays a "
                         "fixed opponent (heuristic or random)")


def params_update_of(env: Any) -> Callable[[Any, Any], Any] | None:
    """The environment's ``update_params(env_params, policy_params) -> env_params`` (through an
    ``AutoReset``), which the JAX trainer calls before each rollout: environments whose params
    follow training (a self-play pool). None for the others, whose params stay the defaults
    (constants of the compiled rollout, as before the hook existed)."""
    inner = env.env if isinstance(env, AutoReset) else env
    return getattr(inner, "update_params", None)


def action_mask_of(env: Any) -> Callable[[Any, Any], Any] | None:
    """The environment's legal-action hook ``action_mask(state, params) -> bool[A]`` (through
    an ``AutoReset``, whose state is the wrapped environment's), or None: PPO then samples
    from every action, as before masks existed."""
    inner = env.env if isinstance(env, AutoReset) else env
    return getattr(inner, "action_mask", None)


def translation_spaces(name: str, **env_kwargs: Any) -> tuple[Space, Space]:
    """The translation's (observation space, action space): the contract both backends'
    spaces are checked against. A JAX environment gives them from its default params, a host
    translation as attributes."""
    translation_ = translation(name, **env_kwargs)
    if is_host(name):
        return translation_.observation_space, translation_.action_space
    params = translation_.default_params()
    return translation_.observation_space(params), translation_.action_space(params)


def vector_translation(name: str, num_envs: int, seed: int = 0, **env_kwargs: Any
                       ) -> HostVectorEnv:
    """``num_envs`` copies of a host translation ``name`` as one host batch."""
    return _host_batch(name, "make_vector_translation", "is a host translation without a "
                       "batched translation for training", num_envs, seed, env_kwargs)


def vector_reference(name: str, num_envs: int, seed: int = 0, **env_kwargs: Any
                     ) -> HostVectorEnv:
    """``num_envs`` copies of ``name``'s reference as one host batch."""
    return _host_batch(name, "make_vector_reference", "has no batched reference for training",
                       num_envs, seed, env_kwargs)


def _host_batch(name: str, field: str, missing: str, num_envs: int, seed: int,
                env_kwargs: dict[str, Any]) -> HostVectorEnv:
    # An unknown name raises UnknownEnvironmentError, listing the known ones.
    make = getattr(envport.spec(name).training, field)
    if make is None:
        raise ValueError(f"environment {name!r} {missing}: give its SPEC training=Training("
                         f"{field}=...), a (num_envs, seed, **env_kwargs) -> HostVectorEnv "
                         "factory")
    return make(num_envs, seed, **env_kwargs)


class JaxHostVectorEnv:
    """The JAX translation behind :class:`HostVectorEnv` (for host-driven evaluation), through
    :func:`envport.gym.make_vec`'s jitted, vmapped AutoReset step."""

    def __init__(self, name: str, num_envs: int, seed: int = 0, **env_kwargs: Any) -> None:
        from gymnasium.vector import AutoresetMode

        from envport.gym import make_vec

        # Same-step autoreset: the HostVectorEnv contract (and AutoReset's), not Gymnasium's
        # NEXT_STEP default.
        self._vec = make_vec(name, num_envs, seed, AutoresetMode.SAME_STEP, **env_kwargs)
        self.num_envs = num_envs
        self.seed = seed
        env = self._vec.env
        self.observation_space = env.observation_space(env.default_params())
        self.action_space = env.action_space(env.default_params())

    def reset(self) -> np.ndarray:
        return self._vec.reset(seed=self.seed)[0].astype(self.observation_space.dtype)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        obs, reward, terminated, truncated, _ = self._vec.step(actions)
        # The translation's own dtypes (the Gymnasium view declares the reference's: float64
        # HalfCheetah observations and rewards).
        return (obs.astype(self.observation_space.dtype), reward.astype(np.float32),
                terminated, truncated)

    def get_state(self) -> Any:
        return jax.device_get((self._vec._state, jax.random.key_data(self._vec._key)))

    def set_state(self, state: Any) -> None:
        env_state, key_data = state
        self._vec._state = jax.device_put(env_state)
        self._vec._key = jax.random.wrap_key_data(key_data)


def host_vector_env(name: str, kind: str, num_envs: int, seed: int = 0, **env_kwargs: Any
                    ) -> HostVectorEnv:
    """A host batch of either backend (``"reference"``: the real thing)."""
    kind = check_backend(kind)
    if kind == "reference":
        return vector_reference(name, num_envs, seed, **env_kwargs)
    if is_host(name):
        return vector_translation(name, num_envs, seed, **env_kwargs)
    return JaxHostVectorEnv(name, num_envs, seed, **env_kwargs)


@dataclass
class Backend:
    """One backend of one environment: its spaces, and how to step it.

    ``env`` (jax) is the functional AutoReset-wrapped translation; ``vec`` (reference, and jax
    for a host translation) is the host batch. Both declare the same spaces (checked at
    construction).
    """

    name: str
    kind: str
    num_envs: int
    seed: int
    env_kwargs: dict[str, Any]
    observation_space: Space
    action_space: Space
    env: Environment | None = None
    vec: HostVectorEnv | None = field(default=None, repr=False)
    # jax only, where the translation can start exactly where the reference batch of the same
    # seed starts: (seed) -> batched (state, obs). See :func:`seeded_reset`.
    seeded_reset: Callable[[Any], tuple[Any, Any]] | None = field(default=None, repr=False)


def seeded_reset(name: str, translation: Environment, num_envs: int
                 ) -> Callable[[Any], tuple[Any, Any]] | None:
    """The translation's reset from the reference batch's own per-environment seeds, when both
    sides support it: ``SPEC.training.reset_seeds(seed, num_envs)`` (jittable) and the
    translation's ``reset_from_seed(seed, params)`` (Pong: the C ``rand_r`` seeds). The JAX
    backend's run of a seed then plays the same games as the reference backend's run of that
    seed (the translation reproduces the reference's draws), so L4's paired comparison by seed
    compares training on the two backends under common random numbers. None otherwise
    (CartPole's reference draws from NumPy's generator, which JAX does not reproduce)."""
    seeds_of = envport.spec(name).training.reset_seeds
    reset_from_seed = getattr(translation, "reset_from_seed", None)
    if seeds_of is None or reset_from_seed is None:
        return None
    params = translation.default_params()

    def reset(seed: Any) -> tuple[Any, Any]:
        return jax.vmap(lambda s: reset_from_seed(s, params))(seeds_of(seed, num_envs))

    return reset


def _same_space(a: Space, b: Space) -> bool:
    if isinstance(a, Discrete) and isinstance(b, Discrete):
        return a.n == b.n
    if isinstance(a, Box) and isinstance(b, Box):
        return (a.shape, float(a.low), float(a.high)) == (b.shape, float(b.low), float(b.high))
    return False


def make_backend(name: str, kind: str, num_envs: int, seed: int = 0, *, policy: Any = None,
                 **env_kwargs: Any) -> Backend:
    """``name`` on backend ``kind`` ("jax" or "reference") with ``num_envs`` environments.

    The translation is built in both cases: its spaces are the contract the host batch's spaces
    are checked against, so a policy trained on one backend runs on the other unchanged. For a
    host translation both kinds are host batches (``vec``): the translation's
    (``make_vector_translation``) and the reference's.
    """
    kind = check_backend(kind)
    obs_space, act_space = translation_spaces(name, **env_kwargs)
    check_self_play_backend(kind, env_kwargs)
    if kind == "jax" and not is_host(name):
        env = translation(name, policy=policy, **env_kwargs)
        return Backend(name, kind, num_envs, seed, dict(env_kwargs), obs_space, act_space,
                       env=AutoReset(env), seeded_reset=seeded_reset(name, env, num_envs))
    if kind == "jax":
        vec, side = vector_translation(name, num_envs, seed, **env_kwargs), "batched translation"
    else:
        vec, side = vector_reference(name, num_envs, seed, **env_kwargs), "reference"
    for what, ours, theirs in (("observation", obs_space, vec.observation_space),
                               ("action", act_space, vec.action_space)):
        if not _same_space(ours, theirs):
            raise ValueError(f"{name}: the {side}'s {what} space {theirs} differs from the "
                             f"translation's {ours}; one network cannot serve both")
    return Backend(name, kind, num_envs, seed, dict(env_kwargs), obs_space, act_space, vec=vec)
