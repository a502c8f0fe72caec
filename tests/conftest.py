"""Fixtures shared by test folders."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# One persistent XLA compilation cache for the test session, shared by the pytest-xdist workers
# and the `envport` subprocesses the CLI tests start (they inherit the environment): the same
# engine step compiled in several processes (the Pokemon engine's takes minutes on 2 cores) is
# compiled once and read from disk after. Fresh each session (removed at its end, see
# pytest_sessionfinish), and a folder the caller set is left as it is. Compiled code only: no
# test's expected values come from it.
_XLA_CACHE = "JAX_COMPILATION_CACHE_DIR"
_OWN_XLA_CACHE = "ENVPORT_TEST_XLA_CACHE"  # set when this session made the folder
os.environ.pop("ENVPORT_XLA_CACHE", None)  # the `envport` commands' own cache: not in tests
if _XLA_CACHE not in os.environ:
    os.environ[_XLA_CACHE] = os.environ[_OWN_XLA_CACHE] = tempfile.mkdtemp(
        prefix="envport-test-xla-")


# Test files that step battles with the Pokemon engine's compiled one-battle step
# (`engine.compiled(False)`, minutes to compile on 2 cores): one unit of work for pytest-xdist,
# so one worker compiles it once, where two workers each compiled it (their compilations
# overlap, before either is in the persistent cache).
ONE_WORKER: dict[str, str] = {
    f"tests/envs/pokemon_gen1/test_pokemon_{name}.py": "pokemon-engine-step"
    for name in ("agents", "distribution", "engine", "env", "export", "moves",
                 "trapping")}


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: unknown where xdist is not loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """test.sh's ``--dist loadfile``: each test file is one unit of work on one worker (its
    module fixtures and compiled functions shared), and the files of one :data:`ONE_WORKER`
    group are one unit together."""
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return ONE_WORKER.get(path, path)

    return FileScheduling(config, log)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput") and _OWN_XLA_CACHE in os.environ:
        shutil.rmtree(os.environ[_OWN_XLA_CACHE], ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """One local Ray cluster for the session; its GCS address (what ``--ray`` takes). Modules
    that use it skip first when Ray (an optional extra) is not installed."""
    import ray

    tmp = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths live here
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="warning",
             _temp_dir=tmp)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def stopped_and_resumed() -> Callable[[Callable[..., Any], Path], Any]:
    """``(run, out) -> TrainResult``: ``run(out, on_chunk=...)`` (a training run with one
    update per chunk) stopped by a real Ctrl-C (SIGINT) after its first update, then resumed
    from its folder to the end; for comparing with the same run left whole."""

    def ctrl_c_after_first_update(row: dict[str, float]) -> None:
        if row["update"] == 1:
            os.kill(os.getpid(), signal.SIGINT)

    def run_stopped_and_resumed(run: Callable[..., Any], out: Path) -> Any:
        from envport.train.run import resume

        stopped = run(out, on_chunk=ctrl_c_after_first_update)
        assert stopped.interrupted and stopped.updates == 1
        return resume(out, progress=False)

    return run_stopped_and_resumed


def assert_same_leaves(a: Any, b: Any) -> None:
    """Two parameter pytrees hold identical arrays."""
    import jax
    import numpy as np

    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.fixture
def same_leaves() -> Callable[[Any, Any], None]:
    """:func:`assert_same_leaves`."""
    return assert_same_leaves
