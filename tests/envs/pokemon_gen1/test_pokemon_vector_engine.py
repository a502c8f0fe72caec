"""The JAX engine as the reference batch's twin (``vector_engine.py``): from the same seed it
draws the same battles (and, against the random player, the same opponent integers) as
``vector_reference.PokemonVectorReference``, so along the same player-0 choices both batches
give the same observations, masks, rewards and ends, battle restarts included; and a policy
evaluated on both backends (``envport.train.evaluation.evaluate``) wins and loses the same
battles: L4's sim-to-sim comparison meets common random numbers. The step-by-step comparisons
are ``slow`` (the batch's compilations), and so are the evaluations on both and the stopped
battles: each needs the batch's step compiled with the heuristic opponent, 110 s of XLA
compilation on 2 cores that no other default test shares. The default suite keeps the refused
options; ``pytest -m slow`` runs the rest."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import vector_engine as VE
from envport.envs.pokemon_gen1 import vector_reference as VR


def _random_legal(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.array([rng.choice(np.flatnonzero(m)) for m in masks], np.int32)


def _lockstep(opponent: str, steps: int) -> int:
    ref = VR.PokemonVectorReference(3, seed=3, opponent=opponent, workers=1)
    eng = VE.PokemonVectorEngine(3, seed=3, opponent=opponent)
    try:
        assert np.array_equal(ref.reset(), eng.reset())
        rng, ended = np.random.default_rng(0), 0
        for k in range(steps):
            masks = ref.action_masks()
            assert np.array_equal(masks, eng.action_masks()), f"step {k}: masks"
            actions = _random_legal(masks, rng)
            mine = ref.step(actions)
            for name, a, b in zip(("obs", "reward", "terminated", "truncated"), mine,
                                  eng.step(actions), strict=True):
                assert np.array_equal(a, b), f"step {k}: {name} {np.argwhere(a != b)[:4]}"
            ended += int(mine[2].sum())
        return ended
    finally:
        ref.close()


@pytest.mark.slow  # its own compilations of the batch's step (minutes on loaded cores)
def test_both_batches_play_the_same_battles_against_the_heuristic() -> None:
    assert _lockstep("heuristic", 120) >= 2  # restarted battles compared too


@pytest.mark.slow
def test_both_batches_play_the_same_battles_against_the_random_player() -> None:
    assert _lockstep("random", 150) >= 2


def _untrained_policy() -> tuple[Any, Any]:
    from envport.core.spaces import Box, Discrete
    from envport.envs.pokemon_gen1 import engine as E
    from envport.envs.pokemon_gen1 import spec_support as SS
    from envport.train.ppo import make_policy
    from envport.train.run import default_config

    cfg = default_config("pokemon-gen1")[0]
    space = Box(SS.OBS_LOW, SS.OBS_HIGH, (SS.OBS_SIZE,))
    return cfg, make_policy(cfg, space, Discrete(E.N_CHOICES)).init(jax.random.key(1))


@pytest.mark.slow
def test_a_policy_evaluated_on_both_backends_plays_the_same_battles() -> None:
    from envport.train.evaluation import evaluate
    from envport.train.run import default_config

    cfg, params = _untrained_policy()
    kwargs = default_config("pokemon-gen1")[1]
    got = {b: evaluate("pokemon-gen1", b, params, episodes=3, seed=5, config=cfg,
                       env_kwargs=dict(kwargs)) for b in ("jax", "reference")}
    assert got["jax"].shape == (3,) and set(np.unique(got["jax"])) <= {-1.0, 0.0, 1.0}
    assert np.array_equal(got["jax"], got["reference"])


@pytest.mark.slow
def test_the_evaluation_stops_finished_battles_and_scores_the_same_battles() -> None:
    """The evaluation stops each battle once its first one has ended (``set_active``); against
    the heuristic, which draws nothing while battles play, the returns are those of the same
    batch played without stopping (a view of it without ``set_active``)."""
    from envport.train.evaluation import _play

    cfg, params = _untrained_policy()

    class Counted:
        def __init__(self, batch: VE.PokemonVectorEngine, stops: bool) -> None:
            self.batch, self.stops, self.calls = batch, stops, []

        def __getattr__(self, name: str) -> Any:
            if name == "set_active":
                if not self.stops:  # the view of a batch that cannot stop its battles
                    raise AttributeError(name)
                return lambda active: (self.calls.append(active.copy()),
                                       self.batch.set_active(active))
            return getattr(self.batch, name)

    stopping, plain = (Counted(VE.PokemonVectorEngine(3, seed=11), s) for s in (True, False))
    assert not hasattr(plain, "set_active")
    got = _play(stopping, cfg, params, 3, 11, False, 10_000)
    assert np.array_equal(got, _play(plain, cfg, params, 3, 11, False, 10_000))
    assert stopping.calls and not stopping.calls[-1].all()  # it did stop battles
    assert plain.batch._active.all()  # and the plain one did not


@pytest.mark.slow
def test_a_stopped_battle_is_not_stepped_and_both_batches_still_agree() -> None:
    """``set_active`` (the evaluation stops each battle once its first one has ended): a
    stopped battle keeps its observation and mask, scores 0, never ends, and Showdown is sent
    nothing for it (its battle's turn stays put); the battles still playing are the ones a
    batch that stops nothing plays, and the JAX twin stops alike, across restarts of the
    others."""
    ref = VR.PokemonVectorReference(3, seed=3, opponent="heuristic", workers=1)
    eng = VE.PokemonVectorEngine(3, seed=3, opponent="heuristic")
    free = VR.PokemonVectorReference(3, seed=3, opponent="heuristic", workers=1)
    try:
        for batch in (ref, eng):
            with pytest.raises(ValueError, match="active must be bool"):
                batch.set_active(np.ones(2, bool))
        obs = ref.reset()
        assert np.array_equal(obs, eng.reset()) and np.array_equal(obs, free.reset())
        playing = np.array([True, False, True])
        rng, free_ended, turn, restarts = np.random.default_rng(1), False, -1, 0
        for k in range(80):
            if k == 4:  # battle 1 stops here
                ref.set_active(playing)
                eng.set_active(playing)
                held_obs, held_mask = obs[1].copy(), ref.action_masks()[1].copy()
                turn = _turn(*ref.worker_of(1))
            actions = _random_legal(ref.action_masks(), rng)
            mine, twin, other = ref.step(actions), eng.step(actions), free.step(actions)
            obs = mine[0]
            for name, a, b in zip(("obs", "reward", "terminated", "truncated"), mine, twin,
                                  strict=True):
                assert np.array_equal(a, b), f"step {k}: {name} {np.argwhere(a != b)[:4]}"
            if not free_ended:  # until a restart draws other teams for the batch that stops none
                for a, b in zip(mine, other, strict=True):
                    assert np.array_equal(a[playing], b[playing]), f"step {k}"
                free_ended = bool(other[2].any())
            if k >= 4:
                assert np.array_equal(obs[1], held_obs), f"step {k}: the stopped battle moved"
                assert np.array_equal(ref.action_masks()[1], held_mask)
                assert np.array_equal(eng.action_masks()[1], held_mask)
                assert mine[1][1] == 0 and not mine[2][1]
                restarts += int(mine[2].sum())
        assert restarts >= 1  # a battle still playing restarted while battle 1 was stopped
        assert _turn(*ref.worker_of(1)) == turn  # Showdown was sent nothing for it
        assert _turn(*free.worker_of(1)) > turn  # where the batch that stops none played on
    finally:
        ref.close()
        free.close()


def _turn(worker: Any, battle_id: str) -> int:
    reply = worker.request([{"op": "export", "battle_id": battle_id}])[0]
    return int(reply["result"]["turn"])


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="opponent"):
        VE.make(2, 0, opponent="champion")
    with pytest.raises(ValueError, match="only opponent"):
        VE.make(2, 0, frameskip=2)
    with pytest.raises(RuntimeError, match="reset"):
        VE.make(2, 0).step(np.zeros(2, np.int32))
