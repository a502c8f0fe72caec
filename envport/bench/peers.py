"""Throughput of other implementations of an environment ("performance peers"), timed like
envport's translation, at the same batch sizes, in the same run (``envport bench ENV``).

An environment names its peers in ``EnvSpec.benchmark.peers`` (name -> factory); all are optional
(the ``peers`` extra; see ``envport/bench/README.md`` for what to install). A factory returns one
of two kinds:

- :class:`Peer`, a **JAX peer**: ``init``/``step`` of one environment, timed as
  ``envport.bench.throughput`` times a translation: a batch under ``vmap``, the rollout fused into
  one jitted loop with random actions drawn inside (the same counter-hash actions, from the
  translation's action space), compilation excluded, runs sized by time
  (``timing.time_rollout``), best of a few repeats; with several XLA devices (one per core,
  :func:`peers_throughput_per_core`, a child process as for the translation) the batch is split
  into one contiguous shard per device.
- :class:`HostPeer`, a **host peer**: a simulator stepped from Python (EnvPool's C++ thread pool,
  NumPy actions in and observations out). It times itself (``timing.time_host``: the same run
  sizing, random actions pre-drawn in NumPy outside the timed loop) once per thread count, 1 and
  one per core, as the JAX peers run on 1 and all devices.

The peers:

- CartPole: **gymnax** (``gymnax==1.0.1``'s ``CartPole-v1``, a JAX peer, its own auto-reset
  ``step`` with a key per env per step from the translation's counter hash, its observations
  carried out of the loop as the translation's are: CartPole's reward is the constant 1, so a
  loop that only sums rewards is dead code to XLA) and **EnvPool** (``CartPole-v1``, a host peer).
- HalfCheetah: **MJX** (``mujoco-mjx``): MuJoCo's own JAX port, on the SAME XML as the reference
  (Gymnasium's ``half_cheetah.xml``): ``jit(vmap(5 x mjx.step))``, ctrl = action, as
  HalfCheetah-v5 steps. **Brax** (``brax``, ``generalized`` backend): Brax's ``halfcheetah``;
  its model is a different one (Brax's own XML, solver iterations 4, most geoms non-colliding),
  so it is a performance peer only. **EnvPool** (``HalfCheetah-v5``, a host peer, on the MuJoCo
  it bundles; see :func:`envpool_halfcheetah` for how it compares with Gymnasium's).

Rows: ``{"backend", "mode", "batch_size", "steps_per_second", "steps", "seconds", "repeats"}``
plus ``"devices"`` and ``"compile_seconds"`` (JAX peers) or ``"threads"`` (host peers); a peer
that is not installed gives one ``{"backend", "error"}`` row instead, naming what to install.
A peer is timed, never used as a reference.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
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
    env_keys,
    peak_rss_mb,
    print_row,
    run_child,
    time_host,
    time_rollout,
)
from envport.core.spaces import Space

DEFAULT_BATCH_SIZES = PEER_BATCH_SIZES


class PeerUnavailable(ImportError):
    """The peer's package is not installed; the message names the command that installs it."""


# What installs each optional peer package (gymnax pins gymnasium<1.4 in its metadata, so it cannot
# be declared in an extra beside Gymnasium 1.4.0 and is installed without its dependencies).
INSTALL = {"mujoco.mjx": "pip install 'envport[peers]'", "brax": "pip install 'envport[peers]'",
           "envpool": "pip install 'envport[peers]' (envpool==1.2.5)",
           "gymnax": "pip install --no-deps gymnax==1.0.1"}


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        how = INSTALL.get(module.split(".")[0], INSTALL.get(module, "pip install 'envport[peers]'"))
        raise PeerUnavailable(f"{module} is not installed ({how}): {e}") from e


class Peer(NamedTuple):
    """A JAX peer: ``init(batch, key) -> state`` (batched), per-environment ``step(state,
    action) -> state`` (``step(state, action, key)`` when ``keyed``: the harness then passes
    each environment a key per step, derived as the translation's auto-reset keys are), a
    description, and ``chunk``: vmap at most this many environments at once (larger batches run
    as sequential chunks in one jitted step), or None."""

    init: Callable
    step: Callable
    mode: str
    chunk: int | None = None
    keyed: bool = False


class HostPeer(NamedTuple):
    """A host peer, stepped from Python, that times itself: ``run(batch_sizes, steps, seconds,
    repeats, thread_counts)`` yields one row per batch size and thread count as it measures them
    (``{"mode", "batch_size", "threads", "steps_per_second", "steps", "seconds", "repeats"}``;
    :func:`peer_throughput` adds ``backend``). ``steps`` None: runs sized to ``seconds``."""

    run: Callable[[Sequence[int], int | None, float, int, Sequence[int]],
                  Iterator[dict[str, Any]]]


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


# -------------------------------------------------------------------- CartPole's peers
def _gymnax_cartpole_module() -> Any:
    """gymnax's ``classic_control.cartpole`` module.

    ``import gymnax`` imports every gymnax environment, and its Pong imports seaborn, a plotting
    library that ``pip install --no-deps`` leaves out. CartPole needs neither, so where seaborn
    (or pandas under it) is what is missing, the modules CartPole needs (``environment``,
    ``spaces``, ``cartpole``: gymnax's files as installed) are loaded with gymnax's package
    ``__init__`` files skipped, and ``sys.modules`` is restored afterwards, so a later
    ``import gymnax`` fails or succeeds as it would have.
    """
    import importlib
    import importlib.util
    import types

    name = "gymnax.environments.classic_control.cartpole"
    before = set(sys.modules)

    def restore() -> None:
        for k in set(sys.modules) - before:
            if k == "gymnax" or k.startswith("gymnax."):
                del sys.modules[k]

    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        restore()
        if (e.name or "").split(".")[0] not in ("seaborn", "pandas"):
            raise PeerUnavailable(f"gymnax is not installed ({INSTALL['gymnax']}): {e}") from e
    spec = importlib.util.find_spec("gymnax")
    assert spec is not None and spec.submodule_search_locations is not None
    root = os.path.join(next(iter(spec.submodule_search_locations)))
    for package, folder in (("gymnax", root),
                            ("gymnax.environments", os.path.join(root, "environments")),
                            ("gymnax.environments.classic_control",
                             os.path.join(root, "environments", "classic_control"))):
        stub = types.ModuleType(package)
        stub.__path__ = [folder]
        sys.modules[package] = stub
    try:
        return importlib.import_module(name)
    finally:
        restore()


def gymnax_cartpole(seed: int = 0) -> Peer:
    """gymnax's ``CartPole-v1``: its ``env.step`` (the step, its own auto-reset with a
    ``jax.random.split`` of the key, and gymnax 1.0's six return values), vmapped, with a key
    per env per step from the translation's counter hash (``timing.env_keys``) and the
    translation's counter-hash actions. The carry holds gymnax's state, its observation and the
    summed reward, as the translation's rollout carries its state, observation and reward sum:
    CartPole's reward is the constant 1, so without the observation the loop would be dead code.
    gymnax's CartPole is another JAX port of the same Gymnasium code (float32, the same
    constants); it is timed, not verified."""
    cartpole = _gymnax_cartpole_module()
    env = cartpole.CartPole()
    params = env.default_params

    def init(batch: int, key: jax.Array) -> Any:
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, batch), params)
        return state, obs, jnp.zeros((batch,), jnp.float32)

    def step(carry: Any, action: jax.Array, key: jax.Array) -> Any:
        state, _obs, reward_sum = carry
        # (obs, state, reward, terminated, truncated, info): gymnax 1.0 returns six values
        out = env.step(key, state, action, params)
        return out[1], out[0], reward_sum + out[2]

    return Peer(init, step, f"gymnax {_version('gymnax')}, jit(vmap(env.step)), carrying obs",
                keyed=True)


# EnvPool lists these asset folders when imported (Atari ROMs, ViZDoom maps) and fails with
# FileNotFoundError where its asset package lacks them (pip installs no empty folder).
ENVPOOL_LISTED_ASSETS = ("atari/roms", "vizdoom/maps")
# EnvPool HalfCheetah at 8,192 environments held 6 GB and stepped slower (21k steps/s, 2 threads)
# than at 64 (77k): the largest batch it is timed at. CartPole's state is 5 numbers.
ENVPOOL_MAX_BATCH = {"CartPole-v1": 65536, "HalfCheetah-v5": 4096}


def _import_envpool() -> Any:
    """``import envpool``, where a missing :data:`ENVPOOL_LISTED_ASSETS` folder reads as empty
    during the import (``os.listdir`` wrapped for the import only; nothing is written): CartPole
    and MuJoCo need no ROMs or maps. Anything else missing fails as before."""
    if "envpool" in sys.modules:
        return sys.modules["envpool"]
    real_listdir = os.listdir

    def listdir(path: Any = ".") -> list[str]:
        try:
            return real_listdir(path)
        except FileNotFoundError:
            if os.fspath(path).replace(os.sep, "/").rstrip("/").endswith(ENVPOOL_LISTED_ASSETS):
                return []
            raise

    os.listdir = listdir  # type: ignore[assignment]
    try:
        import envpool
    except ImportError as e:
        raise PeerUnavailable(f"envpool is not installed ({INSTALL['envpool']}): {e}") from e
    finally:
        os.listdir = real_listdir
    return envpool


def _envpool_mujoco_version(envpool: Any) -> str:
    """The MuJoCo that EnvPool's MuJoCo tasks are built on (linked into its own extension, so
    not the ``mujoco`` package's): its ``mj_versionString``."""
    import ctypes

    path = os.path.join(os.path.dirname(envpool.__file__), "mujoco", "mujoco_gym_envpool.so")
    try:
        fn = ctypes.CDLL(path).mj_versionString
    except (OSError, AttributeError):
        return "?"
    fn.restype = ctypes.c_char_p
    return fn().decode()


def envpool_peer(task: str, seed: int = 0) -> HostPeer:
    """EnvPool's ``task`` (``envpool.make(task, env_type="gymnasium", num_envs=n,
    batch_size=n, num_threads=t)``, sync mode: every ``step(actions)`` steps the whole batch on
    ``t`` C++ threads and returns NumPy arrays), stepped from a Python loop with uniform random
    actions of its action space pre-drawn in NumPy (a pool of batches reused in turn, drawn before
    the timed runs). Episodes end and reset inside EnvPool. Batches above
    :data:`ENVPOOL_MAX_BATCH` are not timed; nor thread counts above the batch size."""
    envpool = _import_envpool()
    version = envpool.__version__

    def run(batch_sizes: Sequence[int], steps: int | None, seconds: float, repeats: int,
            thread_counts: Sequence[int]) -> Iterator[dict[str, Any]]:
        what = task
        if task.startswith("HalfCheetah"):
            what += f" on MuJoCo {_envpool_mujoco_version(envpool)}"
        for n in batch_sizes:
            if n > ENVPOOL_MAX_BATCH.get(task, n):
                continue
            for threads in sorted({t for t in thread_counts if t <= n}):
                timing = _time_envpool(envpool, task, n, threads, seed, steps, seconds, repeats)
                yield {"mode": f"envpool {version} {what}, sync step from Python, "
                               f"{threads} thread(s)",
                       "batch_size": n, "threads": threads,
                       "steps_per_second": n * timing["steps"] / timing["seconds"], **timing}

    return HostPeer(run)


def _time_envpool(envpool: Any, task: str, n: int, threads: int, seed: int, steps: int | None,
                  seconds: float, repeats: int) -> dict[str, Any]:
    """One EnvPool measurement; the pool is released on return, before the next one is made
    (HalfCheetah at 4,096 environments holds 3 GB)."""
    env = envpool.make(task, env_type="gymnasium", num_envs=n, batch_size=n,
                       num_threads=threads, seed=seed)
    try:
        env.reset()
        space = env.action_space  # one environment's
        rng = np.random.default_rng(seed)
        # A pool of at most 64 batches (~16 MB), at least 2, reused in turn.
        k = int(max(2, min(64, 2**21 // (n * max(1, math.prod(space.shape or ()))))))
        if space.shape:  # Box
            pool = rng.uniform(space.low, space.high, (k, n, *space.shape)).astype(space.dtype)
        else:  # Discrete
            pool = rng.integers(0, space.n, (k, n)).astype(np.int32)
        actions = list(pool)

        def loop(count: int) -> None:
            for i in range(count):
                env.step(actions[i % k])

        return time_host(loop, steps, seconds, repeats)
    finally:
        env.close()


def envpool_cartpole(seed: int = 0) -> HostPeer:
    """EnvPool's ``CartPole-v1`` (C++; float32 observations, reward 1 per step, 500-step
    episodes). Checked here: from the same state (Gymnasium's ``env.state`` set to EnvPool's
    reset observation) ten random-action steps agree with Gymnasium's CartPole-v1 within 1.5e-8
    (the float32 observation), with equal rewards and termination (``tests/bench/
    test_host_peers.py``)."""
    return envpool_peer("CartPole-v1", seed)


def envpool_halfcheetah(seed: int = 0) -> HostPeer:
    """EnvPool's ``HalfCheetah-v5`` on the MuJoCo build it bundles (3.6.0 in envpool 1.2.5; the
    reference runs on mujoco 4.0.0). The same task as Gymnasium's HalfCheetah-v5, checked here:
    its config is Gymnasium's (``half_cheetah.xml``, frame skip 5, ``forward_reward_weight`` 1,
    ``ctrl_cost_weight`` 0.1, ``reset_noise_scale`` 0.1, 1,000-step episodes ending in
    truncation only, observation float64 of shape (17,) without the x position); from the same
    state (Gymnasium's ``set_state`` to EnvPool's reset observation, x recovered from EnvPool's
    ``info["x_position"] - dt * info["x_velocity"]`` after one step; the floor is a plane, so x
    moves nothing else) 20 random-action steps agree within 2e-11 on observations (seeds 0, 1,
    3: 2e-15 after one step, growing), within float32 rounding on rewards (5e-8: EnvPool returns
    float32 rewards), within 1e-16 on ``reward_ctrl``; then the two diverge as two MuJoCo builds
    do on this chaotic model (1e-9 after 50 steps, 1e-5 to 0.3 after 100;
    ``tests/bench/test_host_peers.py`` checks the first 20 steps). Timed only, never a
    reference."""
    return envpool_peer("HalfCheetah-v5", seed)


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
                      chunk: int | None = None, keyed: bool = False
                      ) -> Callable[[Any, jax.Array, jax.Array], Any]:
    """Jitted ``(state, seed, steps) -> state``: ``steps`` (traced) random-action steps of a
    batch, the actions envport's counter-hash actions of ``space`` (so every backend pays the
    same for them); with ``keyed``, ``step(state, action, key)`` gets the per-env keys the
    translation's rollout gives its auto-reset (``timing.env_keys``)."""
    vstep = chunked_vmap(step, batch_size, chunk)

    def rollout(state: Any, seed: jax.Array, steps: jax.Array) -> Any:
        n = jax.tree_util.tree_leaves(state)[0].shape[0]
        env_index = jnp.arange(n, dtype=jnp.uint32)

        def body(t: jax.Array, state: Any) -> Any:
            actions = actions_from_bits(space, counter_bits(seed, t, 0, env_index))
            if keyed:
                return vstep(state, actions, env_keys(seed, t, env_index))
            return vstep(state, actions)

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
    made = spec.benchmark.peers[peer]()
    if isinstance(made, HostPeer):
        rows = []
        for row in made.run(list(batch_sizes), steps, seconds, repeats,
                            sorted({1, *device_counts})):
            rows.append({"backend": peer, **row})
            if on_row is not None:
                on_row(rows[-1])
        return rows
    translation = envport.make(name)
    space = translation.action_space(translation.default_params())
    init, step, mode, chunk, keyed = Peer(*made)
    rows = []
    for n in batch_sizes:
        for devices in device_counts_for(n, device_counts):
            rollout = make_peer_rollout(step, space, n, devices, chunk, keyed)
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
    # Through the imported module, not this ``__main__`` copy of it: the factories return that
    # module's HostPeer, which ``isinstance`` must recognise.
    from envport.bench import peers as _peers

    _peers._child_main(sys.argv[1])
