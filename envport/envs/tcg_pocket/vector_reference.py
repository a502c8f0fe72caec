"""tcg-pocket's reference backend for PPO training: games of the Python rules engine, player 0
of each against a fixed opponent played on the host, the reference counterpart of
``envport.pettingzoo.TurnVsOpponent``.

:class:`TcgVectorReference` is the :class:`envport.train.backends.HostVectorEnv` that
``envport train tcg-pocket --backend reference --opponent heuristic|random`` steps:

* **Games**: ``num_envs`` :class:`~envport.envs.tcg_pocket.reference.TcgPocketReference`, each
  dealing two decks drawn uniformly (with replacement) from ``dealt.pool_deck_list`` of
  ``spec_support.POOL``, the decks the JAX engine's resets deal (``dealt.DealtTcgPocket``), and
  seeded with an integer from this batch's generator (the shuffles, coins and Energy of the game
  come from the game's own ``Rng``).
* **A step** is one action of player 0, then every action of the opponent (the reference's
  ``agents.heuristic_action`` or ``agents.random_action``, from this batch's generator) until
  player 0 must act again or the game is over; a reset plays the opponent's first actions the
  same way. The reward is player 0's (+1 win, -1 loss, 0 otherwise), at the game's end; a game
  ends by the turn limit at the latest, so nothing is truncated. A game that ends is replaced
  in the same step (same-step autoreset).
* **Observation and mask**: player 0's, ``encode.observation_vector(state, 0)`` and
  ``game.action_mask(0)``: the reference's encoding, which L2 and L3 compare with the engine's.
* **State** (:meth:`get_state`): every game's ``get_state`` (its arrays and generator position)
  and this batch's generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envport.envs.tcg_pocket import agents, encode
from envport.envs.tcg_pocket.dealt import pool_deck_list
from envport.envs.tcg_pocket.reference import TcgPocketReference
from envport.pettingzoo import OPPONENTS

PLAYER, OPPONENT = 0, 1


class TcgVectorReference:
    """``num_envs`` reference games, player 0 of each against ``opponent`` (module doc)."""

    def __init__(self, num_envs: int, seed: int = 0, opponent: str = "heuristic") -> None:
        from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket
        from envport.envs.tcg_pocket.spec_support import POOL

        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if opponent not in OPPONENTS:
            raise ValueError(f"opponent must be one of {', '.join(OPPONENTS)}, got "
                             f"{opponent!r}")
        self.num_envs, self.opponent = num_envs, opponent
        self.decks = pool_deck_list(POOL)
        self.games = [TcgPocketReference(pool=POOL) for _ in range(num_envs)]
        engine = TcgPocket()  # the spaces are the engine's (training checks them equal)
        self.observation_space = engine.observation_space()
        self.action_space = engine.action_space()
        self._rng = np.random.default_rng(seed)
        self._started = False
        self._choose = {"heuristic": agents.heuristic_action,
                        "random": agents.random_action}[opponent]

    def _new_game(self, i: int) -> None:
        """Deal game ``i`` and play the opponent's opening actions (dealt again in the case,
        which no game reaches, that they end it before player 0 acts)."""
        ref = self.games[i]
        while True:
            pair = self._rng.integers(0, len(self.decks), 2)
            ref.decks = (self.decks[pair[0]], self.decks[pair[1]])
            ref.reset(int(self._rng.integers(0, 1 << 31)))
            self._opponent_turn(i)
            if ref.game.to_act() == PLAYER:
                return

    def _opponent_turn(self, i: int) -> tuple[float, bool]:
        """The opponent's actions while it is to act: (player 0's reward, game over)."""
        ref, reward = self.games[i], 0.0
        while ref.game.to_act() == OPPONENT:
            _, r, terminated, _, _ = ref.step(self._choose(ref.game, OPPONENT, self._rng))
            reward += r
            if terminated:
                return reward, True
        return reward, ref.game.to_act() is None

    def _observe(self) -> np.ndarray:
        states = [ref.game.state for ref in self.games]
        assert all(s is not None for s in states), "a game was never dealt"
        return np.stack([encode.observation_vector(encode.get_state(s), PLAYER)
                         for s in states if s is not None])

    def reset(self) -> np.ndarray:
        for i in range(self.num_envs):
            self._new_game(i)
        self._started = True
        return self._observe()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        self._require_reset()
        actions = np.asarray(actions).reshape(self.num_envs)
        reward = np.zeros(self.num_envs, np.float32)
        done = np.zeros(self.num_envs, bool)
        for i, ref in enumerate(self.games):
            _, r, terminated, _, _ = ref.step(int(actions[i]))
            if not terminated:
                theirs, terminated = self._opponent_turn(i)
                r += theirs
            reward[i], done[i] = r, terminated
            if terminated:
                self._new_game(i)
        return self._observe(), reward, done, np.zeros(self.num_envs, bool)

    def action_masks(self) -> np.ndarray:
        """``bool[num_envs, N_ACTIONS]``: player 0's legal actions at the current observations."""
        self._require_reset()
        return np.stack([ref.game.action_mask(PLAYER) for ref in self.games])

    def get_state(self) -> dict[str, Any]:
        self._require_reset()
        return {"games": [ref.get_state() for ref in self.games],
                "decks": [ref.decks for ref in self.games],
                "rng": self._rng.bit_generator.state, "opponent": self.opponent}

    def set_state(self, state: dict[str, Any]) -> None:
        if len(state["games"]) != self.num_envs or state.get("opponent") != self.opponent:
            raise ValueError(f"state of {len(state['games'])} games against "
                             f"{state.get('opponent')!r}; this batch has {self.num_envs} "
                             f"against {self.opponent!r}")
        for ref, game, decks in zip(self.games, state["games"], state["decks"], strict=True):
            ref.decks = decks
            ref.set_state(game)
        self._rng.bit_generator.state = state["rng"]
        self._started = True

    def _require_reset(self) -> None:
        if not self._started:
            raise RuntimeError("call reset() before step()")


def make(num_envs: int, seed: int = 0, **env_kwargs: Any) -> TcgVectorReference:
    """``SPEC.training.make_vector_reference``: ``env_kwargs`` are the training's options
    (``opponent``: heuristic or random; default the SPEC's)."""
    from envport.envs.tcg_pocket.training import ENV_KWARGS

    unknown = set(env_kwargs) - {"opponent"}
    if unknown:
        raise ValueError(f"tcg-pocket's reference batch takes only opponent, got "
                         f"{sorted(unknown)}")
    return TcgVectorReference(num_envs, seed,
                              str(env_kwargs.get("opponent", ENV_KWARGS["opponent"])))
