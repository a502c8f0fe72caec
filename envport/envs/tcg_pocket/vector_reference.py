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
* **Keyed draws** (``takes_keys``): given the keys the JAX backend's rollout resets and steps
  its games with (the host rollout passes them: ``backends.HostVectorEnv``), the deals, game
  seeds and opponent choices are those the JAX batch draws with them (``batch_draws.py``)
  instead of this batch's generator's; the games themselves are still the rules engine's. The
  two backends' training runs of a seed then play the same games while their policies act
  alike (common random numbers). Evaluation batches, given no keys, draw their own.
* **Observation and mask**: player 0's, ``encode.observation_vector(state, 0)`` and
  ``game.action_mask(0)``: the reference's encoding, which L2 and L3 compare with the engine's.
* **State** (:meth:`get_state`): every game's ``get_state`` (its arrays and generator position)
  and this batch's generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envport.envs.tcg_pocket import agents, encode
from envport.envs.tcg_pocket.batch_draws import Deal, KeyedDraws, OpponentKeys
from envport.envs.tcg_pocket.dealt import pool_deck_list
from envport.envs.tcg_pocket.reference import TcgPocketReference
from envport.envs.tcg_pocket.rng import Rng
from envport.pettingzoo import OPPONENTS, TurnVsOpponent

PLAYER, OPPONENT = 0, 1


class TcgVectorReference:
    """``num_envs`` reference games, player 0 of each against ``opponent`` (module doc)."""

    takes_keys = True

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
        self._keyed = KeyedDraws(opponent, len(self.decks))

    def _new_game(self, i: int, deal: Deal | None = None) -> None:
        """Deal game ``i`` (from ``deal``, or this batch's generator) and play the opponent's
        opening actions. Dealt again, from the generator, in the case that no game reaches, that
        they end it before player 0 acts; a keyed deal has no second deal to take."""
        ref = self.games[i]
        while True:
            if deal is None:
                pair = self._rng.integers(0, len(self.decks), 2)
                ref.decks = (self.decks[pair[0]], self.decks[pair[1]])
                ref.reset(int(self._rng.integers(0, 1 << 31)))
            else:
                ref.decks = (self.decks[deal.decks[0]], self.decks[deal.decks[1]])
                ref.start(ref.decks, Rng(deal.seed))
            self._opponent_turn(i, None if deal is None else deal.opponent)
            if ref.game.to_act() == PLAYER:
                return
            if deal is not None:
                raise RuntimeError(f"game {i}: the opponent's opening ended the keyed deal "
                                   f"{deal.decks}, seed {deal.seed}, before player 0 acted")

    def _opponent_turn(self, i: int, keys: OpponentKeys | None = None) -> tuple[float, bool]:
        """The opponent's actions while it is to act, its choices from ``keys`` (or this
        batch's generator): (player 0's reward, game over)."""
        ref, reward, n = self.games[i], 0.0, 0
        while ref.game.to_act() == OPPONENT:
            if keys is not None and n == TurnVsOpponent.MAX_OPPONENT_ACTIONS:
                raise RuntimeError(f"game {i}: the opponent acted {n} times in a row, the JAX "
                                   "batch's bound (TurnVsOpponent.MAX_OPPONENT_ACTIONS)")
            chooser = self._rng if keys is None else keys.next()
            _, r, terminated, _, _ = ref.step(self._choose(ref.game, OPPONENT, chooser))
            reward, n = reward + r, n + 1
            if terminated:
                return reward, True
        return reward, ref.game.to_act() is None

    def _observe(self) -> np.ndarray:
        states = [ref.game.state for ref in self.games]
        assert all(s is not None for s in states), "a game was never dealt"
        return np.stack([encode.observation_vector(encode.get_state(s), PLAYER)
                         for s in states if s is not None])

    def reset(self, keys: np.ndarray | None = None) -> np.ndarray:
        """``keys``: the JAX batch's reset keys (``uint32[num_envs, 2]``), or None."""
        deals = None if keys is None else self._keyed.reset(self._check_keys(keys))
        for i in range(self.num_envs):
            self._new_game(i, None if deals is None else deals[i])
        self._started = True
        return self._observe()

    def step(self, actions: Any, keys: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``keys``: the JAX batch's step keys (``uint32[num_envs, 2]``), or None."""
        self._require_reset()
        actions = np.asarray(actions).reshape(self.num_envs)
        turns, reset_keys = ((None, None) if keys is None
                             else self._keyed.step(self._check_keys(keys)))
        reward = np.zeros(self.num_envs, np.float32)
        done = np.zeros(self.num_envs, bool)
        for i, ref in enumerate(self.games):
            _, r, terminated, _, _ = ref.step(int(actions[i]))
            if not terminated:
                theirs, terminated = self._opponent_turn(i, None if turns is None else turns[i])
                r += theirs
            reward[i], done[i] = r, terminated
            if terminated:
                self._new_game(i, None if reset_keys is None
                               else self._keyed.deal(reset_keys[i]))
        return self._observe(), reward, done, np.zeros(self.num_envs, bool)

    def _check_keys(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys)
        if keys.shape[0] != self.num_envs or keys.dtype != np.uint32:
            raise ValueError(f"keys must be uint32 key data with one row per game "
                             f"({self.num_envs}), got {keys.dtype} {keys.shape}")
        return keys

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
