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


def test_masked_policies_take_legal_actions_of_the_episode_reference():
    ref_cls = TcgPocketReference
    assert is_masked(ref_cls())
    make, legal_action, scripted = masked_policies(ref_cls, {"pool": "basic"})
    a, b = make(), make()
    rng = np.random.default_rng(0)
    a.reset(1)
    b.reset(2)  # b was touched last: the scripted policy acts for b
    for _ in range(40):
        action = scripted(None, rng)
        assert b.action_mask()[action]
        b.step(action)
    state = a.get_state()
    for _ in range(20):
        action = legal_action(state, rng)
        assert a.action_mask()[action]  # legal in `state` (a is still there: not moved)
    assert all(np.array_equal(v, a.get_state()[k]) for k, v in state.items())
