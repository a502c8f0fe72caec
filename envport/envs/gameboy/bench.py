"""Frames per second of PyBoy 2.8.1 (sound off) and the Rust core, side by side in one run, on
the project's CPU-bound ROM (``spin``: the CPU never halts) and on a ROM that HALTs until VBlank
every frame (``hello``), with and without rendering:

    python -m envport.envs.gameboy.bench [--frames 3000] [--repeats 3] [--batch 8]

PyBoy and the single core run one process, one thread, ``tick(frames, render)`` (PyBoy renders
only the last frame of a ``tick``, so the render rows tick one frame at a time on both). The batch
rows step ``--batch`` emulators with Rayon on 1 and on 2 threads; beside them, PyBoy in one
process per core (each its own emulator, started together; frames/s of all of them). Each row is
timed both in wall-clock time and in process CPU time (all threads added up): on a machine shared
with other jobs the CPU-time figure is the one that compares per core; thread scaling needs idle
cores and the wall-clock figure. Ratios are to PyBoy on the same ROM and mode. Best of
``--repeats``. The last lines give the 2-thread batch's wall-clock speed-up over the 1-thread
batch, with the load average read before and after the run (other jobs on the cores lower it).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from collections.abc import Callable
from typing import Any

from envport.envs.gameboy.build_roms import rom_path
from envport.envs.gameboy.lockstep import make_core, make_pyboy


def _best(run: Callable[[], None], repeats: int) -> tuple[float, float]:
    """Best wall-clock and best process CPU time (all threads) of ``repeats`` runs."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        run()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu


def _ticker(emu: Any, frames: int, render: bool) -> Callable[[], None]:
    if render:
        def run() -> None:
            for _ in range(frames):
                emu.tick(1, True)
    else:
        def run() -> None:
            emu.tick(frames, False)
    return run


def _pyboy_process(rom: str, frames: int, render: bool, repeats: int, start: Any,
                   out: Any) -> None:
    pb = make_pyboy(rom_path(rom), rom_path("boot"))
    pb.tick(70, False)
    start.wait()
    out.put(_best(_ticker(pb, frames, render), repeats))
    pb.stop(save=False)


def _pyboy_per_core(rom: str, frames: int, render: bool, repeats: int,
                    procs: int) -> tuple[float, float]:
    """``procs`` PyBoy processes on one ROM at once: frames/s of all of them in wall-clock time
    (the slowest process's best time) and per CPU second (each process's own)."""
    ctx = mp.get_context("spawn")
    start, out = ctx.Barrier(procs), ctx.Queue()
    workers = [ctx.Process(target=_pyboy_process, args=(rom, frames, render, repeats, start, out))
               for _ in range(procs)]
    for w in workers:
        w.start()
    times = [out.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    wall = max(t[0] for t in times)
    cpu = sum(t[1] for t in times)
    return procs * frames / wall, procs * frames / cpu


Row = tuple[str, str, float, float]  # what, who, frames/s wall-clock, frames/s per CPU second


def bench(frames: int, repeats: int, batch: int) -> list[Row]:
    import envport_gb

    rows: list[Row] = []
    boot = rom_path("boot")
    for name in ("spin", "hello"):
        rom = rom_path(name)
        for render in (False, True):
            n = frames if not render else max(frames // 4, 1)
            mode = "render every frame" if render else "no render"
            pb = make_pyboy(rom, boot)
            pb.tick(70, False)
            w, c = _best(_ticker(pb, n, render), repeats)
            pb.stop(save=False)
            rows.append((f"{name}, {mode}", "PyBoy 2.8.1, 1 process", n / w, n / c))
            gb = make_core(rom, boot)
            gb.tick(70, False)
            w, c = _best(_ticker(gb, n, render), repeats)
            rows.append((f"{name}, {mode}", "Rust core, 1 thread", n / w, n / c))
        data = rom.read_bytes()
        for render in (False, True):
            mode = "render every frame" if render else "no render"
            procs = os.cpu_count() or 1
            n = frames if not render else max(frames // 4, 1)
            w, c = _pyboy_per_core(name, n, render, repeats, procs)
            rows.append((f"{name}, {mode}", f"PyBoy 2.8.1, {procs} processes", w, c))
            for threads in (1, 2):
                vec = envport_gb.VecGameBoy(data, batch, boot.read_bytes(), threads=threads)
                vec.tick(70, False)
                per = max(frames // batch // (4 if render else 1), 1)

                def run(v: Any = vec, k: int = per, r: bool = render) -> None:
                    if r:
                        for _ in range(k):
                            v.tick(1, True)
                    else:
                        v.tick(k, False)

                w, c = _best(run, repeats)
                rows.append((f"{name}, {mode}", f"Rust batch of {batch}, {threads} thread(s)",
                             per * batch / w, per * batch / c))
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
    load_before = os.getloadavg()[0]
    rows = bench(args.frames, args.repeats, args.batch)
    load = os.getloadavg()[0]
    print(f"# {os.cpu_count()} CPUs, load average {load_before:.1f} before, {load:.1f} after; "
          f"best of {args.repeats}; frames/s in wall-clock time and per CPU second (process "
          "time, all threads)")
    print(f"{'ROM, mode':28s} {'emulator':34s} {'wall':>10s} {'ratio':>6s} {'per CPU s':>10s} "
          f"{'ratio':>6s}")
    base: dict[str, tuple[float, float]] = {}
    for what, who, wall, cpu in rows:
        if who.startswith("PyBoy") and who.endswith("1 process"):
            base[what] = (wall, cpu)
        bw, bc = base[what]
        print(f"{what:28s} {who:34s} {wall:10,.0f} {wall / bw:6.2f} {cpu:10,.0f} {cpu / bc:6.2f}")
    one = {what: wall for what, who, wall, _ in rows if who.endswith(", 1 thread(s)")}
    per_core = {what: wall for what, who, wall, _ in rows if who.endswith(" processes")}
    for what, who, wall, _ in rows:
        if who.endswith(", 2 thread(s)"):
            print(f"# {what}: 2 threads / 1 thread, wall-clock: {wall / one[what]:.2f}x; "
                  f"2 threads / PyBoy one process per core: {wall / per_core[what]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
