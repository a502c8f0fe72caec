"""The rules engine behind envport's ``Reference`` protocol, as far as a two-player game allows.

``reset(seed)`` deals two random legal decks (``derive_seed(seed, 0)`` and ``(seed, 1)``, or the
``decks`` given) and starts a game whose ``Rng`` is seeded with ``derive_seed(seed, 2)``.
``step(action)`` is the action of whoever must act (``info["to_act"]`` says who acts next, and
``info["action_mask"]`` what they may do); the observation is that player's
(``encode.observation_vector``), the reward player 0's (+1 win, -1 loss, 0 otherwise).
``get_state``/``set_state`` are ``encode``'s fixed-size arrays plus ``rng`` (uint32[2], the
generator's key and counter: ``rng.py``), so a state carries its future draws and a translation
that reproduces the generator needs no other draws. ``tape()`` is the last step's draws as
fixed-size arrays (a translation's draws need a fixed shape): ``kind``/``n``/``value`` padded to
``MAX_TAPE`` with -1/0/0, ``count`` the number of draws (a step that draws more than
``MAX_TAPE``, only a very long flip-until-tails, keeps the first ``MAX_TAPE``), and ``rng`` the
generator's position before the step.

``pool``: ``"all"`` (default) deals :func:`~envport.envs.tcg_pocket.deck.random_deck`'s decks of
every supported card; ``"basic"`` deals :func:`~envport.envs.tcg_pocket.deck.random_basic_deck`'s
decks of plain Basic Pokémon only (no Trainers, evolutions or attack effects): the subset the JAX
engine covers; ``"plain"`` (:func:`~envport.envs.tcg_pocket.deck.random_plain_deck`) adds the
evolutions of the same kind (plain attacks, no Ability); ``"status"``
(:func:`~envport.envs.tcg_pocket.deck.random_status_deck`) adds the Pokémon whose attacks inflict
Special Conditions, flip coins, heal themselves, recoil or discard their own Energy
(``deck.STATUS_TEMPLATES``); ``"trainers"``
(:func:`~envport.envs.tcg_pocket.deck.random_trainers_deck`) adds 8 Trainers to each deck (12
Pokémon cards of the ``status`` pool; every Item and Supporter but Koga,
``deck.TRAINERS_EFFECTS``); ``"full"`` (:func:`~envport.envs.tcg_pocket.deck.random_full_deck`)
deals such decks of every supported card: every Pokémon without an Ability, the fossils and
every Trainer. ``legal_action(state, rng)`` and
``scripted_action(rng)`` serve the verifier.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from envport.core.seeds import derive_seed
from envport.envs.tcg_pocket import encode
from envport.envs.tcg_pocket.actions import N_ACTIONS
from envport.envs.tcg_pocket.config import RulesConfig
from envport.envs.tcg_pocket.deck import (
    POOLS,
    Deck,
    random_basic_deck,
    random_deck,
    random_full_deck,
    random_plain_deck,
    random_status_deck,
    random_trainers_deck,
)
from envport.envs.tcg_pocket.game import TcgPocketGame
from envport.envs.tcg_pocket.rng import Rng

DRAW_KINDS = ("coin", "shuffle", "pick", "energy")
MAX_TAPE = 64


class TcgPocketReference:
    def __init__(self, config: dict[str, Any] | None = None,
                 decks: tuple[Deck, Deck] | None = None, pool: str = "all"):
        if pool not in POOLS:
            raise ValueError(f"pool {pool!r}: one of {', '.join(POOLS)}")
        self.config = RulesConfig.from_json(config or {})
        self.decks = decks
        self.pool = pool
        self.game = TcgPocketGame(self.config)
        self._tape_start = 0
        self._rng_before = np.zeros(2, np.uint32)

    def reset(self, seed: int) -> np.ndarray:
        deal = {"all": random_deck, "basic": random_basic_deck,
                "plain": random_plain_deck, "status": random_status_deck,
                "trainers": random_trainers_deck, "full": random_full_deck}[self.pool]
        decks = self.decks or (deal(np.random.default_rng(derive_seed(seed, 0))),
                               deal(np.random.default_rng(derive_seed(seed, 1))))
        return self.start(decks, Rng(derive_seed(seed, 2)))

    def start(self, decks: tuple[Deck, Deck], rng: Rng) -> np.ndarray:
        """A game of ``decks`` whose draws come from ``rng`` (``reset`` seeds one; the training
        batch's keyed resets give the JAX engine's)."""
        self.game.reset(0, decks, rng=rng)
        self._tape_start = 0
        self._rng_before = self.game.rng.state_array()
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
        self._rng_before = self.game.rng.state_array()
        result = self.game.step(player, int(action))
        info = {"to_act": self.game.to_act(), "acted": player, "action_mask": self.action_mask(),
                **result.info}
        return self._observe(), result.rewards[0], result.terminated, False, info

    def get_state(self) -> dict[str, np.ndarray]:
        assert self.game.state is not None
        return {**encode.get_state(self.game.state), "rng": self.game.rng.state_array()}

    def set_state(self, state: Mapping[str, np.ndarray]) -> None:
        if "rng" in state:  # the state's own generator position: its future draws
            self.game.rng = Rng.at(np.asarray(state["rng"]))
        self.game.state = encode.set_state(dict(state), self.config, self.game.rng)
        self._tape_start = len(self.game.rng.tape)
        self._rng_before = self.game.rng.state_array()

    def tape(self) -> dict[str, np.ndarray]:
        draws = self.game.rng.tape[self._tape_start:]
        kept = draws[:MAX_TAPE]
        out: dict[str, np.ndarray] = {"kind": np.full(MAX_TAPE, -1, np.int8),
                                      "n": np.zeros(MAX_TAPE, np.int32),
                                      "value": np.zeros(MAX_TAPE, np.int32)}
        out["kind"][:len(kept)] = [DRAW_KINDS.index(d.kind) for d in kept]
        out["n"][:len(kept)] = [d.n for d in kept]
        out["value"][:len(kept)] = [d.value for d in kept]
        return {**out, "count": np.asarray(len(draws), np.int32), "rng": self._rng_before}

    def legal_action(self, state: Mapping[str, np.ndarray], rng: np.random.Generator) -> int:
        """A uniformly random legal action of whoever must act in ``state`` (this reference is
        moved to ``state``: use one that nothing else steps)."""
        self.set_state(state)
        legal = np.flatnonzero(self.action_mask())
        if len(legal) == 0:
            raise ValueError("the game in this state is over: no legal action")
        return int(rng.choice(legal))

    def scripted_action(self, rng: np.random.Generator) -> int:
        """The greedy heuristic player's action (``agents.heuristic_action``) in the current
        state, for whoever must act."""
        from envport.envs.tcg_pocket.agents import heuristic_action

        p = self.game.to_act()
        if p is None:
            raise ValueError("the game is over: no action")
        return heuristic_action(self.game, p, rng)
