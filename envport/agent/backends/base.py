"""One interface over every coding agent: ``run(request) -> AgentResult``.

The loop never trusts what an agent *says* it did: a result only records what happened (exit
code, structured output, usage, cost); whether the translation is right is decided by the
verifier. Subprocess agents run in their own process group with stdin closed, and a timeout
kills the whole group (an agent's shell commands included).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

CostSource = Literal["reported", "estimated", "unknown"]

# Outcomes. "ok": the agent finished its turn (which says nothing about correctness).
# "error": the agent ran and reported an error. "budget_exhausted": it stopped on its own
# budget or turn limit. "timeout": envport killed it. The last three are infrastructure
# failures, which do not consume an iteration: "crash" (non-zero exit without a structured
# result), "malformed" (output that cannot be parsed), "unavailable" (missing executable or key).
# "config_error": the agent cannot work as configured (not logged in, no API key, an argument
# its version rejects); no retry can fix it, so the loop stops at once with the fix, spending
# no iteration. "waiting": the agent is not a command envport can call (``manual``): the prompt
# is written and the run stops, resumable; ``--resume`` verifies whatever was edited meanwhile.
Status = Literal["ok", "error", "budget_exhausted", "timeout", "crash", "malformed",
                 "unavailable", "config_error", "waiting"]
INFRASTRUCTURE: frozenset[str] = frozenset({"crash", "malformed", "unavailable"})


class AgentUnavailableError(RuntimeError):
    """The agent cannot run here: the message names what is missing and how to configure it."""


class AgentConfigError(AgentUnavailableError):
    """A preflight found the agent misconfigured (login, key, version, flags); the message
    names the fix."""


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None
    cost_source: CostSource = "unknown"

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Usage:
        return cls(**{k: data[k] for k in data if k in {f.name for f in dataclasses.fields(cls)}})


@dataclass
class AgentRequest:
    prompt: str
    workdir: Path
    timeout_s: float = 1800.0
    editable: list[str] = field(default_factory=list)  # paths the agent should change
    frozen: list[str] = field(default_factory=list)  # paths restored before verification
    session_id: str | None = None  # continue this session when the agent supports it
    max_budget_usd: float | None = None  # what is left of the run's budget
    iteration: int = 0
    kind: str = ""  # module / repair / optimise: what the prompt asks for
    log_path: Path | None = None  # where the raw output is kept
    prompt_path: Path | None = None  # the prompt as a file (the loop writes it before the call)


@dataclass
class AgentResult:
    status: Status
    exit_code: int | None = None
    session_id: str | None = None
    final_text: str = ""
    usage: Usage = field(default_factory=Usage)
    turns: int | None = None
    wall_s: float = 0.0
    error: str = ""  # what went wrong, for status other than "ok"
    files_written: list[str] = field(default_factory=list)  # HTTP/scripted backends

    @property
    def infrastructure_error(self) -> bool:
        return self.status in INFRASTRUCTURE

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["final_text"] = self.final_text[-4000:]  # the ledger keeps the end of long answers
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AgentResult:
        data = dict(data)
        data["usage"] = Usage.from_json(data.get("usage", {}))
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


class AgentBackend(Protocol):
    name: str

    def check(self) -> None:
        """Raise AgentUnavailableError naming what is missing (executable, key, package)."""
        ...

    def preflight(self) -> list[str]:
        """Cheap checks before iteration 1 (version, flags, login); raise AgentConfigError
        naming the fix; return notes worth showing (e.g. an untested version)."""
        ...

    def run(self, request: AgentRequest) -> AgentResult: ...


# ---------------------------------------------------------------- prices
# USD per million tokens (input, output, cached input), list prices as published by the vendors
# in 2025; used only when an agent does not report its cost ("estimated" in the ledger).
PRICES: dict[str, tuple[float, float, float]] = {
    "claude-opus-4-5": (5.0, 25.0, 0.50),
    "claude-opus-4-1": (15.0, 75.0, 1.50),
    "claude-opus-4": (15.0, 75.0, 1.50),
    "claude-sonnet-4-5": (3.0, 15.0, 0.30),
    "claude-sonnet-4": (3.0, 15.0, 0.30),
    "claude-haiku-4-5": (1.0, 5.0, 0.10),
    "gpt-5-codex": (1.25, 10.0, 0.125),
    "gpt-5-mini": (0.25, 2.0, 0.025),
    "gpt-5": (1.25, 10.0, 0.125),
    "gpt-4.1": (2.0, 8.0, 0.50),
    "o4-mini": (1.10, 4.40, 0.275),
    "gemini-2.5-pro": (1.25, 10.0, 0.31),
    "gemini-2.5-flash": (0.30, 2.50, 0.075),
}


def price_for(model: str | None) -> tuple[float, float, float] | None:
    """The longest price-table key that prefixes the model name (dated snapshots included)."""
    if not model:
        return None
    name = model.split("/")[-1].lower()
    keys = sorted((k for k in PRICES if name.startswith(k)), key=len, reverse=True)
    return PRICES[keys[0]] if keys else None


def estimate_cost(usage: Usage, model: str | None,
                  price: tuple[float, float, float] | None = None) -> Usage:
    """Fill ``cost_usd`` from the price table when the agent did not report it."""
    if usage.cost_source == "reported":
        return usage
    price = price or price_for(model)
    if price is None:
        usage.cost_source, usage.cost_usd = "unknown", None
        return usage
    fresh = max(0, usage.input_tokens - usage.cached_tokens)
    usage.cost_usd = (fresh * price[0] + usage.output_tokens * price[1]
                      + usage.cached_tokens * price[2]) / 1e6
    usage.cost_source = "estimated"
    return usage


# ---------------------------------------------------------------- subprocesses
@dataclass
class ProcessOutcome:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    wall_s: float


def require_executable(name: str, how: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise AgentUnavailableError(f"`{name}` was not found on PATH. {how}")
    return path


def run_process(cmd: list[str], cwd: Path, timeout_s: float, env: dict[str, str] | None = None,
                log_path: Path | None = None) -> ProcessOutcome:
    """Run ``cmd`` in its own process group, stdin closed; on timeout kill the whole group.

    Ctrl-C in envport also kills the group before propagating, so no agent outlives the loop.
    """
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
        stdout, stderr = proc.communicate()
    except BaseException:
        kill_group(proc)
        proc.communicate()
        raise
    wall = time.monotonic() - t0
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        shown = " ".join(a if len(a) < 200 else "<prompt>" for a in cmd)
        log_path.write_text(f"$ {shown}\n"
                            f"# exit {proc.returncode}{' (timeout)' if timed_out else ''}, "
                            f"{wall:.1f} s\n## stdout\n{stdout}\n## stderr\n{stderr}\n")
    return ProcessOutcome(None if timed_out else proc.returncode, stdout or "", stderr or "",
                          timed_out, wall)


def kill_group(proc: subprocess.Popen[Any]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
