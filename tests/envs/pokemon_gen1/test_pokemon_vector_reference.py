"""pokemon-gen1's reference backend for training (``vector_reference.py``): Showdown battles
over two Node workers, player 0 against an opponent played on the host.

Along real battles: each observation equals the JAX engine's observation of the same state
(the bridged export, observed by the jitted jax.numpy function), the masks are Showdown's, the
host heuristic chooses what ``agents.heuristic_showdown`` chooses from Showdown's own request
and state, battles that end are replaced in the same step, and ``get_state`` / ``set_state``
resume exactly. Then one tiny masked PPO update on the reference backend (the host rollout,
``HostTrainer``) against the random player samples only legal choices, and
``envport.train.train`` runs two updates (the same compiled program: one compilation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import agents as A
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import env as V
from envport.envs.pokemon_gen1 import spec_support as SS
from envport.envs.pokemon_gen1 import vector_reference as VR

TINY = {"num_envs": 4, "num_steps": 8, "num_minibatches": 2, "update_epochs": 1,
        "hidden_sizes": [32]}


@jax.jit
def _engine_obs(state: V.EnvState, masks: jax.Array) -> jax.Array:
    return SS.observe(SS.flat_state(state.battle, state.seen, jnp), masks, jnp)


def _random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks], np.int32)


def test_the_batch_observes_as_the_engine_and_plays_the_host_heuristic() -> None:
    from envport.pettingzoo import OPPONENTS

    assert VR.OPPONENTS == OPPONENTS
    vec = VR.PokemonVectorReference(3, seed=1, opponent="heuristic", workers=2)
    bridge = V.PokemonBridge()
    rng = np.random.default_rng(0)
    try:
        obs = vec.reset()
        ended = decisions = 0
        saved = None
        for t in range(200):
            masks = vec.action_masks()
            flats = vec.flat_states()
            theirs = vec.opponent_choices()
            for i, flat in enumerate(flats):
                state = bridge.to_jax(flat)
                want = np.asarray(_engine_obs(state, jnp.asarray(flat["mask"])))[0]
                np.testing.assert_array_equal(obs[i], want, err_msg=f"step {t} battle {i}")
                np.testing.assert_array_equal(masks[i], flat["mask"][0])
                worker, bid = vec.worker_of(i)
                mine = A.heuristic_showdown(vec.requests[i].get("p2"), worker.state(bid), 1)
                assert int(theirs[i]) == mine, f"step {t} battle {i}"
                decisions += 1
            if ended and saved is None:
                saved = (vec.get_state(), obs.copy(), t)
            obs, reward, terminated, truncated = vec.step(_random_legal(masks, rng))
            assert obs.shape == (3, SS.OBS_SIZE) and not truncated.any()
            assert set(np.unique(reward)) <= {-1.0, 0.0, 1.0}
            assert np.all(reward[~terminated] == 0.0)
            ended += int(terminated.sum())
            if saved is not None and t >= saved[2] + 3:
                break
        assert ended >= 1 and decisions > 30 and saved is not None
        # resume from the saved state: the same observations, and the same battles after it
        snapshot, saved_obs, _ = saved
        vec.set_state(snapshot)
        np.testing.assert_array_equal(np.stack([SS.observe(f, f["mask"], np)[0]
                                                for f in vec.flat_states()]), saved_obs)
        again = [vec.step(np.zeros(3, np.int32))[0] for _ in range(3)]
        vec.set_state(snapshot)
        replay = [vec.step(np.zeros(3, np.int32))[0] for _ in range(3)]
        for x, y in zip(again, replay, strict=True):
            np.testing.assert_array_equal(x, y)
    finally:
        vec.close()


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="opponent"):
        VR.make(2, 0, opponent="champion")
    with pytest.raises(ValueError, match="only opponent"):
        VR.make(2, 0, frameskip=2)


def _program() -> Any:
    from envport.train.config import PPOConfig
    from envport.train.program import program
    from envport.train.run import default_config

    base, _ = default_config("pokemon-gen1")
    cfg = PPOConfig.from_dict({**base.to_dict(), **TINY})
    return program("pokemon-gen1", {"opponent": "random"}, cfg)


def _batch(trainer: Any) -> VR.PokemonVectorReference:
    assert isinstance(trainer.vec, VR.PokemonVectorReference)
    return trainer.vec


def _one_update() -> tuple[Any, Any, Any, list]:
    from envport.train.host_rollout import HostTrainer

    prog = _program()
    assert prog.masked
    trainer = HostTrainer(prog)
    state = trainer.init(1)
    state, rows = trainer.run(state, 1)
    return prog, trainer, state, rows


def test_masked_ppo_trains_on_the_reference_backend() -> None:
    """One tiny update against the random player samples only legal choices (the trajectory's
    masks are Showdown's) and its losses are finite."""
    _, trainer, _, rows = _one_update()
    try:
        traj = trainer.last_traj
        assert traj is not None and traj.mask is not None
        mask, action = np.asarray(traj.mask), np.asarray(traj.action)
        assert mask.shape == (TINY["num_steps"], TINY["num_envs"], E.N_CHOICES)
        assert np.take_along_axis(mask, action[..., None], -1).all()  # only legal sampled
        assert all(np.isfinite(v) for v in rows[0].values())
    finally:
        _batch(trainer).close()


@pytest.mark.slow  # a second batch of Node workers and battles re-imported
def test_a_reference_backend_run_resumes_from_its_saved_state() -> None:
    """A saved state (pickled, as checkpoints are) loads into a new trainer: Showdown holds the
    same battles (the same observations) and training goes on."""
    import pickle

    from envport.train.host_rollout import HostTrainer

    prog, trainer, state, _ = _one_update()
    saved = pickle.loads(pickle.dumps(trainer.save(state)))
    _batch(trainer).close()
    again = HostTrainer(prog)
    try:
        state = again.load(1, saved)
        restored = np.stack([SS.observe(f, f["mask"], np)[0] for f in _batch(again).flat_states()])
        np.testing.assert_array_equal(restored, saved["host"]["obs"])
        _, rows = again.run(state, 1)
        assert all(np.isfinite(v) for v in rows[0].values())
    finally:
        _batch(again).close()


@pytest.mark.slow  # ~40 s here: Node workers, the compiled update and two updates
def test_envport_train_runs_on_the_reference_backend(tmp_path: Path) -> None:
    from envport.train import train

    result = train("pokemon-gen1", "reference", steps=2 * 4 * 8, seed=1, out=tmp_path / "run",
                   config_overrides=TINY, progress=False, env_kwargs={"opponent": "heuristic"})
    log = (tmp_path / "run" / "log.csv").read_text().splitlines()
    assert len(log) == 3  # header + 2 updates
    assert jax.tree_util.tree_leaves(result.params)
