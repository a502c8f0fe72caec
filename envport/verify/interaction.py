"""L2 interaction: does one step match from ANY state?

States are sampled from reference rollouts under several policies (random, scripted,
novelty-seeking) and perturbed; each is injected into both sides with the reference's own random
draws, one action is applied, and next state, observation, reward, terminated and truncated are
compared field by field. Failing cases are shrunk towards a plain reset state.

Params are data: where the environment can sample non-default params
(``Verification.sample_params``), a share of the states (:data:`PARAMS_SHARE`) comes from
:data:`PARAM_SETS` references built with other params (``make_reference(params=p)``), and the
translation steps every case in the same single vmapped call with each case's own params as a
batched pytree, as a user's domain randomisation would.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.api import Environment, tree_stack
from envport.core.reference import Bridge, Reference, RefState, index_state, stack_states
from envport.core.registry import EnvSpec
from envport.core.seeds import derive_seed
from envport.verify.compare import compare_fields, step_fields
from envport.verify.policies import (
    POLICIES,
    can_draw_actions,
    draw_action,
    make_policy,
    visit_states,
)
from envport.verify.report import Failure, LayerResult

MAX_FAILURES_KEPT = 5
MAX_SHRUNK = 2
PARAM_SETS = 4  # references built with non-default params, where the environment has them
PARAMS_SHARE = 0.25  # of the states, split between them


@dataclass
class Case:
    state: RefState
    action: Any
    origin: str
    expected: dict[str, Any] | None = None
    tape: dict[str, np.ndarray] | None = None
    params: int | None = None  # index of the non-default param set, None: the default


# Keyed by the factory itself, which the dict keeps alive: an id() of a variant's lambda could
# be reused by another mode's once the first is collected.
_TRANSLATIONS: dict[Callable[..., Environment], Environment] = {}


def translation(spec: EnvSpec) -> Environment:
    """One translation object per spec, so jitted code is compiled once per session."""
    if spec.make not in _TRANSLATIONS:
        _TRANSLATIONS[spec.make] = spec.make()
    return _TRANSLATIONS[spec.make]


@cache
def batched_transition(env: Environment) -> Callable:
    """Jitted ``(states, actions, draws, params)`` -> results, every argument batched."""
    return jax.jit(jax.vmap(env.transition))


class StaticParamsError(ValueError):
    """A param the reference can change is a compile-time constant in the translation."""


def with_params(env: Environment, overrides: dict[str, Any]) -> Any:
    """The translation's default params with ``overrides`` as arrays of each leaf's dtype."""
    default = env.default_params()
    static = sorted(f.name for f in dataclasses.fields(default)
                    if f.metadata.get("static") and f.name in overrides)
    if static:
        raise StaticParamsError(
            f"params are not data: {', '.join(static)} of {type(default).__name__} "
            f"{'is a static field' if len(static) == 1 else 'are static fields'}, so the "
            "translation cannot be stepped with other values in one compiled call; make "
            "them pytree leaves (plain fields) read from the `params` argument")
    return dataclasses.replace(default, **{
        k: jnp.asarray(v, jnp.result_type(getattr(default, k))) for k, v in overrides.items()})


def step_reference(ref: Reference, state: RefState, action: Any) -> tuple[dict, dict]:
    ref.set_state(state)
    obs, reward, terminated, truncated, _ = ref.step(action)
    return step_fields(ref.get_state(), obs, reward, terminated, truncated), ref.tape()


def step_cases(cases: list[Case], refs: list[Reference], remake: Callable[[int], Reference],
               progress: Callable[[int, int], None] | None = None) -> tuple[list[Case], list[str]]:
    """Each case stepped by its reference (``refs[0]``, or ``refs[params + 1]``): the cases
    kept, and ``"origin: error"`` for each state the reference refused to take back (Showdown's
    ``fromJSON`` of its own ``toJSON`` of some transformed Pokemon), which no translation can be
    compared on: left out, for the caller to count and say. A refused injection may leave the
    reference mid-import: ``remake(k)`` replaces ``refs[k]``."""
    kept: list[Case] = []
    refused: list[str] = []
    for i, c in enumerate(cases):
        k = 0 if c.params is None else c.params + 1
        try:
            c.expected, c.tape = step_reference(refs[k], c.state, c.action)
        except ValueError as e:
            refused.append(f"{c.origin}: {e}")
            refs[k] = remake(k)
            continue
        kept.append(c)
        if progress and i % 50 == 0:
            progress(i, len(cases))
    return kept, refused


def step_translation(env: Environment, bridge: Bridge, cases: list[Case],
                     param_sets: list[Any] | None = None) -> list[dict[str, Any]]:
    """One vmapped, jitted transition over every case, each with its params (``param_sets``:
    the translation's params per non-default set); returns per-case comparable fields."""
    states = bridge.to_jax(stack_states([c.state for c in cases]))
    draws = tree_stack([bridge.draws(c.tape or {}, c.state) for c in cases])
    space = env.action_space()
    actions = np.asarray([c.action for c in cases], dtype=space.dtype)
    default = jax.tree_util.tree_map(jnp.asarray, env.default_params())
    params = tree_stack([default if c.params is None else (param_sets or [])[c.params]
                         for c in cases])
    res = batched_transition(env)(states, actions, draws, params)
    ref_form = bridge.from_jax(res.state)
    obs, rew = np.asarray(res.obs), np.asarray(res.reward)
    term, trunc = np.asarray(res.terminated), np.asarray(res.truncated)
    return [step_fields(index_state(ref_form, i), obs[i], rew[i], term[i], trunc[i])
            for i in range(len(cases))]


def sample_cases(spec: EnvSpec, ref: Reference, n: int, seed: int,
                 policies: tuple[str, ...] = POLICIES, perturb_fraction: float = 0.25,
                 min_episodes: int = 4, max_episodes: int = 200) -> list[Case]:
    assert can_draw_actions(spec), f"{spec.name} declares no way to draw an action"
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
                # ValueError: no nearby state the reference takes back (Showdown cannot import
                # its own toJSON of some transformed Pokemon): the visited state is the case,
                # and its own injection decides it (``recorded.record`` leaves out a source's
                # state it refuses, and says so)
                with contextlib.suppress(ValueError):
                    state, origin = spec.verification.perturb(state, rng), f"{kind}+perturbed"
            cases.append(Case(state, draw_action(spec, state, rng), origin))
    return cases[:n]


def shrink(spec: EnvSpec, env: Environment, bridge: Bridge, ref: Reference, case: Case,
           baseline: RefState, param_sets: list[Any] | None = None) -> Case:
    """Replace each field by its value in a plain reset state while the divergence persists
    (``ref``: the reference with the case's params)."""

    def still_fails(state: RefState) -> Case | None:
        try:
            expected, tape = step_reference(ref, state, case.action)
        except Exception:
            # A state the reference refuses (an inconsistent mix of fields, or one where the
            # case's action is illegal in a masked game): this field cannot be shrunk.
            return None
        trial = Case(state, case.action, case.origin, expected, tape, case.params)
        got = step_translation(env, bridge, [trial], param_sets)[0]
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
    sampler = spec.verification.sample_params
    rng = np.random.default_rng(derive_seed(seed, 7))
    overrides = [sampler(rng) for _ in range(PARAM_SETS)] if sampler is not None else []
    try:
        param_sets = [with_params(env, p) for p in overrides]
    except StaticParamsError as e:
        return LayerResult("interaction", passed=False, seconds=time.perf_counter() - t0,
                           counts={"states": 0}, failures=[Failure(
                               layer="interaction", test_id="interaction[params]",
                               message=str(e), seed=seed)])
    n_other = round(states * PARAMS_SHARE) if overrides else 0
    cases = sample_cases(spec, ref, states - n_other, seed)
    refs = [ref] + [spec.make_reference(params=p) for p in overrides]
    per_set = -(-n_other // len(overrides)) if overrides else 0
    for j in range(len(overrides)):
        count = min(per_set, n_other - j * per_set)
        if count < 1:
            break
        more = sample_cases(spec, refs[j + 1], count, derive_seed(seed, 8, j))
        for c in more:
            c.params, c.origin = j, f"{c.origin}, params {j}"
        cases += more
    n_drawn = len(cases)
    cases, refused = step_cases(
        cases, refs, lambda k: spec.make_reference(**({} if k == 0 else
                                                      {"params": overrides[k - 1]})), progress)
    if len(refused) > n_drawn // 2:  # not the odd state: the reference or its states are broken
        return LayerResult("interaction", passed=False, seconds=time.perf_counter() - t0,
                           counts={"states": len(cases)}, failures=[Failure(
                               layer="interaction", test_id="interaction[injection]",
                               message=f"the reference cannot inject {len(refused)} of the "
                                       f"{n_drawn} states (first: {refused[0]})", seed=seed)])
    got = step_translation(env, bridge, cases, param_sets)
    failures: list[Failure] = []
    n_failed = 0
    refs[0].reset(derive_seed(seed, 9))
    baseline = refs[0].get_state()
    for c, g in zip(cases, got, strict=True):
        assert c.expected is not None
        if not compare_fields(c.expected, g, spec.tolerance_for):
            continue
        n_failed += 1
        if len(failures) >= MAX_FAILURES_KEPT:
            continue
        shrunk = len(failures) < MAX_SHRUNK
        if shrunk:
            c = shrink(spec, env, bridge, refs[0 if c.params is None else c.params + 1], c,
                       baseline, param_sets)
            assert c.expected is not None
            g = step_translation(env, bridge, [c], param_sets)[0]
        assert c.expected is not None
        diffs = compare_fields(c.expected, g, spec.tolerance_for)
        params_note = "" if c.params is None else f" with params {overrides[c.params]}"
        failures.append(Failure(
            layer="interaction", test_id=f"interaction[{c.origin}]",
            message=f"one step from an injected {c.origin} state{params_note} diverges in "
                    f"{', '.join(d.field for d in diffs)}",
            seed=seed, state=c.state, action=c.action, draws=c.tape, diffs=diffs, shrunk=shrunk,
        ))
    if progress:
        progress(len(cases), len(cases))
    origins = sorted({c.origin.split(",")[0] for c in cases})
    notes = [f"states from: {', '.join(origins)}"]
    if overrides:
        notes.append(f"{sum(c.params is not None for c in cases)} of the states with "
                     f"{len(overrides)} non-default param sets (domain randomisation), stepped "
                     "in the same vmapped call")
    if refused:
        notes.append(f"{len(refused)} of {n_drawn} drawn states left out: the reference cannot "
                     f"inject them (first: {refused[0]})")
    if n_failed:
        notes.append(f"{n_failed} of {len(cases)} states diverge")
    return LayerResult("interaction", passed=n_failed == 0, seconds=time.perf_counter() - t0,
                       counts={"states": len(cases)}, failures=failures, notes=notes)
