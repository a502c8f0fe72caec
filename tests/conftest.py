"""Fixtures shared by test folders."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest


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
