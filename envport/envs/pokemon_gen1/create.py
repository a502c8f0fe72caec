"""Battle creation in JAX: two teams and a Gen 5 LCG seed -> Showdown's state after ``create``.

What Showdown does between ``new Battle({seed})`` + ``setPlayer`` x2 and the first request
(``sim/battle.ts start`` -> ``turnLoop`` -> ``runAction``), for Gen 1 singles:

* every set becomes a Pokemon (``sim/pokemon.ts``): stats by ``spreadModify`` (Gen 1 IVs
  ``&= 30``: :func:`mechanics.calc_stats`), HP full, types of the species, move slots with
  ``maxpp = min(61, pp * 8 / 5)`` (three PP Ups, capped at 61 below Gen 3), team order kept;
* the ``start`` action switches in ``side.pokemon[0]`` of p1 then of p2 (``switchIn``); each
  ``insertChoice`` of a ``runSwitch`` refreshes the newcomer's cached speed, and the second is
  placed against the first by that speed, a tie drawing ``random(0, 2)`` (spec 7.3);
* ``runAction``'s tail after ``start`` (``eachEvent('Update')``: a tie draw on equal speeds),
  the two ``runSwitch`` actions (gen 4 ``runSwitch``: lastMove cleared, ``lastSelectedMoveSlot =
  0``) each followed by the tail again, then ``endTurn`` (turn 1).

The draws are taken with the engine's own helpers (:mod:`engine`), so the LCG state matches
Showdown's draw by draw (Tauros vs Tauros: 4 tie draws before the first request; none when the
leads' speeds differ).

Teams are arrays (:class:`Teams`): built from Showdown's sets (:func:`teams_from_sets`, the
``team`` of the worker's ``generate_team``) or sampled from the committed pool of
``Teams.generate`` teams (:class:`TeamPool`, ``data/team_pool.json``). :func:`create` is pure
and jittable (vmappable over a leading batch axis of teams and seeds).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import mechanics as M
from envport.envs.pokemon_gen1 import moves as MV
from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

Array = jax.Array
STATS = T.STAT_NAMES  # hp, atk, def, spa, spd, spe
MAX_PP_GEN1 = 61
POOL_FILE = T.DATA_DIR / "team_pool.json"


@dataclass(frozen=True)
class Teams:
    """Both sides' sets as arrays ``[..., 2, 6, ...]`` (side, team index; absent slots zero)."""

    present: Any  # bool [2, 6]
    species: Any  # int32 [2, 6]: species num
    level: Any  # int32 [2, 6]
    moves: Any  # int32 [2, 6, 4]: move num (0 = no move)
    ivs: Any  # int32 [2, 6, 6]: hp, atk, def, spa, spd, spe
    evs: Any  # int32 [2, 6, 6]


jax.tree_util.register_dataclass(Teams, data_fields=["present", "species", "level", "moves",
                                                     "ivs", "evs"], meta_fields=[])


def team_arrays(sets: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """One side's Showdown sets (``species``, ``level``, ``moves``, ``ivs``, ``evs``; Showdown's
    defaults for missing ones: level 100, IV 31 -> 30, EV 0... as ``Teams.generate`` always
    gives them, only sets with all fields are accepted) -> ``[6, ...]`` arrays."""
    if not 1 <= len(sets) <= S.TEAM_SIZE:
        raise ValueError(f"a team has 1 to {S.TEAM_SIZE} sets, got {len(sets)}")
    out = {"present": np.zeros(S.TEAM_SIZE, bool), "species": np.zeros(S.TEAM_SIZE, np.int32),
           "level": np.zeros(S.TEAM_SIZE, np.int32),
           "moves": np.zeros((S.TEAM_SIZE, S.N_MOVE_SLOTS), np.int32),
           "ivs": np.zeros((S.TEAM_SIZE, 6), np.int32), "evs": np.zeros((S.TEAM_SIZE, 6), np.int32)}
    for j, s in enumerate(sets):
        species = _to_id(s["species"])
        if species not in T.SPECIES_IDS:
            raise ValueError(f"set {j}: unknown Gen 1 species {s['species']!r}")
        moves = [_to_id(m) for m in s["moves"]]
        unknown = [m for m in moves if m not in T.MOVE_IDS]
        if unknown or not 1 <= len(moves) <= S.N_MOVE_SLOTS:
            raise ValueError(f"set {j} ({species}): moves {s['moves']} (unknown: {unknown})")
        missing = [k for k in ("level", "ivs", "evs") if k not in s]
        if missing:
            raise ValueError(f"set {j} ({species}) lacks {missing}")
        out["present"][j] = True
        out["species"][j] = T.SPECIES_IDS[species]
        out["level"][j] = int(s["level"])
        out["moves"][j, : len(moves)] = [T.MOVE_IDS[m] for m in moves]
        out["ivs"][j] = [int(s["ivs"][k]) for k in STATS]
        out["evs"][j] = [int(s["evs"][k]) for k in STATS]
    return out


def _to_id(name: str) -> str:
    return "".join(c for c in str(name).lower() if c.isalnum())


def teams_from_sets(team1: Sequence[Mapping[str, Any]],
                    team2: Sequence[Mapping[str, Any]]) -> Teams:
    a, b = team_arrays(team1), team_arrays(team2)
    return Teams(**{k: np.stack([a[k], b[k]]) for k in a})


def _max_pp(move: Array) -> Array:
    pp = jnp.asarray(T.MOVE_PP).astype(jnp.int32)[move]
    return jnp.where(move > 0, jnp.minimum(pp * 8 // 5, MAX_PP_GEN1), 0)


def _battle_before_start(teams: Teams, seed_state: Array) -> S.Battle:
    """The battle as the sides hold it before ``start``: nobody active, full HP."""
    b = S.empty(jnp)
    present = jnp.asarray(teams.present, bool)
    species = jnp.where(present, jnp.asarray(teams.species, jnp.int32), 0)
    stats = M.calc_stats(species, teams.level, teams.ivs, teams.evs)
    stats = jnp.where(present[..., None], stats, 0)
    moves = jnp.where(present[..., None], jnp.asarray(teams.moves, jnp.int32), 0)
    maxpp = _max_pp(moves)
    types = jnp.where(present[..., None], jnp.asarray(T.SPECIES_TYPES)[species],
                      b.team.types)
    pos = jnp.broadcast_to(jnp.arange(S.TEAM_SIZE), present.shape)
    t = b.team
    team = type(t)(**{**vars(t),
                      "present": present,
                      "species": species.astype(t.species.dtype),
                      "level": jnp.where(present, teams.level, 0).astype(t.level.dtype),
                      "hp": stats[..., 0].astype(t.hp.dtype),
                      "maxhp": stats[..., 0].astype(t.maxhp.dtype),
                      "stats": stats[..., 1:].astype(t.stats.dtype),
                      "modified": stats[..., 1:].astype(t.modified.dtype),
                      "types": types.astype(t.types.dtype),
                      "moves": moves.astype(t.moves.dtype),
                      "pp": maxpp.astype(t.pp.dtype),
                      "maxpp": maxpp.astype(t.maxpp.dtype),
                      "position": jnp.where(present, pos, 0).astype(t.position.dtype),
                      # the Speed IV/EV as the Pokemon constructor normalizes them (Transform)
                      "spe_iv": jnp.where(present, jnp.clip(teams.ivs[..., 5], 0, 31) & 30,
                                          t.spe_iv).astype(t.spe_iv.dtype),
                      "spe_ev": jnp.where(present, jnp.clip(teams.evs[..., 5], 0, 255),
                                          t.spe_ev).astype(t.spe_ev.dtype)})
    # sim/side.ts: a new side's lastSelectedMove (and Gen 1's lastEnemySelectedMove) is 'nomove'
    nomove = jnp.full((S.N_SIDES,), S.MOVE_ID["nomove"], b.side.last_selected_move.dtype)
    side = type(b.side)(**{**vars(b.side),
                           "pokemon_left": present.sum(-1).astype(b.side.pokemon_left.dtype),
                           "last_selected_move": nomove, "last_enemy_selected_move": nomove})
    out = type(b)(**{**vars(b), "team": team, "side": side,
                     "prng": jnp.asarray(seed_state, jnp.uint32)})
    # every leaf made a function of the seed (adding zero): under shard_map a leaf left constant
    # would not vary along the batch, and the engine's loop carries must keep their types
    z = jnp.asarray(seed_state, jnp.uint32)[..., 0] * jnp.uint32(0)

    def varying(x: Array) -> Array:
        zero = z.reshape(z.shape + (1,) * (x.ndim - z.ndim))
        return x | (zero != 0) if x.dtype == jnp.bool_ else x + zero.astype(x.dtype)

    return jax.tree_util.tree_map(varying, out)


def _start(b: S.Battle) -> tuple[S.Battle, dict[str, Array]]:
    st = E._unpack(b)
    # the carry's constants derived from the seed, so that under shard_map they vary along the
    # batch like the state (a fori_loop carry must keep its type)
    z = (jnp.asarray(b.prng[0]) * jnp.uint32(0)).astype(jnp.int32)
    ctx = E._ctx(st, speed=jnp.zeros(2, jnp.int32) + z, live=z == 0,
                 ftt=jnp.zeros(2, bool) | (z != 0), tn=z,
                 tfrom=jnp.full(E.TAPE_SIZE, E.NONE, jnp.int32) + z,
                 tto=jnp.full(E.TAPE_SIZE, E.NONE, jnp.int32) + z)
    # the start action: switchIn(side.pokemon[0], 0) for p1, then p2 (no old active)
    for s in (0, 1):
        ctx = E.aset(ctx, "slot", s, 0)
        ctx = E._zero_active(ctx, s, 0, True)
        ctx = E.update_speed(ctx, s)
    # insertChoice(runSwitch p2) into [runSwitch p1]: by speed, a tie drawing random(0, 2)
    sp1, sp2 = ctx["speed"][0], ctx["speed"][1]
    ctx, lands = E.rand_range(ctx, sp1 == sp2, 0, 2)
    p2_first = (sp2 > sp1) | ((sp2 == sp1) & (lands == 0))
    ctx = E.after_action(ctx, True)

    def runswitch(k: int, ctx: E.Ctx) -> E.Ctx:
        s = jnp.where(k == 0, p2_first.astype(jnp.int32), 1 - p2_first.astype(jnp.int32))
        ctx = E.run_switch(ctx, ctx["live"], s)
        return E.after_action(ctx, ctx["live"])

    ctx = jax.lax.fori_loop(0, 2, runswitch, ctx)
    ctx = E.end_turn(ctx, ctx["live"] & ~ctx["st"]["ended"])
    return E._pack(ctx["st"]), {"draws": ctx["tn"], "tape_from": ctx["tfrom"],
                                "tape_to": ctx["tto"]}


def create_with_tape(teams: Teams, seed_state: Array) -> tuple[S.Battle, dict[str, Array]]:
    """The battle after Showdown's ``create`` with these teams and LCG state ``(hi, lo)``
    (``prng.seed_state(words)``), and the draws of the start (as ``engine.step_with_tape``)."""
    return _start(_battle_before_start(teams, seed_state))


def create(teams: Teams, seed_state: Array) -> S.Battle:
    """:func:`create_with_tape` without the tape."""
    return create_with_tape(teams, seed_state)[0]


@functools.cache
def compiled(batched: bool = False) -> Any:
    """The jitted :func:`create_with_tape` (vmapped when ``batched``), one per process."""
    return jax.jit(jax.vmap(create_with_tape) if batched else create_with_tape)


def create_from_sets(team1: Sequence[Mapping[str, Any]], team2: Sequence[Mapping[str, Any]],
                     seed: Sequence[int]) -> S.Battle:
    """Convenience: Showdown sets and four seed words -> the JAX battle (jitted once)."""
    teams = teams_from_sets(team1, team2)
    return compiled(False)(jax.tree_util.tree_map(jnp.asarray, teams),
                           prng.seed_state(jnp.asarray(seed, jnp.uint32)))[0]


# ---- the committed pool of Teams.generate teams -------------------------------------------------

def load_pool_file() -> dict[str, Any]:
    if not POOL_FILE.is_file():
        raise FileNotFoundError(f"{POOL_FILE} missing: run "
                                "`python -m envport.envs.pokemon_gen1.generate_data`")
    return json.loads(POOL_FILE.read_text())


def parse_set(text: str) -> dict[str, Any]:
    """One pool entry ``Species:level:move,move,...[:ivs:evs]`` (Showdown's species name, move
    ids; IVs/EVs as 6 comma-separated numbers; absent: Teams.generate's usual 30 / 255)."""
    parts = text.split(":")
    ivs = [int(x) for x in parts[3].split(",")] if len(parts) > 3 else [30] * 6
    evs = [int(x) for x in parts[4].split(",")] if len(parts) > 4 else [255] * 6
    return {"species": parts[0], "level": int(parts[1]), "moves": parts[2].split(","),
            "ivs": dict(zip(STATS, ivs, strict=True)), "evs": dict(zip(STATS, evs, strict=True))}


def format_set(s: Mapping[str, Any]) -> str:
    """The inverse of :func:`parse_set` for a Showdown set."""
    ivs = [int(s["ivs"][k]) for k in STATS]
    evs = [int(s["evs"][k]) for k in STATS]
    text = f"{s['species']}:{int(s['level'])}:{','.join(_to_id(m) for m in s['moves'])}"
    if ivs != [30] * 6 or evs != [255] * 6:
        text += f":{','.join(map(str, ivs))}:{','.join(map(str, evs))}"
    return text


class TeamPool:
    """The committed ``Teams.generate('gen1randombattle')`` teams (``data/team_pool.json``), as
    arrays, restricted to the teams whose moves the engine plays (``supported_only``)."""

    def __init__(self, supported_only: bool = True):
        data = load_pool_file()
        self.showdown_version: str = data["showdown_version"]
        teams = [[parse_set(x) for x in t.split(";")] for _, t in data["teams"]]
        seeds = [list(map(int, s.split(","))) for s, _ in data["teams"]]
        self.total = len(teams)
        keep = [i for i, t in enumerate(teams)
                if not supported_only or not MV.unsupported(m for s in t for m in s["moves"])]
        if not keep:
            raise ValueError("no pool team is fully supported by the engine")
        self.sets = [teams[i] for i in keep]
        self.seeds = np.asarray([seeds[i] for i in keep], np.int64)
        arrays = [team_arrays(teams[i]) for i in keep]
        self.arrays = {k: np.stack([a[k] for a in arrays]) for k in arrays[0]}

    def __len__(self) -> int:
        return len(self.sets)

    def teams(self, i1: Any, i2: Any) -> Teams:
        """Pool teams ``i1`` (p1) and ``i2`` (p2) as :class:`Teams` (traced indices allowed)."""
        a = {k: jnp.asarray(v) for k, v in self.arrays.items()}
        return Teams(**{k: jnp.stack([v[i1], v[i2]]) for k, v in a.items()})


@functools.cache
def pool(supported_only: bool = True) -> TeamPool:
    return TeamPool(supported_only)


# ---- the L1 component check against Showdown -------------------------------------------------

def check_creation(count: int = 40, seed: int = 0, worker: Any = None,
                   prng_kind: str = "gen5") -> int:
    """``count`` battles created by Showdown (``Teams.generate`` teams from random seeds, random
    battle seeds; every fifth a mirror of one species and level, whose equal speeds cost tie
    draws) and by :func:`create`: the comparable views (generator state included) and the start's
    draws must be equal. Raises AssertionError at the first difference; returns the count.
    ``prng_kind="sodium"``: the battle seeds are Showdown's default ChaCha20 seeds."""
    import random

    from envport.envs.pokemon_gen1 import bridge as B
    from envport.envs.pokemon_gen1.reference import ShowdownWorker

    rng = random.Random(f"create:{seed}")
    own = worker is None
    w = worker if worker is not None else ShowdownWorker()
    fn = compiled(False)
    try:
        for i in range(count):
            words = [[rng.randrange(65536) for _ in range(4)] for _ in range(3)]
            battle_seed: list[int] | str = words[2]
            if prng_kind == "sodium":
                battle_seed = prng.random_sodium_seed(rng)
            gen = [w.call("generate_team", seed=s) for s in words[:2]]
            sets = [g["team"] for g in gen]
            if i % 5 == 4:  # the mirror: both leads alike
                sets[1] = [dict(sets[0][0]), *sets[1][1:]]
            packed = [w.pack_team(s) for s in sets]
            bid = f"create-check-{seed}-{i}"
            result = w.create(bid, battle_seed, packed[0], packed[1])
            try:
                theirs = B.comparable_from_showdown(w.export(bid))
            finally:
                w.destroy(bid)
            teams = jax.tree_util.tree_map(jnp.asarray, teams_from_sets(sets[0], sets[1]))
            b, tape = fn(teams, jnp.asarray(prng.state_of_seed(battle_seed)))
            diffs = B.differences(B.comparable(b), theirs)
            n = int(tape["draws"])
            mine = [(int(tape["tape_from"][k]), int(tape["tape_to"][k])) for k in range(n)]
            draws = [(-1 if d["from"] is None else d["from"], -1 if d["to"] is None else d["to"])
                     for d in result["tape"]]
            if diffs or mine != draws:
                raise AssertionError(
                    f"battle creation {i} (seed {battle_seed}) differs from Showdown: "
                    f"{diffs[:8]}; draws JAX {mine} vs Showdown {draws}; teams {packed}")
    finally:
        if own:
            w.close()
    return count
