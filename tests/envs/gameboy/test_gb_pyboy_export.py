"""The core's state exported in PyBoy 2.8.1's save-state format (`GameBoy.save_pyboy_state`):

- after the same frames from power-on, the export is byte for byte the state PyBoy itself saves;
- PyBoy loading the export and the core running on stay identical (registers, RAM regions,
  screen) for further frames, also from randomised registers and RAM, which only this direction
  (core -> PyBoy) can screen for PyBoy's hangs: the core runs the frames first and reports an
  unused opcode where PyBoy would hang;
- a machine the format cannot carry (the window on: PyBoy's load resets its line counter) is
  refused by name unless ``strict=False``."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

from envport.envs.gameboy.build_roms import rom_path
from envport.envs.gameboy.lockstep import compare_frame, make_core, make_pyboy
from envport.envs.gameboy.randomize import randomise


def _pair(rom: str) -> tuple[Any, Any]:
    return make_pyboy(rom_path(rom), rom_path("boot")), make_core(rom_path(rom), rom_path("boot"))


def _buttons(frame: int) -> int:
    # catch: Start at frame 120 starts the game; then Left/Right/A in turn (BUTTON_NAMES bits).
    if frame == 120:
        return 0x80
    return (0x01, 0x02, 0x11, 0x00)[(frame // 23) % 4] if frame > 130 else 0


def _run(pb: Any, gb: Any, first: int, frames: int) -> None:
    import envport_gb

    for f in range(first, first + frames):
        mask, before = _buttons(f), _buttons(f - 1) if f > 0 else 0
        for i, name in enumerate(envport_gb.BUTTON_NAMES):  # PyBoy is told the changes
            if (mask ^ before) >> i & 1:
                (pb.button_press if mask >> i & 1 else pb.button_release)(name)
        gb.set_buttons(mask)
        pb.tick(1, f % 2 == 0)
        gb.tick(1, f % 2 == 0)


def _pyboy_bytes(pb: Any) -> bytes:
    f = io.BytesIO()
    pb.save_state(f)
    return f.getvalue()


@pytest.mark.parametrize("rom,frames", [("hello", 90), ("catch", 400), ("mbc1", 20),
                                        ("cputest", 1100)])
def test_export_is_the_state_pyboy_saves(rom: str, frames: int) -> None:
    pb, gb = _pair(rom)
    _run(pb, gb, 0, frames)
    want = _pyboy_bytes(pb)
    got = gb.save_pyboy_state()
    pb.stop(save=False)
    assert len(got) == len(want)
    at = [i for i in range(len(want)) if got[i] != want[i]]
    assert not at, f"{len(at)} bytes differ, first at {at[:8]}"


def _follow(pb: Any, gb: Any, first: int, frames: int) -> None:
    for f in range(first, first + frames):
        _run(pb, gb, f, 1)
        bad = compare_frame(f, pb, gb, screen=f % 2 == 0)
        assert bad is None, str(bad)


@pytest.mark.parametrize("rom,frames", [("catch", 300), ("cputest", 1100)])
def test_pyboy_loading_the_export_runs_on_as_the_core(rom: str, frames: int) -> None:
    import envport_gb

    gb = envport_gb.GameBoy(rom_path(rom).read_bytes(), rom_path("boot").read_bytes())
    for f in range(frames):
        gb.set_buttons(_buttons(f))
        gb.tick(1, f % 2 == 0)
    pb = make_pyboy(rom_path(rom), rom_path("boot"))
    pb.load_state(io.BytesIO(gb.save_pyboy_state()))
    assert compare_frame(frames, pb, gb, screen=True) is None  # the loaded screen too
    _follow(pb, gb, frames, 60)
    pb.stop(save=False)


@pytest.mark.parametrize("rom", ["hello", "catch"])
def test_randomised_registers_and_ram_go_from_the_core_to_pyboy(rom: str) -> None:
    import envport_gb

    rng = np.random.default_rng(8181)
    tried = ran = 0
    while ran < 3:
        tried += 1
        assert tried <= 20, f"{tried} random states, {ran} ran 30 frames on the core"
        gb = envport_gb.GameBoy(rom_path(rom).read_bytes(), rom_path("boot").read_bytes())
        start = int(rng.integers(100, 300))
        for f in range(start):
            gb.set_buttons(_buttons(f))
            gb.tick(1, True)
        randomise(gb, rng)
        exported = gb.save_pyboy_state()
        # The core goes first: a state that reaches an unused opcode (PyBoy would hang) is
        # dropped; the others are run again from the export on both.
        probe = envport_gb.GameBoy(rom_path(rom).read_bytes(), rom_path("boot").read_bytes())
        probe.load_pyboy_state(exported)
        try:
            probe.tick(30, False)
        except RuntimeError:
            continue
        ran += 1
        pb = make_pyboy(rom_path(rom), rom_path("boot"))
        pb.load_state(io.BytesIO(exported))
        assert compare_frame(start, pb, gb, screen=True) is None
        _follow(pb, gb, start, 30)
        pb.stop(save=False)


def test_a_machine_the_format_cannot_carry_is_refused_by_name() -> None:
    import envport_gb

    gb = envport_gb.GameBoy(rom_path("hello").read_bytes(), rom_path("boot").read_bytes())
    gb.tick(90, True)
    assert gb.pyboy_state_gaps() == []
    lcdc = gb.read8(0xFF40)
    gb.write(0xFF40, bytes([lcdc | 0x20]))  # the window on, after rendered frames
    assert gb.pyboy_state_gaps() == ["window line counter"]
    with pytest.raises(ValueError, match="window line counter"):
        gb.save_pyboy_state()
    other = envport_gb.GameBoy(rom_path("hello").read_bytes(), rom_path("boot").read_bytes())
    other.load_pyboy_state(gb.save_pyboy_state(strict=False))  # exported anyway when asked
    assert other.registers() == gb.registers() and other.read8(0xFF40) == lcdc | 0x20
