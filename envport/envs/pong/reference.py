"""Adapter of the C reference of Puffer Pong (``reference.c``, built by cffi at install time).

:class:`PongReference` exposes ONE C environment through :class:`envport.core.reference.Reference`.
Randomness follows PufferLib 4.0: a per-environment ``rand_r`` state (``rng``), drawn once per
round reset; :meth:`PongReference.tape` reports the draw of the last step. The rule book
(``rules``: PufferLib commit 61f27b3 or 8e3e754) and the game constants (``params``) are chosen
at construction, as in ``Pong(...)``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from envport.core.reference import RefState
from envport.envs.pong.params import (
    DEFAULT_RULES,
    PARAM_DEFAULTS,
    RULES,
    check_mode,
    check_params,
)


class PongReferenceUnavailable(ImportError):
    """The compiled C reference ``envport.envs.pong._pong_c`` is missing."""


def _load() -> Any:
    try:
        from envport.envs.pong import _pong_c  # type: ignore[attr-defined]  # built by cffi
    except ImportError as e:
        raise PongReferenceUnavailable(
            "The C reference of Pong (envport.envs.pong._pong_c) is not built. It is compiled at "
            "install time: install a C compiler (gcc/cc) and run `pip install -e .` from the "
            f"repository root. ({e})"
        ) from e
    return _pong_c


FLOAT_FIELDS = ("paddle_yl", "paddle_yr", "ball_x", "ball_y", "ball_vx", "ball_vy")
STATE_DTYPES: dict[str, type[np.generic]] = {
    **dict.fromkeys(FLOAT_FIELDS, np.float32),
    "score_l": np.uint32,
    "score_r": np.uint32,
    "tick": np.int32,
    "rng": np.uint32,
}


class PongReference:
    """One C Pong environment (frameskip 1, discrete actions, rules 61f27b3 by default).

    ``params`` overrides game constants (``width`` ... ``max_score``, as ``Pong(...)`` takes
    them); the C game reads them as float32 (``max_score`` as unsigned int).
    """

    def __init__(self, frameskip: int = 1, continuous: bool = False,
                 rules: str = DEFAULT_RULES, params: Mapping[str, Any] | None = None) -> None:
        self.frameskip, self.continuous, self.rules = check_mode(frameskip, continuous, rules)
        self.params = check_params(params or {})
        mod = _load()
        self._ffi, self._lib = mod.ffi, mod.lib
        self._env = self._ffi.new("Pong*")
        self._lib.pong_init(self._env, self.frameskip, int(self.continuous),
                            RULES.index(self.rules), c_params(self._ffi, self.params))
        self._reset_done = False

    def _obs(self) -> np.ndarray:
        return np.frombuffer(self._ffi.buffer(self._env.obs), dtype=np.float32).copy()

    def _action(self, action: Any) -> float:
        a = np.asarray(action)
        if self.continuous:
            numeric = np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)
            if a.size != 1 or not numeric:
                raise ValueError(
                    f"continuous Pong takes one float in [-1, 1] (shape () or (1,)), got {action!r}"
                )
            value = float(a.reshape(()))
            # Checked as the float32 the C step receives; never clipped.
            value32 = float(np.float32(value))
            if not (math.isfinite(value) and -1.0 <= value <= 1.0 and -1.0 <= value32 <= 1.0):
                raise ValueError(f"continuous Pong action must lie in [-1, 1], got {value!r}")
            return value32
        if a.shape != () or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(
                "discrete Pong takes an int action in {0, 1, 2} (0 stay, 1 up, 2 down), "
                f"got {action!r}"
            )
        value = int(a)
        if value not in (0, 1, 2):
            raise ValueError(
                f"discrete Pong action must be 0 (stay), 1 (up) or 2 (down), got {value}"
            )
        return float(value)

    def reset(self, seed: int) -> np.ndarray:
        """Reset with ``rng = seed`` (a uint32); consumes one draw for the round reset."""
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise ValueError(f"seed must be an int, got {seed!r}")
        if not 0 <= int(seed) < 2**32:
            raise ValueError(f"seed must fit in an unsigned 32-bit int, got {seed}")
        self._lib.pong_reset(self._env, int(seed))
        self._reset_done = True
        return self._obs()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._reset_done:
            raise RuntimeError("call reset(seed) (or set_state) before step")
        value = self._action(action)
        self._lib.pong_step(self._env, value)
        env = self._env
        # The C reward is a float32; float() of it is exact.
        return self._obs(), float(env.reward), bool(env.terminal), False, {}

    def get_state(self) -> RefState:
        env = self._env
        return {k: np.asarray(getattr(env, k), dtype=dt) for k, dt in STATE_DTYPES.items()}

    def set_state(self, state: Mapping[str, np.ndarray]) -> None:
        """Set the game state, then recompute the observation buffer from it.

        Recomputing is faithful: in every reachable state the observation buffer equals the
        observation of the state, except right after a non-terminal point (the step returned
        before computing it, leaving the previous sub-frame's observation). That stale buffer is
        never read again by the game: a point resets the round, and no point can occur on the
        next sub-frame (the ball restarts at x = 100 moving at 10 per sub-frame), so the next
        sub-frame always ends by computing a fresh observation.
        """
        missing = set(STATE_DTYPES) - set(state)
        if missing:
            raise ValueError(f"Pong state lacks {sorted(missing)}")
        env = self._env
        for k, dt in STATE_DTYPES.items():
            v = np.asarray(state[k])
            if v.shape != ():
                raise ValueError(f"Pong state field {k!r} must be a scalar, got shape {v.shape}")
            setattr(env, k, dt(v).item())
        env.reward = 0.0
        env.terminal = 0
        env.tape_count = 0
        env.tape_r = 0
        self._lib.pong_compute_obs(env)
        self._reset_done = True

    def observation(self) -> np.ndarray:
        """The current observation buffer (may be stale right after a non-terminal point)."""
        return self._obs()

    def tape(self) -> dict[str, np.ndarray]:
        """Draws of the last step (or reset): ``count`` (0 or 1) and ``r``, rand_r's raw value."""
        return {"count": np.asarray(self._env.tape_count, np.int32),
                "r": np.asarray(self._env.tape_r, np.int32)}


def c_params(ffi: Any, params: Mapping[str, float | int] = PARAM_DEFAULTS) -> Any:
    """A C ``PongParams*`` holding ``params`` (already checked by ``check_params``)."""
    return ffi.new("PongParams*", dict(params))


def c_throughput(batch_sizes: list[int], steps: int, frameskip: int = 1) -> list[dict]:
    """Agent-steps per second of the C reference, for 1 and ``os.cpu_count()`` threads.

    Each run steps ``n`` environments ``steps`` times with random discrete actions, split into one
    contiguous chunk per thread (allocation and reset excluded from the timing). The game is
    the default one (rules 61f27b3) with its constants known at compile time, as before they
    became data: the fastest form of this C, so speed-ups are not flattered.
    """
    lib = _load().lib
    cpus = os.cpu_count() or 1
    thread_counts = sorted({1, cpus})
    rows = []
    for n in batch_sizes:
        for t in thread_counts:
            seconds = lib.pong_bench(int(n), int(steps), int(t), int(frameskip), 0)
            if seconds < 0:
                raise ValueError(f"invalid benchmark arguments: n={n}, steps={steps}")
            rows.append(
                {
                    "backend": "reference",
                    "mode": f"C, {t} thread(s)",
                    "batch_size": int(n),
                    "steps_per_second": int(n) * int(steps) / max(seconds, 1e-12),
                }
            )
    return rows
