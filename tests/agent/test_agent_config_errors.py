"""Configuration failures of the command-line agents (not logged in, no API key, a flag the
version rejects) stop `envport translate` before iteration 1, naming the fix (exit code 2);
transient failures keep being retried.

The fixtures in recordings/clis/ are the real outputs of the pinned CLIs (Claude Code 2.1.332,
Codex 0.171.0, Gemini CLI 0.61.0, Aider 0.86.2), recorded without credentials and without a
network; test_agent_clis.py (marker ``agent_clis``) checks the same facts against the
installed CLIs. Here the real subprocess path runs against fake executables replaying them.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest
from agent_helpers import CLIS, FakeVerifier

from envport.agent.backends import AgentConfigError, AgentRequest, make_backend
from envport.agent.backends.base import ProcessOutcome
from envport.agent.backends.cli import (
    CLI_BACKENDS,
    PINNED,
    flags_of,
    unsupported_flags,
)
from envport.agent.commands import register
from envport.agent.ledger import Ledger
from envport.agent.loop import translate

ROOT = Path(__file__).resolve().parents[2]
HELP = {"claude": ["claude-2.1.332-help.txt"], "gemini": ["gemini-0.61.0-help.txt"],
        "aider": ["aider-0.86.2-help.txt"],
        "codex": ["codex-0.171.0-exec-help.txt", "codex-0.171.0-exec-resume-help.txt"]}


def rec(name: str) -> str:
    return (CLIS / name).read_text()


def request(tmp_path: Path, **kw) -> AgentRequest:
    work = tmp_path / "ws"
    work.mkdir(exist_ok=True)
    return AgentRequest(prompt="translate it", workdir=work, timeout_s=30,
                        log_path=tmp_path / "agent.log", **kw)


def outcome(stdout: str = "", stderr: str = "", exit_code: int | None = 0) -> ProcessOutcome:
    return ProcessOutcome(exit_code, stdout, stderr, False, 0.1)


# ---------------------------------------------------------------- the argv of each version
@pytest.mark.parametrize("name", sorted(CLI_BACKENDS))
def test_every_flag_envport_passes_is_listed_by_the_pinned_versions_help(name):
    backend = make_backend(f"{name}:some-model")
    helps = [rec(h) for h in HELP[name]]
    for req in backend.sample_requests():
        argv = backend.command(req)
        text = helps[-1] if name == "codex" and "resume" in argv else helps[0]
        flags = flags_of(argv[1:])
        assert "--model" in flags and unsupported_flags(flags, text) == [], argv
        for value in backend.choice_values:  # e.g. --permission-mode acceptEdits
            assert f'"{value}"' in text
    # the check can fail: what Codex 0.171.0 no longer has, and made-up flags
    assert unsupported_flags(["--full-auto"], rec(HELP["codex"][0])) == ["--full-auto"]
    assert unsupported_flags(["--no-such-flag", "-p"], helps[0])[0] == "--no-such-flag"


def test_codex_argv_has_no_full_auto_and_sets_the_sandbox_by_config():
    codex = make_backend("codex")
    fresh, resumed = (codex.command(r) for r in codex.sample_requests())
    assert "--full-auto" not in fresh + resumed
    for argv in (fresh, resumed):
        assert 'sandbox_mode="workspace-write"' in argv and 'approval_policy="never"' in argv
    assert resumed[1:4] == ["exec", "resume", codex.sample_requests()[1].session_id]
    # Gemini CLI gives up auto_edit in a folder it does not trust unless told to trust it
    assert "--skip-trust" in make_backend("gemini").command(codex.sample_requests()[0])


def test_the_pins_agree_with_the_install_files():
    lock = json.loads((ROOT / "envport/agent/clis/package-lock.json").read_text())
    packages = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex",
                "gemini": "@google/gemini-cli"}
    for name, package in packages.items():
        assert lock["packages"][f"node_modules/{package}"]["version"] == PINNED[name]
        assert json.loads((ROOT / "envport/agent/clis/package.json").read_text())[
            "dependencies"][package] == PINNED[name]
    assert (ROOT / "envport/agent/clis/aider-requirements.txt").read_text().split() == [
        f"aider-chat=={PINNED['aider']}"]


# ---------------------------------------------------------------- run-time classification
CONFIG_OUTPUTS = [  # (agent, stdout, stderr, exit code): as observed, see the module docstring
    ("claude", rec("claude_not_logged_in.json"), "", 1),
    ("claude", "", rec("claude_unknown_option.txt"), 1),
    ("codex", "", rec("codex_full_auto_rejected.txt"), 2),
    ("gemini", "", rec("gemini_no_auth.json"), 41),
    ("gemini", "", rec("gemini_unknown_argument.txt"), 1),
    ("aider", rec("aider_no_key.txt"), "", 0),
    ("aider", "", rec("aider_unrecognized_argument.txt"), 2),
]


@pytest.mark.parametrize(("name", "stdout", "stderr", "code"), CONFIG_OUTPUTS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CONFIG_OUTPUTS)])
def test_real_not_logged_in_and_bad_flag_outputs_are_config_errors(
        tmp_path, fake_agents, name, stdout, stderr, code):
    fake_agents.install(name, [{"stdout": stdout, "stderr": stderr, "exit": code}])
    result = make_backend(f"{name}:sonnet" if name == "aider" else name).run(
        request(tmp_path))
    assert result.status == "config_error" and not result.infrastructure_error
    assert result.exit_code == code
    bad_flag = re.search(r"unknown option|unexpected argument|Unknown argument|unrecognized",
                         stdout + stderr)
    if bad_flag:  # the CLI's own line and the pinned version
        assert "rejected an argument" in result.error and PINNED[name] in result.error
    else:  # the fix, and what the CLI said
        fix = {"claude": "run `claude` and /login", "codex": "codex login",
               "gemini": "set GEMINI_API_KEY", "aider": "ANTHROPIC_API_KEY"}[name]
        assert fix in result.error and "said" in result.error


def test_words_in_the_agents_own_work_are_not_config_errors(tmp_path, fake_agents):
    # a command the agent ran printed such words; the turn failed for another reason
    work = [{"type": "thread.started", "thread_id": "t-1"},
            {"type": "item.completed", "item": {
                "type": "command_execution", "command": "git push --bogus",
                "aggregated_output": "error: unknown option '--bogus'\nNot logged in",
                "exit_code": 1}},
            {"type": "turn.failed", "error": {"message": "context window exceeded"}}]
    fake_agents.install("codex", [{"stdout": "".join(json.dumps(e) + "\n" for e in work),
                                   "exit": 1}])
    result = make_backend("codex").run(request(tmp_path))
    assert result.status == "error" and result.error == "context window exceeded"


def test_transient_failures_stay_retryable():
    claude, codex = make_backend("claude"), make_backend("codex")
    overloaded = json.loads((CLIS.parent / "claude_api_error.json").read_text())
    out = outcome(json.dumps(overloaded), "", 1)
    res = claude.parse(out, AgentRequest(prompt="p", workdir=Path(".")))
    assert res.status == "crash" and claude.config_problem(out, res) is None
    # Codex without a network: "Reconnecting..." events are retries in progress, not failures
    # (killed by envport's timeout, such a call is a "timeout": retried, as before)
    stream = rec("codex_no_login_no_network.jsonl")
    with pytest.raises(ValueError, match=r"no turn\.completed"):
        codex.parse(outcome(stream), AgentRequest(prompt="p", workdir=Path(".")))
    done = stream + '{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}\n'
    assert codex.parse(outcome(done), AgentRequest(prompt="p", workdir=Path("."))
                       ).status == "ok"


# ---------------------------------------------------------------- preflight
def test_preflight_passes_the_pinned_clis_and_probes_without_a_prompt(fake_agents):
    for name in sorted(CLI_BACKENDS):
        fake_agents.install(name, [{"stdout": "must not be called", "exit": 9}])
        backend = make_backend(f"{name}:sonnet" if name == "aider" else name)
        assert backend.preflight() == []
        assert fake_agents.calls(name) == []  # no prompt was sent
        assert ["--version"] in fake_agents.calls(name, probes=True)
    probes = fake_agents.calls("codex", probes=True)
    login = next(p for p in probes if p[0] == "login")  # validates envport's -c overrides
    assert login[-1] == "status" and 'sandbox_mode="workspace-write"' in login


def test_preflight_reports_not_logged_in_with_the_fix(fake_agents, monkeypatch):
    fake_agents.install("claude", [], probes=[
        {"argv": ["auth", "status"], "recording": str(CLIS / "claude_auth_status_logged_out.json"),
         "exit": 1}])
    with pytest.raises(AgentConfigError, match=r"run `claude` and /login.*ANTHROPIC_API_KEY"):
        make_backend("claude").preflight()
    fake_agents.install("codex", [], probes=[
        {"argv": ["login", "status"], "stream": "stderr", "exit": 1,
         "recording": str(CLIS / "codex_login_status_logged_out.txt")}])
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    monkeypatch.delenv("CODEX_ACCESS_TOKEN", raising=False)
    with pytest.raises(AgentConfigError, match=r"run `codex login`.*CODEX_API_KEY"):
        make_backend("codex").preflight()
    monkeypatch.setenv("CODEX_API_KEY", "sk-dummy")  # codex exec reads it itself
    assert make_backend("codex").preflight() == []
    fake_agents.install("codex", [], probes=[
        {"argv": ["login", "status"], "stream": "stderr", "exit": 1,
         "recording": str(CLIS / "codex_bad_config_value.txt")}])
    with pytest.raises(AgentConfigError, match=r"rejects envport's configuration.*sandbox_mode"):
        make_backend("codex").preflight()


def test_preflight_of_aider_needs_a_model_and_its_key(fake_agents, monkeypatch):
    from envport.agent.backends.cli import AIDER_DEFAULT_KEYS

    for key in AIDER_DEFAULT_KEYS:
        monkeypatch.delenv(key, raising=False)
    fake_agents.install("aider", [], probes=[
        {"last": "--exit", "recording": str(CLIS / "aider_exit_no_key.txt")}])
    # no model, no key: aider would wait 5 minutes for a browser login; not even started
    with pytest.raises(AgentConfigError, match="no model and none of the keys"):
        make_backend("aider").preflight()
    assert [p for p in fake_agents.calls("aider", probes=True) if p[-1] == "--exit"] == []
    with pytest.raises(AgentConfigError, match="needs ANTHROPIC_API_KEY, which is not set"):
        make_backend("aider:sonnet").preflight()
    exit_probe = fake_agents.calls("aider", probes=True)[-1]
    assert "--message" not in exit_probe and "--model" in exit_probe


def test_preflight_names_a_flag_the_installed_version_lacks(fake_agents):
    fake_agents.install("codex", [])
    with pytest.raises(AgentConfigError, match=r"Codex 0\.171\.0 does not accept --full-auto.*"
                                               r"install_agent_clis\.sh"):
        make_backend("codex", extra_args=["--full-auto"]).preflight()
    fake_agents.install("claude", [], probes=[
        {"argv": ["--version"], "stdout": "2.1.400 (Claude Code)\n"}])
    notes = make_backend("claude").preflight()  # another version whose flags all exist: a note
    assert len(notes) == 1 and "tested with 2.1.332" in notes[0]
    fake_agents.install("gemini", [], probes=[{"argv": ["--version"], "stdout": "", "exit": 1}])
    with pytest.raises(AgentConfigError, match=r"`.*gemini --version` failed"):
        make_backend("gemini").preflight()


# ---------------------------------------------------------------- the loop and the CLI
def envport(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="envport")
    handlers = register(parser.add_subparsers(dest="command", required=True))
    return handlers["translate"](parser.parse_args(["translate", *argv]))


def test_translate_stops_before_iteration_1_when_claude_is_not_logged_in(
        tmp_path, fake_agents, config_factory, capsys):
    fake_agents.install("claude", [{"recording": str(CLIS / "claude_not_logged_in.json"),
                                    "exit": 1}], probes=[
        {"argv": ["auth", "status"], "exit": 1,
         "recording": str(CLIS / "claude_auth_status_logged_out.json")}])
    run_dir = tmp_path / "run"
    code = envport("--reference", "envport.envs.cartpole.reference:CartPoleReference",
                   "--agent", "claude", "--workdir", str(run_dir))
    assert code == 2 and not run_dir.exists() and fake_agents.calls("claude") == []
    assert "run `claude` and /login" in " ".join(capsys.readouterr().err.split())
    # the preflight skipped (or a login the preflight could not see): the first answer,
    # "Not logged in", stops the run with exit 2; no iteration, no retry, nothing verified
    code = envport("--reference", "envport.envs.cartpole.reference:CartPoleReference",
                   "--agent", "claude", "--workdir", str(run_dir), "--no-agent-preflight",
                   "--json", str(tmp_path / "summary.json"))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert code == 2 and summary["status"] == "config_error" and summary["iterations"] == 0
    assert "Not logged in" in summary["reason"] and "/login" in summary["reason"]
    assert "run `claude` and /login" in " ".join(capsys.readouterr().err.split())
    assert len(fake_agents.calls("claude")) == 1 and not (run_dir / "verify").exists()
    ledger = Ledger(run_dir / "ledger.jsonl")
    assert ledger.iterations() == []
    assert ledger.of_type("infra")[0]["agent"]["status"] == "config_error"
    assert not (run_dir / "HANDOFF.md").exists()


def test_the_loop_stops_on_a_config_error_of_a_scripted_agent(tmp_path, config_factory):
    import yaml

    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"steps": [
        {"status": "config_error", "error": "no API key: set ANTHROPIC_API_KEY"}]}))
    verifier = FakeVerifier(tmp_path / "run")
    summary = translate(config_factory(f"scripted:{script}"), verifier=verifier,
                        log=lambda m: None)
    assert summary["status"] == "config_error" and summary["iterations"] == 0
    assert summary["reason"] == "agent configuration: no API key: set ANTHROPIC_API_KEY"
    assert verifier.calls == []
