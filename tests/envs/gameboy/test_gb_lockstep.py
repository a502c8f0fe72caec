"""Frame lock-step against PyBoy 2.8.1 (sound off): the project's ROMs on both from power-on
through the same boot ROM, registers, WRAM, VRAM, OAM, I/O, HRAM and IE compared after every
frame, the screen on rendered frames."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from envport.envs.gameboy.build_roms import rom_path
from envport.envs.gameboy.lockstep import lockstep


def _buttons(frame: int) -> Sequence[tuple[str, bool]]:
    """A fixed schedule touching every button, presses and releases on different frames."""
    names = ("a", "b", "start", "select", "up", "down", "left", "right")
    name = names[(frame // 5) % 8]
    if frame % 5 == 1:
        return [(name, True)]
    if frame % 5 == 3:
        return [(name, False)]
    return []


def test_hello_every_frame_rendered_with_buttons() -> None:
    n, bad = lockstep("hello", 300, buttons=_buttons, render_every=1)
    assert bad is None, str(bad)
    assert n == 300


def test_spin_cpu_bound() -> None:
    n, bad = lockstep("spin", 300, render_every=10)
    assert bad is None, str(bad)
    assert n == 300


def test_cputest_to_completion() -> None:
    # The ROM finishes its stages after 1169 frames in PyBoy; run past that.
    n, bad = lockstep("cputest", 1250, render_every=50)
    assert bad is None, str(bad)
    assert n == 1250


def test_cputest_reached_its_last_stage() -> None:
    """The lock-step above is only meaningful if the ROM ran all its tests: check the stage
    byte in the core after the same number of frames."""
    import envport_gb

    gb = envport_gb.GameBoy(rom_path("cputest").read_bytes(), rom_path("boot").read_bytes())
    gb.tick(1250, False)
    assert gb.read8(0xC001) == 0xFF
    assert gb.read8(0xC004) > 0  # timer interrupts were taken
    assert gb.read8(0xC005) > 0  # STAT (LYC) interrupts were taken


def test_hello_through_pyboys_own_boot_rom() -> None:
    """PyBoy's built-in boot ROM (read from the installed package, not shipped here) also runs
    identically: it takes 64 frames to reach the cartridge."""
    import pyboy

    boot = Path(os.path.dirname(pyboy.__file__)) / "core" / "bootrom_dmg.bin"
    n, bad = lockstep("hello", 120, boot=boot, render_every=1)
    assert bad is None, str(bad)
    assert n == 120


@pytest.mark.slow
def test_cputest_long_with_buttons_and_screens() -> None:
    n, bad = lockstep("cputest", 3000, buttons=_buttons, render_every=1)
    assert bad is None, str(bad)
    assert n == 3000


def test_mbc1_banks_and_ram() -> None:
    n, bad = lockstep("mbc1", 60, render_every=1)
    assert bad is None, str(bad)
    assert n == 60


def test_mbc1_results_are_the_documented_ones() -> None:
    """MBC1 as documented (Pan Docs): bank register 0 selects bank 1, bank numbers wrap at the
    ROM's 4 banks, mode 1 maps bank (reg2 << 5) mod 4 = 0 at 0x0000, disabled RAM reads 0xFF."""
    import envport_gb

    gb = envport_gb.GameBoy(rom_path("mbc1").read_bytes(), rom_path("boot").read_bytes())
    gb.tick(10, False)
    assert gb.read8(0xC050) == 1
    first_bank = [1 if v == 0 else (v % 4) for v in range(0x20)]
    expect = bytes(0x31 if b == 0 else 0xA0 + b for b in first_bank)
    assert gb.read(0xC010, 0xC030) == expect
    assert gb.read(0xC030, 0xC034) == bytes([0x31] * 4)
    assert gb.read(0xC040, 0xC043) == bytes([0xFF, 0x5A, 0xFF])
