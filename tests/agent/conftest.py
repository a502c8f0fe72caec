"""Fixtures of the agent tests (the helpers live in agent_helpers.py, a unique module name)."""

from agent_helpers import config_factory, fake_agents, fake_verifier_cls

__all__ = ["config_factory", "fake_agents", "fake_verifier_cls"]
