"""Pokémon TCG Pocket in JAX (the ``full`` pool of ``TcgPocketReference``: every card the
reference plays, so every Pokémon without an Ability, the fossils and every Trainer; the
``trainers``, ``status`` and ``plain`` pools are its subsets):
fixed-size arrays of the reference's layout (``state.py``), the rules of ``rules.py``, masks,
both players' observations (``encode.py``).

The step is the action of whoever must act; the observation is that player's view (the next
player to act, player 0 once the game is over), the reward player 0's (+1 win, -1 loss, 0
otherwise), ``terminated`` at the game's end. An action the mask does not allow changes
nothing (no reward, not terminated); ``action_mask(state)`` is the mask and ``info`` carries
it. Randomness: the state carries the reference's counter-based generator (``rng``), the
step's draws are that generator's position (``sample_draws`` reads it from the state: the key
is not needed), and ``transition`` draws every coin, shuffle and Energy roll from it in the
reference's order, so a reference state and its tape's ``rng`` reproduce the reference's
draws exactly.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.api import Environment, StepResult
from envport.core.spaces import Box, Discrete
from envport.envs.tcg_pocket.jax_engine import config, deck, encode, game, rules
from envport.envs.tcg_pocket.jax_engine import rng as R
from envport.envs.tcg_pocket.jax_engine.actions import N_ACTIONS
from envport.envs.tcg_pocket.jax_engine.config import Params
from envport.envs.tcg_pocket.jax_engine.state import State, blank


class TcgPocket(Environment[State, Params]):
    name = "tcg-pocket"
    # ``envport mutate``: the step lives in the engine's modules (this one wraps them); the
    # modules whose names are bound by value elsewhere (``state``'s constants, imported by name
    # into ``rules``) or that only deal decks (``deck``: every compared game starts from the
    # reference's dealt state) are not mutated. Each mutant runs L2 against reference steps
    # recorded once per run (one compilation of the vmapped transition per mutant instead of
    # stepping the reference again), then L3 lockstep games. L1 is not run per mutant: its
    # five properties compile reset, step and the vmapped step again for every mutant.
    mutation_plan: ClassVar[dict[str, Any]] = {
        "modules": [f"envport.envs.tcg_pocket.jax_engine.{m}"
                    for m in ("rules", "rng", "cards", "encode", "game", "jax_env")],
        "layers": ("interaction", "rollout"),
        "recorded_interaction": True,
        # L1's component checks (components.py) alone, before L2: they reach the coin_fail
        # attacks and double wins that sampled L2 states and random games seldom do
        "components": True,
    }

    def __init__(self, decks: tuple[Any, Any] | None = None) -> None:
        # Hand edit after the loop (kept in the workspace since): (card ids int16[n, 20],
        # Energy types int8[n, 3]) of decks the resets deal two of (``dealt.py``: the
        # reference's decks of the pool); None: the loop's own decks of Colorless Basics.
        # NumPy, not jnp: an environment built while a function is traced (a trainer's cached
        # backend) would otherwise hold that trace's tracers and leak them into the next.
        self.decks = None if decks is None else (np.asarray(decks[0], np.int16),
                                                 np.asarray(decks[1], np.int8))

    def default_params(self) -> Params:
        return config.default_params()

    def reset(self, key: jax.Array, params: Params | None = None) -> tuple[State, jax.Array]:
        params = self.default_params() if params is None else params
        k0, k1, k2 = jax.random.split(key, 3)
        if self.decks is None:
            (d0, t0), (d1, t1) = deck.random_deck(k0), deck.random_deck(k1)
            cards, types = jnp.stack([d0, d1]), jnp.stack([t0, t1])
        else:
            i = jnp.stack([jax.random.randint(k, (), 0, self.decks[0].shape[0]) for k in (k0, k1)])
            cards, types = jnp.asarray(self.decks[0])[i], jnp.asarray(self.decks[1])[i]
        seed = jax.random.bits(k2, (), jnp.uint32)
        s = blank().replace(deck=cards, energy_types=types,
                            rng=jnp.stack([R.seed_key(seed), jnp.uint32(0)]))
        s = rules.new_game(s, params)
        return s, self.observe(s)

    def observe(self, s: State) -> jax.Array:
        return encode.observation_vector(s, jnp.clip(game.to_act(s), 0, 1))

    def action_mask(self, s: State) -> jax.Array:
        return rules.legal_mask(s)

    def sample_draws(self, key: jax.Array, state: State, params: Params | None = None) -> Any:
        return state.rng

    def transition(self, state: State, action: jax.Array, draws: Any,
                   params: Params | None = None) -> StepResult:
        params = self.default_params() if params is None else params
        s = state.replace(rng=draws)
        nxt, rewards, terminated, legal = game.step(s, action, params)
        return StepResult(nxt, self.observe(nxt), rewards[0], terminated, jnp.asarray(False),
                          {"action_mask": rules.legal_mask(nxt), "to_act": game.to_act(nxt),
                           "legal": legal})

    def observation_space(self, params: Params | None = None) -> Box:
        return Box(low=-32768, high=32767, shape=(encode.OBS_SIZE,), dtype=np.dtype(np.int16))

    def action_space(self, params: Params | None = None) -> Discrete:
        return Discrete(N_ACTIONS)
