"""Runs the Rust core and PyBoy 2.8.1 (sound off) side by side on one ROM with the same boot ROM
and button schedule, and compares what both show after every frame: the CPU registers, WRAM,
VRAM, OAM, the I/O registers, HRAM and IE, and the screen on rendered frames.

PyBoy is imported lazily (extra ``gb``); the core is the module ``envport_gb`` built by
install.sh.
"""

from __future__ import annotations

import atexit
import contextlib
import weakref
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


_OWNERS: weakref.WeakSet[Any] = weakref.WeakSet()


def close_at_exit(owner: Any) -> None:
    """Close ``owner`` (an object holding a PyBoy, with ``close()``) at interpreter exit if it
    is still alive then: a PyBoy left to the interpreter's teardown prints "Error in
    sys.excepthook" from its finaliser."""
    _OWNERS.add(owner)


def _close_owners() -> None:
    for owner in list(_OWNERS):
        with contextlib.suppress(Exception):  # stopped twice is harmless; never fail at exit
            owner.close()


atexit.register(_close_owners)


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


def run_pair(
    pb: Any, gb: Any, first_frame: int, frames: int, buttons: ButtonSchedule, render_every: int,
) -> tuple[int, Mismatch | None]:
    for k in range(frames):
        frame = first_frame + k
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
            return k + 1, bad
    return frames, None


def _files(rom: str | Path, boot: str | Path | None) -> tuple[Path, Path]:
    rom_file = rom_path(rom) if isinstance(rom, str) else rom
    boot_file = rom_path("boot") if boot is None else Path(boot)
    return rom_file, boot_file


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
    rom_file, boot_file = _files(rom, boot)
    pb = make_pyboy(rom_file, boot_file)
    gb = make_core(rom_file, boot_file)
    try:
        return run_pair(pb, gb, 0, frames, buttons, render_every)
    finally:
        pb.stop(save=False)


def lockstep_from_pyboy_state(
    rom: str | Path,
    at_frame: int,
    frames: int,
    *,
    buttons: ButtonSchedule = no_buttons,
    render_every: int = 0,
    boot: str | Path | None = None,
) -> tuple[int, Mismatch | None]:
    """State injection: PyBoy runs ``at_frame`` frames and saves its state; a fresh PyBoy
    loads it (``load_state``) and the core imports it (``load_pyboy_state``); both are compared
    at once and then run ``frames`` frames in lock-step. The buttons schedule applies from
    ``at_frame`` on (the source run has none)."""
    import io

    rom_file, boot_file = _files(rom, boot)
    state = pyboy_state_at(rom, at_frame, boot)
    pb = make_pyboy(rom_file, boot_file)
    gb = make_core(rom_file, boot_file)
    try:
        pb.load_state(io.BytesIO(state))
        gb.load_pyboy_state(state)
        bad = compare_frame(at_frame - 1, pb, gb, True)
        if bad is not None:
            return 0, bad
        return run_pair(pb, gb, at_frame, frames, buttons, render_every)
    finally:
        pb.stop(save=False)


#: Offsets in a PyBoy 2.8.1 save state (format 29) of a DMG with sound off: the LCD block
#: starts after the header (6 bytes), the CPU (27) and OAM DMA (12) blocks.
PYBOY_VRAM = 45
PYBOY_OAM = PYBOY_VRAM + 0x2000
PYBOY_LCD_REGS = PYBOY_OAM + 0xA0  # LCDC BGP OBP0 OBP1 STAT LY LYC SCY SCX WY WX


def scramble_video(state: bytes, seed: int) -> bytes:
    """A PyBoy state with random VRAM and OAM, objects on (8x8 or 8x16), the window on or off,
    random maps, tile data, scroll, window position and palettes: states the project's ROMs do
    not reach by themselves, for the renderer and the mode-3 timing. LCDC bit 7 (LCD on) and
    STAT/LY/LYC are kept, so the PPU's schedule stays consistent."""
    import random

    rng = random.Random(seed)
    s = bytearray(state)
    s[PYBOY_VRAM:PYBOY_VRAM + 0x2000] = rng.randbytes(0x2000)
    oam = bytearray(rng.randbytes(0xA0))
    for i in range(0, 0xA0, 4):  # keep many objects on screen lines
        oam[i] = rng.randrange(0, 176)
        oam[i + 1] = rng.randrange(0, 176)
    s[PYBOY_OAM:PYBOY_OAM + 0xA0] = oam
    lcdc = s[PYBOY_LCD_REGS]
    s[PYBOY_LCD_REGS] = (lcdc & 0x80) | 0x02 | (rng.randrange(256) & 0x7D)
    for k in (1, 2, 3, 7, 8, 9, 10):  # BGP OBP0 OBP1 SCY SCX WY WX
        s[PYBOY_LCD_REGS + k] = rng.randrange(256) if k < 9 else rng.randrange(0, 170)
    return bytes(s)


def lockstep_from_state_bytes(
    rom: str | Path, state: bytes, first_frame: int, frames: int, *, render_every: int = 1,
    buttons: ButtonSchedule = no_buttons, boot: str | Path | None = None,
) -> tuple[int, Mismatch | None]:
    """A fresh PyBoy loads ``state`` and the core imports it; then lock-step as above."""
    import io

    rom_file, boot_file = _files(rom, boot)
    pb = make_pyboy(rom_file, boot_file)
    gb = make_core(rom_file, boot_file)
    try:
        pb.load_state(io.BytesIO(state))
        gb.load_pyboy_state(state)
        return run_pair(pb, gb, first_frame, frames, buttons, render_every)
    finally:
        pb.stop(save=False)


def pyboy_state_at(rom: str | Path, frames: int, boot: str | Path | None = None) -> bytes:
    """PyBoy's save state after ``frames`` frames from power-on (the last one rendered)."""
    import io

    rom_file, boot_file = _files(rom, boot)
    pb = make_pyboy(rom_file, boot_file)
    try:
        pb.tick(frames, True)
        buf = io.BytesIO()
        pb.save_state(buf)
        return buf.getvalue()
    finally:
        pb.stop(save=False)
