"""Agents envport cannot call as a backend of its own: ``--agent manual`` (the run stops after
each prompt; ``--resume`` verifies what was edited meanwhile) and ``--agent command:'...'``
(any CLI taking a prompt file); and the speedup interval the optimisation phase decides by."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pytest
from agent_helpers import BRIDGE, ENV_BUG, ENV_OK, FakeVerifier

from envport.agent.backends import AgentUnavailableError, make_backend
from envport.agent.commands import register
from envport.agent.ledger import Ledger
from envport.agent.loop import translate
from envport.agent.speed import interleaved_order, speedup_report, t_interval


def start(cfg):
    return translate(cfg, verifier=FakeVerifier(Path(cfg.workdir)), log=lambda m: None)


def resume(run_dir):
    return translate(resume=Path(run_dir), verifier=FakeVerifier(Path(run_dir)),
                     log=lambda m: None)


def write(run_dir: Path, rel: str, text: str) -> None:
    path = Path(run_dir) / "workspace" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_manual_agent_waits_after_each_prompt_and_resume_verifies(tmp_path, config_factory):
    cfg = config_factory("manual")
    run_dir = Path(cfg.workdir)
    summary = start(cfg)
    assert summary["status"] == "waiting" and summary["iterations"] == 0
    assert summary["next_prompt"].endswith("prompts/0001-module-jax_env.md")
    assert Path(summary["next_prompt"]).read_text().startswith("#")
    assert summary["resume"] == f"envport translate --resume {run_dir}"
    note = (run_dir / "NEXT.md").read_text()
    assert "0001-module-jax_env.md" in note and "--resume" in note
    ledger = Ledger(run_dir / "ledger.jsonl")
    assert [r["type"] for r in ledger.records()] == ["start", "agent", "stop"]
    assert "handoff" not in summary

    write(run_dir, "translation/jax_env.py", ENV_BUG)  # the person's edit
    summary = resume(run_dir)
    assert summary["status"] == "waiting" and summary["iterations"] == 1
    its = ledger.iterations()
    assert its[0]["kind"] == "module:jax_env" and its[0]["agent_status"] == "ok"
    assert summary["next_prompt"].endswith("prompts/0002-module-bridge.md")
    # the first prompt says the bridge is not written yet (its tests must not import it);
    # the last module's prompt has nothing left to name
    first = (run_dir / "prompts" / "0001-module-jax_env.md").read_text()
    assert "Not written yet: `translation/bridge.py`" in first
    assert "Not written yet" not in Path(summary["next_prompt"]).read_text()

    write(run_dir, "translation/bridge.py", BRIDGE)
    summary = resume(run_dir)  # the composition fails L2: the next prompt is a repair
    assert summary["next_prompt"].endswith("prompts/0003-repair.md")
    assert "Lowest failing layer: L2 interaction" in Path(summary["next_prompt"]).read_text()

    write(run_dir, "translation/jax_env.py", ENV_OK)
    summary = resume(run_dir)
    assert summary["status"] == "success" and summary["verified"]
    assert [r["kind"] for r in ledger.iterations()] == ["module:jax_env", "module:bridge",
                                                        "repair"]
    assert [r["highest_layer"] for r in ledger.iterations()] == ["property", "property",
                                                                 "distribution"]


def test_manual_resume_reverts_and_records_a_frozen_edit(tmp_path, config_factory):
    cfg = config_factory("manual")
    run_dir = Path(cfg.workdir)
    start(cfg)
    original = (run_dir / "workspace" / "tests" / "test_hierarchy.py").read_text()
    write(run_dir, "tests/test_hierarchy.py", "def test_everything():\n    pass\n")
    write(run_dir, "translation/jax_env.py", ENV_OK)
    resume(run_dir)
    it = Ledger(run_dir / "ledger.jsonl").iterations()[0]
    assert it["frozen_edits"] == ["tests/test_hierarchy.py"]
    assert (run_dir / "workspace" / "tests" / "test_hierarchy.py").read_text() == original
    prompt = (run_dir / "prompts" / "0002-module-bridge.md").read_text()
    assert prompt  # the next prompt was written after the verification


def test_resume_without_an_edit_verifies_and_asks_again(tmp_path, config_factory):
    cfg = config_factory("manual")
    run_dir = Path(cfg.workdir)
    start(cfg)
    summary = resume(run_dir)  # nothing was written: L1 of the module fails, a repair prompt
    assert summary["status"] == "waiting"
    assert summary["next_prompt"].endswith("prompts/0002-repair-jax_env.md")
    assert Ledger(run_dir / "ledger.jsonl").iterations()[0]["highest_layer"] == "none"


def envport(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="envport")
    handlers = register(parser.add_subparsers(dest="command", required=True))
    return handlers[parser.parse_args(list(argv)).command](parser.parse_args(list(argv)))


def test_cli_manual_exits_3_with_what_to_do(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = envport("translate", "--reference",
                   "envport.envs.cartpole.reference:CartPoleReference", "--agent", "manual",
                   "--workdir", str(run_dir), "--json", str(tmp_path / "s.json"))
    assert code == 3
    err = capsys.readouterr().err
    assert "0001-module-jax_env.md" in err and f"envport translate --resume {run_dir}" in err
    assert json.loads((tmp_path / "s.json").read_text())["status"] == "waiting"
    assert envport("translate", "--resume", str(run_dir), "--bench-repeats", "1") == 2


# ---------------------------------------------------------------- command:'...'
AGENT_SCRIPT = '''import sys
from pathlib import Path
prompt = Path(sys.argv[1]).read_text()
if "module" in sys.argv[2] and "jax_env" in sys.argv[2]:
    Path("translation/jax_env.py").write_text({env!r})
elif "bridge" in sys.argv[2]:
    Path("translation/bridge.py").write_text({bridge!r})
print("done", len(prompt))
'''


def test_command_agent_gets_the_prompt_file(tmp_path, config_factory):
    script = tmp_path / "agent.py"
    script.write_text(AGENT_SCRIPT.format(env=ENV_OK, bridge=BRIDGE))
    cfg = config_factory(f"command:{sys.executable} {script} {{prompt}} {{kind}}")
    summary = start(cfg)
    assert summary["status"] == "success", summary
    its = Ledger(Path(cfg.workdir) / "ledger.jsonl").iterations()
    assert [r["kind"] for r in its] == ["module:jax_env", "module:bridge"]
    assert its[0]["agent"]["final_text"].startswith("done ")
    assert its[0]["agent"]["usage"]["cost_source"] == "unknown"


def test_command_agent_failures(tmp_path, config_factory):
    with pytest.raises(AgentUnavailableError, match="not found on PATH"):
        make_backend("command:no-such-agent-cli {prompt}").check()
    with pytest.raises(AgentUnavailableError, match="give the command line"):
        make_backend("command:")
    with pytest.raises(AgentUnavailableError, match="takes no argument"):
        make_backend("manual:x")
    crash = tmp_path / "crash.py"
    crash.write_text("import sys; sys.exit(4)\n")
    cfg = config_factory(f"command:{sys.executable} {crash}", max_infra_retries=1)
    summary = start(cfg)
    assert summary["iterations"] == 0 and "infrastructure" in summary["reason"]


# ---------------------------------------------------------------- the speedup interval
def test_t_interval_by_hand() -> None:
    # logs 0.1, 0.2, 0.3: mean 0.2, sd 0.1, t(0.975, 2 df) = 4.3027 -> half 0.24841
    mean, low, high = t_interval([0.1, 0.2, 0.3], 0.95)
    assert mean == pytest.approx(0.2)
    assert low == pytest.approx(0.2 - 0.248414, abs=1e-5)
    assert high == pytest.approx(0.2 + 0.248414, abs=1e-5)


def test_speedup_report_decides_by_the_lower_end() -> None:
    old = [{1: 100.0, 64: 1000.0}] * 4
    faster = [{1: 110.0 + i, 64: 1100.0 - i} for i in range(4)]
    r = speedup_report(old, faster)
    assert r["faster"] and r["speedup"]["low"] > 1
    assert r["per_batch"][1]["speedup"] == pytest.approx(
        math.exp(sum(math.log((110 + i) / 100) for i in range(4)) / 4))
    noisy = [{1: 100.0 * f, 64: 1000.0 * f} for f in (1.05, 0.96, 1.02, 0.98)]
    r = speedup_report(old, noisy)
    assert not r["faster"] and r["speedup"]["low"] < 1 < r["speedup"]["high"]
    r = speedup_report(old, [{1: 0.0, 64: 1.0}] * 4)
    assert not r["faster"] and "zero" in r["reason"]


def test_interleaved_order_alternates() -> None:
    assert interleaved_order(3) == ["old", "new", "new", "old", "old", "new"]
