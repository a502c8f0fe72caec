"""More L2 states for mutation scoring: Showdown battles of teams with any supported move.

The ``gen1randombattle`` teams of L2's resets rarely carry the moves on the engine's rare paths
(Bide, Super Fang, the OHKO moves, Counter, Mimic, Transform, Disable...), so a mutant there is
seldom met by a recorded L2 state. :class:`AnyMoveReference` is the same Showdown reference
(``env.ShowdownReference``: the same export, masks, tape, injection) whose resets play two teams
of distinct species from all 151 (random-battle level where there is one, else 50-100), each with
2-4 distinct moves drawn uniformly from the supported moves. The partial-trapping moves and
Metronome (which can call them) are left out: for a state with a partial-trapping lock,
Showdown's ``fromJSON`` rebuilds requests that differ from the live battle's (README, the known
gap), so such a state cannot be injected unchanged, on the original engine or any mutant.

Named by ``PokemonGen1.mutation_plan["interaction_sources"]``; the recorded L2 of a mutation run
(``envport.verify.mutation.recorded.record``) draws its extra cases from it with L2's own
policies and ``perturb``.

One reset in :data:`GHOST_SHARE` (chosen from the seed alone, so the other seeds keep their
teams) plays two all-Ghost teams instead (:func:`ghost_team`): Gen 1's Endless Battle Clause
(``battle.endTurn``) ties a battle where every standing Pokemon of both sides is frozen or out of
PP against a foe of Ghosts alone, which random-battle teams never reach; with the ``stalemate``
perturbation (every standing Pokemon out of PP) L2 meets both outcomes of that test.

L3 injects nothing after the start (both sides play from matched seeds and teams), so its extra
battles (:func:`any_move_battles`, ``mutation_plan["rollout_sources"]``) draw from every
supported move, the partial-trapping moves and Metronome included: the paths L2 cannot reach.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from envport.envs.pokemon_gen1 import moves as MV
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T
from envport.envs.pokemon_gen1.env import ShowdownReference

# Every supported move whose states Showdown injects back unchanged (see the module docstring).
MOVES: tuple[str, ...] = tuple(
    m for m in MV.SUPPORTED_MOVES if m not in MV.FAMILIES["trap"] + MV.FAMILIES["metronome"])
SPECIES: tuple[str, ...] = tuple(sorted(T.SPECIES_IDS))


def any_move_team(rng: random.Random, worker: object, size: int = 6,
                  moves: tuple[str, ...] = MOVES, species: tuple[str, ...] = SPECIES,
                  move_counts: tuple[int, ...] = (2, 3, 4, 4)) -> str:
    """A packed team of ``size`` distinct ``species``, each with a count drawn from
    ``move_counts`` of distinct moves of ``moves`` (no draw when there is one count)."""
    from envport.envs.pokemon_gen1.reference import gen1_set

    team = []
    for sp in rng.sample(species, size):
        level = int(T.RANDOM_SETS.get(sp, {}).get("level", rng.randint(50, 100)))
        count = rng.choice(move_counts) if len(move_counts) > 1 else move_counts[0]
        team.append(gen1_set(sp, rng.sample(moves, count), level=level))
    return worker.pack_team(team)  # type: ignore[attr-defined]


GHOSTS = tuple(sp for sp in SPECIES
               if T.TYPE_ID["Ghost"] in T.SPECIES_TYPES[T.SPECIES_IDS[sp]])
GHOST_SHARE = 1 / 8


def ghost_team(rng: random.Random, worker: object, moves: tuple[str, ...] = MOVES) -> str:
    """A packed team of 1-3 distinct Ghosts (Gastly, Haunter, Gengar: all there are), each with
    4 distinct moves of ``moves`` (a Pokemon whose four slots all hold PP differs from one out
    of PP in every slot, the clause's test)."""
    return any_move_team(rng, worker, rng.randint(1, len(GHOSTS)), moves, GHOSTS, (4,))


class AnyMoveReference(ShowdownReference):
    """:class:`env.ShowdownReference` whose ``reset(seed)`` plays :func:`any_move_team` teams
    of ``moves`` drawn from ``seed`` (the battle's LCG seed from it too, as the plain
    reset's); with ``ghosts``, :func:`ghost_team` teams on that share of the seeds."""

    def __init__(self, moves: tuple[str, ...] = MOVES, worker: Any = None,
                 ghosts: float = 0.0) -> None:
        super().__init__(worker)
        self.moves = moves
        self.ghosts = ghosts

    def reset(self, seed: int) -> np.ndarray:
        from envport.envs.pokemon_gen1.reference import seed_words

        rng = random.Random(seed)
        w = self.battle.worker
        if random.Random(f"ghosts-{seed}").random() < self.ghosts:
            teams = (ghost_team(rng, w, self.moves), ghost_team(rng, w, self.moves))
        else:
            teams = (any_move_team(rng, w, moves=self.moves),
                     any_move_team(rng, w, moves=self.moves))
        self.battle.reset(teams=teams, battle_seed=seed_words(seed, 0))
        self._tape = list(self.battle.tape_records())
        self._refresh(np.zeros((2, S.TEAM_SIZE), bool))
        return self._obs()


def any_move_reference() -> AnyMoveReference:
    return AnyMoveReference(ghosts=GHOST_SHARE)


def any_move_battles() -> AnyMoveReference:
    """L3's extra battles: teams of every supported move (module docstring)."""
    return AnyMoveReference(MV.SUPPORTED_MOVES)
