"""L3 rollout: do whole episodes match?

Each episode starts from the reference's reset state for a seed (injected once through the
bridge), then both sides run the same action sequence in lockstep with no re-sync: the
translation uses its OWN sampler, so a wrong sampler fails here too. Discrete games must match
exactly. For floating-point physics the tolerance is calibrated instead of chosen: three copies
of the reference perturbed at float32 rounding level run the same actions, and the translation
must stay within ten times their largest divergence (never tighter than the one-step
tolerance), up to the lockstep horizon: the step where that envelope reaches 1e-3 or a copy's
episode ends differently.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jax
import numpy as np

from envport.core.api import Environment
from envport.core.reference import Reference, RefState, index_state
from envport.core.registry import EnvSpec
from envport.verify.compare import compare_fields, step_fields, within
from envport.verify.interaction import translation
from envport.verify.policies import make_policy
from envport.verify.report import Failure, LayerResult

ENVELOPE_FACTOR = 10.0
PERTURBED_COPIES = 3
LOCKSTEP_EPS = 1e-3  # the paper's epsilon: past it, an envelope no longer means "in lockstep"


@dataclass
class Episode:
    seed: int
    policy: str
    state0: RefState
    actions: list[Any] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)  # compared fields after each step
    states: list[RefState] = field(default_factory=list)  # reference state after each step
    tapes: list[dict[str, np.ndarray]] = field(default_factory=list)


def reference_episode(ref: Reference, act: Callable, seed: int, policy: str, max_steps: int,
                      rng: np.random.Generator) -> Episode:
    obs = ref.reset(seed)
    ep = Episode(seed, policy, ref.get_state())
    for _ in range(max_steps):
        action = act(obs, rng)
        obs, reward, terminated, truncated, _ = ref.step(action)
        state = ref.get_state()
        ep.actions.append(action)
        ep.states.append(state)
        ep.steps.append(step_fields(state, obs, reward, terminated, truncated))
        ep.tapes.append(ref.tape())
        if terminated or truncated:
            break
    return ep


def replay(ref: Reference, ep: Episode) -> list[dict[str, Any]]:
    """The same seed and actions on another reference instance (the float32-perturbed copy)."""
    ref.reset(ep.seed)
    out = []
    for action in ep.actions:
        obs, reward, terminated, truncated, _ = ref.step(action)
        out.append(step_fields(ref.get_state(), obs, reward, terminated, truncated))
        if terminated or truncated:
            break
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


def translation_rollouts(env: Environment, spec: EnvSpec, episodes: list[Episode]
                         ) -> list[list[dict[str, Any]]]:
    bridge = spec.make_bridge()
    horizon = _pad_len(max(len(e.actions) for e in episodes))
    batch = _pad_len(len(episodes)) if len(episodes) > 64 else len(episodes)
    space = env.action_space()
    actions = np.zeros((batch, horizon, *space.shape), dtype=space.dtype)
    for i, e in enumerate(episodes):
        actions[i, : len(e.actions)] = np.asarray(e.actions, dtype=space.dtype)
    padded = episodes + [episodes[0]] * (batch - len(episodes))
    state0 = bridge.to_jax({k: np.stack([np.asarray(e.state0[k]) for e in padded])
                            for k in episodes[0].state0})
    keys = jax.vmap(jax.random.key)(np.asarray([e.seed for e in padded], dtype=np.uint32))
    states, obs, rew, term, trunc = batched_rollout(env)(state0, actions, keys)
    states_np = bridge.from_jax(states)
    obs, rew, term, trunc = map(np.asarray, (obs, rew, term, trunc))
    out = []
    for i, e in enumerate(episodes):
        n = len(e.actions)
        ep_states = {k: v[i, :n] for k, v in states_np.items()}
        out.append([step_fields(index_state(ep_states, t), obs[i, t], rew[i, t], term[i, t],
                                trunc[i, t]) for t in range(n)])
    return out


def envelope(spec: EnvSpec, expected: list[dict[str, Any]],
             copies: list[list[dict[str, Any]]]) -> tuple[list[dict[str, np.ndarray]], int]:
    """Per-step allowed error, and the lockstep horizon: the first step where a perturbed copy's
    episode flags differ or the envelope reaches ``LOCKSTEP_EPS``."""
    flags_from = len(expected)
    bounds: list[dict[str, np.ndarray]] = []
    running: dict[str, np.ndarray] = {}
    for t, exp in enumerate(expected):
        for copy in copies:
            if t >= len(copy) or any(
                bool(exp[k]) != bool(copy[t][k]) for k in ("terminated", "truncated")
            ):
                flags_from = min(flags_from, t)
        step_bounds = {}
        for k, v in exp.items():
            if k in ("terminated", "truncated"):
                continue
            e = np.asarray(v, np.float64)
            d = np.max([np.abs(e - np.asarray(c[min(t, len(c) - 1)][k], np.float64))
                        for c in copies], axis=0)
            running[k] = np.maximum(running.get(k, d), d)
            tol = spec.tolerance_for(k)
            floor = tol.atol + tol.rtol * np.abs(e)
            step_bounds[k] = np.maximum(floor, ENVELOPE_FACTOR * running[k])
            if np.max(ENVELOPE_FACTOR * running[k]) >= LOCKSTEP_EPS:
                flags_from = min(flags_from, t)
        bounds.append(step_bounds)
    return bounds, flags_from


def first_divergence(spec: EnvSpec, expected: list[dict[str, Any]], got: list[dict[str, Any]],
                     bounds: list[dict[str, np.ndarray]] | None, flags_from: int) -> int | None:
    for t, (exp, g) in enumerate(zip(expected, got, strict=True)):
        if t > flags_from:
            return None  # the reference's own float32 copy ended differently: stop comparing
        for k, v in exp.items():
            if k in ("terminated", "truncated") and t == flags_from:
                continue
            bound = None if bounds is None else bounds[t].get(k)
            if not within(v, g[k], spec.tolerance_for(k), bound):
                return t
    return None


def check_rollout(spec: EnvSpec, episodes: int = 20, seed: int = 0,
                  progress: Callable[[int, int], None] | None = None,
                  env: Environment | None = None,
                  on_partial: Callable[[LayerResult], None] | None = None) -> LayerResult:
    t0 = time.perf_counter()
    env = env or translation(spec)
    ref = spec.make_reference()
    copies = ([spec.make_perturbed_reference(copy=i) for i in range(PERTURBED_COPIES)]
              if spec.make_perturbed_reference else [])
    rng = np.random.default_rng(seed)
    policies = {k: make_policy(k, spec, ref) for k in ("random", "scripted")}
    result = LayerResult("rollout", passed=True, counts={"episodes": 0, "steps": 0},
                         complete=False)
    done_eps: list[Episode] = []
    horizons: list[int] = []
    chunk = 32
    for start in range(0, episodes, chunk):
        batch = []
        for i in range(start, min(start + chunk, episodes)):
            kind = "random" if i % 2 == 0 else "scripted"
            batch.append(reference_episode(ref, policies[kind], seed * 100_003 + i, kind,
                                           spec.max_rollout_steps, rng))
        got_all = translation_rollouts(env, spec, batch)
        for ep, got in zip(batch, got_all, strict=True):
            bounds, flags_from = None, len(ep.steps)
            if copies:
                bounds, flags_from = envelope(spec, ep.steps, [replay(c, ep) for c in copies])
            t = first_divergence(spec, ep.steps, got, bounds, flags_from)
            result.counts["episodes"] += 1
            result.counts["steps"] += min(len(ep.steps), flags_from + 1) if t is None else t + 1
            if t is not None:
                result.passed = False
                if len(result.failures) < 5:
                    diffs = compare_fields(ep.steps[t], got[t], spec.tolerance_for,
                                           None if bounds is None else bounds[t])
                    result.failures.append(Failure(
                        layer="rollout", test_id=f"rollout[{ep.policy}]",
                        message=f"lockstep episode diverges at step {t} of {len(ep.steps)} in "
                                f"{', '.join(d.field for d in diffs)}",
                        seed=ep.seed, state=ep.states[t - 1] if t else ep.state0,
                        action=ep.actions[t], draws=ep.tapes[t], step=t, diffs=diffs))
            horizons.append(flags_from)
        done_eps += batch
        result.seconds = time.perf_counter() - t0
        if progress:
            progress(len(done_eps), episodes)
        if on_partial:
            on_partial(result)
    result.complete = True
    lengths = [len(e.actions) for e in done_eps]
    result.notes.append(f"episode length mean {np.mean(lengths):.0f}, max {max(lengths)} steps")
    cut = [h for h, n in zip(horizons, lengths, strict=True) if h < n]
    if copies:
        result.notes.append(
            f"lockstep horizon (envelope < {LOCKSTEP_EPS:g}): {len(cut)} of {len(lengths)} "
            "episodes compared up to it" + (f", at step {min(cut)} to {max(cut)}" if cut else ""))
    result.seconds = time.perf_counter() - t0
    return result
