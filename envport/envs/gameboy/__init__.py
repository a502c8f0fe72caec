"""Game Boy (DMG): envport's Rust emulator core (``rust/envport-gb``, Python module
``envport_gb``), verified against PyBoy 2.8.1 with sound emulation off, on ROMs the project
writes in SM83 assembly (``roms/*.s``) and assembles with Debian's sdcc at set-up time
(:mod:`envport.envs.gameboy.build_roms`). The registered environment is ``gb-catch``, the
project's game ROM ``roms/catch.s`` (:mod:`envport.envs.gameboy.catch`), a host translation
(the core) verified against PyBoy. See README.md in this folder.
"""

from envport.envs.gameboy.catch import SPEC

__all__ = ["SPEC"]
