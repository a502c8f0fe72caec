"""HalfCheetah-v5 in JAX: Gymnasium's task over the JAX MuJoCo pipeline of ``physics.py``.

Task (Gymnasium 1.4.0 ``HalfCheetahEnv`` defaults + ``TimeLimit(1000)``):
- step: ctrl = action, ``frame_skip`` = 5 MuJoCo steps of 0.01 s; x_velocity = (x_after -
  x_before) / 0.05;
- reward = 1.0 * x_velocity - 0.1 * sum(action^2) (the action as given, before MuJoCo's clamp);
- observation: qpos[1:] then qvel (17 values; 18 with ``exclude_current_positions=False``);
- never terminates; truncated when the step count reaches 1000;
- reset: qpos = init_qpos + U(-0.1, 0.1), qvel = init_qvel + 0.1 N(0, 1). A step draws nothing.

float32 by default; ``HalfCheetah(dtype=jnp.float64)`` computes in float64 (needs JAX's x64 mode:
``with jax.enable_x64(True):`` or ``JAX_ENABLE_X64=1``), which is how the physics is verified to
MuJoCo's own precision. ``checked=True`` reports a NaN or exploding state (MuJoCo's mj_checkPos /
mj_checkVel bound, 1e10) in ``info["bad_state"]`` and raises :class:`UnstableSimulationError` when
the step runs eagerly, instead of silently carrying NaNs forward.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.api import Array, Environment, StepResult, pytree_dataclass, static_field
from envport.core.spaces import Box
from envport.envs.halfcheetah import physics
from envport.envs.halfcheetah.model import MJ_MAXVAL, CheetahModel, cheetah_model


class UnstableSimulationError(FloatingPointError):
    """The simulation produced NaN/inf or a value beyond MuJoCo's 1e10 bound."""


@pytree_dataclass
class HalfCheetahParams:
    frame_skip: int = static_field(5)
    forward_reward_weight: float = static_field(1.0)
    ctrl_cost_weight: float = static_field(0.1)
    reset_noise_scale: float = static_field(0.1)
    exclude_current_positions: bool = static_field(True)
    max_steps: int = static_field(1000)


@pytree_dataclass
class HalfCheetahState:
    qpos: Array  # (9,) rootx, rootz, rooty, bthigh, bshin, bfoot, fthigh, fshin, ffoot
    qvel: Array  # (9,)
    time: Array  # steps taken in this episode (TimeLimit's _elapsed_steps)


def require_dtype_available(dtype: Any) -> None:
    """float64 silently becomes float32 unless JAX's x64 mode is on: refuse instead."""
    if jax.dtypes.canonicalize_dtype(dtype) != jnp.dtype(dtype):
        raise RuntimeError(
            f"HalfCheetah(dtype={jnp.dtype(dtype).name}) needs JAX's x64 mode: run it inside "
            "`with jax.enable_x64(True):` or set JAX_ENABLE_X64=1")


def is_bad(*arrays: Array) -> Array:
    """MuJoCo's mju_isBad over arrays: NaN, or beyond +-1e10 (mjMAXVAL)."""
    bad = [~jnp.all(jnp.abs(a) <= MJ_MAXVAL) for a in arrays]  # NaN fails the comparison
    return jnp.any(jnp.stack(bad))


def _substeps(cm: CheetahModel, frame_skip: int, qpos: Array, qvel: Array, ctrl: Array
              ) -> tuple[Array, Array, Array]:
    """``frame_skip`` MuJoCo steps; returns qpos, qvel and the distance moved along x. Works on
    one environment or on arrays with trailing batch axes (physics.py's layout)."""
    h = cm.timestep

    def substep(k: Array, carry: tuple[Array, ...]) -> tuple[Array, ...]:
        qpos, qvel, qacc, dx = carry
        # MuJoCo warmstarts each solve from the previous step's qacc; the first substep of an
        # env step starts from qacc_smooth (the state carries no qacc). Only the number of
        # Newton iterations depends on this: the solution is the unique minimiser.
        qpos, qvel, qacc = physics.step(cm, qpos, qvel, ctrl, qacc, use_warm=k > 0)
        # x moves by h * qvel[x] per substep (semi-implicit Euler); summing these avoids the
        # cancellation of x_after - x_before in float32 once x is large.
        return qpos, qvel, qacc, dx + h * qvel[cm.x_dof]

    # zeros_like of the state (not jnp.zeros): under shard_map the carry must vary like it.
    qpos, qvel, _, dx = jax.lax.fori_loop(
        0, frame_skip, substep, (qpos, qvel, jnp.zeros_like(qvel), jnp.zeros_like(qvel[0])))
    return qpos, qvel, dx


@functools.cache
def _frames(cm: CheetahModel, frame_skip: int) -> Any:
    """:func:`_substeps` for one environment, whose batching rule moves vmap's batch axis LAST
    (physics.py's layout: every per-env scalar a contiguous vector, which XLA's CPU backend
    vectorises; vmap would put the batch first and leave the scalars strided). Same arithmetic
    per environment either way."""

    @jax.custom_batching.custom_vmap
    def frames(qpos: Array, qvel: Array, ctrl: Array) -> tuple[Array, Array, Array]:
        return _substeps(cm, frame_skip, qpos, qvel, ctrl)

    @frames.def_vmap
    def frames_vmap(axis_size: int, in_batched: list[bool], qpos: Array, qvel: Array,
                    ctrl: Array) -> tuple[tuple[Array, Array, Array], tuple[bool, bool, bool]]:
        args = [jnp.moveaxis(x if batched else jnp.broadcast_to(x, (axis_size, *x.shape)), 0, -1)
                for x, batched in zip((qpos, qvel, ctrl), in_batched, strict=True)]
        # Called again (not _substeps) so that an outer vmap moves its axis last too.
        out = frames(*args)
        return tuple(jnp.moveaxis(x, -1, 0) for x in out), (True, True, True)

    return frames


@functools.cache
def _jitted_transition(env: HalfCheetah, params: HalfCheetahParams) -> Any:
    return jax.jit(lambda state, action: env._transition(state, action, params))


class HalfCheetah(Environment[HalfCheetahState, HalfCheetahParams]):
    name = "halfcheetah"

    def __init__(self, dtype: Any = jnp.float32, checked: bool = False,
                 model: CheetahModel | None = None, **params: Any):
        self.dtype = jnp.dtype(dtype)
        require_dtype_available(self.dtype)
        self.checked = checked
        self.model = cheetah_model() if model is None else model
        self._params = HalfCheetahParams(**params)

    def __repr__(self) -> str:
        return f"HalfCheetah(dtype={self.dtype.name}, checked={self.checked})"

    def default_params(self) -> HalfCheetahParams:
        return self._params

    def observation(self, state: HalfCheetahState, params: HalfCheetahParams) -> Array:
        pos = state.qpos if not params.exclude_current_positions else state.qpos[1:]
        return jnp.concatenate([pos, state.qvel]).astype(self.dtype)

    def reset(self, key: Array, params: HalfCheetahParams | None = None
              ) -> tuple[HalfCheetahState, Array]:
        p = self._params if params is None else params
        require_dtype_available(self.dtype)
        cm, s = self.model, p.reset_noise_scale
        k_pos, k_vel = jax.random.split(key)
        qpos = jnp.asarray(cm.init_qpos, self.dtype) + jax.random.uniform(
            k_pos, (cm.nv,), self.dtype, -s, s)
        qvel = jnp.asarray(cm.init_qvel, self.dtype) + s * jax.random.normal(
            k_vel, (cm.nv,), self.dtype)
        state = HalfCheetahState(qpos, qvel, jnp.zeros((), jnp.int32))
        return state, self.observation(state, p)

    def sample_draws(self, key: Array, state: HalfCheetahState,
                     params: HalfCheetahParams | None = None) -> tuple:
        return ()  # a step is deterministic; only reset draws

    def transition(self, state: HalfCheetahState, action: Array, draws: tuple = (),
                   params: HalfCheetahParams | None = None) -> StepResult:
        p = self._params if params is None else params
        require_dtype_available(self.dtype)
        # Jitted even when called eagerly (op-by-op dispatch of the physics takes a minute);
        # under an outer jit this inlines.
        res = _jitted_transition(self, p)(state, action)
        if self.checked:
            bad = res.info["bad_state"]
            if not isinstance(bad, jax.core.Tracer) and bool(bad):
                raise UnstableSimulationError(
                    f"HalfCheetah: NaN or exploding state after a step (|value| > {MJ_MAXVAL:g}"
                    f" or NaN): qpos={np.asarray(res.state.qpos)}, "
                    f"qvel={np.asarray(res.state.qvel)}, action={np.asarray(action)}")
        return res

    def _transition(self, state: HalfCheetahState, action: Array,
                    p: HalfCheetahParams) -> StepResult:
        cm = self.model
        h = cm.timestep
        ctrl = jnp.asarray(action, self.dtype)
        qpos, qvel, dx = _frames(cm, p.frame_skip)(state.qpos.astype(self.dtype),
                                                  state.qvel.astype(self.dtype), ctrl)
        dt = h * p.frame_skip
        x_velocity = dx / dt
        reward_forward = p.forward_reward_weight * x_velocity
        reward_ctrl = -p.ctrl_cost_weight * jnp.sum(jnp.square(ctrl))
        new = HalfCheetahState(qpos, qvel, state.time + 1)
        info = {"x_position": qpos[cm.x_dof].astype(jnp.float32),
                "x_velocity": x_velocity.astype(jnp.float32),
                "reward_forward": reward_forward.astype(jnp.float32),
                "reward_ctrl": reward_ctrl.astype(jnp.float32)}
        if self.checked:
            info["bad_state"] = is_bad(qpos, qvel, ctrl)
        reward = (reward_forward + reward_ctrl).astype(jnp.float32)
        truncated = new.time >= p.max_steps
        return StepResult(new, self.observation(new, p), reward, jnp.zeros((), bool), truncated,
                          info)

    @staticmethod
    def check(result: StepResult) -> None:
        """Raise :class:`UnstableSimulationError` if any env of a (jitted, batched) checked step
        flagged a bad state."""
        bad = result.info.get("bad_state")
        if bad is None:
            raise ValueError("check() needs a step of HalfCheetah(checked=True)")
        bad = np.asarray(bad)
        if bad.any():
            where = np.flatnonzero(bad.ravel())[:8].tolist()
            raise UnstableSimulationError(
                f"HalfCheetah: NaN or exploding state in {int(bad.sum())} env(s), e.g. {where}")

    def observation_space(self, params: HalfCheetahParams | None = None) -> Box:
        p = self._params if params is None else params
        n = 2 * self.model.nv - (1 if p.exclude_current_positions else 0)
        return Box(-math.inf, math.inf, (n,), self.dtype)

    def action_space(self, params: HalfCheetahParams | None = None) -> Box:
        lo, hi = self.model.act_ctrlrange[:, 0], self.model.act_ctrlrange[:, 1]
        assert np.all(lo == lo[0]) and np.all(hi == hi[0])  # one Box bound for all motors
        return Box(float(lo[0]), float(hi[0]), (self.model.nu,), np.dtype(np.float32))
