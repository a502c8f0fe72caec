"""Rollout distribution: do whole episodes, run freely on each side, look alike?

L3 compares the translation with the reference in lockstep, but a chaotic system leaves lockstep
after a few steps for any float32 implementation (HalfCheetah: 0-15 steps; CartPole: 75-110), so
beyond its horizon nothing is compared step by step. This layer checks the rest of the episode
in distribution: ``N`` full episodes on each side, from each side's own reset distribution,
under the same policies (random, scripted, and a trained policy from a run folder), each side
with its own randomness and no re-sync. Every episode is summarised by the same function on both
sides (:func:`summarise`): per time window, the mean and standard deviation of every observation
dimension, of the reward and of the floating state dimensions the observation leaves out
(HalfCheetah's x position); the episode's return, length, reward per step and how it ended.

The two samples of summaries are compared with two-sample tests from scipy: Kolmogorov-Smirnov
and Welch's t on every summary, chi-square on the termination causes (a family, Holm-corrected
at ``alpha / 2``) and, per policy, an energy-distance test on the standardised summary vectors
with a permutation p-value (Bonferroni-split over the policies at ``alpha / 2``). A summary is
one number per episode, so the episodes are independent draws and the tests' alpha holds; the
docs give the false-alarm rate measured reference-vs-reference and against L3's
float32-perturbed reference copies. A rejection names the feature, its time window, the
direction (translation higher or lower), the effect size (Cohen's d, the KS distance, the
relative change) and both p-values.

The translation runs batched: one jitted, vmapped step per time step for all ``N`` episodes of
a policy, the policy applied on the host to the batch. The reference runs in tasks of
:data:`EPISODES_PER_TASK` episodes on the enclosing executor (``envport verify --ray``: Ray
tasks, as L3's reference side; otherwise this process). Episode ``i`` of a side is a function of
``(seed, side, policy, i)`` alone.

Which environments run it, and with what ``N``, windows and target effect, is the environment
``Verification.rollout_distribution`` (see :class:`Settings`);
an environment without one passes with a note, as the distribution layer does for one without
random events.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import math
import os
import time
import uuid
import warnings
import zlib
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats
from scipy.spatial.distance import cdist

from envport.core.api import Environment
from envport.core.reference import Reference, RefState
from envport.core.registry import EnvSpec
from envport.core.seeds import derive_key, derive_seed
from envport.scale import Executor, InProcess, active
from envport.verify.report import Failure, FieldDiff, LayerResult

LAYER = "rollout_distribution"
ALPHA = 0.01  # family-wise: half to the univariate family (Holm), half to the energy tests
POWER = 0.8
EPISODES_PER_TASK = 8
PERMUTATIONS = 999
MIN_PER_SIDE = 5  # a summary seen in fewer episodes on a side is not tested
# Path components of derive_seed/derive_key: this layer's streams are disjoint from L3's
# (which uses (seed, i) and (seed, i, 1)).
_TAG = 7_001
REFERENCE_SIDE, TRANSLATION_SIDE, MODEL_SIDE = 0, 1, 2
POLICY_INDEX = {"random": 0, "scripted": 1, "trained": 2}


def policy_index(kind: str) -> int:
    """A policy's seed path component: the built-ins' fixed ones, a named policy's from its
    name (so adding a policy to an environment leaves the other policies' episodes alone)."""
    return POLICY_INDEX.get(kind, 1_000 + zlib.crc32(kind.encode()) % 1_000_000)


@dataclass(frozen=True)
class Settings:
    """An environment's settings for this layer (``Verification.rollout_distribution``).

    ``episodes``: N per side and policy; ``horizon``: steps an episode may run (default: the
    spec's ``max_rollout_steps``); ``windows``: equal time windows of the horizon, each
    summarised apart (plus the whole episode); ``effect``: the standardised effect (Cohen's d)
    the layer should detect with 80% power, below which a warning says it is underpowered;
    ``obs_names``: a name per observation dimension; ``termination_cause(state) -> str``: why
    a terminated episode ended, from its final reference-form state; ``policies``: the
    policies to run (the built-ins ``random`` and ``scripted``, and names of ``named``);
    ``named``: the environment's own policies for this layer, ``name -> fn(obs, rng, t)`` with
    ``t`` the step index in the episode (open-loop gaits); ``permutations`` of the energy test.

    For games, whose observations are hundreds of flags: ``step_features(state) -> float
    array`` (names ``feature_names``) is what a step records instead of the observation and
    the floating state, from the reference-form state (``bridge.from_jax`` on the
    translation's side); ``episode_summaries(rows, names) -> {name: value}`` adds summaries
    of a whole episode (a battle's winner, faints, switches); ``column_summaries=False``
    leaves out the per-window spreads of every column, the one-step model and the reset
    distance; ``make_reference``: the reference this layer runs in place of the spec's (one
    whose resets sample what the translation's do, with the reference's own random stream)."""

    episodes: int = 200
    horizon: int | None = None
    windows: int = 4
    effect: float = 0.5
    obs_names: tuple[str, ...] | None = None
    termination_cause: Callable[[RefState], str] | None = None
    policies: tuple[str, ...] = ("random", "scripted")
    named: Mapping[str, Callable[[np.ndarray, np.random.Generator, int], Any]] = field(
        default_factory=dict)
    permutations: int = PERMUTATIONS
    step_features: Callable[[RefState], np.ndarray] | None = None
    feature_names: tuple[str, ...] = ()
    episode_summaries: Callable[[np.ndarray, list[str]], Mapping[str, float]] | None = None
    column_summaries: bool = True
    make_reference: Callable[[], Reference] | None = None

    def reference(self, spec: EnvSpec) -> Reference:
        return self.make_reference() if self.make_reference is not None \
            else spec.make_reference()


def settings_for(spec: EnvSpec, env: Environment | None = None) -> Settings | None:
    """The environment's ``Verification.rollout_distribution``, or None when it declares none.
    ``env`` is accepted for callers that already hold one; the settings do not depend on it."""
    raw = spec.verification.rollout_distribution
    if raw is None:
        return None
    if callable(raw):  # a lazy(...) factory: settings holding code listing must not import
        raw = raw()
    return raw if isinstance(raw, Settings) else Settings(**dict(raw))


# ------------------------------------------------------------------------------ policies
class BatchPolicy:
    """A policy over a batch of episodes: ``start(rngs)`` then ``act(obs_batch, states)``;
    ``states`` (each episode's reference-form state) is given where ``needs_states``."""

    needs_states = False

    def start(self, rngs: list[np.random.Generator]) -> None:
        self.rngs = rngs

    def act(self, obs: np.ndarray, states: Sequence[RefState | None] | None = None) -> np.ndarray:
        raise NotImplementedError


class HostPolicy(BatchPolicy):
    """A verifier policy ``(obs, rng) -> action`` applied to each episode with its own rng."""

    def __init__(self, fn: Callable[[np.ndarray, np.random.Generator], Any]) -> None:
        self.fn = fn

    def act(self, obs: np.ndarray, states: Sequence[RefState | None] | None = None) -> np.ndarray:
        return np.asarray([self.fn(o, r) for o, r in zip(obs, self.rngs, strict=True)])


class StatePolicy(BatchPolicy):
    """A verifier policy of the state, ``(state, rng) -> action``: a masked game's random legal
    player (``Verification.legal_action`` through ``policies.draw_action``) or its
    ``scripted_action``."""

    needs_states = True

    def __init__(self, fn: Callable[[RefState, np.random.Generator], Any]) -> None:
        self.fn = fn

    def act(self, obs: np.ndarray, states: Sequence[RefState | None] | None = None
            ) -> np.ndarray:
        """``None`` for an episode that has ended (the translation's batch steps on): it gets
        zeros, as a game over has no legal action to draw."""
        assert states is not None, "a state policy is given the states"
        acts = [None if s is None else np.asarray(self.fn(s, r))
                for s, r in zip(states, self.rngs, strict=True)]
        filler = np.zeros_like(next(a for a in acts if a is not None))
        return np.asarray([filler if a is None else a for a in acts])


class TimedPolicy(BatchPolicy):
    """A named policy ``(obs, rng, t) -> action`` of :attr:`Settings.named`: ``t`` counts the
    steps since :meth:`start` (every episode of a batch starts together)."""

    def __init__(self, fn: Callable[[np.ndarray, np.random.Generator, int], Any]) -> None:
        self.fn = fn

    def start(self, rngs: list[np.random.Generator]) -> None:
        super().start(rngs)
        self.t = 0

    def act(self, obs: np.ndarray, states: Sequence[RefState | None] | None = None) -> np.ndarray:
        out = np.asarray([self.fn(o, r, self.t) for o, r in zip(obs, self.rngs, strict=True)])
        self.t += 1
        return out


class TrainedPolicy(BatchPolicy):
    """A PPO policy of a run folder, sampling its actions (the trained stochastic policy, as
    L4 evaluates it) with a key from each episode's rng."""

    def __init__(self, env_name: str, run_dir: str) -> None:
        import envport
        from envport.train.config import PPOConfig
        from envport.train.ppo import make_policy
        from envport.train.run import load_params

        run, params = load_params(Path(run_dir))
        cfg = PPOConfig.from_dict(run["ppo"])
        env = envport.make(env_name, **run["env_kwargs"])
        self.policy = make_policy(dataclasses.replace(cfg, seed=0), env.observation_space(),
                                  env.action_space())
        self.params = jax.device_put(params)
        self.run_dir = run_dir

    def start(self, rngs: list[np.random.Generator]) -> None:
        super().start(rngs)
        self.carry = self.policy.initial_carry(len(rngs))
        self.first = np.ones(len(rngs), np.bool_)

    def act(self, obs: np.ndarray, states: Sequence[RefState | None] | None = None) -> np.ndarray:
        # One key per step for the batch (its elements are independent draws), from the first
        # episode's stream: each side and episode batch has its own.
        key = self.rngs[0].integers(0, 2**32, 2, dtype=np.uint32)
        self.carry, action = _trained_actor(self.policy)(self.params, self.carry,
                                                         np.asarray(obs, np.float32),
                                                         self.first, key)
        self.first = np.zeros(len(self.rngs), np.bool_)
        return np.asarray(action)


@cache
def _trained_actor(policy: Any) -> Callable:
    def act(params: Any, carry: Any, obs: jax.Array, first: jax.Array, key: jax.Array
            ) -> tuple[Any, jax.Array]:
        # The network takes (time, batch, ...), as in envport.train.evaluation.
        carry, dist, _ = policy.apply(params, carry, obs[None], first[None])
        raw = dist.sample(jax.random.wrap_key_data(key, impl="threefry2x32"))
        return carry, policy.env_action(raw[0])

    return jax.jit(act)


def check_policy_run(spec: EnvSpec, run_dir: str | os.PathLike[str], flag: str = "--policy-run"
                     ) -> None:
    """ValueError naming ``flag`` unless ``run_dir`` is a training run of this environment."""
    from envport.train.run import load_run_config

    path = Path(run_dir)
    if not path.is_dir():
        raise ValueError(f"{flag} {run_dir}: not a folder (expected an `envport train` run)")
    try:
        config = load_run_config(path)
    except ValueError as e:
        raise ValueError(f"{flag} {run_dir}: {e}") from None
    if config["env"] != spec.name:
        raise ValueError(f"{flag} {run_dir}: the policy was trained on {config['env']!r}, not "
                         f"{spec.name!r}")


def make_batch_policy(kind: str, spec: EnvSpec, run_dir: str | None = None,
                      settings: Settings | None = None) -> BatchPolicy:
    v = spec.verification
    if settings is not None and kind in settings.named:
        return TimedPolicy(settings.named[kind])
    if kind == "random" and v.legal_action is not None:
        from envport.verify.policies import draw_action

        return StatePolicy(lambda state, rng: draw_action(spec, state, rng))
    if kind == "scripted" and v.scripted_action is not None:
        return StatePolicy(v.scripted_action)
    if kind == "random" and v.random_action is not None:
        random_action = v.random_action
        return HostPolicy(lambda obs, rng: random_action(rng))
    if kind == "scripted" and v.scripted_policy is not None:
        return HostPolicy(v.scripted_policy)
    if kind == "trained" and run_dir is not None:
        return TrainedPolicy(spec.name, run_dir)
    raise ValueError(f"{spec.name} has no {kind} policy")


def episode_rngs(seed: int, side: int, policy: str, indices: Sequence[int]
                 ) -> list[np.random.Generator]:
    return [np.random.default_rng(derive_seed(seed, _TAG, side, policy_index(policy), i, 1))
            for i in indices]


# ------------------------------------------------------------------------------ episodes
@dataclass
class Columns:
    """What a step records, in order: the observation's dimensions, the floating state
    dimensions the observation does not already hold (``state`` as (field, flat index)),
    the reward."""

    obs: list[str]
    state: list[tuple[str, int]]

    @property
    def names(self) -> list[str]:
        return [*self.obs, *(f"state.{k}[{i}]" for k, i in self.state), "reward"]


def state_vector(state: RefState, cols: Columns) -> np.ndarray:
    return np.asarray([np.asarray(state[k], np.float64).ravel()[i] for k, i in cols.state],
                      np.float64)


def find_columns(spec: EnvSpec, settings: Settings, seed: int) -> Columns:
    """The columns of :class:`Columns`, from a short reference episode: a floating state
    element equal (to float32 rounding) to an observation element at every step is left out.
    With ``step_features`` the columns are those features."""
    if settings.step_features is not None:
        return Columns(list(settings.feature_names), [])
    ref = settings.reference(spec)
    rng = np.random.default_rng(derive_seed(seed, _TAG, 9))
    obs = np.asarray(ref.reset(derive_seed(seed, _TAG, 8)), np.float64).ravel()
    obs_rows, states = [obs], [ref.get_state()]
    act = make_batch_policy(settings.policies[0], spec, settings=settings)
    act.start([rng])
    for _ in range(20):
        here = [states[-1]] if act.needs_states else None
        obs_t, _, terminated, truncated, _ = ref.step(act.act(obs[None], here)[0])
        obs = np.asarray(obs_t, np.float64).ravel()
        obs_rows.append(obs)
        states.append(ref.get_state())
        if terminated or truncated:
            break
    with contextlib.suppress(Exception):
        ref.close()  # type: ignore[attr-defined]
    o = np.stack(obs_rows)
    names = list(settings.obs_names or [f"obs[{j}]" for j in range(o.shape[1])])
    if len(names) != o.shape[1]:
        raise ValueError(f"{spec.name}: rollout_distribution obs_names has {len(names)} names "
                         f"for {o.shape[1]} observation dimensions")
    extra: list[tuple[str, int]] = []
    for k in states[0]:
        if not np.issubdtype(np.asarray(states[0][k]).dtype, np.floating):
            continue
        col = np.stack([np.asarray(s[k], np.float64).ravel() for s in states])
        for i in range(col.shape[1]):
            same = np.all(np.abs(o - col[:, i:i + 1]) <= 1e-6 * (1 + np.abs(col[:, i:i + 1])),
                          axis=0)
            if not same.any():
                extra.append((k, i))
    return Columns(names, extra)


@dataclass
class Sample:
    """One side's episodes under one policy: per episode, its rows (one per step: the
    columns of :class:`Columns`, then the action's elements), its reset observation and how it
    ended; ``summaries`` once :func:`summarise_all` ran."""

    rows: list[np.ndarray] = field(default_factory=list)
    initial: list[np.ndarray] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)
    steps: int = 0
    summaries: list[dict[str, float]] = field(default_factory=list)

    def extend(self, other: Sample) -> None:
        self.rows += other.rows
        self.initial += other.initial
        self.causes += other.causes
        self.steps += other.steps


@dataclass
class Model:
    """A linear one-step model fitted on reference episodes apart from both test samples:
    the next columns from ``[1, columns, action, action**2]``, the reward from those and the
    next columns too. Its residuals' per-episode means are summaries (a reward or a force
    off by a few percent moves them by far more than they vary between episodes), and the
    reset observations' mean and spread standardise each episode's reset distance."""

    dynamics: np.ndarray
    reward: np.ndarray
    initial_mean: np.ndarray
    initial_sd: np.ndarray


def _regressors(rows: np.ndarray, ncols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dynamics inputs, reward inputs, next columns) of an episode's step pairs."""
    s, a = rows[:, :ncols - 1], rows[:, ncols:]
    prev, nxt, act = s[:-1], s[1:], a[1:]
    ones = np.ones((len(prev), 1))
    dyn = np.concatenate([ones, prev, act, act ** 2], axis=1)
    rew = np.concatenate([dyn, nxt], axis=1)
    return dyn, rew, nxt


def fit_model(sample: Sample, ncols: int) -> Model | None:
    pairs = [_regressors(r, ncols) for r in sample.rows if len(r) >= 3]
    if not pairs:
        return None
    dyn = np.concatenate([p[0] for p in pairs])
    rew = np.concatenate([p[1] for p in pairs])
    nxt = np.concatenate([p[2] for p in pairs])
    reward = np.concatenate([r[1:, ncols - 1] for r in sample.rows if len(r) >= 3])
    init = np.stack(sample.initial)
    sd = init.std(axis=0)
    return Model(np.linalg.lstsq(dyn, nxt, rcond=None)[0],
                 np.linalg.lstsq(rew, reward, rcond=None)[0], init.mean(axis=0),
                 np.where(sd > 0, sd, 1.0))


def windows(horizon: int, count: int) -> list[tuple[int, int]]:
    edges = np.linspace(0, horizon, count + 1).round().astype(int)
    return [(int(a), int(b)) for a, b in itertools.pairwise(edges) if b > a]


def summarise(rows: np.ndarray, names: list[str], horizon: int, count: int,
              model: Model | None = None, initial: np.ndarray | None = None, *,
              columns: bool = True,
              extra: Callable[[np.ndarray, list[str]], Mapping[str, float]] | None = None
              ) -> dict[str, float]:
    """One episode's summaries: per window (and over the whole episode) the mean and standard
    deviation of every column and of its one-step change, plus return, length and reward per
    step; with a ``model``, the mean residual of each column's and the reward's one-step
    prediction and the reset observation's standardised distance from the reset mean. A window
    the episode spends fewer than 3 steps in is absent (NaN). ``rows`` may carry the action's
    elements after the named columns. ``columns=False``: no per-column summaries; ``extra``:
    the environment's own summaries of the episode (``Settings.episode_summaries``)."""
    out: dict[str, float] = {}
    n = len(rows)
    spans = [(0, horizon, "all")] + [(a, b, f"t{a}-{b}") for a, b in windows(horizon, count)] \
        if count > 1 else [(0, horizon, "all")]
    if not columns:
        spans = []
    for a, b, label in spans:
        part = rows[a:min(b, n)]
        for j, name in enumerate(names):
            keys = (f"mean {name} @ {label}", f"std {name} @ {label}",
                    f"step std {name} @ {label}")
            if len(part) >= 3:
                # The spread of one step's change: set by the dynamics more than by where the
                # episode wandered, so it varies little between episodes (a strong test of a
                # force, mass or damping).
                values = (np.mean(part[:, j]), np.std(part[:, j]), np.std(np.diff(part[:, j])))
                out.update((k, float(v)) for k, v in zip(keys, values, strict=True))
            else:
                out.update((k, math.nan) for k in keys)
    ncols = len(names)
    reward = rows[:, ncols - 1] if n else np.zeros(0)
    out["return"] = float(np.sum(reward))
    out["length"] = float(n)
    out["reward per step"] = float(np.mean(reward)) if n else math.nan
    if extra is not None:
        out.update((k, float(v)) for k, v in extra(rows, names).items())
    if model is not None:
        if n >= 3:
            dyn, rew, nxt = _regressors(rows, ncols)
            res = (nxt - dyn @ model.dynamics).mean(axis=0)
            for j, name in enumerate(names[:-1]):
                out[f"{RESIDUAL} {name}"] = float(res[j])
            out[f"{RESIDUAL} reward"] = float(np.mean(reward[1:] - rew @ model.reward))
        else:
            out.update((f"{RESIDUAL} {name}", math.nan) for name in names)
        if initial is not None:
            z = (initial - model.initial_mean) / model.initial_sd
            out["reset distance"] = float(np.sqrt(np.mean(z ** 2)))
    return out


RESIDUAL = "model residual"


def summarise_all(sample: Sample, names: list[str], horizon: int, count: int,
                  model: Model | None, settings: Settings | None = None) -> None:
    columns = settings.column_summaries if settings is not None else True
    extra = settings.episode_summaries if settings is not None else None
    sample.summaries = [summarise(r, names, horizon, count, model, i, columns=columns,
                                  extra=extra)
                        for r, i in zip(sample.rows, sample.initial, strict=True)]


def _cause(terminated: bool, truncated: bool, state: RefState, settings: Settings) -> str:
    if terminated:
        return ("terminated: " + settings.termination_cause(state)
                if settings.termination_cause else "terminated")
    return "truncated" if truncated else "horizon"


def record(settings: Settings, cols: Columns, obs: np.ndarray, state: RefState) -> np.ndarray:
    """What a step records before its reward and action: the settings' ``step_features`` of the
    state, else the observation and the floating state columns it leaves out."""
    if settings.step_features is not None:
        return np.asarray(settings.step_features(state), np.float64).ravel()
    return np.concatenate([obs.ravel(), state_vector(state, cols)])


def reference_episodes(spec: EnvSpec, settings: Settings, cols: Columns, policy: BatchPolicy,
                       kind: str, seed: int, indices: list[int], horizon: int,
                       ref: Reference | None = None, side: int = REFERENCE_SIDE) -> Sample:
    """Episodes ``indices`` of a reference side (``side``'s seeds), one after the other on one
    reference."""
    ref = ref or settings.reference(spec)
    out = Sample()
    for i, rng in zip(indices, episode_rngs(seed, side, kind, indices), strict=True):
        policy.start([rng])
        obs = np.asarray(ref.reset(derive_seed(seed, _TAG, side, i)), np.float64)
        out.initial.append(obs.ravel())
        rows = []
        terminated = truncated = False
        state = ref.get_state()
        for _ in range(horizon):
            action = policy.act(obs.reshape(1, -1), [state] if policy.needs_states else None)[0]
            obs_t, reward, terminated, truncated, _ = ref.step(action)
            obs = np.asarray(obs_t, np.float64)
            state = ref.get_state()
            rows.append(np.concatenate([record(settings, cols, obs, state), [reward],
                                        np.asarray(action, np.float64).ravel()]))
            if terminated or truncated:
                break
        out.rows.append(np.asarray(rows, np.float64).reshape(len(rows), -1))
        out.causes.append(_cause(bool(terminated), bool(truncated), state, settings))
        out.steps += len(rows)
    return out


_WORKER: dict[str, tuple[Reference, dict[str, BatchPolicy]]] = {}


def _reference_task(task: tuple[EnvSpec, Settings, Columns, str, str | None, int, list[int],
                                int, str]) -> Sample:
    """A task (here or on Ray): the reference side of some episodes of one policy (the
    reference and policies built once per process and run)."""
    spec, settings, cols, kind, run_dir, seed, indices, horizon, run = task
    if run not in _WORKER:
        _WORKER.clear()
        _WORKER[run] = (settings.reference(spec), {})
    ref, policies = _WORKER[run]
    if kind not in policies:
        policies[kind] = make_batch_policy(kind, spec, run_dir, settings)
    return reference_episodes(spec, settings, cols, policies[kind], kind, seed, indices,
                              horizon, ref)


def reference_sample(executor: Executor, spec: EnvSpec, settings: Settings, cols: Columns,
                     kind: str, run_dir: str | None, seed: int, episodes: int, horizon: int
                     ) -> Generator[Sample, None, None]:
    run = uuid.uuid4().hex
    tasks = [(spec, settings, cols, kind, run_dir, seed,
              list(range(a, min(a + EPISODES_PER_TASK, episodes))), horizon, run)
             for a in range(0, episodes, EPISODES_PER_TASK)]
    with contextlib.closing(executor.imap(_reference_task, tasks)) as parts:
        yield from parts


# The params are arguments, not constants of the program: param mutants of one environment
# (``horizon_study mutants``) then lower to the same program, which the persistent compilation
# cache compiles once for all of them.
@cache
def _batched_step(env: Environment) -> Callable:
    def step(keys: jax.Array, t: jax.Array, state: Any, action: jax.Array, params: Any) -> Any:
        def one(k: jax.Array, s: Any, a: jax.Array) -> Any:
            r = env.step(jax.random.fold_in(k, t), s, a, params)
            return r.state, r.obs, r.reward, r.terminated, r.truncated
        return jax.vmap(one)(keys, state, action)

    return jax.jit(step)


@cache
def _batched_reset(env: Environment) -> Callable:
    return jax.jit(jax.vmap(lambda k, params: env.reset(k, params), in_axes=(0, None)))


def _episodes_of(batch: RefState, episodes: int, which: Sequence[int] | None = None
                 ) -> list[RefState]:
    """Per-episode reference-form states of a batched one (``which``: those episodes only)."""
    arrays = {k: np.asarray(v) for k, v in batch.items()}
    return [{k: v[j] for k, v in arrays.items()}
            for j in (range(episodes) if which is None else which)]


def translation_sample(env: Environment, spec: EnvSpec, settings: Settings, cols: Columns,
                       policy: BatchPolicy, kind: str, seed: int, episodes: int, horizon: int,
                       ) -> Sample:
    """All ``episodes`` of the translation's side under one policy, as one batch: one jitted,
    vmapped step per time step until every episode has ended."""
    bridge = spec.make_bridge()
    keys = jnp.stack([derive_key(seed, _TAG, TRANSLATION_SIDE, policy_index(kind), i)
                      for i in range(episodes)])
    reset_keys, step_keys = jax.vmap(jax.random.split, out_axes=1)(keys)
    params = env.default_params()
    state, obs = _batched_reset(env)(reset_keys, params)
    policy.start(episode_rngs(seed, TRANSLATION_SIDE, kind, range(episodes)))
    space = env.action_space()
    adim = int(np.prod(space.shape, dtype=int))
    rows = np.zeros((episodes, horizon, len(cols.names) + adim))
    length = np.zeros(episodes, int)
    alive = np.ones(episodes, bool)
    causes = [""] * episodes
    obs_np = np.asarray(obs, np.float64).reshape(episodes, -1)
    initial = list(obs_np.copy())
    step = _batched_step(env)
    per_episode = policy.needs_states or settings.step_features is not None
    ref_state = bridge.from_jax(state) if per_episode else {}
    for t in range(horizon):
        states: list[RefState | None] | None = None
        if policy.needs_states:
            states = [s if a else None for s, a in
                      zip(_episodes_of(ref_state, episodes), alive, strict=True)]
        action = policy.act(obs_np, states).astype(space.dtype).reshape(episodes,
                                                                         *space.shape)
        state, obs, reward, terminated, truncated = step(step_keys, jnp.int32(t), state, action,
                                                         params)
        obs_np = np.asarray(obs, np.float64).reshape(episodes, -1)
        ref_state = bridge.from_jax(state)
        term, trunc = np.asarray(terminated), np.asarray(truncated)
        if settings.step_features is not None:
            live = _episodes_of(ref_state, episodes, np.flatnonzero(alive).tolist())
            head = np.zeros((episodes, len(cols.obs)))
            head[alive] = [np.asarray(settings.step_features(s), np.float64).ravel()
                           for s in live]
        else:
            extra = (np.stack([np.asarray(ref_state[k], np.float64).reshape(episodes, -1)[:, i]
                               for k, i in cols.state], axis=1) if cols.state
                     else np.zeros((episodes, 0)))
            head = np.concatenate([obs_np, extra], axis=1)
        rows[alive, t] = np.concatenate([head, np.asarray(reward, np.float64)[:, None],
                                         action.reshape(episodes, -1).astype(np.float64)],
                                        axis=1)[alive]
        length[alive] += 1
        ended = alive & (term | trunc)
        for j in np.flatnonzero(ended):
            causes[j] = _cause(bool(term[j]), bool(trunc[j]),
                               {k: np.asarray(v)[j] for k, v in ref_state.items()}, settings)
        alive &= ~ended
        if not alive.any():
            break
    return Sample(rows=[rows[i, :length[i]] for i in range(episodes)], initial=initial,
                  causes=[c or "horizon" for c in causes], steps=int(length.sum()))


# ------------------------------------------------------------------------------ the tests
@dataclass
class Test:
    policy: str
    feature: str
    test: str
    p: float
    reference_mean: float = math.nan
    translation_mean: float = math.nan
    d: float = math.nan  # Cohen's d, translation minus reference, in pooled SDs
    ks: float = math.nan  # the KS distance (largest gap between the two CDFs)
    detail: str = ""
    p_adjusted: float = math.nan
    rejected: bool = False

    @property
    def direction(self) -> str:
        if not np.isfinite(self.d) or self.d == 0:
            return ""
        return "translation higher" if self.d > 0 else "translation lower"

    def describe(self) -> str:
        rel = ""
        spread = abs((self.translation_mean - self.reference_mean) / self.d) if self.d else 0.0
        if np.isfinite(self.reference_mean) and abs(self.reference_mean) > spread:
            rel = f", {100 * (self.translation_mean / self.reference_mean - 1):+.2g}% of the mean"
        effect = (f"{self.direction}: mean {self.reference_mean:.4g} -> "
                  f"{self.translation_mean:.4g} (d={self.d:+.2f}{rel}"
                  + (f", KS D={self.ks:.2f}" if np.isfinite(self.ks) else "") + "); "
                  if np.isfinite(self.d) else (self.detail + "; " if self.detail else ""))
        return (f"[{self.policy}] {self.feature} ({self.test}): {effect}p={self.p:.2g}, "
                f"adjusted p={self.p_adjusted:.2g}")


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values (step-down; family-wise error control for any dependence)."""
    p = np.asarray(p, np.float64)
    m = len(p)
    order = np.argsort(p)
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, float((m - rank) * p[i])))
        adj[i] = running
    return adj


def cohen_d(a: np.ndarray, b: np.ndarray) -> float:
    sd = math.sqrt((np.var(a, ddof=1) * (len(a) - 1) + np.var(b, ddof=1) * (len(b) - 1))
                   / max(1, len(a) + len(b) - 2))
    diff = float(np.mean(b) - np.mean(a))
    if sd == 0:
        return 0.0 if diff == 0 else math.copysign(math.inf, diff)
    return diff / sd


def feature_tests(policy: str, ref: Sample, ours: Sample) -> list[Test]:
    out: list[Test] = []
    for name in ref.summaries[0]:
        a = np.asarray([s[name] for s in ref.summaries])
        b = np.asarray([s[name] for s in ours.summaries])
        a, b = a[np.isfinite(a)], b[np.isfinite(b)]
        if len(a) < MIN_PER_SIDE or len(b) < MIN_PER_SIDE:
            continue
        if np.ptp(a) == 0 and np.ptp(b) == 0 and a[0] == b[0]:
            continue  # the same constant on both sides (CartPole's reward): nothing to test
        d = cohen_d(a, b)
        with warnings.catch_warnings():
            # Ties (integer lengths): scipy's KS falls back to its asymptotic p-value; nearly
            # constant summaries: the t-test warns of precision loss and still answers.
            warnings.simplefilter("ignore", RuntimeWarning)
            ks = stats.ks_2samp(a, b)
            t = stats.ttest_ind(a, b, equal_var=False)
        common: dict[str, Any] = dict(policy=policy, feature=name,
                                      reference_mean=float(np.mean(a)),
                                      translation_mean=float(np.mean(b)), d=d,
                                      ks=float(ks.statistic))
        if not name.startswith(RESIDUAL):
            # A residual's spread is the implementation's rounding (float32 against float64):
            # only its mean is a property of the environment.
            out.append(Test(test="KS", p=float(ks.pvalue), **common))
        tp = float(t.pvalue)
        if not np.isfinite(tp):  # both sides constant, different values
            tp = 0.0 if np.mean(a) != np.mean(b) else 1.0
        out.append(Test(test="Welch t", p=tp, **common))
    causes = sorted(set(ref.causes) | set(ours.causes))
    if len(causes) > 1:
        table = np.array([[ref.causes.count(c) for c in causes],
                          [ours.causes.count(c) for c in causes]])
        chi = stats.chi2_contingency(table)
        n = table.sum()
        v = math.sqrt(chi.statistic / (n * (min(table.shape) - 1)))
        shares = ", ".join(f"{c} {table[0, j] / table[0].sum():.0%} -> "
                           f"{table[1, j] / table[1].sum():.0%}" for j, c in enumerate(causes))
        out.append(Test(policy=policy, feature="termination cause", test="chi-square",
                        p=float(chi.pvalue), detail=f"{shares} (Cramer's V={v:.2f})"))
    return out


def summary_matrix(ref: Sample, ours: Sample) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Both samples' summaries seen in every episode of both sides, standardised by the pooled
    mean and SD (constant summaries dropped)."""
    names = [k for k in ref.summaries[0]
             if all(np.isfinite(s[k]) for s in ref.summaries + ours.summaries)]
    a = np.asarray([[s[k] for k in names] for s in ref.summaries])
    b = np.asarray([[s[k] for k in names] for s in ours.summaries])
    both = np.concatenate([a, b])
    sd = both.std(axis=0)
    keep = sd > 0
    z = (both[:, keep] - both[:, keep].mean(axis=0)) / sd[keep]
    return z[:len(a)], z[len(a):], [n for n, k in zip(names, keep, strict=True) if k]


def energy_test(policy: str, ref: Sample, ours: Sample, permutations: int, seed: int) -> Test:
    """Energy distance between the two samples of standardised summary vectors, with a
    permutation p-value (scipy's permutation_test over the pooled episodes)."""
    a, b, names = summary_matrix(ref, ours)
    if not names:
        return Test(policy=policy, feature="summary vector", test="energy", p=1.0,
                    detail="no summary varies")
    dist = cdist(np.concatenate([a, b]), np.concatenate([a, b]))
    n = len(a)

    def energy(x: np.ndarray, y: np.ndarray) -> float:
        return float(2 * dist[np.ix_(x, y)].mean() - dist[np.ix_(x, x)].mean()
                     - dist[np.ix_(y, y)].mean())

    res = stats.permutation_test((np.arange(n), np.arange(n, len(dist))), energy,
                                 permutation_type="independent", vectorized=False,
                                 n_resamples=permutations, alternative="greater",
                                 rng=np.random.default_rng(derive_seed(seed, _TAG, 5,
                                                                       policy_index(policy))))
    gaps = np.abs(b.mean(axis=0) - a.mean(axis=0))
    top = ", ".join(f"{names[j]} ({gaps[j]:.2f} SD)" for j in np.argsort(-gaps)[:3])
    return Test(policy=policy, feature=f"summary vector ({len(names)} summaries)", test="energy",
                p=float(res.pvalue), detail=f"energy distance {res.statistic:.3g}; largest mean "
                                            f"gaps: {top}")


def detectable_d(n_ref: int, n_ours: int, alpha: float, power: float = POWER) -> float:
    """The standardised mean difference a two-sided test at ``alpha`` detects with ``power``
    (normal approximation), with ``n_ref`` and ``n_ours`` episodes per side."""
    z = stats.norm.isf(alpha / 2) + stats.norm.ppf(power)
    return float(z * math.sqrt(1 / n_ref + 1 / n_ours))


def episodes_for(d: float, alpha: float, power: float = POWER) -> int:
    """Episodes per side for :func:`detectable_d` to reach ``d``."""
    z = stats.norm.isf(alpha / 2) + stats.norm.ppf(power)
    return math.ceil(2 * (z / d) ** 2)


# ------------------------------------------------------------------------------ the layer
def compare_samples(samples: Mapping[str, tuple[Sample, Sample]], alpha: float,
                    permutations: int, seed: int) -> tuple[list[Test], list[Test]]:
    """Every test over the policies' samples: the univariate family Holm-corrected at
    ``alpha / 2``, the energy tests Bonferroni at ``alpha / 2`` over the policies."""
    family = [t for kind, (r, o) in samples.items() for t in feature_tests(kind, r, o)]
    if family:
        for t, adj in zip(family, holm(np.asarray([t.p for t in family])), strict=True):
            t.p_adjusted = float(adj)
            t.rejected = adj < alpha / 2
    energy = [energy_test(kind, r, o, permutations, seed) for kind, (r, o) in samples.items()]
    for t in energy:
        t.p_adjusted = min(1.0, t.p * len(energy))
        t.rejected = t.p_adjusted < alpha / 2
    return family, energy


def model_episodes(n: int) -> int:
    """Reference episodes the one-step model is fitted on (apart from both samples)."""
    return max(8, n // 5)


class ReferenceCache:
    """The reference side of runs that share it: the reference's sample and the one-step
    model's held-out episodes of a policy are functions of ``(seed, policy, N, horizon)``
    alone (their seeds; see :func:`episode_rngs`), so runs of the layer on one spec and
    settings with the same seed draw exactly the same reference episodes whatever the
    translation is. ``horizon_study mutants`` runs every mutant against one reference side
    through this; a run with another spec or settings is refused (its reference would differ).
    """

    def __init__(self, spec: EnvSpec, settings: Settings) -> None:
        self.spec, self.settings = spec, settings
        self.samples: dict[tuple[Any, ...], Sample] = {}
        self.hits = 0

    def get(self, spec: EnvSpec, settings: Settings, key: tuple[Any, ...],
            make: Callable[[], Sample]) -> Sample:
        if spec is not self.spec or settings != self.settings:
            raise ValueError(f"a ReferenceCache of {self.spec.name} is used for another "
                             f"spec or settings ({spec.name})")
        if key in self.samples:
            self.hits += 1
        else:
            self.samples[key] = make()
        return self.samples[key]


def check_rollout_distribution(spec: EnvSpec, episodes: int | None = None, seed: int = 0,
                               progress: Callable[[int, int], None] | None = None,
                               env: Environment | None = None, *,
                               policy_run: str | None = None, alpha: float = ALPHA,
                               executor: Executor | None = None,
                               reference: Callable[..., Reference] | None = None,
                               settings: Settings | None = None,
                               cache: ReferenceCache | None = None) -> LayerResult:
    """The layer over ``episodes`` episodes per side and policy (default: the environment's
    ``Verification.rollout_distribution`` N). ``policy_run``: a training run of this
    environment whose policy is run too. ``reference``: another reference factory (the
    calibration runs a float32-perturbed copy of the reference, or the reference itself, in
    the translation's place: see :func:`reference_vs`). ``cache``: the reference side of
    earlier runs with this seed (:class:`ReferenceCache`), reused rather than drawn again."""
    t0 = time.perf_counter()
    env = env if env is not None else spec.make()
    settings = settings or settings_for(spec, env)
    if settings is None:
        return LayerResult(LAYER, passed=True, counts={"episodes": 0},
                           notes=["this environment declares no Verification.rollout_distribution"])
    if policy_run is not None:
        check_policy_run(spec, policy_run)
    n = settings.episodes if episodes is None else episodes
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"--horizon-episodes must be an integer >= 2, got {n!r}")
    horizon = settings.horizon or spec.verification.max_rollout_steps
    v = spec.verification
    kinds = [k for k in settings.policies
             if (k == "random" and (v.random_action or v.legal_action) is not None)
             or (k == "scripted" and (v.scripted_policy or v.scripted_action) is not None)
             or k in settings.named]
    if not kinds and policy_run is None:
        raise ValueError(f"{spec.name}: Verification.rollout_distribution names the policies "
                         f"{', '.join(settings.policies) or 'none'}, none of which it declares")
    if policy_run is not None:
        kinds.append("trained")
    executor = executor if executor is not None else (active() or InProcess())
    cols = find_columns(spec, settings, seed)
    result = LayerResult(LAYER, passed=True, counts={"episodes": 0, "steps": 0, "tests": 0},
                         complete=False)
    samples: dict[str, tuple[Sample, Sample]] = {}
    total = 2 * n * len(kinds)
    for kind in kinds:
        def draw_reference(kind: str = kind) -> Sample:
            ref = Sample()
            parts = reference_sample(executor, spec, settings, cols, kind, policy_run, seed, n,
                                     horizon)
            with contextlib.closing(parts):
                for part in parts:
                    ref.extend(part)
                    if progress:
                        progress(result.counts["episodes"] + len(ref.rows), total)
            return ref

        key = (kind, policy_run, seed, n, horizon)
        ref = draw_reference() if cache is None else \
            cache.get(spec, settings, (REFERENCE_SIDE, *key), draw_reference)
        result.counts["episodes"] += n
        policy = make_batch_policy(kind, spec, policy_run, settings)
        if reference is None:
            ours = translation_sample(env, spec, settings, cols, policy, kind, seed, n, horizon)
        else:  # calibration: another reference in the translation's place, with its seeds
            ours = reference_episodes(spec, settings, cols, policy, kind, seed, list(range(n)),
                                      horizon, reference(), side=TRANSLATION_SIDE)
        result.counts["episodes"] += n
        # The one-step model, from reference episodes of neither sample (its own seeds).
        held_out, model = Sample(), None
        if settings.column_summaries:
            def draw_held_out(policy: BatchPolicy = policy, kind: str = kind) -> Sample:
                return reference_episodes(spec, settings, cols, policy, kind, seed,
                                          list(range(model_episodes(n))), horizon,
                                          side=MODEL_SIDE)

            held_out = draw_held_out() if cache is None else \
                cache.get(spec, settings, (MODEL_SIDE, *key), draw_held_out)
            model = fit_model(held_out, len(cols.names))
        for sample in (ref, ours):
            summarise_all(sample, cols.names, horizon, settings.windows, model, settings)
        result.counts["steps"] += ref.steps + ours.steps + held_out.steps
        samples[kind] = (ref, ours)
        if progress:
            progress(result.counts["episodes"], total)
    family, energy = compare_samples(samples, alpha, settings.permutations, seed)
    tests = family + energy
    result.counts["tests"] = len(tests)
    result.counts["rejected"] = int(sum(t.rejected for t in tests))
    rejected = sorted((t for t in tests if t.rejected), key=lambda t: t.p)
    for t in rejected[:5]:
        result.failures.append(_failure(t, seed))
    result.passed = not rejected
    _notes(result, samples, family, energy, settings, n, alpha, horizon)
    result.data = {"tests": [dataclasses.asdict(t) | {"direction": t.direction} for t in
                             sorted(tests, key=lambda t: t.p)],
                   "episodes_per_side": n, "horizon": horizon, "alpha": alpha,
                   "windows": windows(horizon, settings.windows),
                   "detectable": _detectable(samples, family, n, alpha)}
    result.complete = True
    result.seconds = time.perf_counter() - t0
    return result


def _failure(t: Test, seed: int) -> Failure:
    diffs = []
    if np.isfinite(t.d):
        diffs.append(FieldDiff(f"mean of {t.feature}", t.reference_mean, t.translation_mean,
                               abs(t.translation_mean - t.reference_mean),
                               f"adjusted p >= alpha (p={t.p_adjusted:.2g}; d={t.d:+.2f})"))
    return Failure(layer=LAYER, test_id=f"{LAYER}[{t.policy}: {t.feature}: {t.test}]",
                   seed=seed, message="the translation's episodes differ from the reference's: "
                                      + t.describe(), diffs=diffs)


def _detectable(samples: Mapping[str, tuple[Sample, Sample]], family: list[Test], n: int,
                alpha: float) -> list[dict[str, Any]]:
    """Per summary: the smallest change of its mean the t-test detects with 80% power at this
    N at the family's first Holm step (a bound: later steps are less strict), in its units and
    relative to the reference's mean."""
    m = max(1, len(family))
    d = detectable_d(n, n, alpha / 2 / m)
    out = []
    for kind, (ref, _) in samples.items():
        for name in ref.summaries[0]:
            a = np.asarray([s[name] for s in ref.summaries])
            a = a[np.isfinite(a)]
            if len(a) < MIN_PER_SIDE or np.std(a) == 0:
                continue
            change = d * float(np.std(a, ddof=1)) * math.sqrt(n / max(len(a), 1))
            mean = float(np.mean(a))
            out.append({"policy": kind, "feature": name, "change": change,
                        "relative": change / abs(mean) if mean else math.inf})
    return sorted(out, key=lambda r: r["relative"])


def _notes(result: LayerResult, samples: Mapping[str, tuple[Sample, Sample]],
           family: list[Test], energy: list[Test], settings: Settings, n: int, alpha: float,
           horizon: int) -> None:
    m = max(1, len(family))
    d = detectable_d(n, n, alpha / 2 / m)
    result.notes.append(
        f"{n} episodes per side and policy ({', '.join(samples)}), horizon {horizon} steps in "
        f"{settings.windows} windows; {len(family)} univariate tests (KS and Welch t per "
        f"summary, chi-square on termination causes) Holm-corrected at {alpha / 2:g}, "
        f"{len(energy)} energy-distance permutation tests at {alpha / 2:g} (Bonferroni)")
    for kind, (r, o) in samples.items():
        lens = np.asarray([s["length"] for s in r.summaries])
        lo = np.asarray([s["length"] for s in o.summaries])
        result.notes.append(f"[{kind}] mean length {lens.mean():.1f} (reference) vs "
                            f"{lo.mean():.1f} (translation); mean return "
                            f"{np.mean([s['return'] for s in r.summaries]):.4g} vs "
                            f"{np.mean([s['return'] for s in o.summaries]):.4g}")
    for t in energy:
        result.notes.append(t.describe())
    for t in sorted(family, key=lambda t: t.p)[:3]:
        result.notes.append("smallest p: " + t.describe())
    result.notes.append(
        f"power: at N={n} a summary's mean shift of d={d:.2f} pooled SDs is detected with "
        f"{POWER:.0%} power (t-test at the first Holm step, alpha {alpha / 2 / m:.2g})")
    sensitive = _detectable(samples, family, n, alpha)[:3]
    if sensitive:
        result.notes.append("most sensitive summaries (smallest detectable change of the mean): "
                            + "; ".join(f"[{s['policy']}] {s['feature']}: {s['change']:.3g} "
                                        f"({100 * s['relative']:.2g}%)" for s in sensitive))
    if d > settings.effect:
        need = episodes_for(settings.effect, alpha / 2 / m)
        result.warnings.append(
            f"too few episodes for the requested power: at N={n} per side the smallest "
            f"standardised effect detected with {POWER:.0%} power is d={d:.2f}, above the "
            f"requested d={settings.effect:g}; use --horizon-episodes {need} or more")


def reference_vs(spec: EnvSpec, other: Callable[..., Reference], episodes: int | None = None,
                 seed: int = 0, alpha: float = ALPHA, settings: Settings | None = None
                 ) -> LayerResult:
    """Calibration: the layer with ``other`` (the reference itself, or a float32-perturbed copy)
    in the translation's place, each side with its own seeds: every rejection is a false
    alarm."""
    return check_rollout_distribution(spec, episodes, seed, reference=other, alpha=alpha,
                                      settings=settings)
