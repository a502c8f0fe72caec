"""``envport bench gb-catch``: environment steps per second (random actions, autoreset) of the
reference (PyBoy 2.8.1, sound off) and of the translation (the Rust core), side by side.

Rows, per batch size ``n`` (a step is ``frame_skip`` frames):

- reference, ``n == 1``: one PyBoy in this process, with rendering (the environment's step
  renders its last frame) and without;
- reference, ``n > 1``: ``min(n, cores)`` processes, one PyBoy each stepping ``n / processes``
  environments in turn ("one process per core"), without rendering;
- translation, ``n == 1``: one core, with and without rendering;
- translation, ``n > 1``: the core batch (``CoreVectorEnv``, one ``VecGameBoy`` call a step,
  no rendering) on one Rayon thread and on all cores.

Every row also reports process CPU seconds (``cpu_steps_per_second``: steps per CPU second of
the processes that ran it), which compares per core on a shared machine.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from envport.envs.gameboy.catch import CATCH
from envport.envs.gameboy.env import CoreGame, CoreVectorEnv, PyBoyGame


def _loop(side: Any, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    side.reset(seed)
    actions = rng.integers(0, len(CATCH.actions), steps)
    for t, a in enumerate(actions):
        _, _, terminated, truncated, _ = side.step(int(a))
        if terminated or truncated:
            side.reset(seed + t + 1)


def _timed(fn: Any) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _row(backend: str, mode: str, n: int, steps: int, wall: float, cpu: float,
         short: str) -> dict[str, Any]:
    return {"backend": backend, "mode": mode, "short": short, "batch_size": n, "steps": steps,
            "steps_per_second": steps / wall, "cpu_steps_per_second": steps / max(cpu, 1e-9)}


def _pyboy_worker(job: tuple[int, int, int]) -> tuple[int, float]:
    envs, steps, seed = job
    sides = [PyBoyGame(CATCH) for _ in range(envs)]
    for s in sides:
        s.render = False
    cpu = time.process_time()
    for k, s in enumerate(sides):
        _loop(s, steps // envs, seed + 1000 * k)
    return (steps // envs) * envs, time.process_time() - cpu


def _single_rows(backend: str, make_side: Any, name: str, steps: int) -> list[dict[str, Any]]:
    """One emulator of ``make_side``, timed rendering every frame and not."""
    rows = []
    for render in (True, False):
        side = make_side(CATCH)
        side.render = render
        wall, cpu = _timed(lambda side=side: _loop(side, steps, 0))
        mode = "render" if render else "no render"
        rows.append(_row(backend, f"{name}, {mode}", 1, steps, wall, cpu, mode))
        if isinstance(side, PyBoyGame):
            side.close()
    return rows


def reference_throughput(batch_sizes: list[int], steps: int) -> list[dict[str, Any]]:
    steps = min(steps, 20_000)
    rows = []
    for n in batch_sizes:
        if n == 1:
            rows += _single_rows("reference", PyBoyGame, "PyBoy, 1 process", steps)
            continue
        procs = min(n, os.cpu_count() or 1)
        jobs = [(max(1, n // procs), steps // procs, 7 * i) for i in range(procs)]
        with ProcessPoolExecutor(procs) as pool:
            list(pool.map(_pyboy_worker, [(1, 1, 0)] * procs))  # start and import first
            t0 = time.perf_counter()
            done = list(pool.map(_pyboy_worker, jobs))
            wall = time.perf_counter() - t0
        total, cpu = sum(d[0] for d in done), sum(d[1] for d in done)
        rows.append(_row("reference", f"PyBoy, {procs} processes, no render", n, total, wall,
                         cpu, f"{procs} proc"))
    return rows


def translation_throughput(batch_sizes: list[int], steps: int) -> list[dict[str, Any]]:
    rows = []
    for n in batch_sizes:
        if n == 1:
            rows += _single_rows("translation", CoreGame, "core, 1 thread", steps)
            continue
        for threads in (1, 0):
            vec = CoreVectorEnv(CATCH, n, 0, threads=threads)
            vec.reset()
            rng = np.random.default_rng(0)
            k = max(1, steps // n)
            actions = rng.integers(0, len(CATCH.actions), (k, n))
            wall, cpu = _timed(lambda vec=vec, actions=actions: [vec.step(a) for a in actions])
            label = "1 thread" if threads == 1 else f"{os.cpu_count()} threads"
            rows.append(_row("translation", f"core batch (Rayon {label}), no render", n, k * n,
                             wall, cpu, label.replace("threads", "thr").replace("thread", "thr")))
    return rows
