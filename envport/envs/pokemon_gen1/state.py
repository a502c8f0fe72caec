"""The fixed-size JAX state of one Gen 1 singles battle (pytree dataclasses, small dtypes).

Layout (structure of arrays; a batch of battles adds leading axes to every leaf):

* :class:`Team` ``[2, 6]``: every Pokemon of both sides **in original team order** (Showdown's
  ``side.team``): what Showdown keeps per Pokemon (``sim/pokemon.ts``): species, level, HP, the
  permanent stats (``baseStoredStats``), the modified stats (Gen 1's ``modifiedStats``, which
  keep the paralysis/burn penalties), current types, move slots (id, PP, max PP), status and its
  counters, fainted, Showdown's current position (what ``switch N`` counts), and the set's Speed
  IV/EV (``setSpecies`` caches the Speed of a Transform from them).
* :class:`Active` ``[2]``: what only the active Pokemon has: stat stages, ``storedStats``
  (changed by Transform), the transformed species, last move, Transform/Mimic's separate base
  move slots, and every Gen 1 volatile with its counters (``data/mods/gen1/conditions.ts``,
  ``moves.ts``). :data:`VOLATILES` lists them; presence is one bit each of ``volatiles``.
* :class:`Side` ``[2]``: Pokemon left, the choices Showdown remembers (``lastSelectedMove``,
  ``lastSelectedMoveSlot``, ``lastEnemySelectedMove``) and the last moves seen
  (``side.lastMove``, ``lastEnemyMove``: Counter, Desync Clause).
* :class:`Battle`: the above, the Gen 5 LCG state (``prng.py``: ``(hi, lo)`` uint32; a battle
  on Showdown's ChaCha20 seeds holds the 8-word key instead), the turn,
  ``ended``/``winner`` and ``battle.lastDamage``.

Ids are those of :mod:`tables` (species ``num``, move ``num``, type index; 0 = none). Showdown's
pseudo-moves that can stand in ``lastSelectedMove`` get the ids of :data:`EXTRA_MOVES`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.api import pytree_dataclass
from envport.envs.pokemon_gen1 import tables as T

Array = Any  # numpy or jax arrays (the bridge builds numpy, the engine runs on jax)

TEAM_SIZE = 6
N_SIDES = 2
N_MOVE_SLOTS = 4

# Choices Showdown writes into side.lastSelectedMove that are not Gen 1 moves.
EXTRA_MOVES = T.EXTRA_MOVES
MOVE_ID: dict[str, int] = {"": 0, **T.MOVE_IDS,
                           **{m: T.N_MOVES + i for i, m in enumerate(EXTRA_MOVES)}}
MOVE_NAME: dict[int, str] = {v: k for k, v in MOVE_ID.items()}

# The Gen 1 volatiles, one presence bit each (bit i = 1 << i), with the counters kept for them.
VOLATILES = (
    "confusion",  # confusion_time
    "substitute",  # substitute_hp
    "partiallytrapped",  # trapped_duration, trapped_move, trapped_maybe_locked
    "partialtrappinglock",  # lock_duration, lock_total, lock_damage, lock_move
    "fakepartiallytrapped",  # fake_trapped_duration
    "mustrecharge",
    "lockedmove",  # locked_time, locked_accuracy, locked_move (Thrash, Petal Dance)
    "twoturnmove",  # twoturn_move, twoturn_source
    "invulnerability",  # Dig, Fly
    "reflect",
    "lightscreen",
    "focusenergy",
    "leechseed",
    "disable",  # disable_time, disable_slot, disable_move
    "rage",  # rage_accuracy
    "bide",  # bide_time, bide_damage
    "flinch",  # flinch_duration
    "mist",
    "minimize",
    "defensecurl",
    "residualdmg",  # toxic_counter
)
VOLATILE_BIT: dict[str, int] = {v: 1 << i for i, v in enumerate(VOLATILES)}

DEFAULT_SPE_IV, DEFAULT_SPE_EV = 30, 255

WINNER_NONE, WINNER_P1, WINNER_P2, WINNER_TIE = 0, 1, 2, 3


@pytree_dataclass
class Team:
    """Per Pokemon, ``[..., 2, 6]`` (side, original team index)."""

    present: Array  # bool: a Pokemon in this slot (teams may have fewer than 6)
    species: Array  # uint8: the set's species (Transform's species is Active.species)
    level: Array  # uint8
    hp: Array  # int16
    maxhp: Array  # int16
    stats: Array  # int16 [5]: baseStoredStats atk, def, spa, spd, spe
    modified: Array  # int16 [5]: modifiedStats
    types: Array  # uint8 [2]: current types (TYPE_NONE pads)
    moves: Array  # uint8 [4]: moveSlots ids (0 = empty slot)
    pp: Array  # uint8 [4]
    maxpp: Array  # uint8 [4]
    status: Array  # uint8: tables.STATUS_*
    sleep_turns: Array  # int8: statusState.time while asleep (0 otherwise)
    sleep_start: Array  # int8: statusState.startTime while asleep
    status_by_ally: Array  # bool: statusState.source is on this side (Rest): Sleep Clause
    fainted: Array  # bool
    position: Array  # uint8: Showdown's current slot in side.pokemon (0 = active)
    spe_iv: Array  # uint8: the set's Speed IV (after Gen 1's ``&= 30``)
    spe_ev: Array  # uint8: the set's Speed EV (stat experience); with spe_iv: Transform's speed


@pytree_dataclass
class Active:
    """Per side, ``[..., 2]``: the active Pokemon's transient state."""

    slot: Array  # int8: team index of the active Pokemon (-1: none)
    species: Array  # uint8: current species (differs after Transform)
    transformed: Array  # bool
    boosts: Array  # int8 [7]: atk, def, spa, spd, spe, accuracy, evasion
    stored: Array  # int16 [5]: storedStats (Transform copies the target's)
    last_move: Array  # uint8: pokemon.lastMove (Mirror Move); 0 = none
    base_moves: Array  # uint8 [4]: baseMoveSlots where they are separate objects
    base_pp: Array  # uint8 [4]
    base_maxpp: Array  # uint8 [4]
    base_separate: Array  # bool [4]: baseMoveSlots[i] is not moveSlots[i] (Transform, Mimic)
    slot_virtual: Array  # bool [4]: moveSlots[i].virtual (Transform, Mimic)
    volatiles: Array  # uint32: presence bits, VOLATILE_BIT
    confusion_time: Array  # int8
    substitute_hp: Array  # int16
    trapped_duration: Array  # int8
    trapped_move: Array  # uint8: the trapping move (partiallytrapped.sourceEffect)
    trapped_maybe_locked: Array  # bool
    lock_duration: Array  # int8: partialtrappinglock.duration
    lock_total: Array  # int8: .totalDuration
    lock_damage: Array  # int16: .damage (repeated by later turns)
    lock_move: Array  # uint8
    fake_trapped_duration: Array  # int8
    locked_time: Array  # int8: lockedmove.time
    locked_accuracy: Array  # uint8: lockedmove.accuracy (the Thrash accuracy bug)
    locked_move: Array  # uint8
    twoturn_move: Array  # uint8
    twoturn_source: Array  # uint8: twoturnmove.sourceEffect (Metronome, Mirror Move; 0 = none)
    disable_time: Array  # int8
    disable_slot: Array  # int8
    disable_move: Array  # uint8
    rage_accuracy: Array  # uint8
    bide_time: Array  # int8
    bide_damage: Array  # int16
    flinch_duration: Array  # int8
    toxic_counter: Array  # int8: residualdmg.counter


@pytree_dataclass
class Side:
    """Per side, ``[..., 2]``."""

    pokemon_left: Array  # int8
    last_selected_move: Array  # uint8: side.lastSelectedMove (MOVE_ID; 0 = '')
    last_selected_slot: Array  # int8: side.lastSelectedMoveSlot (PP deduction)
    last_enemy_selected_move: Array  # uint8
    last_move: Array  # uint8: side.lastMove (0 = null)
    last_enemy_move: Array  # uint8: side.lastEnemyMove (Counter)


@pytree_dataclass
class Battle:
    team: Team
    active: Active
    side: Side
    prng: Array  # uint32 [2]: (hi, lo) of the Gen 5 LCG; [8] for SodiumRNG (prng.py)
    turn: Array  # int16
    ended: Array  # bool
    winner: Array  # int8: WINNER_*
    last_damage: Array  # int32: battle.lastDamage (uncapped through a Substitute: up to 65535)


# dtype and trailing shape of every leaf: the single source of the layout
LAYOUT: dict[str, dict[str, tuple[Any, tuple[int, ...]]]] = {
    "team": {
        "present": (np.bool_, ()), "species": (np.uint8, ()), "level": (np.uint8, ()),
        "hp": (np.int16, ()), "maxhp": (np.int16, ()), "stats": (np.int16, (5,)),
        "modified": (np.int16, (5,)), "types": (np.uint8, (2,)), "moves": (np.uint8, (4,)),
        "pp": (np.uint8, (4,)), "maxpp": (np.uint8, (4,)), "status": (np.uint8, ()),
        "sleep_turns": (np.int8, ()), "sleep_start": (np.int8, ()),
        "status_by_ally": (np.bool_, ()), "fainted": (np.bool_, ()), "position": (np.uint8, ()),
        "spe_iv": (np.uint8, ()), "spe_ev": (np.uint8, ()),
    },
    "active": {
        "slot": (np.int8, ()), "species": (np.uint8, ()), "transformed": (np.bool_, ()),
        "boosts": (np.int8, (7,)), "stored": (np.int16, (5,)), "last_move": (np.uint8, ()),
        "base_moves": (np.uint8, (4,)), "base_pp": (np.uint8, (4,)),
        "base_maxpp": (np.uint8, (4,)), "base_separate": (np.bool_, (4,)),
        "slot_virtual": (np.bool_, (4,)), "volatiles": (np.uint32, ()),
        "confusion_time": (np.int8, ()), "substitute_hp": (np.int16, ()),
        "trapped_duration": (np.int8, ()), "trapped_move": (np.uint8, ()),
        "trapped_maybe_locked": (np.bool_, ()), "lock_duration": (np.int8, ()),
        "lock_total": (np.int8, ()), "lock_damage": (np.int16, ()), "lock_move": (np.uint8, ()),
        "fake_trapped_duration": (np.int8, ()), "locked_time": (np.int8, ()),
        "locked_accuracy": (np.uint8, ()), "locked_move": (np.uint8, ()),
        "twoturn_move": (np.uint8, ()), "twoturn_source": (np.uint8, ()),
        "disable_time": (np.int8, ()), "disable_slot": (np.int8, ()),
        "disable_move": (np.uint8, ()), "rage_accuracy": (np.uint8, ()),
        "bide_time": (np.int8, ()), "bide_damage": (np.int16, ()),
        "flinch_duration": (np.int8, ()), "toxic_counter": (np.int8, ()),
    },
    "side": {
        "pokemon_left": (np.int8, ()), "last_selected_move": (np.uint8, ()),
        "last_selected_slot": (np.int8, ()), "last_enemy_selected_move": (np.uint8, ()),
        "last_move": (np.uint8, ()), "last_enemy_move": (np.uint8, ()),
    },
    "battle": {
        "prng": (np.uint32, (2,)), "turn": (np.int16, ()), "ended": (np.bool_, ()),
        "winner": (np.int8, ()), "last_damage": (np.int32, ()),
    },
}
_LEAD = {"team": (N_SIDES, TEAM_SIZE), "active": (N_SIDES,), "side": (N_SIDES,), "battle": ()}


def _check_layout() -> None:
    for group, cls in (("team", Team), ("active", Active), ("side", Side)):
        names = [f.name for f in dataclasses.fields(cls)]
        if names != list(LAYOUT[group]):
            raise AssertionError(f"LAYOUT[{group!r}] does not list {cls.__name__}'s fields")
    battle = [f.name for f in dataclasses.fields(Battle)][3:]
    if battle != list(LAYOUT["battle"]):
        raise AssertionError("LAYOUT['battle'] does not list Battle's fields")


_check_layout()


def empty(xp: Any = np) -> Battle:
    """A zero battle (every leaf zero, the active slots -1), in numpy (``xp=np``) or JAX."""

    def group(name: str) -> dict[str, Any]:
        return {k: xp.zeros(_LEAD[name] + shape, dtype)
                for k, (dtype, shape) in LAYOUT[name].items()}

    active = group("active")
    active["slot"] = xp.full((N_SIDES,), -1, np.int8)
    team = group("team")
    # the random-battle sets' Speed DV 15 and stat experience 255 (reference.gen1_set)
    team["spe_iv"] = xp.full((N_SIDES, TEAM_SIZE), DEFAULT_SPE_IV, np.uint8)
    team["spe_ev"] = xp.full((N_SIDES, TEAM_SIZE), DEFAULT_SPE_EV, np.uint8)
    return Battle(team=Team(**team), active=Active(**active), side=Side(**group("side")),
                  **group("battle"))


def nbytes(state: Battle) -> int:
    """Bytes of all leaves (per battle when unbatched)."""
    return int(sum(np.asarray(x).nbytes for x in jax.tree_util.tree_leaves(state)))


def to_jax(state: Battle) -> Battle:
    return jax.tree_util.tree_map(jnp.asarray, state)


def to_numpy(state: Battle) -> Battle:
    return jax.tree_util.tree_map(np.asarray, state)


def stack(states: list[Battle]) -> Battle:
    """Battles stacked along a new leading axis (numpy)."""
    return jax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *states)


def index(state: Battle, i: int) -> Battle:
    """Battle ``i`` of a stacked batch."""
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[i], state)


def check_dtypes(state: Battle, batch: tuple[int, ...] = ()) -> None:
    """Raise ValueError unless every leaf has the layout's dtype and shape (after ``batch``)."""
    groups = {"team": state.team, "active": state.active, "side": state.side, "battle": state}
    for name, obj in groups.items():
        for k, (dtype, shape) in LAYOUT[name].items():
            x = getattr(obj, k)
            want = batch + _LEAD[name] + shape
            if np.dtype(x.dtype) != np.dtype(dtype) or tuple(x.shape) != want:
                raise ValueError(f"state.{name}.{k}: {x.dtype}{tuple(x.shape)}, layout "
                                 f"{np.dtype(dtype)}{want}")
