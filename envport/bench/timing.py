"""Timing shared by every benchmark: run lengths sized by time, counter-hash random actions,
and benchmark children that report one measured row per line.

A child (``python -m MODULE REQUEST``, :func:`run_child`) runs with one XLA CPU device per core
(``--xla_force_host_platform_device_count``, process-wide and set before JAX starts, hence the
child) and prints ``ROW {json}`` per measured row; one that prints nothing for
``stall_seconds`` is killed and the rows it sent are kept.
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

from envport.core.api import Array
from envport.core.spaces import Box, Discrete, Space

# Default JAX batch sizes: powers of 4 from 1 to 65536.
DEFAULT_BATCH_SIZES: tuple[int, ...] = tuple(4**i for i in range(9))
# Default batch sizes of an environment with performance peers (matched on every backend).
PEER_BATCH_SIZES: tuple[int, ...] = (1, 8, 64, 512, 1024, 4096, 8192)
# Timed seconds per measurement (all repeats together) when ``steps`` is not fixed.
DEFAULT_SECONDS = 2.0
# Timed runs per measurement in ``envport bench`` (the best is kept). Sized by time: 10 runs of
# ~seconds/10. On the shared 2-core machine a co-tenant halves a run's speed for seconds at a
# time; timing the translation and gymnax's CartPole alternately in one process at batch 4,096
# and 65,536 (1 device, 4 pairs each), their ratio spread over 0.62-1.46 with the best of 3 runs
# of 0.67 s, and over 0.97-1.11 (one pair of 8 at 0.51) with the best of 10 runs of 0.2 s.
SIZED_REPEATS = 10
# With the steps per run fixed (``--steps``), each run is as long as asked: the best of 3.
FIXED_REPEATS = 3
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
    A space of another kind may define ``from_bits(bits) -> actions`` for this.

    ``bits % n`` has a modulo bias of at most n / 2**32, irrelevant for a benchmark.
    """
    if isinstance(space, Discrete):
        return (bits % jnp.uint32(space.n)).astype(space.dtype)
    if hasattr(space, "from_bits"):  # a space of its own (pokemon-gen1's joint choice)
        return space.from_bits(bits)
    if isinstance(space, Box):
        # Same finite clamp as Box.sample: an unbounded Box has no uniform distribution.
        lo, hi = max(space.low, -1e6), min(space.high, 1e6)
        if space.shape:  # one word per component
            bits = mix32(bits[:, None] + jnp.arange(math.prod(space.shape), dtype=jnp.uint32))
            bits = bits.reshape(bits.shape[0], *space.shape)
        unit = (bits >> 8).astype(jnp.float32) * np.float32(2.0**-24)  # [0, 1), exact
        return (lo + (hi - lo) * unit).astype(space.dtype)
    raise TypeError(f"no random-action sampler for {type(space).__name__}")


def legal_actions_from_bits(mask: Array, bits: Array) -> Array:
    """Uniform random legal actions from ``mask`` (bool ``[batch, n]``, True = legal) and one
    uniform uint32 word per env: the ``bits % k``-th legal action of a row with ``k`` legal
    ones. A row with no legal action gets action 0 (the environment's own rule applies)."""
    counts = mask.sum(axis=-1).astype(jnp.uint32)
    rank = (bits % jnp.maximum(counts, jnp.uint32(1))).astype(jnp.int32)
    # The action whose inclusive running count of legal actions first exceeds ``rank``.
    running = jnp.cumsum(mask.astype(jnp.int32), axis=-1)
    return jnp.argmax(running > rank[:, None], axis=-1).astype(jnp.int32)


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


def time_host(run: Callable[[int], Any], steps: int | None = None,
              seconds: float = DEFAULT_SECONDS, repeats: int = 3) -> dict[str, Any]:
    """Time ``run(k)``, a host loop of ``k`` batch steps (a C++ thread pool stepped from Python),
    the way :func:`time_rollout` times a jitted one: a warm-up step, then with ``steps`` fixed
    the best of ``repeats`` runs of it, else runs of 1, 8, 64... steps until one takes
    ``PROBE_SECONDS`` and ``repeats`` runs sized to ``seconds`` in all.

    Returns ``{"steps", "seconds" (the best run), "repeats"}``.
    """
    def timed(k: int) -> float:
        t = time.perf_counter()
        run(k)
        return time.perf_counter() - t

    timed(1)
    if steps is None:
        k, t = 1, timed(1)
        while t < PROBE_SECONDS and k < MAX_STEPS:
            k = min(8 * k, MAX_STEPS)
            t = timed(k)
        steps = int(min(MAX_STEPS, max(1, round(seconds / max(1, repeats) * k / t))))
    times = [timed(steps) for _ in range(max(1, repeats))]
    return {"steps": steps, "seconds": min(times), "repeats": len(times)}


def device_counts_for(batch_size: int, device_counts: Sequence[int]) -> list[int]:
    """The counts this process has devices for and that divide the batch."""
    available = len(jax.devices())
    return sorted({d for d in device_counts if d <= available and batch_size % d == 0})


def peak_rss_mb() -> float:
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


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - platforms without it
        return None
