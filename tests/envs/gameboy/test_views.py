"""The batch's zero-copy NumPy views (`VecGameBoy.shades_view/wram_view/hram_view`): they are
backed by the emulators' own buffers (the values change after a `tick` with no new call, and a
second call returns an array over the same memory), read-only, equal to the copying API, and
they keep the batch alive."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from envport.envs.gameboy.build_roms import rom_path

# hello.s: WRAM 0xC000 is a frame counter (the VBlank handler increments it), 0xC001 the
# joypad byte (bit 0 A, bit 1 B; buttons mask bit 4 = "a", bit 5 = "b" in BUTTON_NAMES order).
MASKS = [0x00, 0x10, 0x20, 0x30]


def _batch() -> Any:
    import envport_gb

    rom = rom_path("hello").read_bytes()
    return envport_gb.VecGameBoy(rom, len(MASKS), rom_path("boot").read_bytes(), threads=2)


def _copies(vec: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return vec.shades(), vec.read(0xC000, 0xE000), vec.read(0xFF80, 0xFFFF)


def test_views_follow_the_emulators_without_a_new_call() -> None:
    vec = _batch()
    shades, wram, hram = vec.shades_view(), vec.wram_view(), vec.hram_view()
    n = len(MASKS)
    assert (shades.shape, wram.shape, hram.shape) == ((n, 144, 160), (n, 0x2000), (n, 0x7F))
    assert shades.dtype == wram.dtype == hram.dtype == np.uint8
    vec.tick(90, True)  # past the boot ROM and hello's set-up, screen drawn
    counter = int(wram[0, 0])
    for step in range(3):
        vec.tick(5, True, buttons=MASKS)
        for view, copy in zip((shades, wram, hram), _copies(vec), strict=True):
            assert np.array_equal(view, copy), step
        # The frame counter moved on in the view taken before the ticks: 5 VBlanks a tick.
        assert int(wram[0, 0]) == (counter + 5 * (step + 1)) % 256
    # Each row is its own emulator: the joypad byte shows that emulator's buttons.
    assert [int(b) & 0x03 for b in wram[:, 1]] == [0, 1, 2, 3]
    # hello draws 8-pixel stripes of shades 0 and 3 (BGP 0xE4) once the LCD is on.
    assert set(np.unique(shades[0]).tolist()) == {0, 3}


def test_views_share_memory_and_are_read_only() -> None:
    vec = _batch()
    a = vec.wram_view()
    vec.tick(3, False)
    b = vec.wram_view()
    assert np.shares_memory(a, b)
    assert np.shares_memory(vec.shades_view(), vec.shades_view())
    assert not np.shares_memory(a, vec.read(0xC000, 0xE000))  # the copying API copies
    for view in (a, vec.shades_view(), vec.hram_view()):
        assert not view.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            view[0, 0] = 1


def test_views_keep_the_batch_alive() -> None:
    vec = _batch()
    vec.tick(100, True, buttons=MASKS)
    shades, wram = vec.shades_view(), vec.wram_view()
    expected = (vec.shades(), vec.read(0xC000, 0xE000))
    del vec
    assert np.array_equal(shades, expected[0])
    assert np.array_equal(wram, expected[1])


def test_views_follow_a_loaded_state() -> None:
    vec = _batch()
    vec.tick(100, True, buttons=MASKS)
    wram, shades = vec.wram_view(), vec.shades_view()
    assert not np.array_equal(wram[0], wram[3])  # different buttons, different joypad byte
    vec.load_state(3, vec.save_state(0))
    assert np.array_equal(wram[3], wram[0])
    assert np.array_equal(shades[3], shades[0])
    vec.tick(2, True, buttons=[MASKS[0]] * len(MASKS))
    assert np.array_equal(wram[3], wram[0])
    assert np.array_equal(wram, vec.read(0xC000, 0xE000))
