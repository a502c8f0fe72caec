"""L1 property: does each piece behave?

Contract checks driven by hypothesis (it searches seeds, episode prefixes and actions, and shrinks
a failing example), plus the environment's own component checks against reference input/output
pairs (``EnvSpec.verification.components``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from envport.core.api import Environment
from envport.core.registry import EnvSpec
from envport.core.spaces import Box, Discrete, InvalidActionError
from envport.core.wrappers import AutoReset
from envport.verify.compare import within
from envport.verify.interaction import translation
from envport.verify.report import Failure, LayerResult


class PropertyViolation(AssertionError):
    pass


def require(ok: Any, message: str) -> None:
    if not bool(ok):
        raise PropertyViolation(message)


@cache
def compiled(env: Environment) -> dict[str, Callable]:
    params = env.default_params()
    step = jax.jit(lambda k, s, a: env.step(k, s, a, params))
    return {
        "reset": jax.jit(lambda k: env.reset(k, params)),
        "step": step,
        "transition_of_draws": jax.jit(
            lambda k, s, a: env.transition(s, a, env.sample_draws(k, s, params), params)),
        "vstep": jax.jit(jax.vmap(lambda k, s, a: env.step(k, s, a, params))),
        "sample_action": jax.jit(env.action_space(params).sample),
    }


def leaves_finite(tree: Any) -> bool:
    return all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree_util.tree_leaves(tree)
               if jnp.issubdtype(x.dtype, jnp.floating))


def structure(tree: Any) -> list[tuple[tuple[int, ...], Any]]:
    return [(x.shape, x.dtype) for x in jax.tree_util.tree_leaves(tree)]


def _leaf_name(path: tuple[Any, ...]) -> str:
    """``state.qvel``, ``obs``...: a leaf's path as the spec's ``field_tolerance`` names it."""
    parts = []
    for k in path:
        for attr in ("name", "key", "idx"):
            if hasattr(k, attr):
                parts.append(str(getattr(k, attr)))
                break
    return ".".join(parts)


def _tolerance(spec: EnvSpec, name: str) -> Any:
    while name:  # the most specific field_tolerance entry that names this leaf or a parent
        if name in spec.verification.field_tolerance:
            return spec.verification.field_tolerance[name]
        name = name.rpartition(".")[0]
    return spec.verification.tolerance


def trees_match(spec: EnvSpec, a: Any, b: Any) -> bool:
    """Equal leaf by leaf; float leaves within the environment's one-step tolerance for that
    field (``field_tolerance``, as L2 compares them; e.g. HalfCheetah's float32 velocities,
    where a batched and a single step round a stiff contact solve differently)."""
    leaves_b = jax.tree_util.tree_leaves(b)
    flat_a = jax.tree_util.tree_flatten_with_path(a)[0]
    return all(within(np.asarray(x), np.asarray(y), _tolerance(spec, _leaf_name(path)))
               for (path, x), y in zip(flat_a, leaves_b, strict=True))


def roll(env: Environment, seed: int, n_steps: int) -> tuple[Any, list[tuple[Any, Any, Any]]]:
    """Reset from ``seed``, take ``n_steps`` random actions; returns the (key, state, action)s."""
    fns = compiled(env)
    key = jax.random.key(seed)
    state, _ = fns["reset"](key)
    visited = []
    for t in range(n_steps):
        k_act, k_step = jax.random.split(jax.random.fold_in(key, t + 1))
        action = fns["sample_action"](k_act)
        visited.append((k_step, state, action))
        state = fns["step"](k_step, state, action).state
    return state, visited


# ---------------------------------------------------------------- the properties
def prop_reset(env: Environment, spec: EnvSpec, seed: int) -> None:
    fns = compiled(env)
    state, obs = fns["reset"](jax.random.key(seed))
    space = env.observation_space()
    require(obs.shape == space.shape, f"reset obs shape {obs.shape} != space {space.shape}")
    require(obs.dtype == space.dtype, f"reset obs dtype {obs.dtype} != space {space.dtype}")
    require(space.contains(obs), f"reset obs {np.asarray(obs)} outside the observation space")
    require(leaves_finite(state), "reset state has NaN or inf")
    state2, obs2 = fns["reset"](jax.random.key(seed))
    require(trees_match(spec, (state, obs), (state2, obs2)), "reset is not deterministic per key")


def prop_step(env: Environment, spec: EnvSpec, seed: int, n_steps: int) -> None:
    fns = compiled(env)
    state0, visited = roll(env, seed, n_steps)
    shape0 = structure(state0)
    space = env.observation_space()
    for t, (key, state, action) in enumerate(visited):
        res = fns["step"](key, state, action)
        where = f"(seed {seed}, step {t}, action {np.asarray(action)})"
        require(structure(res.state) == shape0, f"state shapes/dtypes change {where}")
        require(res.obs.shape == space.shape and res.obs.dtype == space.dtype,
                f"obs shape/dtype {res.obs.shape}/{res.obs.dtype} {where}")
        require(space.contains(res.obs), f"obs {np.asarray(res.obs)} outside its space {where}")
        require(res.reward.shape == () and res.reward.dtype == jnp.float32,
                f"reward must be a float32 scalar, got {res.reward.dtype}{res.reward.shape}")
        require(bool(jnp.isfinite(res.reward)), f"reward {res.reward} not finite {where}")
        for flag in ("terminated", "truncated"):
            x = getattr(res, flag)
            require(x.shape == () and x.dtype == jnp.bool_, f"{flag} must be a bool scalar")
        require(leaves_finite(res.state), f"state has NaN or inf {where}")
        again = fns["step"](key, state, action)
        require(trees_match(spec, res, again), f"step is not deterministic per key {where}")
        split = fns["transition_of_draws"](key, state, action)
        require(trees_match(spec, res, split),
                f"step != transition(sample_draws(key, state)) {where}")


def prop_jit_vmap(env: Environment, spec: EnvSpec, seed: int) -> None:
    fns = compiled(env)
    _, visited = roll(env, seed, 8)
    keys = jnp.stack([k for k, _, _ in visited])
    states = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[s for _, s, _ in visited])
    actions = jnp.stack([a for _, _, a in visited])
    batched = fns["vstep"](keys, states, actions)
    for i, (k, s, a) in enumerate(visited):
        one = fns["step"](k, s, a)
        row = jax.tree_util.tree_map(lambda x, i=i: x[i], batched)
        require(trees_match(spec, one, row), f"vmap(step)[{i}] != step (seed {seed})")


def prop_action_space(env: Environment, spec: EnvSpec, seed: int) -> None:
    space = env.action_space()
    a = compiled(env)["sample_action"](jax.random.key(seed))
    require(space.contains(a), f"action_space.sample gave {a}, not in the space")
    bad: list[Any] = []
    if isinstance(space, Discrete):
        bad = [np.int32(space.n), np.int32(-1), np.float32(0.0), np.zeros(2, np.int32)]
    elif isinstance(space, Box):
        bad = [np.full(space.shape, space.high + 1, np.float32), np.zeros((7,), np.int32)]
    for b in bad:
        try:
            space.validate(b)
        except InvalidActionError:
            continue
        raise PropertyViolation(f"action_space.validate accepted the malformed action {b!r}")


def prop_autoreset(env: Environment, spec: EnvSpec, seed: int, steps: int = 400) -> None:
    """The auto-reset wrapper keeps the final observation and starts a fresh episode."""
    wrapped = AutoReset(env)
    params = env.default_params()

    def body(state: Any, key: jax.Array) -> tuple[Any, Any]:
        k_act, k_step = jax.random.split(key)
        action = env.action_space(params).sample(k_act)
        draws = wrapped.sample_draws(k_step, state, params)
        res = wrapped.transition(state, action, draws, params)
        plain = env.transition(state, action, draws[0], params)
        fresh_state, fresh_obs = env.reset(draws[1], params)
        done = plain.terminated | plain.truncated
        final_ok = jnp.all(res.info["final_observation"] == plain.obs)
        if env.autoresets:
            next_ok = jnp.all(res.obs == plain.obs)
        else:
            expect_state = jax.tree_util.tree_map(lambda f, p: jnp.where(done, f, p),
                                                  fresh_state, plain.state)
            same = [jnp.all(x == y) for x, y in zip(jax.tree_util.tree_leaves(res.state),
                                                    jax.tree_util.tree_leaves(expect_state),
                                                    strict=True)]
            next_ok = jnp.all(jnp.stack(same)) & jnp.all(
                res.obs == jnp.where(done, fresh_obs, plain.obs))
        return res.state, (done, final_ok, next_ok)

    state0, _ = env.reset(jax.random.key(seed), params)
    keys = jax.random.split(jax.random.key(seed + 1), steps)
    _, final_ok, next_ok = jax.jit(lambda s, k: jax.lax.scan(body, s, k)[1])(state0, keys)
    require(bool(jnp.all(final_ok)), "info['final_observation'] != the step's own observation")
    require(bool(jnp.all(next_ok)), "after an episode ends the wrapper does not continue from "
                                    "a fresh reset (or changes a running episode)")


PROPERTIES: dict[str, tuple[Callable[..., None], dict[str, Any]]] = {
    "reset": (prop_reset, {"seed": st.integers(0, 2**31 - 1)}),
    "step": (prop_step, {"seed": st.integers(0, 2**31 - 1), "n_steps": st.integers(1, 30)}),
    "jit_vmap": (prop_jit_vmap, {"seed": st.integers(0, 2**31 - 1)}),
    "action_space": (prop_action_space, {"seed": st.integers(0, 2**31 - 1)}),
    "autoreset": (prop_autoreset, {"seed": st.integers(0, 2**20)}),
}


def run_property(name: str, env: Environment, spec: EnvSpec, examples: int, seed: int
                 ) -> Failure | None:
    fn, strategies = PROPERTIES[name]
    n = 2 if name == "autoreset" else examples

    @hypothesis_seed(seed)
    @settings(max_examples=n, deadline=None, database=None, print_blob=False,
              suppress_health_check=list(HealthCheck))
    @given(**strategies)
    def prop(**kwargs: Any) -> None:
        fn(env, spec, **kwargs)

    try:
        prop()
    except Exception as e:  # a crash of the translation is a failed property too
        kind = "" if isinstance(e, PropertyViolation) else f"{type(e).__name__}: "
        notes = " ".join(getattr(e, "__notes__", []))
        return Failure(layer="property", test_id=f"property[{name}]",
                       message=f"{kind}{e} {notes}".strip(), seed=seed)
    return None


def check_properties(spec: EnvSpec, examples: int = 20, seed: int = 0,
                     progress: Callable[[int, int], None] | None = None,
                     env: Environment | None = None) -> LayerResult:
    t0 = time.perf_counter()
    env = env or translation(spec)
    failures: list[Failure] = []
    names = list(PROPERTIES) + [f"component:{c}" for c in spec.verification.components]
    for i, name in enumerate(names):
        if progress:
            progress(i, len(names))
        if name.startswith("component:"):
            try:
                spec.verification.components[name.split(":", 1)[1]]()
            except AssertionError as e:
                failures.append(Failure(layer="property", test_id=f"property[{name}]",
                                        message=str(e)))
            continue
        failure = run_property(name, env, spec, examples, seed)
        if failure:
            failures.append(failure)
    if progress:
        progress(len(names), len(names))
    return LayerResult("property", passed=not failures, counts={"tests": len(names)},
                       failures=failures, seconds=time.perf_counter() - t0)
