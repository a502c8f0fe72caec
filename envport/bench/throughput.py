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
import resource
import subprocess
import sys
import tempfile
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
# Default batch sizes of an environment with performance peers (matched on every backend).
PEER_BATCH_SIZES: tuple[int, ...] = (1, 8, 64, 512, 1024, 4096, 8192)
# Timed seconds per measurement (all repeats together) when ``steps`` is not fixed.
DEFAULT_SECONDS = 2.0
# Probing for the length of a run: grow it 8x until one run takes this long.
PROBE_SECONDS = 0.05
MAX_STEPS = 1_000_000
# Reference hooks read ``steps`` differently (Gymnasium CartPole: ~total env-steps per batch size;
# Pong's C bench: steps per environment). 50k steps with batches up to 4096 keeps both within
# ~20 s on 2 cores while CartPole's vector env still gets >=12 timed iterations at 4096, where
# its numpy throughput has already plateaued.
REFERENCE_STEPS = 50_000
REFERENCE_MAX_BATCH = 4096


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

    def shard_rollout(state: Any, obs: Array, seed: Array, steps: Array, first_env: Array
                      ) -> tuple[Any, Array, Array]:
        n = obs.shape[0]
        env_index = first_env.reshape(()) + jnp.arange(n, dtype=jnp.uint32)

        def body(t: Array, carry: tuple[Any, Array, Array]) -> tuple[Any, Array, Array]:
            state, _obs, reward_sum = carry
            actions = actions_from_bits(space, counter_bits(seed, t, 0, env_index))
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


def time_rollout(rollout: Callable[..., Any], args: Sequence[Any], steps: int | None = None,
                 seconds: float = DEFAULT_SECONDS, repeats: int = 3, seed: int = 0
                 ) -> dict[str, Any]:
    """Time a jitted ``rollout(*args, seed, steps)`` (``seed`` uint32, ``steps`` int32, both
    traced), compilation excluded.

    With ``steps`` fixed: a warm-up run, then the best of ``repeats`` runs of ``steps``. With
    ``steps=None`` the length is chosen by time: a run of one step (the warm-up), then runs of
    1, 8, 64... steps until one takes ``PROBE_SECONDS``, and ``repeats`` runs sized to
    ``seconds`` in all.
    When one step alone takes ``seconds / repeats`` or more (MJX at batch 8,192), the first run
    is already a measurement and only as many more follow as fit in ``seconds``.

    Returns ``{"steps", "seconds" (the best run), "repeats", "compile_seconds"}``.
    """
    args = tuple(args)

    def as_args(s: int, k: int) -> tuple[Any, ...]:
        return (*args, jnp.uint32(s % 2**32), jnp.int32(k))

    t0 = time.perf_counter()
    compiled = rollout.lower(*as_args(seed, 1)).compile()  # type: ignore[attr-defined]
    compile_seconds = time.perf_counter() - t0

    def run(s: int, k: int) -> float:
        t = time.perf_counter()
        jax.block_until_ready(compiled(*as_args(s, k)))
        return time.perf_counter() - t

    budget = seconds / max(1, repeats)
    first = run(seed, 1 if steps is None else steps)
    if steps is None and first >= budget:
        steps, times = 1, [first]
        while len(times) < repeats and sum(times) + first <= seconds:
            times.append(run(seed + len(times), 1))
    else:
        if steps is None:  # the warm-up run's time is no guide (first-run overheads)
            k, t = 1, run(seed, 1)
            while t < PROBE_SECONDS and k < MAX_STEPS:
                k = min(8 * k, MAX_STEPS)
                t = run(seed, k)
            steps = int(min(MAX_STEPS, max(1, round(budget * k / t))))
        times = [run(seed + r + 1, steps) for r in range(max(1, repeats))]
    return {"steps": steps, "seconds": min(times), "repeats": len(times),
            "compile_seconds": compile_seconds}


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


def device_counts_for(batch_size: int, device_counts: Sequence[int]) -> list[int]:
    """The counts this process has devices for and that divide the batch."""
    available = len(jax.devices())
    return sorted({d for d in device_counts if d <= available and batch_size % d == 0})


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


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


ROW_PREFIX = "ROW "  # a child's progress lines: one measured row each, as JSON
# A child that prints nothing for this long is stalled, not compiling: killed, and what it had
# measured is kept. (Seen: MJX's child asleep with every thread waiting, at batch 1,024 and
# 8,192, intermittently; the slowest honest gap is a compile, ~2 minutes on 2 busy cores.)
STALL_SECONDS = 600.0


class ChildFailed(RuntimeError):
    """A benchmark child failed or stalled; ``rows`` holds what it measured before that."""

    def __init__(self, message: str, rows: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.rows = rows


def run_child(module: str, request: dict[str, Any],
              on_row: Callable[[dict[str, Any]], None] | None = None,
              stall_seconds: float = STALL_SECONDS) -> tuple[list[dict[str, Any]], float]:
    """Run ``python -m module REQUEST`` with one XLA CPU device per core; it prints a
    ``ROW {json}`` line per measured row as it goes and ``{"rows", "peak_rss_mb"}`` last.
    Raises :class:`ChildFailed` (with the rows received so far) when the child fails or prints
    nothing for ``stall_seconds``."""
    import queue
    import threading

    cores = os.cpu_count() or 1
    flags = os.environ.get("XLA_FLAGS", "")
    child_env = {**os.environ,
                 "XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count={cores}".strip()}
    # stderr goes to a file: a pipe read only at the end would fill (XLA's slow-compile
    # warnings, MJX's messages) and block the child while we wait for its stdout.
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen([sys.executable, "-m", module, json.dumps(request)],
                                env=child_env, stdout=subprocess.PIPE, stderr=errors, text=True)
        last = ""
        received: list[dict[str, Any]] = []
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:  # a thread, so the wait for the next line can time out
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        try:
            while (line := lines.get(timeout=stall_seconds)) is not None:
                if line.startswith(ROW_PREFIX):
                    received.append(json.loads(line[len(ROW_PREFIX):]))
                    if on_row is not None:
                        on_row(received[-1])
                elif line.strip():
                    last = line
            code = proc.wait()
        except queue.Empty:
            proc.kill()
            proc.wait()
            raise ChildFailed(f"benchmark child process ({module}) printed nothing for "
                              f"{stall_seconds:.0f} s after {len(received)} rows: stalled, "
                              "killed", received) from None
        except BaseException:  # Ctrl-C: do not leave the child running
            proc.kill()
            proc.wait()
            raise
        errors.seek(0)
        stderr = errors.read()
    if code:
        raise ChildFailed(f"benchmark child process ({module}) failed:\n{stderr[-4000:]}",
                          received)
    reply = json.loads(last)
    return reply["rows"], reply["peak_rss_mb"]


def print_row(row: dict[str, Any]) -> None:
    print(ROW_PREFIX + json.dumps(row), flush=True)


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


def best_rows(results: Sequence[dict[str, Any]]) -> dict[str, dict[int, dict[str, Any]]]:
    """``{backend: {batch_size: the row with the most steps/s}}`` over modes and devices."""
    best: dict[str, dict[int, dict[str, Any]]] = {}
    for r in results:
        sps = r.get("steps_per_second", math.nan)
        if not (isinstance(sps, int | float) and math.isfinite(sps)):
            continue
        at = best.setdefault(r["backend"], {})
        if r["batch_size"] not in at or sps > at[r["batch_size"]]["steps_per_second"]:
            at[r["batch_size"]] = r
    return best


def ratios(results: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per batch size, the best steps/s of each backend and JAX's ratio to each other backend;
    and per other backend, ``{"per_batch": {n: ratio}, "best": best JAX / best of it}``.
    A ratio is only given where both were measured at that batch size."""
    best = best_rows(results)
    jax_best = best.get("jax", {})
    others = [b for b in best if b != "jax"]
    sizes = sorted({n for at in best.values() for n in at})
    by_batch = []
    for n in sizes:
        sps = {b: best[b][n]["steps_per_second"] for b in best if n in best[b]}
        ratio = {b: sps["jax"] / sps[b] for b in others if "jax" in sps and b in sps}
        by_batch.append({"batch_size": n, "steps_per_second": sps, "jax_ratio": ratio})
    summary = {}
    for b in others:
        top_jax = max((r["steps_per_second"] for r in jax_best.values()), default=math.nan)
        top = max(r["steps_per_second"] for r in best[b].values())
        summary[b] = {"per_batch": {str(x["batch_size"]): x["jax_ratio"][b]
                                    for x in by_batch if b in x["jax_ratio"]},
                      "best": top_jax / top}
    return by_batch, summary


def run_benchmark(name: str, batch_sizes: Sequence[int] | None = None,
                  steps: int | None = None, per_core: bool = True,
                  peers: bool | Sequence[str] = True, seconds: float = DEFAULT_SECONDS,
                  reference: bool = True,
                  progress: Callable[[str], None] | None = None,
                  stall_seconds: float = STALL_SECONDS) -> dict[str, Any]:
    """JAX translation of ``name`` vs its reference's throughput hook and its performance peers
    (``EnvSpec.benchmark.peers``; ``peers=False`` skips them, a list picks some), plus memory
    figures.

    ``steps`` fixes the run length (JAX and peers) and the env-steps per batch size (reference);
    by default runs are sized to about ``seconds`` per measurement and the reference hook gets
    ``REFERENCE_STEPS``. With ``per_core`` (default) the JAX side runs in a child process with
    one device per core (:func:`jax_throughput_per_core`), else in this process on its current
    devices. A peer that is not installed (or whose child fails) is listed in ``skipped`` with
    the reason, never an error. ``progress`` receives one line per measured row.
    """
    spec = envport.spec(name)
    env = envport.make(name)
    if isinstance(peers, bool):
        peer_names = list(spec.benchmark.peers) if peers else []
    else:
        unknown = sorted(set(peers) - set(spec.benchmark.peers))
        if unknown:
            raise ValueError(f"{name} has no peer(s) {', '.join(unknown)}; its peers: "
                             f"{', '.join(spec.benchmark.peers) or 'none'}")
        peer_names = [p for p in spec.benchmark.peers if p in peers]
    default_sizes = PEER_BATCH_SIZES if spec.benchmark.peers else DEFAULT_BATCH_SIZES
    jax_sizes = sorted(set(default_sizes if batch_sizes is None else batch_sizes))
    if not jax_sizes or min(jax_sizes) < 1:
        raise ValueError(f"batch sizes must be positive integers, got {batch_sizes}")
    ref_sizes = [n for n in jax_sizes if n <= REFERENCE_MAX_BATCH] or [min(jax_sizes)]
    ref_steps = REFERENCE_STEPS if steps is None else steps

    def report(row: dict[str, Any]) -> None:
        if progress is not None:
            progress(f"{row['backend']:<9} batch {row['batch_size']:>6}  "
                     f"{row['steps_per_second']:>12,.0f} steps/s  ({row.get('mode', '')})")

    load = {"before": _load_average()}
    results: list[dict[str, Any]] = []
    hook = spec.benchmark.reference_throughput
    if hook is not None and reference:
        for row in hook(ref_sizes, ref_steps):
            results.append(row)
            report(row)

    rss_before = _peak_rss_mb()
    jax_steps = {n: steps for n in jax_sizes}
    if per_core:
        rows, jax_rss = jax_throughput_per_core(name, list(jax_steps.items()), seconds=seconds,
                                                on_row=report, stall_seconds=stall_seconds)
        results += rows
    else:
        for n, s in jax_steps.items():
            results += jax_throughput(env, [n], s, seconds=seconds, on_row=report)
        jax_rss = _peak_rss_mb()

    skipped: dict[str, str] = {}
    incomplete: dict[str, str] = {}
    peer_rss = None
    from envport.bench.peers import peers_throughput, peers_throughput_per_core

    for peer in peer_names:  # one child per peer: one that stalls loses nothing of the others
        try:
            if per_core:
                rows, rss = peers_throughput_per_core(
                    name, jax_sizes, [peer], steps, seconds=seconds, on_row=report,
                    stall_seconds=stall_seconds)
                peer_rss = max(rss, peer_rss or 0.0)
            else:
                rows = peers_throughput(name, jax_sizes, [peer], steps, seconds=seconds,
                                        on_row=report)
        except RuntimeError as e:  # the peer crashed or stalled (ChildFailed): keep its rows
            rows = list(getattr(e, "rows", []))
            if rows:
                incomplete[peer] = str(e)
            else:
                rows = [{"backend": peer, "error": str(e)}]
        for r in rows:
            if "error" in r:
                skipped[r["backend"]] = r["error"]
            else:
                results.append(r)
    load["after"] = _load_average()
    largest = max(jax_sizes)

    def best(backend: str) -> dict[str, Any]:
        rows = [r for r in results if r["backend"] == backend]
        return max(rows, key=lambda r: r["steps_per_second"], default={})

    best_jax, best_ref = best("jax"), best("reference")
    by_batch, summary = ratios(results)
    return {
        "env": name,
        "results": results,
        "speedup": (best_jax.get("steps_per_second", math.nan)
                    / best_ref.get("steps_per_second", math.nan)),
        # Where each side peaks: the rows behind the speedup.
        "best": {b: best(b) for b in ("jax", "reference", *peer_names) if best(b)},
        # JAX's steps/s over each other backend's, per batch size and best vs best.
        "by_batch": by_batch,
        "ratios": summary,
        "peers": {p: ("skipped: " + skipped[p]) if p in skipped else "measured"
                  for p in peer_names},
        "skipped": skipped,
        "incomplete": incomplete,
        "machine": {"cores": os.cpu_count(), "jax_backend": jax.default_backend(),
                    "jax_version": jax.__version__, "load_average": load},
        # steps None: each JAX/peer row's own "steps" was sized to ~seconds of timed runs.
        "steps": {"reference": ref_steps, "jax": steps, "seconds_per_measurement": seconds},
        "memory": {
            "batch_size": largest,
            "state_bytes_per_env": state_bytes_per_env(env, largest),
            # Peak RSS of this process after the reference ran, and of the process that ran
            # the JAX side (the child with per_core, else this one, reference included).
            "peak_rss_mb_before_jax": rss_before,
            "peak_rss_mb": jax_rss,
            "peers_peak_rss_mb": peer_rss,
        },
    }


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - platforms without it
        return None


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
    print(json.dumps({"rows": rows, "peak_rss_mb": _peak_rss_mb()}))


if __name__ == "__main__":
    _child_main(sys.argv[1])
