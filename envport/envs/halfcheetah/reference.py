"""Adapter over the real Gymnasium ``HalfCheetah-v5`` (MuJoCo, float64) with its ``TimeLimit``.

State: ``qpos`` (9), ``qvel`` (9) and ``TimeLimit``'s step counter ``time``. A step draws nothing;
``reset`` draws the reset noise, which :meth:`HalfCheetahReference.tape` reports after a reset.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, cast

import gymnasium as gym
import mujoco
import numpy as np

from envport.core.reference import RefState
from envport.core.spaces import InvalidActionError
from envport.envs.halfcheetah.model import (
    PARAM_SHAPES,
    check_versions,
    mujoco_warnings_to_python,
    param_shape,
)

ENV_ID = "HalfCheetah-v5"

# The translation's task params -> Gymnasium HalfCheetah-v5's keyword (TimeLimit's for max_steps).
GYMNASIUM_KWARGS = {"forward_reward_weight": "forward_reward_weight",
                    "ctrl_cost_weight": "ctrl_cost_weight",
                    "reset_noise_scale": "reset_noise_scale",
                    "max_steps": "max_episode_steps", "frame_skip": "frame_skip",
                    "exclude_current_positions": "exclude_current_positions_from_observation"}


def split_params(params: Mapping[str, Any] | None) -> tuple[dict[str, np.ndarray],
                                                            dict[str, Any]]:
    """Params by the translation's names (``HalfCheetahParams``) -> (MuJoCo model fields to
    write, ``gym.make`` keywords). Raises ``ValueError`` naming an unknown param."""
    model_values, kwargs = {}, {}
    for name, value in (params or {}).items():
        if name in PARAM_SHAPES:
            model_values[name] = np.asarray(value, np.float64)
        elif name in GYMNASIUM_KWARGS:
            v = np.asarray(value).item()
            kwargs[GYMNASIUM_KWARGS[name]] = (
                int(v) if name in ("max_steps", "frame_skip") else
                bool(v) if name == "exclude_current_positions" else float(v))
        else:
            raise ValueError(f"HalfCheetah has no param {name!r}; its params: "
                             f"{', '.join([*PARAM_SHAPES, *GYMNASIUM_KWARGS])}")
    return model_values, kwargs


def apply_model_params(m: mujoco.MjModel, values: Mapping[str, Any]) -> None:
    """Write model params into ``m`` in place, as a MuJoCo user edits a model (no
    ``mj_setConst``: what MuJoCo derived from the masses at compile time, ``invweight0`` and
    ``stat.meaninertia``, keeps its compiled value, as in the translation)."""
    for name, value in values.items():
        arr = np.asarray(value, np.float64)
        shape = param_shape(m, name)
        if arr.shape != shape:
            raise ValueError(f"HalfCheetah param {name} has shape {arr.shape}; MuJoCo's has "
                             f"shape {shape}")
        if name == "actuator_gear":
            m.actuator_gear[:, 0] = arr
        elif name == "gravity":
            m.opt.gravity[:] = arr
        else:
            getattr(m, name)[:] = arr


def make_gymnasium_env(**kwargs: Any) -> gym.Env:
    """``gym.make("HalfCheetah-v5")`` with MuJoCo's load-time warnings kept out of the user's
    working directory (see ``model.mujoco_warnings_to_python``)."""
    import warnings

    check_versions()
    with mujoco_warnings_to_python(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="MuJoCo: compiler attribute 'settotalmass'")
        return gym.make(ENV_ID, **kwargs)


# The arrays each stage of mj_step leaves for the next (MuJoCo 4.0 names); positions are
# jittered with x taken relative to the root's x slide, as the translation holds them.
_KINEMATIC_POSITIONS = ("xpos", "xipos", "xanchor", "geom_xpos", "subtree_com")
_KINEMATIC_FRAMES = ("xquat", "xmat", "ximat", "xaxis", "geom_xmat", "cinert", "cdof")


def _round(rng: np.random.Generator, x: np.ndarray, noise: float, to_float32: bool) -> None:
    """In place: x (1 + noise U(-1, 1)) elementwise, then (optionally) rounded to float32."""
    if x.size and noise:
        x *= 1.0 + noise * rng.uniform(-1.0, 1.0, x.shape)
    if x.size and to_float32:
        x[:] = x.astype(np.float32)


def rounded_mj_step(m: mujoco.MjModel, d: mujoco.MjData, rng: np.random.Generator,
                    noise: float, to_float32: bool) -> None:
    """One ``mj_step`` (Euler) run stage by stage, each stage's output carrying the rounding error
    of an implementation at the translation's precision: jittered by ``noise`` relative (a few
    ulps) and, for float32, rounded to float32. Without jitter the stages reproduce ``mj_step``
    bit for bit (tests/envs/halfcheetah/test_env.py).

    Stages and what is rounded after each (what a float32 pipeline holds in float32):
    kinematics (body/geom/anchor positions with x relative to the root slide, frames, cinert,
    cdof); the mass matrix (then refactored); contacts and constraint rows (efc_J, efc_D); the
    velocity stage (qfrc_bias, qfrc_passive, efc_aref); actuation (qfrc_actuator); smooth
    acceleration (qfrc_smooth, qacc_smooth); the solver (qacc); the constraint force; the state
    after Euler. The constraint force -D (J qacc - aref) is a difference of two nearly equal
    terms times a stiff D, so an implementation computing it at precision eps errs by about
    eps D (|J| |qacc| + |aref|), not eps |force|: that is the jitter it gets (then
    qfrc_constraint = J' force). Without that term the copies' one-step error missed the
    float32 translation's by up to 60x on some contact states; with it, the largest of three
    copies covered the translation's one-step error within 5.6x on all 3,000 states of 100
    episodes' first 30 steps (README, Verification).
    """
    mujoco.mj_checkPos(m, d)
    mujoco.mj_checkVel(m, d)
    # mj_fwdPosition, split where its outputs are rounded.
    mujoco.mj_fwdKinematics(m, d)
    perturbed = bool(noise or to_float32)
    x0 = d.qpos[0] if perturbed else 0.0
    for name in _KINEMATIC_POSITIONS:
        a = getattr(d, name)
        a[:, 0] -= x0
        _round(rng, a, noise, to_float32)
        a[:, 0] += x0
    for name in _KINEMATIC_FRAMES:
        _round(rng, getattr(d, name), noise, to_float32)
    mujoco.mj_makeM(m, d)
    _round(rng, d.M, noise, to_float32)
    mujoco.mj_factorM(m, d)
    mujoco.mj_collision(m, d)
    mujoco.mj_makeConstraint(m, d)
    nefc, nv = d.nefc, m.nv
    J = d.efc_J[: nefc * nv]  # dense rows (nv = 9 < 60: MuJoCo's automatic choice)
    _round(rng, J, noise, to_float32)
    _round(rng, d.efc_D[:nefc], noise, to_float32)
    mujoco.mj_island(m, d)
    mujoco.mj_transmission(m, d)
    mujoco.mj_projectConstraint(m, d)
    mujoco.mj_fwdVelocity(m, d)
    for a in (d.qfrc_bias, d.qfrc_passive, d.efc_aref[:nefc]):
        _round(rng, a, noise, to_float32)
    mujoco.mj_fwdActuation(m, d)
    _round(rng, d.qfrc_actuator, noise, to_float32)
    mujoco.mj_fwdAcceleration(m, d)
    for a in (d.qfrc_smooth, d.qacc_smooth):
        _round(rng, a, noise, to_float32)
    mujoco.mj_fwdConstraint(m, d)
    _round(rng, d.qacc, noise, to_float32)
    if nefc and perturbed:
        Jm = J.reshape(nefc, nv)
        force = d.efc_force[:nefc]
        cancel = d.efc_D[:nefc] * (np.abs(Jm) @ np.abs(d.qacc) + np.abs(d.efc_aref[:nefc]))
        force += np.where(force != 0, noise * cancel * rng.uniform(-1.0, 1.0, nefc), 0.0)
        _round(rng, force, 0.0, to_float32)
        d.qfrc_constraint[:] = Jm.T @ force
        _round(rng, d.qfrc_constraint, 0.0, to_float32)
    mujoco.mj_checkAcc(m, d)
    mujoco.mj_Euler(m, d)
    for a in (d.qpos, d.qvel):
        _round(rng, a, noise, to_float32)


class HalfCheetahReference:
    """One Gymnasium ``HalfCheetah-v5``.

    ``params`` (names and shapes of the translation's ``HalfCheetahParams``): model fields are
    written into the MuJoCo model (:func:`apply_model_params`), the reward weights, reset noise,
    time limit, frame skip and observation flag go to ``gym.make``.

    ``noise`` > 0 makes a copy of the reference for L3's calibrated envelope, MuJoCo carrying the
    rounding error of a float32 (or float64) implementation. ``noise_seed`` seeds the jitter.

    - ``stages=False``: after every env step qpos/qvel are jittered by ``noise`` relative (a few
      ulps of the translation's precision) and, with ``round_float32``, rounded to float32.
    - ``stages=True``: every MuJoCo step runs stage by stage (:func:`rounded_mj_step`), and the
      output of each stage is jittered (and rounded) where an implementation at that precision
      rounds it, including the cancellation in the constraint force -D (J qacc - aref).
    """

    def __init__(self, noise: float = 0.0, round_float32: bool = False, noise_seed: int = 0,
                 stages: bool = False, params: Mapping[str, Any] | None = None,
                 **env_kwargs: Any):
        model_values, kwargs = split_params(params)
        clash = sorted(set(kwargs) & set(env_kwargs))
        if clash:
            raise ValueError(f"HalfCheetahReference: {', '.join(clash)} given both in params "
                             "and as a keyword")
        # Any: Gymnasium types the wrapper chain as Env, MuJoCo's attributes live below it.
        self.env = cast(Any, make_gymnasium_env(**kwargs, **env_kwargs))
        self.core = cast(Any, self.env.unwrapped)
        self.model, self.data = self.core.model, self.core.data
        apply_model_params(self.model, model_values)
        self.noise, self.round_float32, self.noise_seed = noise, round_float32, noise_seed
        self.stages = bool(stages and noise)
        self.rng = np.random.default_rng(0)
        self._tape: dict[str, np.ndarray] = {}
        self._reset_once = False
        if self.stages:
            # Gymnasium's MujocoEnv.do_simulation -> _step_mujoco_simulation(ctrl, n_frames):
            # ctrl, mj_step n_frames times, mj_rnePostConstraint. The same, stage by stage.
            self.core._step_mujoco_simulation = self._rounded_simulation

    def _rounded_simulation(self, ctrl: np.ndarray, n_frames: int) -> None:
        self.data.ctrl[:] = ctrl
        for _ in range(n_frames):
            rounded_mj_step(self.model, self.data, self.rng, self.noise, self.round_float32)
        mujoco.mj_rnePostConstraint(self.model, self.data)

    def reset(self, seed: int) -> np.ndarray:
        obs, _ = self.env.reset(seed=int(seed))
        self._reset_once = True
        self.rng = np.random.default_rng((int(seed), self.noise_seed))
        # The reset noise: qpos = init_qpos + U(-0.1, 0.1), qvel = init_qvel + 0.1 N(0, 1).
        self._tape = {"qpos_noise": self.data.qpos - self.core.init_qpos,
                      "qvel_noise": self.data.qvel - self.core.init_qvel}
        return obs

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = np.asarray(action)
        if a.shape != (6,) or not np.issubdtype(a.dtype, np.floating):
            raise InvalidActionError(f"HalfCheetah takes a float action of shape (6,), got "
                                     f"{a.dtype}{a.shape}")
        if not np.all(np.isfinite(a)):
            raise InvalidActionError(f"HalfCheetah action {a} is not finite")
        obs, reward, terminated, truncated, info = self.env.step(a.astype(np.float64))
        self._tape = {}
        if self.noise and not self.stages:
            for arr in (self.data.qpos, self.data.qvel):
                arr *= 1.0 + self.noise * self.rng.uniform(-1.0, 1.0, arr.shape)
                if self.round_float32:
                    arr[:] = arr.astype(np.float32).astype(np.float64)
        return obs, float(reward), bool(terminated), bool(truncated), info

    def get_state(self) -> RefState:
        return {"qpos": self.data.qpos.copy(), "qvel": self.data.qvel.copy(),
                "time": np.int32(self.env._elapsed_steps or 0)}  # TimeLimit, outermost

    def set_state(self, state: Mapping[str, np.ndarray]) -> None:
        if not self._reset_once:  # Gymnasium's OrderEnforcing wants a reset before a step
            self.reset(0)
        self.core.set_state(np.asarray(state["qpos"], np.float64),
                            np.asarray(state["qvel"], np.float64))
        self.env._elapsed_steps = int(state["time"])

    def tape(self) -> dict[str, np.ndarray]:
        """The reset noise after ``reset``; empty after ``step`` (a step draws nothing)."""
        return dict(self._tape)

    def observation(self) -> np.ndarray:
        return self.core._get_obs()

    def close(self) -> None:
        self.env.close()


def gymnasium_throughput(batch_sizes: list[int], steps: int) -> list[dict[str, Any]]:
    """Random-action SPS of Gymnasium as users run it: one process stepping one env, and an
    ``AsyncVectorEnv`` with one worker process per core (the way to use both cores)."""
    import os

    rows = []
    rng = np.random.default_rng(0)
    env = make_gymnasium_env()
    env.reset(seed=0)
    n_single = max(1000, min(steps, 20_000))
    actions = rng.uniform(-1, 1, (n_single, 6))
    t0 = time.perf_counter()
    for a in actions:
        _, _, term, trunc, _ = env.step(a)
        if term or trunc:
            env.reset()
    rows.append({"backend": "reference", "mode": "gymnasium loop", "batch_size": 1,
                 "steps_per_second": n_single / (time.perf_counter() - t0)})
    env.close()
    cores = os.cpu_count() or 1
    for n in sorted({cores, *[b for b in batch_sizes if cores <= b <= 64]}):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # make_gymnasium_env in each worker: MuJoCo's load warning stays out of the cwd.
            venv = gym.vector.AsyncVectorEnv([make_gymnasium_env] * n)
        venv.reset(seed=0)
        iters = max(20, min(steps, 20_000) // n)
        acts = rng.uniform(-1, 1, (iters, n, 6))
        venv.step(acts[0])  # workers warm
        t0 = time.perf_counter()
        for a in acts:
            venv.step(a)
        rows.append({"backend": "reference", "mode": f"gymnasium async vector env "
                                                     f"({cores} cores)",
                     "batch_size": n, "steps_per_second": iters * n / (time.perf_counter() - t0)})
        venv.close()
    return rows
