"""HalfCheetah's params are data: one compiled step serves a batch of different physical and task
params (domain randomisation), each row matching Gymnasium's HalfCheetah-v5 on a MuJoCo model
edited to that row's params, within the float32 tolerances the spec verifies L2 with."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.core.api import tree_stack
from envport.envs.halfcheetah import (
    FLOAT32_FIELDS,
    FLOAT32_TOLERANCE,
    perturb,
    random_action,
    sample_params,
    scripted_policy,
)
from envport.envs.halfcheetah.bridge import HalfCheetahBridge
from envport.envs.halfcheetah.jax_env import HalfCheetah
from envport.envs.halfcheetah.reference import HalfCheetahReference
from envport.verify.compare import compare_fields, step_fields

# Param sets per call, one compiled program for all of them: more than jax_env.CHUNK and not a
# multiple of the chunk size, so the batch runs as chunks, the last padded.
N = 301


def tolerance_for(name: str):
    return FLOAT32_FIELDS.get(name, FLOAT32_TOLERANCE)


def cases(param_sets: list[dict], seed: int) -> tuple[list[dict], list[np.ndarray], list[dict]]:
    """Per param set: a state visited by the reference built with those params (random or
    scripted steps from a reset, sometimes perturbed into contact/limit/flipped states), an
    action, and what that reference's step gives from there."""
    rng = np.random.default_rng(seed)
    states, actions, expected = [], [], []
    for i, params in enumerate(param_sets):
        ref = HalfCheetahReference(params=params)
        obs = ref.reset(seed * 1000 + i)
        for _ in range(int(rng.integers(0, 40))):
            a = scripted_policy(obs, rng) if i % 2 else random_action(rng)
            obs = ref.step(a)[0]
        state = ref.get_state()
        if rng.random() < 0.5:
            state = perturb(state, rng)
        action = random_action(rng)
        ref.set_state(state)
        obs, reward, term, trunc, _ = ref.step(action)
        states.append(state)
        actions.append(action)
        expected.append(step_fields(ref.get_state(), obs, reward, term, trunc))
        ref.close()
    return states, actions, expected


def batch(env: HalfCheetah, states: list[dict], actions: list[np.ndarray],
          param_sets: list[dict]):
    bridge = HalfCheetahBridge()
    base = env.default_params()
    return (tree_stack([bridge.to_jax(s) for s in states]), jnp.asarray(np.stack(actions)),
            tree_stack([dataclasses.replace(base, **p) for p in param_sets]))


def row_diffs(res, expected: list[dict]) -> list[tuple[int, list]]:
    bridge = HalfCheetahBridge()
    bad = []
    for i, exp in enumerate(expected):
        row = jax.tree.map(lambda x, i=i: np.asarray(x[i]), res)
        got = step_fields(bridge.from_jax(row.state), row.obs, row.reward, row.terminated,
                          row.truncated)
        diffs = compare_fields(exp, got, tolerance_for)
        if diffs:
            bad.append((i, diffs))
    return bad


@pytest.fixture(scope="module")
def env():
    return HalfCheetah()


@pytest.fixture(scope="module")
def vstep(env):
    return jax.jit(jax.vmap(lambda s, a, p: env.transition(s, a, (), p)))


@pytest.fixture(scope="module")
def calls(env, vstep):
    """Two calls of the one compiled step, each on N new param sets and states."""
    rng = np.random.default_rng(0)
    out = []
    for call in range(2):
        param_sets = [sample_params(rng) for _ in range(N)]
        states, actions, expected = cases(param_sets, seed=call)
        args = batch(env, states, actions, param_sets)
        out.append((args, vstep(*args), expected))
    return out


def test_one_compiled_step_serves_301_param_sets_each_like_its_reference(env, vstep, calls):
    for call, (_, res, expected) in enumerate(calls):
        bad = row_diffs(res, expected)
        assert not bad, f"call {call}: {len(bad)} of {N} rows differ, e.g. {bad[:2]}"
    assert vstep._cache_size() == 1  # compiled once for every value of the params
    # The check is sharp: the same steps with the default params miss these references.
    (states, actions, _), _, expected = calls[-1]
    res = vstep(states, actions, tree_stack([env.default_params()] * N))
    assert vstep._cache_size() == 1
    assert len(row_diffs(res, expected)) > N // 2


@pytest.mark.slow  # 32 s (its own compile); the 301 param sets stay in the default suite
def test_traced_default_params_step_as_the_compiled_in_constants(env, vstep, calls):
    """Default params as traced data step like default params closed over as constants (the
    compiled model's values, folded by XLA): the same up to float32 rounding."""
    (states, actions, _), _, _ = calls[-1]
    base = env.default_params()
    traced = vstep(states, actions, tree_stack([base] * N))
    const = jax.jit(jax.vmap(lambda s, a: env.transition(s, a, (), base)))(states, actions)
    for field in ("qpos", "qvel"):
        t, c = (np.asarray(getattr(r.state, field)) for r in (traced, const))
        scale = np.abs(c).max(axis=1, keepdims=True)
        assert np.all(np.abs(t - c) <= 1e-5 * np.maximum(scale, 1.0)), field
    np.testing.assert_array_equal(np.asarray(traced.truncated), np.asarray(const.truncated))


@pytest.mark.slow  # 30 s (its own compile); the 301 param sets stay in the default suite
def test_params_and_states_vmapped_separately(env):
    """vmap over params outside a vmap over states (the layout rule nests: params batched at
    one level, states at the other) gives each (params, state) pair its reference's step."""
    rng = np.random.default_rng(1)
    param_sets = [sample_params(rng) for _ in range(4)]
    grid = [p for p in param_sets for _ in range(3)]
    states, actions, expected = cases(grid, seed=7)
    s, a, _ = batch(env, states, actions, grid)
    _, _, p = batch(env, states[:4], actions[:4], param_sets)
    s, a = jax.tree.map(lambda x: x.reshape(4, 3, *x.shape[1:]), (s, a))
    step = jax.jit(jax.vmap(jax.vmap(lambda s, a, p: env.transition(s, a, (), p),
                                     in_axes=(0, 0, None))))
    res = jax.tree.map(lambda x: x.reshape(12, *x.shape[2:]), step(s, a, p))
    bad = row_diffs(res, expected)
    assert not bad, f"{len(bad)} of 12 rows differ, e.g. {bad[:2]}"


def test_reset_noise_scale_and_reward_weights_are_data(env, vstep):
    base = env.default_params()
    rows = [dataclasses.replace(base, reset_noise_scale=0.01, ctrl_cost_weight=0.0),
            dataclasses.replace(base, reset_noise_scale=0.5, ctrl_cost_weight=1.0)]
    params = tree_stack(rows + [base] * (N - 2))
    keys = jax.random.split(jax.random.key(0), N)
    states, _ = jax.jit(jax.vmap(env.reset))(keys, params)
    dev = np.abs(np.asarray(states.qpos) - env.model.init_qpos)
    assert dev[0].max() <= 0.01 and dev[1].max() > 0.05 and 0.05 < dev[2:].max() <= 0.1
    res = vstep(states, jnp.ones((N, 6)), params)
    ctrl = np.asarray(res.info["reward_ctrl"])
    assert ctrl[0] == 0.0 and ctrl[1] == pytest.approx(-6.0) and ctrl[2] == pytest.approx(-0.6)


def test_bad_params_fail_early():
    with pytest.raises(ValueError, match="no param"):
        HalfCheetah(body_masses=np.ones(8))
    with pytest.raises(ValueError, match="shape"):
        HalfCheetah(body_mass=np.ones(7))
    with pytest.raises(ValueError, match="plane"):
        HalfCheetah(gravity=[0.0, 1.0, -9.81])
    with pytest.raises(ValueError, match="no param"):
        HalfCheetahReference(params={"mass": 1.0})
    with pytest.raises(ValueError, match="shape"):
        HalfCheetahReference(params={"geom_friction": np.ones(3)})


def test_the_reference_takes_the_params():
    values = sample_params(np.random.default_rng(3))
    ref = HalfCheetahReference(params={**values, "max_steps": 7})
    np.testing.assert_array_equal(ref.model.body_mass, values["body_mass"])
    np.testing.assert_array_equal(ref.model.actuator_gear[:, 0], values["actuator_gear"])
    np.testing.assert_array_equal(ref.model.opt.gravity, values["gravity"])
    assert ref.core._ctrl_cost_weight == values["ctrl_cost_weight"]
    assert ref.core._reset_noise_scale == values["reset_noise_scale"]
    ref.reset(0)
    truncated = [ref.step(np.zeros(6, np.float32))[3] for _ in range(7)]
    assert truncated == [False] * 6 + [True]
    ref.close()
