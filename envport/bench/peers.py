"""Throughput of other implementations of an environment ("performance peers"), timed like
envport's translation, at the same batch sizes, in the same run (``envport bench ENV``).

An environment names its peers in ``EnvSpec.benchmark.peers`` (name -> factory).
HalfCheetah's two are defined here, both optional (``pip install envport[peers]``):

- **MJX** (``mujoco-mjx``): MuJoCo's own JAX port, on the SAME XML as the reference (Gymnasium's
  ``half_cheetah.xml``): ``jit(vmap(5 x mjx.step))``, ctrl = action, as HalfCheetah-v5 steps.
- **Brax** (``brax``, ``generalized`` backend): Brax's ``halfcheetah`` environment. Its model is
  a different one (Brax's own XML, solver iterations 4, most geoms non-colliding), so it is a
  performance peer only, never a reference.

Each is timed as ``envport.bench.throughput`` times a translation: a batch under ``vmap``, the
rollout fused into one jitted loop with random actions drawn inside (the same counter-hash
actions, from the translation's action space), compilation excluded, runs sized by time
(``timing.time_rollout``), best of a few repeats; with several XLA devices (one per core,
:func:`peers_throughput_per_core`, a child process as for the translation) the batch is split
into one contiguous shard per device. Rows: ``{"backend": "mjx" | "brax", "mode", "batch_size",
"devices", "steps_per_second", "steps", "seconds", "compile_seconds"}``; a peer that is not
installed gives one ``{"backend", "error"}`` row instead.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import envport
from envport.bench.timing import (
    DEFAULT_SECONDS,
    PEER_BATCH_SIZES,
    STALL_SECONDS,
    actions_from_bits,
    counter_bits,
    device_counts_for,
    peak_rss_mb,
    print_row,
    run_child,
    time_rollout,
)
from envport.core.spaces import Space

DEFAULT_BATCH_SIZES = PEER_BATCH_SIZES


class PeerUnavailable(ImportError):
    """The peer's package is not installed (``pip install envport[peers]``)."""


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise PeerUnavailable(f"{module} is not installed (pip install 'envport[peers]'): "
                              f"{e}") from e


class Peer(NamedTuple):
    """A peer's ``init(batch, key) -> state`` (batched), per-environment ``step(state,
    action) -> state``, a description, and ``chunk``: vmap at most this many environments at
    once (larger batches run as sequential chunks in one jitted step), or None."""

    init: Callable
    step: Callable
    mode: str
    chunk: int | None = None


# XLA's CPU compile of MJX vmapped over 1,024 environments did not finish in 10 minutes on the
# 2-core machine ("Very slow compile" from XLA for jit(init), at 64 it takes ~1 minute), so MJX
# steps larger batches as sequential chunks of this many environments (the same work; the rows
# say so). Chunks are interleaved across the batch so that each stays split across devices.
MJX_CHUNK = 64


# ------------------------------------------------------------------ HalfCheetah's peers
def mjx_env(seed: int = 0) -> Peer:
    """(init(batch, key) -> data, step(data, action) -> data, mode) for MJX on Gymnasium's XML;
    batches above :data:`MJX_CHUNK` in chunks."""
    mjx = _require("mujoco.mjx")
    import mujoco

    from envport.envs.halfcheetah.model import mj_model

    m = mj_model()
    mx = mjx.put_model(m)
    frame_skip = 5

    def init(batch: int, key: jax.Array) -> Any:
        k1, k2 = jax.random.split(key)
        qpos = jnp.asarray(m.qpos0, jnp.float32) + jax.random.uniform(
            k1, (batch, m.nq), jnp.float32, -0.1, 0.1)
        qvel = 0.1 * jax.random.normal(k2, (batch, m.nv), jnp.float32)
        base = mjx.make_data(mx)
        data = jax.vmap(lambda q, v: base.replace(qpos=q, qvel=v))(qpos, qvel)
        return chunked_vmap(lambda d: mjx.forward(mx, d), batch, MJX_CHUNK)(data)

    def step(data: Any, action: jax.Array) -> Any:
        data = data.replace(ctrl=action)
        return jax.lax.fori_loop(0, frame_skip, lambda _, d: mjx.step(mx, d), data)

    return Peer(init, step, f"mjx {mujoco.__version__}/{_version('mujoco-mjx')}, "
                            "jit(vmap(5 mjx.step))", MJX_CHUNK)


def brax_env(seed: int = 0) -> tuple[Callable, Callable, str]:
    """(init, step, mode) for Brax's ``halfcheetah`` on the ``generalized`` backend."""
    envs = _require("brax.envs")
    env = envs.get_environment("halfcheetah", backend="generalized")

    def init(batch: int, key: jax.Array) -> Any:
        return jax.vmap(env.reset)(jax.random.split(key, batch))

    def step(state: Any, action: jax.Array) -> Any:
        return env.step(state, action)

    return init, step, f"brax {_version('brax')} generalized, jit(vmap(env.step))"


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:  # pragma: no cover
        return "?"


# ------------------------------------------------------------------------------- the timing
def chunked_vmap(step: Callable, batch_size: int, chunk: int | None) -> Callable:
    """``vmap(step)`` over a batch (every argument's leading axis), as ``batch_size // chunk``
    sequential vmaps of ``chunk`` environments when the batch is larger. Chunk k holds
    environments k, k + groups, ...: the batch axis stays the chunk's axis, so a batch split
    across devices keeps each chunk split across them too."""
    vstep = jax.vmap(step)
    if chunk is None or batch_size <= chunk:
        return vstep
    if batch_size % chunk:
        raise ValueError(f"batch {batch_size} is not a multiple of the peer's chunk {chunk}")
    groups = batch_size // chunk

    def to_chunks(x: jax.Array) -> jax.Array:
        return jnp.swapaxes(x.reshape((chunk, groups, *x.shape[1:])), 0, 1)

    def from_chunks(x: jax.Array) -> jax.Array:
        return jnp.swapaxes(x, 0, 1).reshape((batch_size, *x.shape[2:]))

    def run(*args: Any) -> Any:
        out = jax.lax.map(lambda a: vstep(*a), jax.tree.map(to_chunks, args))
        return jax.tree.map(from_chunks, out)

    return run


def make_peer_rollout(step: Callable, space: Space, batch_size: int, devices: int = 1,
                      chunk: int | None = None) -> Callable[[Any, jax.Array, jax.Array], Any]:
    """Jitted ``(state, seed, steps) -> state``: ``steps`` (traced) random-action steps of a
    batch, the actions envport's counter-hash actions of ``space`` (so every backend pays the
    same for them)."""
    vstep = chunked_vmap(step, batch_size, chunk)

    def rollout(state: Any, seed: jax.Array, steps: jax.Array) -> Any:
        n = jax.tree_util.tree_leaves(state)[0].shape[0]
        env_index = jnp.arange(n, dtype=jnp.uint32)

        def body(t: jax.Array, state: Any) -> Any:
            return vstep(state, actions_from_bits(space, counter_bits(seed, t, 0, env_index)))

        return jax.lax.fori_loop(jnp.int32(0), steps.astype(jnp.int32), body, state)

    if devices == 1:
        return jax.jit(rollout)
    # Partitioned by jit over a batch-sharded input (XLA's SPMD partitioner splits the vmapped
    # batch into one contiguous shard per device) rather than shard_map: MJX's internal
    # lax.cond/while carries do not type-check as device-varying under shard_map. The env
    # index is then global, as under shard_map with offsets.
    mesh = Mesh(np.array(jax.devices()[:devices]), ("batch",))
    batch = NamedSharding(mesh, PartitionSpec("batch"))
    rep = NamedSharding(mesh, PartitionSpec())
    return jax.jit(rollout, in_shardings=(batch, rep, rep), out_shardings=batch)


def peer_throughput(name: str, peer: str, batch_sizes: Sequence[int],
                    steps: int | None = None, repeats: int = 3, seed: int = 0,
                    device_counts: Sequence[int] = (1,), seconds: float = DEFAULT_SECONDS,
                    on_row: Callable[[dict[str, Any]], None] | None = None
                    ) -> list[dict[str, Any]]:
    """SPS of ``name``'s peer ``peer`` per batch size and device count (the counts this process
    has devices for and that divide the batch), like ``throughput.jax_throughput``."""
    spec = envport.spec(name)
    if peer not in spec.benchmark.peers:
        raise ValueError(f"{name} has no peer {peer!r}; its peers: "
                         f"{', '.join(spec.benchmark.peers) or 'none'}")
    translation = envport.make(name)
    space = translation.action_space(translation.default_params())
    init, step, mode, chunk = Peer(*spec.benchmark.peers[peer]())
    rows = []
    for n in batch_sizes:
        for devices in device_counts_for(n, device_counts):
            rollout = make_peer_rollout(step, space, n, devices, chunk)
            chunks = (f" [{n // chunk} sequential chunks of {chunk}]"
                      if chunk is not None and n > chunk else "")
            state = jax.jit(init, static_argnums=0)(n, jax.random.key(seed))
            if devices > 1:
                mesh = Mesh(np.array(jax.devices()[:devices]), ("batch",))
                state = jax.device_put(state, NamedSharding(mesh, PartitionSpec("batch")))
            timing = time_rollout(rollout, (state,), steps, seconds, repeats, seed)
            row = {"backend": peer, "mode": f"{mode}{chunks}, {devices} device(s)", "batch_size": n,
                   "devices": devices,
                   "steps_per_second": n * timing["steps"] / timing["seconds"], **timing}
            rows.append(row)
            if on_row is not None:
                on_row(row)
            del state
    return rows


def peers_throughput(name: str, batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
                     peers: Sequence[str] | None = None, steps: int | None = None,
                     repeats: int = 3, device_counts: Sequence[int] = (1,),
                     seconds: float = DEFAULT_SECONDS,
                     on_row: Callable[[dict[str, Any]], None] | None = None
                     ) -> list[dict[str, Any]]:
    """``name``'s peers (all of ``EnvSpec.benchmark.peers`` by default) in this process; a peer
    that is not installed gives one ``{"backend": peer, "error": why}`` row instead of failing."""
    rows: list[dict[str, Any]] = []
    for peer in envport.spec(name).benchmark.peers if peers is None else peers:
        try:
            rows += peer_throughput(name, peer, batch_sizes, steps, repeats,
                                    device_counts=device_counts, seconds=seconds,
                                    on_row=on_row)
        except ImportError as e:
            rows.append({"backend": peer, "error": str(e)})
    return rows


def peers_throughput_per_core(name: str, batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
                              peers: Sequence[str] | None = None, steps: int | None = None,
                              repeats: int = 3, seconds: float = DEFAULT_SECONDS,
                              on_row: Callable[[dict[str, Any]], None] | None = None,
                              stall_seconds: float | None = None
                              ) -> tuple[list[dict[str, Any]], float]:
    """:func:`peers_throughput` in a child process with one XLA CPU device per core, on 1 and
    all of them (as ``throughput.jax_throughput_per_core`` runs envport). Returns the rows and
    the child's peak RSS in MB."""
    cores = os.cpu_count() or 1
    return run_child("envport.bench.peers", {
        "env": name, "batch_sizes": list(batch_sizes),
        "peers": None if peers is None else list(peers), "steps": steps, "repeats": repeats,
        "seconds": seconds, "device_counts": sorted({1, cores})}, on_row,
        STALL_SECONDS if stall_seconds is None else stall_seconds)


def _child_main(request: str) -> None:
    args = json.loads(request)
    rows = peers_throughput(args["env"], args["batch_sizes"], args["peers"], args["steps"],
                            args["repeats"], args.get("device_counts", (1,)),
                            args.get("seconds", DEFAULT_SECONDS), on_row=print_row)
    print(json.dumps({"rows": rows, "peak_rss_mb": peak_rss_mb()}))


if __name__ == "__main__":
    _child_main(sys.argv[1])
