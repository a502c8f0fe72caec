"""L2's random register/RAM states for gb-catch (``randomize.py``): made on the core, exported in
PyBoy's format, loaded by PyBoy; injected into both sides as L2 injects states, one step of
every action leaves them identical (every compared field); the redraw really changed the
registers and RAM."""

from __future__ import annotations

import numpy as np

from envport.envs.gameboy.catch import CATCH, random_action
from envport.envs.gameboy.env import CoreGame, PyBoyGame
from envport.envs.gameboy.randomize import randomised_state

COMPARED = ("registers", "wram", "hram", "vram", "oam", "io", "screen", "t", "held")


def test_randomised_states_step_alike_on_both_sides() -> None:
    rng = np.random.default_rng(8181)
    ref, core = PyBoyGame(CATCH), CoreGame(CATCH)
    ref.reset(3)
    for _ in range(30):
        ref.step(random_action(rng))
    visited = ref.get_state()
    changed = 0
    for _ in range(3):
        state = randomised_state(CATCH, visited, rng)
        changed += int(not np.array_equal(state["registers"][:7], visited["registers"][:7])
                       and not np.array_equal(state["wram"], visited["wram"]))
        for action in range(len(CATCH.actions)):
            ref.set_state(state)
            core.set_state({k: v for k, v in state.items() if k != "core_state"})
            a, b = ref.step(action), core.step(action)
            assert np.array_equal(a[0], b[0]) and a[1:4] == b[1:4], action
            sa, sb = ref.get_state(False), core.get_state(False)
            for name in COMPARED:
                assert np.array_equal(sa[name], sb[name]), (name, action)
    assert changed == 3
    ref.close()
