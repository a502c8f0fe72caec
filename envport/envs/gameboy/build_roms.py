"""Assembles the project's ROMs (``roms/*.s``) with sdcc's ``sdasgb``, ``sdldgb`` and
``makebin`` into ``roms/build/`` (git-ignored build outputs). A ROM is rebuilt only when its
source is newer than its output. Run at set-up time by install.sh:

    python -m envport.envs.gameboy.build_roms [--force]

Needs Debian's ``sdcc`` package (4.2.0 verified); install.sh installs it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROM_DIR = Path(__file__).resolve().parent / "roms"
BUILD_DIR = ROM_DIR / "build"
TOOLS = ("sdasgb", "sdldgb", "makebin")


@dataclass(frozen=True)
class Rom:
    """One ROM source and the header makebin writes for it (``makebin -Z``)."""

    name: str
    title: str = ""
    cartridge_type: int = 0  # 0x00 ROM only, 0x01 MBC1
    rom_banks: int = 2  # 16 KiB banks
    boot: bool = False  # a 256-byte boot ROM: no header, ``makebin -s 256``
    ram_banks: int = 0  # makebin -ya; the header's RAM size code is 2 (8 KiB) for one bank
    #: relocatable areas of banked code, placed at bank N's ROM offset by the linker
    banked_areas: tuple[str, ...] = ()

    @property
    def source(self) -> Path:
        return ROM_DIR / f"{self.name}.s"

    @property
    def output(self) -> Path:
        return BUILD_DIR / (f"{self.name}.bin" if self.boot else f"{self.name}.gb")


ROMS: dict[str, Rom] = {
    r.name: r
    for r in (
        Rom("boot", boot=True),
        Rom("hello", "HELLO"),
        Rom("spin", "SPIN"),
        Rom("cputest", "CPUTEST"),
        Rom("idle", "IDLE"),
        Rom("catch", "CATCH"),
        Rom("joypad", "JOYPAD"),
        Rom("stat", "STAT"),
        Rom("prio", "PRIO"),
        Rom("dma", "DMA"),
        Rom("mbc1big", "MBC1BIG", cartridge_type=0x02, rom_banks=64, ram_banks=4,
            banked_areas=tuple(f"_CODE_{n}" for n in range(1, 64))),
        Rom("mbc1m", "MBC1M", cartridge_type=0x02, rom_banks=64, ram_banks=4,
            banked_areas=tuple(f"_CODE_{n}" for n in range(1, 64))),
        Rom("mbc1", "MBC1", cartridge_type=0x02, rom_banks=4, ram_banks=1,
            banked_areas=("_CODE_1", "_CODE_2", "_CODE_3")),
    )
}


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


def setup_problems() -> list[str]:
    """What the Game Boy set-up (install.sh's extra ``gb``) lacks here: the core, PyBoy, sdcc."""
    import importlib.util

    return [why for absent, why in (
        (importlib.util.find_spec("envport_gb") is None,
         "the Game Boy core is not built: run install.sh"),
        (importlib.util.find_spec("pyboy") is None,
         "PyBoy (extra `gb`) is not installed: run install.sh"),
        (bool(missing_tools()), "sdcc is not installed (install.sh installs it): cannot "
                                "assemble the ROMs"),
    ) if absent]


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        output = done.stdout + done.stderr
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{output}")


def build(rom: Rom, force: bool = False) -> Path:
    """Assembles one ROM unless its output is newer than its source; returns the output."""
    out = rom.output
    # a shared include (roms/*.inc) counts as part of every source
    newest = max(p.stat().st_mtime for p in (rom.source, *ROM_DIR.glob("*.inc")))
    if not force and out.is_file() and out.stat().st_mtime >= newest:
        return out
    missing = missing_tools()
    if missing:
        raise RuntimeError(
            f"the Game Boy ROMs are assembled with sdcc, and {', '.join(missing)} "
            "is not on PATH: install Debian's sdcc package ('apt-get install sdcc')"
        )
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        rel = Path(tmp) / f"{rom.name}.rel"
        ihx = Path(tmp) / f"{rom.name}.ihx"
        _run(["sdasgb", f"-I{ROM_DIR}", "-o", str(rel), str(rom.source)])
        places = []
        for area in rom.banked_areas:
            bank = int(area.rsplit("_", 1)[1])
            places += ["-b", f"{area}=0x{bank * 0x10000 + 0x4000:X}"]
        _run(["sdldgb", "-i", *places, str(ihx), str(rel)])
        tmp_out = Path(tmp) / out.name
        if rom.boot:
            _run(["makebin", "-s", "256", str(ihx), str(tmp_out)])
        else:
            header = ["-Z", "-yN", "-yn", rom.title, "-yt", str(rom.cartridge_type)]
            header += ["-yo", str(rom.rom_banks), "-ya", str(rom.ram_banks)]
            _run(["makebin", *header, str(ihx), str(tmp_out)])
        shutil.move(str(tmp_out), out)
    return out


def rom_path(name: str) -> Path:
    """The built ROM ``name`` (building it if needed)."""
    if name not in ROMS:
        raise ValueError(f"unknown Game Boy ROM {name!r}; the project's ROMs are {sorted(ROMS)}")
    return build(ROMS[name])


def build_all(force: bool = False) -> list[Path]:
    return [build(r, force) for r in ROMS.values()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    args = parser.parse_args(argv)
    for path in build_all(args.force):
        print(path.relative_to(ROM_DIR.parent))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
