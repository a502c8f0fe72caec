"""A translation's mutation plan: the modules mutated, the layers run, L2 against reference
steps recorded once per run, and the layers run op by op."""

from __future__ import annotations

import types

import numpy as np
import pytest

from envport.core.registry import spec
from envport.verify import mutation as mutate
from envport.verify.layers import LAYERS
from envport.verify.mutation import execute, recorded
from envport.verify.mutation.apply import applied


def test_the_default_plan_is_the_translations_module_and_every_layer():
    plan = execute.mutation_plan(spec("cartpole"))
    assert plan["layers"] == LAYERS and not plan["recorded_interaction"] and not plan["eager"]
    assert [m.__name__ for m in execute.translation_modules(spec("cartpole"))] == plan["modules"]
    assert plan["modules"] == [type(spec("cartpole").make()).__module__]


def test_pokemon_gen1_mutates_its_engine_modules():
    plan = execute.mutation_plan(spec("pokemon-gen1"))
    assert plan["modules"][0] == "envport.envs.pokemon_gen1.engine"
    assert "envport.envs.pokemon_gen1.env" not in plan["modules"]
    # its L1 component checks (mechanics against Showdown's functions) alone, then L2 and L3
    assert plan["layers"] == ("property", "interaction", "rollout") and plan["components"]
    assert plan["recorded_interaction"]


def test_tcg_pocket_runs_its_component_checks_on_each_mutant():
    plan = execute.mutation_plan(spec("tcg-pocket"))
    assert plan["components"] and plan["layers"] == ("property", "interaction", "rollout")
    assert "envport.envs.tcg_pocket.jax_engine.rules" in plan["modules"]


def _fake_spec(plan: dict) -> object:
    cls = type("Fake", (), {"mutation_plan": plan})
    return types.SimpleNamespace(make=cls, name="fake",
                                 verification=types.SimpleNamespace(components={}))


def test_a_bad_plan_is_refused_naming_what_is_wrong():
    with pytest.raises(ValueError, match="unknown keys"):
        execute.mutation_plan(_fake_spec({"modules": [], "speed": 1}))
    with pytest.raises(ValueError, match="unknown layers"):
        execute.mutation_plan(_fake_spec({"layers": ["interaction", "lockstep"]}))
    with pytest.raises(ValueError, match="need recorded_interaction"):
        execute.mutation_plan(_fake_spec({"interaction_sources": ["m:f"]}))
    with pytest.raises(ValueError, match="components, but fake declares no"):
        execute.mutation_plan(_fake_spec({"components": True}))
    with pytest.raises(ValueError, match="'module:factory'"):
        execute.mutation_plan(_fake_spec({"recorded_interaction": True,
                                          "interaction_sources": ["no_colon"]}))
    with pytest.raises(ValueError, match="rollout_sources need the rollout layer"):
        execute.mutation_plan(_fake_spec({"layers": ["interaction"],
                                          "rollout_sources": ["m:f"]}))
    with pytest.raises(ValueError, match="rollout_sources are 'module:factory'"):
        execute.mutation_plan(_fake_spec({"rollout_sources": ["no_colon"]}))


def test_a_rollout_source_is_l3_on_that_references_episodes():
    from envport.verify import verify

    s = spec("cartpole")
    assert execute.mutation_plan(s)["rollout_sources"] == ()
    target = s.make_reference.target  # a second reference of the same kind as a source
    other = execute.source_spec(s, target)
    assert other.make_reference.target == target and other.name == s.name
    report = verify(other, ("rollout",), env=s.make(), episodes=2, seed=3)
    assert report.passed and report.layers["rollout"].counts["episodes"] == 2


def test_mutants_of_several_modules_have_distinct_ids_and_their_module():
    from envport.envs.pong import jax_env, params

    every = execute.generate_all([jax_env, params], ("constant",))
    ids = [m.mutant.id for m in every]
    assert len(set(ids)) == len(ids)
    assert {m.mutant.module for m in every} == {jax_env.__name__, params.__name__}
    assert {i.split(":")[0] for i in ids} == {"jax_env", "params"}
    one = execute.generate_all([jax_env], ("constant",))
    assert all(":" not in m.mutant.id for m in one)  # one module: the plain ids


def test_recorded_interaction_passes_the_original_and_kills_a_mutant(tmp_path):
    s = spec("cartpole")
    cases = recorded.record(s, 60, seed=5)
    path = tmp_path / "cases.pkl"
    recorded.save(cases, path)
    again = recorded.load(path)
    assert len(again) == 60 and all(c.expected is not None for c in again)
    assert recorded.check(s, s.make(), again, 5).passed
    module = mutate.translation_module(s)
    gravity = next(m for m in mutate.generate(module) if "gravity: float = 9.8" in
                   m.mutant.source_line and m.mutant.operator == "constant")
    with applied(module, gravity):
        result = recorded.check(s, s.make(), again, 5)
    assert not result.passed and result.failures
    assert "recorded" in result.failures[0].test_id


def test_a_recorded_result_is_read_as_a_report_of_its_layer():
    from envport.verify.report import LayerResult

    failed = LayerResult("interaction", passed=False, failures=[])
    assert execute._first_failure(execute._Recorded(failed)) == ("interaction", "failed")
    assert execute._first_failure(execute._Recorded(LayerResult("interaction", True))) is None


def test_list_names_every_module_of_the_plan_with_the_ids_only_takes(capsys):
    from envport.cli import main

    assert main(["mutate", "pokemon-gen1", "--list", "--operators", "compare"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ids = [line.split()[0] for line in lines if " line " in line]
    every = execute.generate_all(execute.translation_modules(spec("pokemon-gen1")), ("compare",))
    assert ids == [m.mutant.id for m in every]
    # each module of the plan with mutants appears, not only the first (engine.py)
    assert {i.split(":")[0] for i in ids} == {m.mutant.module.rsplit(".", 1)[-1] for m in every}
    assert len({i.split(":")[0] for i in ids}) > 1


def test_an_interaction_source_adds_as_many_cases_again_from_its_own_resets():
    s = spec("cartpole")
    target = s.make_reference.target  # a second reference of the same kind as a source
    plain = recorded.record(s, 20, seed=4)
    both = recorded.record(s, 20, seed=4, sources=(target,))
    assert len(both) == 40
    name = target.rpartition(":")[2]
    assert all(c.origin.startswith(f"{name}/") for c in both[20:])
    # the run's own cases are unchanged by the source (a superset of the plain recording)
    for a, b in zip(plain, both[:20], strict=True):
        assert a.origin == b.origin
        assert all(np.array_equal(a.state[k], b.state[k]) for k in a.state)
    # the source's states are other states (its own seed), each with the reference's result
    assert any(not np.array_equal(a.state[k], b.state[k])
               for a, b in zip(both[:20], both[20:], strict=True) for k in a.state)
    assert recorded.check(s, s.make(), both, 4).passed


@pytest.mark.slow  # ~7 min at load 10: a control run of the 17 checks, then the mutant's
def test_a_tcg_mutant_only_a_component_check_kills_is_killed_by_it():
    """A coin_fail attack that does nothing on heads instead of tails (`h == 0` -> `h != 0`):
    1,000 L2 states and 4 games at random let it survive (the README's runs 1 and 2); the
    component check `template:coin_fail` attacks with each coin_fail card of the pool."""
    s = spec("tcg-pocket")
    every = execute.generate_all(execute.translation_modules(s), ("compare",))
    (coin_fail,) = [m.mutant for m in every if m.mutant.original == "h == 0"
                    and "T_COIN_FAIL" in m.mutant.source_line and m.mutant.mutated == "h != 0"]
    report = mutate.run_mutation("tcg-pocket", only=[coin_fail.id], states=1, episodes=1,
                                 examples=1, samples=100, workers=1, timeout_s=1800)
    (result,) = report.results
    assert result["killed_by"] == "property", result
    assert "component:template:coin_fail" in result["detail"]
