"""Random-action throughput (steps per second) of a JAX translation against its reference.

The JAX side is measured the way it is meant to be used: a batch of environments under ``vmap``
and the whole rollout fused into one jitted ``lax.scan`` with auto-reset, so no Python runs
between steps. Compilation is excluded (a warm-up call runs first) and the best of a few timed
repeats is kept, since noise on a shared machine only ever makes a run slower.

XLA runs a CPU program on one core, so to use the machine as the reference's threads do,
:func:`run_benchmark` measures the JAX side in a child process whose CPU is split into one XLA
device per core (``--xla_force_host_platform_device_count``), each stepping a contiguous shard of
the batch (``shard_map``), like the C benchmark's one chunk per thread; each batch size is
measured on 1 device and on all of them, as the reference is on 1 thread and on all cores. That
flag is process-wide and must be set before JAX starts, hence the child: importing envport never
sets it.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

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


def actions_from_bits(space: Space, bits: Array) -> Array:
    """Uniform random actions of ``space`` from uniform uint32 ``bits`` (one word per env).

    ``bits % n`` has a modulo bias of at most n / 2**32, irrelevant for a benchmark.
    """
    if isinstance(space, Discrete):
        return (bits % jnp.uint32(space.n)).astype(space.dtype)
    if isinstance(space, Box):
        # Same finite clamp as Box.sample: an unbounded Box has no uniform distribution.
        lo, hi = max(space.low, -1e6), min(space.high, 1e6)
        if space.shape:  # one word per component
            bits = mix32(bits[:, None] + jnp.arange(math.prod(space.shape), dtype=jnp.uint32))
            bits = bits.reshape(bits.shape[0], *space.shape)
        unit = (bits >> 8).astype(jnp.float32) * np.float32(2.0**-24)  # [0, 1), exact
        return (lo + (hi - lo) * unit).astype(space.dtype)
    raise TypeError(f"no random-action sampler for {type(space).__name__}")


def sample_actions(space: Space, key: Array, batch_size: int) -> Array:
    """A batch of uniform random actions from one PRNG call."""
    return actions_from_bits(space, jax.random.bits(key, (batch_size,), jnp.uint32))


def mix32(x: Array) -> Array:
    """A 32-bit integer hash (Wellons' ``lowbias32``): a bijection, every output bit depending
    on every input bit. Hashing a counter gives statistically uniform words at a few integer ops
    each, where a threefry ``jax.random`` call per step costs as much as a small env step."""
    x = x.astype(jnp.uint32)
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def counter_bits(seed: Array, step: Array, stream: int, env_index: Array) -> Array:
    """One uniform uint32 per env for (seed, step, stream): a hash of the env's global index,
    keyed by a per-step scalar (so the only per-env work is one :func:`mix32`)."""
    golden = jnp.uint32(0x9E3779B9)
    step_key = mix32(mix32(seed ^ jnp.uint32(stream) * golden) + step.astype(jnp.uint32))
    return mix32(env_index ^ step_key)


def env_keys(seed: Array, step: Array, env_index: Array) -> Array:
    """A threefry key per env for the env's own draws (auto-reset), from :func:`counter_bits`:
    as independent as ``jax.random.split(key, n)`` for this purpose, without n threefry calls."""
    data = jnp.stack([counter_bits(seed, step, 1, env_index),
                      counter_bits(seed, step, 2, env_index)], axis=-1)
    return jax.random.wrap_key_data(data, impl="threefry2x32")


def make_rollout(env: Environment, batch_size: int, steps: int, devices: int = 1
                 ) -> Callable[[Any, Array, Array], tuple[Any, Array, Array]]:
    """Jitted ``(state, obs, seed) -> (state, obs, reward_sum)``: ``steps`` auto-reset steps.

    ``seed`` is a uint32 scalar. With ``devices > 1`` the batch (a multiple of ``devices``) is
    split into one contiguous shard per device of ``jax.devices()``, each run independently.
    """
    wrapped = AutoReset(env)
    params = wrapped.default_params()
    space = wrapped.action_space(params)
    vstep = jax.vmap(lambda k, s, a: wrapped.step(k, s, a, params))

    def shard_rollout(state: Any, obs: Array, seed: Array, first_env: Array
                      ) -> tuple[Any, Array, Array]:
        n = obs.shape[0]
        env_index = first_env.reshape(()) + jnp.arange(n, dtype=jnp.uint32)

        def body(carry: tuple[Any, Array, Array], t: Array):
            state, _obs, reward_sum = carry
            actions = actions_from_bits(space, counter_bits(seed, t, 0, env_index))
            # Dead code for envs that draw nothing from the key (Pong): XLA drops it.
            res = vstep(env_keys(seed, t, env_index), state, actions)
            # Observations and rewards ride in the carry so XLA cannot drop them as dead
            # code: a learner would consume both every step.
            return (res.state, res.obs, reward_sum + res.reward), None

        # zeros_like(reward) rather than zeros((n,)): under shard_map it is per-shard data.
        carry = (state, obs, jnp.zeros_like(obs, shape=(n,), dtype=jnp.float32))
        (state, obs, reward_sum), _ = jax.lax.scan(
            body, carry, jnp.arange(steps, dtype=jnp.uint32))
        return state, obs, reward_sum

    if devices == 1:
        return jax.jit(lambda state, obs, seed: shard_rollout(
            state, obs, seed, jnp.zeros((), jnp.uint32)))
    if batch_size % devices:
        raise ValueError(f"batch size {batch_size} is not a multiple of {devices} devices")
    mesh = Mesh(np.array(jax.devices()[:devices]), ("batch",))
    batch, rep = PartitionSpec("batch"), PartitionSpec()
    sharded = jax.shard_map(shard_rollout, mesh=mesh, in_specs=(batch, batch, rep, batch),
                            out_specs=(batch, batch, batch))
    first_env = jax.device_put(
        jnp.arange(devices, dtype=jnp.uint32) * jnp.uint32(batch_size // devices),
        NamedSharding(mesh, batch))
    return jax.jit(lambda state, obs, seed: sharded(state, obs, seed, first_env))


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
                   repeats: int = 3, seed: int = 0,
                   device_counts: Sequence[int] = (1,)) -> list[dict[str, Any]]:
    """Random-action SPS of ``env`` for each batch size, ``steps`` scan steps per timed call.

    One row per batch size and device count (like the reference's thread counts), for the
    counts that this process has devices for and that divide the batch.
    """
    available = len(jax.devices())
    rows = []
    for n in batch_sizes:
        for devices in sorted({d for d in device_counts if d <= available and n % d == 0}):
            rollout = make_rollout(env, n, steps, devices)
            state, obs = _reset_batch(env, n, jax.random.key(seed))
            if devices > 1:
                mesh = Mesh(np.array(jax.devices()[:devices]), ("batch",))
                state, obs = jax.device_put((state, obs),
                                            NamedSharding(mesh, PartitionSpec("batch")))
            jax.block_until_ready(rollout(state, obs, jnp.uint32(seed)))  # compile, untimed
            best = math.inf
            for r in range(repeats):
                run_seed = jnp.uint32(seed + r + 1)
                t0 = time.perf_counter()
                jax.block_until_ready(rollout(state, obs, run_seed))
                best = min(best, time.perf_counter() - t0)
            rows.append({"backend": "jax",
                         "mode": f"jax {jax.default_backend()}, lax.scan, {devices} device(s)",
                         "batch_size": n, "devices": devices,
                         "steps_per_second": n * steps / best, "steps": steps})
    return rows


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


def jax_throughput_per_core(name: str, sizes_and_steps: Sequence[tuple[int, int]],
                            repeats: int = 3) -> tuple[list[dict[str, Any]], float]:
    """:func:`jax_throughput` of ``envport.make(name)`` in a child process with one XLA CPU
    device per core, on 1 and all devices. Returns the rows and the child's peak RSS in MB."""
    cores = os.cpu_count() or 1
    flags = os.environ.get("XLA_FLAGS", "")
    child_env = {**os.environ,
                 "XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count={cores}".strip()}
    request = json.dumps({"env": name, "sizes_and_steps": list(sizes_and_steps),
                          "repeats": repeats, "device_counts": sorted({1, cores})})
    done = subprocess.run([sys.executable, "-m", "envport.bench.throughput", request],
                          env=child_env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"JAX benchmark child process failed:\n{done.stderr[-4000:]}")
    reply = json.loads(done.stdout.strip().splitlines()[-1])
    return reply["rows"], reply["peak_rss_mb"]


def run_benchmark(name: str, batch_sizes: Sequence[int] | None = None,
                  steps: int | None = None, per_core: bool = True) -> dict[str, Any]:
    """JAX translation of ``name`` vs its reference's throughput hook, plus memory figures.

    ``steps`` fixes the scan length (JAX) and env-steps per batch size (reference); by default
    the JAX side uses :func:`default_steps` per batch size and the reference ``REFERENCE_STEPS``.
    With ``per_core`` (default) the JAX side runs in a child process with one device per core
    (:func:`jax_throughput_per_core`), else in this process on its current devices.
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
    jax_steps = {n: default_steps(n) if steps is None else steps for n in jax_sizes}
    if per_core:
        rows, jax_rss = jax_throughput_per_core(name, list(jax_steps.items()))
        results += rows
    else:
        for n, s in jax_steps.items():
            results += jax_throughput(env, [n], s)
        jax_rss = _peak_rss_mb()
    largest = max(jax_sizes)

    def best(backend: str) -> dict[str, Any]:
        rows = [r for r in results if r["backend"] == backend]
        return max(rows, key=lambda r: r["steps_per_second"], default={})

    best_jax, best_ref = best("jax"), best("reference")
    return {
        "env": name,
        "results": results,
        "speedup": (best_jax.get("steps_per_second", math.nan)
                    / best_ref.get("steps_per_second", math.nan)),
        # Where each side peaks: the rows behind the speedup.
        "best": {"jax": best_jax, "reference": best_ref},
        "machine": {"cores": os.cpu_count(), "jax_backend": jax.default_backend(),
                    "jax_version": jax.__version__},
        "steps": {"reference": ref_steps, "jax": {str(n): s for n, s in jax_steps.items()}},
        "memory": {
            "batch_size": largest,
            "state_bytes_per_env": state_bytes_per_env(env, largest),
            # Peak RSS of this process after the reference ran, and of the process that ran
            # the JAX side (the child with per_core, else this one, reference included).
            "peak_rss_mb_before_jax": rss_before,
            "peak_rss_mb": jax_rss,
        },
    }


def _child_main(request: str) -> None:
    """Entry point of :func:`jax_throughput_per_core`'s child: rows as one JSON line."""
    args = json.loads(request)
    env = envport.make(args["env"])
    rows = []
    for n, steps in args["sizes_and_steps"]:
        rows += jax_throughput(env, [n], steps, repeats=args["repeats"],
                               device_counts=args["device_counts"])
    print(json.dumps({"rows": rows, "peak_rss_mb": _peak_rss_mb()}))


if __name__ == "__main__":
    _child_main(sys.argv[1])
