"""Adapter over the real Gymnasium ``CartPole-v1`` (with its ``TimeLimit``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from gymnasium.wrappers import TimeLimit

from envport.core.reference import RefState

STATE_FIELDS = ("x", "x_dot", "theta", "theta_dot")

# envport's CartPoleParams field -> the CartPoleEnv attribute it sets (max_steps is TimeLimit's).
PARAM_ATTRIBUTES = {
    "gravity": "gravity",
    "masscart": "masscart",
    "masspole": "masspole",
    "length": "length",
    "force_mag": "force_mag",
    "tau": "tau",
    "theta_threshold": "theta_threshold_radians",
    "x_threshold": "x_threshold",
}
PARAM_NAMES = (*PARAM_ATTRIBUTES, "max_steps")


def make_gymnasium_cartpole(params: Mapping[str, Any] | None = None) -> TimeLimit:
    """``gym.make("CartPole-v1")`` with envport's params (names as in ``CartPoleParams``).

    CartPoleEnv takes no physics arguments, so they are set as attributes after ``make``; its
    derived constants (``total_mass``, ``polemass_length``) and its observation bounds (twice the
    thresholds, built in ``__init__``) are recomputed from them, as its constructor would.
    ``max_steps`` is the TimeLimit's ``max_episode_steps``.
    """
    params = dict(params or {})
    unknown = sorted(set(params) - set(PARAM_NAMES))
    if unknown:
        raise ValueError(f"CartPole has no param(s) {unknown}; its params are {list(PARAM_NAMES)}")
    max_steps = params.pop("max_steps", 500)
    if int(max_steps) != max_steps or max_steps < 1:
        raise ValueError(f"CartPole max_steps must be a positive integer, got {max_steps!r}")
    env = gym.make("CartPole-v1", max_episode_steps=int(max_steps))
    assert isinstance(env, TimeLimit)  # the outermost wrapper: its step counter is state
    if params:
        core = cast(CartPoleEnv, env.unwrapped)
        for name, value in params.items():
            setattr(core, PARAM_ATTRIBUTES[name], float(value))
        core.total_mass = core.masspole + core.masscart
        core.polemass_length = core.masspole * core.length
        high = np.array([core.x_threshold * 2, np.inf, core.theta_threshold_radians * 2, np.inf],
                        dtype=np.float32)
        core.observation_space = gym.spaces.Box(-high, high, dtype=np.float32)
    return env


class CartPoleReference:
    """One Gymnasium ``CartPole-v1``; the state is the float64 physics state plus the step count.

    ``float32_noise=True`` perturbs the physics state after every step by a few float32 ulps of
    the larger of its old and new magnitude (the rounding error of one float32 step of ~20
    operations) and rounds it to float32: a copy of the reference that computes at float32
    precision, used to calibrate the L3 envelope.

    ``params`` (names and meaning as in the translation's ``CartPoleParams``, e.g.
    ``{"gravity": 9.0}``) sets the Gymnasium env's constants; see :func:`make_gymnasium_cartpole`.
    """

    ULPS = 4.0

    def __init__(self, float32_noise: bool = False, noise_seed: int = 0,
                 params: Mapping[str, Any] | None = None):
        self.env = make_gymnasium_cartpole(params)
        self.noise = float32_noise
        self.noise_seed = noise_seed
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int) -> np.ndarray:
        obs, _ = self.env.reset(seed=int(seed))
        self.rng = np.random.default_rng((int(seed), self.noise_seed))
        return obs

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self.env.action_space.contains(action):
            raise ValueError(f"CartPole takes an action in {{0, 1}}, got {action!r}")
        before = np.abs(np.asarray(self.core.state, np.float64))
        obs, reward, terminated, truncated, info = self.env.step(int(action))
        if self.noise:
            core = self.core
            # Rounding error scales with the update's operands, not only its result: when a
            # velocity crosses zero, x + tau * dx loses ulps of the larger of old and new value.
            scale = np.maximum(np.abs(core.state), before)
            eps = float(np.finfo(np.float32).eps)
            jitter = self.ULPS * eps * scale * self.rng.uniform(-1.0, 1.0, 4)
            core.state = (np.asarray(core.state) + jitter).astype(np.float32).astype(np.float64)
        return obs, float(reward), bool(terminated), bool(truncated), info

    @property
    def core(self) -> Any:
        # Any: Gymnasium types CartPoleEnv.state as Optional, and it is set once reset ran.
        return self.env.unwrapped

    def get_state(self) -> RefState:
        core = self.core
        s: RefState = {k: np.float64(v) for k, v in zip(STATE_FIELDS, core.state, strict=True)}
        # TimeLimit's counter, on the outermost wrapper.
        s["time"] = np.int32(cast(int, self.env._elapsed_steps))
        return s

    def set_state(self, state: Mapping[str, np.ndarray]) -> None:
        core = self.core
        if core.state is None:
            self.reset(0)
        core.state = np.array([state[k] for k in STATE_FIELDS], dtype=np.float64)
        core.steps_beyond_terminated = None
        self.env._elapsed_steps = int(state["time"])  # type: ignore[assignment]

    def tape(self) -> dict[str, np.ndarray]:
        return {}  # CartPole's step draws nothing; only reset is random


def gymnasium_throughput(batch_sizes: list[int], steps: int) -> list[dict[str, Any]]:
    """Random-action SPS of Gymnasium as a user runs it: a Python loop, and its vector env."""
    import time

    rows = []
    env = gym.make("CartPole-v1")
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 2, steps)
    t0 = time.perf_counter()
    for a in actions:
        _, _, term, trunc, _ = env.step(int(a))
        if term or trunc:
            env.reset()
    rows.append({"backend": "reference", "mode": "gymnasium loop", "batch_size": 1,
                 "steps_per_second": steps / (time.perf_counter() - t0)})
    for n in batch_sizes:
        venv = gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point")
        venv.reset(seed=0)
        iters = max(1, steps // n) if n < steps else 10
        acts = rng.integers(0, 2, (iters, n))
        t0 = time.perf_counter()
        for a in acts:
            venv.step(a)
        rows.append({"backend": "reference", "mode": "gymnasium vector env", "batch_size": n,
                     "steps_per_second": iters * n / (time.perf_counter() - t0)})
        venv.close()
    return rows
