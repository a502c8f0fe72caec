"""Random-action throughput (steps per second) of a JAX translation against its reference.

The JAX side is measured the way it is meant to be used: a batch of environments under ``vmap``
and the whole rollout fused into one jitted ``lax.scan`` with auto-reset, so no Python runs
between steps. Compilation is excluded (a warm-up call runs first) and the best of a few timed
repeats is kept, since noise on a shared machine only ever makes a run slower.
"""

from __future__ import annotations

import math
import os
import resource
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import envport
from envport.core.api import Array, Environment
from envport.core.spaces import Box, Discrete, Space
from envport.core.wrappers import AutoReset

# Default JAX batch sizes: powers of 4 from 1 to 65536.
DEFAULT_BATCH_SIZES: tuple[int, ...] = tuple(4**i for i in range(9))
# Reference hooks read ``steps`` differently (Gymnasium CartPole: ~total env-steps per batch size;
# Pong's C bench: steps per environment). 50k steps with batches up to 4096 keeps both within
# ~20 s on 2 cores while CartPole's vector env still gets >=12 timed iterations at 4096, where
# its numpy throughput has already plateaued.
REFERENCE_STEPS = 50_000
REFERENCE_MAX_BATCH = 4096


def default_steps(batch_size: int) -> int:
    """Scan length for a batch: a bounded total of env-steps, so big batches take seconds."""
    return max(16, min(1000, 2**22 // batch_size))


def sample_actions(space: Space, key: Array, batch_size: int) -> Array:
    """A batch of uniform random actions from one PRNG call (cheap next to the env step).

    ``bits % n`` has a modulo bias of at most n / 2**32, irrelevant for a benchmark.
    """
    if isinstance(space, Discrete):
        bits = jax.random.bits(key, (batch_size,), jnp.uint32)
        return (bits % jnp.uint32(space.n)).astype(space.dtype)
    if isinstance(space, Box):
        # Same finite clamp as Box.sample: an unbounded Box has no uniform distribution.
        lo, hi = max(space.low, -1e6), min(space.high, 1e6)
        return jax.random.uniform(key, (batch_size, *space.shape), space.dtype, lo, hi)
    raise TypeError(f"no random-action sampler for {type(space).__name__}")


def make_rollout(env: Environment, batch_size: int,
                 steps: int) -> Callable[[Any, Array, Array], tuple[Any, Array, Array]]:
    """Jitted ``(state, obs, key) -> (state, obs, reward_sum)``: ``steps`` auto-reset steps."""
    wrapped = AutoReset(env)
    params = wrapped.default_params()
    space = wrapped.action_space(params)
    vstep = jax.vmap(lambda k, s, a: wrapped.step(k, s, a, params))

    def body(carry: tuple[Any, Array, Array, Array], _: None):
        state, _obs, reward_sum, key = carry
        key, act_key, step_key = jax.random.split(key, 3)
        actions = sample_actions(space, act_key, batch_size)
        res = vstep(jax.random.split(step_key, batch_size), state, actions)
        # Observations and rewards ride in the carry so XLA cannot drop them as dead code: a
        # learner would consume both every step.
        return (res.state, res.obs, reward_sum + res.reward, key), None

    @jax.jit
    def rollout(state: Any, obs: Array, key: Array) -> tuple[Any, Array, Array]:
        carry = (state, obs, jnp.zeros((batch_size,)), key)
        (state, obs, reward_sum, _), _ = jax.lax.scan(body, carry, None, length=steps)
        return state, obs, reward_sum

    return rollout


def _reset_batch(env: Environment, batch_size: int, key: Array) -> tuple[Any, Array]:
    params = env.default_params()
    return jax.jit(jax.vmap(lambda k: env.reset(k, params)))(jax.random.split(key, batch_size))


def state_bytes_per_env(env: Environment, batch_size: int = 1) -> float:
    """Bytes of batched state per environment, from the state pytree's leaves (no allocation)."""
    params = env.default_params()
    shapes = jax.eval_shape(
        jax.vmap(lambda k: env.reset(k, params)[0]),
        jax.random.split(jax.random.key(0), batch_size),
    )
    leaves = jax.tree_util.tree_leaves(shapes)
    return sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize for x in leaves) / batch_size


def jax_throughput(env: Environment, batch_sizes: Sequence[int], steps: int,
                   repeats: int = 3, seed: int = 0) -> list[dict[str, Any]]:
    """Random-action SPS of ``env`` for each batch size, ``steps`` scan steps per timed call."""
    mode = f"jax {jax.default_backend()}, lax.scan"
    rows = []
    for n in batch_sizes:
        rollout = make_rollout(env, n, steps)
        key = jax.random.key(seed)
        state, obs = _reset_batch(env, n, key)
        jax.block_until_ready(rollout(state, obs, key))  # compile + first run, not timed
        best = math.inf
        for r in range(repeats):
            run_key = jax.random.fold_in(key, r + 1)
            t0 = time.perf_counter()
            jax.block_until_ready(rollout(state, obs, run_key))
            best = min(best, time.perf_counter() - t0)
        rows.append({"backend": "jax", "mode": mode, "batch_size": n,
                     "steps_per_second": n * steps / best, "steps": steps})
    return rows


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def run_benchmark(name: str, batch_sizes: Sequence[int] | None = None,
                  steps: int | None = None) -> dict[str, Any]:
    """JAX translation of ``name`` vs its reference's throughput hook, plus memory figures.

    ``steps`` fixes the scan length (JAX) and env-steps per batch size (reference); by default
    the JAX side uses :func:`default_steps` per batch size and the reference ``REFERENCE_STEPS``.
    """
    env = envport.make(name)
    jax_sizes = list(DEFAULT_BATCH_SIZES if batch_sizes is None else batch_sizes)
    ref_sizes = [n for n in jax_sizes if n <= REFERENCE_MAX_BATCH] or [min(jax_sizes)]
    ref_steps = REFERENCE_STEPS if steps is None else steps

    results: list[dict[str, Any]] = []
    hook = envport.spec(name).reference_throughput
    if hook is not None:
        results += hook(ref_sizes, ref_steps)

    rss_before = _peak_rss_mb()
    jax_steps: dict[str, int] = {}
    for n in jax_sizes:
        s = default_steps(n) if steps is None else steps
        jax_steps[str(n)] = s
        results += jax_throughput(env, [n], s)
    largest = max(jax_sizes)

    def best(backend: str) -> float:
        return max((r["steps_per_second"] for r in results if r["backend"] == backend),
                   default=math.nan)

    return {
        "env": name,
        "results": results,
        "speedup": best("jax") / best("reference"),
        "machine": {"cores": os.cpu_count(), "jax_backend": jax.default_backend(),
                    "jax_version": jax.__version__},
        "steps": {"reference": ref_steps, "jax": jax_steps},
        "memory": {
            "batch_size": largest,
            "state_bytes_per_env": state_bytes_per_env(env, largest),
            # Process-wide peak: after the reference ran, before/after the JAX side.
            "peak_rss_mb_before_jax": rss_before,
            "peak_rss_mb": _peak_rss_mb(),
        },
    }
