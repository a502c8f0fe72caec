"""PPO training on either backend (the JAX translation or the real reference), evaluation, and
the per-environment configurations. See ``ppo.py`` for the algorithm."""

from envport.train.backends import Backend, make_backend, vector_reference
from envport.train.evaluate import evaluate
from envport.train.ppo import (
    PPOConfig,
    TrainResult,
    assert_matched,
    load_params,
    load_run_config,
    read_log,
    resume,
    train,
)

__all__ = [
    "Backend",
    "PPOConfig",
    "TrainResult",
    "assert_matched",
    "evaluate",
    "load_params",
    "load_run_config",
    "make_backend",
    "read_log",
    "resume",
    "train",
    "vector_reference",
]
