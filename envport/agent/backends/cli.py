"""Command-line coding agents: Claude Code, Codex, Gemini CLI and Aider.

Each backend builds one non-interactive command, runs it in the workspace (own process group,
stdin closed, timeout kills the group) and reads its structured output: Claude Code's JSON
result object, Codex's JSONL event stream, Gemini CLI's JSON object, Aider's token/cost lines.
Status, usage and cost come from that output only; an unparseable one is ``malformed``, a
non-zero exit without a result is ``crash`` (both infrastructure errors for the loop).

The command lines are written for the versions in ``PINNED`` (installed, project-local, by
``bash tests/agent/install_agent_clis.sh``). Before iteration 1, ``preflight()`` checks the
installed CLI: its ``--version``, that its ``--help`` lists every flag envport passes, and its
login where the CLI can say so offline (``claude auth status``, ``codex login status``; Aider:
an API key for its model). A failure there, or an output that says "not logged in", "no API
key" or "unknown option" at run time, is a ``config_error``: the loop stops at once with the
fix instead of spending iterations on it.

Where each CLI is found: ``$ENVPORT_CLAUDE`` / ``$ENVPORT_CODEX`` / ``$ENVPORT_GEMINI`` /
``$ENVPORT_AIDER`` (a path), else on PATH, else in the project-local prefix
(``$ENVPORT_AGENT_CLIS``, default ``.agent-clis/`` at the repository root).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from envport.agent.backends.base import (
    AgentConfigError,
    AgentRequest,
    AgentResult,
    AgentUnavailableError,
    ProcessOutcome,
    Status,
    Usage,
    estimate_cost,
    run_process,
)

# The versions envport's command lines are written for and tested with (tests/agent, marker
# agent_clis); envport/agent/clis/package.json and aider-requirements.txt pin the same.
PINNED: dict[str, str] = {"claude": "2.1.332", "codex": "0.171.0", "gemini": "0.61.0",
                          "aider": "0.86.2"}
INSTALL = "bash tests/agent/install_agent_clis.sh"

# API failures that say nothing about the task (the loop retries without using an iteration).
_TRANSIENT = re.compile(r"api error|overloaded|rate.?limit|429|502|503|504|connection (error|"
                        r"reset|refused)|network|timed? ?out while", re.I)
# What the CLIs' argument parsers say about an argument their version does not accept:
# commander (Claude Code), clap (Codex), yargs (Gemini CLI), argparse (Aider), and Codex's
# validation of -c overrides.
_ARG_ERROR = re.compile(
    r"^.*(error: unknown option|error: unexpected argument|error: unrecognized arguments|"
    r"^Unknown arguments?:|^Invalid values?:|error: invalid value|argument '.*' is invalid|"
    r"Error loading config).*$", re.I | re.M)
_PROBE_TIMEOUT_S = 60.0


def _tail(text: str, n: int = 1500) -> str:
    return text.strip()[-n:]


def local_prefix() -> Path:
    """Where tests/agent/install_agent_clis.sh puts the pinned CLIs."""
    env = os.environ.get("ENVPORT_AGENT_CLIS")
    return Path(env) if env else Path(__file__).resolve().parents[3] / ".agent-clis"


def flags_of(argv: list[str]) -> list[str]:
    """The options in a command line (``--name=value`` counts as ``--name``)."""
    return [a.split("=", 1)[0] for a in argv if a.startswith("-") and len(a) > 1]


def unsupported_flags(flags: list[str], help_text: str) -> list[str]:
    """The flags that a CLI's ``--help`` does not list (as a whole word)."""
    return [f for f in dict.fromkeys(flags)
            if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", help_text)]


def parse_version(text: str) -> str | None:
    m = re.search(r"\b(\d+\.\d+\.\d+)\b", text)
    return m.group(1) if m else None


class _CliBackend:
    name = "cli"
    executable = ""
    title = ""  # the CLI's name in messages
    install_hint = ""
    local_path = ""  # under local_prefix()
    # run time: what the CLI says when it is not logged in or has no key, and the fix
    auth_error = re.compile(r"$^")
    auth_fix = ""
    choice_values: tuple[str, ...] = ()  # option values that --help must list (quoted)

    def __init__(self, model: str | None = None, extra_args: list[str] | None = None,
                 env: dict[str, str] | None = None):
        self.model = model
        self.extra_args = list(extra_args or [])
        self.env = env
        self.price: tuple[float, float, float] | None = None  # overrides the price table
        self.path: str | None = None  # the executable, once found

    # -- finding the executable
    @property
    def env_var(self) -> str:
        return f"ENVPORT_{self.name.upper()}"

    def locate(self) -> str:
        given = os.environ.get(self.env_var)
        if given:
            if not (Path(given).is_file() and os.access(given, os.X_OK)):
                raise AgentConfigError(f"{self.env_var}={given} is not an executable file. "
                                       f"{self.install_hint}")
            return given
        found = shutil.which(self.executable)
        if found:
            return found
        local = local_prefix() / self.local_path
        if local.is_file() and os.access(local, os.X_OK):
            return str(local)
        raise AgentUnavailableError(
            f"`{self.executable}` was not found on PATH (nor ${self.env_var}, nor {local}). "
            f"{self.install_hint}")

    def check(self) -> None:
        self.path = self.locate()

    @property
    def exe(self) -> str:
        return self.path or self.executable

    def environment(self) -> dict[str, str]:
        return {**os.environ, **(self.env or {})}

    # -- the command
    def command(self, request: AgentRequest) -> list[str]:
        raise NotImplementedError

    def parse(self, out: ProcessOutcome, request: AgentRequest) -> AgentResult:
        raise NotImplementedError

    # -- preflight: before iteration 1, no tokens spent
    def probe(self, args: list[str], timeout_s: float = _PROBE_TIMEOUT_S) -> ProcessOutcome:
        """Run the CLI with ``args`` in an empty folder (no workspace settings are read)."""
        with tempfile.TemporaryDirectory(prefix=f"envport-{self.name}-") as tmp:
            out = run_process([self.exe, *args], Path(tmp), timeout_s, self.environment())
        if out.timed_out:
            raise AgentConfigError(f"`{self.exe} {' '.join(args)}` did not answer within "
                                   f"{timeout_s:.0f} s. {self.install_hint}")
        return out

    def sample_requests(self) -> list[AgentRequest]:
        """A fresh call and a resumed one, as the loop makes them (the flags to check)."""
        work = Path(tempfile.gettempdir())
        return [AgentRequest(prompt="PROMPT", workdir=work, max_budget_usd=1.0),
                AgentRequest(prompt="PROMPT", workdir=work, max_budget_usd=1.0,
                             session_id="00000000-0000-4000-8000-000000000000")]

    def help_args(self, argv: list[str]) -> list[str]:
        return ["--help"]

    def installed_version(self) -> str:
        out = self.probe(["--version"])
        version = parse_version(out.stdout) or parse_version(out.stderr)
        if out.exit_code != 0 or version is None:
            raise AgentConfigError(
                f"`{self.exe} --version` failed (exit {out.exit_code}): "
                f"{_tail(out.stderr or out.stdout, 300)}. {self.install_hint}")
        return version

    def check_flags(self, version: str) -> None:
        helps: dict[tuple[str, ...], str] = {}
        for request in self.sample_requests():
            argv = self.command(request)
            key = tuple(self.help_args(argv))
            if key not in helps:
                out = self.probe(list(key))
                helps[key] = out.stdout + out.stderr
            text = helps[key]
            bad = unsupported_flags(flags_of(argv[1:]), text)
            bad += [v for v in self.choice_values if f'"{v}"' not in text and v not in bad]
            if bad:
                raise AgentConfigError(
                    f"{self.title} {version} does not accept {', '.join(bad)} (`{self.exe} "
                    f"{' '.join(key)}` does not list it); envport's command line is written "
                    f"for {self.title} {PINNED[self.name]}. Install that version: `{INSTALL}` "
                    f"(or point ${self.env_var} at it); if the flag came from --agent-arg, "
                    "fix that argument.")

    def check_auth(self) -> list[str]:
        return []

    def preflight(self) -> list[str]:
        """Version, flags, login: raise AgentConfigError naming the fix; return notes."""
        self.check()
        version = self.installed_version()
        self.check_flags(version)
        notes = self.check_auth()
        if version != PINNED[self.name]:
            notes.insert(0, f"{self.title} {version} at {self.exe}: envport is tested with "
                            f"{PINNED[self.name]} (`{INSTALL}`); its flags are accepted")
        return notes

    # -- run-time classification
    def config_problem(self, out: ProcessOutcome, result: AgentResult) -> str | None:
        """The fix, when the output says the agent cannot work as configured."""
        if result.status == "ok":
            return None
        # stderr and the error only: stdout carries the agent's own work (its messages, the
        # output of the commands it ran), which may quote such words about anything
        if out.exit_code not in (0, None):
            m = _ARG_ERROR.search(out.stderr)
            if m:
                return (f"{self.title} rejected an argument envport passed: "
                        f"`{m.group(0).strip()}`. envport's command line is written for "
                        f"{self.title} {PINNED[self.name]}: install it with `{INSTALL}` (or "
                        f"point ${self.env_var} at it), or fix --agent-arg.")
        text = f"{result.error}\n{out.stderr[-6000:]}"
        m = self.auth_error.search(text)
        if m:
            line = next((ln.strip() for ln in text.splitlines() if m.group(0) in ln),
                        m.group(0))
            return f"{self.auth_fix} ({self.title} said: {line[:300]!r})"
        return None

    def run(self, request: AgentRequest) -> AgentResult:
        self.check()
        out = run_process(self.command(request), request.workdir, request.timeout_s,
                          self.environment(), request.log_path)
        if out.timed_out:
            result = AgentResult("timeout", None, request.session_id, "", Usage(),
                                 wall_s=out.wall_s,
                                 error=f"killed after {request.timeout_s:.0f} s (timeout)")
            try:  # keep whatever usage the partial output reports
                partial = self.parse(out, request)
                result.usage, result.session_id = partial.usage, partial.session_id or \
                    request.session_id
            except Exception:
                pass
            return result
        try:
            result = self.parse(out, request)
        except (ValueError, KeyError, TypeError) as e:
            status: Status = "crash" if out.exit_code not in (0, None) else "malformed"
            result = AgentResult(status, out.exit_code, request.session_id, _tail(out.stdout),
                                 error=f"{type(e).__name__}: {e}; stderr: {_tail(out.stderr, 600)}")
        problem = self.config_problem(out, result)
        if problem:
            result.status, result.error = "config_error", problem
        result.wall_s, result.exit_code = out.wall_s, out.exit_code
        return result


# ---------------------------------------------------------------- Claude Code
class ClaudeCode(_CliBackend):
    """``claude -p PROMPT --output-format json``: one JSON result object with ``result``,
    ``session_id``, ``num_turns``, ``total_cost_usd`` (reported) and ``usage``.

    Not logged in, Claude Code 2.1.332 exits 1 with ``is_error: true, subtype: "success",
    result: "Not logged in · Please run /login"``; ``claude auth status`` says
    ``"loggedIn": false`` offline, which the preflight reads."""

    name = "claude"
    executable = "claude"
    title = "Claude Code"
    local_path = "node_modules/.bin/claude"
    install_hint = (f"Install Claude Code {PINNED['claude']} (`{INSTALL}`, or `npm install -g "
                    f"@anthropic-ai/claude-code@{PINNED['claude']}`) and log in (run `claude` "
                    "and /login) or set ANTHROPIC_API_KEY.")
    auth_error = re.compile(r"not logged in|please run /login|invalid api key|"
                            r"authentication_error|oauth token has (expired|been revoked)|"
                            r"credit balance is too low", re.I)
    auth_fix = ("Claude Code is not logged in: run `claude` and /login (or `claude auth "
                "login`), or set ANTHROPIC_API_KEY")
    # Edits are accepted; shell commands only for the verification harness and pytest;
    # anything else that would ask for permission is denied (nobody is there to answer).
    default_args: tuple[str, ...] = (
        "--permission-mode", "acceptEdits", "--permission-prompts", "none",
        "--allowedTools", "Bash(python harness/verify.py *)", "Bash(python -m pytest *)",
        "Bash(git diff *)", "Bash(git status *)")
    choice_values = ("acceptEdits", "none")

    def command(self, request: AgentRequest) -> list[str]:
        cmd = [self.exe, "-p", request.prompt, "--output-format", "json", *self.default_args]
        if request.max_budget_usd is not None:  # Claude Code stops itself at the run's budget
            cmd += ["--max-budget-usd", f"{max(request.max_budget_usd, 0.01):.2f}"]
        if self.model:
            cmd += ["--model", self.model]
        if request.session_id:
            cmd += ["--resume", request.session_id]
        return cmd + self.extra_args

    def check_auth(self) -> list[str]:
        out = self.probe(["auth", "status"])
        try:
            status = json.loads(out.stdout)
        except json.JSONDecodeError:
            return [f"could not read the login state (`{self.exe} auth status` said: "
                    f"{_tail(out.stdout + out.stderr, 200)!r})"]
        if status.get("loggedIn") is False:
            raise AgentConfigError(f"{self.auth_fix}. (`claude auth status`: loggedIn false, "
                                   f"authMethod {status.get('authMethod')!r})")
        return []

    def parse(self, out: ProcessOutcome, request: AgentRequest) -> AgentResult:
        data = _last_json(out.stdout, lambda d: d.get("type") == "result" or "result" in d)
        raw = data.get("usage") or {}
        cached = int(raw.get("cache_read_input_tokens") or 0)
        usage = Usage(
            input_tokens=int(raw.get("input_tokens") or 0) + cached
            + int(raw.get("cache_creation_input_tokens") or 0),
            output_tokens=int(raw.get("output_tokens") or 0), cached_tokens=cached)
        cost = data.get("total_cost_usd", data.get("cost_usd"))
        if isinstance(cost, int | float):
            usage.cost_usd, usage.cost_source = float(cost), "reported"
        else:
            usage = estimate_cost(usage, self.model, self.price)
        subtype = str(data.get("subtype", ""))
        text = str(data.get("result") or "")
        status: Status
        if subtype.startswith(("error_max_budget", "error_max_turns")):
            status = "budget_exhausted"
        elif data.get("is_error") or subtype.startswith("error"):
            status = "crash" if _TRANSIENT.search(text) else "error"
        else:
            status = "ok"
        return AgentResult(status, out.exit_code, data.get("session_id") or request.session_id,
                           text, usage, turns=data.get("num_turns"),
                           error="" if status == "ok" else (text[:300] or subtype))


# ---------------------------------------------------------------- Codex
class Codex(_CliBackend):
    """``codex exec --json``: JSONL events (``thread.started`` with the session id,
    ``item.completed`` agent messages, ``turn.completed`` with usage, ``turn.failed``/``error``).
    Codex reports tokens, not cost: cost is estimated from the price table.

    Codex 0.171.0 has no ``--full-auto`` (``error: unexpected argument '--full-auto' found``):
    the sandbox and approval policy are ``-c`` overrides, which ``codex exec`` and
    ``codex exec resume`` both accept. Not logged in, ``codex exec`` still starts and waits for
    the network; ``codex login status`` says "Not logged in" (exit 1) offline, and validates the
    same ``-c`` overrides, which the preflight uses."""

    name = "codex"
    executable = "codex"
    title = "Codex"
    local_path = "node_modules/.bin/codex"
    install_hint = (f"Install Codex {PINNED['codex']} (`{INSTALL}`, or `npm install -g "
                    f"@openai/codex@{PINNED['codex']}`) and log in (`codex login`) or set "
                    "CODEX_API_KEY.")
    auth_error = re.compile(r"not logged in|401 unauthorized|invalid[_ ]api[_ ]key|"
                            r"incorrect api key|missing bearer|run `?codex login", re.I)
    auth_fix = ("Codex is not logged in: run `codex login` (or `printenv OPENAI_API_KEY | codex "
                "login --with-api-key`), or set CODEX_API_KEY")
    # Edits and commands inside the workspace, no questions (nobody is there to answer).
    overrides: tuple[str, ...] = ("-c", 'sandbox_mode="workspace-write"',
                                  "-c", 'approval_policy="never"')

    def command(self, request: AgentRequest) -> list[str]:
        cmd = [self.exe, "exec"]
        if request.session_id:
            cmd += ["resume", request.session_id]
        cmd += ["--json", *self.overrides, "--skip-git-repo-check"]
        if self.model:
            cmd += ["--model", self.model]
        return [*cmd, *self.extra_args, request.prompt]

    def help_args(self, argv: list[str]) -> list[str]:
        return ["exec", "resume", "--help"] if argv[2:3] == ["resume"] else ["exec", "--help"]

    def check_auth(self) -> list[str]:
        argv = self.command(self.sample_requests()[0])
        pairs = [x for i, a in enumerate(argv) if a in ("-c", "--config") and i + 1 < len(argv)
                 for x in (a, argv[i + 1])]
        out = self.probe(["login", *pairs, "status"])
        said = out.stdout + out.stderr
        m = _ARG_ERROR.search(said)
        if m:
            raise AgentConfigError(f"Codex rejects envport's configuration: "
                                   f"`{m.group(0).strip()}` (`codex login {' '.join(pairs)} "
                                   f"status`). {self.install_hint}")
        if out.exit_code == 0:
            return []
        if os.environ.get("CODEX_API_KEY") or os.environ.get("CODEX_ACCESS_TOKEN"):
            return []  # codex exec reads these itself
        if "--oss" in self.extra_args or any("model_provider" in a for a in self.extra_args):
            return ["Codex is not logged in; a non-OpenAI provider was chosen with --agent-arg"]
        last = [ln.strip() for ln in said.splitlines() if ln.strip()][-1:] or [""]
        raise AgentConfigError(f"{self.auth_fix}. (`codex login status`: {last[0][:200]!r})")

    def parse(self, out: ProcessOutcome, request: AgentRequest) -> AgentResult:
        events = [e for e in (_json_or_none(line) for line in out.stdout.splitlines())
                  if isinstance(e, dict) and "type" in e]
        if not events:
            raise ValueError("no JSON events on stdout")
        session, text, errors, turns = request.session_id, "", [], 0
        usage = Usage()
        for e in events:
            kind = e["type"]
            if kind in ("thread.started", "thread.resumed"):
                session = e.get("thread_id") or session
            elif kind == "item.completed":
                item = e.get("item") or {}
                if item.get("type") in ("agent_message", "assistant_message"):
                    text = str(item.get("text") or text)
            elif kind == "turn.completed":
                turns += 1
                u = e.get("usage") or {}
                usage.input_tokens += int(u.get("input_tokens") or 0)
                usage.cached_tokens += int(u.get("cached_input_tokens") or 0)
                usage.output_tokens += int(u.get("output_tokens") or 0)
            elif kind in ("turn.failed", "error"):
                err = e.get("error")
                message = str((err.get("message") if isinstance(err, dict) else err)
                              or e.get("message") or kind)
                # "Reconnecting... 2/5 (...)": Codex retrying a dropped stream, not a failure
                if not message.startswith("Reconnecting"):
                    errors.append(message)
        usage = estimate_cost(usage, self.model, self.price)
        status: Status
        if errors:
            joined = "; ".join(dict.fromkeys(errors))
            status = ("budget_exhausted" if re.search(r"usage limit|quota|budget", joined, re.I)
                      else "crash" if _TRANSIENT.search(joined) else "error")
        elif turns == 0:
            raise ValueError("the event stream has no turn.completed event")
        else:
            status = "ok"
        return AgentResult(status, out.exit_code, session, text, usage, turns=turns,
                           error="; ".join(dict.fromkeys(errors))[:500])


# ---------------------------------------------------------------- Gemini CLI
# Gemini CLI's fatal exit codes (FatalAuthenticationError 41, FatalInputError 42,
# FatalSandboxError 44, FatalConfigError 52, FatalUntrustedWorkspaceError 55): a human must act.
_GEMINI_CONFIG_EXITS = {41: "authentication", 42: "input", 44: "sandbox", 52: "configuration",
                        55: "untrusted workspace"}


class GeminiCli(_CliBackend):
    """``gemini -p PROMPT --output-format json``: ``response``, ``stats.models.*.tokens``,
    ``error``. Exit code 53 is Gemini CLI's turn limit. Cost is estimated per model.

    Gemini CLI 0.61.0 without an auth method exits 41 within seconds and writes its JSON error
    object to stderr, not stdout; in a folder it does not trust it turns ``--approval-mode
    auto_edit`` back into ``default`` unless ``--skip-trust`` is given."""

    name = "gemini"
    executable = "gemini"
    title = "Gemini CLI"
    local_path = "node_modules/.bin/gemini"
    install_hint = (f"Install Gemini CLI {PINNED['gemini']} (`{INSTALL}`, or `npm install -g "
                    f"@google/gemini-cli@{PINNED['gemini']}`) and set GEMINI_API_KEY (or log "
                    "in with `gemini`).")
    auth_error = re.compile(r"please set an auth method|api key not valid|"
                            r"api_key_invalid", re.I)
    auth_fix = ("Gemini CLI has no authentication: set GEMINI_API_KEY (or "
                "GOOGLE_GENAI_USE_VERTEXAI=true, GOOGLE_GENAI_USE_GCA=true), or run `gemini` "
                "once and choose an auth method")
    choice_values = ("auto_edit",)

    def command(self, request: AgentRequest) -> list[str]:
        cmd = [self.exe, "-p", request.prompt, "--output-format", "json",
               "--approval-mode", "auto_edit", "--skip-trust"]
        if self.model:
            cmd += ["--model", self.model]
        return cmd + self.extra_args

    def config_problem(self, out: ProcessOutcome, result: AgentResult) -> str | None:
        problem = super().config_problem(out, result)
        if problem or out.exit_code not in _GEMINI_CONFIG_EXITS:
            return problem
        what = _GEMINI_CONFIG_EXITS[out.exit_code]
        fix = self.auth_fix if out.exit_code == 41 else f"Gemini CLI stopped on a {what} error"
        return f"{fix} (exit {out.exit_code}: {result.error[:300] or _tail(out.stderr, 300)!r})"

    def parse(self, out: ProcessOutcome, request: AgentRequest) -> AgentResult:
        # the result object is on stdout; a fatal error's object only on stderr
        def want(d: dict[str, Any]) -> bool:
            return "response" in d or "error" in d

        try:
            data = _last_json(out.stdout, want)
        except ValueError:
            data = _last_json(out.stderr, want)
        usage, cost, known = Usage(), 0.0, True
        models = ((data.get("stats") or {}).get("models") or {})
        turns = 0
        for model, stats in models.items():
            tokens = stats.get("tokens") or {}
            u = Usage(int(tokens.get("prompt") or 0), int(tokens.get("candidates") or 0)
                      + int(tokens.get("thoughts") or 0), int(tokens.get("cached") or 0))
            turns += int((stats.get("api") or {}).get("totalRequests") or 0)
            usage.input_tokens += u.input_tokens
            usage.output_tokens += u.output_tokens
            usage.cached_tokens += u.cached_tokens
            estimate_cost(u, model, self.price)
            if u.cost_usd is None:
                known = False
            else:
                cost += u.cost_usd
        if models and known:
            usage.cost_usd, usage.cost_source = cost, "estimated"
        error = data.get("error")
        status: Status
        if out.exit_code == 53:
            status = "budget_exhausted"
        elif error:
            message = str(error.get("message") if isinstance(error, dict) else error)
            status = "crash" if _TRANSIENT.search(message) else "error"
        else:
            status = "ok"
        if isinstance(error, dict):
            error = error.get("message") or error
        return AgentResult(status, out.exit_code, data.get("session_id") or request.session_id,
                           str(data.get("response") or ""), usage, turns=turns or None,
                           error="" if status == "ok" else str(error)[:500])


# ---------------------------------------------------------------- Aider
_AIDER_TOKENS = re.compile(r"Tokens:\s*(?P<body>[^\n]*?)\.?\s*(?:Cost:[^\n]*)?$", re.M)
_AIDER_COST = re.compile(r"Cost:\s*\$(?P<msg>[\d.]+)\s*message")
# The keys Aider 0.86.2 picks a default model from (aider/onboarding.py); with none of them and
# no --model it offers an OpenRouter login in a browser and waits 5 minutes for it.
AIDER_DEFAULT_KEYS = ("OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY",
                      "OPENAI_API_KEY", "GEMINI_API_KEY", "VERTEXAI_PROJECT")


def _count(text: str) -> int:
    m = re.match(r"([\d.]+)\s*([kKmM]?)", text.strip())
    if not m:
        return 0
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


class Aider(_CliBackend):
    """``aider --message PROMPT FILES``: no JSON mode; its ``Tokens: ... Cost: $x message``
    lines are the structured part (cost reported by aider from its own price table).

    Aider 0.86.2 without its model's key still exits 0, after ``litellm.AuthenticationError:
    ...`` and "The API provider is not able to authenticate you"; without a model and any key
    it waits 5 minutes for a browser login. Its executable: ``$ENVPORT_AIDER``, PATH, or the
    virtual environment of the local prefix (``aider-venv/bin/aider``)."""

    name = "aider"
    executable = "aider"
    title = "Aider"
    local_path = "aider-venv/bin/aider"
    install_hint = (f"Install Aider {PINNED['aider']} in its own virtual environment (`{INSTALL}`"
                    f", or `python -m venv V && V/bin/pip install aider-chat=={PINNED['aider']}`"
                    " and ENVPORT_AIDER=V/bin/aider) and set the API key of its model (e.g. "
                    "ANTHROPIC_API_KEY or OPENAI_API_KEY).")
    auth_error = re.compile(r"No LLM model was specified and no API keys were provided|"
                            r"AuthenticationError|not able to authenticate you|"
                            r"^- \w+: Not set$", re.M)
    auth_fix = ("Aider has no API key for its model: set the key its model needs (e.g. "
                "ANTHROPIC_API_KEY for --agent aider:sonnet, OPENAI_API_KEY for "
                "aider:gpt-4.1), and name the model with --agent aider:MODEL")
    default_args: tuple[str, ...] = (
        "--yes-always", "--no-auto-commits", "--no-stream", "--no-pretty", "--no-check-update",
        "--analytics-disable", "--no-gitignore", "--no-show-release-notes",
        "--no-show-model-warnings")

    def environment(self) -> dict[str, str]:
        # Aider opens URLs in a browser when it answers "yes" to its own offers; headless, a
        # browser must never start (BROWSER=true makes Python's webbrowser run `true URL`).
        return {**super().environment(), "BROWSER": "true"}

    def command(self, request: AgentRequest) -> list[str]:
        cmd = [self.exe, "--message", request.prompt, *self.default_args]
        if self.model:
            cmd += ["--model", self.model]
        files = [p for p in request.editable if (request.workdir / p).is_file()]
        return cmd + self.extra_args + files

    def check_auth(self) -> list[str]:
        env = self.environment()
        if not self.model and not any(env.get(k) for k in AIDER_DEFAULT_KEYS):
            raise AgentConfigError(
                "Aider has no model and none of the keys it picks one from "
                f"({', '.join(AIDER_DEFAULT_KEYS)}); it would wait 5 minutes for a browser "
                "login. Name the model (--agent aider:MODEL) and set its API key.")
        # Aider's own start-up check of the model's keys, then exit (no model call)
        argv = self.command(self.sample_requests()[0])[1:]
        i = argv.index("--message")
        argv = [a for a in argv[:i] + argv[i + 2:] if a != "--no-show-model-warnings"]
        out = self.probe([*argv, "--no-git", "--exit"])
        missing = re.findall(r"^- (\w+): Not set$", out.stdout + out.stderr, re.M)
        if missing:
            raise AgentConfigError(f"Aider's model {self.model or '(default)'} needs "
                                   f"{', '.join(dict.fromkeys(missing))}, which is not set. "
                                   f"{self.auth_fix}.")
        return []

    def parse(self, out: ProcessOutcome, request: AgentRequest) -> AgentResult:
        usage = Usage()
        cost, lines = 0.0, 0
        for m in _AIDER_TOKENS.finditer(out.stdout):
            lines += 1
            for part in m.group("body").split(","):
                part = part.strip().rstrip(".")
                if part.endswith("sent"):
                    usage.input_tokens += _count(part)
                elif part.endswith("received"):
                    usage.output_tokens += _count(part)
                elif part.endswith("cache hit"):
                    usage.cached_tokens += _count(part)
        for m in _AIDER_COST.finditer(out.stdout):
            cost += float(m.group("msg"))
        if _AIDER_COST.search(out.stdout):
            usage.cost_usd, usage.cost_source = cost, "reported"
        else:
            usage = estimate_cost(usage, self.model, self.price)
        if out.exit_code not in (0, None):
            if lines == 0:
                raise ValueError(f"aider exited {out.exit_code} without a token report")
            return AgentResult("error", out.exit_code, None, _tail(out.stdout), usage,
                               turns=lines, error=_tail(out.stderr, 500))
        failed = self.auth_error.search(out.stdout)
        if lines == 0 and failed:  # exit 0, but no model call was made
            said = next(ln for ln in out.stdout.splitlines() if failed.group(0) in ln)
            return AgentResult("error", out.exit_code, None, _tail(out.stdout), usage,
                               turns=0, error=said.strip())
        return AgentResult("ok", out.exit_code, None, _tail(out.stdout), usage,
                           turns=lines or None)


# ---------------------------------------------------------------- helpers
def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None


def _json_objects(text: str) -> list[Any]:
    """Every JSON value that starts a line of ``text`` (pretty-printed objects included)."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    pos = end = 0
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        start = pos + len(line) - len(stripped)
        pos += len(line)
        if start < end or stripped[:1] not in ("{", "["):
            continue  # inside the value found last, or not JSON
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        found.append(value)
    return found


def _last_json(stdout: str, want: Any) -> dict[str, Any]:
    """The structured result: the last JSON object in the output matching ``want``; a JSON
    list (verbose mode) yields its last matching element."""
    candidates: list[Any] = []
    for value in _json_objects(stdout):
        candidates += value if isinstance(value, list) else [value]
    for item in reversed(candidates):
        if isinstance(item, dict) and want(item):
            return item
    raise ValueError("no structured result object in the agent's output")


CLI_BACKENDS: dict[str, type[_CliBackend]] = {
    "claude": ClaudeCode, "codex": Codex, "gemini": GeminiCli, "aider": Aider,
}


def cli_backend(name: str, model: str | None = None, extra_args: list[str] | None = None
                ) -> _CliBackend:
    return CLI_BACKENDS[name](model=model, extra_args=extra_args)


__all__ = ["CLI_BACKENDS", "INSTALL", "PINNED", "Aider", "ClaudeCode", "Codex", "GeminiCli",
           "cli_backend", "flags_of", "local_prefix", "unsupported_flags"]
