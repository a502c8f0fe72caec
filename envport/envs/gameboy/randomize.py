"""Random register and RAM states for L2, made on the core and given to PyBoy in its own format.

A state visited by PyBoy is loaded into the core, its registers A F B C D E HL (not SP or PC:
the code and its stack stay where they are) and a quarter of its WRAM, HRAM and IE bytes (not the
16 bytes from SP, where return addresses are) are redrawn, and the core exports the machine as a
PyBoy save state (``GameBoy.save_pyboy_state``, byte-identical to what PyBoy saves for the same
machine). Random registers and RAM can send the CPU into data, and PyBoy hangs on the 11 unused
opcodes; the core reports them instead, so each drawn state is first run on the core, every
action for two steps, and a state that reaches one is drawn again. The state returned is read
back from PyBoy after it loaded the export, so every compared field is PyBoy's.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from envport.envs.gameboy.env import REGIONS, CoreGame, Game, PyBoyGame, _files

STACK_KEPT = 16  # bytes from SP left as they are (return addresses)
SHARE = 4  # one RAM byte in SHARE is redrawn


@cache
def _sides(game: Game) -> tuple[CoreGame, PyBoyGame]:
    return CoreGame(game), PyBoyGame(game)


def randomise(gb: Any, rng: np.random.Generator) -> None:
    """Redraws the registers and RAM of the core ``gb`` in place (see the module's text)."""
    sp, pc = (int(v) for v in gb.registers()[7:])
    regs = [int(v) for v in rng.integers(0, 256, 6)]
    regs[1] &= 0xF0  # F's low nibble does not exist
    gb.set_registers(*regs, int(rng.integers(0, 0x10000)), sp, pc)
    for name, lo, hi in REGIONS:
        if name not in ("wram", "hram"):
            continue
        data = bytearray(gb.read(lo, hi))
        for i in rng.choice(hi - lo, size=(hi - lo) // SHARE, replace=False):
            if not 0 <= lo + int(i) - sp < STACK_KEPT:
                data[int(i)] = int(rng.integers(0, 256))
        gb.write(lo, bytes(data))


def _runs_on(game: Game, exported: bytes, frames: int) -> bool:
    """Whether the core runs ``frames`` frames from ``exported`` under every action without
    reaching an unused opcode."""
    import envport_gb

    rom, boot = _files(game.rom)
    for mask in game.masks:
        probe = envport_gb.GameBoy(rom, boot)
        probe.load_pyboy_state(exported)
        probe.set_buttons(int(mask))
        try:
            probe.tick(frames, False)
        except RuntimeError:
            return False
    return True


def randomised_state(game: Game, state: Any, rng: np.random.Generator, frame_skip: int = 4,
                     tries: int = 8) -> Any:
    """``state`` (a reference-form state with its ``pyboy_state``) with random registers and
    RAM, as PyBoy has it after loading the core's export; ``state`` itself when ``tries`` draws
    all reach an unused opcode."""
    core, pyboy = _sides(game)
    for _ in range(tries):
        core.set_state(state)
        randomise(core.gb, rng)
        if core.gb.pyboy_state_gaps():
            continue  # not a machine PyBoy's format carries (e.g. the window on)
        exported = bytes(core.gb.save_pyboy_state())
        if not _runs_on(game, exported, 2 * frame_skip):
            continue
        pyboy.set_state({"pyboy_state": np.frombuffer(exported, np.uint8), "t": state["t"],
                         "held": state["held"]})
        return pyboy.get_state()
    return state
