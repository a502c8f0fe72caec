"""The distribution layer's events for pokemon-gen1 (``distribution.py``): turn 1 of fixed
matchups sampled by the engine from its own seeds, against Showdown from other seeds, compared
as distributions (``envport.verify.distribution``). The engine's step is the one compiled for
the whole test folder (``engine.compiled``; this file is in ``tests/conftest.py``'s group)."""

from __future__ import annotations

import numpy as np
import pytest

from envport.envs.pokemon_gen1 import SPEC
from envport.envs.pokemon_gen1 import distribution as D
from envport.verify.distribution import ALPHA, check_distribution, two_sample_p

N = 300  # battles per matchup and side: ~3 s of Showdown, ~5 s of JAX steps after compiling


@pytest.fixture(scope="module")
def showdown_turns(worker):
    return D.reference_turn_events(N, 0, worker)


def test_turn_one_of_the_engine_samples_as_showdowns(showdown_turns):
    ours = D.translation_turn_events(N, 1)
    assert set(ours) == set(showdown_turns)
    alpha = ALPHA / len(showdown_turns)
    for name, theirs in showdown_turns.items():
        # each declared event varies in Showdown's own sample: none passes as a constant
        assert len(np.unique(theirs)) > 1, f"{name}: Showdown's {N} battles all gave {theirs[0]}"
        test, p = two_sample_p(theirs, ours[name])
        assert p >= alpha, (f"{name}: {test} p = {p:.3g} < {alpha:.3g}; means: Showdown "
                            f"{theirs.mean():.3f}, engine {ours[name].mean():.3f}")


def test_six_percent_less_damage_is_detected(showdown_turns):
    """The same test at the same size rejects an engine whose Body Slam deals ~6% less (Tauros
    at level 64 instead of 68: getDamage's ``2 * level / 5 + 2`` factor 27 instead of 29)."""
    weaker = D.MATCHUPS[0]._replace(levels=(64, None))
    ours = D.translation_turn_events(N, 1, [weaker])
    event = f"{weaker.name}: p2 HP lost"
    test, p = two_sample_p(showdown_turns[event], ours[event])
    assert p < ALPHA / len(showdown_turns), f"{event}: {test} p = {p:.3g}"


@pytest.mark.slow  # 2,000 battles per matchup and side, and 2,000 resets: ~2 minutes here
def test_the_distribution_layer_passes_at_its_default_size():
    result = check_distribution(SPEC, samples=2000, seed=0)
    assert result.counts["events"] == 3 + sum(len(m.events) for m in D.MATCHUPS)
    assert result.passed, "\n".join(f.message for f in result.failures)
