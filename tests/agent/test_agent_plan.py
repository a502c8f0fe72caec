"""The module plan (dependency order), the workspace's frozen paths, and the templates."""

from __future__ import annotations

import textwrap

import pytest

from envport.agent.plan import dependency_order, plan_modules, reference_sources
from envport.agent.prompts import names, render
from envport.agent.workspace import Workspace, WorkspaceError


def test_helper_modules_come_first_in_dependency_order(tmp_path, monkeypatch):
    pkg = tmp_path / "toyref"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "rng.py").write_text("def draw(s):\n    return s * 3 % 7\n")
    (pkg / "damage.py").write_text("from toyref.rng import draw\n\ndef hit(s):\n"
                                   "    return draw(s) + 1\n")
    (pkg / "battle.py").write_text(textwrap.dedent("""
        import numpy as np
        from . import damage
        from .rng import draw

        class BattleReference:
            def reset(self, seed): ...
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    sources = reference_sources("toyref.battle:BattleReference")
    assert [(s.name, s.role) for s in sources] == [
        ("toyref.rng", "helper"), ("toyref.damage", "helper"), ("toyref.battle", "reference")]
    plan = plan_modules(sources)
    assert [(m.name, m.kind) for m in plan] == [("rng", "helper"), ("damage", "helper"),
                                                 ("jax_env", "env"), ("bridge", "bridge")]
    assert plan[1].depends == ["rng"] and plan[1].target == "translation/damage.py"
    assert plan[2].sources == ["toyref.battle"]


def test_cartpole_plan_and_context_sources():
    sources = reference_sources("envport.envs.cartpole.reference:CartPoleReference",
                                ["gymnasium.envs.classic_control.cartpole"])
    assert [s.role for s in sources] == ["reference", "context"]
    assert "class CartPoleEnv" in sources[1].text
    assert [m.name for m in plan_modules(sources)] == ["jax_env", "bridge"]
    with pytest.raises(FileNotFoundError, match="neither a file nor an importable module"):
        reference_sources("envport.envs.cartpole.reference:CartPoleReference", ["no.such"])


def test_dependency_order_survives_cycles():
    assert dependency_order({"a": ["b"], "b": ["a"], "c": []}) in (["b", "a", "c"],
                                                                    ["a", "b", "c"])


def test_frozen_paths_are_restored(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.create({"tests/test_x.py": "ORIGINAL\n", "reference/ref.py": "REF\n",
               "translation/__init__.py": ""})
    with pytest.raises(WorkspaceError, match="already a workspace"):
        ws.create({})
    (ws.root / "tests" / "test_x.py").write_text("def test(): pass\n")
    (ws.root / "reference" / "ref.py").unlink()
    (ws.root / "tests" / "test_new.py").write_text("planted\n")
    (ws.root / "translation" / "jax_env.py").write_text("ok\n")
    assert ws.frozen_changes() == ["reference/ref.py", "tests/test_new.py", "tests/test_x.py"]
    assert ws.restore_frozen() == ["reference/ref.py", "tests/test_new.py", "tests/test_x.py"]
    assert (ws.root / "tests" / "test_x.py").read_text() == "ORIGINAL\n"
    assert (ws.root / "reference" / "ref.py").exists()
    assert not (ws.root / "tests" / "test_new.py").exists()
    commit = ws.commit("iteration 1", tag="iter-0001")
    assert ws.changed_files(commit) == ["translation/jax_env.py"] and not ws.dirty()
    (ws.root / "translation" / "jax_env.py").write_text("broken\n")
    ws.commit("iteration 2")
    ws.reset_to(commit)
    assert (ws.root / "translation" / "jax_env.py").read_text() == "ok\n"


def test_every_template_renders():
    assert {"module.md.j2", "repair.md.j2", "optimise.md.j2", "handoff.md.j2",
            "tests_l1.md.j2", "tests_l2.md.j2"} <= set(names())
    text = render("tests_l1.md.j2", module={"name": "damage"}, package="translation",
                  tolerance="exact")
    assert "translation/tests/test_damage.py" in text
    text = render("tests_l2.md.j2", package="translation", tolerance="atol 1e-6")
    assert "set_state" in text and "from_jax(to_jax(state))" in text
