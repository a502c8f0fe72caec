"""gb-catch as an environment: envport.make, its options and spaces, the core batch
(``CoreVectorEnv``, one Rayon call a step) against single cores, and the Gymnasium vector API."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import envport
from envport.envs.gameboy.catch import CATCH, make_gym_vector, make_vector
from envport.envs.gameboy.env import CoreGame


def test_make_gives_the_core_with_declared_spaces() -> None:
    env = envport.make("gb-catch")
    assert isinstance(env, CoreGame) and envport.spec("gb-catch").backend == "host"
    obs = env.reset(0)
    space: Any = env.observation_space  # an envport Box, which takes NumPy arrays too
    assert space.shape == (6,) and obs.dtype == np.float32
    assert space.contains(obs) and env.action_space.n == 6
    assert envport.make("gb-catch", frame_skip=2).frame_skip == 2


def test_bad_options_and_actions_are_refused() -> None:
    with pytest.raises(ValueError, match="frame_skip"):
        envport.make("gb-catch", frame_skip=0)
    with pytest.raises(ValueError, match="gb-catch has no option 'frameskip'"):
        envport.spec("gb-catch").with_options(frameskip=2)
    env = envport.make("gb-catch")
    env.reset(0)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(6)


def test_the_batch_equals_single_cores_with_autoreset() -> None:
    n, seed, steps = 4, 3, 400
    vec = make_vector(n, seed, max_frames=440)  # truncation at 110 steps: both ends occur
    singles = [CoreGame(CATCH, max_frames=440) for _ in range(n)]
    streams = [np.random.default_rng(seed * n + i) for i in range(n)]  # the documented seeding
    obs = vec.reset()
    for i, s in enumerate(singles):
        assert np.array_equal(obs[i], s.reset(int(streams[i].integers(0, 2**31 - 1))))
    rng = np.random.default_rng(0)
    ends = {"terminated": 0, "truncated": 0}
    for _ in range(steps):
        actions = rng.integers(0, 6, n)
        obs, rew, term, trunc = vec.step(actions)
        for i, s in enumerate(singles):
            o, r, te, tu, _ = s.step(int(actions[i]))
            assert (r, te, tu) == (float(rew[i]), bool(term[i]), bool(trunc[i]))
            if te or tu:
                assert np.array_equal(vec.final_obs[i], o)
                o = s.reset(int(streams[i].integers(0, 2**31 - 1)))
            assert np.array_equal(obs[i], o)
        ends["terminated"] += int(term.sum())
        ends["truncated"] += int(trunc.sum())
    assert ends["terminated"] > 0 and ends["truncated"] > 0


def test_the_pyboy_batch_plays_the_same_games_as_the_core_batch() -> None:
    """The training backends of both sides: same seed, same actions, same results."""
    make = envport.spec("gb-catch").training.make_vector_reference
    assert make is not None
    ref = make(3, 5, max_frames=400)
    core = make_vector(3, 5, max_frames=400)
    assert np.array_equal(ref.reset(), core.reset())
    rng = np.random.default_rng(1)
    ended = 0
    for _ in range(150):
        actions = rng.integers(0, 6, 3)
        got_ref, got_core = ref.step(actions), core.step(actions)
        for x, y in zip(got_ref, got_core, strict=True):
            assert np.array_equal(x, y)
        assert np.array_equal(ref.final_obs, core.final_obs)
        ended += int((got_ref[2] | got_ref[3]).sum())
    assert ended >= 3  # every environment ended an episode (truncation at 100 steps)
    ref.close()


def test_batch_state_round_trip() -> None:
    vec = make_vector(2, 0)
    vec.reset()
    for _ in range(10):
        vec.step(np.array([1, 2]))
    saved = vec.get_state()
    after = [vec.step(np.array([3, 4])) for _ in range(20)]
    vec.set_state(saved)
    again = [vec.step(np.array([3, 4])) for _ in range(20)]
    for a, b in zip(after, again, strict=True):
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)


def test_gymnasium_vector_api() -> None:
    import gymnasium

    env = make_gym_vector(3, max_frames=80)
    assert isinstance(env, gymnasium.vector.VectorEnv)
    obs, info = env.reset(seed=1)
    assert obs.shape == (3, 6) and env.observation_space.contains(obs) and info == {}
    done_seen = False
    for _ in range(25):
        obs, rew, term, trunc, infos = env.step(env.action_space.sample())
        assert obs.shape == (3, 6) and rew.dtype == np.float64 and term.shape == (3,)
        if (term | trunc).any():
            done_seen = True
            mask = infos["_final_obs"]
            assert np.array_equal(mask, term | trunc)
            assert all(infos["final_obs"][i].shape == (6,) for i in np.flatnonzero(mask))
    assert done_seen  # truncated at 20 steps


def test_perturbed_states_carry_their_values_into_the_core() -> None:
    """L2's perturbation writes the game's variables through PyBoy; the snapshot it returns
    holds them, and the core imports them from it."""
    from envport.envs.gameboy.catch import perturb
    from envport.envs.gameboy.env import PyBoyGame

    ref = PyBoyGame(CATCH)
    ref.reset(2)
    ref.step(1)
    visited = ref.get_state()
    rng = np.random.default_rng(4)
    moved = 0
    for _ in range(5):
        state = perturb(visited, rng)
        core = CoreGame(CATCH)
        core.set_state({k: v for k, v in state.items() if k != "core_state"})
        assert np.array_equal(core._read(0xC004, 0xC00A), state["wram"][4:10])
        assert 1 <= state["wram"][5] <= 3 and 8 <= state["wram"][6] <= 144
        moved += int(not np.array_equal(state["wram"][4:10], visited["wram"][4:10]))
    assert moved == 5
    ref.close()
