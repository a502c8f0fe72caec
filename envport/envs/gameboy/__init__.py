"""Game Boy (DMG): envport's Rust emulator core (``rust/envport-gb``, Python module
``envport_gb``), verified against PyBoy 2.8.1 with sound emulation off, on ROMs the project
writes in SM83 assembly (``roms/*.s``) and assembles with Debian's sdcc at set-up time
(:mod:`envport.envs.gameboy.build_roms`). No environment is registered yet (no ``SPEC``): the
game ROM and its RL wrapper are a later slice. See README.md in this folder.
"""
