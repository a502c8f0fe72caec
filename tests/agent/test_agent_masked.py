"""The loop on a reference with action masks and data files (the TCG reference): the plan
copies the card table, the generated spec draws legal actions only, the prompts say so."""

from __future__ import annotations

import json

import numpy as np

from envport.agent.harness import is_masked, masked_policies
from envport.agent.loop import TranslateConfig, create_run, reference_path
from envport.agent.plan import plan_modules, reference_sources
from envport.envs.tcg_pocket.cards import TABLE_PATH
from envport.envs.tcg_pocket.reference import MAX_TAPE, TcgPocketReference

TCG = "envport.envs.tcg_pocket.reference:TcgPocketReference"


def test_data_files_the_sources_name_are_copied_not_planned(tmp_path):
    sources = reference_sources(TCG)
    data = [s for s in sources if s.role == "data"]
    assert [s.name for s in data] == ["cards.json"]
    assert json.loads(data[0].text)["cards"]  # the whole table, as text
    assert reference_path(data[0]) == "reference/cards.json"
    plan = plan_modules(sources)
    assert all("cards.json" not in m.sources for m in plan)
    assert plan[-2].name == "jax_env" and plan[-2].sources == [TCG.partition(":")[0]]


def test_a_run_of_the_tcg_reference_has_its_card_table_and_mask_notes(tmp_path):
    cfg = TranslateConfig(reference=TCG, agent="manual", workdir=str(tmp_path / "run"),
                          reference_kwargs={"pool": "basic"})
    run = create_run(cfg)
    ws = run / "workspace"
    assert (ws / "reference" / "cards.json").read_text() == TABLE_PATH.read_text()
    info = json.loads((run / "run.json").read_text())["reference_info"]
    assert "action_mask()" in info["notes"] and "`rng`" in info["notes"]
    assert info["tape_fields"]["kind"] == f"int8[{MAX_TAPE}]"
    assert info["state_fields"]["rng"] == "uint32[2]"
    assert "reference/cards.json" in (ws / "TASK.md").read_text()


def test_masked_policies_act_legally_in_the_state_they_are_given():
    ref_cls = TcgPocketReference
    assert is_masked(ref_cls())
    legal_action, scripted_action = masked_policies(ref_cls, {"pool": "basic"})
    ref = ref_cls(pool="basic")
    rng = np.random.default_rng(0)
    ref.reset(2)
    for _ in range(40):
        state = ref.get_state()
        action = scripted_action(state, rng)
        assert ref.action_mask()[action]
        assert all(np.array_equal(v, ref.get_state()[k]) for k, v in state.items())  # not moved
        ref.step(action)
    state = ref.get_state()
    for _ in range(20):
        assert ref.action_mask()[legal_action(state, rng)]


def test_the_verifiers_scripted_policy_acts_on_the_reference_state():
    from dataclasses import replace

    from envport.core.registry import spec
    from envport.verify.policies import make_policy

    seen = []

    def scripted_action(state, rng):
        seen.append(float(np.asarray(state["x"])))
        return 1

    base = spec("cartpole")
    masked = replace(base, verification=replace(base.verification,
                                                scripted_action=scripted_action))
    ref = masked.make_reference()
    ref.reset(5)
    act = make_policy("scripted", masked, ref)
    assert act(None, np.random.default_rng(0)) == 1
    assert seen == [float(np.asarray(ref.get_state()["x"]))]


def test_a_helper_is_checked_by_its_tests_before_the_env_exists_from_a_relative_run(
        tmp_path, monkeypatch):
    from pathlib import Path

    from envport.agent.loop import SubprocessVerifier
    from envport.agent.plan import ModulePlan

    monkeypatch.chdir(tmp_path)
    ws = Path("run") / "workspace"
    (ws / "harness").mkdir(parents=True)
    (ws / "translation" / "tests").mkdir(parents=True)
    (ws / "harness" / "config.json").write_text(json.dumps(
        {"name": "toy", "reference": TCG, "package": "translation"}))
    (ws / "translation" / "__init__.py").write_text("")
    (ws / "translation" / "tests" / "__init__.py").write_text("")
    (ws / "translation" / "helper.py").write_text("def twice(x):\n    return 2 * x\n")
    (ws / "translation" / "tests" / "test_helper.py").write_text(
        "from translation.helper import twice\n\n\ndef test_twice():\n    assert twice(3) == 6\n")
    cfg = TranslateConfig(reference=TCG, agent="manual", workdir="run")
    verifier = SubprocessVerifier(Path("run"), cfg)  # relative, as `--workdir runs/x` gives
    module = ModulePlan("helper", "helper", "translation/helper.py")
    out = Path("run") / "verify" / "0001-module-helper.json"
    data = verifier.verify(module=module, seed=0, sizes={}, out=out)
    prop = data["report"]["layers"]["property"]
    assert data["report"]["passed"], data["report"]
    assert prop["agent tests"] == 1 and out.exists()  # no jax_env.py: not imported
    (ws / "translation" / "tests" / "test_helper.py").write_text(
        "from translation.helper import twice\n\n\ndef test_twice():\n    assert twice(3) == 7\n")
    data = verifier.verify(module=module, seed=0, sizes={}, out=out)
    assert not data["report"]["passed"]
    assert data["report"]["layers"]["property"]["failures"][0]["test_id"] == \
        "property[agent-tests]"


def test_a_manual_agents_time_is_the_time_from_prompt_to_resume(tmp_path):
    from envport.agent.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.append({"type": "agent", "iteration": 1, "agent": {"status": "waiting"},
                   "agent_s": 0.0})
    ledger.append({"type": "iteration", "iteration": 1, "agent_s": 0.0,
                   "agent_wall_s": 42.5, "verify_s": 3.0})
    ledger.append({"type": "agent", "iteration": 2, "agent": {"status": "ok"},
                   "agent_s": 7.0})  # a backend's call: its own record counts
    ledger.append({"type": "iteration", "iteration": 2, "agent_s": 0.0,
                   "agent_wall_s": 7.0, "verify_s": 1.0})
    totals = ledger.totals()
    assert totals["agent_s"] == 42.5 + 7.0 and totals["verify_s"] == 4.0


def test_generic_state_bins_are_hashable_for_array_fields():
    from envport.agent.harness import _generic_bins

    ref = TcgPocketReference(pool="basic")
    ref.reset(0)
    bins = _generic_bins(ref.get_state())
    assert len({bins: 1}) == 1 and len(bins) == len(ref.get_state())


def test_report_names_what_failed_per_iteration(tmp_path):
    from envport.agent.loop import synthetic_failure
    from envport.agent.report import _what_failed

    (tmp_path / "verify").mkdir()
    (tmp_path / "verify" / "0001-full.json").write_text(json.dumps(
        synthetic_failure("harness[crash]", "the verification process crashed\nTraceback",
                          "toy")))
    record = {"iteration": 1, "result": "verify/0001-full.json"}
    assert _what_failed(tmp_path, record) == (
        "L1 property fails: `harness[crash]`: the verification process crashed")
    assert _what_failed(tmp_path, {"iteration": 2, "result": "verify/missing.json"}) == ""


def test_a_run_of_a_registered_masked_reference_steps_a_legal_action_and_has_the_mask_notes(
        tmp_path):
    # The registered tcg-pocket spec's own reference: the loop reuses that spec (`like`), draws
    # the tape's action through its legal_action and still writes the mask notes.
    cfg = TranslateConfig(reference="envport.envs.tcg_pocket.spec_support:PoolReference",
                          agent="manual", workdir=str(tmp_path / "run"))
    info = json.loads((create_run(cfg) / "run.json").read_text())["reference_info"]
    assert info["like"] == "tcg-pocket"
    assert "action_mask()" in info["notes"] and "`rng`" in info["notes"]
    assert info["tape_fields"]["kind"] == f"int8[{MAX_TAPE}]"
