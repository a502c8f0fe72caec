"""envport: fast reinforcement-learning environments, proven equivalent to their references."""

from envport.core.registry import list_envs, make, spec

__all__ = ["list_envs", "make", "spec"]
__version__ = "0.1.0"
