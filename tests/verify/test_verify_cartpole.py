"""The verifier on CartPole: the real translation passes, a wrong one is caught and explained."""

import json

import pytest

from envport.envs.cartpole.jax_env import CartPole
from envport.verify import verify
from envport.verify.rollout_distribution import LAYER


@pytest.fixture(scope="module")
def report():
    return verify("cartpole", episodes=12, states=120, examples=8, samples=1000)


def test_every_layer_passes(report):
    assert report.passed, report.to_prompt()
    assert set(report.layers) == {"property", "interaction", "rollout", "distribution",
                                  LAYER}
    assert report.layers["interaction"].counts["states"] == 120
    assert report.layers["rollout"].counts["episodes"] == 12


def test_json_has_the_documented_shape(report, tmp_path):
    path = tmp_path / "out.json"
    report.write_json(str(path))
    data = json.loads(path.read_text())
    assert data["env"] == "cartpole" and data["passed"] is True
    assert {"passed", "tests", "failures"} <= set(data["layers"]["property"])
    assert {"passed", "states", "failures"} <= set(data["layers"]["interaction"])
    assert {"passed", "episodes", "steps", "failures"} <= set(data["layers"]["rollout"])


def test_a_wrong_constant_is_caught_with_a_shrunk_counterexample():
    wrong = CartPole(gravity=9.81)  # Gymnasium uses 9.8
    report = verify("cartpole", ("interaction", "rollout"), episodes=6, states=60, env=wrong)
    assert not report.passed
    failure = report.layers["interaction"].failures[0]
    assert failure.shrunk and failure.state is not None and failure.action is not None
    fields = {d.field for d in failure.diffs}
    assert "state.theta_dot" in fields  # gravity only enters the angular acceleration
    prompt = report.to_prompt()
    assert "Lowest failing layer: L2 interaction" in prompt and "state.theta_dot" in prompt
    assert not report.layers["rollout"].passed


def test_a_wrong_termination_is_caught():
    wrong = CartPole(x_threshold=2.0)
    report = verify("cartpole", ("interaction",), states=200, env=wrong)
    assert not report.passed
    assert any(d.field == "terminated" for f in report.layers["interaction"].failures
               for d in f.diffs)


def test_ctrl_c_returns_what_was_verified_so_far():
    def interrupt_after_first_chunk(layer, done, total):
        if layer == "rollout" and done > 0:
            raise KeyboardInterrupt

    report = verify("cartpole", ("interaction", "rollout"), episodes=40, states=30,
                    progress=interrupt_after_first_chunk)
    assert report.interrupted and not report.passed
    assert report.layers["interaction"].passed and report.layers["interaction"].complete
    partial = report.layers["rollout"]
    assert not partial.complete and partial.counts["episodes"] == 32  # one chunk of 40
    assert report.to_json()["interrupted"] is True
