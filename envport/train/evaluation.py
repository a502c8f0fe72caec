"""Evaluate a trained policy on either backend: the episode returns, for L4's transfer tests.

Actions are SAMPLED from the trained stochastic policy by default (``deterministic=False``):
L4 asks whether the policy PPO produced behaves the same on both backends, and that policy is
the stochastic one (its entropy is part of what was trained); the greedy (argmax / mean) policy
is a different policy, available with ``deterministic=True``.

Episodes are unbiased: ``episodes`` environments run in parallel and each contributes its FIRST
episode (taking the first ``episodes`` episodes to finish from fewer environments would favour
short ones).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

import envport
from envport.train.backends import check_backend, host_vector_env
from envport.train.config import PPOConfig
from envport.train.ppo import Params, Policy, make_policy
from envport.train.run import default_config, load_params


@functools.lru_cache(maxsize=16)
def _actor(policy: Policy, deterministic: bool) -> Any:
    def act(params: Params, carry: jax.Array, obs: jax.Array, first: jax.Array, key: jax.Array
            ) -> tuple[jax.Array, jax.Array, jax.Array]:
        key, sub = jax.random.split(key)
        carry, dist, _ = policy.apply(params, carry, obs[None], first[None])
        raw = dist.mode() if deterministic else dist.sample(sub)
        return carry, policy.env_action(raw[0]), key

    return jax.jit(act)


def evaluate(name: str, backend: str, params_or_run_dir: Params | str | os.PathLike[str],
             episodes: int = 100, seed: int = 0, *, deterministic: bool = False,
             config: PPOConfig | None = None, env_kwargs: dict[str, Any] | None = None,
             max_steps: int = 1_000_000) -> np.ndarray:
    """Returns of ``episodes`` episodes of the policy on ``name``'s ``backend`` ("jax" or
    "reference"), as a float64 array in environment order.

    ``params_or_run_dir``: a run directory written by :func:`envport.train.train` (its network
    and environment options are read from config.json), or parameters, then with ``config``
    (default: the environment's ``SPEC.training``) and ``env_kwargs``. ``seed`` seeds the
    environments and the action sampling. Raises RuntimeError if an episode is still running
    after ``max_steps`` steps.
    """
    check_backend(backend)
    envport.spec(name)
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    if isinstance(params_or_run_dir, str | os.PathLike):
        run, params = load_params(Path(params_or_run_dir))
        if run["env"] != name:
            raise ValueError(f"{params_or_run_dir} holds a policy for {run['env']!r}, not {name!r}")
        cfg = PPOConfig.from_dict(run["ppo"])
        env_kwargs = dict(run["env_kwargs"]) if env_kwargs is None else env_kwargs
        if env_kwargs != run["env_kwargs"]:
            raise ValueError(f"the policy was trained with env_kwargs={run['env_kwargs']}, "
                             f"not {env_kwargs}")
    else:
        default_cfg, default_kwargs = default_config(name)
        cfg = config or default_cfg
        env_kwargs = default_kwargs if env_kwargs is None else env_kwargs
        params = params_or_run_dir

    vec = host_vector_env(name, backend, episodes, seed, **env_kwargs)
    try:
        return _play(vec, cfg, params, episodes, seed, deterministic, max_steps)
    finally:
        # Batches that own emulators or worker processes release them here, not at exit.
        close = getattr(vec, "close", None)
        if close is not None:
            close()


def _play(vec: Any, cfg: PPOConfig, params: Params, episodes: int, seed: int,
          deterministic: bool, max_steps: int) -> np.ndarray:
    # The network does not depend on the seed: one compiled actor serves every seed.
    policy = make_policy(dataclasses.replace(cfg, seed=0), vec.observation_space,
                         vec.action_space)
    act = _actor(policy, deterministic)
    params = jax.device_put(params)
    key = jax.random.fold_in(jax.random.key(seed), 1)  # decorrelated from the env seeds
    carry = policy.initial_carry(episodes)
    obs, first = vec.reset(), np.ones(episodes, np.bool_)
    running = np.zeros(episodes, np.float64)
    returns = np.full(episodes, np.nan)
    for _ in range(max_steps):
        # NumPy straight into the compiled call: an eager jnp.asarray per step costs more.
        carry, action, key = act(params, carry, obs, first, key)
        obs, reward, terminated, truncated = vec.step(np.asarray(action))
        running += reward
        first = terminated | truncated
        newly = first & np.isnan(returns)
        returns[newly] = running[newly]
        running[first] = 0.0
        if not np.isnan(returns).any():
            return returns
    raise RuntimeError(f"{int(np.isnan(returns).sum())} of {episodes} episodes still running "
                       f"after max_steps={max_steps} steps")

