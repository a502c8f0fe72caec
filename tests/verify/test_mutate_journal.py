"""A mutation run's verdicts written as they arrive and resumed, and L1 component checks run on
each mutant (the plan's ``components``).

Both on a small environment written into a temporary folder (``$ENVPORT_ENV_PATH``): CartPole's
translation, whose mutated module is one the CartPole step never calls, ``scaled.py``, checked
by a component check against a reference written another way (``reference.py``). Every mutant
of ``scaled.py`` leaves the translation's programs as they are, so only the component check can
tell it apart: without ``components`` in the plan the same mutant is called equivalent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from envport.core import registry
from envport.verify import mutation as mutate
from envport.verify.mutation.journal import Journal, JournalMismatch

SCALED = '''
def double(x: int) -> int:
    return x * 2


def halve(x: int) -> int:
    return x // 2
'''

REFERENCE = '''
def double(x):
    return x + x


def halve(x):
    return x >> 1
'''

INIT = '''
import dataclasses

from envport.core.registry import lazy
from envport.envs.cartpole import SPEC as CARTPOLE


def check_scaled():
    from mutcomp import reference, scaled

    for x in range(-4, 5):
        for name in ("double", "halve"):
            got, want = getattr(scaled, name)(x), getattr(reference, name)(x)
            if got != want:
                raise AssertionError(f"{{name}}({{x}}) = {{got}}, the reference's {{want}}")


SPEC = dataclasses.replace(
    CARTPOLE, name="{name}", make=lazy("{name}.env:Env"),
    verification=dataclasses.replace(CARTPOLE.verification,
                                     components={components}))
'''

ENV = '''
from typing import Any, ClassVar

from envport.envs.cartpole.jax_env import CartPole


class Env(CartPole):
    mutation_plan: ClassVar[dict[str, Any]] = {plan}
'''


@pytest.fixture
def envs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "envs"
    with_checks = {"modules": ["mutcomp.scaled"], "layers": ("interaction",),
                   "components": True}
    without = {"modules": ["mutcomp.scaled"], "layers": ("interaction",)}
    for name, components, plan in (("mutcomp", '{"scaled": check_scaled}', with_checks),
                                   ("mutplain", "{}", without)):
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text(INIT.format(name=name, components=components))
        (folder / "env.py").write_text(ENV.format(plan=repr(plan)))
    (root / "mutcomp" / "scaled.py").write_text(SCALED)
    (root / "mutcomp" / "reference.py").write_text(REFERENCE)
    monkeypatch.setenv(registry.ENV_PATH_VARIABLE, str(root))
    registry._specs.cache_clear()
    yield root
    registry._specs.cache_clear()
    for mod in [m for m in sys.modules if m.split(".")[0] in ("mutcomp", "mutplain")]:
        del sys.modules[mod]
    if str(root) in sys.path:
        sys.path.remove(str(root))


SIZES = {"states": 20, "episodes": 1, "examples": 1, "samples": 100, "workers": 1}


def test_an_interrupted_run_resumes_and_only_component_checks_kill_its_mutants(envs, tmp_path):
    """Four mutants of ``scaled.py``; Ctrl-C after two verdicts, then the same run again."""
    journal = tmp_path / "out" / "run.verdicts.jsonl"
    first: list[str] = []

    def stop_after_two(result: dict, done: int, total: int) -> None:
        first.append(result["id"])
        if done == 2:
            raise KeyboardInterrupt  # as Ctrl-C in the middle of a run

    cut = mutate.run_mutation("mutcomp", journal=journal, progress=stop_after_two, **SIZES)
    assert cut.interrupted and len(cut.results) == 2 and cut.planned == 4
    assert cut.to_json()["complete"] is False
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    assert [x["kind"] for x in lines] == ["header", "control", "verdict", "verdict"]
    assert lines[1]["passed"]  # the original passes its component check
    assert [x["result"]["id"] for x in lines[2:]] == first

    seen: list[tuple[str, int]] = []
    again = mutate.run_mutation("mutcomp", journal=journal, **SIZES,
                                progress=lambda r, done, total: seen.append((r["id"], done)))
    assert not again.interrupted and again.resumed == 2 and len(again.results) == 4
    # the journal's two come first, then only the two it had no verdict for
    assert [i for i, _ in seen[:2]] == first
    decided_now = [i for i, _ in seen[2:]]
    assert len(decided_now) == 2 and not set(decided_now) & set(first)
    assert {r["id"] for r in again.results} == set(first) | set(decided_now)
    # each mutant killed by the component check (the property layer), none by L2
    assert all(r["killed_by"] == "property" and "component:scaled" in r["detail"]
               and not r["equivalent"] for r in again.results)
    assert again.settings["components"] and again.settings["layers"][0] == "property"
    kinds = [json.loads(x)["kind"] for x in journal.read_text().splitlines()]
    assert kinds == ["header", "control"] + ["verdict"] * 4  # no second control, no repeats

    # another seed: refused before any work, naming the flag; --restart would discard it
    with pytest.raises(JournalMismatch, match=r"--seed 0 there, 1 here"):
        mutate.run_mutation("mutcomp", journal=journal, **{**SIZES, "seed": 1})
    from envport.cli import main

    assert main(["mutate", "mutcomp", "--seed", "1", "--journal", str(journal)]) == 2
    # the plan's eager overridden from the command line: another run, named by its flag
    with pytest.raises(JournalMismatch, match=r"--eager / --no-eager"):
        mutate.run_mutation("mutcomp", journal=journal, **SIZES, eager=True)
    assert main(["mutate", "mutcomp", "--eager", "--journal", str(journal)]) == 2
    assert len(journal.read_text().splitlines()) == 6  # untouched by the refusals


def test_a_journal_line_cut_by_a_kill_is_dropped_and_a_foreign_file_refused(tmp_path):
    path = tmp_path / "j.jsonl"
    j = Journal(path)
    assert j.open({"env": "x", "seed": 3}) == []
    j.add("verdict", {"result": {"id": "m001"}})
    with open(path, "a") as f:
        f.write('{"kind": "verdict", "result": {"id": "m0')  # killed mid-write
    assert Journal(path).open({"env": "x", "seed": 3}) == [
        {"kind": "verdict", "result": {"id": "m001"}}]
    assert Journal(path).open({"env": "x", "seed": 4}, restart=True) == []
    other = tmp_path / "notes.jsonl"
    other.write_text('{"a": 1}\n')
    with pytest.raises(JournalMismatch, match="not a verdict journal"):
        Journal(other).open({"env": "x"})


def test_without_components_the_same_mutant_is_the_same_program(envs):
    """What the component check is for: the plan without it calls the mutant equivalent."""
    every = mutate.generate_all(mutate.translation_modules(registry.spec("mutplain")),
                                ("constant",))
    (two,) = [m.mutant for m in every if m.mutant.source_line == "return x * 2"]
    (same,) = mutate.run_mutation("mutplain", only=[two.id], **SIZES).results
    assert same["killed_by"] is None and same["equivalent"]
    assert same["equivalence_kind"] == "program"
