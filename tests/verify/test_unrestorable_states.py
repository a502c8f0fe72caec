"""States a reference cannot take back (Showdown's ``fromJSON`` of its own ``toJSON`` of some
transformed Pokemon): L2's sampling and stepping leave them out, count them and say so, instead
of ending the run with a bare error (``envport mutate pokemon-gen1 --seed 2029`` stopped so
while recording its L2 cases, in the novelty policy's restore)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from envport.core.registry import EnvSpec, spec
from envport.verify.interaction import check_interaction
from envport.verify.policies import NoveltyPolicy, visit_states

CARTPOLE = spec("cartpole")


def refusing_spec(refuse: Any, refused: list[Any]) -> EnvSpec:
    """CartPole with a reference that refuses to take back the states ``refuse`` picks, as
    Showdown refuses some of its own exports."""
    base = type(CARTPOLE.make_reference())

    class Refusing(base):  # type: ignore[misc, valid-type]
        def set_state(self, s: Any) -> None:
            if refuse(s):
                refused.append(s)
                raise ValueError("import: Battle.fromJSON failed")
            super().set_state(s)

    return replace(CARTPOLE, make_reference=lambda **kw: Refusing(**kw))


def tilted(s: Any, limit: float = 0.03) -> bool:
    return abs(float(np.asarray(s["theta"]))) > limit


def fallen(s: Any) -> bool:  # past every reset's tilt (at most 0.05), before the episode's end
    return tilted(s, 0.1)


def test_the_novelty_episode_ends_before_a_state_it_cannot_branch_from() -> None:
    refused: list[Any] = []
    s = refusing_spec(fallen, refused)
    ref = s.make_reference()
    states = visit_states(ref, NoveltyPolicy(s, ref), seed=4, max_steps=500,
                          rng=np.random.default_rng(0))
    assert refused, "no state was refused: the test reached no tilted state"
    assert states and not any(fallen(x) for x in states)
    # the episode stopped at the first refusal: its states are those before it
    ref.reset(4)
    assert np.array_equal(states[0]["x"], ref.get_state()["x"])
    assert len(states) < 500


def test_l2_leaves_out_the_states_the_reference_refuses_and_says_so() -> None:
    refused: list[Any] = []
    result = check_interaction(refusing_spec(tilted, refused), states=60, seed=3)
    assert refused and result.passed
    left_out = [n for n in result.notes if "left out" in n]
    assert len(left_out) == 1 and "cannot inject" in left_out[0], result.notes
    assert result.counts["states"] < 60


def test_l2_fails_when_the_reference_refuses_most_states() -> None:
    every: list[Any] = []
    # every state but the reset's own is refused: nothing left to compare on is no pass
    result = check_interaction(refusing_spec(lambda st: abs(float(np.asarray(st["x"]))) > 0,
                                             every), states=40, seed=3)
    assert not result.passed
    assert result.failures[0].test_id == "interaction[injection]"
    assert "cannot inject" in result.failures[0].message
