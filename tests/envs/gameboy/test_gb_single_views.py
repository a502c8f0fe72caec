"""The single emulator's zero-copy NumPy views (`GameBoy.shades_view/wram_view/hram_view`): backed
by the emulator's own buffers (the values change after a `tick` with no new call; a second call
returns an array over the same memory), read-only, equal to the copying API, alive as long as
they are, and following a loaded state (the machine is replaced in place)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from envport.envs.gameboy.build_roms import rom_path


def _core() -> Any:
    import envport_gb

    return envport_gb.GameBoy(rom_path("hello").read_bytes(), rom_path("boot").read_bytes())


def _copies(gb: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.asarray(gb.shades()), np.frombuffer(gb.read(0xC000, 0xE000), np.uint8),
            np.frombuffer(gb.read(0xFF80, 0xFFFF), np.uint8))


def test_single_views_follow_the_emulator_without_a_new_call() -> None:
    gb = _core()
    shades, wram, hram = gb.shades_view(), gb.wram_view(), gb.hram_view()
    assert (shades.shape, wram.shape, hram.shape) == ((144, 160), (0x2000,), (0x7F,))
    assert shades.dtype == wram.dtype == hram.dtype == np.uint8
    gb.tick(90, True)  # past the boot ROM and hello's set-up, screen drawn
    counter = int(wram[0])
    for step, button in enumerate(("a", "b", "a")):
        gb.button_press(button)
        for _ in range(5):
            gb.tick(1, True)
        for view, copy in zip((shades, wram, hram), _copies(gb), strict=True):
            assert np.array_equal(view, copy), step
        # hello.s: 0xC000 counts VBlanks (5 a step), 0xC001 shows the buttons (bit 0 A, 1 B).
        assert int(wram[0]) == (counter + 5 * (step + 1)) % 256
        assert int(wram[1]) & 0x03 == {"a": 1, "b": 2}[button]
        gb.button_release(button)
    # hello draws 8-pixel stripes of shades 0 and 3 (BGP 0xE4) once the LCD is on.
    assert set(np.unique(shades).tolist()) == {0, 3}


def test_single_views_share_memory_and_are_read_only() -> None:
    gb = _core()
    a = gb.wram_view()
    gb.tick(3, False)
    assert np.shares_memory(a, gb.wram_view())
    assert np.shares_memory(gb.shades_view(), gb.shades_view())
    assert not np.shares_memory(a, np.frombuffer(gb.read(0xC000, 0xE000), np.uint8))
    for view in (a, gb.shades_view(), gb.hram_view()):
        assert not view.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            view.flat[0] = 1


def test_single_views_keep_the_emulator_alive() -> None:
    gb = _core()
    gb.tick(100, True)
    shades, wram, hram = gb.shades_view(), gb.wram_view(), gb.hram_view()
    expected = _copies(gb)
    del gb
    for view, copy in zip((shades, wram, hram), expected, strict=True):
        assert np.array_equal(view, copy)


def test_single_views_follow_a_loaded_state() -> None:
    gb = _core()
    gb.tick(100, True)
    early = gb.save_state()
    early_copies = _copies(gb)
    wram, shades, hram = gb.wram_view(), gb.shades_view(), gb.hram_view()
    gb.button_press("a")
    gb.tick(7, True)
    assert not np.array_equal(wram, early_copies[1])  # 7 more VBlanks, A held
    gb.load_state(early)
    for view, copy in zip((shades, wram, hram), early_copies, strict=True):
        assert np.array_equal(view, copy)
