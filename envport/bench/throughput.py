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

Run length: with ``steps`` fixed, every measurement runs that many steps. Without it, each
measurement is sized by time (:func:`time_rollout`): the rollout takes its length as a traced
argument (one compilation per batch size), a probe times a few steps, and the timed runs are sized
to about ``seconds`` in all, so a slow environment at batch 8,192 and a fast one at batch 1 both
take a few seconds.

Performance peers (``EnvSpec.benchmark.peers``, e.g. MJX and Brax for HalfCheetah) are timed the
same way by :mod:`envport.bench.peers`, in their own child process, at the same batch sizes;
the result then carries per-batch ratios of the JAX translation to each other backend.
"""
from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import envport
from envport.bench.timing import (
    DEFAULT_SECONDS,
    STALL_SECONDS,
    actions_from_bits,
    counter_bits,
    device_counts_for,
    env_keys,
    legal_actions_from_bits,
    peak_rss_mb,
    print_row,
    run_child,
    time_rollout,
)
from envport.core.api import Array, Environment
from envport.core.wrappers import AutoReset


def make_rollout(env: Environment, batch_size: int, devices: int = 1
                 ) -> Callable[[Any, Array, Array, Array], tuple[Any, Array, Array]]:
    """Jitted ``(state, obs, seed, steps) -> (state, obs, reward_sum)``: ``steps`` auto-reset
    steps (a traced int32, so one compilation serves every run length).

    ``seed`` is a uint32 scalar. With ``devices > 1`` the batch (a multiple of ``devices``) is
    split into one contiguous shard per device of ``jax.devices()``, each run independently.
    """
    wrapped = AutoReset(env)
    params = wrapped.default_params()
    space = wrapped.action_space(params)
    vstep = jax.vmap(lambda k, s, a: wrapped.step(k, s, a, params))
    # A game whose legal actions depend on the state declares ``action_mask(state)``: its
    # random actions are drawn among the legal ones, as a player (and the reference's bench)
    # would, rather than mostly illegal no-ops that cost less than a real step.
    mask_of = getattr(env, "action_mask", None)
    vmask = jax.vmap(mask_of) if mask_of is not None else None

    def shard_rollout(state: Any, obs: Array, seed: Array, steps: Array, first_env: Array
                      ) -> tuple[Any, Array, Array]:
        n = obs.shape[0]
        env_index = first_env.reshape(()) + jnp.arange(n, dtype=jnp.uint32)

        def body(t: Array, carry: tuple[Any, Array, Array]) -> tuple[Any, Array, Array]:
            state, _obs, reward_sum = carry
            bits = counter_bits(seed, t, 0, env_index)
            actions = (actions_from_bits(space, bits) if vmask is None
                       else legal_actions_from_bits(vmask(state), bits))
            # Dead code for envs that draw nothing from the key (Pong): XLA drops it.
            res = vstep(env_keys(seed, t, env_index), state, actions)
            # Observations and rewards ride in the carry so XLA cannot drop them as dead
            # code: a learner would consume both every step.
            return res.state, res.obs, reward_sum + res.reward

        # zeros_like(reward) rather than zeros((n,)): under shard_map it is per-shard data.
        carry = (state, obs, jnp.zeros_like(obs, shape=(n,), dtype=jnp.float32))
        return jax.lax.fori_loop(jnp.int32(0), steps.astype(jnp.int32), body, carry)

    if devices == 1:
        return jax.jit(lambda state, obs, seed, steps: shard_rollout(
            state, obs, seed, steps, jnp.zeros((), jnp.uint32)))
    if batch_size % devices:
        raise ValueError(f"batch size {batch_size} is not a multiple of {devices} devices")
    mesh = Mesh(np.array(jax.devices()[:devices]), ("batch",))
    batch, rep = PartitionSpec("batch"), PartitionSpec()
    sharded = jax.shard_map(shard_rollout, mesh=mesh, in_specs=(batch, batch, rep, rep, batch),
                            out_specs=(batch, batch, batch))
    first_env = jax.device_put(
        jnp.arange(devices, dtype=jnp.uint32) * jnp.uint32(batch_size // devices),
        NamedSharding(mesh, batch))
    return jax.jit(lambda state, obs, seed, steps: sharded(state, obs, seed, steps, first_env))


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


def jax_throughput(env: Environment, batch_sizes: Sequence[int], steps: int | None = None,
                   repeats: int = 3, seed: int = 0, device_counts: Sequence[int] = (1,),
                   seconds: float = DEFAULT_SECONDS,
                   on_row: Callable[[dict[str, Any]], None] | None = None
                   ) -> list[dict[str, Any]]:
    """Random-action SPS of ``env`` for each batch size: ``steps`` steps per timed run, or runs
    sized to ``seconds`` when ``steps`` is None (:func:`time_rollout`).

    One row per batch size and device count (like the reference's thread counts), for the
    counts that this process has devices for and that divide the batch.
    """
    rows = []
    for n in batch_sizes:
        for devices in device_counts_for(n, device_counts):
            rollout = make_rollout(env, n, devices)
            state, obs = _reset_batch(env, n, jax.random.key(seed))
            if devices > 1:
                mesh = Mesh(np.array(jax.devices()[:devices]), ("batch",))
                state, obs = jax.device_put((state, obs),
                                            NamedSharding(mesh, PartitionSpec("batch")))
            timing = time_rollout(rollout, (state, obs), steps, seconds, repeats, seed)
            row = {"backend": "jax",
                   "mode": f"jax {jax.default_backend()}, jitted loop, {devices} device(s)",
                   "batch_size": n, "devices": devices,
                   "steps_per_second": n * timing["steps"] / timing["seconds"], **timing}
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


def jax_throughput_per_core(name: str, sizes_and_steps: Sequence[tuple[int, int | None]],
                            repeats: int = 3, seconds: float = DEFAULT_SECONDS,
                            on_row: Callable[[dict[str, Any]], None] | None = None,
                            stall_seconds: float = STALL_SECONDS
                            ) -> tuple[list[dict[str, Any]], float]:
    """:func:`jax_throughput` of ``envport.make(name)`` in a child process with one XLA CPU
    device per core, on 1 and all devices. Returns the rows and the child's peak RSS in MB."""
    cores = os.cpu_count() or 1
    return run_child("envport.bench.throughput", {
        "env": name, "sizes_and_steps": [list(x) for x in sizes_and_steps],
        "repeats": repeats, "seconds": seconds, "device_counts": sorted({1, cores})}, on_row,
        stall_seconds)


def _child_main(request: str) -> None:
    """Entry point of :func:`jax_throughput_per_core`'s child: a ``ROW`` line per measured row,
    then every row as one JSON line."""
    args = json.loads(request)
    env = envport.make(args["env"])
    rows = []
    for n, steps in args["sizes_and_steps"]:
        rows += jax_throughput(env, [n], steps, repeats=args["repeats"],
                               device_counts=args["device_counts"],
                               seconds=args.get("seconds", DEFAULT_SECONDS), on_row=print_row)
    print(json.dumps({"rows": rows, "peak_rss_mb": peak_rss_mb()}))


if __name__ == "__main__":
    _child_main(sys.argv[1])
