"""Applying a mutant reaches every import-time copy of what it changes, in its module and in the
translation's other modules, and leaves every namespace as it was afterwards."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

from envport.verify.mutation.apply import applied, plan
from envport.verify.mutation.generate import generate

TABLES = '''
import numpy as np

SIZE = 3
TABLE = np.arange(SIZE) * 10
TABLE[0] = 7
TABLE += 1
COUNT = SIZE
COUNT += 1


class Box:
    width: int = 1


def bonus(x):
    return x + 1


def malus(x):
    return x - 1


EFFECTS = (bonus, malus)
'''

ENGINE = '''
import numpy as np

from pkg_under_test import tables as T
from pkg_under_test.tables import bonus

COPY = np.asarray(T.TABLE) + 0
SIZE_TWICE = T.SIZE * 2
FIRST = T.EFFECTS[0]
UNRELATED = np.ones(2)


def run(x):
    return bonus(x)
'''


@pytest.fixture
def pkg(tmp_path: Path):
    root = tmp_path / "pkg_under_test"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "tables.py").write_text(textwrap.dedent(TABLES))
    (root / "engine.py").write_text(textwrap.dedent(ENGINE))
    sys.path.insert(0, str(tmp_path))
    try:
        tables = importlib.import_module("pkg_under_test.tables")
        engine = importlib.import_module("pkg_under_test.engine")
        yield tables, engine
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n.startswith("pkg_under_test")]:
            del sys.modules[name]


def mutant(module, source_line: str, mutated: str):
    found = [m for m in generate(module) if m.mutant.source_line == source_line
             and m.mutant.mutated == mutated]
    assert found, [(m.mutant.source_line, m.mutant.mutated) for m in generate(module)][:40]
    return found[0]


def test_a_table_copied_at_import_into_another_module_sees_the_mutant(pkg):
    tables, engine = pkg
    size = mutant(tables, "SIZE = 3", "4")
    before_t, before_e = dict(vars(tables)), dict(vars(engine))
    original_table = tables.TABLE
    with applied(tables, size, [engine]) as new:
        assert tables.SIZE == 4
        assert list(tables.TABLE) == [8, 11, 21, 31]  # remade, then written in place again
        assert list(engine.COPY) == [8, 11, 21, 31] and engine.SIZE_TWICE == 8
        assert tables.COUNT == 5  # ``COUNT += 1`` runs again after ``COUNT = SIZE``
        assert engine.UNRELATED is before_e["UNRELATED"]  # reads nothing that changed
        assert tables.Box is before_t["Box"]  # the class reads nothing that changed
        assert any(v is tables.TABLE for v in new)
    assert vars(tables) == before_t and vars(engine) == before_e
    assert list(original_table) == [8, 11, 21]  # the original object was never written to


def test_an_in_place_write_remakes_its_object_first(pkg):
    tables, engine = pkg
    first = mutant(tables, "TABLE[0] = 7", "8")
    original = tables.TABLE
    assert plan(tables, first, [engine])["pkg_under_test.tables"] == [2, 3, 4]
    with applied(tables, first, [engine]):
        assert tables.TABLE is not original and list(tables.TABLE) == [9, 11, 21]
        assert list(engine.COPY) == [9, 11, 21]
    assert list(original) == [8, 11, 21] and tables.TABLE is original


def test_functions_bound_at_import_see_a_mutated_function(pkg):
    tables, engine = pkg
    plus = mutant(tables, "return x + 1", "x - 1")
    with applied(tables, plus, [engine]):
        assert tables.EFFECTS[0](5) == 4  # the tuple of functions is made again
        assert engine.FIRST(5) == 4  # ... and so is a copy of it elsewhere
        assert engine.run(5) == 4  # a function imported by name into another module
    assert engine.run(5) == 6 and tables.EFFECTS[0](5) == 6


def test_without_the_other_modules_only_the_mutated_module_is_followed(pkg):
    tables, engine = pkg
    plus = mutant(tables, "return x + 1", "x - 1")
    with applied(tables, plus):
        assert tables.EFFECTS[0](5) == 4
        assert engine.run(5) == 6  # not a translation module here: a reference keeps it


def test_a_statement_that_fails_on_the_mutant_raises_and_restores(pkg):
    tables, engine = pkg
    size = mutant(tables, "SIZE = 3", "4")
    before = dict(vars(engine))
    bad = type(size)(size.mutant, "SIZE = 'x'")
    with pytest.raises(TypeError), applied(tables, bad, [engine]):
        pass
    assert vars(engine) == before and tables.SIZE == 3
