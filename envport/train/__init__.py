"""PPO training on either backend (the JAX translation or the real reference), evaluation and
L4 transfer. ``ppo.py`` is the algorithm, ``program.py`` compiles it for the devices,
``host_rollout.py`` steps the reference on the host, ``run.py`` manages a training run.

The names below are imported on first use, so that an environment folder can import
``envport.train.config`` (its PPO settings) without pulling in flax and optax.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Backend": "backends", "make_backend": "backends", "vector_reference": "backends",
    "evaluate": "evaluation", "PPOConfig": "config",
    "TrainResult": "run", "assert_matched": "run", "load_params": "run",
    "load_run_config": "run", "read_log": "run", "resume": "run", "train": "run",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'envport.train' has no attribute {name!r}")
    return getattr(importlib.import_module(f"envport.train.{_EXPORTS[name]}"), name)
