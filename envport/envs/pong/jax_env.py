"""Puffer Pong in JAX, equivalent bit for bit to the C reference (``reference.c``).

Rules: ../shared/specs/pong.md and README.md (two rule books, ``rules="61f27b3"`` and
``"8e3e754"``, named by the PufferLib commit they follow). The agent controls the right paddle;
the left one tracks the ball. Randomness follows PufferLib 4.0: a per-environment glibc
``rand_r`` state carried in the state, so ``sample_draws`` reads the state, not the key, and
reproduces the reference's draws. The environment resets itself inside ``step`` when a score
reaches ``max_score`` (``autoresets``).

The game constants are pytree leaves of ``PongParams`` (``jax.vmap`` over them is one compiled
call); only the modes are static. Every function reads them from its ``params`` argument, as
float32 (``max_score`` as uint32), in the C reference's order of operations.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from envport.core.api import Array, Environment, StepResult, pytree_dataclass, static_field
from envport.core.spaces import Box, Discrete, Space
from envport.envs.pong.params import (
    DEFAULT_RULES,
    FLOAT_DEFAULTS,
    INT_DEFAULTS,
    MODE_DEFAULTS,
    PARAM_DEFAULTS,
    RULES_61F27B3,
    check_mode,
    check_params,
    observation_bounds,
)

F32 = np.float32


@pytree_dataclass
class PongParams:
    # Static: a Python loop count, the action space, the rule book.
    frameskip: int = static_field(1)
    continuous: bool = static_field(False)
    rules: str = static_field(DEFAULT_RULES)
    # Leaves (float32, max_score uint32): any value, traced or batched.
    width: Any = F32(500.0)
    height: Any = F32(640.0)
    paddle_width: Any = F32(20.0)  # only drawn by the original, never used by the physics
    paddle_height: Any = F32(70.0)
    ball_width: Any = F32(32.0)
    ball_height: Any = F32(32.0)
    paddle_speed: Any = F32(8.0)
    ball_initial_speed_x: Any = F32(10.0)
    ball_initial_speed_y: Any = F32(1.0)
    ball_speed_y_increment: Any = F32(3.0)
    ball_max_speed_y: Any = F32(13.0)
    max_score: Any = np.uint32(21)

    def __post_init__(self) -> None:
        # Only the static fields: the leaves may be tracers (or vmap's axis markers) here.
        frameskip, continuous, rules = check_mode(self.frameskip, self.continuous, self.rules)
        object.__setattr__(self, "frameskip", frameskip)
        object.__setattr__(self, "continuous", continuous)
        object.__setattr__(self, "rules", rules)


class Consts(NamedTuple):
    """The game constants of one ``PongParams`` as arrays, and the two derived once."""

    width: Array
    height: Array
    paddle_height: Array
    ball_width: Array
    ball_height: Array
    speed: Array
    vx0: Array  # ball_initial_speed_x
    vy0: Array  # ball_initial_speed_y
    inc: Array  # ball_speed_y_increment
    max_vy: Array
    max_score: Array  # uint32
    lo: Array  # min_paddle_y = -paddle_height / 2
    hi: Array  # max_paddle_y = height - paddle_height / 2


def consts(p: PongParams) -> Consts:
    def f(x: Any) -> Array:
        return jnp.asarray(x, jnp.float32)

    height, paddle_height = f(p.height), f(p.paddle_height)
    half = paddle_height * F32(0.5)  # exact: the C's `/ 2`
    return Consts(f(p.width), height, paddle_height, f(p.ball_width), f(p.ball_height),
                  f(p.paddle_speed), f(p.ball_initial_speed_x), f(p.ball_initial_speed_y),
                  f(p.ball_speed_y_increment), f(p.ball_max_speed_y),
                  jnp.asarray(p.max_score, jnp.uint32), -half, height - half)


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


# The fields a sub-frame moves (the rest: scores, tick, rng).
MOVING = ("paddle_yl", "paddle_yr", "ball_x", "ball_y", "ball_vx", "ball_vy")


@pytree_dataclass
class PongDraws:
    r: Array  # int32, what rand_r returns; only a round reset consumes it


def divide(x: Array, c: Array | float) -> Array:
    """``x / c`` rounded as C rounds it (IEEE division).

    XLA on CPU turns division by a constant, or by any value the same for every lane, into
    multiplication by its reciprocal: one ulp off for a large share of inputs when ``1/c`` is
    inexact (L2 found this on its first run). ``x * 0 + c`` is a per-lane value the compiler may
    not fold (``x * 0`` is not 0 for inf/NaN), so a true division is emitted. ``x`` is finite.
    ``c`` may be a constant, a traced scalar (params passed to a jitted function) or a per-lane
    value (vmapped params): the divisor is per-lane in every case.
    """
    return x / (x * F32(0) + jnp.asarray(c, jnp.float32))


def compute_once(*flags: Array) -> tuple[Array, ...]:
    """``flags`` unchanged (booleans), but computed once per step instead of once per use.

    XLA:CPU fuses cheap elementwise code into every consumer, so the ~30-operation collision
    test behind the hit/point flags would be recomputed by each of the step's ~12 outputs (10
    state fields, observation, reward): most of the step's cost. It never duplicates a
    division, so the flags are packed into one float that goes through an exact division by 1
    (``divide``, which the compiler cannot drop) and unpacked: XLA computes the packed value in
    one loop of its own and the outputs read it. This doubles the throughput on CPU.
    """
    code = flags[0].astype(jnp.float32)
    for i, f in enumerate(flags[1:], 1):
        code = code + f.astype(jnp.float32) * F32(2**i)
    bits = divide(code, 1.0).astype(jnp.int32)  # small integers: every step is exact
    return tuple(((bits >> i) & 1) == 1 for i in range(len(flags)))


def rounded(product: Array) -> Array:
    """A product (or quotient) rounded to float32 before anything else uses it.

    XLA's CPU backend contracts ``c + a * b`` into one fused multiply-add (a single rounding);
    the C reference is compiled with -ffp-contract=off (two roundings). A select between the
    multiply and the add blocks the contraction; the NaN branch is never taken (finite inputs).
    Found by L2 on continuous Pong. Products by powers of two are exact and need no guard.
    The same select keeps XLA's simplifier from rewriting ``(a / b) / c`` as ``a / (b * c)``
    (one rounding instead of two): found by vmapping over widths (the serve's ``width / 5``
    divided by ``width`` in the observation).
    """
    return jnp.where(product != product, F32(0), product)


def rand_r(seed: ArrayLike) -> tuple[Array, Array]:
    """glibc's ``rand_r``: three LCG steps folded into 31 bits. Returns (value, next state)."""
    nxt = jnp.asarray(seed).astype(jnp.uint32)
    out = jnp.zeros_like(nxt)
    for bits in (11, 10, 10):
        nxt = nxt * jnp.uint32(1103515245) + jnp.uint32(12345)
        out = (out << bits) ^ ((nxt >> 16) % jnp.uint32(1 << bits))
    return out.astype(jnp.int32), nxt


def lcg3(seed: ArrayLike) -> Array:
    """The state after one ``rand_r`` call, without its value."""
    return jnp.asarray(seed).astype(jnp.uint32) * jnp.uint32(2155723957) + jnp.uint32(2802067423)


def _fill(like: Array, value: Array) -> Array:
    """``value`` in the shape of ``like`` (a scalar under vmap, batched or not)."""
    return jnp.broadcast_to(value, jnp.shape(like)).astype(jnp.float32)


class Pong(Environment[PongState, PongParams]):
    name = "pong"
    autoresets = True

    def __init__(self, **params: Any):
        """Modes (``frameskip``, ``continuous``, ``rules``) and game constants (``width`` ...
        ``max_score``) by keyword; each is checked (ValueError naming it)."""
        unknown = set(params) - set(MODE_DEFAULTS) - set(PARAM_DEFAULTS)
        if unknown:
            raise ValueError(f"unknown Pong option(s) {sorted(unknown)}; known: "
                             f"{', '.join([*MODE_DEFAULTS, *PARAM_DEFAULTS])}")
        modes = {k: params.get(k, v) for k, v in MODE_DEFAULTS.items()}
        frameskip, continuous, rules = check_mode(**modes)
        values = check_params({k: v for k, v in params.items() if k in PARAM_DEFAULTS})
        self._params = PongParams(
            frameskip=frameskip, continuous=continuous, rules=rules,
            **{k: F32(values[k]) for k in FLOAT_DEFAULTS},
            **{k: np.uint32(values[k]) for k in INT_DEFAULTS})

    def default_params(self) -> PongParams:
        return self._params

    # ---------------------------------------------------------------- pieces
    def observation(self, s: PongState, p: PongParams) -> Array:
        c = consts(p)
        return jnp.stack([
            divide(s.paddle_yl - c.lo, c.hi - c.lo),
            divide(s.paddle_yr - c.lo, c.hi - c.lo),
            divide(s.ball_x, c.width),
            divide(s.ball_y, c.height),
            divide(s.ball_vx + c.vx0, F32(2) * c.vx0),
            divide(s.ball_vy + c.max_vy, F32(2) * c.max_vy),
            # Quirk: unsigned integer division, so 0 in every reachable state.
            (s.score_l // c.max_score).astype(jnp.float32),
            (s.score_r // c.max_score).astype(jnp.float32),
        ])

    def round_reset(self, s: PongState, r: Array, p: PongParams) -> PongState:
        c = consts(p)
        paddle = c.height * F32(0.5) - c.paddle_height * F32(0.5)
        return PongState(
            paddle_yl=_fill(s.paddle_yl, paddle),
            paddle_yr=_fill(s.paddle_yr, paddle),
            # A true division, as in C, kept from merging with the observation's.
            ball_x=_fill(s.ball_x, rounded(divide(c.width, 5.0))),
            ball_y=_fill(s.ball_y, c.height * F32(0.5) - c.ball_height * F32(0.5)),
            ball_vx=_fill(s.ball_vx, c.vx0),
            # (rand() % 2 - 1) * speed: -1 or 0 times the speed, never +1
            ball_vy=(r % 2 - 1).astype(jnp.float32) * c.vy0,
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
        p = self.default_params() if params is None else params
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
        p = self.default_params() if params is None else params
        c = consts(p)
        d = self.direction(action, p)
        lo, hi = c.lo, c.hi
        bw, bh, ph = c.ball_width, c.ball_height, c.paddle_height
        speed, width, height = c.speed, c.width, c.height
        # A discrete direction is -1, 0 or 1: the product is exact and needs no guard.
        move = rounded(speed * d) if p.continuous else speed * d
        old_rules = p.rules == RULES_61F27B3
        pyl, pyr, bx, by, vx, vy = (state.paddle_yl, state.paddle_yr, state.ball_x,
                                    state.ball_y, state.ball_vx, state.ball_vy)
        reward = jnp.zeros((), jnp.float32)
        point_r = point_l = stopped = jnp.zeros((), jnp.bool_)
        # 61f27b3: the observation a point leaves behind is the previous sub-frame's (stale).
        stale: tuple[Array, ...] = (pyl, pyr, bx, by, vx, vy)
        for i in range(p.frameskip):
            before = (pyl, pyr, bx, by, vx, vy)
            n_pyr = pyr + move
            n_pyl = pyl + jnp.clip(by - (pyl + ph * F32(0.5)), -speed, speed)
            n_pyr = jnp.clip(n_pyr, lo, hi)
            n_pyl = jnp.clip(n_pyl, lo, hi)
            n_bx, n_by = bx + vx, by + vy
            n_vy = jnp.where((n_by < 0) | (n_by + bh > height), -vy, vy)
            left = n_bx < 0
            hit_l = left & (n_by + bh > n_pyl) & (n_by < n_pyl + ph)
            scored_r = left & ~hit_l
            n_vx = jnp.where(hit_l, -vx, vx)
            right = (n_bx + bw > width) & ~scored_r
            hit_r = right & (n_by + bh > n_pyr) & (n_by < n_pyr + ph)
            scored_l = right & ~hit_r
            hit_r, scored_r, scored_l = compute_once(hit_r, scored_r, scored_l)
            n_vx = jnp.where(hit_r, -n_vx, n_vx)
            bounced = jnp.clip(n_vy + rounded(c.inc * d), -c.max_vy, c.max_vy)
            bounced = jnp.where(jnp.abs(bounced) <= F32(0.01),
                                c.inc, bounced)
            n_vy = jnp.where(hit_r, bounced, n_vy)
            n_bx = jnp.where(hit_r, jnp.clip(n_bx, F32(0), width - bw), n_bx)
            n_by = jnp.where(hit_r, jnp.clip(n_by, F32(0), height - bh), n_by)
            # 8e3e754 dropped the +0.1 for a return: a hit leaves the reward as it was (0).
            returned = jnp.where(hit_r, F32(0.1), reward) if old_rules else reward
            n_reward = jnp.where(scored_r, F32(1), jnp.where(scored_l, F32(-1), returned))
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
                if old_rules:
                    stale = tuple(jnp.where(live & (scored_r | scored_l), b, s)
                                  for b, s in zip(before, stale, strict=True))
            stopped = point_r | point_l
        score_r = state.score_r + point_r.astype(jnp.uint32)
        score_l = state.score_l + point_l.astype(jnp.uint32)
        # Only the side that scored is compared, as in C: from a state with a score already
        # past max_score (injected; unreachable) the other side's point does not end it. (This
        # form, one select, is as fast as comparing both sides; two ands cost 15% on CPU.)
        terminated = stopped & (jnp.where(point_r, score_r, score_l) == c.max_score)
        played = PongState(pyl, pyr, bx, by, vx, vy, score_l, score_r, state.tick + 1, state.rng)
        served = self.round_reset(played, draws.r, p)
        zero = jnp.zeros_like(score_l)
        served = dataclasses.replace(served, score_l=jnp.where(terminated, zero, score_l),
                                     score_r=jnp.where(terminated, zero, score_r))
        new_state = jax.tree_util.tree_map(lambda a, b: jnp.where(stopped, a, b), served, played)
        shown = new_state  # 8e3e754: after a point, the serve's observation
        if old_rules:
            stale_state = dataclasses.replace(state, **dict(zip(MOVING, stale, strict=True)))
            shown = jax.tree_util.tree_map(
                lambda a, b: jnp.where(stopped & ~terminated, a, b), stale_state, new_state)
        obs = self.observation(shown, p)
        return StepResult(new_state, obs, reward, terminated, jnp.zeros((), jnp.bool_), {})

    def observation_space(self, params: PongParams | None = None) -> Space:
        p = self._params if params is None else params
        low, high = observation_bounds({k: getattr(p, k) for k in PARAM_DEFAULTS})
        return Box(low, high, (8,))

    def action_space(self, params: PongParams | None = None) -> Space:
        p = self.default_params() if params is None else params
        return Box(-1.0, 1.0, (1,)) if p.continuous else Discrete(3)
