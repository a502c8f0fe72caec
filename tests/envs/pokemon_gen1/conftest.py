"""The Showdown worker the Gen 1 tests compare against. The project's set-up always installs the
pinned package (install.sh runs install_reference.sh), so a missing reference fails the tests
with the set-up message instead of skipping them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from envport.envs.pokemon_gen1.reference import ReferenceUnavailable, ShowdownWorker


@pytest.fixture(scope="module")
def worker() -> Iterator[ShowdownWorker]:
    try:
        w = ShowdownWorker(timeout=120)
    except ReferenceUnavailable as e:
        pytest.fail(f"Showdown reference not available (the set-up installs it): {e}")
    yield w
    w.close()
