"""The JAX engine as the same host batch as :mod:`vector_reference`, playing the same battles.

:class:`PokemonVectorEngine` is a :class:`envport.train.backends.HostVectorEnv` that draws
everything it draws from the generator :class:`vector_reference.PokemonVectorReference` draws
from, in the same order (``vector_reference.draw_battles`` at every (re)start,
``draw_random_choices`` for the random opponent before each step), and plays the battles with
the JAX engine (one jitted, vmapped step; the opponent's choice inside it, as
``envport.pettingzoo.VsOpponent`` makes it). The engine reproduces Showdown's battles from the
same teams and seed words (L2, L3), so the two batches of one seed play the same battles move
for move under the same choices: a policy evaluated on both (``envport.train.evaluation``, one
key schedule) meets common random numbers, and L4's sim-to-sim comparison of a policy measures
the translation's difference, not the battles' sampling noise. It stops battles as the
reference batch does (``set_active``: what it returns of them held, never restarted, the
random player's integers still drawn for all). ``SPEC.training.make_matched_translation``.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.spaces import Box, Discrete, Space
from envport.envs.pokemon_gen1 import agents as A
from envport.envs.pokemon_gen1 import create as C
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1 import spec_support as SS
from envport.envs.pokemon_gen1 import vector_reference as VR


class PokemonVectorEngine:
    """``num_envs`` JAX battles, player 0 of each against ``opponent``, drawn as
    ``PokemonVectorReference(num_envs, seed, opponent)`` draws them (module doc)."""

    def __init__(self, num_envs: int, seed: int = 0, opponent: str = "heuristic") -> None:
        VR.check_batch(num_envs, opponent)
        self.num_envs, self.seed, self.opponent = num_envs, int(seed), opponent
        self.observation_space: Space = Box(SS.OBS_LOW, SS.OBS_HIGH, (SS.OBS_SIZE,))
        self.action_space: Space = Discrete(E.N_CHOICES)
        self._pool = C.pool(True)
        self._rng = np.random.default_rng(self.seed)
        self._start, self._step, self._restart, self._masks = _programs(opponent)
        self._state: Any = None
        self._mask: np.ndarray | None = None
        self._obs: np.ndarray | None = None
        self._active = np.ones(num_envs, bool)

    def _draws(self, indices: list[int]) -> tuple[np.ndarray, ...]:
        draws = VR.draw_battles(self._rng, indices, len(self._pool))
        a, b, words = (np.zeros(self.num_envs, np.int32), np.zeros(self.num_envs, np.int32),
                       np.zeros((self.num_envs, 4), np.uint32))
        for i, (ta, tb, w) in draws.items():
            a[i], b[i], words[i] = ta, tb, w
        return a, b, words

    def reset(self) -> np.ndarray:
        self._rng = np.random.default_rng(self.seed)
        self._active = np.ones(self.num_envs, bool)
        state, obs = self._start(*self._draws(list(range(self.num_envs))))
        self._state, self._mask = state, np.asarray(self._masks(state), bool)
        self._obs = np.asarray(obs[:, 0])
        return self._obs.copy()

    def set_active(self, active: np.ndarray) -> None:
        """As ``PokemonVectorReference.set_active``: step only these battles until the next
        :meth:`reset`."""
        active = np.asarray(active)
        if active.shape != (self.num_envs,) or active.dtype != np.bool_:
            raise ValueError(f"active must be bool of shape ({self.num_envs},), got "
                             f"{active.dtype} {active.shape}")
        self._active = active.copy()

    def action_masks(self) -> np.ndarray:
        """``bool[num_envs, 11]``: player 0's legal choices at the current observations."""
        if self._mask is None:
            raise RuntimeError("call reset() before step()")
        return self._mask.copy()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """As ``PokemonVectorReference.step``: an illegal choice plays legal choice ``c mod n``
        (the environment's rule), the opponent its own choice; ended battles restart."""
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        actions = self.action_space.validate(actions, batch_shape=(self.num_envs,))
        r = (VR.draw_random_choices(self._rng, self.num_envs) if self.opponent == "random"
             else np.zeros(self.num_envs, np.int64))
        state, obs, reward, terminated, mask = self._step(
            self._state, jnp.asarray(actions, jnp.int32), jnp.asarray(r, jnp.int32))
        active = self._active
        ended = np.asarray(terminated, bool) & active
        reward = np.where(active, np.asarray(reward, np.float32), np.float32(0))
        if ended.any():  # fresh battles (and their first observations) where battles ended
            state, obs, mask = self._restart(
                state, jnp.asarray(ended), *self._draws([int(i) for i in np.flatnonzero(ended)]))
        if not active.all():
            # A stopped battle's JAX state plays on unseen (the vmapped step costs the same):
            # what the batch returns of it stays as it was, and it is never restarted.
            assert self._obs is not None and self._mask is not None
            obs = np.where(active[:, None], np.asarray(obs), self._obs)
            mask = np.where(active[:, None], np.asarray(mask, bool), self._mask)
        self._state, self._mask, self._obs = state, np.asarray(mask, bool), np.asarray(obs)
        return (self._obs.copy(), reward, ended, np.zeros(self.num_envs, bool))

    def close(self) -> None:
        self._state = None


@functools.cache
def _programs(opponent: str) -> tuple[Any, ...]:
    """The batch's compiled functions (shared by every batch against ``opponent``): start
    battles, step them (the opponent choosing inside), restart the ended ones, player 0's mask."""
    from envport.envs.pokemon_gen1.env import PokemonGen1
    from envport.pettingzoo import VsOpponent

    env, game, pool = PokemonGen1(), VsOpponent("pokemon-gen1", opponent), C.pool(True)

    def start(a: jax.Array, b: jax.Array, words: jax.Array) -> Any:
        return env.start(pool.teams(a, b), prng.seed_state(words))

    def step(state: Any, action: jax.Array, r: jax.Array) -> tuple[Any, ...]:
        if opponent == "heuristic":
            theirs = A.heuristic_jax(state)[1]
        else:  # the integer the reference batch drew for it, as its host opponent uses it
            theirs = A.pick_legal(r, E.legal_mask(state.battle, 1), jnp)
        res = game.transition_given(state, action, theirs)
        return res.state, res.obs, res.reward, res.terminated, res.info["action_mask"]

    def restart(state: Any, ended: jax.Array, a: jax.Array, b: jax.Array, words: jax.Array
                ) -> tuple[Any, jax.Array, jax.Array]:
        fresh, _ = jax.vmap(start)(a, b, words)
        state = jax.tree_util.tree_map(
            lambda x, y: jnp.where(ended.reshape((-1,) + (1,) * (x.ndim - 1)), y, x),
            state, fresh)
        return state, jax.vmap(env.observe)(state)[:, 0], jax.vmap(game.action_mask)(state)

    return (jax.jit(jax.vmap(start)), jax.jit(jax.vmap(step)), jax.jit(restart),
            jax.jit(jax.vmap(game.action_mask)))


def make(num_envs: int, seed: int = 0, **env_kwargs: Any) -> PokemonVectorEngine:
    """``SPEC.training.make_matched_translation``: the options of ``vector_reference.make``."""
    return PokemonVectorEngine(num_envs, seed, VR.opponent_of(env_kwargs))
