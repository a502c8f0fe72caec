"""Runs the Rust core and PyBoy 2.8.1 (sound off) side by side on one ROM with the same boot ROM
and button schedule, and compares what both show after every frame: the CPU registers, WRAM,
VRAM, OAM, the I/O registers, HRAM and IE, and the screen on rendered frames.

PyBoy is imported lazily (extra ``gb``); the core is the module ``envport_gb`` built by
install.sh.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from envport.envs.gameboy.build_roms import rom_path

#: Address ranges compared after every frame: WRAM, VRAM, OAM, I/O (sound registers read 0 in
#: both with sound off), HRAM and IE.
REGIONS: tuple[tuple[str, int, int], ...] = (
    ("WRAM", 0xC000, 0xE000),
    ("VRAM", 0x8000, 0xA000),
    ("OAM", 0xFE00, 0xFEA0),
    ("IO", 0xFF00, 0xFF80),
    ("HRAM+IE", 0xFF80, 0x10000),
)
REGISTER_NAMES = ("A", "F", "B", "C", "D", "E", "HL", "SP", "PC")


def make_core(rom: Path, boot: Path) -> Any:
    import envport_gb

    return envport_gb.GameBoy(rom.read_bytes(), boot.read_bytes())


def make_pyboy(rom: Path, boot: Path) -> Any:
    from pyboy import PyBoy

    return PyBoy(
        str(rom), window="null", sound_emulated=False, cgb=False, bootrom=str(boot),
        log_level="ERROR",
    )


def pyboy_registers(pb: Any) -> tuple[int, ...]:
    r = pb.register_file
    return (r.A, r.F, r.B, r.C, r.D, r.E, r.HL, r.SP, r.PC)


@dataclass
class Mismatch:
    frame: int
    what: str
    detail: str

    def __str__(self) -> str:
        return f"frame {self.frame}: {self.what} differs: {self.detail}"


def compare_frame(frame: int, pb: Any, gb: Any, screen: bool) -> Mismatch | None:
    a, b = pyboy_registers(pb), tuple(gb.registers())
    if a != b:
        diff = ", ".join(
            f"{n} PyBoy {x:#x} core {y:#x}" for n, x, y in zip(REGISTER_NAMES, a, b, strict=True)
            if x != y
        )
        return Mismatch(frame, "registers", diff)
    for name, lo, hi in REGIONS:
        want = bytes(pb.memory[lo:hi])
        got = gb.read(lo, hi)
        if want != got:
            at = [i for i in range(hi - lo) if want[i] != got[i]]
            detail = ", ".join(f"{lo + i:#06x} PyBoy {want[i]:#04x} core {got[i]:#04x}"
                               for i in at[:6])
            return Mismatch(frame, name, f"{len(at)} bytes, first {detail}")
    if screen:
        want_s = np.asarray(pb.screen.ndarray)
        got_s = gb.screen()
        if not np.array_equal(want_s, got_s):
            rows, cols = np.nonzero((want_s != got_s).any(axis=-1))
            first = f"first (y={rows[0]}, x={cols[0]})"
            return Mismatch(frame, "screen", f"{rows.size} pixels, {first}")
    return None


ButtonSchedule = Callable[[int], Sequence[tuple[str, bool]]]


def no_buttons(frame: int) -> Sequence[tuple[str, bool]]:
    return ()


def lockstep(
    rom: str | Path,
    frames: int,
    *,
    buttons: ButtonSchedule = no_buttons,
    render_every: int = 0,
    boot: str | Path | None = None,
) -> tuple[int, Mismatch | None]:
    """Runs ``frames`` frames on both; returns (frames compared, first mismatch or None).
    ``buttons(frame)`` lists (name, pressed) events applied to both before that frame;
    ``render_every`` > 0 renders (and compares the screen) every that many frames."""
    rom_file = rom_path(rom) if isinstance(rom, str) else rom
    boot_file = rom_path("boot") if boot is None else Path(boot)
    pb = make_pyboy(rom_file, boot_file)
    gb = make_core(rom_file, boot_file)
    try:
        for frame in range(frames):
            for name, pressed in buttons(frame):
                if pressed:
                    pb.button_press(name)
                    gb.button_press(name)
                else:
                    pb.button_release(name)
                    gb.button_release(name)
            render = render_every > 0 and frame % render_every == 0
            pb.tick(1, render)
            gb.tick(1, render)
            bad = compare_frame(frame, pb, gb, render)
            if bad is not None:
                return frame + 1, bad
        return frames, None
    finally:
        pb.stop(save=False)
