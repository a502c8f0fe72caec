"""Mutation scoring: mutants are generated from the source, applied in place and undone, run
through the hierarchy in worker processes, and equivalent ones are told apart."""

from __future__ import annotations

import inspect
import json

import pytest

from envport.core.registry import spec
from envport.envs.cartpole import bridge as cartpole_bridge
from envport.verify import mutation as mutate
from envport.verify.mutation.apply import applied
from envport.verify.mutation.equivalence import float_boundary


def cartpole_mutants() -> tuple[object, list[mutate.MutantSource]]:
    module = mutate.translation_module(spec("cartpole"))
    return module, mutate.generate(module)


def find(mutants, text: str, description: str) -> mutate.MutantSource:
    hits = [m for m in mutants if text in m.mutant.source_line
            and m.mutant.description == description]
    assert len(hits) == 1, [m.mutant for m in hits]
    return hits[0]


def test_every_operator_generates_mutants_that_compile():
    _, mutants = cartpole_mutants()
    assert {m.mutant.operator for m in mutants} == set(mutate.OPERATORS)
    assert len({m.mutant.id for m in mutants}) == len(mutants)
    for m in mutants:
        compile(m.statement_code, "mutant", "exec")
        assert m.mutant.original != m.mutant.mutated
    dropped = [m.mutant for m in mutants if m.mutant.operator == "drop_update"]
    assert any(m.mutated.startswith("CartPoleState(x=state.x,") for m in dropped)
    # docstrings, annotations and imports are never mutated
    assert not any("import" in m.mutant.source_line for m in mutants)


def test_a_mutant_is_applied_in_place_and_undone():
    module, mutants = cartpole_mutants()
    gravity = find(mutants, "gravity: float = 9.8", "9.8 -> 10.780000000000001")
    before = dict(vars(module))
    with applied(module, gravity):
        assert spec("cartpole").make().default_params().gravity == 9.8 * 1.1
        # the state class stays the one the bridge uses
        assert module.CartPoleState is cartpole_bridge.CartPoleState
    assert vars(module) == before
    assert spec("cartpole").make().default_params().gravity == 9.8


def test_float_boundaries_are_located_in_the_jaxpr():
    module, mutants = cartpole_mutants()
    path = inspect.getfile(module)
    env = spec("cartpole").make()
    on_floats = find(mutants, "(new.x < -p.x_threshold)", "< -> <=")
    on_ints = find(mutants, "truncated = new.time >= p.max_steps", ">= -> >")
    assert float_boundary(env, on_floats.mutant, path)
    assert not float_boundary(env, on_ints.mutant, path)


def test_a_table_key_without_a_column_must_name_the_only_site_on_its_line():
    """A known-equivalent reason keyed without a column would cover every site of its mutation
    on the line: refused where the line has two (the one written for ``moves > 0`` covered
    ``t_pp > 0`` too), accepted once the key names its column or every site, or where the
    line has one site."""
    from types import SimpleNamespace

    from envport.verify.mutation.equivalence import EVERY_SITE, check_known_table, known_reason
    from envport.verify.mutation.generate import Mutant

    line = "ok = (moves > 0) & (pp > 0)"

    def site(column: int) -> tuple[str, Mutant]:
        return "engine.py", Mutant(id=f"m{column}", operator="compare", line=1, original="",
                                   mutated="", top_level="f", statement=0,
                                   description="> -> >=", source_line=line, column=column)

    reason = ("proof", "why")
    with pytest.raises(ValueError, match=r"matches columns \[6, 20\]"):
        check_known_table({("engine.py", line, "> -> >="): reason}, [site(6), site(20)])
    check_known_table({("engine.py", line, "> -> >=", 6): reason}, [site(6), site(20)])
    check_known_table({("engine.py", line, "> -> >=", EVERY_SITE): reason}, [site(6), site(20)])
    check_known_table({("engine.py", line, "> -> >="): reason}, [site(6)])
    for fourth, kinds in ((6, ["proof", ""]), (EVERY_SITE, ["proof", "proof"])):
        table = {("engine.py", line, "> -> >=", fourth): reason}
        spec = SimpleNamespace(verification=SimpleNamespace(equivalent_mutants=lambda t=table: t))
        assert [known_reason(spec, "/x/engine.py", m)[0] for _, m in (site(6), site(20))] == kinds


def test_sampling_is_spread_over_operators():
    _, mutants = cartpole_mutants()
    chosen = mutate.sample(mutants, 14, seed=3)
    assert len(chosen) == 14 and len({m.mutant.operator for m in chosen}) == 7
    assert mutate.sample(mutants, None) == mutants


def test_mutate_kills_a_physics_bug_and_recognises_an_equivalent_mutant(tmp_path):
    _, mutants = cartpole_mutants()
    gravity = find(mutants, "gravity: float = 9.8", "9.8 -> 10.780000000000001")
    clamped = find(mutants, "CartPoleState(x[0], x[1], x[2], x[3]", "3 -> 4")
    seen = []
    report = mutate.run_mutation("cartpole", only=[gravity.mutant.id, clamped.mutant.id],
                                 states=200, samples=1000, examples=2, episodes=2,
                                 progress=lambda r, done, total: seen.append((done, total)))
    data = report.to_json()
    assert {"env", "mutants", "killed", "kill_rate", "by_layer", "survivors"} <= set(data)
    assert data["mutants"] == 2 and data["killed"] == 1 and data["equivalent"] == 1
    assert data["kill_rate"] == 1.0 and data["by_layer"]["interaction"] == 1
    by_id = {r["id"]: r for r in data["results"]}
    assert by_id[gravity.mutant.id]["killed_by"] == "interaction"
    # x[4] on a 4-vector: JAX clamps the index, so the program compiles to the same code
    assert "same compiled program" in by_id[clamped.mutant.id]["equivalence"]
    assert by_id[clamped.mutant.id]["equivalence_kind"] == "compiled"
    assert data["equivalent_by_kind"] == {"compiled": 1} and data["kill_rate_strict"] == 1.0
    assert seen[-1] == (2, 2)
    json.dumps(data)  # the --json output is plain JSON


@pytest.mark.slow  # 46 s; a mode-only bug found by verify stays in test_modes_seeds_params.py
def test_a_mutant_of_a_non_default_mode_is_killed_in_that_mode():
    """A later sub-frame's reward kept from the sub-frame before (arguments 2 and 3 of
    `jnp.where(live, n_reward, reward)` swapped): frameskip 1 never traces that code, so in the
    default mode alone it is the same program; in the declared frameskip modes it is a bug."""
    module = mutate.translation_module(spec("pong"))
    mutant = find(mutate.generate(module), "reward = jnp.where(live, n_reward, reward)",
                  "arguments 2 and 3 swapped")
    report = mutate.run_mutation("pong", only=[mutant.mutant.id], states=100, samples=500,
                                 examples=2, episodes=2)
    (result,) = report.to_json()["results"]
    assert not result["equivalent"] and result["killed_by"] in ("property", "interaction",
                                                                "rollout")
    assert "frameskip=" in result["mode"]
    assert "pong[frameskip=4]" in report.settings["modes"]


def test_the_report_title_names_every_mutated_file():
    """A run over several modules (the Pokemon engine's four) names each in its title, not
    only the last path's file name."""
    from rich.console import Console

    from envport.verify.mutation.report import MutationReport, render

    report = MutationReport("pokemon-gen1", "/a/pkg/engine.py, /a/pkg/mechanics.py, /a/pkg/prng.py",
                            generated=7)
    console = Console(record=True, width=200)
    render(report, console)
    text = " ".join(console.export_text().split())  # the title wraps to the table's width
    assert "0 mutants of engine.py, mechanics.py, prng.py (7 generated)" in text
