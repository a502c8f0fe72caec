"""Per-environment PPO configurations: the defaults :func:`envport.train.train` starts from.

Each entry is a :class:`~envport.train.ppo.PPOConfig` plus the environment's options
(``envport.make(name, **env_kwargs)``, and the reference's matching options).
"""

from __future__ import annotations

from typing import Any

from envport.train.ppo import PPOConfig

# CartPole: PureJaxRL's CartPole-v1 settings (the PPO paper's defaults with 4 x 128 batches).
CARTPOLE = PPOConfig(
    num_envs=4, num_steps=128, total_steps=500_000, lr=2.5e-4, anneal_lr=True,
    update_epochs=4, num_minibatches=4, ent_coef=0.01, hidden_sizes=(64, 64))

# Pong: the environment's default frameskip (1), NOT PufferLib's training frameskip of 4: at
# frameskip 1 a ball crossing takes ~47 steps, well within gamma 0.99's horizon, and PPO with
# these settings beats the scripted opponent after ~2.5M steps (mean return > 0; about +20 by
# 5M steps on 2 CPU cores in ~1.5 minutes of training). 64 envs x 128 steps per update:
# episodes of a trained agent last ~15k steps, so each update completes only a few of them.
PONG = PPOConfig(
    num_envs=64, num_steps=128, total_steps=5_000_000, lr=2.5e-4, anneal_lr=True,
    update_epochs=4, num_minibatches=4, ent_coef=0.01, hidden_sizes=(64, 64))

CONFIGS: dict[str, tuple[PPOConfig, dict[str, Any]]] = {
    "cartpole": (CARTPOLE, {}),
    "pong": (PONG, {}),
}


def get_config(name: str) -> tuple[PPOConfig, dict[str, Any]]:
    """``(PPOConfig, env_kwargs)`` for ``name``; environments without an entry get the
    PPOConfig defaults and no options."""
    cfg, env_kwargs = CONFIGS.get(name, (PPOConfig(), {}))
    return cfg, dict(env_kwargs)
