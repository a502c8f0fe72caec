"""Puffer Pong in JAX, equivalent bit for bit to the C reference (``reference.c``).

Rules: ../shared/specs/pong.md. The agent controls the right paddle; the left one tracks the
ball. Randomness follows PufferLib 4.0: a per-environment glibc ``rand_r`` state carried in the
state, so ``sample_draws`` reads the state, not the key, and reproduces the reference's draws.
The environment resets itself inside ``step`` when a score reaches 21 (``autoresets``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.api import Array, Environment, StepResult, pytree_dataclass, static_field
from envport.core.spaces import Box, Discrete, Space

F32 = np.float32


@pytree_dataclass
class PongParams:
    frameskip: int = static_field(1)
    continuous: bool = static_field(False)
    width: float = static_field(500.0)
    height: float = static_field(640.0)
    paddle_width: float = static_field(20.0)
    paddle_height: float = static_field(70.0)
    ball_width: float = static_field(32.0)
    ball_height: float = static_field(32.0)
    paddle_speed: float = static_field(8.0)
    ball_initial_speed_x: float = static_field(10.0)
    ball_initial_speed_y: float = static_field(1.0)
    ball_speed_y_increment: float = static_field(3.0)
    ball_max_speed_y: float = static_field(13.0)
    max_score: int = static_field(21)


@pytree_dataclass
class PongState:
    paddle_yl: Array  # float32, bottom edge of the opponent's (left) paddle
    paddle_yr: Array  # float32, the agent's (right) paddle
    ball_x: Array
    ball_y: Array
    ball_vx: Array
    ball_vy: Array
    score_l: Array  # uint32
    score_r: Array  # uint32
    tick: Array  # int32, steps since the last ROUND reset (the original's quirk)
    rng: Array  # uint32, glibc rand_r state


@pytree_dataclass
class PongDraws:
    r: Array  # int32, what rand_r returns; only a round reset consumes it


def divide(x: Array, c: float) -> Array:
    """``x / c`` rounded as C rounds it (IEEE division).

    XLA on CPU turns division by a constant, or by any value the same for every lane, into
    multiplication by its reciprocal: one ulp off for a large share of inputs when ``1/c`` is
    inexact (L2 found this on its first run). ``x * 0 + c`` is a per-lane value the compiler may
    not fold (``x * 0`` is not 0 for inf/NaN), so a true division is emitted. ``x`` is finite.
    """
    return x / (x * F32(0) + F32(c))


def compute_once(*flags: Array) -> tuple[Array, ...]:
    """``flags`` unchanged (booleans), but computed once per step instead of once per use.

    XLA:CPU fuses cheap elementwise code into every consumer, so the ~30-operation collision
    test behind the hit/point flags would be recomputed by each of the step's ~12 outputs (10
    state fields, observation, reward): most of the step's cost. It never duplicates a
    division, so the flags are packed into one float that goes through an exact division by 1
    (``divide``, which the compiler cannot drop) and unpacked: XLA computes the packed value in
    one loop of its own and the outputs read it. This doubles the throughput on CPU.
    """
    code = sum(f.astype(jnp.float32) * F32(2**i) for i, f in enumerate(flags))
    bits = divide(code, 1.0).astype(jnp.int32)  # small integers: every step is exact
    return tuple(((bits >> i) & 1) == 1 for i in range(len(flags)))


def rounded(product: Array) -> Array:
    """A product rounded to float32 before it is added to anything.

    XLA's CPU backend contracts ``c + a * b`` into one fused multiply-add (a single rounding);
    the C reference is compiled with -ffp-contract=off (two roundings). A select between the
    multiply and the add blocks the contraction; the NaN branch is never taken (finite inputs).
    Found by L2 on continuous Pong. Products by powers of two are exact and need no guard.
    """
    return jnp.where(product != product, F32(0), product)


def rand_r(seed: Array) -> tuple[Array, Array]:
    """glibc's ``rand_r``: three LCG steps folded into 31 bits. Returns (value, next state)."""
    nxt = seed.astype(jnp.uint32)
    out = jnp.zeros_like(nxt)
    for bits in (11, 10, 10):
        nxt = nxt * jnp.uint32(1103515245) + jnp.uint32(12345)
        out = (out << bits) ^ ((nxt >> 16) % jnp.uint32(1 << bits))
    return out.astype(jnp.int32), nxt


def lcg3(seed: Array) -> Array:
    """The state after one ``rand_r`` call, without its value."""
    return (seed.astype(jnp.uint32) * jnp.uint32(2155723957) + jnp.uint32(2802067423))


class Pong(Environment[PongState, PongParams]):
    name = "pong"
    autoresets = True

    def __init__(self, **params: float | int | bool):
        self._params = PongParams(**params)

    def default_params(self) -> PongParams:
        return self._params

    # ---------------------------------------------------------------- pieces
    @staticmethod
    def min_y(p: PongParams) -> float:
        return -p.paddle_height / 2

    @staticmethod
    def max_y(p: PongParams) -> float:
        return p.height - p.paddle_height / 2

    def observation(self, s: PongState, p: PongParams) -> Array:
        lo, hi = F32(self.min_y(p)), F32(self.max_y(p))
        return jnp.stack([
            divide(s.paddle_yl - lo, hi - lo),
            divide(s.paddle_yr - lo, hi - lo),
            divide(s.ball_x, p.width),
            divide(s.ball_y, p.height),
            divide(s.ball_vx + F32(p.ball_initial_speed_x), 2 * p.ball_initial_speed_x),
            divide(s.ball_vy + F32(p.ball_max_speed_y), 2 * p.ball_max_speed_y),
            # Quirk: unsigned integer division, so 0 in every reachable state.
            (s.score_l // jnp.uint32(p.max_score)).astype(jnp.float32),
            (s.score_r // jnp.uint32(p.max_score)).astype(jnp.float32),
        ])

    def round_reset(self, s: PongState, r: Array, p: PongParams) -> PongState:
        paddle = F32(p.height / 2 - p.paddle_height / 2)
        return PongState(
            paddle_yl=jnp.full_like(s.paddle_yl, paddle),
            paddle_yr=jnp.full_like(s.paddle_yr, paddle),
            ball_x=jnp.full_like(s.ball_x, F32(p.width / 5)),
            ball_y=jnp.full_like(s.ball_y, F32(p.height / 2 - p.ball_height / 2)),
            ball_vx=jnp.full_like(s.ball_vx, F32(p.ball_initial_speed_x)),
            # (rand() % 2 - 1) * speed: -1 or 0, never +1
            ball_vy=(r % 2 - 1).astype(jnp.float32) * F32(p.ball_initial_speed_y),
            score_l=s.score_l, score_r=s.score_r,
            tick=jnp.zeros_like(s.tick),
            rng=lcg3(s.rng),
        )

    # ---------------------------------------------------------------- API
    def reset(self, key: Array, params: PongParams | None = None) -> tuple[PongState, Array]:
        seed = jax.random.bits(key, (), jnp.uint32)
        return self.reset_from_seed(seed, params)

    def reset_from_seed(self, seed: Array, params: PongParams | None = None
                        ) -> tuple[PongState, Array]:
        """The reference's ``reset(seed)``: the rand_r state starts at ``seed``."""
        p = self._params if params is None else params
        zf, zu = jnp.zeros((), jnp.float32), jnp.zeros((), jnp.uint32)
        blank = PongState(zf, zf, zf, zf, zf, zf, zu, zu, jnp.zeros((), jnp.int32),
                          jnp.asarray(seed, jnp.uint32))
        state = self.round_reset(blank, rand_r(blank.rng)[0], p)
        return state, self.observation(state, p)

    def sample_draws(self, key: Array, state: PongState, params: PongParams | None = None
                     ) -> PongDraws:
        return PongDraws(rand_r(state.rng)[0])

    def direction(self, action: Array, p: PongParams) -> Array:
        if p.continuous:
            return jnp.reshape(action, ()).astype(jnp.float32)
        return jnp.where(action == 1, F32(1), jnp.where(action == 2, F32(-1), F32(0)))

    def transition(self, state: PongState, action: Array, draws: PongDraws,
                   params: PongParams | None = None) -> StepResult:
        p = self._params if params is None else params
        d = self.direction(action, p)
        lo, hi = F32(self.min_y(p)), F32(self.max_y(p))
        bw, bh, ph = F32(p.ball_width), F32(p.ball_height), F32(p.paddle_height)
        speed = F32(p.paddle_speed)
        pyl, pyr, bx, by, vx, vy = (state.paddle_yl, state.paddle_yr, state.ball_x,
                                    state.ball_y, state.ball_vx, state.ball_vy)
        reward = jnp.zeros((), jnp.float32)
        point_r = point_l = stopped = jnp.zeros((), jnp.bool_)
        # The observation a point leaves behind: the previous sub-frame's (stale buffer).
        stale = (pyl, pyr, bx, by, vx, vy)
        for i in range(p.frameskip):
            before = (pyl, pyr, bx, by, vx, vy)
            n_pyr = pyr + speed * d
            n_pyl = pyl + jnp.clip(by - (pyl + ph / 2), -speed, speed)
            n_pyr = jnp.clip(n_pyr, lo, hi)
            n_pyl = jnp.clip(n_pyl, lo, hi)
            n_bx, n_by = bx + vx, by + vy
            n_vy = jnp.where((n_by < 0) | (n_by + bh > F32(p.height)), -vy, vy)
            left = n_bx < 0
            hit_l = left & (n_by + bh > n_pyl) & (n_by < n_pyl + ph)
            scored_r = left & ~hit_l
            n_vx = jnp.where(hit_l, -vx, vx)
            right = (n_bx + bw > F32(p.width)) & ~scored_r
            hit_r = right & (n_by + bh > n_pyr) & (n_by < n_pyr + ph)
            scored_l = right & ~hit_r
            hit_r, scored_r, scored_l = compute_once(hit_r, scored_r, scored_l)
            n_vx = jnp.where(hit_r, -n_vx, n_vx)
            bounced = jnp.clip(n_vy + rounded(F32(p.ball_speed_y_increment) * d),
                               -F32(p.ball_max_speed_y), F32(p.ball_max_speed_y))
            bounced = jnp.where(jnp.abs(bounced) <= F32(0.01),
                                F32(p.ball_speed_y_increment), bounced)
            n_vy = jnp.where(hit_r, bounced, n_vy)
            n_bx = jnp.where(hit_r, jnp.clip(n_bx, F32(0), F32(p.width) - bw), n_bx)
            n_by = jnp.where(hit_r, jnp.clip(n_by, F32(0), F32(p.height) - bh), n_by)
            n_reward = jnp.where(scored_r, F32(1), jnp.where(
                scored_l, F32(-1), jnp.where(hit_r, F32(0.1), reward)))
            new = (n_pyl, n_pyr, n_bx, n_by, n_vx, n_vy)
            if i == 0:
                pyl, pyr, bx, by, vx, vy = new
                reward, point_r, point_l = n_reward, scored_r, scored_l
            else:  # sub-frames after a point never run: the step has returned
                live = ~stopped
                pyl, pyr, bx, by, vx, vy = (jnp.where(live, n, o) for n, o in
                                            zip(new, before, strict=True))
                reward = jnp.where(live, n_reward, reward)
                point_r = point_r | (live & scored_r)
                point_l = point_l | (live & scored_l)
                stale = tuple(jnp.where(live & (scored_r | scored_l), b, s)
                              for b, s in zip(before, stale, strict=True))
            stopped = point_r | point_l
        score_r = state.score_r + point_r.astype(jnp.uint32)
        score_l = state.score_l + point_l.astype(jnp.uint32)
        terminated = (score_r == p.max_score) | (score_l == p.max_score)
        played = PongState(pyl, pyr, bx, by, vx, vy, score_l, score_r, state.tick + 1, state.rng)
        served = self.round_reset(played, draws.r, p)
        zero = jnp.zeros_like(score_l)
        served = PongState(*(getattr(served, f) for f in (
            "paddle_yl", "paddle_yr", "ball_x", "ball_y", "ball_vx", "ball_vy")),
            score_l=jnp.where(terminated, zero, score_l),
            score_r=jnp.where(terminated, zero, score_r),
            tick=served.tick, rng=served.rng)
        new_state = jax.tree_util.tree_map(lambda a, b: jnp.where(stopped, a, b), served, played)
        stale_state = PongState(*stale, state.score_l, state.score_r, state.tick, state.rng)
        shown = jax.tree_util.tree_map(
            lambda a, b: jnp.where(stopped & ~terminated, a, b), stale_state, new_state)
        obs = self.observation(shown, p)
        return StepResult(new_state, obs, reward, terminated, jnp.zeros((), jnp.bool_), {})

    def observation_space(self, params: PongParams | None = None) -> Space:
        return Box(0.0, 1.0, (8,))

    def action_space(self, params: PongParams | None = None) -> Space:
        p = self._params if params is None else params
        return Box(-1.0, 1.0, (1,)) if p.continuous else Discrete(3)
