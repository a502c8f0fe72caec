"""Agent backends behind one interface; ``make_backend("claude")`` and friends.

Agent names: ``claude[:MODEL]``, ``codex[:MODEL]``, ``gemini[:MODEL]``, ``aider[:MODEL]``
(command-line agents), ``openai:MODEL`` (any OpenAI-compatible endpoint, with ``base_url`` for
a local server), ``anthropic:MODEL`` (Anthropic's API), ``scripted:PATH`` (a YAML script),
``manual`` (whoever edits the workspace between ``--resume`` calls) and ``command:'CLI ...'``
(any agent CLI that takes a prompt file; ``backends/manual.py``).
"""

from __future__ import annotations

from envport.agent.backends.base import (
    INFRASTRUCTURE,
    PRICES,
    AgentBackend,
    AgentConfigError,
    AgentRequest,
    AgentResult,
    AgentUnavailableError,
    Usage,
    estimate_cost,
    price_for,
    run_process,
)

AGENTS = ("claude", "codex", "gemini", "aider", "openai", "anthropic", "scripted", "manual",
          "command")


def make_backend(agent: str, *, base_url: str | None = None,
                 extra_args: list[str] | None = None,
                 price: tuple[float, float, float] | None = None) -> AgentBackend:
    """The backend named by ``agent`` (see the module docstring). Raises
    AgentUnavailableError for an unknown name, with the list of known ones."""
    kind, _, arg = agent.partition(":")
    if kind == "manual":
        from envport.agent.backends.manual import Manual

        if arg:
            raise AgentUnavailableError(f"--agent {agent}: `manual` takes no argument")
        return Manual()
    if kind == "command":
        from envport.agent.backends.manual import Command

        return Command(arg, price=price)
    if kind == "scripted":
        from envport.agent.backends.scripted import Scripted

        if not arg:
            raise AgentUnavailableError("scripted agent: give the script, "
                                        "--agent scripted:examples/scripted/cartpole.yaml")
        return Scripted(arg)
    if kind in ("openai", "anthropic"):
        from envport.agent.backends.http import AnthropicApi, OpenAICompatible

        cls = OpenAICompatible if kind == "openai" else AnthropicApi
        return cls(arg, base_url=base_url, price=price)
    if kind in ("claude", "codex", "gemini", "aider"):
        from envport.agent.backends.cli import cli_backend

        backend = cli_backend(kind, model=arg or None, extra_args=extra_args)
        backend.price = price
        return backend
    raise AgentUnavailableError(
        f"unknown agent {agent!r}; known: claude[:MODEL], codex[:MODEL], gemini[:MODEL], "
        "aider[:MODEL], openai:MODEL (with --base-url for a local server), anthropic:MODEL, "
        "scripted:PATH, manual, command:'CLI ... {prompt}'")


__all__ = [
    "AGENTS", "INFRASTRUCTURE", "PRICES", "AgentBackend", "AgentConfigError", "AgentRequest",
    "AgentResult", "AgentUnavailableError", "Usage", "estimate_cost", "make_backend",
    "price_for", "run_process",
]
