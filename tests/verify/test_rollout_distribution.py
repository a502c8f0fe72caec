"""The rollout-distribution layer on CartPole: the translation passes at the default N, a 2%
pole-mass change (which one step and L3's lockstep leave inside their tolerances) is caught
and named, the reference against itself (independent seeds) raises no alarm, too few episodes
warn with the detectable effect, bad flags exit 2 naming the flag."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from envport.cli import main
from envport.core.registry import spec
from envport.envs.cartpole import ROLLOUT_DISTRIBUTION
from envport.envs.cartpole.jax_env import CartPole
from envport.train.run import RUN_FORMAT
from envport.verify import verify
from envport.verify.rollout_distribution import (
    LAYER,
    ReferenceCache,
    _batched_reset,
    _batched_step,
    check_rollout_distribution,
    detectable_d,
    episodes_for,
    holm,
    reference_vs,
    settings_for,
    summarise,
)

CARTPOLE = spec("cartpole")


@pytest.fixture(scope="module")
def translation_result():
    return verify("cartpole", (LAYER,)).layers[LAYER]


def test_the_translation_passes_at_the_default_n(translation_result):
    r = translation_result
    assert r.passed, [f.message for f in r.failures]
    n = ROLLOUT_DISTRIBUTION["episodes"]
    # random and scripted, each N per side
    assert r.counts["episodes"] == 4 * n and r.data["episodes_per_side"] == n
    assert r.counts["tests"] > 100 and r.counts["rejected"] == 0
    assert not r.warnings  # the default N reaches the declared target effect
    tests = r.data["tests"]
    features = {t["feature"] for t in tests}
    assert {"return", "length", "termination cause"} <= features
    assert "reward per step" not in features  # 1 at every step on both sides: nothing to test
    assert "step std theta_dot @ t400-500" in features  # late windows are compared
    assert sum(t["test"] == "energy" for t in tests) == 2
    # the scripted controller's episodes end at the time limit or with the cart off the track
    # (the random policy's all end with the pole fallen: one cause, nothing to test)
    causes = [t for t in tests if t["feature"] == "termination cause"]
    assert len(causes) == 1 and causes[0]["policy"] == "scripted"
    assert "cart out of bounds" in causes[0]["detail"] and "truncated" in causes[0]["detail"]


def test_the_json_report_carries_the_layer(translation_result, tmp_path):
    from envport.verify.report import Report

    report = Report(env="cartpole", layers={LAYER: translation_result})
    path = tmp_path / "r.json"
    report.write_json(str(path))
    data = json.loads(path.read_text())["layers"][LAYER]
    assert data["passed"] is True and data["episodes"] > 0
    assert data["data"]["tests"][0]["p_adjusted"] >= data["data"]["tests"][0]["p"]


def test_a_two_percent_pole_mass_is_caught_and_named():
    wrong = CartPole(masspole=0.102)  # Gymnasium's is 0.1
    r = check_rollout_distribution(CARTPOLE, env=wrong)
    assert not r.passed
    first = r.failures[0]
    assert first.layer == LAYER
    # the heavier pole slows the cart's response: the spread of x_dot's step change drops
    assert "x_dot" in first.test_id and "translation lower" in first.message
    assert "@" in first.test_id  # the time window is named


def test_param_mutants_lower_to_one_program():
    # What lets `horizon_study mutants` compile once for all mutants: the params are arguments
    # of the batched step, so two mutants differ in the arguments, not in the program.
    import jax
    import jax.numpy as jnp

    def programs(env: CartPole) -> tuple[str, str]:
        params = env.default_params()
        keys = jax.random.split(jax.random.key(0), 4)
        state, _ = _batched_reset(env)(keys, params)
        step = _batched_step(env).lower(keys, jnp.int32(0), state, jnp.zeros(4, jnp.int32),
                                        params)
        return _batched_reset(env).lower(keys, params).as_text(), step.as_text()

    assert programs(CartPole(masspole=0.102)) == programs(CartPole())


def test_the_reference_against_itself_raises_no_alarm():
    r = reference_vs(CARTPOLE, CARTPOLE.make_reference, episodes=100, seed=3)
    assert r.passed, [f.message for f in r.failures]
    assert r.counts["tests"] > 50


def test_too_few_episodes_warn_with_the_detectable_effect():
    r = check_rollout_distribution(CARTPOLE, episodes=10)
    assert r.warnings and "too few episodes" in r.warnings[0]
    assert "d=" in r.warnings[0] and "--horizon-episodes" in r.warnings[0]


def test_holm_and_power_formulas():
    assert holm(np.array([0.01, 0.04, 0.03])) == pytest.approx([0.03, 0.06, 0.06])
    # two-sided 0.05, 80% power: the textbook 2 * (1.96 + 0.84)^2 / d^2 = 63 per group at 0.5
    assert episodes_for(0.5, 0.05) == 63
    assert detectable_d(63, 63, 0.05) == pytest.approx(0.5, abs=0.01)


def test_summaries_per_window():
    rows = np.stack([np.arange(10.0), np.ones(10)], axis=1)  # one column, then the reward
    s = summarise(rows, ["x", "reward"], horizon=10, count=2)
    assert s["mean x @ t0-5"] == 2.0 and s["mean x @ t5-10"] == 7.0
    assert s["step std x @ all"] == 0.0 and s["return"] == 10.0 and s["length"] == 10.0
    short = summarise(rows[:4], ["x", "reward"], horizon=10, count=2)
    assert np.isnan(short["mean x @ t5-10"])  # an episode over before the window


def test_bad_flags_exit_2_naming_the_flag(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["verify", "cartpole", "--layer", LAYER, "--horizon-episodes", "0"])
    assert e.value.code == 2 and "--horizon-episodes" in capsys.readouterr().err
    assert main(["verify", "cartpole", "--layer", LAYER, "--horizon-episodes", "1"]) == 2
    assert "--horizon-episodes" in capsys.readouterr().err
    assert main(["verify", "cartpole", "--layer", LAYER, "--policy-run",
                 str(tmp_path / "none")]) == 2
    assert "--policy-run" in capsys.readouterr().err


def test_a_policy_from_another_environment_is_refused(tmp_path: Path, capsys):
    run = tmp_path / "pong-run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"format": RUN_FORMAT, "env": "pong",
                                                 "backend": "jax", "env_kwargs": {},
                                                 "ppo": {}}))
    assert main(["verify", "cartpole", "--layer", LAYER, "--policy-run", str(run)]) == 2
    err = capsys.readouterr().err
    assert "trained on 'pong'" in err and "cartpole" in err


def test_a_trained_policy_drives_both_sides(tmp_path: Path):
    from envport.train import train

    run = tmp_path / "cartpole-run"
    # The tiny config of tests/train (compiled once per session when both run).
    train("cartpole", "jax", steps=4 * 8 * 4, seed=3, out=run, progress=False, chunk_updates=2,
          config_overrides={"num_steps": 8, "num_minibatches": 2, "update_epochs": 2})
    r = check_rollout_distribution(CARTPOLE, episodes=20, policy_run=str(run))
    assert r.counts["episodes"] == 3 * 2 * 20  # random, scripted and trained, both sides
    trained = [t for t in r.data["tests"] if t["policy"] == "trained"]
    assert any(t["feature"] == "return" for t in trained)
    assert r.passed, [f.message for f in r.failures]


def test_a_reference_cache_reuses_the_same_draws():
    """horizon_study's mutants share one reference side: a mutant run through the cache gives
    every p-value of the same run drawing its reference afresh."""
    settings = settings_for(CARTPOLE)
    cache = ReferenceCache(CARTPOLE, settings)
    check_rollout_distribution(CARTPOLE, episodes=20, seed=1, settings=settings, cache=cache)
    assert cache.hits == 0 and len(cache.samples) == 4  # reference and held-out, 2 policies
    wrong = CartPole(masspole=0.102)
    cached = check_rollout_distribution(CARTPOLE, episodes=20, seed=1, env=wrong,
                                        settings=settings, cache=cache)
    assert cache.hits == 4
    fresh = check_rollout_distribution(CARTPOLE, episodes=20, seed=1, env=wrong)

    def key(r):
        return [(t["policy"], t["feature"], t["test"], t["p"]) for t in r.data["tests"]]

    assert key(cached) == key(fresh) and not fresh.passed
    with pytest.raises(ValueError, match="ReferenceCache"):
        other = dataclasses.replace(settings, windows=2)  # another reference side
        check_rollout_distribution(CARTPOLE, episodes=20, seed=1, settings=other, cache=cache)
