"""The verifier's host layers (``EnvSpec.backend == "host"``) on gb-catch: the Rust core passes
against PyBoy, and host translations that are wrong in a known way are caught by the layer that
should catch them, with the field named. Needs the `gb` set-up (install.sh's default); skipped
with the reason only when ENVPORT_EXTRAS leaves `gb` out."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import numpy as np
import pytest

import envport
from envport.envs.gameboy.build_roms import setup_problems


@pytest.fixture(scope="module", autouse=True)
def gb_setup() -> None:
    missing = setup_problems()
    if missing and "gb" not in os.environ.get("ENVPORT_EXTRAS", "gb").split(","):
        pytest.skip(f"ENVPORT_EXTRAS leaves out `gb`: {missing[0]}")
    assert not missing, "; ".join(missing)


def catch_spec(make: Any) -> Any:
    base = envport.spec("gb-catch")
    return dataclasses.replace(base, make=make, verification=dataclasses.replace(
        base.verification, components={}))


def test_the_core_passes_every_host_layer() -> None:
    from envport.verify import verify

    report = verify("gb-catch", episodes=4, states=40, examples=2)
    assert report.passed, report.to_prompt()
    assert report.layers["rollout"].counts["episodes"] == 4
    assert report.layers["rollout"].counts["steps"] > 4 * 50  # whole games, not a few steps
    assert report.layers["interaction"].counts["states"] == 40
    assert report.layers["property"].counts["tests"] == 6  # 5 properties + the l1 component
    for layer in ("distribution", "rollout_distribution"):
        assert "not run for a host translation" in report.layers[layer].notes[0]


def test_a_wrong_button_map_is_caught_in_l2_and_l3() -> None:
    """A translation that maps A to B: the game ignores B, so the paddle moves at 2 px a frame
    instead of 4 when the action holds A."""
    from envport.envs.gameboy.catch import CATCH
    from envport.envs.gameboy.env import CoreGame
    from envport.verify import verify

    wrong = dataclasses.replace(CATCH, actions=tuple(
        tuple("b" if b == "a" else b for b in a) for a in CATCH.actions))
    spec = catch_spec(lambda: CoreGame(wrong))
    report = verify(spec, ("interaction", "rollout"), episodes=2, states=40)
    assert not report.layers["interaction"].passed
    assert not report.layers["rollout"].passed
    fields = {d.field for f in report.layers["rollout"].failures for d in f.diffs}
    assert {"state.wram", "state.held"} <= fields  # the joypad byte at 0xC001, the buttons
    assert report.layers["rollout"].failures[0].action in (3, 4, 5)  # an action holding A


class NoisyCore:
    """A core whose reward is sometimes off by one: not a function of its state."""

    def __init__(self) -> None:
        from envport.envs.gameboy.catch import CATCH
        from envport.envs.gameboy.env import CoreGame

        self.inner, self.rng = CoreGame(CATCH), np.random.default_rng(0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.inner.step(action)
        return obs, reward + float(self.rng.random() < 0.5), terminated, truncated, info


class ForgetfulCore(NoisyCore):
    """A core whose set_state forgets the step counter (truncation would come late)."""

    def step(self, action: Any) -> Any:
        return self.inner.step(action)

    def set_state(self, state: Any) -> None:
        t = self.inner.t
        self.inner.set_state(state)
        self.inner.t = t


@pytest.mark.parametrize(("make", "prop", "word"), [
    (NoisyCore, "step", "not deterministic"),
    (ForgetfulCore, "get_set_round_trip", "t"),
])
def test_l1_catches_a_broken_host_translation(make: Any, prop: str, word: str) -> None:
    from envport.verify.host import check_host_properties

    result = check_host_properties(catch_spec(make), examples=3, seed=1)
    assert not result.passed
    failed = {f.test_id: f.message for f in result.failures}
    assert f"property[{prop}]" in failed, failed
    assert word in failed[f"property[{prop}]"]


def test_a_host_spec_refuses_a_jax_env() -> None:
    from envport.verify import verify

    with pytest.raises(ValueError, match="host translation"):
        verify("gb-catch", ("property",), env=object())  # type: ignore[arg-type]


def test_backend_is_checked() -> None:
    spec = dataclasses.replace(envport.spec("gb-catch"), backend="cuda")
    with pytest.raises(ValueError, match="backend must be one of jax, host"):
        _ = spec.host
    assert envport.spec("cartpole").backend == "jax" and not envport.spec("cartpole").host


def test_mutate_refuses_a_host_translation_clearly() -> None:
    from envport.verify.mutation.execute import run_mutation

    with pytest.raises(ValueError, match="gb-catch is a host translation"):
        run_mutation("gb-catch")
