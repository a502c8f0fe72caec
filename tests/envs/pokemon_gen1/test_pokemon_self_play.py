"""Self-play against a pool of the run's past policies (``envport train pokemon-gen1
--opponent pool``, ``envport.pettingzoo.VsPool``): the ring of networks the trainer writes, the
member that plays player 1, its choices from player 1's own row among player 1's legal ones,
the refusal of the reference backend before any folder exists, and (``slow``) a short run whose
checkpoint holds the pool and resumes."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1.env import masks_of
from envport.envs.pokemon_gen1.training import PPO
from envport.pettingzoo import POOL, PoolParams, PoolState, VsPool
from envport.train.program import program

POOL_KWARGS = {"opponent": POOL}


@pytest.fixture(scope="module")
def policy():
    return program("pokemon-gen1", POOL_KWARGS, PPO).policy


def _pushed(env: VsPool, params: PoolParams, nets: list[float]) -> PoolParams:
    for x in nets:
        params = env.update_params(params, {"w": jnp.float32(x)})
    return params


def test_the_trainer_writes_every_nth_network_into_a_ring():
    env = VsPool(size=3, every=2)
    params = PoolParams(None, {"w": jnp.zeros(3, jnp.float32)}, jnp.int32(0), jnp.int32(0))
    # Updates 0, 2, 4, 6 write (the first call included): slots 0, 1, 2, then 0 again.
    after = _pushed(env, params, [10, 11, 12, 13, 14, 15, 16])
    np.testing.assert_array_equal(np.asarray(after.nets["w"]), [16, 12, 14])
    assert int(after.filled) == 3 and int(after.updates) == 7
    one = _pushed(env, params, [5])
    np.testing.assert_array_equal(np.asarray(one.nets["w"]), [5, 0, 0])
    assert int(one.filled) == 1


def test_a_game_draws_its_player_from_the_written_members_only(policy):
    env = VsPool(policy=policy, size=8, every=1)
    params = env.default_params()
    params = params._replace(filled=jnp.int32(3))
    keys = jax.random.split(jax.random.key(0), 64)
    members = jax.jit(jax.vmap(lambda k: env.reset(k, params)[0].member))(keys)
    assert set(np.asarray(members).tolist()) == {0, 1, 2}


def _biased(policy, choice: int) -> dict:
    """A network whose logit of ``choice`` dominates every other one."""
    net = policy.init(jax.random.key(1))
    (head,) = [k for k, v in net["params"].items() if v["bias"].shape == (E.N_CHOICES,)]
    net["params"][head]["bias"] = net["params"][head]["bias"].at[choice].set(50.0)
    return net


def test_the_member_plays_player_1_from_its_own_row_among_its_legal_choices(policy):
    env = VsPool(policy=policy, size=2, every=1)
    params = env.default_params()
    # Member 0 prefers move 1 (legal at the first turn), member 1 the switch choice 5
    # (legal: the bench is full); each must be what player 1 plays when it is the member.
    params = env.update_params(params, _biased(policy, 1))
    params = env.update_params(params, _biased(policy, 5))
    game_state, _ = jax.jit(env.game.env.reset)(jax.random.key(3))
    assert bool(masks_of(game_state.battle)[1, 1]) and bool(masks_of(game_state.battle)[1, 5])
    choose = jax.jit(lambda k, s: env.opponent_choice(k, s, params))
    keys = jax.random.split(jax.random.key(4), 8)
    for member, want in ((0, 1), (1, 5)):
        state = PoolState(game_state, jnp.int32(member))
        assert [int(choose(k, state)) for k in keys] == [want] * 8
    # A member preferring an illegal choice (10, "none", is illegal while a move is) still
    # plays legal ones only.
    illegal = env.update_params(env.update_params(params, _biased(policy, E.NO_CHOICE)),
                                _biased(policy, E.NO_CHOICE))
    assert not bool(masks_of(game_state.battle)[1, E.NO_CHOICE])
    choose = jax.jit(lambda k, s: env.opponent_choice(k, s, illegal))
    legal = np.asarray(masks_of(game_state.battle)[1])
    picks = [int(choose(k, PoolState(game_state, jnp.int32(0)))) for k in keys]
    assert all(legal[c] for c in picks), picks


def test_self_play_on_the_reference_backend_is_refused_before_a_folder(tmp_path, capsys):
    from envport.cli import main

    out = tmp_path / "run"
    code = main(["train", "pokemon-gen1", "--backend", "reference", "--opponent", POOL,
                 "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "--opponent pool" in err and "JAX backend only" in err
    assert not out.exists()


def test_the_pool_options_size_the_ring_and_set_its_period(policy):
    from envport.train.backends import translation

    env = translation("pokemon-gen1", policy=policy, **POOL_KWARGS, pool_size=3, pool_every=7)
    assert (env.size, env.every) == (3, 7)
    nets = env.default_params().nets
    assert {x.shape[0] for x in jax.tree_util.tree_leaves(nets)} == {3}
    with pytest.raises(ValueError, match="pool_size"):
        translation("pokemon-gen1", opponent="heuristic", pool_size=3)


@pytest.mark.parametrize(("argv", "says"), [
    (["--opponent", "heuristic", "--pool-size", "3"], "--pool-size: options of self-play"),
    (["--opponent", POOL, "--pool-every", "0"], "--pool-every"),
    (["--pool-size", "3"], "--pool-size: options of self-play"),
])
def test_bad_pool_options_are_refused_before_a_folder(tmp_path, capsys, argv, says):
    from envport.cli import main

    out = tmp_path / "run"
    try:  # argparse's own refusals (a count below 1) exit 2 too
        code = main(["train", "pokemon-gen1", *argv, "--out", str(out)])
    except SystemExit as e:
        code = e.code
    assert code == 2
    assert says in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow  # compiles the engine, the pool's player and the policy into the rollout
def test_a_self_play_run_holds_its_pool_and_resumes_exactly(tmp_path: Path, stopped_and_resumed,
                                                           same_leaves) -> None:
    from envport.train import train
    from envport.train.program import JaxTrainer
    from envport.train.run import load_checkpoint

    tiny = {"num_envs": 8, "num_steps": 16, "num_minibatches": 2, "update_epochs": 1,
            "hidden_sizes": [32]}

    def run(out: Path, **kw):
        return train("pokemon-gen1", "jax", steps=8 * 16 * 3, seed=1, out=out,
                     config_overrides=tiny, progress=False, env_kwargs=POOL_KWARGS,
                     chunk_updates=1, **kw)

    whole = run(tmp_path / "whole")
    same_leaves(whole.params, stopped_and_resumed(run, tmp_path / "half").params)
    # The checkpoint carries the pool: three updates, one network written (update 0's, the
    # initial one: the pool writes every 50 updates), the one every game drew.
    prog = program("pokemon-gen1", POOL_KWARGS, whole.config)
    runner = JaxTrainer(prog).load(1, load_checkpoint(tmp_path / "whole")["state"])
    pool = runner.env_params
    assert int(pool.updates) == 3 and int(pool.filled) == 1
    assert int(np.asarray(runner.env_state.member).max()) == 0
    first = prog.init_train(1)[0].params
    for ring, x in zip(jax.tree_util.tree_leaves(pool.nets), jax.tree_util.tree_leaves(first),
                       strict=True):
        np.testing.assert_array_equal(np.asarray(ring[0]), np.asarray(x))
