"""Fixed players of ``pokemon-gen1`` on both backends: random legal and a damage heuristic.

Each player exists twice, so the two backends can be compared with the same opponents:

* **JAX** (:func:`random_jax`, :func:`heuristic_jax`): pure functions of the environment state
  (``env.EnvState``) returning both players' choices ``int32[2]``; jittable and vmappable (a
  batch of states gives ``int32[B, 2]``).
* **Showdown** (:func:`random_showdown`, :func:`heuristic_showdown`): one player's choice from
  what the Node worker gives that player: its request (``battle.last["requests"][side]``) and,
  for what a Showdown client learns from the protocol log, the worker's ``state`` reply (only
  the player's own active's stat stages and the opponent's active: species, level, status,
  Speed stage).

Both versions of a player build the same :class:`View` (own team in Showdown's current order,
position 0 active; the legal mask; the opponent's active as revealed) and then run one decision
function written over ``xp`` (numpy or jax.numpy), in int32 arithmetic only (floor divisions of
non-negative numbers), so the same battle gives the same choice bit for bit.
``tests/envs/pokemon_gen1/test_pokemon_agents.py`` checks it along real Showdown battles in
lockstep with the JAX engine.

**Random legal**: a uniform integer ``r`` in ``0..27719`` (27,720 = lcm(1..11), so ``r mod n`` is
exactly uniform for every count ``n`` of legal choices) picks the legal choice number
``r mod n``. Given the same ``r`` both versions choose the same.

**Heuristic** (maximum expected damage, switching out of hopeless matchups). A move's score is
``power x hits x effectiveness x STAB x accuracy`` from the engine's tables (``tables.py``):
power is the base power (the attacker's level for Seismic Toss, Night Shade and Psywave; the
fixed damage of Dragon Rage and Sonic Boom; 0 for status moves, Super Fang, Counter, the OHKO
moves, Explosion and Self-Destruct (self-KO), and Dream Eater unless the target sleeps); hits
``min + max`` of a multi-hit move, else 2; effectiveness x4 (0, 1, 2, 4, 8, 16 for 0 ... 4x;
the fixed-damage moves only 0 or 4, by immunity); STAB 3 if the move's type is one of the
attacker's species' types, else 2 (for formula moves); accuracy in percent (100 for moves that
never miss). Types are the species' own (``tables.SPECIES_TYPES``; Transform and Conversion are
not followed). Then:

1. nothing legal -> ``NO_CHOICE``; only switches legal (a forced switch) -> the best candidate;
2. else the legal move of the highest score (the first on ties; all zero: the first legal
   move), unless the matchup is **hopeless**: the active has damaging moves and none is better
   than 0.5x against the opponent's active, or the opponent outspeeds it and would KO it;
   then it switches to the best **acceptable** candidate, if one is legal.

The opponent's threat is an estimate from what is revealed (its species and level): a STAB
attack of base power 80 of each of its types (physical or special by type, as Gen 1 decides),
its Attack / Special and Speed from its base stats at its level with random battles' DV 15 and
255 stat experience (``(2 base + 93) L / 100 + 5``), the Gen 1 damage formula's core
``((2L/5 + 2) x 80 x A / D) / 50 + 2``, x1.5 STAB, x effectiveness; "outspeeds" compares Speeds
with stat stages and paralysis (1/4). A candidate (a bench Pokemon the mask lets the player
switch to) is acceptable when it has a damaging move of at least 1x effectiveness and is not
outsped and KO'd itself; the best candidate has the highest best-move score (acceptable ones
first in a forced switch; ties: the lowest position).

**Measured** (``python -m envport.envs.pokemon_gen1.agents --battles 1000 --showdown-battles 100
--seed S``; the heuristic is p1 in even battles, p2 in odd ones; JAX teams from the env's pool,
Showdown's from ``Teams.generate`` as ``ShowdownReference`` makes them), heuristic vs random:
JAX 991 of 1,000 won (seed 0) and 991 of 1,000 (seed 1); Showdown 100 of 100 (seed 0) and 98 of
100 (seed 1); no ties, every battle finished.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.api import pytree_dataclass
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import matchup as M
from envport.envs.pokemon_gen1 import spec_support as SS
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

RANDOM_MODULUS = 27_720  # lcm(1..11): r mod n is exactly uniform for every n <= 11
N_POS = S.TEAM_SIZE
SPE = M.SPE


@pytree_dataclass
class View:
    """What one player knows, in Showdown's current team order (position 0 is the active).

    Own team (``[6]``, ``[6, 4]``, ``[6, 5]``): present, species (the set's), level, HP, status
    (``tables.STATUS_*``), move ids, baseStoredStats; the active's Speed stage; the legal mask
    ``bool[11]``; the opponent's active: present, species (current), level, status, Speed stage.
    """

    present: Any
    species: Any
    level: Any
    hp: Any
    status: Any
    moves: Any
    stats: Any
    spe_stage: Any
    mask: Any
    opp_present: Any
    opp_species: Any
    opp_level: Any
    opp_status: Any
    opp_spe_stage: Any


def _threat(v: View, def_stats: Any, def_species: Any, xp: Any) -> Any:
    """The estimated damage of the opponent's STAB attack on a Pokemon (``def_stats`` [5])."""
    species_types = xp.asarray(T.SPECIES_TYPES.astype(np.int32))
    return M.threat(v.opp_species, v.opp_level, xp.take(species_types, v.opp_species, axis=0),
                    v.opp_present, def_stats, xp.take(species_types, def_species, axis=0), xp)


def decide(v: View, xp: Any = np) -> Any:
    """The heuristic's choice (``engine`` integer) for one :class:`View` (see module doc)."""
    v = View(**{f.name: xp.asarray(getattr(v, f.name)) for f in dataclasses.fields(View)})
    v = dataclasses.replace(
        v, species=v.species.astype(np.int32), level=v.level.astype(np.int32),
        hp=v.hp.astype(np.int32), status=v.status.astype(np.int32),
        stats=v.stats.astype(np.int32), spe_stage=v.spe_stage.astype(np.int32),
        opp_species=v.opp_species.astype(np.int32), opp_level=v.opp_level.astype(np.int32),
        opp_status=v.opp_status.astype(np.int32),
        opp_spe_stage=v.opp_spe_stage.astype(np.int32))
    mask = v.mask.astype(bool)
    opp_types = xp.take(xp.asarray(T.SPECIES_TYPES.astype(np.int32)), v.opp_species, axis=0)
    asleep = v.opp_status == T.STATUS_SLP
    own_types = xp.take(xp.asarray(T.SPECIES_TYPES.astype(np.int32)), v.species, axis=0)
    score, damaging, e4 = M.move_scores(v.moves, own_types, v.level[:, None], opp_types,
                                        asleep, xp)  # [6, 4] each
    best_e4 = xp.where(damaging, e4, -1).max(-1)
    weak = damaging.any(-1) & (best_e4 <= 2)  # nothing better than 0.5x
    best_score = score.max(-1)

    opp_base = xp.take(xp.asarray(T.BASE_STATS.astype(np.int32)), v.opp_species, axis=0)
    opp_spe = M.staged(M.estimated_stat(opp_base[5], v.opp_level), v.opp_spe_stage, xp)
    opp_spe = xp.where(v.opp_status == T.STATUS_PAR, opp_spe // 4, opp_spe)
    stages = xp.where(xp.arange(N_POS) == 0, v.spe_stage, 0)  # only the active has stages
    spe = M.staged(v.stats[:, SPE], stages, xp)
    spe = xp.where(v.status == T.STATUS_PAR, spe // 4, spe)
    threat = xp.stack([_threat(v, v.stats[i], v.species[i], xp) for i in range(N_POS)])
    ko = v.opp_present & (opp_spe > spe) & (threat >= v.hp)

    hopeless = weak[0] | ko[0]
    bench_legal = mask[E.SWITCH + 1: E.SWITCH + N_POS]  # positions 1..5
    good = (damaging.any(-1) & (best_e4 >= 4) & ~ko)[1:] & bench_legal
    value = best_score[1:]
    pick_good = xp.argmax(xp.where(good, value, -1))
    forced_key = xp.where(bench_legal, good.astype(np.int32) * (1 << 24) + value, -1)
    pick_forced = xp.argmax(forced_key)

    moves_legal = mask[:4]
    best_move = xp.argmax(xp.where(moves_legal, score[0], -1))
    switch_to = lambda k: (E.SWITCH + 1 + k).astype(np.int32)  # noqa: E731
    choice = xp.where(hopeless & good.any(), switch_to(pick_good), best_move.astype(np.int32))
    choice = xp.where(moves_legal.any(), choice,
                      xp.where(bench_legal.any(), switch_to(pick_forced), E.NO_CHOICE))
    return xp.where(mask.any(), choice, E.NO_CHOICE).astype(np.int32)


def pick_legal(r: Any, mask: Any, xp: Any = np) -> Any:
    """The legal choice number ``r mod n`` of the ``n`` legal ones (``NO_CHOICE`` if none)."""
    mask = xp.asarray(mask, bool)
    n = mask.sum(-1).astype(np.int32)
    k = xp.remainder(xp.asarray(r).astype(np.int32), xp.maximum(n, 1))
    rank = xp.cumsum(mask.astype(np.int32), axis=-1) - 1
    pick = xp.argmax(mask & (rank == k[..., None]), axis=-1).astype(np.int32)
    return xp.where(n > 0, pick, E.NO_CHOICE).astype(np.int32)


# ---- the JAX versions --------------------------------------------------------------------------

def view_jax(state: Any, player: int) -> View:
    """Player ``player``'s :class:`View` of an ``env.EnvState`` (unbatched)."""
    b = state.battle
    t, a = b.team, b.active
    p, o = player, 1 - player
    present = t.present[p]
    pos = t.position[p].astype(jnp.int32)
    at = (pos[None, :] == jnp.arange(N_POS)[:, None]) & present[None, :]  # [position, member]
    order = jnp.argmax(at, axis=1)
    slot_o = jnp.maximum(a.slot[o].astype(jnp.int32), 0)
    return View(
        present=at.any(1), species=t.species[p][order], level=t.level[p][order],
        hp=t.hp[p][order], status=t.status[p][order], moves=t.moves[p][order],
        stats=t.stats[p][order], spe_stage=a.boosts[p, SPE],
        mask=E.legal_mask(b, p),
        opp_present=(a.slot[o] >= 0) & ~t.fainted[o, slot_o],
        opp_species=a.species[o], opp_level=t.level[o, slot_o], opp_status=t.status[o, slot_o],
        opp_spe_stage=a.boosts[o, SPE])


def heuristic_jax(state: Any) -> jax.Array:
    """Both players' heuristic choices ``int32[2]`` (jittable; vmap it over a batch)."""
    return jnp.stack([decide(view_jax(state, p), jnp) for p in (0, 1)])


def random_jax(key: jax.Array, state: Any) -> jax.Array:
    """Both players' uniformly random legal choices ``int32[2]`` (jittable, vmappable)."""
    masks = jnp.stack([E.legal_mask(state.battle, p) for p in (0, 1)])
    return pick_legal(random_draws(key), masks, jnp)


def random_draws(key: jax.Array) -> jax.Array:
    """The random players' integers ``int32[2]`` (one per player) that :func:`random_jax`
    draws from its key."""
    return jax.random.randint(key, (2,), 0, RANDOM_MODULUS)


# ---- the Showdown versions ---------------------------------------------------------------------

def _species_id(name: str) -> int:
    return T.SPECIES_IDS["".join(ch for ch in name.lower() if ch.isalnum())]


def _condition(text: str) -> tuple[int, int]:
    """A request's ``condition`` (``"hp/maxhp [status]"`` or ``"0 fnt"``) -> (hp, status)."""
    parts = text.split()
    hp = int(parts[0].split("/")[0])
    status = T.STATUS_CODES[parts[1]] if len(parts) > 1 else T.STATUS_NONE
    return hp, status


def view_showdown(request: Mapping[str, Any] | None, state: Mapping[str, Any], side: int,
                  ended: bool = False) -> View:
    """Player ``side``'s :class:`View` from its Showdown request and the worker's ``state``."""
    mask = SS.mask_from_request(request, ended)
    present = np.zeros(N_POS, bool)
    species = np.zeros(N_POS, np.int32)
    level = np.zeros(N_POS, np.int32)
    hp = np.zeros(N_POS, np.int32)
    status = np.zeros(N_POS, np.int32)
    moves = np.zeros((N_POS, 4), np.int32)
    stats = np.zeros((N_POS, 5), np.int32)
    if request and "side" in request:
        for i, mon in enumerate(request["side"]["pokemon"]):
            name, *rest = mon["details"].split(", ")
            present[i] = True
            species[i] = _species_id(name)
            level[i] = next((int(x[1:]) for x in rest if x.startswith("L")), 100)
            hp[i], status[i] = _condition(mon["condition"])
            ids = [S.MOVE_ID.get(m, 0) for m in mon["moves"]][:4]
            moves[i, : len(ids)] = ids
            stats[i] = [mon["stats"][k] for k in T.STORED_STAT_NAMES]
    own, opp = state["sides"][side], state["sides"][1 - side]
    own_active = own["pokemon"][own["active"]] if own["active"] >= 0 else None
    opp_active = opp["pokemon"][opp["active"]] if opp["active"] >= 0 else None
    return View(
        present=present, species=species, level=level, hp=hp, status=status, moves=moves,
        stats=stats, spe_stage=np.int32(own_active["boosts"]["spe"] if own_active else 0),
        mask=mask,
        opp_present=np.bool_(opp_active is not None and not opp_active["fainted"]),
        opp_species=np.int32(T.SPECIES_IDS[opp_active["species"]] if opp_active else 0),
        opp_level=np.int32(opp_active["level"] if opp_active else 0),
        opp_status=np.int32(T.STATUS_CODES[opp_active["status"]] if opp_active else 0),
        opp_spe_stage=np.int32(opp_active["boosts"]["spe"] if opp_active else 0))


def heuristic_showdown(request: Mapping[str, Any] | None, state: Mapping[str, Any], side: int,
                       ended: bool = False) -> int:
    """The heuristic's choice for ``side`` (0 = p1) from Showdown's request and state."""
    return int(decide(view_showdown(request, state, side, ended), np))


def random_showdown(request: Mapping[str, Any] | None, r: int, ended: bool = False) -> int:
    """The random legal choice for integer ``r`` (``0 <= r < RANDOM_MODULUS``) of a request."""
    return int(pick_legal(np.int32(r), SS.mask_from_request(request, ended), np))


# ---- matches: heuristic vs random on each backend -----------------------------------------------

@dataclasses.dataclass
class Match:
    """Battles of the heuristic against the random player (half as p1, half as p2)."""

    backend: str
    battles: int
    wins: int  # the heuristic's
    losses: int
    ties: int
    unfinished: int
    steps: int
    seconds: float

    @property
    def win_rate(self) -> float:
        return self.wins / max(self.battles, 1)

    def describe(self) -> str:
        return (f"{self.backend}: heuristic vs random, {self.battles} battles: {self.wins} won, "
                f"{self.losses} lost, {self.ties} tied, {self.unfinished} unfinished "
                f"(win rate {self.win_rate:.3f}; {self.steps} steps, {self.seconds:.1f} s)")


def _tally(backend: str, winners: np.ndarray, heuristic_side: np.ndarray, steps: int,
           seconds: float) -> Match:
    won = winners == np.where(heuristic_side == 0, S.WINNER_P1, S.WINNER_P2)
    lost = winners == np.where(heuristic_side == 0, S.WINNER_P2, S.WINNER_P1)
    return Match(backend, len(winners), int(won.sum()), int(lost.sum()),
                 int((winners == S.WINNER_TIE).sum()), int((winners == S.WINNER_NONE).sum()),
                 steps, seconds)


def match_jax(battles: int, seed: int = 0, max_steps: int = 3000) -> Match:
    """``battles`` JAX battles at once (``env.reset`` teams and seeds; the engine's batched
    compiled step), the heuristic as p1 in the even battles and p2 in the odd ones."""
    import time

    from envport.core.seeds import derive_key
    from envport.envs.pokemon_gen1.env import PokemonGen1

    env = PokemonGen1()
    t0 = time.perf_counter()
    keys = jax.random.split(derive_key(seed, 0), battles)
    state = jax.jit(jax.vmap(env.reset))(keys)[0]
    side = np.arange(battles) % 2

    @jax.jit
    def choose(key: jax.Array, state: Any) -> jax.Array:
        h = jax.vmap(heuristic_jax)(state)
        r = jax.vmap(random_jax)(jax.random.split(key, battles), state)
        p1 = jnp.where(side == 0, h[:, 0], r[:, 0])
        p2 = jnp.where(side == 0, r[:, 1], h[:, 1])
        return jnp.stack([p1, p2], -1)

    winners, steps = play_out(choose, state, seed, max_steps)
    return _tally("jax", winners, side, steps, time.perf_counter() - t0)


def play_out(choose: Any, state: Any, seed: int, max_steps: int = 3000) -> tuple[np.ndarray, int]:
    """Steps a batch of JAX battles (an ``env.EnvState`` batch) with ``choose(key, state) ->
    int32[B, 2]`` until every battle has ended or ``max_steps``; each player's record of what
    it has seen follows the battle. Returns the winners (``state.WINNER_*``) and the steps."""
    from envport.core.seeds import derive_key
    from envport.envs.pokemon_gen1.env import EnvState

    step = E.compiled(True)
    seen_after = jax.jit(jax.vmap(lambda b, s: SS.seen_after(b, s, jnp)))
    b, seen = state.battle, state.seen
    k = derive_key(seed, 1)
    steps = 0
    for _ in range(max_steps):
        if bool(jnp.all(b.ended)):
            break
        k, sub = jax.random.split(k)
        c = choose(sub, EnvState(battle=b, seen=seen))
        b, _ = step(b, c[:, 0], c[:, 1])
        seen = seen_after(b, seen)
        steps += 1
    return np.asarray(b.winner), steps


def match_showdown(battles: int, seed: int = 0, worker: Any = None, max_steps: int = 3000
                   ) -> Match:
    """``battles`` Showdown battles (``env.ShowdownReference`` teams and seeds), one at a
    time through the Node worker, the heuristic as p1 in the even battles, p2 in the odd."""
    import time

    from envport.envs.pokemon_gen1.env import ShowdownReference

    t0 = time.perf_counter()
    ref = ShowdownReference(worker)
    rng = np.random.default_rng(seed)
    winners = np.zeros(battles, np.int8)
    side = np.arange(battles) % 2
    steps = 0
    try:
        for i in range(battles):
            ref.reset(int(seed) * 1_000_003 + i)
            for _ in range(max_steps):
                last = ref.battle.last or {}
                if last.get("ended"):
                    break
                requests = last.get("requests") or {}
                state = ref.battle.state()
                h = int(side[i])
                choice = np.zeros(2, np.int32)
                choice[h] = heuristic_showdown(requests.get(("p1", "p2")[h]), state, h)
                choice[1 - h] = random_showdown(requests.get(("p1", "p2")[1 - h]),
                                                int(rng.integers(0, RANDOM_MODULUS)))
                ref.step(choice)
                steps += 1
            last = ref.battle.last or {}
            winners[i] = {"p1": S.WINNER_P1, "p2": S.WINNER_P2, "tie": S.WINNER_TIE}.get(
                str(last.get("winner")), S.WINNER_NONE)
    finally:
        ref.close()
    return _tally("showdown", winners, side, steps, time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m envport.envs.pokemon_gen1.agents",
        description="Win rate of the heuristic against the random player on each backend.")
    ap.add_argument("--battles", type=int, default=1000, help="JAX battles (default 1000)")
    ap.add_argument("--showdown-battles", type=int, default=100,
                    help="Showdown battles (default 100; 0 skips Showdown)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.battles < 0 or args.showdown_battles < 0:
        raise ValueError("--battles and --showdown-battles must be >= 0")
    if args.battles:
        print(match_jax(args.battles, args.seed).describe(), flush=True)
    if args.showdown_battles:
        print(match_showdown(args.showdown_battles, args.seed).describe(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
