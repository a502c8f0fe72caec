"""HalfCheetah's L4 plumbing: the batched Gymnasium reference PPO trains on (same-step autoreset,
exact get_state/set_state) and a few PPO updates on each backend."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from envport.core.spaces import InvalidActionError
from envport.envs.halfcheetah.vector_reference import HalfCheetahVectorReference, make
from envport.train.backends import make_backend
from envport.train.run import default_config


def random_actions(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, (n, 6)).astype(np.float32)


def run(vec: HalfCheetahVectorReference, actions: list[np.ndarray]) -> list[tuple]:
    return [(*(np.copy(x) for x in vec.step(a)), vec.final_obs.copy()) for a in actions]


def near_truncation(vec: HalfCheetahVectorReference, steps_left: list[int]) -> None:
    """Move each env's TimeLimit counter so that it truncates after ``steps_left`` steps."""
    state = vec.get_state()
    for s, left in zip(state["envs"], steps_left, strict=True):
        s["elapsed_steps"] = 1000 - left
    vec.set_state(state)


def test_spaces_dtypes_and_seeding() -> None:
    vec = make(3, seed=2)
    obs = vec.reset()
    assert obs.shape == (3, 17) and obs.dtype == np.float32
    assert vec.action_space.shape == (6,) and vec.observation_space.shape == (17,)
    # Env i is reset with seed * num_envs + i: distinct starts, reproducible.
    assert len({o.tobytes() for o in obs}) == 3
    np.testing.assert_array_equal(make(3, seed=2).reset(), obs)
    o, r, term, trunc = vec.step(np.zeros((3, 6), np.float32))
    assert o.dtype == np.float32 and r.dtype == np.float32 and r.shape == (3,)
    assert not term.any() and not trunc.any()
    with pytest.raises(InvalidActionError):
        vec.step(np.full((3, 6), 2.0, np.float32))  # outside the Box: rejected, never clipped
    with pytest.raises(ValueError, match="no environment options"):
        make(1, frame_skip=2)


def test_same_step_autoreset() -> None:
    rng = np.random.default_rng(0)
    vec, twin = make(2, seed=0), make(2, seed=0)
    vec.reset()
    twin.reset()
    near_truncation(vec, [1, 3])
    near_truncation(twin, [1, 3])
    a = random_actions(rng, 2)
    obs, reward, terminated, truncated = vec.step(a)
    assert truncated.tolist() == [True, False] and not terminated.any()
    # The final step's reward, and the observation it ended on kept in final_obs, are those of
    # an env stepped without a reset; the returned observation is the next episode's first.
    core = twin.envs[0]
    o_final, r_final, *_ = core.step(a[0].astype(np.float64))
    np.testing.assert_array_equal(vec.final_obs[0], o_final.astype(np.float32))
    assert reward[0] == np.float32(r_final)
    assert not np.array_equal(obs[0], vec.final_obs[0])
    np.testing.assert_array_equal(obs[1], vec.final_obs[1])
    fresh = vec.envs[0].unwrapped
    assert vec.envs[0]._elapsed_steps == 0
    np.testing.assert_array_less(np.abs(fresh.data.qpos - fresh.init_qpos), 0.1 + 1e-12)
    # The next reset continues env 0's own RNG stream (no reseeding).
    assert not np.array_equal(obs[0], make(2, seed=0).reset()[0])


def test_get_state_set_state_resume_exactly() -> None:
    rng = np.random.default_rng(1)
    vec = make(3, seed=5)
    vec.reset()
    for _ in range(20):
        vec.step(random_actions(rng, 3))
    near_truncation(vec, [2, 7, 40])  # resets (RNG draws) happen after the snapshot
    snapshot = pickle.loads(pickle.dumps(vec.get_state()))
    actions = [random_actions(rng, 3) for _ in range(12)]
    expected = run(vec, actions)

    other = make(3, seed=99)  # a different batch, brought to the snapshot
    other.reset()
    other.step(random_actions(rng, 3))
    other.set_state(snapshot)
    got = run(other, actions)
    assert any(step[3].any() for step in expected)  # the episodes did restart
    for e, g in zip(expected, got, strict=True):
        for x, y in zip(e, g, strict=True):
            np.testing.assert_array_equal(x, y)
    with pytest.raises(ValueError, match="environments"):
        make(2).set_state(snapshot)


def test_backend_spaces_match_the_translation() -> None:
    backend = make_backend("halfcheetah", "reference", 2)
    assert backend.observation_space.shape == (17,) and backend.action_space.shape == (6,)
    cfg, env_kwargs = default_config("halfcheetah")
    assert env_kwargs == {} and cfg.num_envs % 2 == 0


@pytest.mark.parametrize("backend", ["reference", "jax"])
def test_ppo_trains_a_few_updates(backend: str, tmp_path: Path) -> None:
    from envport.train import train

    tiny = {"num_envs": 2, "num_steps": 8, "num_minibatches": 2, "update_epochs": 1}
    result = train("halfcheetah", backend, steps=2 * 8 * 3, seed=0, out=tmp_path / backend,
                   config_overrides=tiny, progress=False)
    assert not result.interrupted
    assert (result.updates, result.env_steps) == (3, 48)
    assert np.isfinite(result.sps) and result.sps > 0
