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

Params are data (gymnax style): :class:`HalfCheetahParams`' physical fields (MuJoCo's
``body_mass``, ``body_inertia``, ``geom_friction``, ``dof_damping``, ``dof_armature``,
``jnt_stiffness``, the motors' ``actuator_gear``, ``opt.gravity``) and the task's reward weights,
reset noise and time limit are pytree leaves, so one compiled step serves any values and
``jax.vmap`` over a batch of params randomises the domain::

    env = HalfCheetah()
    base = env.default_params()
    params = jax.vmap(lambda s: dataclasses.replace(base, body_mass=base.body_mass * s))(scales)
    step = jax.jit(jax.vmap(env.step))   # keys, states, actions, params: one row per env

Only ``frame_skip`` and ``exclude_current_positions`` (the loop and the observation's shape)
are static.
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
from envport.envs.halfcheetah.model import (
    MJ_MAXVAL,
    PARAM_SHAPES,
    CheetahModel,
    cheetah_model,
    param_shape,
)


class UnstableSimulationError(FloatingPointError):
    """The simulation produced NaN/inf or a value beyond MuJoCo's 1e10 bound."""


@pytree_dataclass
class HalfCheetahParams:
    """Model fields (MuJoCo's names and shapes; ``actuator_gear`` is each motor's first gear
    component) and task parameters: all traced except ``frame_skip`` and
    ``exclude_current_positions``. :meth:`HalfCheetah.default_params` gives the compiled model's
    values and Gymnasium's HalfCheetah-v5 defaults."""

    body_mass: Array          # (nbody,) = (8,); the world body's 0 is not used
    body_inertia: Array       # (nbody, 3) principal moments (only I_yy acts in the plane)
    geom_friction: Array      # (ngeom, 3); only the sliding column acts (condim 3)
    dof_damping: Array        # (nv,)
    dof_armature: Array       # (nv,)
    jnt_stiffness: Array      # (nv,)
    actuator_gear: Array      # (nu,)
    gravity: Array            # (3,); y must stay 0 (planar)
    forward_reward_weight: Any = 1.0
    ctrl_cost_weight: Any = 0.1
    reset_noise_scale: Any = 0.1
    max_steps: Any = 1000     # TimeLimit's max_episode_steps
    frame_skip: int = static_field(default=5)
    exclude_current_positions: bool = static_field(default=True)


MODEL_PARAMS = tuple(PARAM_SHAPES)
TASK_PARAMS = ("forward_reward_weight", "ctrl_cost_weight", "reset_noise_scale", "max_steps")
STATIC_PARAMS = ("frame_skip", "exclude_current_positions")


def make_params(cm: CheetahModel, **values: Any) -> HalfCheetahParams:
    """The compiled model's values and the task's defaults, with ``values`` replacing some
    (checked: known names, MuJoCo's shapes, finite, gravity in the plane)."""
    known = (*MODEL_PARAMS, *TASK_PARAMS, *STATIC_PARAMS)
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"HalfCheetah has no param(s) {', '.join(unknown)}; its params: "
                         f"{', '.join(known)}")
    fields: dict[str, Any] = {k: np.array(v) for k, v in physics.model_values(cm).items()}
    for name, v in values.items():
        if name in MODEL_PARAMS and not isinstance(v, jax.core.Tracer):
            arr = np.asarray(v, np.float64)
            shape = param_shape(cm, name)
            if arr.shape != shape:
                raise ValueError(f"HalfCheetah param {name} has shape {arr.shape}; MuJoCo's "
                                 f"{name} has shape {shape}")
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"HalfCheetah param {name} is not finite: {arr}")
            if name == "gravity" and arr[1] != 0:
                raise ValueError(f"HalfCheetah's gravity must stay in the x-z plane (y = 0), "
                                 f"got {arr}")
            v = arr
        elif name == "frame_skip" and (not isinstance(v, int | np.integer) or v < 1):
            raise ValueError(f"HalfCheetah param frame_skip must be a positive int, got {v!r}")
        fields[name] = v
    return HalfCheetahParams(**fields)


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


def _substeps(cm: CheetahModel, frame_skip: int, qpos: Array, qvel: Array, ctrl: Array,
              dyn: physics.Dynamics) -> tuple[Array, Array, Array]:
    """``frame_skip`` MuJoCo steps; returns qpos, qvel and the distance moved along x. Works on
    one environment or on arrays with trailing batch axes (physics.py's layout)."""
    h = cm.timestep

    def substep(k: Array, carry: tuple[Array, ...]) -> tuple[Array, ...]:
        qpos, qvel, qacc, dx = carry
        # MuJoCo warmstarts each solve from the previous step's qacc; the first substep of an
        # env step starts from qacc_smooth (the state carries no qacc). Only the number of
        # Newton iterations depends on this: the solution is the unique minimiser.
        qpos, qvel, qacc = physics.step(cm, qpos, qvel, ctrl, qacc, use_warm=k > 0, dyn=dyn)
        # x moves by h * qvel[x] per substep (semi-implicit Euler); summing these avoids the
        # cancellation of x_after - x_before in float32 once x is large.
        return qpos, qvel, qacc, dx + h * qvel[cm.x_dof]

    # zeros_like of the state (not jnp.zeros): under shard_map the carry must vary like it.
    qpos, qvel, _, dx = jax.lax.fori_loop(
        0, frame_skip, substep, (qpos, qvel, jnp.zeros_like(qvel), jnp.zeros_like(qvel[0])))
    return qpos, qvel, dx


# Largest number of environments stepped together (see _frames). Measured on the 2-core machine
# at batch 4,096 on 2 devices (README, Throughput): 64 -> 31k, 128 -> 39k, 512 -> 33k env
# steps/s, 256 on a par with 128; unchunked 13k (its arrays leave the cache).
CHUNK = 256


@functools.cache
def _frames(cm: CheetahModel, frame_skip: int) -> Any:
    """:func:`_substeps` for one environment, whose batching rule moves vmap's batch axis LAST
    (physics.py's layout: every per-env scalar a contiguous vector, which XLA's CPU backend
    vectorises; vmap would put the batch first and leave the scalars strided). Same arithmetic
    per environment either way.

    The params' :class:`physics.Dynamics` ride along: batched (domain randomisation) their axis
    moves last like the state's; shared by the batch they get a trailing axis of size 1 instead
    (broadcast, never copied per environment), so every array has the state's number of batch
    axes, each of the state's size or 1, however vmaps nest."""

    @jax.custom_batching.custom_vmap
    def frames(qpos: Array, qvel: Array, ctrl: Array, dyn: physics.Dynamics
               ) -> tuple[Array, Array, Array]:
        return _substeps(cm, frame_skip, qpos, qvel, ctrl, dyn)

    @frames.def_vmap
    def frames_vmap(axis_size: int, in_batched: list[Any], qpos: Array, qvel: Array,
                    ctrl: Array, dyn: physics.Dynamics
                    ) -> tuple[tuple[Array, Array, Array], tuple[bool, bool, bool]]:
        args = [jnp.moveaxis(x if batched else jnp.broadcast_to(x, (axis_size, *x.shape)), 0, -1)
                for x, batched in zip((qpos, qvel, ctrl), in_batched[:3], strict=True)]
        dyn = jax.tree.map(lambda x, batched: jnp.moveaxis(x, 0, -1) if batched else x[..., None],
                           dyn, in_batched[3])
        # Environments in chunks of at most CHUNK, one after another (lax.map): a chunk's
        # working set stays in the core's cache, and each chunk's Newton loops stop at its own
        # slowest environment rather than the whole batch's.
        chunks = -(-axis_size // CHUNK)
        if chunks > 1:
            size = -(-axis_size // chunks)
            padded = chunks * size  # < axis_size + chunks: repeats of the last environment

            def split(x: Array) -> Array:
                if padded > axis_size:
                    pad = [(0, 0)] * (x.ndim - 1) + [(0, padded - axis_size)]
                    x = jnp.pad(x, pad, mode="edge")
                return jnp.moveaxis(x.reshape(*x.shape[:-1], chunks, size), -2, 0)

            def merge(x: Array) -> Array:
                x = jnp.moveaxis(x, 0, -2)
                return x.reshape(*x.shape[:-2], padded)[..., :axis_size]

            leaves, tree = jax.tree.flatten(dyn)
            flags = jax.tree.leaves(in_batched[3])
            chunked = [split(x) for x, b in zip(leaves, flags, strict=True) if b]

            def chunk(xs: tuple) -> tuple[Array, Array, Array]:
                state, per_chunk = xs
                it = iter(per_chunk)
                d = jax.tree.unflatten(tree, [next(it) if b else x
                                              for x, b in zip(leaves, flags, strict=True)])
                return frames(*state, d)

            out = tuple(merge(x) for x in jax.lax.map(chunk, (tuple(map(split, args)), chunked)))
        else:
            # Called again (not _substeps) so that an outer vmap moves its axis last too.
            out = frames(*args, dyn)
        moved = tuple(jnp.moveaxis(x, -1, 0) for x in out)
        return (moved[0], moved[1], moved[2]), (True, True, True)

    return frames


@functools.cache
def _jitted_transition(env: HalfCheetah) -> Any:
    return jax.jit(env._transition)


class HalfCheetah(Environment[HalfCheetahState, HalfCheetahParams]):
    name = "halfcheetah"

    def __init__(self, dtype: Any = jnp.float32, checked: bool = False,
                 model: CheetahModel | None = None, **params: Any):
        self.dtype = jnp.dtype(dtype)
        require_dtype_available(self.dtype)
        self.checked = checked
        self.model = cheetah_model() if model is None else model
        self._params = make_params(self.model, **params)

    def __repr__(self) -> str:
        return f"HalfCheetah(dtype={self.dtype.name}, checked={self.checked})"

    def default_params(self) -> HalfCheetahParams:
        return self._params

    def dynamics(self, params: HalfCheetahParams) -> physics.Dynamics:
        """What the physics reads of ``params`` (one environment's): derived in float64 when
        the params are concrete (then cast: the compiled model's values give exactly the
        constants of the model), else traced in the env's dtype."""
        values = {name: getattr(params, name) for name in MODEL_PARAMS}
        if any(isinstance(v, jax.core.Tracer) for v in values.values()):
            return physics.dynamics(
                self.model, {k: jnp.asarray(v, self.dtype) for k, v in values.items()}, jnp)
        d = physics.dynamics(self.model, {k: np.asarray(v, np.float64)
                                          for k, v in values.items()}, np)
        return physics.Dynamics(*(jnp.asarray(x, self.dtype) for x in d))

    def observation(self, state: HalfCheetahState, params: HalfCheetahParams) -> Array:
        pos = state.qpos if not params.exclude_current_positions else state.qpos[1:]
        return jnp.concatenate([pos, state.qvel]).astype(self.dtype)

    def reset(self, key: Array, params: HalfCheetahParams | None = None
              ) -> tuple[HalfCheetahState, Array]:
        p = self._params if params is None else params
        require_dtype_available(self.dtype)
        cm, s = self.model, jnp.asarray(p.reset_noise_scale, self.dtype)
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
        # under an outer jit this inlines. The params are its arguments: new values, no
        # recompilation.
        res = _jitted_transition(self)(state, action, p, self.dynamics(p))
        if self.checked:
            bad = res.info["bad_state"]
            if not isinstance(bad, jax.core.Tracer) and bool(bad):
                raise UnstableSimulationError(
                    f"HalfCheetah: NaN or exploding state after a step (|value| > {MJ_MAXVAL:g}"
                    f" or NaN): qpos={np.asarray(res.state.qpos)}, "
                    f"qvel={np.asarray(res.state.qvel)}, action={np.asarray(action)}")
        return res

    def _transition(self, state: HalfCheetahState, action: Array, p: HalfCheetahParams,
                    dyn: physics.Dynamics) -> StepResult:
        cm = self.model
        h = cm.timestep
        ctrl = jnp.asarray(action, self.dtype)
        qpos, qvel, dx = _frames(cm, p.frame_skip)(state.qpos.astype(self.dtype),
                                                  state.qvel.astype(self.dtype), ctrl, dyn)
        dt = h * p.frame_skip
        x_velocity = dx / dt
        reward_forward = jnp.asarray(p.forward_reward_weight, self.dtype) * x_velocity
        reward_ctrl = -jnp.asarray(p.ctrl_cost_weight, self.dtype) * jnp.sum(jnp.square(ctrl))
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
        flags = result.info.get("bad_state")
        if flags is None:
            raise ValueError("check() needs a step of HalfCheetah(checked=True)")
        bad = np.asarray(flags)
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
