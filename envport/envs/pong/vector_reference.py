"""N C Pong environments stepped as one batch with ``pong_step_many`` (the reference backend of
PPO training, ``envport.train``).

The environments live in one contiguous C array (``Pong[n]``); a structured NumPy view over that
memory reads every environment's observation, reward and terminal flag without copying them one
by one. Pong resets itself inside the step that ends an episode (as PufferLib does), so the batch
needs no autoreset logic and matches the JAX translation under ``AutoReset`` (which passes it
through). Pong never truncates.

Seeding (PufferLib's convention): environment ``i`` starts with ``rand_r`` state
``seed * num_envs + i`` (mod 2**32), :func:`reset_seeds`; the JAX training backend starts its
environments from the same seeds, so the two backends' runs of a seed play the same games.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.spaces import Box, Discrete, Space
from envport.envs.pong.params import (
    DEFAULT_RULES,
    MODE_DEFAULTS,
    PARAM_DEFAULTS,
    RULES,
    observation_bounds,
)
from envport.envs.pong.reference import PongReference, _load, c_params

# The C struct's fields as NumPy sees them (offsets are read from cffi, never assumed).
_FIELDS: tuple[tuple[str, Any], ...] = (
    ("paddle_yl", np.float32), ("paddle_yr", np.float32), ("ball_x", np.float32),
    ("ball_y", np.float32), ("ball_vx", np.float32), ("ball_vy", np.float32),
    ("score_l", np.uint32), ("score_r", np.uint32), ("tick", np.int32), ("rng", np.uint32),
    ("obs", (np.float32, (8,))), ("reward", np.float32), ("terminal", np.uint8),
    ("tape_count", np.int32), ("tape_r", np.int32), ("frameskip", np.int32),
    ("continuous", np.int32), ("rules", np.int32), ("params", "PARAMS"),
)


def _params_dtype(ffi: Any) -> np.dtype:
    """The C ``PongParams`` (floats, then the unsigned max_score), offsets from cffi."""
    names = [*(k for k in PARAM_DEFAULTS if k != "max_score"), "max_score"]
    return np.dtype({
        "names": names,
        "formats": [np.uint32 if k == "max_score" else np.float32 for k in names],
        "offsets": [ffi.offsetof("PongParams", k) for k in names],
        "itemsize": ffi.sizeof("PongParams"),
    })


def _struct_dtype(ffi: Any) -> np.dtype:
    return np.dtype({
        "names": [name for name, _ in _FIELDS],
        "formats": [_params_dtype(ffi) if fmt == "PARAMS" else fmt for _, fmt in _FIELDS],
        "offsets": [ffi.offsetof("Pong", name) for name, _ in _FIELDS],
        "itemsize": ffi.sizeof("Pong"),
    })


def reset_seeds(seed: Any, num_envs: int) -> Any:
    """The ``rand_r`` seed of each environment of batch ``seed``: ``seed * num_envs + i`` mod
    2**32. Written for NumPy and jax.numpy alike (uint32 arithmetic wraps), so the JAX training
    backend starts its environments exactly where this batch starts (``ppo.py``)."""
    xp = jnp if isinstance(seed, jax.Array) else np
    base = xp.asarray(seed).astype(xp.uint32) * xp.uint32(num_envs)
    return base + xp.arange(num_envs, dtype=xp.uint32)


class PongVectorReference:
    """``num_envs`` C Pong environments; ``step`` is one ``pong_step_many`` call."""

    def __init__(self, num_envs: int, seed: int = 0, frameskip: int = 1,
                 continuous: bool = False, rules: str = DEFAULT_RULES,
                 params: dict[str, Any] | None = None) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        one = PongReference(frameskip, continuous, rules, params)  # the same argument checks
        mod = _load()
        self._ffi, self._lib = mod.ffi, mod.lib
        self.num_envs = num_envs
        self.seed = int(seed)
        self.frameskip, self.continuous, self.rules = one.frameskip, one.continuous, one.rules
        self.params = one.params
        self.observation_space: Space = Box(*observation_bounds(self.params), (8,))
        self.action_space: Space = Box(-1.0, 1.0, (1,)) if continuous else Discrete(3)
        self._envs = self._ffi.new("Pong[]", num_envs)
        c_param = c_params(self._ffi, self.params)
        for i in range(num_envs):
            self._lib.pong_init(self._envs + i, self.frameskip, int(self.continuous),
                                RULES.index(self.rules), c_param)
        self._view = np.frombuffer(self._ffi.buffer(self._envs), dtype=_struct_dtype(self._ffi))
        self._actions = np.zeros(num_envs, np.float32)  # the float* handed to C
        self._actions_ptr = self._ffi.from_buffer("float[]", self._actions)
        self._reset_done = False

    def reset(self) -> np.ndarray:
        for i, s in enumerate(reset_seeds(self.seed, self.num_envs)):
            self._lib.pong_reset(self._envs + i, int(s))
        self._reset_done = True
        return self._view["obs"].copy()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One step of every env: ``(obs, reward, terminated, truncated)``."""
        if not self._reset_done:
            raise RuntimeError("call reset() before step()")
        # Rejected, never clipped: a wrong action is a bug in the caller.
        actions = self.action_space.validate(actions, batch_shape=(self.num_envs,))
        self._actions[:] = actions.reshape(self.num_envs)
        self._lib.pong_step_many(self._envs, self.num_envs, self._actions_ptr)
        view = self._view
        return (view["obs"].copy(), view["reward"].copy(), view["terminal"].astype(np.bool_),
                np.zeros(self.num_envs, np.bool_))

    def get_state(self) -> bytes:
        """The raw C array: every field, the observation buffer (stale after a point) included."""
        return bytes(self._ffi.buffer(self._envs))

    def set_state(self, state: bytes) -> None:
        size = self._ffi.sizeof(self._envs)
        if len(state) != size:
            raise ValueError(f"state has {len(state)} bytes, this batch needs {size}")
        # Checked before anything is copied: the raw array also carries the modes and constants.
        saved = np.frombuffer(state, dtype=self._view.dtype)
        mine = self._view
        for name in ("frameskip", "continuous", "rules", "params"):
            if saved[name].tobytes() != mine[name].tobytes():
                raise ValueError(f"state was saved by a batch with another {name} "
                                 "(frameskip/continuous/rules mode or game constants)")
        self._ffi.memmove(self._envs, state, size)
        self._reset_done = True


def make(num_envs: int, seed: int = 0, **env_kwargs: Any) -> PongVectorReference:
    """Discovered by ``envport.train.backends.vector_reference("pong", ...)``; ``env_kwargs``
    are those of ``envport.make("pong", ...)``: the modes (frameskip, continuous, rules) and
    the game constants (width ... max_score)."""
    unknown = set(env_kwargs) - set(MODE_DEFAULTS) - set(PARAM_DEFAULTS)
    if unknown:
        raise ValueError(f"the Pong reference takes {', '.join([*MODE_DEFAULTS, *PARAM_DEFAULTS])}"
                         f", got {sorted(unknown)}")
    modes = {k: v for k, v in env_kwargs.items() if k in MODE_DEFAULTS}
    params = {k: v for k, v in env_kwargs.items() if k in PARAM_DEFAULTS}
    return PongVectorReference(num_envs, seed, **modes, params=params)
