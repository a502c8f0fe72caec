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
# these settings beats the scripted opponent after ~2.5M steps (mean return > 0). 64 envs x 128
# steps per update: episodes of a trained agent last ~15k steps, so each update completes only
# a few of them. 3M steps with the learning rate annealed to 0: measured, 5 seeds per backend
# evaluate at +20.8 to +25.2 (100 episodes each, per-episode std ~3.3); with 5M steps (slower
# annealing) the first 6 JAX seeds evaluated lower, +11.6 to +20.1 with per-episode std ~5-7:
# the policy degrades after ~3.3M steps while the learning rate is still high.
PONG = PPOConfig(
    num_envs=64, num_steps=128, total_steps=3_000_000, lr=2.5e-4, anneal_lr=True,
    update_epochs=4, num_minibatches=4, ent_coef=0.01, hidden_sizes=(64, 64))

# HalfCheetah (6 continuous motors, 1000-step episodes that only truncate): CleanRL's MuJoCo PPO
# (ppo_continuous_action.py: lr 3e-4, 10 epochs of 32 minibatches, gamma 0.99, GAE 0.95, clip
# 0.2, no entropy bonus, 64x64 tanh MLPs, state-independent log std) batched PureJaxRL-style
# for 2 CPU cores: 32 envs x 128 steps = 4,096 steps per update (minibatches of 128), ~244
# updates in 1M steps. Brax/PureJaxRL's 2,048 envs x 10 steps suit an accelerator; on 2 cores
# a 20k-step batch per update would make updates rare, and the reference steps its envs in a
# Python loop whatever their number. Measured on the shared 2-core machine (load ~6): 100k
# steps take ~23 s of training on either backend (+18 s compile reference, +130 s JAX). ppo.py
# normalises neither observations nor rewards (CleanRL and Brax do both for MuJoCo), so learning
# is slower than their curves; both backends share that, which is what L4 compares.
HALFCHEETAH = PPOConfig(
    num_envs=32, num_steps=128, total_steps=1_000_000, lr=3e-4, anneal_lr=True,
    update_epochs=10, num_minibatches=32, ent_coef=0.0, hidden_sizes=(64, 64))

CONFIGS: dict[str, tuple[PPOConfig, dict[str, Any]]] = {
    "cartpole": (CARTPOLE, {}),
    "pong": (PONG, {}),
    "halfcheetah": (HALFCHEETAH, {}),
}


def get_config(name: str) -> tuple[PPOConfig, dict[str, Any]]:
    """``(PPOConfig, env_kwargs)`` for ``name``; environments without an entry get the
    PPOConfig defaults and no options."""
    cfg, env_kwargs = CONFIGS.get(name, (PPOConfig(), {}))
    return cfg, dict(env_kwargs)
