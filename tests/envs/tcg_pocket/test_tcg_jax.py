"""The JAX engine (``jax_engine/``, produced through the translation loop) against the reference
on its pools (``full``, ``trainers``, ``status``, ``plain``): whole games in lockstep with the
engine's own generator (masks, states, observations of both players, rewards, ends; random and
heuristic players, evolutions, Special Conditions and coins included), and illegal actions as
no-ops."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.tcg_pocket.encode import observation_vector
from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge
from envport.envs.tcg_pocket.jax_engine.encode import observation_vector as jax_observation
from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket
from envport.envs.tcg_pocket.reference import TcgPocketReference

ENV = TcgPocket()
BRIDGE = TcgPocketBridge()


@pytest.fixture(scope="module")
def compiled():
    return {"step": jax.jit(ENV.step), "mask": jax.jit(ENV.action_mask),
            "obs": jax.jit(jax_observation)}


def _step_alike(compiled, ref, s, action, where):
    """One action on the reference and on the engine: the same state, observation, reward and
    end; the engine's next state, the reference's state and whether the game ended."""
    obs, reward, done, _, _ = ref.step(action)
    res = compiled["step"](jax.random.key(where[1]), s, jnp.int32(action))
    got, want = BRIDGE.from_jax(res.state), ref.get_state()
    assert [k for k in want if not np.array_equal(got[k], want[k])] == [], where
    assert np.array_equal(np.asarray(res.obs), obs)
    assert float(res.reward) == reward and bool(res.terminated) == done
    return res.state, want, done


def test_whole_games_in_lockstep_with_the_engines_own_draws(compiled):
    ends, evolved, conditions = set(), 0, 0
    for seed in range(6):
        ref = TcgPocketReference(pool="plain" if seed >= 4 else "status")
        ref.reset(seed)
        s = BRIDGE.to_jax(ref.get_state())  # injected once, then the engine runs on its own
        rng = np.random.default_rng(seed)
        for t in range(1000):
            mask = ref.action_mask()
            assert np.array_equal(np.asarray(compiled["mask"](s)), mask), (seed, t)
            for q in (0, 1):
                want = observation_vector({k: v for k, v in ref.get_state().items()
                                           if k != "rng"}, q)
                assert np.array_equal(np.asarray(compiled["obs"](s, jnp.int32(q))), want)
            action = (ref.scripted_action(rng) if seed % 2 else
                      int(rng.choice(np.flatnonzero(mask))))
            s, want, done = _step_alike(compiled, ref, s, action, (seed, t))
            evolved += int((want["stack"][:, :, 1] != 0).sum())
            conditions += int(want["conditions"].any())
            if done:
                ends.add(ref.game.state.end_reason)
                break
        assert done, f"seed {seed}: no end in 1000 steps"
    assert ends and evolved > 0  # evolved Pokémon were in play in some of the games
    assert conditions > 0  # and Special Conditions


def test_illegal_actions_change_nothing(compiled):
    s, obs = jax.jit(ENV.reset)(jax.random.key(0))
    mask = np.asarray(compiled["mask"](s))
    for bad in np.flatnonzero(~mask)[:5]:
        res = compiled["step"](jax.random.key(1), s, jnp.int32(bad))
        assert not bool(res.info["legal"]) and not bool(res.terminated)
        assert float(res.reward) == 0.0 and np.array_equal(np.asarray(res.obs), np.asarray(obs))


def _lockstep_game(compiled, pool: str, seed: int, reset_seed: int):
    """A whole game of ``pool`` on both engines (random legal actions for an even ``seed``,
    the heuristic for an odd one), masks and steps compared; yields (the reference's state
    before the action, the action, the reference's log lines of the step)."""
    ref = TcgPocketReference(pool=pool)
    ref.reset(reset_seed)
    s = BRIDGE.to_jax(ref.get_state())
    rng = np.random.default_rng(seed)
    for t in range(1000):
        mask = ref.action_mask()
        assert np.array_equal(np.asarray(compiled["mask"](s)), mask), (pool, seed, t)
        action = (ref.scripted_action(rng) if seed % 2 else
                  int(rng.choice(np.flatnonzero(mask))))
        before, log = ref.get_state(), len(ref.game.state.log)
        to_act = ref.game.to_act()
        s, _, done = _step_alike(compiled, ref, s, action, (pool, seed, t))
        yield before, to_act, action, ref.game.state.log[log:]
        if done:
            return
    raise AssertionError(f"{pool} seed {seed}: no end in 1000 steps")


def test_full_pool_games_in_lockstep(compiled):
    """Games of the ``full`` pool (every card the reference plays), random and heuristic
    players: the attacks of the templates beyond the ``trainers`` pool, their choices
    (targets, Benched Pokémon, Energy from the Zone) and draws, from the engine's own
    generator."""
    from envport.envs.tcg_pocket.cards import load_table
    from envport.envs.tcg_pocket.deck import status_pokemon

    table = load_table()
    beyond = {a.name for n in set(table.cards) - set(status_pokemon()) if table[n].is_pokemon
              for a in table[n].attacks if a.effect is not None}
    used: set[str] = set()
    for seed in range(6):
        for _, _, _, lines in _lockstep_game(compiled, "full", seed, 200 + seed):
            used |= {line.split(" uses ")[1] for line in lines if " uses " in line} & beyond
    assert len(used) >= 5, used  # attacks of the new templates were used


def test_trainers_games_in_lockstep(compiled):
    """Games of the ``trainers`` pool (8 Trainers a deck), random and heuristic players: every
    Trainer the players play, each effect's draws (Misty's coins, Poké Ball's pick, Red Card's
    shuffle) from the engine's own generator."""
    from envport.envs.tcg_pocket.actions import PLAY
    from envport.envs.tcg_pocket.deck import pool_trainers
    from envport.envs.tcg_pocket.encode import CARD_ID

    trainer_ids = {CARD_ID[n]: n for n in pool_trainers()}
    played: set[str] = set()
    for seed in range(4):
        for before, to_act, action, _ in _lockstep_game(compiled, "trainers", seed, 100 + seed):
            if PLAY <= action < PLAY + 80 and not (before["pending_kind"] >= 0).any():
                card = int(before["hand"][to_act, (action - PLAY) // 4])
                played |= {trainer_ids[card]} if card in trainer_ids else set()
    assert len(played) >= 8, played  # most of the pool's 14 Trainers were played
