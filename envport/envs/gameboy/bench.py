"""Frames per second of PyBoy 2.8.1 (sound off) and the Rust core, side by side in one run, on
the project's CPU-bound ROM (``spin``: the CPU never halts) and on a ROM that HALTs until VBlank
every frame (``hello``), with and without rendering:

    python -m envport.envs.gameboy.bench [--frames 3000] [--repeats 3] [--batch 8]

PyBoy and the single core run one process, one thread, ``tick(frames, render)`` (PyBoy renders
only the last frame of a ``tick``, so the render rows tick one frame at a time on both), timed in
process CPU time, so that other load on a shared machine does not count. The batch rows step
``--batch`` emulators with Rayon on 1 and on 2 threads, timed in wall-clock time (their CPU
time adds the threads up); they are only meaningful on otherwise idle cores. Best of
``--repeats``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

from envport.envs.gameboy.build_roms import rom_path
from envport.envs.gameboy.lockstep import make_core, make_pyboy


def _best(run: Callable[[], None], repeats: int, clock: Callable[[], float]) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = clock()
        run()
        best = min(best, clock() - t0)
    return best


def _ticker(emu: Any, frames: int, render: bool) -> Callable[[], None]:
    if render:
        def run() -> None:
            for _ in range(frames):
                emu.tick(1, True)
    else:
        def run() -> None:
            emu.tick(frames, False)
    return run


def bench(frames: int, repeats: int, batch: int) -> list[tuple[str, str, float]]:
    import envport_gb

    rows: list[tuple[str, str, float]] = []
    boot = rom_path("boot")
    for name in ("spin", "hello"):
        rom = rom_path(name)
        for render in (False, True):
            n = frames if not render else max(frames // 4, 1)
            mode = "render every frame" if render else "no render"
            pb = make_pyboy(rom, boot)
            pb.tick(70, False)
            t = _best(_ticker(pb, n, render), repeats, time.process_time)
            pb.stop(save=False)
            rows.append((f"{name}, {mode}", "PyBoy 2.8.1, 1 process", n / t))
            gb = make_core(rom, boot)
            gb.tick(70, False)
            t = _best(_ticker(gb, n, render), repeats, time.process_time)
            rows.append((f"{name}, {mode}", "Rust core, 1 thread", n / t))
        data = rom.read_bytes()
        for threads in (1, 2):
            vec = envport_gb.VecGameBoy(data, batch, boot.read_bytes(), threads=threads)
            vec.tick(70, False)
            per = max(frames // batch, 1)
            def run(v: Any = vec, k: int = per) -> None:
                v.tick(k, False)

            t = _best(run, repeats, time.perf_counter)
            rows.append((f"{name}, no render", f"Rust batch of {batch}, {threads} thread(s)",
                         per * batch / t))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--frames", type=int, default=3000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    args = p.parse_args(argv)
    for flag in ("frames", "repeats", "batch"):
        if getattr(args, flag) < 1:
            raise ValueError(f"--{flag} must be at least 1")
    rows = bench(args.frames, args.repeats, args.batch)
    print(f"# {os.cpu_count()} CPUs; frames/s, best of {args.repeats}")
    base: dict[str, float] = {}
    for what, who, fps in rows:
        if who.startswith("PyBoy"):
            base[what] = fps
        ratio = fps / base[what] if what in base else float("nan")
        print(f"{what:28s} {who:34s} {fps:12,.0f}  x{ratio:6.2f} vs PyBoy")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
