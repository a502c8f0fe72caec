"""PPO settings of ``envport train tcg-pocket``: player 0 against a fixed JAX opponent
(``envport.pettingzoo.TurnVsOpponent``; ``--opponent heuristic|random``), masked to the legal
actions. No JAX here: the SPEC imports this to declare its training record.

Sizes are for 2 shared CPU cores: 64 games stepped together, 64 steps each per update (a game
takes player 0 about 30 actions, so most updates see whole games end), an MLP wide enough for
the 482-column observation. The reward is +1 / -1 at the end of a game only (0 for the turn
limit's draw), so gamma stays at PPO's 0.99.
"""

from __future__ import annotations

from envport.train.config import PPOConfig

PPO = PPOConfig(
    num_envs=64,
    num_steps=64,
    total_steps=1_000_000,
    lr=3e-4,
    update_epochs=4,
    num_minibatches=4,
    ent_coef=0.01,
    hidden_sizes=(128, 128),
)
# The opponent ``envport train tcg-pocket`` plays without --opponent.
ENV_KWARGS = {"opponent": "heuristic"}
