"""Agent backends: the real subprocess path against fake `claude`/`codex` executables replaying
recorded outputs, the HTTP backends against fake clients, and the error messages."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from agent_helpers import recording

from envport.agent.backends import AgentRequest, AgentUnavailableError, make_backend
from envport.agent.backends.base import Usage, estimate_cost, price_for
from envport.agent.backends.cli import Aider, GeminiCli
from envport.agent.backends.http import AnthropicApi, OpenAICompatible, apply_file_blocks


def request(tmp_path: Path, **kw) -> AgentRequest:
    work = tmp_path / "ws"
    work.mkdir(exist_ok=True)
    return AgentRequest(prompt=kw.pop("prompt", "translate it"), workdir=work,
                        timeout_s=kw.pop("timeout_s", 30), log_path=tmp_path / "agent.log",
                        **kw)


def test_claude_success_is_parsed_from_the_json_result(tmp_path, fake_agents):
    fake_agents.install("claude", [{"recording": recording("claude_success.json"),
                                    "write": {"translation/jax_env.py": "x = 1\n"}}])
    result = make_backend("claude").run(request(tmp_path, session_id="s-previous"))
    assert result.status == "ok" and result.exit_code == 0
    assert result.session_id == "0b6f2d4e-5b7a-4c61-9d0e-3f1a2c4b5d6e"
    assert result.turns == 9 and "passes" in result.final_text
    u = result.usage
    assert (u.cost_usd, u.cost_source) == (0.4213, "reported")
    assert u.input_tokens == 1840 + 12050 + 96400 and u.cached_tokens == 96400
    assert u.output_tokens == 3120
    assert (tmp_path / "ws" / "translation" / "jax_env.py").exists()
    argv = fake_agents.calls("claude")[0]
    assert argv[:3] == ["-p", "translate it", "--output-format"] and "json" in argv
    assert argv[argv.index("--resume") + 1] == "s-previous"  # the session continues
    assert "<prompt>" not in (tmp_path / "agent.log").read_text()[:20]


def test_claude_budget_exhausted_and_api_errors(tmp_path, fake_agents):
    fake_agents.install("claude", [{"recording": recording("claude_budget.json"), "exit": 1},
                                   {"recording": recording("claude_api_error.json"),
                                    "exit": 1}])
    backend = make_backend("claude")
    budget = backend.run(request(tmp_path))
    assert budget.status == "budget_exhausted" and budget.usage.cost_usd == 1.0021
    assert not budget.infrastructure_error  # the agent worked and spent: an iteration
    overloaded = backend.run(request(tmp_path))
    assert overloaded.status == "crash" and overloaded.infrastructure_error


def test_crash_and_malformed_output_are_infrastructure_errors(tmp_path, fake_agents):
    fake_agents.install("claude", [
        {"stderr": "Error: something went wrong inside the CLI\n", "exit": 3},
        {"stdout": "I fixed everything, all tests pass now!\n", "exit": 0},
    ])
    backend = make_backend("claude")
    crash = backend.run(request(tmp_path))
    assert crash.status == "crash" and crash.exit_code == 3
    assert "something went wrong" in crash.error and crash.infrastructure_error
    malformed = backend.run(request(tmp_path))
    # the agent's claim is never taken for an outcome
    assert malformed.status == "malformed" and malformed.infrastructure_error


def test_timeout_kills_the_whole_process_group(tmp_path, fake_agents):
    pid_file = tmp_path / "child.pid"
    fake_agents.install("claude", [{"sleep": 30, "child_pid_file": str(pid_file)}])
    t0 = time.monotonic()
    result = make_backend("claude").run(request(tmp_path, timeout_s=1.5))
    assert result.status == "timeout" and time.monotonic() - t0 < 15
    pid = int(pid_file.read_text())
    for _ in range(50):  # the grandchild died with its group
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the agent's child process survived the timeout")


def test_stdin_is_closed(tmp_path, fake_agents):
    steps = fake_agents.install("claude", [{"recording": recording("claude_success.json")}])
    script = steps.parent / "claude"
    script.write_text(script.read_text().replace(
        "steps = json.loads", "assert sys.stdin.read() == ''\nsteps = json.loads"))
    assert make_backend("claude").run(request(tmp_path)).status == "ok"


def test_codex_jsonl_events(tmp_path, fake_agents):
    fake_agents.install("codex", [{"recording": recording("codex_success.jsonl")},
                                  {"recording": recording("codex_failed.jsonl"), "exit": 1}])
    backend = make_backend("codex:gpt-5-codex")
    ok = backend.run(request(tmp_path))
    assert ok.status == "ok" and ok.session_id == "0199a213-81c0-7800-8aa1-bbab2a035a53"
    assert ok.final_text.startswith("Wrote translation/jax_env.py")
    assert (ok.usage.input_tokens, ok.usage.cached_tokens, ok.usage.output_tokens) == (
        24763, 24448, 1220)
    assert ok.usage.cost_source == "estimated" and ok.usage.cost_usd == pytest.approx(
        (315 * 1.25 + 24448 * 0.125 + 1220 * 10) / 1e6)
    argv = fake_agents.calls("codex")[0]
    assert argv[:2] == ["exec", "--json"] and argv[-1] == "translate it"
    limited = backend.run(request(tmp_path, session_id=ok.session_id))
    assert limited.status == "budget_exhausted" and "usage limit" in limited.error
    assert fake_agents.calls("codex")[1][:3] == ["exec", "resume", ok.session_id]


def test_missing_executable_names_it_and_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("ENVPORT_AGENT_CLIS", str(tmp_path / "none"))
    for name, hint in (("claude", "npm install -g @anthropic-ai/claude-code@2.1.332"),
                       ("codex", "npm install -g @openai/codex@0.171.0"),
                       ("gemini", "GEMINI_API_KEY"), ("aider", "aider-chat==0.86.2")):
        monkeypatch.delenv(f"ENVPORT_{name.upper()}", raising=False)
        with pytest.raises(AgentUnavailableError, match=f"`{name}` was not found on PATH"
                           ) as e:
            make_backend(name).check()
        assert hint in str(e.value) and "bash tests/agent/install_agent_clis.sh" in str(e.value)
    # an explicit path that is not an executable is named, not silently replaced by PATH
    monkeypatch.setenv("ENVPORT_CLAUDE", str(tmp_path / "claude"))
    with pytest.raises(AgentUnavailableError, match=r"ENVPORT_CLAUDE=.* is not an executable"):
        make_backend("claude").check()
    with pytest.raises(AgentUnavailableError, match="unknown agent"):
        make_backend("nosuch")


def test_gemini_and_aider_outputs_are_parsed():
    from envport.agent.backends.base import ProcessOutcome

    gemini = GeminiCli().parse(ProcessOutcome(0, (
        '{"response": "done", "stats": {"models": {"gemini-2.5-pro": {"api": {"totalRequests": 3},'
        ' "tokens": {"prompt": 20000, "candidates": 500, "cached": 15000, "thoughts": 100}}}}}'),
        "", False, 1.0), request_stub())
    assert gemini.status == "ok" and gemini.turns == 3 and gemini.usage.cost_source == "estimated"
    assert gemini.usage.output_tokens == 600
    aider = Aider().parse(ProcessOutcome(0, (
        "Applied edit to translation/jax_env.py\n"
        "Tokens: 12k sent, 3.5k cache hit, 1.2k received. Cost: $0.05 message, $0.05 session.\n"
        "Tokens: 2.0k sent, 300 received. Cost: $0.01 message, $0.06 session.\n"), "", False,
        1.0), request_stub())
    assert aider.status == "ok" and aider.usage.cost_source == "reported"
    assert aider.usage.cost_usd == pytest.approx(0.06)
    assert (aider.usage.input_tokens, aider.usage.cached_tokens, aider.usage.output_tokens) == (
        14000, 3500, 1500)


def request_stub() -> AgentRequest:
    return AgentRequest(prompt="p", workdir=Path("."))


def test_price_table_and_estimates():
    assert price_for("claude-sonnet-4-5-20250929") == price_for("claude-sonnet-4-5")
    assert price_for("qwen3-coder") is None
    unknown = estimate_cost(Usage(1000, 1000), "qwen3-coder")
    assert unknown.cost_usd is None and unknown.cost_source == "unknown"
    given = estimate_cost(Usage(1_000_000, 0), "qwen3-coder", price=(0.5, 1.0, 0.1))
    assert given.cost_usd == pytest.approx(0.5) and given.cost_source == "estimated"


# ---------------------------------------------------------------- HTTP backends
def fake_openai(text: str, calls: list) -> SimpleNamespace:
    def create(**kw):
        calls.append(kw)
        return SimpleNamespace(
            choices=[SimpleNamespace(message=SimpleNamespace(content=text))],
            usage=SimpleNamespace(prompt_tokens=5000, completion_tokens=700,
                                  prompt_tokens_details=SimpleNamespace(cached_tokens=1000)))

    return SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))


def test_openai_compatible_writes_file_blocks(tmp_path):
    calls: list = []
    answer = ('Fixed gravity.\n<file path="translation/jax_env.py">\n```python\nG = 9.8\n```\n'
              '</file>\n<file path="../escape.py">\nx = 1\n</file>\n')
    backend = OpenAICompatible("qwen3-coder", base_url="http://localhost:8000/v1",
                               client_factory=lambda: fake_openai(answer, calls))
    req = request(tmp_path, editable=["translation/jax_env.py"])
    (req.workdir / "translation").mkdir()
    (req.workdir / "translation" / "jax_env.py").write_text("G = 9.81\n")
    result = backend.run(req)
    assert result.status == "ok" and result.files_written == ["translation/jax_env.py"]
    assert (req.workdir / "translation" / "jax_env.py").read_text() == "G = 9.8\n"
    assert not (tmp_path / "escape.py").exists() and "../escape.py" in result.error
    sent = calls[0]["messages"][-1]["content"]
    assert "translate it" in sent and "G = 9.81" in sent  # the current file goes with the prompt
    assert result.usage.cost_source == "unknown"  # a local model has no list price
    again = backend.run(request(tmp_path, session_id=result.session_id))
    assert again.status == "ok" and len(calls[1]["messages"]) == 4  # history: one exchange


def test_http_errors_are_classified(tmp_path):
    class RateLimitError(Exception):
        pass

    class AuthenticationError(Exception):
        pass

    def failing(error):
        def create(**kw):
            raise error

        return SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))

    rate = OpenAICompatible("gpt-5", client_factory=lambda: failing(RateLimitError("slow down")))
    assert rate.run(request(tmp_path)).status == "crash"  # retried, no iteration used
    auth = OpenAICompatible("gpt-5", client_factory=lambda: failing(AuthenticationError("no")))
    assert auth.run(request(tmp_path)).status == "unavailable"


def test_missing_package_or_key_is_named(monkeypatch):
    import importlib

    real = importlib.import_module

    def no_clients(name, *a, **k):
        if name in ("openai", "anthropic"):
            raise ImportError(f"No module named {name!r}")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", no_clients)
    with pytest.raises(AgentUnavailableError, match=r"`openai` package is not installed.*"
                                                    r"envport\[agents\]"):
        make_backend("openai:gpt-5").check()
    with pytest.raises(AgentUnavailableError, match="`anthropic` package"):
        make_backend("anthropic:claude-sonnet-4-5").check()
    monkeypatch.setattr(importlib, "import_module", lambda name, *a, **k: SimpleNamespace(
        OpenAI=lambda **kw: kw, Anthropic=lambda **kw: kw))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(AgentUnavailableError, match="OPENAI_API_KEY is not set"):
        make_backend("openai:gpt-5").check()
    make_backend("openai:qwen3", base_url="http://localhost:8000/v1").check()  # no key needed
    with pytest.raises(AgentUnavailableError, match="ANTHROPIC_API_KEY is not set"):
        make_backend("anthropic:claude-sonnet-4-5").check()
    with pytest.raises(AgentUnavailableError, match="name the model"):
        make_backend("openai")


def test_anthropic_usage_and_cost(tmp_path):
    def create(**kw):
        return SimpleNamespace(
            content=[SimpleNamespace(type="text", text='<file path="a.py">\nA = 1\n</file>')],
            usage=SimpleNamespace(input_tokens=2000, output_tokens=400,
                                  cache_read_input_tokens=8000,
                                  cache_creation_input_tokens=0))

    backend = AnthropicApi("claude-sonnet-4-5", client_factory=lambda: SimpleNamespace(
        messages=SimpleNamespace(create=create)))
    result = backend.run(request(tmp_path))
    assert result.files_written == ["a.py"] and result.usage.input_tokens == 10000
    assert result.usage.cost_usd == pytest.approx((2000 * 3 + 400 * 15 + 8000 * 0.3) / 1e6)


def test_file_blocks_refuse_git_and_absolute_paths(tmp_path):
    written, refused = apply_file_blocks(
        '<file path="/etc/x">\n1\n</file><file path=".git/config">\n1\n</file>'
        '<file path="ok/b.py">\nB = 2\n</file>', tmp_path)
    assert written == ["ok/b.py"] and refused == ["/etc/x", ".git/config"]
