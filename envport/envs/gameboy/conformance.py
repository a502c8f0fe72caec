"""The project's conformance ROMs, each run on the Rust core and on PyBoy 2.8.1 (sound off) in
frame lock-step (``lockstep.py``: registers, WRAM, VRAM, OAM, I/O, HRAM+IE after every frame,
the screen on rendered frames), plus each ROM's own verdict where the behaviour it measures is
documented (Pan Docs), read from the core's RAM.

Public conformance ROMs (blargg's, mooneye's, dmg-acid2) are not distributed by a package
registry this project can install from (PyPI, crates.io, npm, Debian; checked 2026-12-01), so
the project cannot ship or fetch them; ``--rom-file`` (below) runs any that a user has. These
are the project's own, MIT like the rest of envport:

- ``stat``: STAT interrupt sources (HBlank, VBlank, OAM, LYC, alone and combined) and LYC
  timing (LYC moved on inside the handler, LYC = 0, 144, 153), with a 16-cycle clock (TIMA);
  mode changes and the coincidence flag polled with interrupts off.
- ``prio``: background, window and object priorities (X order, OAM order, the 10-a-line limit,
  behind-BG, flips, palettes, 8x16, window position edges, signed tile data, BG off), a
  mid-frame window toggle and scroll change, the objects copied by OAM DMA from HRAM.
- ``dma``: OAM DMA from WRAM, ROM, VRAM and echo RAM (from HRAM, probing OAM and WRAM while
  it runs) and a DMA started mid-frame by a LYC interrupt.
- ``joypad``: the joypad interrupt over the four P1 selections, a cursor moved by the d-pad.
- ``mbc1big``, ``mbc1m``: a 1 MiB MBC1 with 32 KiB RAM (ROM bank bits 5-6, mode 1's banked
  0x0000 area, RAM banking), and the same ROM as PyBoy's MBC1M multicart.
- ``mbc1``, ``cputest``: the earlier ROMs (4-bank MBC1; CPU instructions, timer, HALT).

    python -m envport.envs.gameboy.conformance [--rom NAME ...] [--long]

Any other ROM file (``--rom-file PATH``, a file or a folder of ``.gb`` files; e.g. blargg's
test ROMs, which the project cannot ship) runs the same lock-step for ``--frames`` frames; the
report gives the text each emulator shows at the end, read from the background tile map as
ASCII (the convention of blargg's ROMs, whose font puts each character at its code's tile).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envport.envs.gameboy.lockstep import (
    ButtonSchedule,
    Mismatch,
    lockstep,
    make_core,
    make_pyboy,
    no_buttons,
    run_pair,
)

BUTTONS = ("a", "b", "start", "select", "up", "down", "left", "right")


def every_button(frame: int) -> Sequence[tuple[str, bool]]:
    """A fixed schedule touching every button: each pressed for 2 frames, then 1 free, with
    two buttons overlapping on a third of the presses."""
    name = BUTTONS[(frame // 3) % 8]
    if frame % 3 == 0:
        events = [(name, True)]
        if frame % 9 == 0:
            events.append((BUTTONS[(frame // 3 + 3) % 8], True))
        return events
    if frame % 3 == 2:
        return [(b, False) for b in BUTTONS]
    return []


#: per-frame verdicts start here: the boot ROM hands over during frame 65, and the ROMs clear
#: their WRAM first (before that it holds the power-on contents)
FIRST_CHECKED_FRAME = 70

Verdict = Callable[[Any], list[str]]  # an emulator after a frame -> what is wrong ([] = pass)


@dataclass(frozen=True)
class ConformanceRom:
    rom: str
    frames: int  # default run
    long_frames: int  # --long (and the tests' slow run)
    render_every: int = 1
    buttons: ButtonSchedule = no_buttons
    what: str = ""
    verdicts: tuple[tuple[str, Verdict], ...] = field(default_factory=tuple)
    verdict_every_frame: bool = False  # the verdicts after every frame, not only the last


# ------------------------------------------------------------------------------ verdicts
def mbc1_expected(multicart: bool) -> dict[int, int]:
    """What Pan Docs' MBC1 (and MBC1M) description gives the ROM's reads (roms/mbc1big.inc):
    banks of a 64-bank ROM, RAM banks of 32 KiB. Each bank N >= 1 starts with N; bank 0 with
    0x31."""
    banks = 64
    first = lambda bank: 0x31 if bank == 0 else bank  # noqa: E731
    out: dict[int, int] = {}
    addr = 0xC010
    for reg2 in range(4):
        for reg1 in (0x00, 0x01, 0x02, 0x0F, 0x10, 0x1F):
            if multicart:  # 4-bit reg1, reg2 at bits 4-5; 0 -> 1 on the whole 5-bit register
                low = 1 if reg1 == 0 else reg1 & 0x0F
                bank = (reg2 << 4) | low
            else:
                bank = (reg2 << 5) | (1 if reg1 == 0 else reg1)
            out[addr] = first(bank % banks)
            addr += 1
    shift = 4 if multicart else 5
    for reg2 in range(4):
        out[0xC030 + reg2] = first((reg2 << shift) % banks)
        out[0xC034 + reg2] = first(((reg2 << shift) | 1) % banks)
    for bank in range(4):  # RAM in mode 1: bank = reg2
        out[0xC040 + 2 * bank] = 0xB0 + bank
        out[0xC041 + 2 * bank] = 3 * bank
    out[0xC048] = 0xB0  # mode 0: always RAM bank 0
    out[0xC049] = 0xB3  # a mode-0 write went to bank 0, bank 3 kept its byte
    out[0xC04A] = 0xFF  # RAM disabled
    out[0xC050] = 1
    return out


def _memory_is(expected: dict[int, int]) -> Verdict:
    def check(gb: Any) -> list[str]:
        bad = []
        for addr, want in sorted(expected.items()):
            got = gb.read8(addr)
            if got != want:
                bad.append(f"{addr:#06x}: {got:#04x}, documented {want:#04x}")
        return bad
    return check


def stat_source_seen(enables: int) -> Verdict:
    """Every logged STAT interrupt (the last 64) taken while ``enables`` was the one source
    enabled shows that source active, as Pan Docs defines them, where the handler can still
    see it: it reads STAT about 64 cycles after the dispatch, while the LYC match lasts a line
    (456 cycles), VBlank ten lines and HBlank at least 87 cycles (204 on these lines: no
    objects). LYC: the coincidence flag; VBlank: mode 1; HBlank: mode 0 on a visible line."""
    def check(gb: Any) -> list[str]:
        log = gb.read(0xC100, 0xC200)
        bad = []
        for i in range(0, 256, 4):
            ly, stat = log[i], log[i + 1]
            if stat & 0x78 != enables:
                continue
            mode, coincidence = stat & 3, bool(stat & 4)
            ok = {0x40: coincidence, 0x10: mode == 1, 0x08: mode == 0 and ly <= 143}[enables]
            if not ok:
                bad.append(f"entry {i // 4}: STAT {stat:#04x} on LY {ly}")
        return bad
    return check


def oam_reads_ff_during_dma(gb: Any) -> list[str]:
    """Pan Docs: while OAM DMA runs, the CPU cannot read OAM (it reads 0xFF on DMG). The ROM
    reads OAM right after starting each DMA and again near its end (about 628 of its 640
    cycles); its log keeps the last 64 DMAs."""
    log = gb.read(0xC300, 0xC400)
    bad = []
    for i in range(0, 256, 4):
        entry = log[i:i + 4]
        if not any(entry):
            continue  # not written yet
        if entry[0] != 0xFF or entry[2] != 0xFF:
            bad.append(f"entry {i // 4}: OAM read {entry[0]:#04x} at the start, "
                       f"{entry[2]:#04x} near the end")
    return bad


def joypad_counts(gb: Any) -> list[str]:
    """The ROM counted interrupts and its log is consistent with its count."""
    count = gb.read8(0xC004)
    return [] if count > 0 else ["no joypad interrupt was taken"]


ROMS: dict[str, ConformanceRom] = {r.rom: r for r in (
    ConformanceRom("stat", 160, 1200, what="STAT sources, LYC timing, polled mode changes",
                   verdicts=(("LYC interrupt on a match", stat_source_seen(0x40)),
                             ("VBlank STAT interrupt in mode 1", stat_source_seen(0x10)),
                             ("HBlank STAT interrupt in mode 0", stat_source_seen(0x08))),
                   verdict_every_frame=True),
    ConformanceRom("prio", 140, 1024, what="BG/window/object priorities, OAM DMA, mid-frame "
                                           "changes (screen every frame)"),
    ConformanceRom("dma", 160, 1024, what="OAM DMA from WRAM, ROM, VRAM and echo RAM, bus "
                                          "probes while it runs, a mid-frame DMA",
                   verdicts=(("OAM reads 0xFF during DMA", oam_reads_ff_during_dma),),
                   verdict_every_frame=True),
    ConformanceRom("joypad", 200, 900, buttons=every_button,
                   what="joypad interrupt, P1 selections, a d-pad cursor",
                   verdicts=(("interrupts taken", joypad_counts),)),
    ConformanceRom("mbc1big", 12, 60, what="1 MiB MBC1, 32 KiB RAM",
                   verdicts=(("Pan Docs' MBC1 banks", _memory_is(mbc1_expected(False))),)),
    ConformanceRom("mbc1m", 12, 60, what="the same as PyBoy's MBC1M multicart",
                   verdicts=(("Pan Docs' MBC1M banks", _memory_is(mbc1_expected(True))),)),
    ConformanceRom("mbc1", 20, 60, what="64 KiB MBC1"),
    ConformanceRom("cputest", 400, 1250, render_every=25,
                   what="CPU instructions, timer/STAT interrupts, HALT"),
)}


@dataclass
class Result:
    rom: str
    frames: int
    mismatch: Mismatch | None
    #: per side ("core", "pyboy"): verdict -> the problems found ([] = as documented)
    verdicts: dict[str, dict[str, list[str]]]

    @property
    def passed(self) -> bool:
        """Identical to PyBoy every frame, and documented wherever PyBoy is (where PyBoy is
        not, the core must reproduce it, which the lock-step already shows)."""
        core, pyboy = self.verdicts.get("core", {}), self.verdicts.get("pyboy", {})
        return self.mismatch is None and all(
            not core[label] for label, problems in pyboy.items() if not problems)


def run(name: str, frames: int | None = None, long: bool = False) -> Result:
    """One ROM in lock-step for ``frames`` frames (default: its run, or its long run), then
    its verdicts on each emulator run the same way."""
    if name not in ROMS:
        raise ValueError(f"unknown conformance ROM {name!r}; known: {', '.join(ROMS)}")
    c = ROMS[name]
    n = frames if frames is not None else (c.long_frames if long else c.frames)
    done, bad = lockstep(c.rom, n, buttons=c.buttons, render_every=c.render_every)
    verdicts = {side: verdicts_of(c, n, side) for side in ("core", "pyboy")} if c.verdicts \
        else {}
    return Result(name, done, bad, verdicts)


class _PyBoyMemory:
    """PyBoy behind the core's ``read``/``read8``/``tick``/button calls, for the verdicts."""

    def __init__(self, rom: str) -> None:
        from envport.envs.gameboy.build_roms import rom_path
        from envport.envs.gameboy.lockstep import make_pyboy

        self.pb = make_pyboy(rom_path(rom), rom_path("boot"))
        self.button_press, self.button_release = self.pb.button_press, self.pb.button_release

    def tick(self, n: int, render: bool) -> None:
        self.pb.tick(n, render)

    def read(self, lo: int, hi: int) -> bytes:
        return bytes(self.pb.memory[lo:hi])

    def read8(self, addr: int) -> int:
        return int(self.pb.memory[addr])

    def close(self) -> None:
        self.pb.stop(save=False)


def verdicts_of(c: ConformanceRom, frames: int, side: str = "core") -> dict[str, list[str]]:
    """The ROM's verdicts on ``side`` ("core" or "pyboy") after ``frames`` frames (with its
    buttons), or after each frame from :data:`FIRST_CHECKED_FRAME` on
    (``verdict_every_frame``): the problems found, the first 20 of each."""
    from envport.envs.gameboy.build_roms import rom_path

    problems: dict[str, list[str]] = {label: [] for label, _ in c.verdicts}
    if not c.verdicts:
        return problems
    if side == "core":
        import envport_gb

        gb: Any = envport_gb.GameBoy(rom_path(c.rom).read_bytes(), rom_path("boot").read_bytes())
    elif side == "pyboy":
        gb = _PyBoyMemory(c.rom)
    else:
        raise ValueError(f"side must be core or pyboy, got {side!r}")
    try:
        for frame in range(frames):
            for button, pressed in c.buttons(frame):
                (gb.button_press if pressed else gb.button_release)(button)
            gb.tick(1, False)
            if (c.verdict_every_frame and frame >= FIRST_CHECKED_FRAME) or frame == frames - 1:
                for label, check in c.verdicts:
                    seen = problems[label]
                    seen.extend(f"frame {frame}: {p}" for p in check(gb) if len(seen) < 20)
    finally:
        if side == "pyboy":
            gb.close()
    return problems


# ------------------------------------------------------------------------- other ROM files
def screen_text(tiles: bytes) -> str:
    """The visible 20x18 tiles of a background map (0x9800-0x9BFF) as ASCII (other tiles as
    spaces), trailing blanks dropped: what a blargg ROM prints."""
    rows = ("".join(chr(t) if 32 <= t < 127 else " " for t in tiles[32 * r:32 * r + 20])
            for r in range(18))
    return "\n".join(row.rstrip() for row in rows).strip()


@dataclass
class FileResult:
    rom: Path
    frames: int
    mismatch: Mismatch | None
    text: dict[str, str]  # "core", "pyboy" -> screen_text at the end


def rom_files(paths: Sequence[str]) -> list[Path]:
    """The ``.gb`` files named (a folder: every ``.gb`` under it, sorted), each checked to
    exist before anything runs."""
    out: list[Path] = []
    for given in paths:
        p = Path(given)
        if p.is_dir():
            found = sorted(p.rglob("*.gb"))
            if not found:
                raise ValueError(f"--rom-file {given}: the folder has no .gb file")
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise ValueError(f"--rom-file {given}: no such file or folder")
    return out


def run_file(rom: Path, frames: int, render_every: int = 16) -> FileResult:
    """``rom`` on the core and on PyBoy in lock-step (state every frame, the screen every
    ``render_every`` frames), then what each shows. The core reads the header first, so a
    ROM it cannot run is refused before any frame."""
    from envport.envs.gameboy.build_roms import rom_path

    boot = rom_path("boot")
    gb = make_core(rom, boot)
    pb = make_pyboy(rom, boot)
    try:
        done, bad = run_pair(pb, gb, 0, frames, no_buttons, render_every)
        text = {"core": screen_text(bytes(gb.read(0x9800, 0x9C00))),
                "pyboy": screen_text(bytes(pb.memory[0x9800:0x9C00]))}
    finally:
        pb.stop(save=False)
    return FileResult(rom, done, bad, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rom", action="append", choices=sorted(ROMS),
                        help="run only this ROM (repeatable; default: all)")
    parser.add_argument("--long", action="store_true", help="the long runs")
    parser.add_argument("--rom-file", action="append", default=[], metavar="PATH",
                        help="another ROM file, or a folder of .gb files (repeatable)")
    parser.add_argument("--frames", type=int, default=4000,
                        help="frames for each --rom-file ROM (default 4000: about 67 s of "
                             "Game Boy time)")
    args = parser.parse_args(argv)
    if args.rom_file:
        if args.frames < 1:
            parser.error(f"--frames must be at least 1, got {args.frames}")
        try:
            files = rom_files(args.rom_file)
        except ValueError as e:
            parser.error(str(e))
        differ = 0
        for rom in files:
            f = run_file(rom, args.frames)
            status = "identical" if f.mismatch is None else f"DIFFERS: {f.mismatch}"
            print(f"{rom.name}: {f.frames} frames vs PyBoy: {status}")
            for side in ("core", "pyboy"):
                last = f.text[side].splitlines()[-1:] or ["(blank)"]
                print(f"    {side:5} shows: {last[0]}")
            differ += f.mismatch is not None or f.text["core"] != f.text["pyboy"]
        print(f"{len(files) - differ} identical to PyBoy, {differ} differ")
        return 1 if differ else 0
    failed = 0
    for name in args.rom or list(ROMS):
        r = run(name, long=args.long)
        status = "identical" if r.mismatch is None else f"DIFFERS: {r.mismatch}"
        print(f"{name:8} {r.frames:5} frames vs PyBoy: {status}  ({ROMS[name].what})")
        for side, verdicts in r.verdicts.items():
            for label, problems in verdicts.items():
                said = "as documented" if not problems else (
                    f"{len(problems)}{'+' if len(problems) >= 20 else ''} problems, first: "
                    + "; ".join(problems[:2]))
                print(f"{'':8} {side:5} {label}: {said}")
        failed += not r.passed
    print(f"{len(args.rom or ROMS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
