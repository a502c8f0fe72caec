"""envport: fast reinforcement-learning environments, proven equivalent to their references."""

from typing import Any

from envport.core.registry import list_envs, make, spec

__all__ = ["gym", "list_envs", "make", "spec"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "gym":  # imported on first use: it pulls in Gymnasium
        import envport.gym as gym

        return gym
    raise AttributeError(f"module 'envport' has no attribute {name!r}")
