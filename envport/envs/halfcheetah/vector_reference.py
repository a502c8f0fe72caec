"""N real Gymnasium ``HalfCheetah-v5`` environments stepped as one batch on the host.

The reference backend of PPO training (``envport.train``), and the reference side of
``envport bench halfcheetah``. Each environment is built exactly as the verified reference
(``reference.make_gymnasium_env``: ``gym.make("HalfCheetah-v5")`` with its ``TimeLimit(1000)``),
so this is Gymnasium's own MuJoCo HalfCheetah, float64.

The batch behaves like the JAX translation under :class:`envport.core.wrappers.AutoReset`
(Gymnasium's SAME_STEP autoreset): the step that ends an episode (HalfCheetah only truncates, at
1000 steps) returns that step's reward and flags with the observation of the NEXT episode's
reset; the observation the episode ended on is kept in ``final_obs``. Observations are float32
(the translation's observation space), rewards float32.

Seeding (PufferLib's convention, as the other references): environment ``i`` is reset once with
``seed * num_envs + i``; later resets continue that environment's own ``np_random`` stream, as a
Gymnasium env does when ``reset()`` is called without a seed.

:meth:`get_state` / :meth:`set_state` resume a batch exactly: each environment's MuJoCo
integration state (``mj_getState(mjSTATE_INTEGRATION)``: time, qpos, qvel, ctrl, the solver's
warmstart ``qacc_warmstart``...), TimeLimit's counter and the reset RNG's state.
"""

from __future__ import annotations

import math
import time
from typing import Any, cast

import mujoco
import numpy as np

from envport.core.spaces import Box
from envport.envs.halfcheetah.reference import make_gymnasium_env
from envport.references.gymnasium_batch import GymnasiumBatch

OBS_DIM, ACTION_DIM = 17, 6
_STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION


class HalfCheetahVectorReference(GymnasiumBatch):
    """``num_envs`` Gymnasium ``HalfCheetah-v5`` (``gym.make``, with its TimeLimit(1000))."""

    def __init__(self, num_envs: int, seed: int = 0) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        super().__init__([make_gymnasium_env() for _ in range(num_envs)], seed,
                         Box(-math.inf, math.inf, (OBS_DIM,)), Box(-1.0, 1.0, (ACTION_DIM,)))

    def env_action(self, action: np.ndarray) -> np.ndarray:
        # The float32 action handed to MuJoCo as float64, as the verified single reference does.
        return np.asarray(action, np.float64)

    def save_core(self, core: Any) -> dict[str, Any]:
        physics = np.empty(mujoco.mj_stateSize(core.model, _STATE_SPEC), np.float64)
        mujoco.mj_getState(core.model, core.data, physics, _STATE_SPEC)
        return {"physics": physics}

    def load_core(self, core: Any, saved: dict[str, Any]) -> None:
        mujoco.mj_setState(core.model, core.data, np.asarray(saved["physics"], np.float64),
                           _STATE_SPEC)
        # Derived quantities (positions of bodies...) as after a step; the integration state
        # itself is left as set.
        mujoco.mj_forward(core.model, core.data)


def make(num_envs: int, seed: int = 0, **env_kwargs: Any) -> HalfCheetahVectorReference:
    """Discovered by ``envport.train.backends.vector_reference("halfcheetah", ...)``."""
    if env_kwargs:
        raise ValueError("the HalfCheetah training reference takes no environment options "
                         f"(HalfCheetah-v5's defaults), got {sorted(env_kwargs)}")
    return HalfCheetahVectorReference(num_envs, seed)


# ------------------------------------------------------------------------------- benchmarks
class _Chunk:
    """``n`` environments of one worker process of the benchmark's async vector env, behind the
    ``gymnasium.Env`` interface: an action of shape (n, 6) steps all of them (same-step
    autoreset) and the observation is (n, 19): the 17 observations, the reward and the
    done flag of each environment, so a step moves as much data as a real learner needs."""

    def __init__(self, n: int, seed: int, build: bool = True) -> None:
        import gymnasium as gym

        # build=False: spaces only, for AsyncVectorEnv's look at its first env in the parent.
        self.vec = HalfCheetahVectorReference(n, seed) if build else None
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (n, OBS_DIM + 2), np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (n, ACTION_DIM), np.float32)
        self.metadata: dict[str, Any] = {}
        self.render_mode = None
        self.spec = None
        self.np_random = np.random.default_rng(seed)

    def _pack(self, obs: np.ndarray, reward: np.ndarray, done: np.ndarray) -> np.ndarray:
        return np.concatenate([obs, reward[:, None], done[:, None]], axis=1, dtype=np.float64)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        assert self.vec is not None
        n = self.vec.num_envs
        return self._pack(self.vec.reset(), np.zeros(n), np.zeros(n)), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        assert self.vec is not None
        obs, reward, terminated, truncated = self.vec.step(np.asarray(action, np.float32))
        return self._pack(obs, reward, terminated | truncated), float(reward.sum()), False, \
            False, {}

    def close(self) -> None:
        if self.vec is not None:
            self.vec.close()

    @property
    def unwrapped(self) -> _Chunk:
        return self


def _timed_steps(step: Any, batch_size: int, max_steps: int, seconds: float,
                 rng: np.random.Generator) -> tuple[int, float]:
    """Step ``step(actions)`` until ``max_steps`` env-steps or ``seconds`` have passed;
    ``(env-steps, seconds)``. Random actions are drawn beforehand, in blocks, untimed."""
    block = rng.uniform(-1, 1, (64, batch_size, ACTION_DIM)).astype(np.float32)
    done_steps, elapsed = 0, 0.0
    while done_steps < max_steps and elapsed < seconds:
        t0 = time.perf_counter()
        for a in block:
            step(a)
            done_steps += batch_size
            if done_steps >= max_steps or time.perf_counter() - t0 + elapsed >= seconds:
                break
        elapsed += time.perf_counter() - t0
    return done_steps, elapsed


def gymnasium_throughput(batch_sizes: list[int], steps: int, seconds: float = 2.0,
                         max_batch: int = 1024, workers: int | None = None
                         ) -> list[dict[str, Any]]:
    """Random-action SPS of the Gymnasium reference at each batch size, two ways users run it:

    - ``"loop"``: one process stepping the batch's environments one after another
      (:class:`HalfCheetahVectorReference`, the training reference);
    - ``"async"``: ``gymnasium.vector.AsyncVectorEnv`` with one worker process per core, each
      worker stepping ``batch / workers`` environments (batches that are a multiple of the
      worker count; Gymnasium's own one-process-per-env layout would start 8,192 processes).

    Each row runs ``steps`` env-steps or ``seconds``, whichever ends first (the environments
    are built and reset untimed). Batches above ``max_batch`` are not measured: building a
    Gymnasium HalfCheetah takes ~9 ms and ~1.5 MB, and a Python loop's steps/s stops changing
    after a few environments.
    """
    import os
    import warnings

    import gymnasium as gym

    cores = os.cpu_count() or 1
    workers = workers or cores
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    for n in sorted({b for b in batch_sizes if b <= max_batch}):
        vec = HalfCheetahVectorReference(n, seed=0)
        vec.reset()
        vec.step(np.zeros((n, ACTION_DIM), np.float32))  # warm
        done, elapsed = _timed_steps(vec.step, n, steps, seconds, rng)
        vec.close()
        rows.append({"backend": "reference", "mode": "gymnasium loop, 1 process",
                     "batch_size": n, "devices": 1, "steps_per_second": done / elapsed,
                     "steps": done, "seconds": elapsed})
        if n % workers or workers < 2:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # fork (the default on Linux), as users get it: spawn would re-run the caller's
            # main script in every worker. The workers only run MuJoCo, never the parent's JAX.
            venv = gym.vector.AsyncVectorEnv(
                [cast(Any, _ChunkFactory(n // workers, w)) for w in range(workers)])
        try:
            venv.reset(seed=0)
            shape = (workers, n // workers, ACTION_DIM)
            venv.step(np.zeros(shape, np.float32))  # workers warm
            done, elapsed = _timed_steps(_reshaped(venv.step, shape), n, steps, seconds, rng)
        finally:
            venv.close()
        rows.append({"backend": "reference",
                     "mode": f"gymnasium async vector env, {workers} workers",
                     "batch_size": n, "devices": workers, "steps_per_second": done / elapsed,
                     "steps": done, "seconds": elapsed})
    return rows


def _reshaped(step: Any, shape: tuple[int, ...]) -> Any:
    return lambda a: step(a.reshape(shape))


class _ChunkFactory:
    """AsyncVectorEnv's ``env_fn`` (picklable, for any start method); called in the parent it
    builds only the spaces: AsyncVectorEnv builds its first env there to read them."""

    def __init__(self, n: int, seed: int) -> None:
        import os

        self.n, self.seed, self.parent = n, seed, os.getpid()

    def __call__(self) -> _Chunk:
        import os

        return _Chunk(self.n, self.seed, build=os.getpid() != self.parent)
