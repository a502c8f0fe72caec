"""PPO settings of ``envport train pokemon-gen1``: player 0 against a fixed JAX opponent
(``envport.pettingzoo.VsOpponent``; ``--opponent heuristic|random``), masked to the legal
choices. No JAX here: the SPEC imports this to declare its training record.

Sizes are for 2 shared CPU cores (README, "Training"): 64 battles stepped together, 64 steps
each per update (a battle lasts about 30-60 choices, so most updates see whole battles end),
an MLP wide enough for the 572-column observation. The reward is +1 / -1 at the end of a
battle only, so gamma stays at PPO's 0.99 (a 60-step battle still credits its first choices
with 0.99^60 = 0.55 of the outcome).
"""

from __future__ import annotations

from envport.train.config import PPOConfig

PPO = PPOConfig(
    num_envs=64,
    num_steps=64,
    total_steps=2_000_000,
    lr=3e-4,
    update_epochs=4,
    num_minibatches=4,
    ent_coef=0.01,
    hidden_sizes=(128, 128),
)
# The opponent ``envport train pokemon-gen1`` plays without --opponent.
ENV_KWARGS = {"opponent": "heuristic"}
