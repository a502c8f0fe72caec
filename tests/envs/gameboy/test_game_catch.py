"""The project's game ROM, catch.s: its rules as its source header states them (the expected
values come from there, not from running the code), and PyBoy and the core in frame lock-step
on it (RAM, registers, screen every frame)."""

from __future__ import annotations

import random

import numpy as np

from envport.envs.gameboy.build_roms import rom_path
from envport.envs.gameboy.catch import CATCH
from envport.envs.gameboy.env import CoreGame, PyBoyGame
from envport.envs.gameboy.lockstep import lockstep

NOOP, LEFT, RIGHT, A, LEFT_A, RIGHT_A = range(6)


def ram(side: CoreGame | PyBoyGame, addr: int) -> int:
    return int(side._read(addr, addr + 1)[0])


def test_the_rom_is_built_with_its_title_and_licence() -> None:
    data = rom_path("catch").read_bytes()
    assert len(data) == 32 * 1024 and data[0x134:0x139] == b"CATCH" and data[0x147] == 0
    assert "Licence: MIT" in (rom_path("catch").parents[1] / "catch.s").read_text()


def test_start_paddle_moves_and_clamps() -> None:
    g = CoreGame(CATCH, frame_skip=1)
    g.reset(0)
    assert [ram(g, a) for a in (0xC002, 0xC003, 0xC004, 0xC005, 0xC006, 0xC009)] == [
        1, 0, 0, 3, 76, 1]  # playing, not over, score 0, 3 lives, paddle 76, speed 1
    g.step(RIGHT)
    assert ram(g, 0xC006) == 78  # 2 px a frame
    g.step(RIGHT_A)
    assert ram(g, 0xC006) == 82  # 4 px with A
    for _ in range(60):
        g.step(RIGHT_A)
    assert ram(g, 0xC006) == 144  # the right stop
    for _ in range(80):
        g.step(LEFT)
    assert ram(g, 0xC006) == 8  # the left stop


def test_idle_player_loses_three_lives_then_game_over() -> None:
    g = CoreGame(CATCH, frame_skip=4)
    g.reset(3)
    lives, total, t = [], 0.0, 0
    while True:
        _, reward, terminated, truncated, _ = g.step(NOOP)
        total += reward
        lives.append(ram(g, 0xC005))
        t += 1
        if terminated or truncated:
            break
    assert terminated and not truncated
    assert ram(g, 0xC003) == 1 and ram(g, 0xC002) == 2 and ram(g, 0xC005) == 0
    assert lives == sorted(lives, reverse=True) and {2, 1, 0} <= set(lives)
    # A fruit falls from y 24 to the paddle's line at 140, 1 px a frame (speed 1 below 8
    # points): 116 frames, the first one 115 after the reset (which ran the spawn frame). The
    # idle paddle may catch a fruit that falls onto it: 3 + score fruits in all.
    score = ram(g, 0xC004)
    assert score < 8 and total == score
    frames = 115 + 116 * (3 + score - 1)
    assert t == -(-frames // 4)


def test_waiting_on_the_title_changes_the_fruit() -> None:
    g = CoreGame(CATCH)
    columns = {int(g.reset(seed)[3] * 255) for seed in range(12)}
    assert len(columns) >= 6  # different waits, different LFSR states
    again = CoreGame(CATCH)
    assert np.array_equal(g.reset(5), again.reset(5))


def test_the_screen_shows_the_paddle_fruit_ground_and_lives() -> None:
    g = CoreGame(CATCH, frame_skip=1)
    g.reset(1)
    g.step(RIGHT)
    # The ROM writes OAM right after VBlank starts, so a frame shows the OAM of the one before.
    oam = g._read(0xFE00, 0xFE0C).astype(int)
    g.step(NOOP)
    screen = g._shades()
    paddle_x = oam[1] - 8  # OAM x -> screen x; the paddle's rows 2-5 at OAM y 144 -> 130-133
    assert oam[0] == 144 and oam[5] == oam[1] + 8
    assert (screen[130:134, paddle_x:paddle_x + 16] > 0).mean() > 0.8  # the paddle objects
    fruit_x, fruit_y = oam[9] - 8, oam[8] - 16
    assert (screen[fruit_y:fruit_y + 8, fruit_x:fruit_x + 8] > 0).sum() >= 20  # the fruit
    assert (screen[136:144] > 0).mean() > 0.5  # the brick ground, BG row 17
    assert (screen[1:7, 1:23] == 3).mean() > 0.5  # three life blocks, BG row 0


def test_pyboy_and_core_in_lockstep_on_a_played_game() -> None:
    rng = random.Random(4)
    events: dict[int, list[tuple[str, bool]]] = {90: [("start", True)], 91: [("start", False)]}
    for f in range(95, 1500, 6):
        events[f] = [(name, rng.random() < 0.4) for name in ("left", "right", "a")]
    frames, bad = lockstep("catch", 1500, buttons=lambda f: events.get(f, ()), render_every=1)
    assert bad is None, str(bad)
    assert frames == 1500
