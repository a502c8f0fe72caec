"""The distribution layer's events (``envport verify pokemon-gen1 --layer distribution``): what
the engine samples, drawn independently on each side and compared as distributions
(``envport.verify.distribution``: chi-square or Kolmogorov-Smirnov, Bonferroni over events).

* **Teams**: p1's lead species and level and its team's level sum, JAX resets against Showdown's
  ``Teams.generate`` of uniformly drawn pool seeds.
* **Turn 1** of fixed one-Pokemon matchups (:data:`MATCHUPS`), both players using their one move,
  from random LCG seeds: each side's HP lost, status, sleep counter and Special stage after the
  turn. The damage rolls (``random(217, 256)``), crits, accuracy, multi-hit counts, secondary
  effects and sleep lengths of Showdown's ``getDamage`` / ``tryMoveHit`` / ``secondaries`` are
  what these events show: L2/L3 compare the LCG words exactly, this compares what a battle
  samples from seeds neither side replays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.pokemon_gen1 import create as C
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1 import tables as T
from envport.envs.pokemon_gen1.reference import STATUS_CODES, ShowdownWorker, gen1_set


class Matchup(NamedTuple):
    """p1's species and move against p2's, one Pokemon each (at its random-battle level unless
    ``levels`` says otherwise), and the events of turn 1 that vary there (of
    :data:`QUANTITIES`, per side)."""

    name: str
    p1: tuple[str, str]
    p2: tuple[str, str]
    events: tuple[str, ...]
    levels: tuple[int | None, int | None] = (None, None)


QUANTITIES = ("HP lost", "status", "sleep turns", "Special stage")
MATCHUPS = (
    # Tauros moves first: roll and crit of a STAB hit, 30% paralysis (a full paralysis then
    # stops Sleep Powder); Sleep Powder's 75% and the sleep length 1-7
    Matchup("bodyslam-sleeppowder", ("Tauros", "bodyslam"), ("Exeggutor", "sleeppowder"),
            ("p1 status", "p1 sleep turns", "p2 HP lost", "p2 status")),
    # a resisted Psychic with its 33% Special drop, then Thunderbolt's roll, crit and paralysis
    Matchup("psychic-thunderbolt", ("Alakazam", "psychic"), ("Starmie", "thunderbolt"),
            ("p1 HP lost", "p1 status", "p2 HP lost", "p2 Special stage")),
    # Pin Missile's 2-5 hits (3/8, 3/8, 1/8, 1/8), one roll for all; Seismic Toss's 1/256 miss
    Matchup("pinmissile-seismictoss", ("Beedrill", "pinmissile"), ("Chansey", "seismictoss"),
            ("p1 HP lost", "p2 HP lost")),
)
_SPA = 2  # Active.boosts: atk, def, spa, spd, spe, accuracy, evasion


def matchup_sets(m: Matchup) -> tuple[list[dict], list[dict]]:
    def team(species: str, move: str, level: int | None) -> list[dict]:
        if level is None:
            level = int(T.RANDOM_SETS[species.lower()].get("level", 80))
        return [gen1_set(species, [move], level=level)]

    return team(*m.p1, m.levels[0]), team(*m.p2, m.levels[1])


def _turn_events(m: Matchup, *columns: np.ndarray) -> dict[str, np.ndarray]:
    """One array ``[n, 2]`` (battle, side) per :data:`QUANTITIES` -> the matchup's events."""
    values = {f"{side} {q}": col[:, s] for q, col in zip(QUANTITIES, columns, strict=True)
              for s, side in enumerate(("p1", "p2"))}
    return {f"{m.name}: {e}": values[e].astype(np.int64) for e in m.events}


def reference_turn_events(n: int, seed: int, worker: ShowdownWorker,
                          matchups: Sequence[Matchup] = MATCHUPS) -> dict[str, np.ndarray]:
    """Turn 1 of ``n`` Showdown battles per matchup, from LCG seeds drawn by numpy."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for k, m in enumerate(matchups):
        team1, team2 = (worker.pack_team(t) for t in matchup_sets(m))
        ids = [f"distribution-{seed}-{k}-{i}" for i in range(n)]
        seeds = rng.integers(0, 1 << 16, (n, 4))
        worker.call_many([{"op": "create", "battle_id": b, "seed": [int(x) for x in words],
                           "team1": team1, "team2": team2}
                          for b, words in zip(ids, seeds, strict=True)])
        worker.choose_many([(b, "move 1", "move 1") for b in ids])
        states = worker.call_many([{"op": "state", "battle_id": b} for b in ids])
        worker.call_many([{"op": "destroy", "battle_id": b} for b in ids])
        mons = [[side["pokemon"][0] for side in st["sides"]] for st in states]
        out.update(_turn_events(
            m,
            np.array([[p["maxhp"] - p["hp"] for p in two] for two in mons]),
            np.array([[STATUS_CODES[p["status"]] for p in two] for two in mons]),
            np.array([[p["status_state"].get("time", 0) if p["status"] == "slp" else 0
                       for p in two] for two in mons]),
            np.array([[p["boosts"]["spa"] for p in two] for two in mons])))
    return out


def translation_turn_events(n: int, seed: int, matchups: Sequence[Matchup] = MATCHUPS
                            ) -> dict[str, np.ndarray]:
    """Turn 1 of ``n`` JAX battles per matchup (``create`` then the engine's step, each compiled
    once per process), from LCG seed words drawn from a JAX key."""
    create, step = C.compiled(False), E.compiled(False)
    keys = jax.random.split(jax.random.key(seed), len(matchups))
    out: dict[str, np.ndarray] = {}
    for m, key in zip(matchups, keys, strict=True):
        teams = jax.tree_util.tree_map(jnp.asarray, C.teams_from_sets(*matchup_sets(m)))
        words = np.asarray(jax.random.randint(key, (n, 4), 0, 1 << 16))
        rows: list[tuple[Any, ...]] = []
        for w in words:
            b, _ = create(teams, prng.seed_state(jnp.asarray(w, jnp.uint32)))
            b, _ = step(b, np.int32(0), np.int32(0))
            t = b.team
            rows.append((np.asarray(t.maxhp[:, 0] - t.hp[:, 0]), np.asarray(t.status[:, 0]),
                         np.asarray(t.sleep_turns[:, 0]), np.asarray(b.active.boosts[:, _SPA])))
        out.update(_turn_events(m, *(np.stack(col) for col in zip(*rows, strict=True))))
    return out


# ---- teams -------------------------------------------------------------------------------------

def _team_events(species: np.ndarray, level: np.ndarray) -> dict[str, np.ndarray]:
    return {"p1_lead_species": species[:, 0].astype(np.int64),
            "p1_lead_level": level[:, 0].astype(np.int64),
            "p1_team_level_sum": level.sum(-1).astype(np.int64)}


def reference_team_events(n: int, seed: int, worker: ShowdownWorker) -> dict[str, np.ndarray]:
    """p1's team of ``n`` battles as a reset should start them: a pool entry drawn uniformly
    (numpy), its team generated afresh by Showdown's ``Teams.generate`` from the entry's seed.
    Both sides then sample the same finite population (a two-sample test against fresh seeds
    would count the pool's own sampling error as a difference: the pool is a fixed sample)."""
    pool = C.pool(True)
    idx = np.random.default_rng(seed).integers(0, len(pool), n)
    replies = worker.call_many([{"op": "generate_team", "seed": [int(x) for x in pool.seeds[i]],
                                 "format": "gen1randombattle"} for i in idx])
    arrays = [C.team_arrays(r["team"]) for r in replies]
    return _team_events(np.stack([a["species"] for a in arrays]),
                        np.stack([a["level"] for a in arrays]))


def translation_team_events(n: int, seed: int) -> dict[str, np.ndarray]:
    """p1's team of ``n`` JAX resets, read from the reset battles."""
    from envport.envs.pokemon_gen1.env import PokemonGen1

    env = PokemonGen1()
    keys = jax.random.split(jax.random.key(seed), n)
    team = jax.jit(jax.vmap(lambda k: env.reset(k)[0].battle.team))(keys)
    return _team_events(np.asarray(team.species[:, 0]), np.asarray(team.level[:, 0]))


# ---- the layer's two samplers ------------------------------------------------------------------

def reference_events(n: int, seed: int) -> dict[str, np.ndarray]:
    with ShowdownWorker() as w:
        return {**reference_team_events(n, seed, w), **reference_turn_events(n, seed, w)}


def translation_events(n: int, seed: int) -> dict[str, np.ndarray]:
    return {**translation_team_events(n, seed), **translation_turn_events(n, seed)}
