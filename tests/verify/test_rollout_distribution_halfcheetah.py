"""The rollout-distribution layer on HalfCheetah at its default N (slow: ~2-4 minutes each on 2
cores): the float32 translation passes, the control-cost weight 5% off and the friction 2% off
are caught and named.
``python -m envport.verify.horizon_study mutants halfcheetah`` scores all ten param mutants."""

from __future__ import annotations

import pytest

from envport.core.registry import spec
from envport.verify.rollout_distribution import LAYER, check_rollout_distribution

pytestmark = pytest.mark.slow
HALFCHEETAH = spec("halfcheetah")


def test_the_float32_translation_passes():
    r = check_rollout_distribution(HALFCHEETAH, seed=0)
    assert r.passed, [f.message for f in r.failures]
    assert not r.warnings
    features = {t["feature"] for t in r.data["tests"]}
    assert "mean state.qpos[0] @ t500-1000" in features  # the x position the obs leaves out


def test_a_five_percent_control_cost_is_caught():
    wrong = HALFCHEETAH.make(ctrl_cost_weight=0.105)  # Gymnasium's is 0.1
    r = check_rollout_distribution(HALFCHEETAH, seed=0, env=wrong)
    assert not r.passed
    assert r.failures[0].layer == LAYER
    assert any("reward" in f.test_id and "translation lower" in f.message for f in r.failures)


def test_a_two_percent_friction_is_caught_by_the_gait():
    """The random and scripted policies' feet slide too little for a 2% friction change to show
    (docs/rollout_distribution.md); the open-loop gait leaves the cheetah resting on its back,
    at a depth the friction cones set."""
    from envport.envs.halfcheetah.model import cheetah_model

    wrong = HALFCHEETAH.make(geom_friction=cheetah_model().geom_friction * 1.02)
    r = check_rollout_distribution(HALFCHEETAH, seed=0, env=wrong)
    assert not r.passed
    assert any("[gait]" in f.message and "qpos[1]" in f.message and "translation lower"
               in f.message for f in r.failures)
