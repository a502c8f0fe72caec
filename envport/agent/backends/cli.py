"""Command-line coding agents: Claude Code, Codex, Gemini CLI and Aider.

Each backend builds one non-interactive command, runs it in the workspace (own process group,
stdin closed, timeout kills the group) and reads its structured output: Claude Code's JSON
result object, Codex's JSONL event stream, Gemini CLI's JSON object, Aider's token/cost lines.
Status, usage and cost come from that output only; an unparseable one is ``malformed``, a
non-zero exit without a result is ``crash`` (both infrastructure errors for the loop).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from envport.agent.backends.base import (
    AgentRequest,
    AgentResult,
    ProcessOutcome,
    Status,
    Usage,
    estimate_cost,
    require_executable,
    run_process,
)

# API failures that say nothing about the task (the loop retries without using an iteration).
_TRANSIENT = re.compile(r"api error|overloaded|rate.?limit|429|502|503|504|connection (error|"
                        r"reset|refused)|network|timed? ?out while", re.I)


def _tail(text: str, n: int = 1500) -> str:
    return text.strip()[-n:]


class _CliBackend:
    name = "cli"
    executable = ""
    install_hint = ""

    def __init__(self, model: str | None = None, extra_args: list[str] | None = None,
                 env: dict[str, str] | None = None):
        self.model = model
        self.extra_args = list(extra_args or [])
        self.env = env
        self.price: tuple[float, float, float] | None = None  # overrides the price table

    def check(self) -> None:
        require_executable(self.executable, self.install_hint)

    def command(self, request: AgentRequest) -> list[str]:
        raise NotImplementedError

    def parse(self, out: ProcessOutcome, request: AgentRequest) -> AgentResult:
        raise NotImplementedError

    def run(self, request: AgentRequest) -> AgentResult:
        self.check()
        env = {**os.environ, **(self.env or {})}
        out = run_process(self.command(request), request.workdir, request.timeout_s, env,
                          request.log_path)
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
        result.wall_s, result.exit_code = out.wall_s, out.exit_code
        return result


# ---------------------------------------------------------------- Claude Code
class ClaudeCode(_CliBackend):
    """``claude -p PROMPT --output-format json``: one JSON result object with ``result``,
    ``session_id``, ``num_turns``, ``total_cost_usd`` (reported) and ``usage``."""

    name = "claude"
    executable = "claude"
    install_hint = ("Install Claude Code (`npm install -g @anthropic-ai/claude-code`) and log in "
                    "(`claude login`) or set ANTHROPIC_API_KEY.")
    # Edits are accepted; shell commands only for the verification harness and pytest.
    default_args: tuple[str, ...] = ("--permission-mode", "acceptEdits", "--allowedTools",
                    "Bash(python harness/verify.py:*)", "Bash(python -m pytest:*)",
                    "Bash(git diff:*)", "Bash(git status:*)")

    def command(self, request: AgentRequest) -> list[str]:
        cmd = [self.executable, "-p", request.prompt, "--output-format", "json",
               *self.default_args]
        if self.model:
            cmd += ["--model", self.model]
        if request.session_id:
            cmd += ["--resume", request.session_id]
        return cmd + self.extra_args

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
                           error="" if status == "ok" else (subtype or text[:300]))


# ---------------------------------------------------------------- Codex
class Codex(_CliBackend):
    """``codex exec --json``: JSONL events (``thread.started`` with the session id,
    ``item.completed`` agent messages, ``turn.completed`` with usage, ``turn.failed``/``error``).
    Codex reports tokens, not cost: cost is estimated from the price table."""

    name = "codex"
    executable = "codex"
    install_hint = ("Install Codex (`npm install -g @openai/codex`) and log in (`codex login`) "
                    "or set OPENAI_API_KEY.")

    def command(self, request: AgentRequest) -> list[str]:
        cmd = [self.executable, "exec"]
        if request.session_id:
            cmd += ["resume", request.session_id]
        cmd += ["--json", "--full-auto", "--skip-git-repo-check"]
        if self.model:
            cmd += ["--model", self.model]
        return [*cmd, *self.extra_args, request.prompt]

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
                err = e.get("error") or {}
                errors.append(str(err.get("message") if isinstance(err, dict) else err
                                  or e.get("message") or kind))
        usage = estimate_cost(usage, self.model, self.price)
        status: Status
        if errors:
            joined = "; ".join(errors)
            status = ("budget_exhausted" if re.search(r"usage limit|quota|budget", joined, re.I)
                      else "crash" if _TRANSIENT.search(joined) else "error")
        elif turns == 0:
            raise ValueError("the event stream has no turn.completed event")
        else:
            status = "ok"
        return AgentResult(status, out.exit_code, session, text, usage, turns=turns,
                           error="; ".join(errors)[:500])


# ---------------------------------------------------------------- Gemini CLI
class GeminiCli(_CliBackend):
    """``gemini -p PROMPT --output-format json``: ``response``, ``stats.models.*.tokens``,
    ``error``. Exit code 53 is Gemini CLI's turn limit. Cost is estimated per model."""

    name = "gemini"
    executable = "gemini"
    install_hint = ("Install Gemini CLI (`npm install -g @google/gemini-cli`) and set "
                    "GEMINI_API_KEY (or log in with `gemini`).")

    def command(self, request: AgentRequest) -> list[str]:
        cmd = [self.executable, "-p", request.prompt, "--output-format", "json",
               "--approval-mode", "auto_edit"]
        if self.model:
            cmd += ["--model", self.model]
        return cmd + self.extra_args

    def parse(self, out: ProcessOutcome, request: AgentRequest) -> AgentResult:
        data = _last_json(out.stdout, lambda d: "response" in d or "error" in d)
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
        return AgentResult(status, out.exit_code, data.get("session_id") or request.session_id,
                           str(data.get("response") or ""), usage, turns=turns or None,
                           error="" if status == "ok" else json.dumps(error)[:500])


# ---------------------------------------------------------------- Aider
_AIDER_TOKENS = re.compile(r"Tokens:\s*(?P<body>[^\n]*?)\.?\s*(?:Cost:[^\n]*)?$", re.M)
_AIDER_COST = re.compile(r"Cost:\s*\$(?P<msg>[\d.]+)\s*message")


def _count(text: str) -> int:
    m = re.match(r"([\d.]+)\s*([kKmM]?)", text.strip())
    if not m:
        return 0
    scale = {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


class Aider(_CliBackend):
    """``aider --message PROMPT FILES``: no JSON mode; its ``Tokens: ... Cost: $x message``
    lines are the structured part (cost reported by aider from its own price table)."""

    name = "aider"
    executable = "aider"
    install_hint = ("Install Aider (`python -m pip install aider-install && aider-install`) and "
                    "set the API key of its model (e.g. ANTHROPIC_API_KEY or OPENAI_API_KEY).")

    def command(self, request: AgentRequest) -> list[str]:
        cmd = [self.executable, "--message", request.prompt, "--yes-always", "--no-auto-commits",
               "--no-stream", "--no-pretty", "--no-check-update", "--analytics-disable",
               "--no-gitignore"]
        if self.model:
            cmd += ["--model", self.model]
        files = [p for p in request.editable if (request.workdir / p).is_file()]
        return cmd + self.extra_args + files

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
        return AgentResult("ok", out.exit_code, None, _tail(out.stdout), usage,
                           turns=lines or None)


# ---------------------------------------------------------------- helpers
def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None


def _last_json(stdout: str, want: Any) -> dict[str, Any]:
    """The structured result: the whole stdout as JSON, else its last JSON line matching
    ``want``; a JSON list (verbose mode) yields its last matching element."""
    candidates: list[Any] = []
    whole = _json_or_none(stdout.strip())
    if whole is not None:
        candidates = whole if isinstance(whole, list) else [whole]
    else:
        candidates = [_json_or_none(line) for line in stdout.splitlines() if line.strip()]
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


__all__ = ["CLI_BACKENDS", "Aider", "ClaudeCode", "Codex", "GeminiCli", "cli_backend"]
