"""The real command-line agents at their pinned versions (optional: marker ``agent_clis``).

    bash tests/agent/install_agent_clis.sh          # npm ci + an Aider venv, into .agent-clis/
    python -m pytest -m agent_clis tests/agent      # about a minute

Without credentials and without a network, each CLI is run with envport's exact command line:
it must parse every flag (an argument error would come first) and then fail on the missing
login or key, which envport must classify as a configuration error; `envport translate --agent
claude` must stop before iteration 1 with exit code 2 and the fix. HOME is a temporary folder,
every credential variable is removed, stdin is closed and every call has a timeout, so no CLI
can wait for a login. The CLIs are taken from $ENVPORT_CLAUDE etc. or the install prefix
($ENVPORT_AGENT_CLIS, default .agent-clis/), never from PATH (a developer's own, logged-in
CLI must not answer here); a missing one is skipped with the install command as the reason.

Observed (the same outputs are the default suite's fixtures, recordings/clis/):
- Claude Code 2.1.332, not logged in: `claude -p ... --output-format json` exits 1 with
  ``{"type": "result", "subtype": "success", "is_error": true, "result": "Not logged in ·
  Please run /login", "terminal_reason": "api_error", ...}`` in 0.4 s; `claude auth status`
  exits 1 with ``{"loggedIn": false, "authMethod": "none", ...}`` (with ANTHROPIC_API_KEY set:
  exit 0, ``"loggedIn": true, "authMethod": "api_key"``); an unknown flag: exit 1, stderr
  ``error: unknown option '--full-auto'``; `--resume` of an unknown id: exit 1, stderr
  ``No conversation found with session ID: ...``. With a (dummy) API key and no network it
  retries for more than 90 s: only envport's timeout ends that.
- Codex 0.171.0: `codex exec --full-auto` exits 2 with ``error: unexpected argument
  '--full-auto' found``. Not logged in, `codex exec` starts anyway (``thread.started``) and then
  waits for the network (``{"type": "error", "message": "Reconnecting... 2/5 (stream
  disconnected ...)"}``, then ``Reconnecting... waiting for network``) until killed;
  `codex login status` exits 1 with ``Not logged in`` on stderr, and with a bad ``-c`` value
  says ``Error loading configuration: unknown variant `bogus`, expected one of `read-only`,
  `workspace-write`, `danger-full-access```. `codex exec resume` has no ``--sandbox``; ``-c
  sandbox_mode=...`` works in both.
- Gemini CLI 0.61.0 without an auth method: exit 41 in 1.5 s, stdout empty, stderr a
  pretty-printed ``{"session_id": ..., "error": {"type": "Error", "message": "Please set an Auth
  method in your .../.gemini/settings.json or specify one of the following environment
  variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA",
  "code": 41}}``, preceded, without --skip-trust, by ``Approval mode overridden to "default"
  because the current folder is not trusted.``; an unknown flag: exit 1, ``Unknown arguments:
  yes-always, yesAlways``.
- Aider 0.86.2 with --model sonnet and no key: exit 0 (!) after ``Warning: claude-sonnet-4-5
  expects these environment variables`` / ``- ANTHROPIC_API_KEY: Not set`` and
  ``litellm.AuthenticationError: Missing Anthropic API Key ...`` / ``The API provider is not
  able to authenticate you. Check your API key.``; with no model and no key it prints an
  OpenRouter login URL and ``Waiting up to 5 minutes for you to finish in the browser...``;
  an unknown flag: exit 2, ``aider: error: unrecognized arguments: --full-auto``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envport.agent.backends import AgentConfigError, AgentRequest, make_backend
from envport.agent.backends.cli import CLI_BACKENDS, INSTALL, PINNED, local_prefix

pytestmark = pytest.mark.agent_clis

ROOT = Path(__file__).resolve().parents[2]
CREDENTIALS = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CONFIG_DIR", "OPENAI_API_KEY",
    "CODEX_API_KEY", "CODEX_ACCESS_TOKEN", "CODEX_HOME", "GEMINI_API_KEY", "GOOGLE_API_KEY",
    "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_GCA", "GOOGLE_GEMINI_BASE_URL",
    "GEMINI_CLI_HOME", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "VERTEXAI_PROJECT")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME in tmp_path, no credential, and each CLI pinned to the installed one."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for name in CREDENTIALS:
        monkeypatch.delenv(name, raising=False)
    for name, cls in CLI_BACKENDS.items():
        var = f"ENVPORT_{name.upper()}"
        path = os.environ.get(var) or str(local_prefix() / cls.local_path)
        if Path(path).is_file():
            monkeypatch.setenv(var, path)
        else:  # never fall back to PATH here
            monkeypatch.setenv(var, str(tmp_path / "not-installed" / name))
    return home


def backend(agent: str):
    b = make_backend(agent)
    path = os.environ[b.env_var]
    if not Path(path).is_file():
        pytest.skip(f"{b.title} is not installed: run `{INSTALL}`")
    b.check()
    return b


def request(tmp_path: Path, timeout_s: float = 60.0, **kw) -> AgentRequest:
    work = tmp_path / "ws"
    work.mkdir(exist_ok=True)
    (work / "translation").mkdir(exist_ok=True)
    (work / "translation" / "jax_env.py").write_text("X = 1\n")
    return AgentRequest(prompt="Say hello.", workdir=work, timeout_s=timeout_s,
                        editable=["translation/jax_env.py"], max_budget_usd=1.0,
                        log_path=tmp_path / "agent.log", **kw)


def no_argument_error(tmp_path: Path) -> None:
    log = (tmp_path / "agent.log").read_text()
    for said in ("unknown option", "unexpected argument", "Unknown argument",
                 "unrecognized arguments", "Invalid values", "Error loading config"):
        assert said not in log, log[-2000:]


@pytest.mark.parametrize("name", sorted(CLI_BACKENDS))
def test_the_installed_version_is_pinned_and_its_help_lists_envports_flags(name):
    b = backend(f"{name}:sonnet")
    version = b.installed_version()
    assert version == PINNED[name]
    b.check_flags(version)  # raises AgentConfigError naming a flag its --help lacks


def test_claude_parses_envports_argv_and_not_logged_in_is_a_config_error(tmp_path):
    claude = backend("claude")
    result = claude.run(request(tmp_path))
    no_argument_error(tmp_path)
    assert result.status == "config_error" and result.exit_code == 1
    assert "Not logged in" in result.error and "/login" in result.error
    resumed = claude.run(request(tmp_path, session_id="00000000-0000-4000-8000-000000000000"))
    no_argument_error(tmp_path)  # --resume and the rest parsed; the session is unknown
    assert "No conversation found" in resumed.error and resumed.status == "crash"
    with pytest.raises(AgentConfigError, match=r"run `claude` and /login.*loggedIn false"):
        claude.preflight()


def test_codex_parses_envports_argv_and_not_logged_in_is_a_config_error(tmp_path,
                                                                        monkeypatch):
    codex = backend("codex")
    # not logged in, codex exec starts and waits for the network: the argv was accepted
    result = codex.run(request(tmp_path, timeout_s=12.0))
    no_argument_error(tmp_path)
    assert result.status == "timeout"
    assert '"type":"thread.started"' in (tmp_path / "agent.log").read_text()
    resumed = codex.run(request(tmp_path, timeout_s=30.0,
                                session_id="00000000-0000-4000-8000-000000000000"))
    no_argument_error(tmp_path)
    assert "no rollout found" in resumed.error
    # the preflight: `codex login -c ... status` (envport's -c values validated too)
    with pytest.raises(AgentConfigError, match=r"run `codex login`.*Not logged in"):
        codex.preflight()
    monkeypatch.setenv("CODEX_API_KEY", "sk-dummy")
    assert codex.preflight() == []
    with pytest.raises(AgentConfigError, match="rejects envport's configuration"):
        make_backend("codex", extra_args=["-c", 'sandbox_mode="bogus"']).preflight()


def test_gemini_parses_envports_argv_and_no_auth_is_a_config_error(tmp_path):
    gemini = backend("gemini")
    assert gemini.preflight() == []  # no offline login check: the first call says it at once
    result = gemini.run(request(tmp_path))
    no_argument_error(tmp_path)
    assert result.status == "config_error" and result.exit_code == 41
    assert "set GEMINI_API_KEY" in result.error and "Please set an Auth method" in result.error
    assert "not trusted" not in (tmp_path / "agent.log").read_text()  # --skip-trust works


def test_aider_parses_envports_argv_and_no_key_is_a_config_error(tmp_path):
    aider = backend("aider:sonnet")
    result = aider.run(request(tmp_path))
    no_argument_error(tmp_path)
    assert result.status == "config_error" and result.exit_code == 0
    assert "ANTHROPIC_API_KEY" in result.error
    with pytest.raises(AgentConfigError, match="needs ANTHROPIC_API_KEY, which is not set"):
        aider.preflight()
    with pytest.raises(AgentConfigError, match="no model and none of the keys"):
        backend("aider").preflight()


def test_envport_translate_with_claude_not_logged_in_stops_before_iteration_1(tmp_path):
    backend("claude")
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "envport.agent.commands", "translate", "--reference",
           "envport.envs.cartpole.reference:CartPoleReference", "--agent", "claude",
           "--workdir", str(run_dir)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    assert "run `claude` and /login" in done.stderr and "ANTHROPIC_API_KEY" in done.stderr
    assert not run_dir.exists()  # stopped by the preflight: nothing created, nothing spent
    # without the preflight, Claude Code's own "Not logged in" answer stops it: exit 2 again
    done = subprocess.run([*cmd, "--no-agent-preflight", "--json", str(tmp_path / "s.json")],
                          env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    summary = json.loads((tmp_path / "s.json").read_text())
    assert done.returncode == 2 and summary["status"] == "config_error", done.stderr
    assert summary["iterations"] == 0 and "Not logged in" in summary["reason"]
