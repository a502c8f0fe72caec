"""The JAX engine as the reference batch's twin (``vector_engine.py``): from the same seed it
draws the same battles (and, against the random player, the same opponent integers) as
``vector_reference.PokemonVectorReference``, so along the same player-0 choices both batches
give the same observations, masks, rewards and ends, battle restarts included; and a policy
evaluated on both backends (``envport.train.evaluation.evaluate``) wins and loses the same
battles: L4's sim-to-sim comparison meets common random numbers. The step-by-step comparisons
are ``slow`` (the batch's compilations); the default suite evaluates a policy on both."""

from __future__ import annotations

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


def test_a_policy_evaluated_on_both_backends_plays_the_same_battles() -> None:
    from envport.core.spaces import Box, Discrete
    from envport.envs.pokemon_gen1 import engine as E
    from envport.envs.pokemon_gen1 import spec_support as SS
    from envport.train.evaluation import evaluate
    from envport.train.ppo import make_policy
    from envport.train.run import default_config

    cfg, kwargs = default_config("pokemon-gen1")
    space = Box(SS.OBS_LOW, SS.OBS_HIGH, (SS.OBS_SIZE,))
    params = make_policy(cfg, space, Discrete(E.N_CHOICES)).init(jax.random.key(1))
    got = {b: evaluate("pokemon-gen1", b, params, episodes=3, seed=5, config=cfg,
                       env_kwargs=dict(kwargs)) for b in ("jax", "reference")}
    assert got["jax"].shape == (3,) and set(np.unique(got["jax"])) <= {-1.0, 0.0, 1.0}
    assert np.array_equal(got["jax"], got["reference"])


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="opponent"):
        VE.make(2, 0, opponent="champion")
    with pytest.raises(ValueError, match="only opponent"):
        VE.make(2, 0, frameskip=2)
    with pytest.raises(RuntimeError, match="reset"):
        VE.make(2, 0).step(np.zeros(2, np.int32))
