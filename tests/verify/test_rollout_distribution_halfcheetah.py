"""The rollout-distribution layer on HalfCheetah at its default N (slow: ~2-4 minutes each on 2
cores): the float32 translation passes, the control-cost weight 5% off is caught and named.
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
