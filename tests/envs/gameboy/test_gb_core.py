"""The Rust core's Python surface, on its own: ROM checks, state round trips, the batch."""

from __future__ import annotations

import numpy as np
import pytest

from envport.envs.gameboy.build_roms import rom_path


def _core(name: str):  # type: ignore[no-untyped-def]
    import envport_gb

    return envport_gb.GameBoy(rom_path(name).read_bytes(), rom_path("boot").read_bytes())


def test_builtin_boot_rom_is_the_assembled_boot_s() -> None:
    import envport_gb

    assert envport_gb.project_boot_rom() == rom_path("boot").read_bytes()


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({0x14D: None}, "header checksum"),
        ({0x147: 0x13}, "cartridge type 0x13"),
    ],
)
def test_bad_rom_header_is_refused(patch: dict[int, int | None], message: str) -> None:
    import envport_gb

    rom = bytearray(rom_path("hello").read_bytes())
    for addr, value in patch.items():
        rom[addr] = (rom[addr] ^ 0xFF) if value is None else value
    if 0x147 in patch:  # keep the checksum right so that the type is what is refused
        x = 0
        for b in rom[0x134:0x14D]:
            x = (x - b - 1) & 0xFF
        rom[0x14D] = x
    with pytest.raises(ValueError, match=message):
        envport_gb.GameBoy(bytes(rom))


def test_rom_size_must_be_a_multiple_of_16_kib() -> None:
    import envport_gb

    with pytest.raises(ValueError, match="multiple of 16 KiB"):
        envport_gb.GameBoy(rom_path("hello").read_bytes()[:20000])


def test_unknown_button_is_refused() -> None:
    gb = _core("hello")
    with pytest.raises(ValueError, match='unknown button "jump"'):
        gb.button_press("jump")


def test_hello_counts_frames_and_reads_buttons() -> None:
    gb = _core("hello")
    gb.tick(10, False)
    before = gb.read8(0xC000)
    gb.tick(5, False)
    assert gb.read8(0xC000) == (before + 5) & 0xFF
    gb.button_press("down")
    gb.tick(2, False)
    assert gb.read8(0xC001) == 0x80
    gb.button_release("down")
    gb.button_press("a")
    gb.tick(2, True)
    assert gb.read8(0xC001) == 0x01
    screen = gb.screen()
    assert screen.shape == (144, 160, 4)
    # 8-pixel stripes, black and white (the ROM's BG map alternates tiles 0 and 1)
    assert set(map(tuple, screen.reshape(-1, 4).tolist())) == {(0, 0, 0, 255), (255, 255, 255, 255)}


def test_unused_opcode_raises_instead_of_hanging() -> None:
    gb = _core("idle")
    gb.tick(3, False)
    gb.write(0xC100, bytes([0xD3]))
    a, f, b, c, d, e, hl, sp, _ = gb.registers()
    gb.set_registers(a, f, b, c, d, e, hl, sp, 0xC100)
    with pytest.raises(RuntimeError, match="opcode 0xD3 at PC=0xC100"):
        gb.tick(1, False)


def test_save_and_load_reproduce_the_next_frames() -> None:
    gb = _core("cputest")
    gb.tick(40, False)
    state = gb.save_state()
    gb.tick(30, True)
    after = (gb.registers(), gb.read(0xC000, 0xE000), gb.screen().tobytes())
    other = _core("cputest")
    other.load_state(state)
    other.tick(30, True)
    assert (other.registers(), other.read(0xC000, 0xE000), other.screen().tobytes()) == after
    with pytest.raises(ValueError, match="bad state"):
        other.load_state(state[:-1])


def test_batch_equals_single_emulators_with_their_own_buttons() -> None:
    import envport_gb

    rom = rom_path("hello").read_bytes()
    n = 4
    vec = envport_gb.VecGameBoy(rom, n, threads=2)
    singles = [envport_gb.GameBoy(rom) for _ in range(n)]
    names = envport_gb.BUTTON_NAMES
    for step in range(12):
        masks = [(1 << ((i + step) % 8)) if (i + step) % 3 else 0 for i in range(n)]
        vec.tick(1, True, masks)
        for g, m in zip(singles, masks, strict=True):
            for bit, name in enumerate(names):
                (g.button_press if m >> bit & 1 else g.button_release)(name)
            g.tick(1, True)
    ram = vec.read(0xC000, 0xC002)
    assert ram.shape == (n, 2)
    assert [bytes(r) for r in ram] == [g.read(0xC000, 0xC002) for g in singles]
    assert np.array_equal(vec.registers(), np.array([g.registers() for g in singles]))
    assert np.array_equal(vec.shades(), np.stack([g.shades() for g in singles]))
    # the masks differ per emulator, so the joypad bytes must too
    assert len({bytes(r) for r in ram}) > 1
