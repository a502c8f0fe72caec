"""Pong's game constants are data: vmapped, traced or baked in, the JAX game equals the C
reference built with the same constants, bit for bit. And bad options fail early."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envport
from envport.core.reference import stack_states
from envport.envs.pong import MODES, SPEC, perturb, sample_params, variant
from envport.envs.pong.bridge import PongBridge
from envport.envs.pong.jax_env import Pong, PongDraws, PongParams
from envport.envs.pong.params import FLOAT_DEFAULTS, PARAM_DEFAULTS, check_params
from envport.envs.pong.reference import STATE_DTYPES, PongReference
from envport.envs.pong.vector_reference import PongVectorReference
from envport.envs.pong.vector_reference import make as make_vector_reference

MODE_KEYS = ("frameskip", "continuous", "rules")


def jax_params(env: Pong, values: dict[str, Any]) -> PongParams:
    """``env``'s modes with ``values`` as the constants (float32 / uint32 leaves)."""
    base = env.default_params()
    return PongParams(**{k: getattr(base, k) for k in MODE_KEYS},
                      **{k: np.uint32(v) if k == "max_score" else np.float32(v)
                         for k, v in values.items()})


def stack(trees: list[Any]) -> Any:
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)


def bits(x: Any, dtype: Any = None) -> bytes:
    return np.asarray(x, dtype).tobytes()


def reference_rollout(mode: dict[str, Any], params: dict[str, Any], seed: int, steps: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, list[tuple]]:
    """The C game's steps under a ball-following policy with 30% random actions (so there are
    returns, points and ends of episodes); returns (actions, per-step outputs)."""
    continuous = mode.get("continuous", False)
    ref = PongReference(**mode, params=params)
    ref.reset(seed)
    k = check_params(params)
    # Scores two points from the end (the translation does the same), so episodes end.
    near_end = np.uint32(k["max_score"] - 2)
    ref.set_state({**ref.get_state(), "score_l": near_end, "score_r": near_end})
    actions, rows = [], []
    for _ in range(steps):
        s = ref.get_state()
        up = s["ball_y"] + k["ball_height"] / 2 > s["paddle_yr"] + k["paddle_height"] / 2
        if continuous:
            a = np.float32(rng.uniform(-1, 1) if rng.random() < 0.3 else
                           (1 if up else -1) * rng.uniform(0.2, 1))
        else:
            a = int(rng.integers(3)) if rng.random() < 0.3 else (1 if up else 2)
        obs, reward, terminated, _, _ = ref.step(np.float32([a]) if continuous else a)
        actions.append(a)
        rows.append((obs, np.float32(reward), terminated, ref.get_state()))
    return np.asarray(actions), rows


def compare_rollouts(want: list[list[tuple]], got: tuple, label: str) -> dict[str, int]:
    """Every row of ``got`` (obs, reward, terminated, states; leading axes lane, step) against
    the references' rows, bit for bit. Returns counts of the events covered."""
    obs, reward, terminated, states = got
    obs, reward, terminated = np.asarray(obs), np.asarray(reward), np.asarray(terminated)
    states = {k: np.asarray(getattr(states, k)) for k in STATE_DTYPES}
    events = {"points": 0, "returns": 0, "ends": 0}
    for i, rows in enumerate(want):
        for t, (w_obs, w_reward, w_term, w_state) in enumerate(rows):
            where = f"{label}: lane {i}, step {t}"
            assert bits(obs[i, t]) == bits(w_obs), f"{where}: obs {obs[i, t]} != {w_obs}"
            assert bits(reward[i, t]) == bits(w_reward), where
            assert bool(terminated[i, t]) == w_term, where
            for k, dt in STATE_DTYPES.items():
                g = states[k][i, t]
                assert bits(g, dt) == bits(w_state[k]), f"{where}: {k} {g} != {w_state[k]}"
            events["points"] += abs(float(w_reward)) == 1
            events["returns"] += w_reward == np.float32(0.1)
            events["ends"] += w_term
    return events


def rollout_fn(env: Pong, continuous: bool):
    def roll(params: PongParams, seed: jax.Array, actions: jax.Array) -> tuple:
        state, _ = env.reset_from_seed(seed, params)
        near_end = jnp.asarray(params.max_score, jnp.uint32) - jnp.uint32(2)  # traced
        state = dataclasses.replace(state, score_l=near_end, score_r=near_end)

        def body(s: Any, a: jax.Array) -> tuple:
            res = env.step(jax.random.key(0), s, a[None] if continuous else a, params)
            return res.state, (res.obs, res.reward, res.terminated, res.state)

        return jax.lax.scan(body, state, actions)[1]

    return roll


@pytest.mark.parametrize("mode", [{}, {"continuous": True, "frameskip": 4},
                                  {"rules": "8e3e754", "frameskip": 8}])
def test_vmap_over_16_param_sets_equals_the_references(mode):
    """One jitted vmap over 16 different constant sets; row i is the C game built with set i."""
    rng = np.random.default_rng(len(mode))
    n, steps = 16, 300
    sets = [sample_params(rng) for _ in range(n)]
    seeds = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    actions, want = zip(*(reference_rollout(mode, sets[i], int(seeds[i]), steps, rng)
                          for i in range(n)), strict=True)
    env = Pong(**mode)
    batched = stack([jax_params(env, s) for s in sets])
    roll = jax.jit(jax.vmap(rollout_fn(env, mode.get("continuous", False))))
    got = roll(batched, jnp.asarray(seeds), jnp.asarray(np.stack(actions)))
    events = compare_rollouts(list(want), got, f"vmapped params {mode}")
    assert events["points"] > 0 and events["ends"] > 0
    assert (events["returns"] > 0) == (mode.get("rules", "61f27b3") == "61f27b3")


def test_traced_params_shared_by_a_batch_equal_the_references():
    """Params passed to the jitted function (traced, the same for every lane of the batch):
    the divisors are then one runtime value for all lanes, the case XLA would turn into a
    multiplication by a reciprocal. One compilation serves every param set."""
    rng = np.random.default_rng(5)
    env = Pong(continuous=True)
    roll = jax.jit(jax.vmap(rollout_fn(env, True), in_axes=(None, 0, 0)))
    for k in range(4):
        params = sample_params(rng)
        seeds = rng.integers(0, 2**32, 4, dtype=np.uint64).astype(np.uint32)
        actions, want = zip(*(reference_rollout({"continuous": True}, params, int(s), 200, rng)
                              for s in seeds), strict=True)
        got = roll(jax_params(env, params), jnp.asarray(seeds), jnp.asarray(np.stack(actions)))
        compare_rollouts(list(want), got, f"shared traced params #{k}")
    assert roll._cache_size() == 1


@pytest.mark.parametrize("shared", [False, True])
def test_one_step_from_any_state_with_2048_param_sets(shared):
    """Reset observations and one transition from visited and perturbed states, for 2,048
    random constant sets at once (per-lane, or each set traced and shared by 8 lanes): many
    divisors, each division must round as C's."""
    rng = np.random.default_rng(11 + shared)
    n = 256 if shared else 2048
    env, bridge = Pong(continuous=True), PongBridge()
    sets = [sample_params(rng) for _ in range(n)]
    states, actions, draws, want, reset_obs = [], [], [], [], []
    for i, params in enumerate(sets):
        ref = PongReference(continuous=True, params=params)
        reset_obs.append(ref.reset(i))
        for _ in range(int(rng.integers(0, 60))):
            ref.step(np.float32(rng.uniform(-1, 1)))
        state = perturb(ref.get_state(), rng) if rng.random() < 0.5 else ref.get_state()
        ref.set_state(state)
        a = np.float32(rng.uniform(-1, 1))
        obs, reward, terminated, _, _ = ref.step(a)
        states.append(state)
        actions.append([a])
        draws.append(ref.tape()["r"])
        want.append([(obs, np.float32(reward), terminated, ref.get_state())])
    s = bridge.to_jax(stack_states(states))
    a, d = jnp.asarray(actions), PongDraws(jnp.asarray(draws, jnp.int32))
    seeds = jnp.arange(n, dtype=jnp.uint32)
    if shared:
        step = jax.jit(jax.vmap(lambda p, s, a, d: env.transition(s, a, d, p),
                                in_axes=(None, 0, 0, 0)))
        reset = jax.jit(jax.vmap(lambda p, k: env.reset_from_seed(k, p)[1], in_axes=(None, 0)))
        pick = jnp.arange(0, n, 32)  # 8 lanes from 8 different states per set
        for i in range(0, n, 32):
            lanes = (pick + i) % n
            take = functools.partial(lambda idx, x: x[idx], lanes)
            res = step(jax_params(env, sets[i]), jax.tree_util.tree_map(take, s), a[lanes],
                       jax.tree_util.tree_map(take, d))
            ref = PongReference(continuous=True, params=sets[i])
            for j, lane in enumerate(np.asarray(lanes)):
                ref.set_state(states[lane])
                obs, reward, *_ = ref.step(a[lane])
                assert bits(res.obs[j]) == bits(obs), f"set {i}, state {lane}"
                assert bits(res.reward[j]) == bits(np.float32(reward))
            got = reset(jax_params(env, sets[i]), seeds[i:i + 1])
            assert bits(got[0]) == bits(reset_obs[i]), f"reset obs, set {i}"
        return
    batched = stack([jax_params(env, p) for p in sets])
    res = jax.jit(jax.vmap(lambda p, s, a, d: env.transition(s, a, d, p)))(batched, s, a, d)
    got = (res.obs[:, None], res.reward[:, None], res.terminated[:, None],
           jax.tree_util.tree_map(lambda x: x[:, None], res.state))
    compare_rollouts(want, got, "2048 param sets")
    obs = jax.jit(jax.vmap(lambda p, k: env.reset_from_seed(k, p)[1]))(batched, seeds)
    for i in range(n):
        assert bits(obs[i]) == bits(reset_obs[i]), f"reset obs, set {i}"


def test_vector_reference_plays_the_translations_game_with_params_and_rules():
    params = sample_params(np.random.default_rng(2))
    kw = {"frameskip": 4, "rules": "8e3e754", **params}
    n, steps = 8, 150
    vec = make_vector_reference(n, 3, **kw)
    assert isinstance(vec, PongVectorReference) and vec.params == check_params(params)
    env = envport.make("pong", **kw)
    from envport.envs.pong.vector_reference import reset_seeds

    state, obs = jax.vmap(env.reset_from_seed)(jnp.asarray(reset_seeds(3, n)))
    assert bits(vec.reset()) == bits(obs)
    step = jax.jit(jax.vmap(lambda s, a: env.step(jax.random.key(0), s, a)))
    rng = np.random.default_rng(0)
    saved = None
    for t in range(steps):
        actions = rng.integers(0, 3, n).astype(np.int32)
        v_obs, v_reward, v_term, _ = vec.step(actions)
        res = step(state, jnp.asarray(actions))
        state = res.state
        assert bits(v_obs) == bits(res.obs) and bits(v_reward) == bits(res.reward), t
        assert np.array_equal(v_term, np.asarray(res.terminated)), t
        if t == 50:
            saved = vec.get_state()
    other = make_vector_reference(n, 3, **kw)
    other.set_state(saved)  # same modes and constants: accepted
    different = make_vector_reference(n, 3, **{**kw, "paddle_speed": 5.0})
    with pytest.raises(ValueError, match="params"):
        different.set_state(saved)
    with pytest.raises(ValueError, match="rules"):
        make_vector_reference(n, 3, frameskip=4, **params).set_state(saved)
    with pytest.raises(ValueError, match="gravity"):
        make_vector_reference(n, 3, gravity=9.8)


def test_params_pytree_leaves_and_static_modes():
    env = Pong(frameskip=8, rules="8e3e754", paddle_speed=9.5)
    p = env.default_params()
    leaves, treedef = jax.tree_util.tree_flatten(p)
    assert len(leaves) == len(PARAM_DEFAULTS)  # every constant is a leaf
    assert [np.asarray(x).dtype for x in leaves].count(np.uint32) == 1  # max_score
    assert p.paddle_speed == np.float32(9.5) and (p.frameskip, p.rules) == (8, "8e3e754")
    # The modes are in the structure: another frameskip is another program.
    other = jax.tree_util.tree_structure(Pong(frameskip=4).default_params())
    assert other != treedef
    assert jax.tree_util.tree_structure(Pong(paddle_speed=3.0).default_params()) != treedef
    assert jax.tree_util.tree_structure(
        Pong(frameskip=8, rules="8e3e754").default_params()) == treedef


def test_sample_params_are_valid_and_all_non_default():
    rng = np.random.default_rng(0)
    for _ in range(200):
        params = sample_params(rng)
        assert set(params) == set(PARAM_DEFAULTS)
        assert check_params(params) == params  # valid, and float32 values already
        assert all(params[k] != v for k, v in PARAM_DEFAULTS.items())
        assert 4 <= params["paddle_speed"] <= 12 and 3 <= params["max_score"] <= 21
        assert isinstance(params["max_score"], int)
        # The serve cannot reach a goal in one sub-frame (the reference's set_state relies
        # on it, README "Reduction").
        assert (params["width"] / 5 + params["ball_initial_speed_x"] + params["ball_width"]
                < params["width"])
    assert len({sample_params(np.random.default_rng(s))["width"] for s in range(20)}) == 20


def test_modes_are_declared_and_valid():
    assert {} in MODES and {"frameskip": 8} in MODES
    assert {"rules": "8e3e754"} in MODES and {"rules": "8e3e754", "frameskip": 8} in MODES
    assert any(m.get("continuous") for m in MODES)
    names = {SPEC.with_options(**m).mode_name for m in MODES}
    assert len(names) == len(MODES)


@pytest.mark.parametrize(("options", "match"), [
    ({"frameskip": "abc"}, "frameskip"), ({"frameskip": "0"}, "frameskip"),
    ({"frameskip": 0}, "frameskip"), ({"frameskip": "2.5"}, "frameskip"),
    ({"continuous": "maybe"}, "continuous"), ({"rules": "4.0"}, "rules"),
    ({"foo": "1"}, "foo.*known: frameskip, continuous, rules, width"),
    ({"width": "wide"}, "width"), ({"width": "-1"}, "width"), ({"max_score": "0"}, "max_score"),
    ({"paddle_speed": "inf"}, "paddle_speed"),
])
def test_bad_options_raise_naming_the_option(options, match):
    with pytest.raises(ValueError, match=match):
        variant(**options)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"frameskip": 0}, "frameskip"), ({"frameskip": -3}, "frameskip"),
    ({"frameskip": 1.5}, "frameskip"), ({"continuous": "true"}, "continuous"),
    ({"rules": "newest"}, "rules"), ({"max_score": 0}, "max_score"),
    ({"height": 0.0}, "height"), ({"gravity": 9.8}, "gravity"),
])
def test_make_rejects_bad_values(kwargs, match):
    with pytest.raises(ValueError, match=match):
        envport.make("pong", **kwargs)
    if set(kwargs) <= set(MODE_KEYS):  # modes are checked by PongParams itself too
        with pytest.raises(ValueError, match=match):
            PongParams(**kwargs)


def test_options_parse_as_the_cli_gives_them():
    spec = variant(frameskip="8", continuous="YES", rules="8e3e754", paddle_speed="9.25",
                   max_score="7")
    env, ref = spec.make(), spec.make_reference()
    p = env.default_params()
    assert (p.frameskip, p.continuous, p.rules) == (8, True, "8e3e754")
    assert p.paddle_speed == np.float32(9.25) and p.max_score == 7
    assert (ref.frameskip, ref.continuous, ref.rules) == (8, True, "8e3e754")
    assert ref.params["paddle_speed"] == 9.25 and ref.params["max_score"] == 7
    # The verifier's own constants override the variant's on both sides.
    extra = {"paddle_speed": 5.5}
    assert spec.make(**extra).default_params().paddle_speed == np.float32(5.5)
    assert spec.make_reference(params=extra).params["paddle_speed"] == 5.5
    assert spec.make_reference(params=extra).params["max_score"] == 7
    assert set(FLOAT_DEFAULTS) < set(PARAM_DEFAULTS)
