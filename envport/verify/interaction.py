"""L2 interaction: does one step match from ANY state?

States are sampled from reference rollouts under several policies (random, scripted,
novelty-seeking) and perturbed; each is injected into both sides with the reference's own random
draws, one action is applied, and next state, observation, reward, terminated and truncated are
compared field by field. Failing cases are shrunk towards a plain reset state.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import jax
import numpy as np

from envport.core.api import Environment, tree_stack
from envport.core.reference import Bridge, Reference, RefState, index_state, stack_states
from envport.core.registry import EnvSpec
from envport.core.seeds import derive_seed
from envport.verify.compare import compare_fields, step_fields
from envport.verify.policies import POLICIES, make_policy, visit_states
from envport.verify.report import Failure, LayerResult

MAX_FAILURES_KEPT = 5
MAX_SHRUNK = 2


@dataclass
class Case:
    state: RefState
    action: Any
    origin: str
    expected: dict[str, Any] | None = None
    tape: dict[str, np.ndarray] | None = None


_TRANSLATIONS: dict[str, Environment] = {}


def translation(spec: EnvSpec) -> Environment:
    """One translation object per spec, so jitted code is compiled once per session."""
    key = f"{spec.name}:{id(spec.make)}"
    if key not in _TRANSLATIONS:
        _TRANSLATIONS[key] = spec.make()
    return _TRANSLATIONS[key]


@cache
def batched_transition(env: Environment) -> Callable:
    params = env.default_params()
    return jax.jit(jax.vmap(lambda s, a, d: env.transition(s, a, d, params)))


def step_reference(ref: Reference, state: RefState, action: Any) -> tuple[dict, dict]:
    ref.set_state(state)
    obs, reward, terminated, truncated, _ = ref.step(action)
    return step_fields(ref.get_state(), obs, reward, terminated, truncated), ref.tape()


def step_translation(env: Environment, bridge: Bridge, cases: list[Case]) -> list[dict[str, Any]]:
    """One vmapped, jitted transition over every case; returns per-case comparable fields."""
    states = bridge.to_jax(stack_states([c.state for c in cases]))
    draws = tree_stack([bridge.draws(c.tape or {}, c.state) for c in cases])
    space = env.action_space()
    actions = np.asarray([c.action for c in cases], dtype=space.dtype)
    res = batched_transition(env)(states, actions, draws)
    ref_form = bridge.from_jax(res.state)
    obs, rew = np.asarray(res.obs), np.asarray(res.reward)
    term, trunc = np.asarray(res.terminated), np.asarray(res.truncated)
    return [step_fields(index_state(ref_form, i), obs[i], rew[i], term[i], trunc[i])
            for i in range(len(cases))]


def sample_cases(spec: EnvSpec, ref: Reference, n: int, seed: int,
                 policies: tuple[str, ...] = POLICIES, perturb_fraction: float = 0.25,
                 min_episodes: int = 4, max_episodes: int = 200) -> list[Case]:
    assert spec.verification.random_action is not None
    rng = np.random.default_rng(seed)
    per_policy = -(-n // len(policies))
    cases: list[Case] = []
    for k, kind in enumerate(policies):
        act = make_policy(kind, spec, ref)
        pool: list[RefState] = []
        # Several episodes, and enough of them to choose the states from twice as many.
        ep = 0
        while ep < min_episodes or (len(pool) < 2 * per_policy and ep < max_episodes):
            episode_seed = derive_seed(seed, k, ep)
            pool += visit_states(ref, act, episode_seed,
                                 min(spec.verification.max_rollout_steps, 3000), rng)
            ep += 1
        for i in rng.choice(len(pool), size=min(per_policy, len(pool)), replace=False):
            state, origin = pool[i], kind
            if spec.verification.perturb is not None and rng.random() < perturb_fraction:
                state, origin = spec.verification.perturb(state, rng), f"{kind}+perturbed"
            cases.append(Case(state, spec.verification.random_action(rng), origin))
    return cases[:n]


def shrink(spec: EnvSpec, env: Environment, bridge: Bridge, ref: Reference, case: Case,
           baseline: RefState) -> Case:
    """Replace each field by its value in a plain reset state while the divergence persists."""

    def still_fails(state: RefState) -> Case | None:
        expected, tape = step_reference(ref, state, case.action)
        trial = Case(state, case.action, case.origin, expected, tape)
        got = step_translation(env, bridge, [trial])[0]
        return trial if compare_fields(expected, got, spec.tolerance_for) else None

    best = case
    for name in case.state:
        if np.array_equal(best.state[name], baseline[name]):
            continue
        trial = still_fails({**best.state, name: baseline[name]})
        if trial is not None:
            best = trial
    return best


def check_interaction(spec: EnvSpec, states: int = 300, seed: int = 0,
                      progress: Callable[[int, int], None] | None = None,
                      env: Environment | None = None) -> LayerResult:
    """``env`` defaults to the registered translation; pass another to verify a variant."""
    t0 = time.perf_counter()
    env = env or translation(spec)
    bridge, ref = spec.make_bridge(), spec.make_reference()
    cases = sample_cases(spec, ref, states, seed)
    for i, c in enumerate(cases):
        c.expected, c.tape = step_reference(ref, c.state, c.action)
        if progress and i % 50 == 0:
            progress(i, len(cases))
    got = step_translation(env, bridge, cases)
    failures: list[Failure] = []
    n_failed = 0
    ref.reset(seed)
    baseline = ref.get_state()
    for c, g in zip(cases, got, strict=True):
        assert c.expected is not None
        if not compare_fields(c.expected, g, spec.tolerance_for):
            continue
        n_failed += 1
        if len(failures) >= MAX_FAILURES_KEPT:
            continue
        shrunk = len(failures) < MAX_SHRUNK
        if shrunk:
            c = shrink(spec, env, bridge, ref, c, baseline)
            assert c.expected is not None
            g = step_translation(env, bridge, [c])[0]
        diffs = compare_fields(c.expected, g, spec.tolerance_for)
        failures.append(Failure(
            layer="interaction", test_id=f"interaction[{c.origin}]",
            message=f"one step from an injected {c.origin} state diverges in "
                    f"{', '.join(d.field for d in diffs)}",
            seed=seed, state=c.state, action=c.action, draws=c.tape, diffs=diffs, shrunk=shrunk,
        ))
    if progress:
        progress(len(cases), len(cases))
    origins = sorted({c.origin for c in cases})
    notes = [f"states from: {', '.join(origins)}"]
    if n_failed:
        notes.append(f"{n_failed} of {len(cases)} states diverge")
    return LayerResult("interaction", passed=n_failed == 0, seconds=time.perf_counter() - t0,
                       counts={"states": len(cases)}, failures=failures, notes=notes)
