"""The translation loop's logic, with a fast fake verifier: phases, stops, resume, budgets,
frozen paths, infrastructure errors, optimisation, hand-off notes and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from agent_helpers import BRIDGE, ENV_BUG, ENV_OK, FakeVerifier, recording

from envport.agent.ledger import Ledger
from envport.agent.loop import TranslateError, translate
from envport.agent.report import write_report
from envport.agent.workspace import Workspace


def script(tmp_path: Path, steps: list[dict]) -> str:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"steps": steps}))
    return f"scripted:{path}"


def run(cfg, **kw):
    verifier = kw.pop("verifier", None) or FakeVerifier(Path(cfg.workdir))
    return translate(cfg, verifier=verifier, log=lambda m: None, **kw), verifier


def resume(run_dir, verifier=None, **overrides):
    verifier = verifier or FakeVerifier(Path(run_dir))
    return translate(resume=Path(run_dir), overrides=overrides, verifier=verifier,
                     log=lambda m: None)


BUGGY = {"expect": "module:jax_env", "write": {"translation/jax_env.py": ENV_BUG},
         "usage": {"input_tokens": 1000, "output_tokens": 200, "cost_usd": 0.05}}
BRIDGE_STEP = {"expect": "module:bridge", "write": {"translation/bridge.py": BRIDGE},
               "usage": {"cost_usd": 0.02}}
REPAIR = {"expect": "repair", "write": {"translation/jax_env.py": ENV_OK},
          "usage": {"cost_usd": 0.01}}


def test_modules_then_composition_then_repair_reaches_success(tmp_path, config_factory):
    cfg = config_factory(script(tmp_path, [BUGGY, BRIDGE_STEP, REPAIR]))
    summary, verifier = run(cfg)
    assert summary["status"] == "success" and summary["verified"]
    assert summary["iterations"] == 3 and summary["cost_usd"] == pytest.approx(0.08)
    run_dir = Path(cfg.workdir)
    its = Ledger(run_dir / "ledger.jsonl").iterations()
    assert [r["kind"] for r in its] == ["module:jax_env", "module:bridge", "repair"]
    assert [r["highest_layer"] for r in its] == ["property", "property", "distribution"]
    assert "composition" in its[1]["events"] and "held-out seeds pass: verified" in its[2][
        "events"]
    # the module checks ran per module, then the composition on the dev seed, then held-out
    assert [c["module"] for c in verifier.calls[:2]] == ["jax_env", "bridge"]
    assert verifier.calls[-1] == {"module": None, "seed": 7}
    # one commit per iteration, tagged
    ws = Workspace(run_dir / "workspace")
    assert ws.git("tag", "--list", "iter-*").split() == ["iter-0001", "iter-0002", "iter-0003"]
    assert "GRAVITY = 9.8\n" in (ws.root / "translation" / "jax_env.py").read_text()
    # the repair prompt: lowest failing layer in detail, the rest as counts
    prompt = (run_dir / "prompts" / "0003-repair.md").read_text()
    for part in ("Lowest failing layer: L2 interaction", "`interaction[random]` (seed 0)",
                 "minimal counterexample", '"theta": 0.02', "| state.theta_dot | 0.5 | 0.51 |",
                 "- L1 property: pass; checked 6 tests", "python harness/verify.py --seed 0",
                 "The reference and the tests are correct. Fix these files",
                 "`translation/jax_env.py`", "Action: `1`"):
        assert part in prompt, part
    # the module prompt has its five parts, the reference verbatim
    module = (run_dir / "prompts" / "0001-module-jax_env.md").read_text()
    for part in ("## 1. The source module and its size", "## 2. Target-language constraints",
                 "## 3. Interface contract", "## 4. The reference code, verbatim",
                 "## 5. Tests", "class CartPoleReference", "lines", "test_jax_env.py"):
        assert part in module, part
    held_out = json.loads((run_dir / "run.json").read_text())["config"]["held_out_seeds"]
    assert all(str(s) not in module + prompt for s in held_out if s > 99)


def test_held_out_failure_is_repaired_without_showing_the_seed(tmp_path, config_factory):
    steps = [{**BUGGY, "write": {"translation/jax_env.py": "HELDOUT_BUG = 1\n"}}, BRIDGE_STEP,
             {"expect": "heldout-repair", "write": {"translation/jax_env.py": ENV_OK}}]
    cfg = config_factory(script(tmp_path, steps), held_out_seeds=[31337])
    summary, _ = run(cfg)
    assert summary["status"] == "success"
    prompt = (Path(cfg.workdir) / "prompts" / "0003-heldout-repair.md").read_text()
    assert "held-out seeds" in prompt and "31337" not in prompt and '"theta"' not in prompt


def test_rollout_failure_reports_first_divergence(tmp_path, config_factory):
    steps = [{**BUGGY, "write": {"translation/jax_env.py": "ROLLOUT_BUG = 1\n"}}, BRIDGE_STEP,
             REPAIR]
    cfg = config_factory(script(tmp_path, steps))
    summary, _ = run(cfg)
    assert summary["status"] == "success"
    prompt = (Path(cfg.workdir) / "prompts" / "0003-repair.md").read_text()
    assert "Lowest failing layer: L3 rollout" in prompt and "First divergence: step 17" in prompt
    assert "- L2 interaction: pass; checked 60 states" in prompt


def test_optimisation_rounds_keep_green_and_revert_breakage(tmp_path, config_factory):
    steps = [{**BUGGY, "write": {"translation/jax_env.py": ENV_OK}}, BRIDGE_STEP,
             {"expect": "optimise", "write": {"translation/jax_env.py": ENV_OK + "FAST = 1\n"}},
             {"expect": "optimise", "write": {"translation/jax_env.py": ENV_BUG + "FAST = 1\n"}}]
    cfg = config_factory(script(tmp_path, steps), optimise_rounds=2)
    summary, _ = run(cfg)
    assert summary["status"] == "success" and summary["iterations"] == 4
    run_dir = Path(cfg.workdir)
    text = (run_dir / "workspace" / "translation" / "jax_env.py").read_text()
    assert "FAST" in text and "BUG" not in text  # the breaking round was reverted
    its = Ledger(run_dir / "ledger.jsonl").iterations()
    kept = [e for e in its[2]["events"] if e.startswith("optimisation kept: speedup 2.0")]
    assert kept and "95% CI [" in kept[0] and "over 5 interleaved repeats" in kept[0]
    assert "optimisation broke verification: reverted" in its[3]["events"]
    first = (run_dir / "prompts" / "0003-optimise.md").read_text()
    assert "| translation | 64 | 1,000,000 |" in first and "tests stay green" in first
    second = (run_dir / "prompts" / "0004-optimise.md").read_text()
    assert "your last change was kept: speedup 2.0" in second
    assert summary["last_green"] == Workspace(run_dir / "workspace").git("rev-parse",
                                                                        "iter-0003")


def test_frozen_edit_is_restored_and_recorded(tmp_path, fake_agents, config_factory):
    baseline_test = None
    fake_agents.install("claude", [
        {"recording": recording("claude_success.json"),
         "write": {"translation/jax_env.py": ENV_OK,
                   "tests/test_hierarchy.py": "def test_everything():\n    pass\n",
                   "reference/extra.py": "# planted\n"}},
        {"recording": recording("claude_success.json"),
         "write": {"translation/bridge.py": BRIDGE}},
    ])
    cfg = config_factory("claude")
    summary, _ = run(cfg)
    assert summary["status"] == "success"
    run_dir = Path(cfg.workdir)
    ws = Workspace(run_dir / "workspace")
    baseline_test = ws.git("show", "envport-baseline:tests/test_hierarchy.py")
    assert (ws.root / "tests" / "test_hierarchy.py").read_text().strip() == baseline_test.strip()
    assert not (ws.root / "reference" / "extra.py").exists()
    first = Ledger(run_dir / "ledger.jsonl").iterations()[0]
    assert first["frozen_edits"] == ["reference/extra.py", "tests/test_hierarchy.py"]
    assert all(not f.startswith(("tests/", "reference/")) for f in first["files"])
    assert summary["cost_usd"] == pytest.approx(2 * 0.4213)


def test_infrastructure_errors_do_not_consume_iterations(tmp_path, fake_agents, config_factory):
    fake_agents.install("claude", [
        {"stderr": "Error: connection reset\n", "exit": 1},
        {"stdout": "All done, every test passes.\n"},
        {"recording": recording("claude_success.json"),
         "write": {"translation/jax_env.py": ENV_OK}},
        {"recording": recording("claude_success.json"),
         "write": {"translation/bridge.py": BRIDGE}},
    ])
    summary, _ = run(config_factory("claude"))
    assert summary["status"] == "success" and summary["iterations"] == 2
    assert summary["infra_errors"] == 2


def test_repeated_infrastructure_errors_stop_the_run(tmp_path, fake_agents, config_factory):
    fake_agents.install("claude", [{"stderr": "boom\n", "exit": 2}])
    summary, _ = run(config_factory("claude", max_infra_retries=2))
    assert summary["status"] == "stopped" and summary["reason"].startswith("infrastructure")
    assert summary["iterations"] == 0 and summary["infra_errors"] == 3


def test_budget_reached_mid_iteration_stops_cleanly_and_resumes(tmp_path, fake_agents,
                                                                config_factory):
    fake_agents.install("claude", [
        {"recording": recording("claude_success.json"),
         "write": {"translation/jax_env.py": ENV_BUG}},
        {"recording": recording("claude_success.json"),
         "write": {"translation/bridge.py": BRIDGE}},
        {"recording": recording("claude_success.json"),
         "write": {"translation/jax_env.py": ENV_OK}},
    ])
    cfg = config_factory("claude", budget_usd=0.5)
    summary, _ = run(cfg)
    # the second call took the total to 0.84 > 0.5: recorded, verified, then stopped
    assert summary["status"] == "stopped" and summary["reason"].startswith("budget reached")
    assert summary["iterations"] == 2 and summary["cost_usd"] == pytest.approx(0.8426)
    assert (Path(cfg.workdir) / "HANDOFF.md").exists()
    assert len(fake_agents.calls("claude")) == 2
    again = resume(cfg.workdir, budget_usd=5.0)
    assert again["status"] == "success" and again["iterations"] == 3
    ledger = Ledger(Path(cfg.workdir) / "ledger.jsonl")
    assert [r["type"] for r in ledger.records()].count("resume") == 1
    assert [r["iteration"] for r in ledger.iterations()] == [1, 2, 3]


def test_interrupted_agent_call_resumes_with_its_edits(tmp_path, config_factory):
    steps = [BUGGY, {**BRIDGE_STEP, "interrupt": True},
             {"expect": "module:bridge", "say": "the bridge is already written"}, REPAIR]
    cfg = config_factory(script(tmp_path, steps))
    summary, _ = run(cfg)
    assert summary["status"] == "interrupted" and summary["iterations"] == 1
    ws = Workspace(Path(cfg.workdir) / "workspace")
    assert ws.dirty() and (ws.root / "translation" / "bridge.py").exists()  # nothing lost
    again = resume(cfg.workdir)
    assert again["status"] == "success" and again["iterations"] == 3
    its = Ledger(Path(cfg.workdir) / "ledger.jsonl").iterations()
    assert [r["kind"] for r in its] == ["module:jax_env", "module:bridge", "repair"]
    assert "translation/bridge.py" in its[1]["files"]


class InterruptingVerifier(FakeVerifier):
    def __init__(self, run_dir: Path, at_call: int):
        super().__init__(run_dir)
        self.at_call = at_call

    def verify(self, **kw):
        if len(self.calls) + 1 == self.at_call:
            self.calls.append({"interrupted": True})
            raise KeyboardInterrupt
        return super().verify(**kw)


def test_interrupted_verification_is_finished_on_resume(tmp_path, config_factory):
    cfg = config_factory(script(tmp_path, [BUGGY, BRIDGE_STEP, REPAIR]))
    summary, _ = run(cfg, verifier=InterruptingVerifier(Path(cfg.workdir), at_call=2))
    assert summary["status"] == "interrupted" and summary["iterations"] == 1
    state = json.loads((Path(cfg.workdir) / "agent" / "scripted-state.json").read_text())
    assert state["next"] == 2  # the bridge step ran; its verification did not
    again = resume(cfg.workdir)
    assert again["status"] == "success" and again["iterations"] == 3
    its = Ledger(Path(cfg.workdir) / "ledger.jsonl").iterations()
    assert [r["iteration"] for r in its] == [1, 2, 3]  # the agent was not called twice
    agent_records = Ledger(Path(cfg.workdir) / "ledger.jsonl").of_type("agent")
    assert [r["iteration"] for r in agent_records] == [1, 2, 3]


def test_no_progress_writes_a_handoff_note(tmp_path, config_factory):
    steps = [BUGGY, BRIDGE_STEP] + [{"expect": "repair", "say": f"attempt {i}"} for i in
                                    range(5)]
    cfg = config_factory(script(tmp_path, steps), patience=2)
    summary, _ = run(cfg)
    assert summary["reason"] == "no progress for 2 iterations" and summary["iterations"] == 4
    note = Path(summary["handoff"]).read_text()
    for part in ("needs a human", "no progress for 2 iterations", "L2 interaction fails",
                 "state.theta_dot", "attempt 1", "envport translate --resume",
                 "| 4 | repair | ok | property |"):
        assert part in note, part


def test_max_iterations_and_report(tmp_path, config_factory):
    cfg = config_factory(script(tmp_path, [BUGGY, BRIDGE_STEP, REPAIR]), max_iterations=2)
    summary, _ = run(cfg)
    assert summary["reason"] == "max iterations (2)"
    paths = write_report(Path(cfg.workdir))
    md = paths["markdown"].read_text()
    assert "| 1 | module:jax_env | ok | property | 6/6 |" in md
    assert "0.050 (reported)" in md and "max iterations (2)" in md
    page = paths["html"].read_text()
    assert "data:image/png;base64," in page and "<details>" in page and "GRAVITY" in page
    assert paths["plot"].stat().st_size > 10_000


def test_bad_input_is_reported(tmp_path, config_factory, monkeypatch):
    with pytest.raises(TranslateError, match=r"(?s)cannot import .nosuch_pkg.envs.*Reference "
                                             r"protocol"):
        run(config_factory(script(tmp_path, [BUGGY]), reference="nosuch_pkg.envs:MyEnv"))
    with pytest.raises(TranslateError, match="lacks reset, step"):
        run(config_factory(script(tmp_path, [BUGGY]), reference="pathlib:Path",
                           workdir=str(tmp_path / "r2")))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ENVPORT_AGENT_CLIS", str(tmp_path / "none"))
    monkeypatch.delenv("ENVPORT_CLAUDE", raising=False)
    with pytest.raises(TranslateError, match="`claude` was not found on PATH"):
        run(config_factory("claude", workdir=str(tmp_path / "r3")))
    assert not (tmp_path / "r3").exists()  # nothing was created
    with pytest.raises(TranslateError, match="only `jax` is supported"):
        run(config_factory(script(tmp_path, [BUGGY]), target="rust",
                           workdir=str(tmp_path / "r4")))


def test_wall_time_stops_the_run(tmp_path, config_factory):
    slow = {**BUGGY, "sleep": 0.4}
    cfg = config_factory(script(tmp_path, [slow, BRIDGE_STEP, REPAIR]), max_wall_s=0.3)
    summary, _ = run(cfg)
    assert summary["reason"] == "wall time (0.3 s)" and summary["iterations"] == 1


def test_transfer_hook_is_the_l4_layer(monkeypatch):
    import sys
    import types

    from envport.agent.harness import _transfer

    hooks = types.ModuleType("l4_hooks")
    hooks.equivalent = lambda spec, seed: True
    hooks.different = lambda spec, seed: False
    hooks.broken = lambda spec, seed: 1 / 0
    monkeypatch.setitem(sys.modules, "l4_hooks", hooks)
    assert _transfer("l4_hooks:equivalent", None, 0).passed
    failed = _transfer("l4_hooks:different", None, 0)
    assert not failed.passed and failed.failures[0].test_id == "transfer[tost]"
    assert "ZeroDivisionError" in _transfer("l4_hooks:broken", None, 0).failures[0].message


def test_an_agent_that_becomes_unavailable_stops_the_run(tmp_path, config_factory):
    from envport.agent.backends import AgentResult

    class Revoked:
        name = "revoked"

        def check(self) -> None:
            pass

        def run(self, request):
            return AgentResult("unavailable", error="AuthenticationError: invalid x-api-key")

    cfg = config_factory("claude")
    summary, verifier = run(cfg, backend=Revoked())
    # a human must act: reported as a configuration failure (exit code 2), nothing verified
    assert summary["status"] == "config_error" and summary["iterations"] == 0
    assert summary["reason"] == "agent unavailable: AuthenticationError: invalid x-api-key"
    assert verifier.calls == [] and "handoff" not in summary


def test_verified_but_not_faster_optimisation_is_reverted_with_its_interval(tmp_path,
                                                                          config_factory):
    # the CartPole demo's case: a change that passes verification and is timed within noise
    steps = [{**BUGGY, "write": {"translation/jax_env.py": ENV_OK}}, BRIDGE_STEP,
             {"expect": "optimise", "write": {"translation/jax_env.py": ENV_OK + "# tidy\n"}}]
    cfg = config_factory(script(tmp_path, steps), optimise_rounds=1)
    summary, verifier = run(cfg)
    assert summary["status"] == "success"
    run_dir = Path(cfg.workdir)
    text = (run_dir / "workspace" / "translation" / "jax_env.py").read_text()
    assert "# tidy" not in text  # reverted to the last verified commit
    ledger = Ledger(run_dir / "ledger.jsonl")
    its = ledger.iterations()
    event = next(e for e in its[2]["events"] if "not faster" in e)
    record = next(r for r in ledger.of_type("verify") if r.get("what") == "speedup")
    assert record["kept"] is False and record["repeats"] == 5
    low, high = record["speedup"]["low"], record["speedup"]["high"]
    assert low < 1 < high and f"[{low:.3f}, {high:.3f}]" in event
    assert summary["last_green"] == Workspace(run_dir / "workspace").git("rev-parse",
                                                                        "iter-0002")
    assert {"compare": summary["last_green"]} in verifier.calls
