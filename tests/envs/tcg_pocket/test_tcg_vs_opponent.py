"""TCG Pocket against a fixed opponent (``envport.pettingzoo.TurnVsOpponent``): player 0 acts
at every step, the opponent's whole turn is played inside it, player 0's reward is the game's
outcome, and the opponent is the one asked for (a random player 0 loses far more often to the
heuristic than to the random player); a pool or a non-game is refused, by the class and by
``envport train``; an engine built while a function is traced holds no tracer (the trainer
builds its backend lazily)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.tcg_pocket.jax_engine import game
from envport.pettingzoo import OPPONENTS, TurnVsOpponent

GAMES = 48  # per opponent
STEPS = 120  # of player 0; 200 reference games took 89 actions of both players at most
# Compiling the engine's reset and step with the opponent's turn loop takes ~2-4 minutes on 2
# cores: over the default suite's budget
SLOW = pytest.mark.slow


@pytest.fixture(scope="module")
def played():
    """Random legal player 0 against each opponent (one batch, one compiled step): per step,
    who acts after it, the reward, the end, and the game's own outcome for player 0."""
    env = TurnVsOpponent("tcg-pocket", "heuristic")
    params = env.default_params()
    which = jnp.repeat(jnp.arange(len(OPPONENTS)), GAMES)
    n = which.shape[0]

    @jax.jit
    def start(key):
        return jax.vmap(lambda k: env.reset(k, params))(jax.random.split(key, n))

    @jax.jit
    def step(state, key):
        def one(s, k, o):
            k_act, k_env = jax.random.split(k)
            mask = env.action_mask(s, params)
            action = jax.random.categorical(k_act, jnp.where(mask, 0.0, -jnp.inf))
            res = env.transition_against(s, action.astype(jnp.int32), k_env, o, params)
            return res, game.rewards(res.state)[0]
        return jax.vmap(one)(state, jax.random.split(key, n), which)

    state, obs = start(jax.random.key(3))
    out = {"to_act_after_reset": np.asarray(jax.vmap(game.to_act)(state)), "obs": obs,
           "to_act": [], "reward": [], "done": [], "outcome": [], "which": np.asarray(which)}
    done = np.zeros(n, bool)
    key = jax.random.key(4)
    for _ in range(STEPS):
        key, k = jax.random.split(key)
        res, outcome = step(state, k)
        state = res.state
        out["to_act"].append(np.asarray(jax.vmap(game.to_act)(state)))
        out["reward"].append(np.where(done, 0.0, np.asarray(res.reward)))
        out["done"].append(done | np.asarray(res.terminated))
        out["outcome"].append(np.asarray(outcome))
        done = out["done"][-1]
        if done.all():
            break
    return {k: np.asarray(v) for k, v in out.items()}


@SLOW
def test_player_0_acts_at_every_step(played):
    assert set(played["to_act_after_reset"].tolist()) == {0}
    live = ~played["done"]
    assert (played["to_act"][live] == 0).all()
    assert (played["to_act"][~live] == -1).all()  # an ended game has no player to act
    assert played["done"][-1].all(), "a game outlived the test's steps"


@SLOW
def test_the_reward_is_player_0s_outcome_once(played):
    total = played["reward"].sum(axis=0)
    ended_at = played["done"].argmax(axis=0)
    outcome = played["outcome"][ended_at, np.arange(total.shape[0])]
    np.testing.assert_array_equal(total, outcome)
    assert set(np.unique(total)) <= {-1.0, 0.0, 1.0}


@SLOW
def test_the_opponent_is_the_one_asked_for(played):
    total = played["reward"].sum(axis=0)
    heuristic = total[played["which"] == OPPONENTS.index("heuristic")]
    random = total[played["which"] == OPPONENTS.index("random")]
    # A random player 0 loses ~80% of its games to the heuristic; against the random player
    # most games reach the turn limit (a draw) and few are lost (measured: 6%): 48 games each
    # tell the two apart by many standard errors.
    assert (heuristic < 0).mean() > 0.5
    assert (random < 0).mean() < 0.3


def test_a_pool_or_another_game_is_refused():
    with pytest.raises(ValueError, match="no self-play pool"):
        TurnVsOpponent("tcg-pocket", "pool")
    with pytest.raises(ValueError, match="not a turn-based game"):
        TurnVsOpponent("pokemon-gen1", "heuristic")


def test_envport_train_refuses_a_pool_for_tcg_before_a_folder(tmp_path, capsys):
    from envport.cli import main

    out = tmp_path / "run"
    assert main(["train", "tcg-pocket", "--opponent", "pool", "--out", str(out)]) == 2
    assert "--opponent pool" in capsys.readouterr().err
    assert not out.exists()


def test_an_engine_built_while_tracing_holds_no_tracer():
    import envport

    built = []

    def trace(x):
        built.append(envport.make("tcg-pocket"))
        return x

    jax.jit(trace)(1)
    assert all(isinstance(d, np.ndarray) for d in built[0].decks)
