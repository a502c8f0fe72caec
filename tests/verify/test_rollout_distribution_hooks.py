"""The rollout-distribution layer's environment hooks, on CartPole at small sizes: a named
policy that sees the step index (HalfCheetah's gait), a policy of the state (a masked game's
random legal player), step features and episode summaries in place of the per-column
summaries (the games' battle statistics), a reference of the layer's own, and the games'
battle summaries on hand-made rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from envport.core.registry import spec
from envport.envs.cartpole.jax_env import CartPole
from envport.verify import rollout_distribution as rd
from envport.verify import rollout_distribution_games as games

CARTPOLE = spec("cartpole")
ENV = CARTPOLE.make()  # one instance: its batched step compiles once for the module
BASE = rd.settings_for(CARTPOLE)
assert BASE is not None


def alternate(obs: np.ndarray, rng: np.random.Generator, t: int) -> int:
    return t % 2


def test_a_named_policy_sees_the_step_index_from_each_episode_start() -> None:
    settings = dataclasses.replace(BASE, policies=("alternate",), named={"alternate": alternate},
                                   horizon=40, permutations=99)
    cols = rd.find_columns(CARTPOLE, settings, 0)
    policy = rd.make_batch_policy("alternate", CARTPOLE, settings=settings)
    ours = rd.translation_sample(ENV, CARTPOLE, settings, cols, policy, "alternate", 0, 6, 40)
    ref = rd.reference_episodes(CARTPOLE, settings, cols, policy, "alternate", 0,
                                list(range(6)), 40)
    for rows in ours.rows + ref.rows:  # the action is the last column
        np.testing.assert_array_equal(rows[:, -1], np.arange(len(rows)) % 2)
    r = rd.check_rollout_distribution(CARTPOLE, 30, seed=1, settings=settings, env=ENV)
    assert r.passed, [f.message for f in r.failures]
    assert {t["policy"] for t in r.data["tests"]} == {"alternate"}


def test_named_policies_have_their_own_seed_streams() -> None:
    assert rd.policy_index("random") == 0 and rd.policy_index("scripted") == 1
    assert rd.policy_index("gait") != rd.policy_index("alternate")
    assert rd.policy_index("gait") >= 1_000  # never a built-in's


def legal_push(state: dict, rng: np.random.Generator) -> int:
    # A state policy: push against the pole's lean, a random push 30% of the time.
    if rng.random() < 0.3:
        return int(rng.integers(2))
    return int(float(state["theta"]) > 0)


def pole_features(state: dict) -> np.ndarray:
    return np.asarray([float(state["x"]), float(state["theta"])])


def pole_summaries(rows: np.ndarray, names: list[str]) -> dict[str, float]:
    theta = rows[:, names.index("theta")]
    return {"largest lean": float(np.abs(theta).max()),
            "final x": float(rows[-1, names.index("x")])}


def state_settings() -> tuple:
    v = dataclasses.replace(CARTPOLE.verification, legal_action=legal_push)
    s = dataclasses.replace(CARTPOLE, verification=v)
    settings = dataclasses.replace(BASE, policies=("random",), horizon=200, windows=1,
                                   permutations=99, step_features=pole_features,
                                   feature_names=("x", "theta"),
                                   episode_summaries=pole_summaries, column_summaries=False)
    return s, settings


def test_state_policy_features_and_episode_summaries() -> None:
    """``random`` of a spec with ``legal_action`` is drawn from each episode's state, on the
    translation too (episodes that ended get no draw: the batch steps on); the summaries are
    the episode summaries and the generic ones only."""
    s, settings = state_settings()
    policy = rd.make_batch_policy("random", s, settings=settings)
    assert isinstance(policy, rd.StatePolicy)
    r = rd.check_rollout_distribution(s, 40, seed=2, settings=settings, env=ENV)
    assert r.passed, [f.message for f in r.failures]
    features = {t["feature"] for t in r.data["tests"] if t["test"] == "Welch t"}
    # (CartPole's reward per step is 1 on both sides: a shared constant is not tested)
    assert features == {"largest lean", "final x", "return", "length"}
    lengths = {round(t["reference_mean"]) for t in r.data["tests"] if t["feature"] == "length"}
    assert lengths and max(lengths) < 200  # the lean policy drops the pole: episodes end apart
    # The same hooks see a wrong translation: a time step of 0.03 s for 0.02 s, so the pole
    # falls in fewer steps.
    wrong = rd.check_rollout_distribution(s, 40, seed=2, settings=settings,
                                          env=CartPole(tau=0.03))
    assert not wrong.passed
    assert any(t["rejected"] for t in wrong.data["tests"])


def test_the_layer_runs_the_settings_reference() -> None:
    made = []

    def own() -> object:
        made.append(1)
        return CARTPOLE.make_reference()

    settings = dataclasses.replace(BASE, policies=("random",), horizon=30, permutations=99,
                                   make_reference=own)
    rd.check_rollout_distribution(CARTPOLE, 10, seed=0, settings=settings, env=ENV)
    assert made  # its reference side, not the spec's


def test_battle_summaries_count_faints_switches_damage_and_statuses() -> None:
    names = [*games.POKEMON_FEATURES, "reward"]
    # turn, p1/p2 fainted, p1/p2 hp, p1/p2 statused, p1/p2 active, reward
    rows = np.asarray([
        [1, 0, 0, 6.0, 6.0, 0, 0, 0, 0, 0],
        [2, 0, 0, 5.5, 6.0, 0, 1, 0, 0, 0],   # p2 hit by half a Pokemon's HP and statused
        [3, 0, 1, 5.5, 5.0, 0, 1, 0, 1, 0],   # p2's active faints, p2 sends slot 1
        [4, 0, 1, 5.5, 5.2, 0, 0, 2, 1, 0],   # p2 heals (not damage); p1 switches to slot 2
        [5, 0, 2, 5.5, 4.2, 0, 0, 2, 1, 1],   # p2's last faint: p1 wins
    ])
    s = games.battle_summaries(rows, names)
    assert s["turns"] == 5 and s["p2 fainted"] == 2 and s["p1 fainted"] == 0
    assert s["p1 switches"] == 1 and s["p2 switches"] == 1
    assert s["p1 damage dealt per turn"] == pytest.approx((1.0 + 1.0) / 5)
    assert s["p2 damage dealt per turn"] == pytest.approx(0.5 / 5)
    assert s["p1 statuses inflicted"] == 1 and s["p2 statuses inflicted"] == 0


def test_sodium_seeds_are_showdowns_chacha20_form() -> None:
    seed = games.sodium_seed(7)
    assert seed.startswith("sodium,") and len(seed) == len("sodium,") + 32
    int(seed.split(",")[1], 16)
    assert games.sodium_seed(8) != seed and games.sodium_seed(7) == seed


def test_the_study_takes_modes_and_refuses_float64_without_x64(capsys) -> None:
    import jax

    from envport.verify.horizon_study import main, with_mode

    halfcheetah = spec("halfcheetah")
    assert with_mode(halfcheetah, None) is halfcheetah
    if not jax.config.read("jax_enable_x64"):
        with pytest.raises(ValueError, match="JAX_ENABLE_X64=1"):
            with_mode(halfcheetah, ["dtype=float64"])
    assert main(["calibrate", "halfcheetah", "-o", "nope=1", "--repetitions", "1"]) == 2
    assert "no option 'nope'" in capsys.readouterr().err
    assert main(["mutants", "cartpole", "--only", "nope"]) == 2
    assert "--only nope" in capsys.readouterr().err


def test_the_mutant_study_shares_one_reference_side(capsys) -> None:
    """Mutants run in --only's order against one reference side (drawn for the first, reused
    by the next: same seed, same episodes) and report the kill's adjusted p."""
    from envport.verify.horizon_study import mutants

    rows = mutants(spec("cartpole"), 20, lower=False, seed=1,
                   only=["masspole +2%", "masscart +2%"])
    assert [r["mutant"] for r in rows] == ["masspole +2%", "masscart +2%"]
    assert [r["reference_reused"] for r in rows] == [False, True]
    for r in rows:
        assert r["killed"] and r["min_p_adjusted"] < 0.005 and "adjusted p=" in r["smallest_p"]
