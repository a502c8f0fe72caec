"""The pokemon-gen1 environment: its Showdown reference adapter, bridge, observations and masks
against the JAX side, along real battles. The default tests step the battle with the engine's
own compiled step (shared with the engine tests) and build observations, masks and rewards with
the environment's functions; the whole jitted ``env.step`` and ``envport verify`` are ``slow``."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envport
from envport.core.registry import Tolerance
from envport.envs.pokemon_gen1 import MECHANICS_CHECKS
from envport.envs.pokemon_gen1 import bridge as B
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import env as V
from envport.envs.pokemon_gen1 import spec_support as SS
from envport.verify.compare import compare_fields, step_fields

EXACT = functools.partial(lambda name: Tolerance())


def test_the_spec_is_registered_and_lists_every_mechanics_check():
    from envport.envs.pokemon_gen1.components import CHECKS

    assert "pokemon-gen1" in envport.list_envs()
    assert tuple(CHECKS) == MECHANICS_CHECKS
    spec = envport.spec("pokemon-gen1")
    assert set(spec.verification.components) == {*MECHANICS_CHECKS, "create"}


@pytest.fixture(scope="module")
def ref(worker):
    return V.ShowdownReference(worker)


@functools.cache
def _jitted() -> tuple:
    env = V.PokemonGen1()
    return env, jax.jit(env.observe), jax.jit(functools.partial(SS.resolve, xp=jnp))


def _jax_step(state: V.EnvState, action: np.ndarray) -> tuple[V.EnvState, np.ndarray, float]:
    """env.transition, with the engine's shared compiled step in the middle."""
    _, observe, resolve = _jitted()
    b = state.battle
    c = np.asarray(resolve(jnp.asarray(action), V.masks_of(b)))
    nb, _ = E.compiled(False)(b, np.int32(c[0]), np.int32(c[1]))
    new = V.EnvState(battle=nb, seen=SS.seen_after(nb, state.seen, jnp))
    return new, np.asarray(observe(new)), float(V.p1_reward(b.ended, nb))


def test_reference_and_translation_agree_step_by_step(ref):
    """Flat state (with seen), both legal masks (Showdown's requests vs legal_mask),
    observations (numpy from Showdown's export vs the jitted JAX observe) and rewards, along
    battles driven by random, scripted and deliberately illegal actions."""
    bridge = V.PokemonBridge()
    rng = np.random.default_rng(0)
    steps = illegal = 0
    for ep in range(2):
        obs = ref.reset(100 + ep)
        state = bridge.to_jax(ref.get_state())
        assert not compare_fields(ref.get_state(), bridge.from_jax(state), EXACT)
        np.testing.assert_array_equal(obs, np.asarray(_jitted()[1](state)))
        for t in range(400):
            s = ref.get_state()
            if t % 3 == 2:  # anything at all: illegal ones play legal choice c mod n
                action = rng.integers(0, E.N_CHOICES, 2).astype(np.int32)
                illegal += int(not all(s["mask"][p, action[p]] for p in (0, 1)))
            elif t % 3:
                action = V.legal_action(s, rng)
            else:
                action = V.scripted_policy(obs, rng)
            obs, reward, term, trunc, _ = ref.step(action)
            state, jobs, jrew = _jax_step(state, action)
            expected = step_fields(ref.get_state(), obs, reward, term, trunc)
            got = step_fields(bridge.from_jax(state), jobs, jrew, bool(state.battle.ended), False)
            diffs = compare_fields(expected, got, EXACT)
            assert not diffs, f"battle {ep} step {t}: {[d.field for d in diffs]}"
            steps += 1
            if term:
                assert reward in (-1.0, 1.0, 0.0)
                break
        assert term, "battle did not end"
    assert steps > 40 and illegal > 5


def test_the_flat_state_is_the_comparable_view(ref):
    """from_showdown already holds every ignored leaf at rest, and a change the comparable view
    sees changes the flat state (one HP point, one PRNG word)."""
    ref.reset(7)
    rng = np.random.default_rng(1)
    for _ in range(15):
        ref.step(V.legal_action(ref.get_state(), rng))
    export = ref.battle.export()
    b = B.from_showdown(export)
    flat = SS.canonical(b)
    for k, v in flat.items():
        g, leaf = k.split(".")
        obj = b if g == "battle" else getattr(b, g)
        np.testing.assert_array_equal(v, getattr(obj, leaf), err_msg=k)
    hurt = SS.battle_of({**flat, "team.hp": flat["team.hp"] + np.int16(1)})
    assert B.differences(B.comparable(hurt), B.comparable(b))
    assert not np.array_equal(SS.canonical(hurt)["team.hp"], flat["team.hp"])


def test_set_state_restores_a_visited_state_and_refuses_others(ref):
    rng = np.random.default_rng(2)
    ref.reset(11)
    for _ in range(5):
        ref.step(V.legal_action(ref.get_state(), rng))
    here = ref.get_state()
    action = V.legal_action(here, rng)
    ref.step(action)
    after = ref.get_state()
    ref.reset(12)
    ref.set_state(here)
    assert not compare_fields(here, ref.get_state(), EXACT)
    ref.step(action)
    assert not compare_fields(after, ref.get_state(), EXACT)
    edited = {**here, "team.hp": here["team.hp"] - np.int16(1)}
    with pytest.raises(ValueError, match="not produced by this reference"):
        ref.set_state(edited)


def test_legal_action_and_the_tape_have_fixed_legal_shapes(ref):
    rng = np.random.default_rng(3)
    ref.reset(21)
    for _ in range(30):
        s = ref.get_state()
        a = V.legal_action(s, rng)
        assert a.shape == (2,) and all(s["mask"][p, a[p]] for p in (0, 1))
        _, _, term, _, _ = ref.step(a)
        tape = ref.tape()
        assert tape["from"].shape == tape["to"].shape == (V.TAPE_PAD,)
        assert int(tape["count"]) == len(ref.battle.tape_records())
        if term:
            break


def test_resolve_keeps_legal_choices_and_maps_illegal_ones_to_legal_ones():
    masks = np.zeros((2, E.N_CHOICES), bool)
    masks[0, [0, 2, 6]] = True
    masks[1, E.NO_CHOICE] = True
    for c0 in range(-3, 14):
        got = SS.resolve(np.array([c0, 3]), masks)
        assert masks[0, got[0]] and got[1] == E.NO_CHOICE
        if 0 <= c0 < E.N_CHOICES and masks[0, c0]:
            assert got[0] == c0
    assert list(SS.resolve(np.array([1, 4]), np.zeros((2, E.N_CHOICES), bool))) == [
        E.NO_CHOICE, E.NO_CHOICE]
    jitted = np.asarray(_jitted()[2](jnp.asarray([7, 5]), jnp.asarray(masks)))
    np.testing.assert_array_equal(jitted, SS.resolve(np.array([7, 5]), masks))


def test_mask_from_request_reads_showdowns_choices():
    request = {"active": [{"moves": [{"pp": 3}, {"pp": 0}, {"pp": 5, "disabled": True},
                                     {"pp": 1}]}],
               "side": {"pokemon": [{"active": True, "condition": "100/100"},
                                    {"active": False, "condition": "0 fnt"},
                                    {"active": False, "condition": "50/100 par"}]}}
    mask = SS.mask_from_request(request, ended=False)
    assert list(np.flatnonzero(mask)) == [0, 3, E.SWITCH + 2]
    assert list(np.flatnonzero(SS.mask_from_request({"wait": True}, False))) == [E.NO_CHOICE]
    assert not SS.mask_from_request(request, ended=True).any()


@pytest.mark.slow
def test_the_jitted_env_step_and_vmap_follow_the_reference(ref):
    """The whole env.step (jitted, and vmapped over battles) in lockstep with the reference."""
    env, bridge = V.PokemonGen1(), V.PokemonBridge()
    step = jax.jit(env.step)
    rng = np.random.default_rng(4)
    states = []
    for ep in range(3):
        obs = ref.reset(200 + ep)
        state = bridge.to_jax(ref.get_state())
        for t in range(500):
            states.append((state, V.legal_action(ref.get_state(), rng)))
            obs, reward, term, trunc, _ = ref.step(states[-1][1])
            res = step(jax.random.key(0), state, jnp.asarray(states[-1][1]))
            state = res.state
            diffs = compare_fields(step_fields(ref.get_state(), obs, reward, term, trunc),
                                   step_fields(bridge.from_jax(state), res.obs, res.reward,
                                               res.terminated, res.truncated), EXACT)
            assert not diffs, f"battle {ep} step {t}: {[d.field for d in diffs]}"
            if term:
                break
    batch = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *[s for s, _ in states[:32]])
    acts = jnp.stack([jnp.asarray(a) for _, a in states[:32]])
    out = jax.jit(jax.vmap(lambda s, a: env.step(jax.random.key(0), s, a)))(batch, acts)
    for i in range(len(acts)):
        one = step(jax.random.key(0), states[i][0], acts[i])
        for x, y in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(out),
                        strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y)[i])


@pytest.mark.slow
def test_envport_verify_passes_on_a_small_run():
    from envport.verify.runner import verify

    report = verify("pokemon-gen1", episodes=4, states=30, examples=2, samples=500)
    failed = {k: [f.message for f in r.failures] for k, r in report.layers.items()
              if not r.passed}
    assert not failed, failed
