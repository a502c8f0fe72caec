"""Throughput of the established JAX physics engines on HalfCheetah, measured like envport's.

Two peers, both optional (``pip install envport[peers]``):

- **MJX** (``mujoco-mjx``): MuJoCo's own JAX port, on the SAME XML as the reference (Gymnasium's
  ``half_cheetah.xml``): ``jit(vmap(5 x mjx.step))``, ctrl = action, as HalfCheetah-v5 steps.
- **Brax** (``brax``, ``generalized`` backend): Brax's ``halfcheetah`` environment. Its model is
  a different one (Brax's own XML, solver iterations 4, most geoms non-colliding), so it is a
  performance peer only, never a reference.

Each is timed as ``envport.bench.throughput`` times a translation: a batch under ``vmap``, the
rollout fused into one jitted ``lax.scan`` with random actions drawn inside (the same counter-hash
actions), compilation excluded, best of a few repeats; with several XLA devices (one per core,
:func:`peers_throughput_per_core`) the batch is split into one contiguous shard per device.
Rows: ``{"backend": "mjx" | "brax", "mode", "batch_size", "steps_per_second", ...}``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from envport.bench.throughput import _peak_rss_mb, actions_from_bits, counter_bits
from envport.core.spaces import Box

PEERS = ("mjx", "brax")
DEFAULT_BATCH_SIZES: tuple[int, ...] = (1, 8, 64, 512, 1024, 4096, 8192)
ACTION_SPACE = Box(-1.0, 1.0, (6,))


class PeerUnavailable(ImportError):
    """The peer's package is not installed (``pip install envport[peers]``)."""


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise PeerUnavailable(f"{module} is not installed: pip install 'envport[peers]' "
                              f"({e})") from e


# ------------------------------------------------------------------------------------ peers
def mjx_env(seed: int = 0) -> tuple[Callable, Callable, str]:
    """(init(batch, key) -> data, step(data, action) -> data, mode) for MJX on Gymnasium's XML."""
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
        return jax.vmap(lambda d: mjx.forward(mx, d))(data)

    def step(data: Any, action: jax.Array) -> Any:
        data = data.replace(ctrl=action)
        return jax.lax.fori_loop(0, frame_skip, lambda _, d: mjx.step(mx, d), data)

    return init, step, f"mjx {mujoco.__version__}/{_version('mujoco-mjx')}, jit(vmap(5 mjx.step))"


def brax_env(seed: int = 0) -> tuple[Callable, Callable, str]:
    """(init, step, mode) for Brax's ``halfcheetah`` on the ``generalized`` backend."""
    envs = _require("brax.envs")
    env = envs.get_environment("halfcheetah", backend="generalized")

    def init(batch: int, key: jax.Array) -> Any:
        return jax.vmap(env.reset)(jax.random.split(key, batch))

    def step(state: Any, action: jax.Array) -> Any:
        return env.step(state, action)

    return init, step, f"brax {_version('brax')} generalized, jit(vmap(env.step))"


PEER_ENVS: dict[str, Callable[..., tuple[Callable, Callable, str]]] = {
    "mjx": mjx_env, "brax": brax_env}


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:  # pragma: no cover
        return "?"


# ------------------------------------------------------------------------------- the timing
def make_peer_rollout(step: Callable, batch_size: int, steps: int, devices: int = 1
                      ) -> Callable[[Any, jax.Array], Any]:
    """Jitted ``(state, seed) -> state``: ``steps`` random-action steps of a batch (the actions
    are envport's counter-hash actions, so every backend pays the same for them)."""
    vstep = jax.vmap(step)

    def shard_rollout(state: Any, seed: jax.Array, first_env: jax.Array) -> Any:
        n = jax.tree_util.tree_leaves(state)[0].shape[0]
        env_index = first_env.reshape(()) + jnp.arange(n, dtype=jnp.uint32)

        def body(state: Any, t: jax.Array) -> tuple[Any, None]:
            actions = actions_from_bits(ACTION_SPACE, counter_bits(seed, t, 0, env_index))
            return vstep(state, actions), None

        return jax.lax.scan(body, state, jnp.arange(steps, dtype=jnp.uint32))[0]

    if devices == 1:
        return jax.jit(lambda state, seed: shard_rollout(state, seed,
                                                         jnp.zeros((), jnp.uint32)))
    # Partitioned by jit over a batch-sharded input (XLA's SPMD partitioner splits the vmapped
    # batch into one contiguous shard per device) rather than shard_map: MJX's internal
    # lax.cond/while carries do not type-check as device-varying under shard_map.
    mesh = Mesh(np.array(jax.devices()[:devices]), ("batch",))
    batch = NamedSharding(mesh, PartitionSpec("batch"))
    rep = NamedSharding(mesh, PartitionSpec())
    return jax.jit(lambda state, seed: shard_rollout(state, seed, jnp.zeros((), jnp.uint32)),
                   in_shardings=(batch, rep), out_shardings=batch)


def default_steps(batch_size: int) -> int:
    """Scan length: a bounded total of env-steps (the peers are slower than envport)."""
    return max(4, min(200, 2**18 // batch_size))


def peer_throughput(peer: str, batch_sizes: Sequence[int], steps: int | None = None,
                    repeats: int = 3, seed: int = 0, device_counts: Sequence[int] = (1,)
                    ) -> list[dict[str, Any]]:
    """SPS of ``peer`` ("mjx" or "brax") per batch size and device count (the counts this
    process has devices for and that divide the batch), like ``jax_throughput``."""
    init, step, mode = PEER_ENVS[peer]()
    available = len(jax.devices())
    rows = []
    for n in batch_sizes:
        n_steps = default_steps(n) if steps is None else steps
        for devices in sorted({d for d in device_counts if d <= available and n % d == 0}):
            rollout = make_peer_rollout(step, n, n_steps, devices)
            state = jax.jit(init, static_argnums=0)(n, jax.random.key(seed))
            if devices > 1:
                mesh = Mesh(np.array(jax.devices()[:devices]), ("batch",))
                state = jax.device_put(state, NamedSharding(mesh, PartitionSpec("batch")))
            t0 = time.perf_counter()
            jax.block_until_ready(rollout(state, jnp.uint32(seed)))  # compile + first run
            compile_s = time.perf_counter() - t0
            best = math.inf
            for r in range(repeats):
                t0 = time.perf_counter()
                jax.block_until_ready(rollout(state, jnp.uint32(seed + r + 1)))
                best = min(best, time.perf_counter() - t0)
            rows.append({"backend": peer, "mode": f"{mode}, {devices} device(s)",
                         "batch_size": n, "devices": devices,
                         "steps_per_second": n * n_steps / best, "steps": n_steps,
                         "compile_seconds": compile_s})
    return rows


def peers_throughput(batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
                     peers: Sequence[str] = PEERS, steps: int | None = None,
                     repeats: int = 3, device_counts: Sequence[int] = (1,)
                     ) -> list[dict[str, Any]]:
    """Both peers in this process; a peer that is not installed gives one row with an
    ``error`` (and NaN steps/s) instead of failing the whole benchmark."""
    rows: list[dict[str, Any]] = []
    for peer in peers:
        try:
            rows += peer_throughput(peer, batch_sizes, steps, repeats,
                                    device_counts=device_counts)
        except PeerUnavailable as e:
            rows.append({"backend": peer, "mode": "unavailable", "batch_size": 0,
                         "steps_per_second": math.nan, "error": str(e)})
    return rows


def peers_throughput_per_core(batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
                              peers: Sequence[str] = PEERS, steps: int | None = None,
                              repeats: int = 3) -> tuple[list[dict[str, Any]], float]:
    """:func:`peers_throughput` in a child process with one XLA CPU device per core (as
    ``envport.bench.throughput.jax_throughput_per_core`` runs envport). Returns the rows and the
    child's peak RSS in MB."""
    cores = os.cpu_count() or 1
    flags = os.environ.get("XLA_FLAGS", "")
    child_env = {**os.environ,
                 "XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count={cores}".strip()}
    request = json.dumps({"batch_sizes": list(batch_sizes), "peers": list(peers),
                          "steps": steps, "repeats": repeats,
                          "device_counts": sorted({1, cores})})
    done = subprocess.run([sys.executable, "-m", "envport.bench.peers", request],
                          env=child_env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"peer benchmark child process failed:\n{done.stderr[-4000:]}")
    reply = json.loads(done.stdout.strip().splitlines()[-1])
    return reply["rows"], reply["peak_rss_mb"]


def _child_main(request: str) -> None:
    args = json.loads(request)
    rows = peers_throughput(args["batch_sizes"], args["peers"], args["steps"], args["repeats"],
                            args.get("device_counts", (1,)))
    print(json.dumps({"rows": rows, "peak_rss_mb": _peak_rss_mb()}))


if __name__ == "__main__":
    _child_main(sys.argv[1])
