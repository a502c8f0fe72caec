"""The rollout-distribution layer's game side: pokemon-gen1's reference for the layer (Showdown
dealing the JAX reset's pool on a ChaCha20 seed) and, under the ``slow`` mark, the layer on
tcg-pocket and pokemon-gen1 at small N (each compiles its engine's batched step: minutes).

Showdown is part of the project's set-up (install.sh), so a missing reference fails these tests
with its message rather than skipping them, as the Gen 1 tests do."""

from __future__ import annotations

import numpy as np
import pytest

from envport.core.registry import spec
from envport.envs.pokemon_gen1 import create as C
from envport.envs.pokemon_gen1.env import legal_action
from envport.envs.pokemon_gen1.reference import ReferenceUnavailable, check_seed
from envport.verify import rollout_distribution as rd
from envport.verify import rollout_distribution_games as games


def test_sodium_seeds_are_checked() -> None:
    assert check_seed("sodium,00ff") == "sodium,00ff"
    with pytest.raises(ValueError, match="hex digits"):
        check_seed("sodium,xyz")
    with pytest.raises(ValueError, match="hex digits"):
        check_seed("sodium," + "0" * 65)
    assert check_seed([1, 2, 3, 4]) == [1, 2, 3, 4]  # the LCG's words, as before


def play(ref, seed: int, steps: int) -> list[dict]:  # type: ignore[no-untyped-def]
    ref.reset(seed)
    rng = np.random.default_rng(seed)
    states = [ref.get_state()]
    for _ in range(steps):
        _, _, terminated, _, _ = ref.step(legal_action(ref.get_state(), rng))
        states.append(ref.get_state())
        if terminated:
            break
    return states


def test_the_layers_showdown_deals_the_pool_on_chacha20() -> None:
    try:
        ref = games.make_pokemon_reference()
    except ReferenceUnavailable as e:
        pytest.fail(f"Showdown reference not available (the set-up installs it): {e}")
    try:
        battle = play(ref, 5, 2000)
        # Showdown's own export: the battle runs on the sodium (ChaCha20) generator.
        raw = ref.battle.worker.export(ref.battle.battle_id)
        assert str(raw["prng"]).startswith("sodium,")
        assert games.pokemon_outcome(battle[-1]) in ("p1 wins", "p2 wins", "tie")
        # Both teams are pool teams (the population the JAX reset samples).
        pool = C.pool(True)
        rows = {tuple(sorted(r)) for r in pool.arrays["species"].tolist()}
        for side in (0, 1):
            assert tuple(sorted(battle[0]["team.species"][side].tolist())) in rows
        # A function of the seed: the same seed and choices replay the same battle; another
        # seed plays another.
        again = play(ref, 5, 20)
        for a, b in zip(battle[:len(again)], again, strict=False):
            for k in a:
                np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        other = play(ref, 6, 20)
        assert any(not np.array_equal(a[k], b[k]) for a, b in zip(battle, other, strict=False)
                   for k in ("team.hp", "team.species"))
        features = games.pokemon_features(battle[-1])
        assert features.shape == (len(games.POKEMON_FEATURES),)
    finally:
        ref.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tcg-pocket", "pokemon-gen1"])
def test_the_layer_runs_on_the_games(name: str) -> None:
    r = rd.check_rollout_distribution(spec(name), 8, seed=0)
    assert r.complete and r.counts["episodes"] == 16
    features = {t["feature"] for t in r.data["tests"]}
    assert "length" in features
    assert r.passed, [f.message for f in r.failures]
