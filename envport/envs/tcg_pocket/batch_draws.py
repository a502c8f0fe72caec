"""What the JAX training batch draws with its keys, computed for the reference batch.

``envport train tcg-pocket`` on JAX steps ``AutoReset(TurnVsOpponent)`` over the SPEC's engine
with one key per game and step (``ppo.make_rollout``). The host rollout hands the same keys to
the reference batch (``vector_reference.TcgVectorReference.takes_keys``), and
:class:`KeyedDraws` computes from them what the JAX batch draws with them, split for split, so
that the two backends' runs of a seed play the same games (common random numbers):

* a reset (``TurnVsOpponent.reset``, then ``TcgPocket.reset`` over ``dealt``'s decks): the two
  decks' indices, the game generator's seed (a 32-bit word, which ``rng.Rng(seed)`` keys as the
  engine's ``rng.seed_key`` does) and the key of the opponent's opening actions;
* a step (``AutoReset``: ``fold_in`` 0 is the step's key, 1 the reset's; ``TurnVsOpponent``
  splits the step's into the game's, unused by the engine, and the opponent's): the opponent's
  key, and the reset's draws for a game that ends;
* the opponent's actions (``TurnVsOpponent._opponent_turn`` splits each action's key into the
  next action's, the choice's and the engine's; ``TcgTwoPlayer.opponent_action`` gives each of
  ``OPPONENTS`` a split of the choice's; ``jax_engine.agents.heuristic_action`` splits three
  streams): a uniform choice (``jax_engine.agents.uniform_choice``, ``jax.random.categorical``)
  is the legal action of largest Gumbel noise under its key, so what an action draws is, per
  stream, that noise over the ``N_ACTIONS`` actions; :class:`Choices` picks with it for the
  reference's players (``agents.py``).

Nothing here is verified by construction: ``tests/envs/tcg_pocket/test_tcg_batch_draws.py``
steps this batch and the JAX batch with the same keys and compares every observation, mask,
reward and end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.tcg_pocket.actions import N_ACTIONS
from envport.pettingzoo import OPPONENTS

# The streams of one opponent action, in the order its key splits into them.
STREAMS = {"heuristic": ("any", "play", "attach"), "random": ("random",)}
# Opponent actions whose noise one call computes; a longer turn computes more from the key left.
CHAIN = 8


class Choices:
    """One opponent action's uniform choices: among ``candidates``, the one of largest noise in
    ``stream`` (the JAX player's choice among the same legal actions)."""

    def __init__(self, noise: np.ndarray, streams: Sequence[str]) -> None:
        self.noise, self.streams = noise, tuple(streams)

    def choice(self, candidates: Sequence[int], stream: str) -> int:
        c = np.asarray(candidates, np.int64)
        return int(c[np.argmax(self.noise[self.streams.index(stream)][c])])


class OpponentKeys:
    """The opponent's actions of one turn (or one reset's opening), in order:
    :meth:`next` is the next action's :class:`Choices`."""

    def __init__(self, draws: KeyedDraws, noise: np.ndarray, key_left: np.ndarray) -> None:
        self._draws, self._noise, self._key_left, self._n = draws, noise, key_left, 0

    def next(self) -> Choices:
        if self._n == len(self._noise):  # past the chain computed: continue from its key
            more, self._key_left = self._draws.chain(self._key_left)
            self._noise = np.concatenate([self._noise, more])
        self._n += 1
        return Choices(self._noise[self._n - 1], self._draws.streams)


@dataclass
class Deal:
    """A reset's draws: ``decks`` (indices into the batch's deck list), the game's ``seed`` and
    the opponent's opening actions."""

    decks: tuple[int, int]
    seed: int
    opponent: OpponentKeys


class KeyedDraws:
    """The draws of the JAX batch's keys for ``opponent`` (``"heuristic"``/``"random"``) and
    ``n_decks`` decks to deal from (module doc)."""

    def __init__(self, opponent: str, n_decks: int) -> None:
        self.streams = STREAMS[opponent]
        self._fns = _compiled(opponent, n_decks)

    def chain(self, key_data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(noise ``float32[CHAIN, streams, N_ACTIONS]``, the key after them) of one chain."""
        noise, left = self._fns[0](key_data)
        return np.asarray(noise), np.asarray(left)

    def _deals(self, out: Any) -> list[Deal]:
        i0, i1, seed, noise, left = (np.asarray(x) for x in out)
        return [Deal((int(i0[j]), int(i1[j])), int(seed[j]),
                     OpponentKeys(self, noise[j], left[j])) for j in range(len(seed))]

    def reset(self, keys: np.ndarray) -> list[Deal]:
        """Per game, the reset's draws under its key (``uint32[num_envs, 2]`` key data)."""
        return self._deals(self._fns[1](np.asarray(keys, np.uint32)))

    def deal(self, key: np.ndarray) -> Deal:
        """The reset's draws under one key (a row of :meth:`step`'s reset keys): computed only
        for a game that ends, not for the whole batch at every step."""
        return self.reset(np.asarray(key)[None])[0]

    def step(self, keys: np.ndarray) -> tuple[list[OpponentKeys], np.ndarray]:
        """Per game, the opponent's actions of the step, and the keys (``uint32[num_envs, 2]``)
        of the resets that follow an end (:meth:`deal`)."""
        noise, left, reset_keys = (np.asarray(x) for x in self._fns[2](
            np.asarray(keys, np.uint32)))
        return [OpponentKeys(self, noise[j], left[j]) for j in range(len(left))], reset_keys


@cache
def _compiled(opponent: str, n_decks: int) -> tuple[Any, Any, Any]:
    """The jitted (chain, reset, step) of ``opponent`` over ``n_decks`` decks, once per
    process."""
    who = OPPONENTS.index(opponent)
    n_streams = len(STREAMS[opponent])

    def action_noise(key: jax.Array) -> tuple[jax.Array, jax.Array]:
        key, k_choice, _k_game = jax.random.split(key, 3)
        k_player = jax.random.split(k_choice)[who]
        streams = jax.random.split(k_player, 3) if n_streams == 3 else k_player[None]
        noise = jax.vmap(lambda k: jax.random.gumbel(k, (N_ACTIONS,)))(streams)
        return key, noise

    def chain(key: jax.Array) -> tuple[jax.Array, jax.Array]:
        key, noise = jax.lax.scan(lambda k, _: action_noise(k), key, None, length=CHAIN)
        return noise, jax.random.key_data(key)

    def deal(key: jax.Array) -> tuple[jax.Array, ...]:
        k_game, k_opp = jax.random.split(key)
        k0, k1, k2 = jax.random.split(k_game, 3)
        i0, i1 = (jax.random.randint(k, (), 0, n_decks) for k in (k0, k1))
        return (i0, i1, jax.random.bits(k2, (), jnp.uint32), *chain(k_opp))

    def step(key: jax.Array) -> tuple[Any, ...]:
        _k_game, k_opp = jax.random.split(jax.random.fold_in(key, 0))
        return (*chain(k_opp), jax.random.key_data(jax.random.fold_in(key, 1)))

    wrap = jax.random.wrap_key_data
    return (jax.jit(lambda k: chain(wrap(k))),
            jax.jit(jax.vmap(lambda k: deal(wrap(k)))),
            jax.jit(jax.vmap(lambda k: step(wrap(k)))))
