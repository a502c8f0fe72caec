"""The rules engine behind envport's ``Reference`` protocol, as far as a two-player game allows.

``reset(seed)`` deals two random legal decks (``derive_seed(seed, 0)`` and ``(seed, 1)``, or the
``decks`` given) and starts a game whose ``Rng`` is seeded with ``derive_seed(seed, 2)``.
``step(action)`` is the action of whoever must act (``info["to_act"]`` says who acts next, and
``info["action_mask"]`` what they may do); the observation is that player's
(``encode.observation_vector``), the reward player 0's (+1 win, -1 loss, 0 otherwise).
``get_state``/``set_state`` are ``encode``'s fixed-size arrays; ``tape()`` the draws of the last
step as three arrays (kind, n, value), as long as the step drew (variable length: a shuffle
draws 19, a flip-until-tails any number).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from envport.core.seeds import derive_seed
from envport.envs.tcg_pocket import encode
from envport.envs.tcg_pocket.actions import N_ACTIONS
from envport.envs.tcg_pocket.config import RulesConfig
from envport.envs.tcg_pocket.deck import Deck, random_deck
from envport.envs.tcg_pocket.game import TcgPocketGame
from envport.envs.tcg_pocket.rng import Rng

DRAW_KINDS = ("coin", "shuffle", "pick", "energy")


class TcgPocketReference:
    def __init__(self, config: dict[str, Any] | None = None,
                 decks: tuple[Deck, Deck] | None = None):
        self.config = RulesConfig.from_json(config or {})
        self.decks = decks
        self.game = TcgPocketGame(self.config)
        self._tape_start = 0

    def reset(self, seed: int) -> np.ndarray:
        decks = self.decks or (random_deck(np.random.default_rng(derive_seed(seed, 0))),
                               random_deck(np.random.default_rng(derive_seed(seed, 1))))
        self.game.reset(seed, decks, rng=Rng(derive_seed(seed, 2)))
        self._tape_start = 0
        return self._observe()

    def _observe(self) -> np.ndarray:
        s = self.game.state
        assert s is not None
        p = s.to_act()
        return encode.observation_vector(encode.get_state(s), 0 if p is None else p)

    def action_mask(self) -> np.ndarray:
        p = self.game.to_act()
        return np.zeros(N_ACTIONS, bool) if p is None else self.game.action_mask(p)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        player = self.game.to_act()
        if player is None:
            raise ValueError("the game is over: reset it")
        self._tape_start = len(self.game.rng.tape)
        result = self.game.step(player, int(action))
        info = {"to_act": self.game.to_act(), "acted": player, "action_mask": self.action_mask(),
                **result.info}
        return self._observe(), result.rewards[0], result.terminated, False, info

    def get_state(self) -> dict[str, np.ndarray]:
        assert self.game.state is not None
        return encode.get_state(self.game.state)

    def set_state(self, state: Mapping[str, np.ndarray]) -> None:
        self.game.state = encode.set_state(dict(state), self.config, self.game.rng)
        self._tape_start = len(self.game.rng.tape)

    def tape(self) -> dict[str, np.ndarray]:
        draws = self.game.rng.tape[self._tape_start:]
        return {"kind": np.asarray([DRAW_KINDS.index(d.kind) for d in draws], np.int8),
                "n": np.asarray([d.n for d in draws], np.int32),
                "value": np.asarray([d.value for d in draws], np.int32)}
