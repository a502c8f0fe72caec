"""The rollout-distribution layer's reference side on a local Ray cluster (2 CPUs, loopback
only, started by this module): the same episodes and the same tests as in this process.

Ray is an optional extra (``pip install 'envport[scale]'``): without it this module is skipped
with that reason (the rest of the layer's tests do not need it)."""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

# Before Ray is imported: its nodes then bind the loopback address, not the machine's.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install "
                                        "'envport[scale]' (these tests need it)")

from envport.core.registry import spec  # noqa: E402
from envport.envs.cartpole.jax_env import CartPole  # noqa: E402
from envport.scale import InProcess, RayExecutor, session  # noqa: E402
from envport.verify import rollout_distribution as rd  # noqa: E402


@pytest.fixture(scope="module")
def cluster(ray_cluster: str) -> str:
    """The session's local Ray cluster (``tests/conftest.py``)."""
    return ray_cluster


def small(cartpole):  # type: ignore[no-untyped-def]
    return dataclasses.replace(rd.settings_for(cartpole), horizon=60, permutations=99)


def test_reference_side_on_ray_is_the_local_one(cluster: str) -> None:
    cartpole = spec("cartpole")
    settings = small(cartpole)
    cols = rd.find_columns(cartpole, settings, 3)
    n = 2 * rd.EPISODES_PER_TASK + 3  # three tasks, the last one short

    def side(executor: rd.Executor) -> rd.Sample:
        out = rd.Sample()
        for part in rd.reference_sample(executor, cartpole, settings, cols, "random", None, 3,
                                        n, 60):
            out.extend(part)
        return out

    here = side(InProcess())
    in_driver = set(rd._WORKER)
    there = side(RayExecutor(cluster))
    # The Ray side's reference was built in Ray's workers, not in this process.
    assert set(rd._WORKER) == in_driver
    assert len(there.rows) == len(here.rows) == n
    for a, b in zip(here.rows, there.rows, strict=True):
        np.testing.assert_array_equal(a, b)
    assert here.causes == there.causes
    for a, b in zip(here.initial, there.initial, strict=True):
        np.testing.assert_array_equal(a, b)


def test_layer_under_a_ray_session_gives_the_local_result(cluster: str) -> None:
    """``envport verify --ray`` opens a session (envport.scale.session): the layer's reference
    side then runs as Ray tasks and the verdict and every p-value are the local run's. A wrong
    translation (force_mag +5%) so that there are rejections to compare too."""
    cartpole = spec("cartpole")
    settings = small(cartpole)
    wrong = CartPole(force_mag=10.5)
    here = rd.check_rollout_distribution(cartpole, 24, seed=4, env=wrong, settings=settings)
    in_driver = set(rd._WORKER)
    with session(cluster) as executor:
        assert executor is not None
        there = rd.check_rollout_distribution(cartpole, 24, seed=4, env=wrong,
                                              settings=settings)
    assert set(rd._WORKER) == in_driver
    assert not here.passed and not there.passed
    assert here.counts == there.counts
    assert [(t["feature"], t["test"], t["p"]) for t in here.data["tests"]] == \
        [(t["feature"], t["test"], t["p"]) for t in there.data["tests"]]
