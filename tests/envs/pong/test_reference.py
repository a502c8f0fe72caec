"""The C reference of Pong against the rules of /work/shared/specs/pong.md.

The rules are re-stated here independently of reference.c: a few hand-built situations, and a
small float32 model of the spec (with glibc's rand_r algorithm) stepped alongside the C
reference on random policies.
"""

from __future__ import annotations

import numpy as np
import pytest

from envport.core.reference import Reference
from envport.envs.pong.reference import STATE_DTYPES, PongReference, c_throughput

f32 = np.float32

W, H = f32(500), f32(640)
PADDLE_H, BALL_W, BALL_H = f32(70), f32(32), f32(32)
SPEED, VX0, VY0, INC, MAX_VY = f32(8), f32(10), f32(1), f32(3), f32(13)
MAX_SCORE = 21
MIN_Y, MAX_Y = f32(-35), f32(605)


def rand_r(seed: int) -> tuple[int, int]:
    """glibc's rand_r: (result, new state)."""
    nxt = seed
    result = 0
    for bits in (11, 10, 10):
        nxt = (nxt * 1103515245 + 12345) & 0xFFFFFFFF
        result = (result << 10) ^ ((nxt >> 16) % (1 << bits))
    return result, nxt


class Constants:
    """The game constants as float32 (max_score an int), defaults from the rules' table."""

    def __init__(self, **params: float) -> None:
        get = {"width": 500, "height": 640, "paddle_height": 70, "ball_width": 32,
               "ball_height": 32, "paddle_speed": 8, "ball_initial_speed_x": 10,
               "ball_initial_speed_y": 1, "ball_speed_y_increment": 3, "ball_max_speed_y": 13,
               "max_score": 21, "paddle_width": 20}  # fmt: skip
        get.update(params)
        self.W, self.H = f32(get["width"]), f32(get["height"])
        self.PADDLE_H, self.BALL_W = f32(get["paddle_height"]), f32(get["ball_width"])
        self.BALL_H, self.SPEED = f32(get["ball_height"]), f32(get["paddle_speed"])
        self.VX0, self.VY0 = f32(get["ball_initial_speed_x"]), f32(get["ball_initial_speed_y"])
        self.INC, self.MAX_VY = f32(get["ball_speed_y_increment"]), f32(get["ball_max_speed_y"])
        self.MAX_SCORE = int(get["max_score"])
        self.MIN_Y = -self.PADDLE_H / f32(2)
        self.MAX_Y = self.H - self.PADDLE_H / f32(2)


DEFAULT = Constants()


def spec_obs(s: dict, k: Constants = DEFAULT) -> np.ndarray:
    return np.array(
        [
            (f32(s["paddle_yl"]) - k.MIN_Y) / (k.MAX_Y - k.MIN_Y),
            (f32(s["paddle_yr"]) - k.MIN_Y) / (k.MAX_Y - k.MIN_Y),
            f32(s["ball_x"]) / k.W,
            f32(s["ball_y"]) / k.H,
            (f32(s["ball_vx"]) + k.VX0) / (f32(2) * k.VX0),
            (f32(s["ball_vy"]) + k.MAX_VY) / (f32(2) * k.MAX_VY),
            int(s["score_l"]) // k.MAX_SCORE,
            int(s["score_r"]) // k.MAX_SCORE,
        ],
        dtype=np.float32,
    )


class SpecPong:
    """The spec, transcribed in numpy float32 (independent of reference.c).

    ``rules="8e3e754"`` is PufferLib's newer pong.h as its source reads: no reward for a return,
    and after a point that does not end the episode the new round's observation.
    """

    def __init__(self, frameskip: int = 1, continuous: bool = False, rules: str = "61f27b3",
                 params: dict | None = None) -> None:
        self.frameskip, self.continuous, self.rules = frameskip, continuous, rules
        self.k = Constants(**(params or {}))

    def round_reset(self) -> None:
        k = self.k
        r, self.rng = rand_r(self.rng)
        self.draws.append(r)
        self.yl = self.yr = k.H / f32(2) - k.PADDLE_H / f32(2)
        self.bx, self.by = k.W / f32(5), k.H / f32(2) - k.BALL_H / f32(2)
        self.vx, self.vy = k.VX0, f32(r % 2 - 1) * k.VY0
        self.tick = 0

    def game_reset(self) -> None:
        self.round_reset()
        self.score_l = self.score_r = 0
        self.obs = spec_obs(self.state(), self.k)

    def reset(self, seed: int) -> np.ndarray:
        self.rng, self.draws = seed, []
        self.game_reset()
        return self.obs.copy()

    def state(self) -> dict:
        return {
            "paddle_yl": self.yl, "paddle_yr": self.yr, "ball_x": self.bx, "ball_y": self.by,
            "ball_vx": self.vx, "ball_vy": self.vy, "score_l": self.score_l,
            "score_r": self.score_r, "tick": self.tick, "rng": self.rng,
        }  # fmt: skip

    def point(self, agent: bool) -> None:
        if agent:
            self.score_r += 1
            self.reward = f32(1)
            ended = self.score_r == self.k.MAX_SCORE
        else:
            self.score_l += 1
            self.reward = f32(-1)
            ended = self.score_l == self.k.MAX_SCORE
        if ended:
            self.terminal = True
            self.game_reset()
        else:
            self.round_reset()
            if self.rules == "8e3e754":
                self.obs = spec_obs(self.state(), self.k)
            # 61f27b3: no observation, it stays stale

    def step(self, action) -> tuple[np.ndarray, float, bool]:
        k = self.k
        self.tick += 1
        self.reward, self.terminal, self.draws = f32(0), False, []
        d = f32(action) if self.continuous else f32({0: 0, 1: 1, 2: -1}[action])
        for _ in range(self.frameskip):
            self.yr = self.yr + k.SPEED * d
            self.yl = self.yl + np.clip(self.by - (self.yl + k.PADDLE_H / f32(2)), -k.SPEED,
                                        k.SPEED)
            self.yr, self.yl = np.clip(self.yr, k.MIN_Y, k.MAX_Y), np.clip(self.yl, k.MIN_Y,
                                                                            k.MAX_Y)
            self.bx, self.by = self.bx + self.vx, self.by + self.vy
            if self.by < 0 or self.by + k.BALL_H > k.H:
                self.vy = -self.vy
            if self.bx < 0:
                if self.by + k.BALL_H > self.yl and self.by < self.yl + k.PADDLE_H:
                    self.vx = -self.vx
                else:
                    self.point(agent=True)
                    break
            if self.bx + k.BALL_W > k.W:
                if self.by + k.BALL_H > self.yr and self.by < self.yr + k.PADDLE_H:
                    self.vx = -self.vx
                    if self.rules == "61f27b3":
                        self.reward = f32(0.1)
                    self.vy = np.clip(self.vy + k.INC * d, -k.MAX_VY, k.MAX_VY)
                    if abs(float(self.vy)) < 0.01:  # the original compares with a double
                        self.vy = k.INC
                    self.bx = np.clip(self.bx, f32(0), k.W - k.BALL_W)
                    self.by = np.clip(self.by, f32(0), k.H - k.BALL_H)
                else:
                    self.point(agent=False)
                    break
            self.obs = spec_obs(self.state(), self.k)
        return self.obs.copy(), float(self.reward), self.terminal


def base_state(**kw) -> dict:
    s = {
        "paddle_yl": 285.0, "paddle_yr": 285.0, "ball_x": 250.0, "ball_y": 304.0,
        "ball_vx": 10.0, "ball_vy": 0.0, "score_l": 0, "score_r": 0, "tick": 7, "rng": 12345,
    }  # fmt: skip
    s.update(kw)
    return {k: np.asarray(v, dtype=STATE_DTYPES[k]) for k, v in s.items()}


def ref_with(frameskip: int = 1, continuous: bool = False, **kw) -> PongReference:
    ref = PongReference(frameskip=frameskip, continuous=continuous)
    ref.set_state(base_state(**kw))
    return ref


def test_protocol_and_initial_reset():
    ref = PongReference()
    assert isinstance(ref, Reference)
    seen_vy = set()
    for seed in (0, 1, 2, 3, 42, 2**32 - 1):
        obs = ref.reset(seed)
        s = ref.get_state()
        assert obs.dtype == np.float32 and obs.shape == (8,)
        assert (s["paddle_yl"], s["paddle_yr"], s["ball_x"], s["ball_y"]) == (285, 285, 100, 304)
        assert s["ball_vx"] == 10 and s["ball_vy"] in (-1.0, 0.0)
        assert (s["score_l"], s["score_r"], s["tick"]) == (0, 0, 0)
        r, rng = rand_r(seed)
        assert ref.tape() == {"count": 1, "r": r}
        assert s["rng"] == rng and s["ball_vy"] == r % 2 - 1
        np.testing.assert_array_equal(obs, spec_obs(s))
        seen_vy.add(float(s["ball_vy"]))
    assert seen_vy == {-1.0, 0.0}
    assert {k: v.dtype for k, v in s.items()} == {
        **dict.fromkeys(["paddle_yl", "paddle_yr", "ball_x", "ball_y"], np.float32),
        **dict.fromkeys(["ball_vx", "ball_vy"], np.float32),
        "score_l": np.uint32, "score_r": np.uint32, "tick": np.int32, "rng": np.uint32,
    }  # fmt: skip


def test_opponent_tracks_ball_bottom_edge_and_paddles_clip():
    ref = ref_with(paddle_yl=100.0, ball_y=400.0)  # far below the ball: full speed up
    ref.step(0)
    assert ref.get_state()["paddle_yl"] == 108
    ref = ref_with(paddle_yl=300.0, ball_y=338.0)  # delta = 338 - (300 + 35) = 3
    ref.step(0)
    assert ref.get_state()["paddle_yl"] == 303
    ref = ref_with(paddle_yl=-30.0, ball_y=-40.0, ball_vy=0.0)
    ref.step(0)
    assert ref.get_state()["paddle_yl"] == -35  # -30 - 8 clipped
    ref = ref_with(paddle_yr=600.0)
    ref.step(1)
    assert ref.get_state()["paddle_yr"] == 605
    ref = ref_with(paddle_yr=-30.0)
    ref.step(2)
    assert ref.get_state()["paddle_yr"] == -35
    ref = ref_with(paddle_yr=100.0)
    assert ref.step(0)[0][1] == f32(135) / f32(640)


def test_wall_bounce_does_not_clip():
    ref = ref_with(ball_y=2.0, ball_vy=-5.0)
    obs, *_ = ref.step(0)
    s = ref.get_state()
    assert s["ball_y"] == -3 and s["ball_vy"] == 5 and s["ball_x"] == 260
    assert obs[3] == f32(-3) / H and obs[5] == f32(18) / f32(26)
    ref = ref_with(ball_y=606.0, ball_vy=4.0)
    ref.step(0)
    s = ref.get_state()
    assert s["ball_y"] == 610 and s["ball_vy"] == -4


def test_agent_point_leaves_stale_observation():
    ref = ref_with(ball_x=5.0, ball_vx=-10.0, ball_y=500.0, paddle_yl=0.0, rng=99)
    before = ref.observation()
    obs, reward, terminated, truncated, info = ref.step(0)
    assert (reward, terminated, truncated, info) == (1.0, False, False, {})
    np.testing.assert_array_equal(obs, before)  # not the observation of the new round
    s = ref.get_state()
    assert (s["score_r"], s["score_l"], s["tick"]) == (1, 0, 0)
    assert (s["ball_x"], s["ball_y"], s["paddle_yl"], s["paddle_yr"]) == (100, 304, 285, 285)
    r, rng = rand_r(99)
    assert ref.tape() == {"count": 1, "r": r} and s["rng"] == rng
    assert not np.array_equal(obs, spec_obs(s))


def test_opponent_point_and_left_paddle_bounce():
    ref = ref_with(ball_x=465.0, ball_y=100.0, paddle_yr=400.0, paddle_yl=285.0)
    obs, reward, terminated, *_ = ref.step(0)
    assert reward == -1.0 and not terminated and ref.get_state()["score_l"] == 1
    ref = ref_with(ball_x=5.0, ball_vx=-10.0, ball_y=300.0, paddle_yl=285.0)
    obs, reward, *_ = ref.step(0)
    s = ref.get_state()
    assert reward == 0.0 and s["ball_vx"] == 10 and s["ball_x"] == -5  # bounced, not clipped
    assert ref.tape()["count"] == 0 and obs[2] == f32(-5) / W


@pytest.mark.parametrize("agent", [True, False])
def test_terminal_step_returns_next_episodes_first_observation(agent):
    if agent:
        kw = {"ball_x": 5.0, "ball_vx": -10.0, "ball_y": 500.0, "paddle_yl": 0.0, "score_r": 20}
    else:
        kw = {"ball_x": 465.0, "ball_y": 100.0, "paddle_yr": 400.0, "score_l": 20}
    ref = ref_with(score_l=kw.pop("score_l", 3), score_r=kw.pop("score_r", 4), rng=7, **kw)
    assert ref.observation()[6] == 0 and ref.observation()[7] == 0  # 20 // 21 == 0
    obs, reward, terminated, truncated, _ = ref.step(0)
    assert terminated and not truncated and reward == (1.0 if agent else -1.0)
    s = ref.get_state()
    assert (s["score_l"], s["score_r"], s["tick"]) == (0, 0, 0)
    np.testing.assert_array_equal(obs, spec_obs(s))
    r, _ = rand_r(7)
    assert ref.tape() == {"count": 1, "r": r} and s["ball_vy"] == r % 2 - 1


def test_hit_reward_speed_change_and_ball_clip():
    # Ball reaches x = 470 (470 + 32 > 500) while overlapping the agent paddle; dir = +1.
    ref = ref_with(ball_x=460.0, ball_y=300.0, ball_vy=2.0, paddle_yr=280.0)
    obs, reward, *_ = ref.step(1)
    s = ref.get_state()
    assert reward == pytest.approx(0.1) and np.float32(reward) == f32(0.1)
    assert s["ball_vx"] == -10 and s["ball_vy"] == 5 and s["ball_x"] == 468 and s["ball_y"] == 302
    assert obs[2] == f32(468) / W and obs[4] == 0
    # vy + 3 * dir == 0 is replaced by +3; vy is clipped at 13.
    ref = ref_with(ball_x=460.0, ball_y=300.0, ball_vy=3.0, paddle_yr=290.0)
    ref.step(2)
    assert ref.get_state()["ball_vy"] == 3
    ref = ref_with(ball_x=460.0, ball_y=300.0, ball_vy=12.0, paddle_yr=290.0)
    ref.step(1)
    assert ref.get_state()["ball_vy"] == 13
    # The clip after a hit also clips y into [0, H - ball_h].
    ref = ref_with(ball_x=460.0, ball_y=-20.0, ball_vy=-5.0, paddle_yr=-35.0)
    ref.step(0)
    s = ref.get_state()
    assert s["ball_y"] == 0 and s["ball_vy"] == 5


def test_continuous_direction():
    ref = ref_with(continuous=True, paddle_yr=100.0)
    ref.step(0.5)
    assert ref.get_state()["paddle_yr"] == 104
    ref.step(np.array([-0.25], dtype=np.float32))
    assert ref.get_state()["paddle_yr"] == 102
    ref = ref_with(continuous=True, ball_x=460.0, ball_y=300.0, ball_vy=2.0, paddle_yr=280.0)
    ref.step(0.5)
    assert ref.get_state()["ball_vy"] == f32(2) + f32(3) * f32(0.5)


def test_frameskip_applies_every_sub_frame():
    ref = ref_with(frameskip=4, paddle_yr=100.0, ball_vy=1.0, paddle_yl=285.0, ball_y=304.0)
    obs, *_ = ref.step(1)
    s = ref.get_state()
    assert s["paddle_yr"] == 132 and s["ball_x"] == 290 and s["ball_y"] == 308
    # Opponent deltas: 304 - 320 -> -8, 305 - 312 = -7, 306 - 305 = 1, 307 - 306 = 1.
    assert s["paddle_yl"] == 272 and s["tick"] == 8
    np.testing.assert_array_equal(obs, spec_obs(s))


def test_get_set_state_roundtrip():
    ref = PongReference()
    ref.reset(5)
    for a in [1, 1, 2, 0, 1] * 20:
        ref.step(a)
    saved, obs = ref.get_state(), ref.observation()
    outs = [ref.step(a) for a in (2, 2, 0, 1)]
    other = PongReference()
    other.set_state(saved)
    assert all(np.array_equal(other.get_state()[k], v) for k, v in saved.items())
    np.testing.assert_array_equal(other.observation(), obs)
    for a, (o, r, t, *_) in zip((2, 2, 0, 1), outs, strict=True):
        o2, r2, t2, *_ = other.step(a)
        np.testing.assert_array_equal(o, o2)
        assert (r, t) == (r2, t2)
    assert all(np.array_equal(other.get_state()[k], v) for k, v in ref.get_state().items())


@pytest.mark.parametrize("action", [3, -1, 1.0, True, "1", None, np.array([1]), 0.5])
def test_bad_discrete_action_raises(action):
    ref = PongReference()
    ref.reset(0)
    with pytest.raises(ValueError, match="discrete Pong"):
        ref.step(action)


@pytest.mark.parametrize("action", [1.5, -1.01, float("nan"), float("inf"), "x", [0.1, 0.2]])
def test_bad_continuous_action_raises(action):
    ref = PongReference(continuous=True)
    ref.reset(0)
    before = ref.get_state()
    with pytest.raises(ValueError, match="continuous Pong"):
        ref.step(action)
    assert all(np.array_equal(ref.get_state()[k], v) for k, v in before.items())


def tracking_action(model: SpecPong, rs: np.random.Generator, continuous: bool):
    """Follow the ball 70% of the time (so the agent returns it), else a random action."""
    if rs.random() < 0.3:
        return float(rs.uniform(-1, 1)) if continuous else int(rs.integers(3))
    up = model.by + model.k.BALL_H / 2 > model.yr + model.k.PADDLE_H / 2
    if continuous:
        return float(rs.uniform(0.2, 1.0)) * (1.0 if up else -1.0)
    return 1 if up else 2


# Non-default constants, off the integers (float32 values): positions and divisions inexact.
ODD_PARAMS = {
    "width": 437.3125, "height": 531.8359375, "paddle_height": 57.40625, "ball_width": 23.75,
    "ball_height": 28.1875, "paddle_speed": 6.3701171875, "ball_initial_speed_x": 11.34375,
    "ball_initial_speed_y": 1.7109375, "ball_speed_y_increment": 2.3125,
    "ball_max_speed_y": 15.8046875, "max_score": 5, "paddle_width": 17.5,
}  # fmt: skip


@pytest.mark.parametrize(
    ("frameskip", "continuous", "rules", "params", "seed", "n_steps"),
    [(1, False, "61f27b3", None, 3, 2500), (4, False, "61f27b3", None, 11, 800),
     (1, True, "61f27b3", None, 5, 4000), (60, False, "61f27b3", None, 2, 40),
     (1, False, "8e3e754", None, 7, 2500), (8, False, "8e3e754", None, 8, 600),
     (4, True, "8e3e754", None, 9, 800), (1, False, "61f27b3", ODD_PARAMS, 12, 2000),
     (4, True, "8e3e754", ODD_PARAMS, 13, 800), (8, True, "61f27b3", ODD_PARAMS, 14, 600)],
)
def test_matches_spec_model(frameskip, continuous, rules, params, seed, n_steps):
    ref = PongReference(frameskip, continuous, rules, params)
    model = SpecPong(frameskip, continuous, rules, params)
    rs = np.random.default_rng(seed)
    np.testing.assert_array_equal(ref.reset(seed), model.reset(seed))
    # Scores near the end, so that episodes end within the run.
    model.score_l = model.score_r = model.k.MAX_SCORE - 3
    ref.set_state(model.state())
    points = terminals = hits = 0
    for _ in range(n_steps):
        a = tracking_action(model, rs, continuous)
        obs, reward, terminated, truncated, _ = ref.step(a)
        m_obs, m_reward, m_terminated = model.step(a)
        assert obs.tobytes() == m_obs.tobytes()
        assert (reward, terminated, truncated) == (m_reward, m_terminated, False)
        s = ref.get_state()
        for k, v in model.state().items():
            assert s[k].tobytes() == np.asarray(v, s[k].dtype).tobytes(), k
        tape = ref.tape()
        assert tape["count"] == len(model.draws) <= 1
        if model.draws:
            assert tape["r"] == model.draws[0]
        points += abs(reward) == 1.0
        hits += reward == m_reward == float(f32(0.1))
        terminals += terminated
    assert points > 0 and terminals > 0
    assert (hits > 0) == (rules == "61f27b3")  # a return pays only under the older rules


def test_c_throughput_rows():
    rows = c_throughput([64], 50)
    assert rows and all(r["backend"] == "reference" and r["batch_size"] == 64 for r in rows)
    assert rows[0]["mode"] == "C, 1 thread(s)" and all(r["steps_per_second"] > 0 for r in rows)


# The two rule books, from PufferLib's ocean/pong/pong.h as each commit's source reads (the
# expected values below are worked out by hand from those sources, not taken from reference.c):
# - 61f27b3 (and PufferLib 3.0): a ball returned off the agent's paddle sets the reward to 0.1;
#   a point that does not end the episode calls reset_round and returns WITHOUT
#   compute_observations, so the step returns the observation of the last sub-frame before it;
# - 8e3e754: no reward on a return; reset_round is followed by compute_observations, so the
#   step returns the new round's first observation.
# Everything else (physics, serve, the reset inside the step at episode end) is the same.
SERVE_OBS_DEFAULT = [
    (285 + 35) / 640,  # (paddle_yl - min_y) / (max_y - min_y), paddle at 640/2 - 70/2
    (285 + 35) / 640,
    100 / 500,  # ball_x = width / 5
    304 / 640,  # ball_y = 640/2 - 32/2
    (10 + 10) / 20,  # (vx + 10) / 20, vx = +10 towards the agent
]


@pytest.mark.parametrize(("rules", "reward"), [("61f27b3", f32(0.1)), ("8e3e754", f32(0))])
def test_rules_return_reward(rules, reward):
    ref = PongReference(rules=rules)
    ref.set_state(base_state(ball_x=460.0, ball_y=300.0, ball_vy=2.0, paddle_yr=280.0))
    _, r, terminated, *_ = ref.step(1)
    s = ref.get_state()
    assert f32(r).tobytes() == reward.tobytes() and not terminated
    # The return itself is the same under both: vx flips, vy + 3 * dir, the ball clipped.
    assert (s["ball_vx"], s["ball_vy"], s["ball_x"], s["ball_y"]) == (-10, 5, 468, 302)


@pytest.mark.parametrize("rules", ["61f27b3", "8e3e754"])
@pytest.mark.parametrize("agent", [True, False])
def test_rules_observation_after_a_point(rules, agent):
    if agent:  # the opponent misses: the ball passes the left edge far from its paddle
        kw = {"ball_x": 5.0, "ball_vx": -10.0, "ball_y": 500.0, "paddle_yl": 0.0}
    else:  # the agent misses
        kw = {"ball_x": 465.0, "ball_y": 100.0, "paddle_yr": 400.0}
    ref = PongReference(rules=rules)
    ref.set_state(base_state(rng=99, **kw))
    before = ref.observation()
    obs, reward, terminated, *_ = ref.step(0)
    assert reward == (1.0 if agent else -1.0) and not terminated
    r, _ = rand_r(99)
    serve = np.float32([*SERVE_OBS_DEFAULT, ((r % 2 - 1) + 13) / 26, 0, 0])
    if rules == "61f27b3":
        assert obs.tobytes() == before.tobytes()  # stale: the previous step's
        assert not np.array_equal(obs, serve)
    else:
        assert obs.tobytes() == serve.tobytes()  # fresh: the serve's


@pytest.mark.parametrize("rules", ["61f27b3", "8e3e754"])
def test_rules_observation_after_a_point_in_a_later_sub_frame(rules):
    # frameskip 4: sub-frame 1 moves the ball to x = 5 (observation computed), sub-frame 2 to
    # x = -5 past the opponent: the point. Sub-frames 3 and 4 never run.
    ref = PongReference(frameskip=4, rules=rules)
    ref.set_state(base_state(ball_x=15.0, ball_vx=-10.0, ball_y=500.0, paddle_yl=0.0, rng=5))
    obs, reward, *_ = ref.step(0)
    assert reward == 1.0 and ref.get_state()["score_r"] == 1
    if rules == "61f27b3":
        assert obs[2] == f32(5) / f32(500)  # the last sub-frame's before the point
        assert obs[3] == f32(500) / f32(640)  # ball_y + vy (0) after sub-frame 1
    else:
        assert obs[2] == f32(100) / f32(500) and obs[3] == f32(304) / f32(640)


@pytest.mark.parametrize("rules", ["61f27b3", "8e3e754"])
def test_rules_terminal_step_is_the_same(rules):
    ref = PongReference(rules=rules)
    ref.set_state(base_state(ball_x=5.0, ball_vx=-10.0, ball_y=500.0, paddle_yl=0.0,
                             score_r=20, rng=7))
    obs, reward, terminated, *_ = ref.step(0)
    r, _ = rand_r(7)
    assert terminated and reward == 1.0
    assert obs.tobytes() == np.float32([*SERVE_OBS_DEFAULT, ((r % 2 - 1) + 13) / 26, 0,
                                        0]).tobytes()


def test_params_change_the_c_game():
    # width 400, paddle 50 tall, speed 5, serve speed 7: hand-computed from the rules.
    params = {"width": 400.0, "paddle_height": 50.0, "paddle_speed": 5.0,
              "ball_initial_speed_x": 7.0, "max_score": 2}
    ref = PongReference(params=params)
    obs = ref.reset(3)
    s = ref.get_state()
    assert (s["paddle_yl"], s["ball_x"], s["ball_vx"]) == (295, 80, 7)  # 640/2 - 25, 400/5
    assert obs[0] == f32(295 + 25) / f32(640) and obs[2] == f32(80) / f32(400)
    assert obs[4] == 1.0
    ref.step(1)
    assert ref.get_state()["paddle_yr"] == 300 and ref.get_state()["ball_x"] == 87
    assert ref.params == {**ref.params, **params}
    # max_score 2: the second point ends the episode.
    ref.set_state(base_state(ball_x=5.0, ball_vx=-7.0, ball_y=500.0, paddle_yl=0.0,
                             score_r=1))
    assert ref.step(0)[2]


def test_default_constants_agree_with_the_c_library():
    from envport.envs.pong.params import PARAM_DEFAULTS
    from envport.envs.pong.reference import _load

    mod = _load()
    out = mod.ffi.new("PongParams*")
    mod.lib.pong_default_params(out)  # the benchmark's compile-time constants
    assert {k: getattr(out, k) for k in PARAM_DEFAULTS} == PARAM_DEFAULTS


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"frameskip": 0}, "frameskip"), ({"frameskip": 2.0}, "frameskip"),
    ({"frameskip": True}, "frameskip"), ({"continuous": "yes"}, "continuous"),
    ({"rules": "4.0"}, "rules"), ({"params": {"width": 0.0}}, "width"),
    ({"params": {"paddle_speed": float("nan")}}, "paddle_speed"),
    ({"params": {"max_score": 0}}, "max_score"), ({"params": {"max_score": 2.5}}, "max_score"),
    ({"params": {"gravity": 1.0}}, "gravity"),
])
def test_bad_reference_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PongReference(**kwargs)
