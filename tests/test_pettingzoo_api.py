"""envport.pettingzoo: the two-player games as PettingZoo ParallelEnvs, checked by PettingZoo's own
API and seed tests, plus what those tests do not look at: each agent sees its own row of the
environment's observation (hidden information stays hidden), rewards are zero-sum and follow the
battle's winner, bad input is refused. The Pokemon adapter steps with the engine's shared
compiled step (compiled once per process, as the other pokemon-gen1 tests use it); the card game
and the jitted, vmapped functional API each compile a whole step of their own and are ``slow``."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from envport.envs.pokemon_gen1 import env as V
from envport.envs.pokemon_gen1 import state as S
from envport.pettingzoo import AGENTS, parallel_env, two_player


@pytest.fixture(scope="module")
def pokemon():
    return parallel_env("pokemon-gen1")


def test_pokemon_passes_pettingzoo_parallel_api_and_seed_tests(pokemon):
    parallel_api_test(pokemon, num_cycles=1000)
    parallel_seed_test(lambda: parallel_env("pokemon-gen1"))


def test_pokemon_views_rewards_and_ends_along_a_battle(pokemon):
    observe = jax.jit(V.PokemonGen1().observe)
    obs, _ = pokemon.reset(seed=3)
    rng = np.random.default_rng(3)
    space = pokemon.observation_space("player_0")
    total = dict.fromkeys(AGENTS, 0.0)
    for _ in range(1000):
        rows = np.asarray(observe(pokemon.state_jax))
        masks = np.asarray(V.masks_of(pokemon.state_jax.battle))
        for i, a in enumerate(AGENTS):
            assert space.contains(obs[a])
            np.testing.assert_array_equal(obs[a]["observation"], rows[i])
            np.testing.assert_array_equal(obs[a]["action_mask"], masks[i].astype(np.int8))
        actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in AGENTS}
        obs, rew, term, trunc, _ = pokemon.step(actions)
        assert rew["player_0"] == -rew["player_1"] and not any(trunc.values())
        for a in AGENTS:
            total[a] += rew[a]
        if term["player_0"]:
            break
    assert term == dict.fromkeys(AGENTS, True) and pokemon.agents == []
    winner = int(pokemon.state_jax.battle.winner)
    want = {S.WINNER_P1: 1.0, S.WINNER_P2: -1.0, S.WINNER_TIE: 0.0}[winner]
    assert total == {"player_0": want, "player_1": -want}
    with pytest.raises(RuntimeError, match="reset"):
        pokemon.step(actions)


def test_pokemon_hidden_information_stays_hidden(pokemon):
    """Changing what player 1 has not shown (its bench, never active yet) changes player 1's
    own view and nothing of player 0's."""
    observe = jax.jit(V.PokemonGen1().observe)
    obs, _ = pokemon.reset(seed=5)
    state = pokemon.state_jax
    seen = np.asarray(state.seen)
    hidden = int(np.flatnonzero(~seen[1] & np.asarray(state.battle.team.present[1]))[0])
    team = state.battle.team
    moves = np.asarray(team.moves).copy()
    moves[1, hidden] = [S.MOVE_ID["surf"], S.MOVE_ID["psychic"], S.MOVE_ID["rest"], 0]
    hp = np.asarray(team.hp).copy()
    hp[1, hidden] //= 2
    changed = dataclasses.replace(state, battle=dataclasses.replace(
        state.battle, team=dataclasses.replace(team, moves=jnp.asarray(moves),
                                               hp=jnp.asarray(hp))))
    rows = np.asarray(observe(changed))
    np.testing.assert_array_equal(rows[0], obs["player_0"]["observation"])
    assert not np.array_equal(rows[1], obs["player_1"]["observation"])


def test_bad_input_is_refused_with_a_clear_error(pokemon):
    with pytest.raises(ValueError, match="tcg-pocket"):
        parallel_env("pokemon-gen2")
    with pytest.raises(ValueError, match="render_mode"):
        parallel_env("pokemon-gen1", render_mode="human")
    with pytest.raises(ValueError, match="max_cycles"):
        parallel_env("pokemon-gen1", max_cycles=0)
    with pytest.raises(ValueError, match="unknown agent"):
        pokemon.action_space("player_2")
    pokemon.reset(seed=0)
    with pytest.raises(ValueError, match="missing"):
        pokemon.step({"player_0": 0})
    with pytest.raises(ValueError, match="Discrete"):
        pokemon.step({"player_0": 11, "player_1": 0})
    with pytest.raises(ValueError, match="Discrete"):
        pokemon.step({"player_0": 0.5, "player_1": 0})


@pytest.mark.slow
def test_tcg_pocket_passes_pettingzoo_parallel_api_test_and_hides_the_idle_player():
    env = parallel_env("tcg-pocket")
    parallel_api_test(env, num_cycles=1000)
    obs, _ = env.reset(seed=1)
    from envport.envs.tcg_pocket.jax_engine import game
    from envport.envs.tcg_pocket.jax_engine.encode import observation_vector

    rng = np.random.default_rng(0)
    for _ in range(300):
        s = env.state_jax
        who = int(game.to_act(s))
        for i, a in enumerate(AGENTS):
            np.testing.assert_array_equal(obs[a]["observation"],
                                          np.asarray(observation_vector(s, jnp.int32(i))))
            if i == who:
                np.testing.assert_array_equal(obs[a]["action_mask"],
                                              np.asarray(game.action_mask(s, i)).astype(np.int8))
            else:  # the idle player: only the ignored noop
                assert np.flatnonzero(obs[a]["action_mask"]).tolist() == [0]
        actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in AGENTS}
        obs, rew, term, _, _ = env.step(actions)
        assert rew["player_0"] == -rew["player_1"]
        if term["player_0"]:
            break
    assert env.agents == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pokemon-gen1", "tcg-pocket"])
def test_the_functional_api_jits_and_vmaps_like_the_host_steps(name):
    """jit(vmap(reset/step)) of the functional API equals the ParallelEnv's host steps."""
    game = two_player(name)
    host_reset, host_step = game.host_functions()
    keys = jax.random.split(jax.random.key(7), 3)
    states, joint = jax.jit(jax.vmap(game.reset))(keys)
    vstep = jax.jit(jax.vmap(game.step))
    singles = [host_reset(k) for k in keys]
    rng = np.random.default_rng(7)
    for t in range(20):
        masks = np.asarray(joint.mask)
        for i, (_, single) in enumerate(singles):
            np.testing.assert_array_equal(np.asarray(single.obs), np.asarray(joint.obs)[i])
            np.testing.assert_array_equal(np.asarray(single.mask), masks[i])
        actions = np.array([[rng.choice(np.flatnonzero(m[p])) if m[p].any() else 0
                             for p in (0, 1)] for m in masks], np.int32)
        step_keys = jax.random.split(jax.random.key(t), 3)
        states, joint = vstep(step_keys, states, jnp.asarray(actions))
        singles = [host_step(step_keys[i], s, jnp.asarray(actions[i]))
                   for i, (s, _) in enumerate(singles)]
        for i, (_, single) in enumerate(singles):
            np.testing.assert_array_equal(np.asarray(single.reward), np.asarray(joint.reward)[i])


@pytest.mark.slow
def test_vs_opponent_is_player_0_against_the_jax_heuristic():
    from envport.envs.pokemon_gen1 import agents
    from envport.pettingzoo import VsOpponent

    env = VsOpponent("pokemon-gen1", "heuristic")
    with pytest.raises(ValueError, match="opponent"):
        VsOpponent("pokemon-gen1", "greedy")
    keys = jax.random.split(jax.random.key(2), 4)
    states, obs = jax.jit(jax.vmap(env.reset))(keys)
    step = jax.jit(jax.vmap(env.step))
    heuristic = jax.jit(jax.vmap(agents.heuristic_jax))
    rng = np.random.default_rng(2)
    done = np.zeros(4, bool)
    for t in range(300):
        mask = np.asarray(obs)[:, -12:-1] > 0.5  # the mask columns of player 0's row
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 10 for m in mask],
                           np.int32)
        expected = np.asarray(heuristic(states))[:, 1]
        res = step(jax.random.split(jax.random.key(t), 4), states, jnp.asarray(actions))
        np.testing.assert_array_equal(np.asarray(res.info["opponent_action"]), expected)
        np.testing.assert_array_equal(np.asarray(res.info["action_mask"]),
                                      np.asarray(res.obs)[:, -12:-1] > 0.5)
        done |= np.asarray(res.terminated)
        states, obs = res.state, res.obs
        if done.all():
            break
    assert done.all()
    winners = np.asarray(states.battle.winner)
    assert (winners != S.WINNER_NONE).all()
