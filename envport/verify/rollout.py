"""L3 rollout: do whole episodes match?

Each episode starts from the reference's reset state for a seed (injected once through the
bridge), then both sides run the same action sequence in lockstep with no re-sync: the
translation uses its OWN sampler, so a wrong sampler fails here too. Discrete games must match
exactly. For floating-point physics the tolerance is calibrated instead of chosen: three copies
of the reference perturbed at float32 rounding level run the same actions, and the translation
must stay within ten times their largest divergence (never tighter than the one-step
tolerance), up to the lockstep horizon: the step where that envelope reaches 1e-3 or a copy's
episode ends differently. The copies and the translation run only as far as that horizon needs
(the comparison is the same as over whole episodes), and the layer's notes report the per-step
growth of the translation's error and of the copies' divergence, and how long each stays within
1e-3.

Episode ``i`` of a run is a function of ``(seed, i)`` alone: its reset seed and its policy's
random stream both derive from them (:func:`policy_rng`). The reference side (the episode and
its copies' replays, the slow part of a long run) can then be generated anywhere: with
``envport verify --ray ADDRESS`` it runs in Ray tasks (:func:`reference_tasks`), with the
same episodes as in this process.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jax
import numpy as np

from envport.core.api import Environment
from envport.core.reference import Reference, RefState
from envport.core.registry import EnvSpec, Tolerance
from envport.core.seeds import derive_seed
from envport.scale import Executor, InProcess, active
from envport.verify.compare import compare_fields, step_fields
from envport.verify.interaction import translation
from envport.verify.policies import make_policy
from envport.verify.report import Failure, LayerResult

ENVELOPE_FACTOR = 10.0
PERTURBED_COPIES = 3
LOCKSTEP_EPS = 1e-3  # the paper's epsilon: past it, an envelope no longer means "in lockstep"
EPISODES_PER_TASK = 4  # episodes of one Ray task (amortises building the references)
CHUNK = 32  # episodes per translation scan (and per partial result)


Trajectory = dict[str, np.ndarray]  # compared field -> values with a leading step axis
FLAGS = ("terminated", "truncated")


class Recorder:
    """Collects per-step values field by field (cheap), stacks them once at the end."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {}

    def add(self, row: dict[str, Any]) -> None:
        for k, v in row.items():
            self.columns.setdefault(k, []).append(v)

    def stacked(self) -> Trajectory:
        return {k: np.stack([np.asarray(v) for v in vs]) for k, vs in self.columns.items()}


@dataclass
class Episode:
    seed: int
    policy: str
    state0: RefState
    actions: list[Any] = field(default_factory=list)
    steps: Trajectory = field(default_factory=dict)  # compared fields after each step
    tapes: Trajectory = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.actions)

    def state_before(self, t: int) -> RefState:
        if t == 0:
            return self.state0
        return {k[len("state."):]: v[t - 1] for k, v in self.steps.items()
                if k.startswith("state.")}


def run_episode(ref: Reference, seed: int, actions: Callable[[np.ndarray, int], Any],
                max_steps: int, stop: Callable[[int, dict[str, Any]], bool] | None = None
                ) -> tuple[Trajectory, Trajectory, list[Any]]:
    """Reset to ``seed`` and step with ``actions(obs, t)`` (None ends the episode); ``stop(t,
    fields)`` ends it after step t."""
    obs = ref.reset(seed)
    steps, tapes, taken = Recorder(), Recorder(), []
    for t in range(max_steps):
        action = actions(obs, t)
        if action is None:
            break
        obs, reward, terminated, truncated, _ = ref.step(action)
        taken.append(action)
        row = step_fields(ref.get_state(), obs, reward, terminated, truncated)
        steps.add(row)
        tapes.add(ref.tape())
        if terminated or truncated or (stop is not None and stop(t, row)):
            break
    return steps.stacked(), tapes.stacked(), taken


def reference_episode(ref: Reference, act: Callable, seed: int, policy: str, max_steps: int,
                      rng: np.random.Generator) -> Episode:
    state0 = (ref.reset(seed), ref.get_state())[1]
    steps, tapes, actions = run_episode(ref, seed, lambda obs, t: act(obs, rng), max_steps)
    return Episode(seed, policy, state0, actions, steps, tapes)


def replay(ref: Reference, ep: Episode, until: int | None = None) -> Trajectory:
    """The same seed and actions on another reference instance (a float32-perturbed copy).

    With ``until``, the replay ends at the first step where this copy alone puts the envelope at
    ``LOCKSTEP_EPS`` (its divergence from the episode times ``ENVELOPE_FACTOR``), or at step
    ``until``: past the lockstep horizon the envelope is never used, so :func:`envelope` and
    :func:`first_divergence` give the same answer as over a full replay."""
    n = len(ep)
    stop = None
    if until is not None:
        def stop(t: int, row: dict[str, Any]) -> bool:
            if t >= until:
                return True
            for k, v in row.items():
                if k in FLAGS:
                    continue
                d = np.abs(np.asarray(v, np.float64) - np.asarray(ep.steps[k][t], np.float64))
                if ENVELOPE_FACTOR * np.max(d, initial=0.0) >= LOCKSTEP_EPS:
                    return True
            return False
    return run_episode(ref, ep.seed, lambda obs, t: ep.actions[t] if t < n else None, n,
                       stop)[0]


def replay_copies(copies: list[Reference], ep: Episode) -> list[Trajectory]:
    """Every perturbed copy over ``ep``, each only as far as the lockstep horizon can reach (the
    first copy that reaches it bounds the others)."""
    out: list[Trajectory] = []
    until = len(ep)
    for c in copies:
        traj = replay(c, ep, until)
        out.append(traj)
        until = min(until, len(traj["reward"]) - 1)
    return out


@cache
def batched_rollout(env: Environment) -> Callable:
    params = env.default_params()

    def one(state0: Any, actions: jax.Array, key: jax.Array) -> Any:
        def body(state: Any, xs: tuple[jax.Array, jax.Array]) -> tuple[Any, Any]:
            action, t = xs
            res = env.step(jax.random.fold_in(key, t), state, action, params)
            return res.state, (res.state, res.obs, res.reward, res.terminated, res.truncated)

        steps = jax.numpy.arange(actions.shape[0])
        return jax.lax.scan(body, state0, (actions, steps))[1]

    return jax.jit(jax.vmap(one))


def _pad_len(n: int) -> int:
    return max(64, 1 << (n - 1).bit_length())


def translation_rollouts(env: Environment, spec: EnvSpec, episodes: list[Episode],
                         steps: list[int] | None = None) -> list[Trajectory]:
    """The translation over every episode's actions from its reset state, in one vmapped scan.
    ``steps``: how many steps each episode needs (all by default); the scan runs the largest,
    padded to a power of two (at least 64, to reuse compilations), and every trajectory comes
    back as long as that allows."""
    bridge = spec.make_bridge()
    need = [len(e) for e in episodes] if steps is None else steps
    horizon = _pad_len(max(need))
    batch = len(episodes)
    space = env.action_space()
    actions = np.zeros((batch, horizon, *space.shape), dtype=space.dtype)
    for i, e in enumerate(episodes):
        n = min(len(e), horizon)
        actions[i, :n] = np.asarray(e.actions[:n], dtype=space.dtype).reshape(n, *space.shape)
    state0 = bridge.to_jax({k: np.stack([np.asarray(e.state0[k]) for e in episodes])
                            for k in episodes[0].state0})
    keys = jax.vmap(jax.random.key)(np.asarray([e.seed for e in episodes], dtype=np.uint32))
    states, obs, rew, term, trunc = batched_rollout(env)(state0, actions, keys)
    states_np = bridge.from_jax(states)
    obs, rew, term, trunc = map(np.asarray, (obs, rew, term, trunc))
    out = []
    for i, e in enumerate(episodes):
        n = min(len(e), horizon)
        traj = {f"state.{k}": v[i, :n] for k, v in states_np.items()}
        traj.update(obs=obs[i, :n], reward=rew[i, :n], terminated=term[i, :n],
                    truncated=trunc[i, :n])
        out.append(traj)
    return out


def steps_within(expected: np.ndarray, got: np.ndarray, tol: Tolerance,
                 bound: np.ndarray | None = None) -> np.ndarray:
    """Per step: does every element agree (exactly, within ``tol``, or within ``bound``)?"""
    e, g = np.asarray(expected), np.asarray(got)
    if e.shape != g.shape:
        return np.zeros(len(e), bool)
    floating = np.issubdtype(e.dtype, np.floating) or np.issubdtype(g.dtype, np.floating)
    if not floating:
        ok = e.astype(np.int64) == g.astype(np.int64)
    else:
        ef, gf = e.astype(np.float64), g.astype(np.float64)
        if bound is None and tol.exact:
            ok = ef == gf
        else:
            allowed = tol.allowed(ef, steps=True) if bound is None else bound
            ok = np.abs(ef - gf) <= allowed
        ok |= np.isnan(ef) & np.isnan(gf)
    return ok.reshape(len(e), -1).all(axis=1)


def envelope(spec: EnvSpec, expected: Trajectory, copies: list[Trajectory]
             ) -> tuple[Trajectory, int]:
    """Per-step allowed error, and the lockstep horizon: the first step where a perturbed copy's
    episode flags differ or the envelope reaches ``LOCKSTEP_EPS``."""
    n = len(expected["reward"])
    horizon = n
    for c in copies:
        m = min(n, len(c["reward"]))
        differ = np.zeros(m, bool)
        for k in FLAGS:
            differ |= c[k][:m] != expected[k][:m]
        first = int(np.argmax(differ)) if differ.any() else m
        horizon = min(horizon, first)
    bounds: Trajectory = {}
    for k, e in expected.items():
        if k in FLAGS:
            continue
        e64 = e.astype(np.float64)
        worst = np.zeros_like(e64)
        for c in copies:
            m = min(n, len(c[k]))
            d = np.abs(e64[:m] - c[k][:m].astype(np.float64))
            d = np.concatenate([d, np.repeat(d[-1:], n - m, axis=0)]) if m < n else d
            worst = np.maximum(worst, d)
        running = ENVELOPE_FACTOR * np.maximum.accumulate(worst, axis=0)
        tol = spec.tolerance_for(k)
        bounds[k] = np.maximum(tol.allowed(e64, steps=True), running)
        too_wide = running.reshape(n, -1).max(axis=1) >= LOCKSTEP_EPS
        if too_wide.any():
            horizon = min(horizon, int(np.argmax(too_wide)))
    return bounds, horizon


def first_divergence(spec: EnvSpec, expected: Trajectory, got: Trajectory,
                     bounds: Trajectory | None, horizon: int) -> int | None:
    """First step (up to the horizon) where a field disagrees; flags only before the horizon."""
    n = len(expected["reward"])
    ok = np.ones(n, bool)
    steps = np.arange(n)
    for k, e in expected.items():
        field_ok = steps_within(e, got[k], spec.tolerance_for(k),
                                None if bounds is None else bounds.get(k))
        ok &= field_ok | (steps >= horizon if k in FLAGS else steps > horizon)
    bad = np.flatnonzero(~ok)
    return int(bad[0]) if bad.size else None


def step_error(expected: Trajectory, got: Trajectory, n: int | None = None) -> np.ndarray:
    """Per step: the largest absolute difference over every element of the floating state
    fields (of every floating field but the flags when the state has none; obs and reward are
    compared after a float32 cast, which would hide a float64 state's error), over the first
    ``n`` steps (both sides' common length by default)."""
    m = min(len(expected["reward"]), len(got["reward"]))
    n = m if n is None else min(n, m)
    err = np.zeros(n)

    def floating(k: str) -> bool:
        return np.issubdtype(np.asarray(expected[k]).dtype, np.floating)

    state = [k for k in expected if k.startswith("state.") and floating(k)]
    for k, e in expected.items():
        if k in FLAGS or k not in got or (state and k not in state):
            continue
        e, g = np.asarray(e[:n]), np.asarray(got[k][:n])
        if not (np.issubdtype(e.dtype, np.floating) or np.issubdtype(g.dtype, np.floating)):
            continue
        d = np.abs(e.astype(np.float64) - g.astype(np.float64)).reshape(n, -1)
        err = np.maximum(err, d.max(axis=1, initial=0.0))
    return err


class Growth:
    """Per-step error growth over a run: the translation's error and the perturbed copies'
    divergence (:func:`step_error`), and the step where the translation's first reaches
    ``LOCKSTEP_EPS``."""

    MARKS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)

    def __init__(self) -> None:
        self.errors: list[np.ndarray] = []
        self.divergence: list[np.ndarray] = []
        self.horizons: list[int] = []

    def add(self, ep: Episode, got: Trajectory, copies: list[Trajectory], horizon: int) -> None:
        self.errors.append(step_error(ep.steps, got))
        if copies:
            self.divergence.append(np.max([np.pad(d, (0, len(ep) - len(d)), constant_values=np.nan)
                                           for d in (step_error(ep.steps, c) for c in copies)],
                                          axis=0))
        self.horizons.append(horizon)

    @staticmethod
    def first_at(err: np.ndarray, eps: float) -> int:
        """Steps before the error first reaches ``eps`` (the length when it never does)."""
        over = np.flatnonzero(~(err < eps))
        return int(over[0]) if over.size else len(err)

    @staticmethod
    def _by_step(rows: list[np.ndarray]) -> list[tuple[int, float, float, int]]:
        """(step, median, 90th percentile, episodes) at each mark that at least half of the
        episodes reach (copies stop at the horizon: later marks would be a biased few)."""
        out = []
        for mark in Growth.MARKS:
            vals = np.asarray([r[mark - 1] for r in rows if len(r) >= mark], np.float64)
            vals = vals[np.isfinite(vals)]
            if 2 * vals.size >= len(rows):
                out.append((mark, float(np.median(vals)), float(np.quantile(vals, 0.9)),
                            vals.size))
        return out

    def notes(self) -> list[str]:
        if not self.errors:
            return []
        fmt = "; ".join
        out = ["translation error by step (largest state element; median / 90th "
               "percentile over episodes): "
               + fmt(f"{m}: {a:.1e} / {b:.1e}" for m, a, b, _ in self._by_step(self.errors))]
        if self.divergence:
            out.append("perturbed reference copies' divergence by step (median / 90th): "
                       + fmt(f"{m}: {a:.1e} / {b:.1e}"
                             for m, a, b, _ in self._by_step(self.divergence)))
        own = np.asarray([self.first_at(e, LOCKSTEP_EPS) for e in self.errors])
        lengths = np.asarray([len(e) for e in self.errors])
        reached = own < lengths
        out.append(f"lockstep at {LOCKSTEP_EPS:g}: the translation stays within it for "
                   f"{np.median(own):.0f} steps (median; {own.min()} to {own.max()}); "
                   f"{int(reached.sum())} of {len(own)} episodes leave it within the steps run "
                   "(up to the envelope's horizon, at least 64, or the episode's end)")
        if self.divergence:
            h = np.asarray(self.horizons)
            out.append(f"reference-vs-itself horizon (envelope reaches {LOCKSTEP_EPS:g}, or the "
                       f"episode ends): median {np.median(h):.0f} steps ({h.min()} to {h.max()})")
        # Error growth per step: the geometric mean rate from the first step to where the error
        # first reaches LOCKSTEP_EPS, over episodes where it starts above zero and reaches it.
        rates = [(np.log(e[k]) - np.log(e[0])) / k for e, k in zip(self.errors, own, strict=True)
                 if 0 < k < len(e) and e[0] > 0]
        if rates:
            g = float(np.exp(np.median(rates)))
            out.append(f"error growth: x{g:.2f} per step (median over {len(rates)} episodes, "
                       f"first step to {LOCKSTEP_EPS:g}; an e-fold every "
                       f"{1 / max(np.log(g), 1e-12):.1f} steps)")
        return out


def at_step(traj: Trajectory, t: int) -> dict[str, Any]:
    return {k: v[t] for k, v in traj.items()}


def policy_rng(seed: int, i: int) -> np.random.Generator:
    """The random stream of episode ``i``'s policy in run ``seed``: its own, so that an episode
    does not depend on the ones before it (and can be generated in another process)."""
    return np.random.default_rng(derive_seed(seed, i, 1))


def episode_kind(i: int) -> str:
    return "random" if i % 2 == 0 else "scripted"


def make_copies(spec: EnvSpec) -> list[Reference]:
    make = spec.verification.make_perturbed_reference
    return [make(copy=i) for i in range(PERTURBED_COPIES)] if make else []


def reference_side(spec: EnvSpec, ref: Reference, copies: list[Reference],
                   policies: dict[str, Callable], seed: int, i: int
                   ) -> tuple[Episode, list[Trajectory]]:
    """Episode ``i`` of run ``seed`` on the reference, and the perturbed copies' replays of it
    (:func:`replay_copies`; none for an exact environment)."""
    kind = episode_kind(i)
    ep = reference_episode(ref, policies[kind], derive_seed(seed, i), kind,
                           spec.verification.max_rollout_steps, policy_rng(seed, i))
    return ep, (replay_copies(copies, ep) if copies else [])


# A process's references for the run it last served (run id -> reference, policies, copies):
# one set per run and process, as before tasks (building them costs more than a task's episodes
# for MuJoCo: about 0.3 s for the four HalfCheetah models). Each episode resets with its own
# seed, so reuse across tasks changes nothing.
_WORKER_REFS: dict[str, tuple[Reference, dict[str, Callable], list[Reference]]] = {}


def _reference_task(task: tuple[EnvSpec, int, list[int], str]
                    ) -> list[tuple[Episode, list[Trajectory]]]:
    """A task (here or on Ray): the reference side of episodes ``indices`` of run ``run``
    (references built once per process and run)."""
    spec, seed, indices, run = task
    if run not in _WORKER_REFS:
        _WORKER_REFS.clear()
        ref = spec.make_reference()
        _WORKER_REFS[run] = (ref, {k: make_policy(k, spec, ref) for k in ("random", "scripted")},
                             make_copies(spec))
    ref, policies, copies = _WORKER_REFS[run]
    return [reference_side(spec, ref, copies, policies, seed, i) for i in indices]


def reference_tasks(executor: Executor, spec: EnvSpec, seed: int, episodes: int
                    ) -> Generator[tuple[Episode, list[Trajectory]], None, None]:
    """The reference side of episodes ``0..episodes-1``, in order, from tasks of
    :data:`EPISODES_PER_TASK` episodes on ``executor`` (a few tasks ahead of the consumer)."""
    import uuid

    run = uuid.uuid4().hex  # this call's: a worker never reuses another spec's references
    tasks = [(spec, seed, list(range(a, min(a + EPISODES_PER_TASK, episodes))), run)
             for a in range(0, episodes, EPISODES_PER_TASK)]
    with contextlib.closing(executor.imap(_reference_task, tasks)) as groups:
        for group in groups:
            yield from group


def check_rollout(spec: EnvSpec, episodes: int = 20, seed: int = 0,
                  progress: Callable[[int, int], None] | None = None,
                  env: Environment | None = None,
                  on_partial: Callable[[LayerResult], None] | None = None,
                  executor: Executor | None = None) -> LayerResult:
    """L3 over ``episodes`` episodes. The reference side runs in this process, or on
    ``executor`` (default: the enclosing :func:`envport.scale.session`'s, ``--ray``)."""
    t0 = time.perf_counter()
    env = env or translation(spec)
    executor = executor if executor is not None else (active() or InProcess())
    copies = spec.verification.make_perturbed_reference is not None
    # In this process, each task of episodes runs when its chunk needs it (as before: no
    # episode is generated ahead); on Ray, a few tasks run ahead of the translation.
    sides = reference_tasks(executor, spec, seed, episodes)
    result = LayerResult("rollout", passed=True, counts={"episodes": 0, "steps": 0},
                         complete=False)
    done_eps: list[Episode] = []
    horizons: list[int] = []
    growth = Growth()
    with contextlib.closing(sides):  # Ctrl-C or an error: the Ray tasks ahead are cancelled
        for start in range(0, episodes, CHUNK):
            _check_chunk(spec, env, [next(sides) for _ in range(start, min(start + CHUNK,
                                                                           episodes))],
                         copies, result, horizons, growth, done_eps)
            result.seconds = time.perf_counter() - t0
            if on_partial:  # before progress: a Ctrl-C raised there must not lose this chunk
                on_partial(result)
            if progress:
                progress(len(done_eps), episodes)
    return _finish(spec, result, done_eps, horizons, growth, copies, t0)


def _check_chunk(spec: EnvSpec, env: Environment,
                 generated: list[tuple[Episode, list[Trajectory]]], copies: bool,
                 result: LayerResult, horizons: list[int], growth: Growth,
                 done_eps: list[Episode]) -> None:
    """One chunk of episodes (their reference side done): the translation over all of them in
    one scan, compared step by step within each episode's envelope."""
    batch = [ep for ep, _ in generated]
    # The envelope first: the translation then runs only as far as the lockstep horizon (plus
    # the padding of its scan) instead of the whole episode.
    envelopes: list[tuple[Trajectory | None, int, list[Trajectory]]] = []
    for ep, cps in generated:
        if copies:
            envelopes.append((*envelope(spec, ep.steps, cps), cps))
        else:
            envelopes.append((None, len(ep), []))
    got_all = translation_rollouts(env, spec, batch,
                                   [min(len(ep), h + 1) for ep, (_, h, _) in
                                    zip(batch, envelopes, strict=True)])
    for ep, got, (bounds, horizon, cps) in zip(batch, got_all, envelopes, strict=True):
        if copies:
            growth.add(ep, got, cps, horizon)
        n = len(got["reward"])
        expected = {k: v[:n] for k, v in ep.steps.items()}
        if bounds is not None:
            bounds = {k: v[:n] for k, v in bounds.items()}
        t = first_divergence(spec, expected, got, bounds, horizon)
        result.counts["episodes"] += 1
        result.counts["steps"] += min(len(ep), horizon + 1) if t is None else t + 1
        horizons.append(horizon)
        if t is None:
            continue
        result.passed = False
        if len(result.failures) < 5:
            step_bounds = None if bounds is None else at_step(bounds, t)
            diffs = compare_fields(at_step(expected, t), at_step(got, t),
                                   spec.tolerance_for, step_bounds)
            result.failures.append(Failure(
                layer="rollout", test_id=f"rollout[{ep.policy}]",
                message=f"lockstep episode diverges at step {t} of {len(ep)} in "
                        f"{', '.join(d.field for d in diffs)}",
                seed=ep.seed, state=ep.state_before(t), action=ep.actions[t],
                draws=at_step(ep.tapes, t) if ep.tapes else None, step=t, diffs=diffs))
    done_eps += batch


def _finish(spec: EnvSpec, result: LayerResult, done_eps: list[Episode], horizons: list[int],
            growth: Growth, copies: bool, t0: float) -> LayerResult:
    result.complete = True
    lengths = [len(e) for e in done_eps]
    capped = sum(n >= spec.verification.max_rollout_steps for n in lengths)
    result.notes.append(f"episode length mean {np.mean(lengths):.0f}, max {max(lengths)} steps"
                        + (f"; {capped} episodes cut at the "
                           f"{spec.verification.max_rollout_steps}-step cap" if capped else ""))
    cut = [h for h, n in zip(horizons, lengths, strict=True) if h < n]
    if copies:
        result.notes.append(
            f"lockstep horizon (envelope < {LOCKSTEP_EPS:g}): {len(cut)} of {len(lengths)} "
            "episodes compared up to it" + (f", at step {min(cut)} to {max(cut)}" if cut else ""))
    if np.issubdtype(np.asarray(done_eps[0].steps["reward"]).dtype, np.floating) and copies:
        result.notes += growth.notes()
    result.seconds = time.perf_counter() - t0
    return result
