"""Model APIs as agents: any OpenAI-compatible endpoint (local servers included) and Anthropic.

A chat model has no tools, so the backend gives it the current contents of the editable files
with the prompt and asks for complete files back in ``<file path="...">`` blocks, which it
writes into the workspace (paths outside the workspace are refused; frozen paths are written
like any other and then restored and recorded by the loop, as for a CLI agent). The official
client libraries are imported lazily: ``pip install 'envport[agents]'``. A short conversation
history is kept per session so a repair can refer to the previous answer.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envport.agent.backends.base import (
    AgentRequest,
    AgentResult,
    AgentUnavailableError,
    Usage,
    estimate_cost,
)

SYSTEM = (
    "You are a careful engineer translating a reinforcement-learning environment to JAX. You "
    "cannot run commands: answer with every file you change, complete, each in a block\n"
    '<file path="relative/path.py">\n...the whole file...\n</file>\n'
    "Only files under the editable paths are used. Explain briefly before the blocks."
)
_FILE = re.compile(r'<file\s+path="(?P<path>[^"]+)"\s*>\n?(?P<body>.*?)</file>', re.S)
_FENCE = re.compile(r"^\s*```[\w+-]*\n(?P<code>.*?)\n```\s*$", re.S)
HISTORY_EXCHANGES = 3  # earlier exchanges kept in the conversation (bounded context)


def import_client(package: str) -> Any:
    try:
        return importlib.import_module(package)
    except ImportError as e:
        raise AgentUnavailableError(
            f"the `{package}` package is not installed: `pip install 'envport[agents]'` (or "
            f"`pip install {package}`) to use this agent") from e


def apply_file_blocks(text: str, workdir: Path) -> tuple[list[str], list[str]]:
    """Write every ``<file path=...>`` block of ``text`` under ``workdir``.

    Returns (written, refused): a path that is absolute or leaves the workspace is refused.
    """
    written, refused = [], []
    root = workdir.resolve()
    for m in _FILE.finditer(text):
        rel = m.group("path").strip()
        target = (root / rel).resolve()
        if Path(rel).is_absolute() or not target.is_relative_to(root) or ".git" in Path(
                rel).parts:
            refused.append(rel)
            continue
        body = m.group("body")
        fenced = _FENCE.match(body)
        if fenced:  # models often wrap the file in a code fence as well
            body = fenced.group("code") + "\n"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
        written.append(rel)
    return written, refused


def files_context(request: AgentRequest) -> str:
    """The current contents of the editable files, so the model edits what is there."""
    parts = []
    for rel in request.editable:
        path = request.workdir / rel
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            if f.is_file() and "__pycache__" not in f.parts:
                parts.append(f'<file path="{f.relative_to(request.workdir)}">\n{f.read_text()}'
                             "</file>")
    if not parts:
        return "The editable files do not exist yet."
    return "Current contents of the editable files:\n\n" + "\n\n".join(parts)


def _classify(error: Exception) -> str:
    name = type(error).__name__
    if "Timeout" in name:
        return "timeout"
    if any(k in name for k in ("Connection", "RateLimit", "InternalServer", "Overloaded",
                               "ServiceUnavailable", "APIStatus")):
        return "crash"  # the service, not the task: retried without using an iteration
    if any(k in name for k in ("Authentication", "PermissionDenied", "NotFound")):
        return "unavailable"
    return "error"


class _HttpBackend:
    name = "http"
    package = ""

    def __init__(self, model: str, base_url: str | None = None,
                 client_factory: Callable[[], Any] | None = None,
                 price: tuple[float, float, float] | None = None, max_tokens: int = 16000):
        if not model:
            raise AgentUnavailableError(f"{self.name}: name the model, e.g. "
                                        f"--agent {self.name}:MODEL")
        self.model, self.base_url = model, base_url
        self.client_factory = client_factory
        self.price, self.max_tokens = price, max_tokens

    # -- subclass hooks
    def make_client(self, timeout_s: float) -> Any:
        raise NotImplementedError

    def complete(self, client: Any, messages: list[dict[str, str]]) -> tuple[str, Usage]:
        raise NotImplementedError

    def check(self) -> None:
        if self.client_factory is None:
            self.make_client(60.0)

    def preflight(self) -> list[str]:
        self.check()  # the package and the key; a wrong key shows on the first call
        return []

    # -- the interface
    def run(self, request: AgentRequest) -> AgentResult:
        t0 = time.monotonic()
        session = request.session_id or uuid.uuid4().hex[:12]
        history_path = (request.log_path.parent if request.log_path else request.workdir
                        ) / f"http-session-{session}.json"
        history: list[dict[str, str]] = (json.loads(history_path.read_text())
                                         if history_path.exists() else [])
        user = f"{request.prompt}\n\n{files_context(request)}"
        messages = [*history[-2 * HISTORY_EXCHANGES:], {"role": "user", "content": user}]
        try:
            client = self.client_factory() if self.client_factory else self.make_client(
                request.timeout_s)
            text, usage = self.complete(client, messages)
        except AgentUnavailableError as e:
            return AgentResult("unavailable", None, session, "", error=str(e),
                               wall_s=time.monotonic() - t0)
        except Exception as e:
            return AgentResult(_classify(e), None, session, "",  # type: ignore[arg-type]
                               error=f"{type(e).__name__}: {e}"[:800],
                               wall_s=time.monotonic() - t0)
        usage = estimate_cost(usage, self.model, self.price)
        written, refused = apply_file_blocks(text, request.workdir)
        history_path.parent.mkdir(parents=True, exist_ok=True)
        history_path.write_text(json.dumps(
            [*messages, {"role": "assistant", "content": text}][-2 * HISTORY_EXCHANGES:]))
        if request.log_path:
            request.log_path.parent.mkdir(parents=True, exist_ok=True)
            request.log_path.write_text(text)
        # No file blocks is a legitimate (if useless) answer; the verifier judges it.
        status = "ok" if text.strip() else "malformed"
        return AgentResult(status, 0, session, text, usage, turns=1,  # type: ignore[arg-type]
                           wall_s=time.monotonic() - t0, files_written=written,
                           error=f"refused paths outside the workspace: {refused}"
                           if refused else "")


class OpenAICompatible(_HttpBackend):
    """Chat completions through the official ``openai`` client; ``base_url`` points it at any
    compatible server (vLLM, llama.cpp, Ollama...). A local server needs no key."""

    name = "openai"
    package = "openai"

    def make_client(self, timeout_s: float) -> Any:
        openai = import_client("openai")
        key = os.environ.get("OPENAI_API_KEY")
        if not key and not self.base_url:
            raise AgentUnavailableError(
                "OPENAI_API_KEY is not set: export it, or pass --base-url for a local "
                "OpenAI-compatible server (which needs no key)")
        return openai.OpenAI(api_key=key or "not-needed", base_url=self.base_url,
                             timeout=timeout_s)

    def complete(self, client: Any, messages: list[dict[str, str]]) -> tuple[str, Usage]:
        resp = client.chat.completions.create(
            model=self.model, messages=[{"role": "system", "content": SYSTEM}, *messages])
        text = resp.choices[0].message.content or ""
        u = getattr(resp, "usage", None)
        details = getattr(u, "prompt_tokens_details", None)
        return text, Usage(int(getattr(u, "prompt_tokens", 0) or 0),
                           int(getattr(u, "completion_tokens", 0) or 0),
                           int(getattr(details, "cached_tokens", 0) or 0))


class AnthropicApi(_HttpBackend):
    """Messages API through the official ``anthropic`` client (ANTHROPIC_API_KEY)."""

    name = "anthropic"
    package = "anthropic"

    def make_client(self, timeout_s: float) -> Any:
        anthropic = import_client("anthropic")
        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise AgentUnavailableError("ANTHROPIC_API_KEY is not set: export it to use "
                                        "--agent anthropic:MODEL")
        return anthropic.Anthropic(api_key=key, base_url=self.base_url, timeout=timeout_s)

    def complete(self, client: Any, messages: list[dict[str, str]]) -> tuple[str, Usage]:
        resp = client.messages.create(model=self.model, max_tokens=self.max_tokens,
                                      system=SYSTEM, messages=messages)
        text = "".join(getattr(b, "text", "") for b in resp.content
                       if getattr(b, "type", "text") == "text")
        u = resp.usage
        cached = int(getattr(u, "cache_read_input_tokens", 0) or 0)
        fresh = int(getattr(u, "input_tokens", 0) or 0) + int(
            getattr(u, "cache_creation_input_tokens", 0) or 0)
        return text, Usage(fresh + cached, int(getattr(u, "output_tokens", 0) or 0), cached)


__all__ = ["AnthropicApi", "OpenAICompatible", "apply_file_blocks", "import_client"]
