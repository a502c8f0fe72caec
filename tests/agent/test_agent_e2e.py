"""End to end, offline: `envport translate` with the scripted agent of
examples/scripted/cartpole.yaml and the real verification harness (a subprocess per check).
The seeded bug (g = 9.81) passes L1, is caught by L2 with a shrunk counterexample pointing at
theta_dot, is repaired, and the translation then passes L1, L2, L3 and the distribution test
on the development and the held-out seeds."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from envport.agent.commands import register
from envport.agent.ledger import Ledger

ROOT = Path(__file__).resolve().parents[2]


def envport(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="envport")
    handlers = register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv))
    return handlers[args.command](args)


@pytest.mark.slow  # 46 s; the repair loop on small modules stays in test_agent_loop.py
def test_scripted_cartpole_is_repaired_and_reaches_l3(tmp_path):
    run_dir = tmp_path / "cartpole-demo"
    code = envport("translate", "--reference",
                   "envport.envs.cartpole.reference:CartPoleReference", "--target", "jax",
                   "--source", "gymnasium.envs.classic_control.cartpole",
                   "--agent", f"scripted:{ROOT / 'examples/scripted/cartpole.yaml'}",
                   "--workdir", str(run_dir), "--max-iterations", "6", "--budget-usd", "1",
                   "--examples", "2", "--states", "60", "--episodes", "2", "--samples", "300",
                   "--optimise-rounds", "0", "--json", str(tmp_path / "summary.json"))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert code == 0, summary
    assert summary["status"] == "success" and summary["verified"]
    assert summary["cost_usd"] == 0.11 and summary["iterations"] == 3
    its = Ledger(run_dir / "ledger.jsonl").iterations()
    assert [r["kind"] for r in its] == ["module:jax_env", "module:bridge", "repair"]
    # the bug is invisible to L1 and caught by L2 on the composition
    assert its[0]["highest_layer"] == "property" and its[1]["layers"]["interaction"] is False
    assert its[2]["layers"] == {"property": True, "interaction": True, "rollout": True,
                                "distribution": True, "rollout_distribution": True}
    module = (run_dir / "prompts" / "0001-module-jax_env.md").read_text()
    assert "class CartPoleEnv" in module  # the wrapped Gymnasium source, verbatim
    repair = (run_dir / "prompts" / "0003-repair.md").read_text()
    assert "Lowest failing layer: L2 interaction" in repair
    assert "state.theta_dot" in repair and "minimal counterexample" in repair
    held_out = json.loads((run_dir / its[2]["result"]).read_text())
    assert held_out["report"]["passed"]
    assert envport("report", str(run_dir)) == 0
    assert "verified" in (run_dir / "report.md").read_text().lower()


@pytest.mark.slow  # 97 s; the manual agent's stop and resume stay in test_agent_manual.py
def test_manual_agent_cartpole_through_resume(tmp_path, capsys):
    """The same demo with ``--agent manual``: each prompt stops the run (exit 3); the edits of
    the demo script are then made "by hand" (applied between the calls) and ``--resume``
    verifies them with the real harness and writes the next prompt."""
    import yaml

    from envport.agent.backends.scripted import Scripted

    run_dir = tmp_path / "manual"
    steps = yaml.safe_load((ROOT / "examples/scripted/cartpole.yaml").read_text())["steps"]
    code = envport("translate", "--reference",
                   "envport.envs.cartpole.reference:CartPoleReference",
                   "--source", "gymnasium.envs.classic_control.cartpole", "--agent", "manual",
                   "--workdir", str(run_dir), "--examples", "2", "--states", "60",
                   "--episodes", "2", "--samples", "300", "--optimise-rounds", "0",
                   # pinned: with a drawn held-out seed the verdict's statistical tests fail a
                   # correct translation at their small false-positive rate
                   "--held-out-seeds", "4242")
    codes = [code]
    for step in steps[:3]:
        prompt = sorted((run_dir / "prompts").glob("*.md"))[-1].name
        assert prompt.split("-", 1)[1].startswith(step["expect"].replace(":", "-")), prompt
        Scripted.apply(step, run_dir / "workspace")
        codes.append(envport("translate", "--resume", str(run_dir)))
    assert codes == [3, 3, 3, 0]
    its = Ledger(run_dir / "ledger.jsonl").iterations()
    assert [r["kind"] for r in its] == ["module:jax_env", "module:bridge", "repair"]
    assert its[1]["layers"]["interaction"] is False
    assert its[2]["highest_layer"] == "rollout_distribution" and all(its[2]["layers"].values())
    assert "waiting for the agent" in capsys.readouterr().err
