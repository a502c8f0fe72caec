"""Adapter over the real Gymnasium ``HalfCheetah-v5`` (MuJoCo, float64) with its ``TimeLimit``.

State: ``qpos`` (9), ``qvel`` (9) and ``TimeLimit``'s step counter ``time``. A step draws nothing;
``reset`` draws the reset noise, which :meth:`HalfCheetahReference.tape` reports after a reset.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from envport.core.reference import RefState
from envport.core.spaces import InvalidActionError
from envport.envs.halfcheetah.model import check_versions, mujoco_warnings_to_python

ENV_ID = "HalfCheetah-v5"


def make_gymnasium_env(**kwargs: Any) -> gym.Env:
    """``gym.make("HalfCheetah-v5")`` with MuJoCo's load-time warnings kept out of the user's
    working directory (see ``model.mujoco_warnings_to_python``)."""
    import warnings

    check_versions()
    with mujoco_warnings_to_python(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="MuJoCo: compiler attribute 'settotalmass'")
        return gym.make(ENV_ID, **kwargs)


class HalfCheetahReference:
    """One Gymnasium ``HalfCheetah-v5``.

    ``noise`` > 0 makes a copy of the reference for L3's calibrated envelope: after every step its
    qpos/qvel are jittered by ``noise`` relative (a few ulps of the translation's precision) and,
    with ``round_float32``, rounded to float32, i.e. MuJoCo carrying the rounding error of a
    float32 (or float64) implementation. ``noise_seed`` seeds the jitter.
    """

    def __init__(self, noise: float = 0.0, round_float32: bool = False, noise_seed: int = 0,
                 **env_kwargs: Any):
        self.env = make_gymnasium_env(**env_kwargs)
        self.core = self.env.unwrapped
        self.model, self.data = self.core.model, self.core.data
        self.noise, self.round_float32, self.noise_seed = noise, round_float32, noise_seed
        self.rng = np.random.default_rng(0)
        self._tape: dict[str, np.ndarray] = {}
        self._reset_once = False

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
        if self.noise:
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
