"""State injection (L2-style): the core imports PyBoy 2.8.1 save states and continues in
lock-step with a fresh PyBoy that loaded the same state, compared at once and after every frame
(screen included). Scrambled states put random VRAM/OAM, objects, window, maps and palettes on
screen, which the project's ROMs do not reach by themselves."""

from __future__ import annotations

import pytest

from envport.envs.gameboy.build_roms import rom_path
from envport.envs.gameboy.lockstep import (
    PYBOY_LCD_REGS,
    lockstep_from_pyboy_state,
    lockstep_from_state_bytes,
    pyboy_state_at,
    scramble_video,
)


@pytest.mark.parametrize(
    ("rom", "at"),
    [("hello", 50), ("spin", 90), ("mbc1", 5), ("cputest", 100), ("cputest", 1100)],
)
def test_pyboy_state_then_lockstep(rom: str, at: int) -> None:
    n, bad = lockstep_from_pyboy_state(rom, at, 60, render_every=1)
    assert bad is None, str(bad)
    assert n == 60


@pytest.mark.parametrize(("rom", "at"), [("hello", 30), ("cputest", 1100), ("spin", 60)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scrambled_video_state_then_lockstep(rom: str, at: int, seed: int) -> None:
    state = scramble_video(pyboy_state_at(rom, at), seed)
    assert state[PYBOY_LCD_REGS] & 0x82 == 0x82  # LCD and objects on
    n, bad = lockstep_from_state_bytes(rom, state, at, 20)
    assert bad is None, str(bad)
    assert n == 20


def test_objects_are_drawn_in_scrambled_states() -> None:
    """The scrambled comparison covers objects: switching them off changes the screen."""
    import envport_gb

    state = bytearray(scramble_video(pyboy_state_at("hello", 30), 1))
    with_objects = envport_gb.GameBoy(rom_path("hello").read_bytes())
    with_objects.load_pyboy_state(bytes(state))
    with_objects.tick(1, True)
    state[PYBOY_LCD_REGS] &= ~0x02
    without = envport_gb.GameBoy(rom_path("hello").read_bytes())
    without.load_pyboy_state(bytes(state))
    without.tick(1, True)
    assert (with_objects.shades() != without.shades()).sum() > 100


def test_foreign_or_cut_states_are_refused() -> None:
    import envport_gb

    gb = envport_gb.GameBoy(rom_path("hello").read_bytes())
    state = pyboy_state_at("hello", 3)
    with pytest.raises(ValueError, match="truncated"):
        gb.load_pyboy_state(state[:-10])
    with pytest.raises(ValueError, match="version 28"):
        gb.load_pyboy_state(bytes([28]) + state[1:])


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 23))
def test_scrambled_video_many(seed: int) -> None:
    rom, at = ("cputest", 400 + 35 * seed) if seed % 2 else ("hello", 20 + seed)
    state = scramble_video(pyboy_state_at(rom, at), seed)
    n, bad = lockstep_from_state_bytes(rom, state, at, 60)
    assert bad is None, str(bad)
    assert n == 60
