"""envport.gym against Gymnasium's own SyncVectorEnv, mode by mode.

The checks follow Gymnasium's vector-env tests where they apply (tests/vector/
test_autoreset_mode.py, test_vector_env.py::test_vector_env_equal and test_final_obs_info,
test_vector_env_info.py::test_vector_return_info): a SyncVectorEnv over the same environment
under the same autoreset mode is the oracle, compared with ``gymnasium.utils.env_checker.
data_equivalence``; and Gymnasium's vector wrappers run on top of the adapter.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv, VectorEnv
from gymnasium.wrappers.vector import DictInfoToList, NormalizeObservation, RecordEpisodeStatistics

import envport
from envport.core.api import Array, Environment, StepResult, pytree_dataclass
from envport.core.spaces import Box, Discrete
from envport.envs.cartpole.bridge import CartPoleBridge
from envport.envs.cartpole.reference import CartPoleReference
from envport.gym import EnvportVectorEnv, make_vec

SAME, NEXT, DISABLED = AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED
MODES = [NEXT, SAME, DISABLED]


# ---------------------------------------------------------------- a counter, on both sides
# Action 2 terminates, the 4th step truncates; the step reports its count and action, the reset
# reports {"reset": True, "count": 0}: every info case of Gymnasium's layout (a key from the step
# only, from the reset only, from both) in every mode.


@pytree_dataclass
class CountState:
    count: Array


class Counter(Environment):
    name = "counter"

    def default_params(self) -> None:
        return None

    def reset(self, key: Array, params: Any = None) -> tuple[CountState, Array]:
        state = CountState(jnp.zeros((), jnp.int32))
        return state, self.observe(state)

    def observe(self, state: CountState) -> Array:
        return state.count.astype(jnp.float32)[None]

    def sample_draws(self, key: Array, state: CountState, params: Any = None) -> tuple:
        return ()

    def transition(self, state: CountState, action: Array, draws: Any = (),
                   params: Any = None) -> StepResult:
        new = CountState(state.count + 1)
        return StepResult(new, self.observe(new), action.astype(jnp.float32), action == 2,
                          new.count >= 4, {"count": new.count, "action": action})

    def reset_info(self, state: CountState, params: Any = None) -> dict[str, Array]:
        return {"reset": jnp.ones((), jnp.bool_), "count": state.count}

    def observation_space(self, params: Any = None) -> Box:
        return Box(0.0, 10.0, (1,))

    def action_space(self, params: Any = None) -> Discrete:
        return Discrete(3)


class GymCounter(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(0.0, 10.0, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(3, dtype=np.int32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        super().reset(seed=seed)
        self.count = 0
        return np.float32([0]), {"reset": True, "count": np.int32(0)}

    def step(self, action: Any) -> tuple:
        self.count += 1
        info = {"count": np.int32(self.count), "action": np.int32(action)}
        return np.float32([self.count]), float(action), bool(action == 2), self.count >= 4, info


@pytest.mark.parametrize("wrap", [False, True], ids=["dict", "DictInfoToList"])
@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])
def test_counter_steps_exactly_as_sync_vector_env(mode: AutoresetMode, wrap: bool) -> None:
    n = 3
    ours: VectorEnv = EnvportVectorEnv(Counter(), n, autoreset_mode=mode)
    sync: VectorEnv = SyncVectorEnv([GymCounter for _ in range(n)], autoreset_mode=mode)
    if wrap:
        ours, sync = DictInfoToList(ours), DictInfoToList(sync)
    assert ours.metadata["autoreset_mode"] == sync.metadata["autoreset_mode"] == mode
    assert data_equivalence(ours.reset(seed=0), sync.reset(seed=0), exact=True)
    rng = np.random.default_rng(0)
    seen = set()
    for t in range(40):
        actions = rng.choice(3, n, p=[0.4, 0.4, 0.2]).astype(np.int32)
        got, want = ours.step(actions), sync.step(actions)
        assert data_equivalence(got, want, exact=True), f"step {t}:\n{got}\n{want}"
        done = want[2] | want[3]
        seen.update(("term", "trunc")[k] for k in range(2) if want[2 + k].any())
        if mode == DISABLED and done.any():
            got = ours.reset(options={"reset_mask": done.copy()})
            want = sync.reset(options={"reset_mask": done.copy()})
            assert data_equivalence(got, want, exact=True), f"masked reset at {t}"
    assert seen == {"term", "trunc"}


# ---------------------------------------------------------------- CartPole: the real one


def test_partial_reset_keeps_the_others() -> None:
    """As test_partial_reset checks for SyncVectorEnv: the same seed restarts the masked
    environments where they first started; the others keep their state."""
    ours = make_vec("cartpole", 3, autoreset_mode=DISABLED)
    first, _ = ours.reset(seed=0)
    for _ in range(3):
        stepped, *_ = ours.step(np.ones(3, np.int64))
    again, info = ours.reset(seed=0, options={"reset_mask": np.array([True, True, False])})
    assert info == {}
    np.testing.assert_array_equal(again[2], stepped[2])
    np.testing.assert_array_equal(again[:2], first[:2])
    assert not np.array_equal(again[:2], stepped[:2])


def _layout(infos: dict[str, Any]) -> dict[str, Any]:
    """What Gymnasium's layout fixes: keys, masks, shapes (values compared separately)."""
    out: dict[str, Any] = {}
    for k, v in infos.items():
        if isinstance(v, dict):
            out[k] = _layout(v)
        elif k.startswith("_"):
            out[k] = tuple(bool(b) for b in v)
        elif v.dtype == object:
            out[k] = tuple(x is None for x in v)
        else:
            out[k] = v.shape
    return out


@pytest.mark.parametrize("mode", [NEXT, SAME], ids=["NextStep", "SameStep"])
def test_cartpole_matches_sync_vector_env_over_gymnasium_cartpole(mode: AutoresetMode) -> None:
    """test_vector_env_equal's comparison, with SyncVectorEnv over Gymnasium's real CartPole as
    the oracle: before every step each Gymnasium copy is put in the translation's state (physics
    and TimeLimit count), so flags, rewards, observations and infos must agree step by step
    (resets draw from different generators: those observations are only checked in range)."""
    n, max_steps = 4, 12
    refs = [CartPoleReference(params={"max_steps": max_steps}) for _ in range(n)]
    sync = SyncVectorEnv([lambda r=r: r.env for r in refs], autoreset_mode=mode)
    ours = make_vec("cartpole", n, max_steps=max_steps, autoreset_mode=mode)
    assert ours.single_observation_space == sync.single_observation_space
    assert ours.single_action_space == sync.single_action_space
    assert ours.observation_space == sync.observation_space
    assert ours.action_space == sync.action_space
    bridge = CartPoleBridge()
    got_reset, want_reset = ours.reset(seed=0), sync.reset(seed=0)
    assert got_reset[1] == want_reset[1] == {}
    rng = np.random.default_rng(1)
    ended = np.zeros(n, np.bool_)
    counts = {"term": 0, "trunc": 0, "reset steps": 0}
    for t in range(80):
        states = bridge.from_jax(ours._state)  # batched: one row per environment
        for i, ref in enumerate(refs):
            ref.set_state({k: v[i] for k, v in states.items()})
        actions = rng.integers(0, 2, n)
        obs, rew, term, trunc, infos = ours.step(actions)
        s_obs, s_rew, s_term, s_trunc, s_infos = sync.step(actions)
        np.testing.assert_array_equal(term, s_term, err_msg=f"step {t}")
        np.testing.assert_array_equal(trunc, s_trunc, err_msg=f"step {t}")
        assert rew.dtype == s_rew.dtype and np.array_equal(rew, s_rew)
        assert obs.dtype == s_obs.dtype
        assert _layout(infos) == _layout(s_infos), f"step {t}: {infos} vs {s_infos}"
        assert data_equivalence(infos, s_infos)  # final_obs within 1e-5
        fresh = ended if mode == NEXT else term | trunc
        np.testing.assert_allclose(obs[~fresh], s_obs[~fresh], rtol=1e-5, atol=1e-6)
        assert np.all(np.abs(obs[fresh]) <= 0.05) and np.all(np.abs(s_obs[fresh]) <= 0.05)
        counts["term"] += int(term.sum())
        counts["trunc"] += int(trunc.sum())
        counts["reset steps"] += int(ended.sum()) if mode == NEXT else 0
        ended = term | trunc
    assert counts["term"] > 0 and counts["trunc"] > 0
    assert mode == SAME or counts["reset steps"] > 0


def test_normalize_observation_runs_in_next_step_and_refuses_same_step() -> None:
    n, steps = 4, 60
    raw = make_vec("cartpole", n, seed=3)
    wrapped = NormalizeObservation(make_vec("cartpole", n, seed=3))
    seen = [raw.reset(seed=3)[0]]
    wrapped.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(steps):
        actions = rng.integers(0, 2, n)
        obs, *_ = raw.step(actions)
        normed, *_ = wrapped.step(actions)
        seen.append(obs)
    seen_all = np.concatenate(seen)
    rms = wrapped.obs_rms
    np.testing.assert_allclose(rms.mean, seen_all.mean(axis=0), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(rms.var, seen_all.var(axis=0), rtol=1e-3, atol=1e-7)
    np.testing.assert_allclose(normed, (obs - rms.mean) / np.sqrt(rms.var + wrapped.epsilon),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="NEXT_STEP"):
        NormalizeObservation(make_vec("cartpole", n, autoreset_mode=SAME))


@pytest.mark.parametrize("mode", [NEXT, SAME], ids=["NextStep", "SameStep"])
def test_record_episode_statistics(mode: AutoresetMode) -> None:
    """Gymnasium's episode statistics count CartPole's steps (reward 1 each) in both modes."""
    n = 3
    venv = RecordEpisodeStatistics(make_vec("cartpole", n, autoreset_mode=mode))
    venv.reset(seed=0)
    lengths, pending = np.zeros(n, int), np.zeros(n, np.bool_)
    episodes = 0
    rng = np.random.default_rng(2)
    for _ in range(150):
        _, _, term, trunc, infos = venv.step(rng.integers(0, 2, n))
        lengths = np.where(pending, 0, lengths)  # NEXT_STEP: the reset step is no episode's
        lengths += ~pending if mode == NEXT else 1
        done = term | trunc
        if done.any():
            np.testing.assert_array_equal(infos["_episode"], done)
            np.testing.assert_array_equal(infos["episode"]["l"][done], lengths[done])
            np.testing.assert_array_equal(infos["episode"]["r"][done], lengths[done])
            episodes += int(done.sum())
        if mode == SAME:
            lengths[done] = 0
        else:
            pending = done
    assert episodes >= 10


# ---------------------------------------------------------------- per-environment semantics


def test_declared_spaces_of_pong_and_halfcheetah() -> None:
    # PufferLib's Pong declares Box(0, 1, (8,), float32) and Discrete(3).
    pong = make_vec("pong", 2)
    assert pong.single_observation_space == gymnasium.spaces.Box(0, 1, (8,), np.float32)
    assert pong.single_action_space == gymnasium.spaces.Discrete(3)
    assert (make_vec("pong", 2, continuous=True).single_action_space
            == gymnasium.spaces.Box(-1, 1, (1,), np.float32))
    for exclude in (True, False):
        ref = gymnasium.make("HalfCheetah-v5", exclude_current_positions_from_observation=exclude)
        venv = EnvportVectorEnv(envport.make("halfcheetah", exclude_current_positions=exclude), 2)
        assert venv.single_observation_space == ref.observation_space
        assert venv.single_observation_space.dtype == np.float64
        assert venv.single_action_space == ref.action_space


def _pong_run(mode: AutoresetMode, actions: np.ndarray, stop_after: int) -> list[tuple]:
    venv = make_vec("pong", 1, seed=7, autoreset_mode=mode, max_score=2)
    venv.reset(seed=7)
    out, games = [], 0
    for a in actions:
        res = venv.step(np.array([a]))
        out.append(res)
        games += int(res[2][0])
        if games == stop_after:
            break
    return out


def test_pong_final_obs_is_the_next_games_serve() -> None:
    """Pong resets itself (PufferLib): at a game's end the returned observation is already the
    next game's serve; SAME_STEP's final_obs holds that observation; NEXT_STEP's reset step
    keeps the game Pong started, so its games are SAME_STEP's with one idle step between."""
    actions = np.random.default_rng(0).integers(0, 3, 5000)
    same = _pong_run(SAME, actions, stop_after=2)
    ends = [t for t, r in enumerate(same) if r[2][0]]
    assert len(ends) == 2
    for t in ends:
        obs, _, _, _, infos = same[t]
        assert infos["_final_obs"][0] and infos["final_info"] == {}
        np.testing.assert_array_equal(infos["final_obs"][0], obs[0])
        np.testing.assert_allclose(obs[0, 2], 0.2)  # ball_x at width / 5: the serve
        np.testing.assert_array_equal(obs[0, 6:], 0.0)  # scores back to zero (quirk: always 0)
    # NEXT_STEP: the same actions, with one (ignored) action inserted after each game's end.
    next_actions = np.insert(actions, [t + 1 for t in ends], 0)
    nxt = _pong_run(NEXT, next_actions, stop_after=2)
    assert len(nxt) == len(same) + 1  # the first game's reset step; the run stops at the second
    shift = 0
    for t, (obs, rew, term, _, infos) in enumerate(nxt):
        if t > 0 and nxt[t - 1][2][0]:  # the reset step: the serve again, reward 0
            shift += 1
            np.testing.assert_array_equal(obs, nxt[t - 1][0])
            assert rew[0] == 0.0 and not term[0] and infos == {}
            continue
        s_obs, s_rew, s_term, _, _ = same[t - shift]
        np.testing.assert_array_equal(obs, s_obs)
        assert rew[0] == s_rew[0] and term[0] == s_term[0]


def _halfcheetah_layouts(mode: AutoresetMode) -> None:
    n, max_steps = 2, 2
    ours = make_vec("halfcheetah", n, max_steps=max_steps, autoreset_mode=mode)
    sync = SyncVectorEnv([lambda: gymnasium.make("HalfCheetah-v5", max_episode_steps=max_steps)
                          for _ in range(n)], autoreset_mode=mode)
    (obs, info), (s_obs, s_info) = ours.reset(seed=0), sync.reset(seed=0)
    assert obs.dtype == s_obs.dtype == np.float64 and _layout(info) == _layout(s_info)
    # Reset info is HalfCheetah-v5's: {"x_position": qpos[0]}.
    np.testing.assert_array_equal(info["x_position"], np.asarray(ours._state.qpos[:, 0]))
    zeros = np.zeros((n, 6), np.float32)
    for t in range(2 * max_steps + 1):
        got, want = ours.step(zeros), sync.step(zeros)
        assert got[0].dtype == want[0].dtype and got[1].dtype == want[1].dtype
        np.testing.assert_array_equal(got[3], want[3])
        assert _layout(got[4]) == _layout(want[4]), f"step {t}: {got[4]} vs {want[4]}"


def test_halfcheetah_reset_info_is_gymnasiums() -> None:
    """reset() reports HalfCheetah-v5's reset info (no step compiled: the step's layouts, a
    ~45 s compile each, are the slow tests below; the Counter checks the same code exactly)."""
    n = 2
    ours = make_vec("halfcheetah", n)
    sync = SyncVectorEnv([lambda: gymnasium.make("HalfCheetah-v5") for _ in range(n)])
    (obs, info), (s_obs, s_info) = ours.reset(seed=0), sync.reset(seed=0)
    assert obs.dtype == s_obs.dtype == np.float64 and obs.shape == s_obs.shape
    assert _layout(info) == _layout(s_info) == {"x_position": (n,), "_x_position": (True, True)}
    np.testing.assert_array_equal(info["x_position"], np.asarray(ours._state.qpos[:, 0]))
    masked, m_info = ours.reset(options={"reset_mask": np.array([False, True])})
    assert _layout(m_info) == {"x_position": (n,), "_x_position": (False, True)}
    np.testing.assert_array_equal(masked[0], obs[0])


@pytest.mark.slow
def test_halfcheetah_infos_layout_same_step() -> None:
    """final_info with Gymnasium's four keys, top-level x_position from the reset."""
    _halfcheetah_layouts(SAME)


@pytest.mark.slow
def test_halfcheetah_infos_layout_next_step() -> None:
    _halfcheetah_layouts(NEXT)
