"""The layers for a *host* translation (``EnvSpec.backend == "host"``): a translation that runs
on the host (the Game Boy's Rust core) and exposes the Reference protocol itself
(:class:`envport.core.reference.HostTranslation`), with reference-form states.

The same hierarchy as for a JAX translation, each layer in the form that makes sense there:

- **L1 property**: reset is deterministic per seed and its observation lies in the declared
  space; steps give observations in the space, finite float rewards, bool flags, and are
  deterministic from a state (``get_state`` -> ``set_state`` -> the same step again); a
  get/set round trip changes nothing; the action space rejects malformed actions and ``step``
  refuses an out-of-range one; where the translation has ``step_batch``, the batch equals
  single steps; and the environment's ``components`` (the Game Boy's every-opcode check).
- **L2 interaction**: states visited by the reference under the random and scripted policies
  (with their opaque snapshots; a quarter of them through ``Verification.perturb`` where the
  environment has it), injected into both sides (``set_state``), one step each with
  the same action; every compared field must agree (the translation steps all cases in one
  ``step_batch`` call where it has one). No draws to inject: a host translation's randomness is
  in its state.
- **L3 rollout**: lockstep episodes, both sides reset from the same seed (the translation from
  its own reset, not injected), the reference's policy choosing each action, every compared
  field after every step; the first divergence fails the episode.
- **distribution** and **rollout distribution**: not run, with the reason (the translation is
  compared exactly at every step, and draws no randomness of its own).

Opaque fields (each side's own snapshot, ``HostTranslation.opaque_fields``) are never compared.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from envport.core.reference import RefState
from envport.core.registry import EnvSpec
from envport.core.seeds import derive_seed
from envport.core.spaces import Discrete, InvalidActionError
from envport.verify.compare import compare_fields, step_fields
from envport.verify.policies import draw_action, make_policy
from envport.verify.report import Failure, LayerResult
from envport.verify.rollout import episode_kind, policy_rng

Progress = Callable[[int, int], None] | None
MAX_FAILURES_KEPT = 5
KEEP_SHARE = 0.25  # L2: the share of visited states kept as cases
PERTURB_SHARE = 0.25  # L2: of the kept states, perturbed (``Verification.perturb``), as for JAX


class HostViolation(AssertionError):
    pass


def require(ok: Any, message: str) -> None:
    if not bool(ok):
        raise HostViolation(message)


_TRANSLATIONS: dict[Callable[..., Any], Any] = {}


def host_translation(spec: EnvSpec) -> Any:
    """One host translation per spec (building one may load a ROM or start a core)."""
    if spec.make not in _TRANSLATIONS:
        _TRANSLATIONS[spec.make] = spec.make()
    return _TRANSLATIONS[spec.make]


def opaque(*sides: Any) -> set[str]:
    return {f for side in sides for f in getattr(side, "opaque_fields", ())}


def plain_state(side: Any) -> RefState:
    """The compared part of ``side``'s state (its opaque snapshot left out, and not taken)."""
    try:
        state = side.get_state(include_opaque=False)
    except TypeError:  # a reference whose get_state takes no argument
        state = side.get_state()
    return {k: v for k, v in state.items() if k not in opaque(side)}


def without(state: Mapping[str, Any], fields: set[str]) -> RefState:
    return {k: v for k, v in state.items() if k not in fields}


def compared(side: Any, result: tuple[Any, ...]) -> dict[str, Any]:
    obs, reward, terminated, truncated = result[:4]
    return step_fields(plain_state(side), obs, reward, terminated, truncated)


# ------------------------------------------------------------------------------ L1
def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in a.keys() | b.keys()
                  if k not in a or k not in b or not np.array_equal(np.asarray(a[k]),
                                                                    np.asarray(b[k])))


def _check_obs(space: Any, obs: Any, where: str) -> None:
    obs = np.asarray(obs)
    require(obs.shape == space.shape, f"obs shape {obs.shape} != space {space.shape} {where}")
    require(obs.dtype == space.dtype, f"obs dtype {obs.dtype} != space {space.dtype} {where}")
    require(space.contains(obs), f"obs {obs} outside the observation space {where}")


def prop_reset(spec: EnvSpec, tr: Any, seed: int, rng: np.random.Generator) -> None:
    obs = tr.reset(seed)
    _check_obs(tr.observation_space, obs, f"(reset seed {seed})")
    first = plain_state(tr)
    obs2 = tr.reset(seed)
    require(np.array_equal(obs, obs2), f"reset({seed}) gives two observations")
    diff = _same(first, plain_state(tr))
    require(not diff, f"reset({seed}) is not deterministic: {', '.join(diff)} differ")


def prop_step(spec: EnvSpec, tr: Any, seed: int, rng: np.random.Generator) -> None:
    """Random steps: outputs well-formed, and each step deterministic from its state (which
    also shows the get/set round trip restores everything the step depends on)."""
    tr.reset(seed)
    for t in range(int(rng.integers(1, 31))):
        where = f"(seed {seed}, step {t})"
        saved = tr.get_state()
        action = draw_action(spec, saved, rng)
        out = tr.step(action)
        require(len(out) == 5, f"step must return 5 values, got {len(out)}")
        obs, reward, terminated, truncated, _ = out
        _check_obs(tr.observation_space, obs, where)
        require(isinstance(reward, float | np.floating) and math.isfinite(float(reward)),
                f"reward {reward!r} is not a finite float {where}")
        require(isinstance(terminated, bool | np.bool_) and isinstance(truncated, bool | np.bool_),
                f"terminated/truncated must be bools {where}")
        after = compared(tr, out)
        tr.set_state(saved)
        again = compared(tr, tr.step(action))
        diff = _same(after, again)
        require(not diff, f"step is not deterministic from get_state/set_state {where}: "
                          f"{', '.join(diff)} differ")
        if terminated or truncated:
            break


def prop_round_trip(spec: EnvSpec, tr: Any, seed: int, rng: np.random.Generator) -> None:
    tr.reset(seed)
    for _ in range(int(rng.integers(0, 20))):
        tr.step(draw_action(spec, tr.get_state(), rng))
    saved = tr.get_state()
    before = plain_state(tr)
    tr.reset(derive_seed(seed, 1))  # somewhere else, then back
    tr.set_state(saved)
    diff = _same(before, plain_state(tr))
    require(not diff, f"get_state -> set_state changes {', '.join(diff)} (seed {seed})")


def prop_action_space(spec: EnvSpec, tr: Any, seed: int, rng: np.random.Generator) -> None:
    space = tr.action_space
    action = draw_action(spec, {}, rng) if spec.verification.legal_action is None else None
    if action is not None:
        require(space.contains(np.asarray(action, space.dtype)),
                f"random_action gave {action!r}, outside {space}")
    if isinstance(space, Discrete):
        for bad in (np.int32(space.n), np.int32(-1), np.float32(0.0), np.zeros(2, np.int32)):
            try:
                space.validate(bad)
            except InvalidActionError:
                continue
            raise HostViolation(f"action_space.validate accepted the malformed action {bad!r}")
        tr.reset(seed)
        for bad_action in (space.n, -1):
            try:
                tr.step(bad_action)
            except (ValueError, InvalidActionError):
                continue
            raise HostViolation(f"step accepted the out-of-range action {bad_action!r}")


def prop_batch(spec: EnvSpec, tr: Any, seed: int, rng: np.random.Generator) -> None:
    """``step_batch`` from several states equals ``set_state`` + ``step`` from each."""
    if not hasattr(tr, "step_batch"):
        return
    tr.reset(seed)
    states, actions = [], []
    for _ in range(8):
        state = tr.get_state()
        action = draw_action(spec, state, rng)
        states.append(state)
        actions.append(action)
        _, _, terminated, truncated, _ = tr.step(action)
        if terminated or truncated:
            break
    batch = tr.step_batch(states, actions)
    for i, (state, action) in enumerate(zip(states, actions, strict=True)):
        tr.set_state(state)
        one = compared(tr, tr.step(action))
        got_state, obs, reward, terminated, truncated = batch[i]
        got = step_fields(without(got_state, opaque(tr)), obs, reward, terminated, truncated)
        diff = _same(one, got)
        require(not diff, f"step_batch[{i}] != step (seed {seed}): {', '.join(diff)} differ")


HOST_PROPERTIES: dict[str, Callable[[EnvSpec, Any, int, np.random.Generator], None]] = {
    "reset": prop_reset,
    "step": prop_step,
    "get_set_round_trip": prop_round_trip,
    "action_space": prop_action_space,
    "batch": prop_batch,
}


def check_host_properties(spec: EnvSpec, examples: int = 20, seed: int = 0,
                          progress: Progress = None) -> LayerResult:
    t0 = time.perf_counter()
    tr = host_translation(spec)
    names = list(HOST_PROPERTIES) + [f"component:{c}" for c in spec.verification.components]
    failures: list[Failure] = []
    for i, name in enumerate(names):
        if progress:
            progress(i, len(names))
        try:
            if name.startswith("component:"):
                spec.verification.components[name.split(":", 1)[1]]()
                continue
            for k in range(examples):
                s = derive_seed(seed, 11, i, k)
                HOST_PROPERTIES[name](spec, tr, s, np.random.default_rng(s))
        except Exception as e:  # a crash of the translation is a failed property too
            kind = "" if isinstance(e, AssertionError) else f"{type(e).__name__}: "
            failures.append(Failure(layer="property", test_id=f"property[{name}]",
                                    message=f"{kind}{e}", seed=seed))
    if progress:
        progress(len(names), len(names))
    return LayerResult("property", passed=not failures, counts={"tests": len(names)},
                       failures=failures, seconds=time.perf_counter() - t0,
                       notes=[f"host translation: {examples} examples per property"])


# ------------------------------------------------------------------------------ L2
def sample_host_cases(spec: EnvSpec, ref: Any, n: int, seed: int
                      ) -> list[tuple[RefState, Any, str]]:
    """``n`` (state, action, origin) cases from reference episodes under the random and
    scripted policies: each visited state is kept with probability :data:`KEEP_SHARE` (so the
    cases spread over many episodes), its full state (snapshot included) taken only then."""
    rng = np.random.default_rng(derive_seed(seed, 12))
    kinds = ["random"] + (["scripted"] if spec.verification.scripted_policy else [])
    per = -(-n // len(kinds))
    cases: list[tuple[RefState, Any, str]] = []
    for k, kind in enumerate(kinds):
        act = make_policy(kind, spec, ref)
        got, ep = 0, 0
        while got < per:
            obs = ref.reset(derive_seed(seed, 13, k, ep))
            for _ in range(spec.verification.max_rollout_steps):
                if rng.random() < KEEP_SHARE:
                    state, origin = ref.get_state(), kind
                    if spec.verification.perturb is not None and rng.random() < PERTURB_SHARE:
                        state = spec.verification.perturb(state, rng)
                        origin = f"{kind}+perturbed"
                    cases.append((state, draw_action(spec, state, rng), origin))
                    got += 1
                    if got >= per:
                        break
                obs, _, terminated, truncated, _ = ref.step(act(obs, rng))
                if terminated or truncated:
                    break
            ep += 1
    return cases[:n]


def check_host_interaction(spec: EnvSpec, states: int = 300, seed: int = 0,
                           progress: Progress = None) -> LayerResult:
    t0 = time.perf_counter()
    tr, ref = host_translation(spec), spec.make_reference()
    hidden = opaque(tr, ref)
    cases = sample_host_cases(spec, ref, states, seed)
    expected = []
    for i, (state, action, _) in enumerate(cases):
        ref.set_state(state)
        expected.append(compared(ref, ref.step(action)))
        if progress and i % 50 == 0:
            progress(i, len(cases))
    if hasattr(tr, "step_batch"):
        got = [step_fields(without(s, hidden), o, r, te, tu)
               for s, o, r, te, tu in tr.step_batch([c[0] for c in cases], [c[1] for c in cases])]
        how = "the translation steps every case in one step_batch call"
    else:
        got = []
        for state, action, _ in cases:
            tr.set_state(state)
            got.append(compared(tr, tr.step(action)))
        how = "the translation steps each case after set_state"
    failures: list[Failure] = []
    n_failed = 0
    for (state, action, origin), e, g in zip(cases, expected, got, strict=True):
        diffs = compare_fields(e, g, spec.tolerance_for)
        if not diffs:
            continue
        n_failed += 1
        if len(failures) < MAX_FAILURES_KEPT:
            failures.append(Failure(
                layer="interaction", test_id=f"interaction[{origin}]",
                message=f"one step from an injected {origin} state diverges in "
                        f"{', '.join(d.field for d in diffs)}",
                seed=seed, state=without(state, hidden), action=action, diffs=diffs))
    if progress:
        progress(len(cases), len(cases))
    origins = sorted({c[2] for c in cases})
    notes = [f"states from: {', '.join(origins)} (the reference's snapshots, injected into "
             f"both sides)", how]
    if n_failed:
        notes.append(f"{n_failed} of {len(cases)} states diverge")
    return LayerResult("interaction", passed=n_failed == 0, seconds=time.perf_counter() - t0,
                       counts={"states": len(cases)}, failures=failures, notes=notes)


# ------------------------------------------------------------------------------ L3
def host_episode(spec: EnvSpec, ref: Any, tr: Any, act: Callable, seed: int, kind: str,
                 rng: np.random.Generator) -> tuple[int, Failure | None]:
    """One lockstep episode; returns (steps compared, the first divergence or None)."""
    obs_ref, obs_tr = ref.reset(seed), tr.reset(seed)
    expected = step_fields(plain_state(ref), obs_ref, 0.0, False, False)
    got = step_fields(plain_state(tr), obs_tr, 0.0, False, False)
    diffs = compare_fields(expected, got, spec.tolerance_for)
    if diffs:
        return 0, Failure(layer="rollout", test_id=f"rollout[{kind}]", seed=seed, step=-1,
                          message="the reset states differ in "
                                  f"{', '.join(d.field for d in diffs)}", diffs=diffs)
    obs = obs_ref
    for t in range(spec.verification.max_rollout_steps):
        action = act(obs, rng)
        before = plain_state(ref)
        out_ref, out_tr = ref.step(action), tr.step(action)
        expected, got = compared(ref, out_ref), compared(tr, out_tr)
        diffs = compare_fields(expected, got, spec.tolerance_for)
        if diffs:
            return t + 1, Failure(
                layer="rollout", test_id=f"rollout[{kind}]", seed=seed, step=t, action=action,
                state=before, diffs=diffs,
                message=f"lockstep episode diverges at step {t} in "
                        f"{', '.join(d.field for d in diffs)}")
        obs = out_ref[0]
        if out_ref[2] or out_ref[3]:
            return t + 1, None
    return spec.verification.max_rollout_steps, None


def check_host_rollout(spec: EnvSpec, episodes: int = 20, seed: int = 0,
                       progress: Progress = None,
                       on_partial: Callable[[LayerResult], None] | None = None) -> LayerResult:
    t0 = time.perf_counter()
    tr, ref = host_translation(spec), spec.make_reference()
    kinds = ["random", "scripted"] if spec.verification.scripted_policy else ["random"]
    policies = {k: make_policy(k, spec, ref) for k in kinds}
    result = LayerResult("rollout", passed=True, counts={"episodes": 0, "steps": 0},
                         complete=False)
    lengths, identical = [], 0
    for i in range(episodes):
        kind = episode_kind(i) if len(kinds) == 2 else "random"
        steps, failure = host_episode(spec, ref, tr, policies[kind], derive_seed(seed, i), kind,
                                      policy_rng(seed, i))
        result.counts["episodes"] += 1
        result.counts["steps"] += steps
        lengths.append(steps)
        if failure is None:
            identical += 1
        else:
            result.passed = False
            if len(result.failures) < MAX_FAILURES_KEPT:
                result.failures.append(failure)
        result.seconds = time.perf_counter() - t0
        if on_partial:
            on_partial(result)
        if progress:
            progress(i + 1, episodes)
    result.complete = True
    result.notes.append(f"{identical} of {episodes} episodes identical at every step; episode "
                        f"length mean {np.mean(lengths):.0f}, max {max(lengths)} steps")
    result.seconds = time.perf_counter() - t0
    return result


# ------------------------------------------------------------------------------ the rest
NOT_RUN = {
    "distribution": "not run for a host translation: it draws no randomness of its own (an "
                    "emulator's random numbers are in its RAM, compared exactly by L2 and L3)",
    "rollout_distribution": "not run for a host translation: L3 compares it exactly at every "
                            "step of whole episodes, so there is no horizon past which only a "
                            "distribution could be compared",
}


def not_run(layer: str) -> LayerResult:
    return LayerResult(layer, passed=True, counts={}, notes=[NOT_RUN[layer]])
