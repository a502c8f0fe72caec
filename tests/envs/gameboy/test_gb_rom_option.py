"""``gb-catch -o rom=NAME``: the environment on the CPU test ROM and on the joypad ROM, verified
through the same host layers as the game."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import envport
from envport.envs.gameboy.catch import CPUTEST, GAMES, JOYPAD


def test_the_rom_option_builds_that_roms_environment() -> None:
    base = envport.spec("gb-catch")
    spec = base.with_options(rom="cputest")
    assert spec.mode_name == "gb-catch[rom=cputest]"
    assert "roms/cputest.s" in spec.reference
    ref: Any = spec.make_reference()
    tr: Any = spec.make()
    assert ref.game is CPUTEST and tr.game is CPUTEST
    assert tr.action_space.n == len(CPUTEST.actions)
    ref.close()
    assert {"rom": "cputest"} in [dict(m) for m in base.modes]
    assert {"rom": "joypad"} in [dict(m) for m in base.modes]


def test_a_bad_rom_is_refused_naming_the_option() -> None:
    with pytest.raises(ValueError, match="option rom='nope': expected one of catch, cputest"):
        envport.spec("gb-catch").with_options(rom="nope")


def test_a_cputest_episode_runs_the_rom_to_its_end() -> None:
    """cputest.s's stage byte goes 1, 2, 3, then 0xFF when every stage is done (about frame
    1169 from power-on): the episode ends there, its rewards (stage advances) summing to
    0xFF - 1."""
    tr: Any = envport.spec("gb-catch").with_options(rom="cputest").make()
    obs = tr.reset(3)
    assert obs[0] * 255 == pytest.approx(1)  # stage 1 after the reset
    total, steps, terminated = 0.0, 0, False
    while not terminated:
        obs, reward, terminated, truncated, _ = tr.step(0)
        total += reward
        steps += 1
        assert not truncated and steps < 400
    assert total == 0xFF - 1
    assert obs[0] * 255 == pytest.approx(0xFF)
    frames = 66 + CPUTEST.wait(3) + 2 + 4 * steps
    assert 1169 <= frames < 1169 + 4


@pytest.mark.parametrize("rom", ["cputest", "joypad"])
def test_the_host_layers_pass_on_the_rom(rom: str) -> None:
    from envport.verify import verify

    report = verify("gb-catch", ("interaction", "rollout"), episodes=2, states=20, examples=2,
                    options={"rom": rom}, seed=5)
    assert report.passed, report.to_prompt()
    assert report.layers["rollout"].counts["episodes"] == 2
    assert report.layers["rollout"].counts["steps"] > 2 * 100  # whole runs, not a few steps


def test_joypad_rewards_are_its_interrupts() -> None:
    """joypad.s counts one interrupt a press (0xC004, the score): a step that presses after a
    release earns 1, holding earns nothing; the episode ends at the ROM's frame 768."""
    tr: Any = envport.spec("gb-catch").with_options(rom="joypad").make()
    tr.reset(0)
    press = JOYPAD.actions.index(("b",))
    rewards = []
    for action in (press, 0, press, press, 0):
        rewards.append(tr.step(action)[1])
    assert rewards == [1.0, 0.0, 1.0, 0.0, 0.0]
    terminated, steps = False, 5
    while not terminated:
        _, _, terminated, truncated, _ = tr.step(0)
        steps += 1
        assert not truncated
    assert 66 + JOYPAD.wait(0) + 2 + 4 * steps >= 768
    assert set(GAMES) == {"catch", "cputest", "joypad"}
    assert np.isfinite(rewards).all()


def test_the_joypad_scripted_policy_reaches_the_cursor_clamps() -> None:
    """joypad.s clamps the cursor at x 8..160, y 16..152: the scripted policy (L2 and L3's
    second kind of episode) drives it into x = 160 and y = 16 and it stays there."""
    from envport.envs.gameboy.catch import joypad_scripted_action

    spec = envport.spec("gb-catch").with_options(rom="joypad")
    assert spec.verification.scripted_policy is joypad_scripted_action
    tr: Any = spec.make()
    obs, rng = tr.reset(1), np.random.default_rng(0)
    xs, ys = [], []
    for _ in range(120):
        obs = tr.step(joypad_scripted_action(obs, rng))[0]
        xs.append(tr.gb.read8(0xC009))
        ys.append(tr.gb.read8(0xC00A))
    assert max(xs) == 160 and min(ys) == 16
    assert all(8 <= x <= 160 for x in xs) and all(16 <= y <= 152 for y in ys)
