"""The game state (reference ``state.py`` as ``encode.py`` lays it out): one pytree whose
fields are the reference's ``get_state()`` arrays, same names, shapes and dtypes (a leading
axis of 2 is the player; Bench slots 1..3 beside the Active in slot 0), plus ``rng``."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np

from envport.core.api import pytree_dataclass

ZONE, STACK, SLOTS, MAX_TYPES, MAX_PENDING, N_ENERGY, N_COND, N_EFFECTS = 20, 3, 4, 3, 4, 8, 5, 5
CONDITIONS = ("poisoned", "burned", "asleep", "paralyzed", "confused")  # ``conditions`` order
C_POISONED, C_BURNED, C_ASLEEP, C_PARALYZED, C_CONFUSED = range(N_COND)
STAGES = ("setup", "main", "checkup", "next_turn", "over")
S_SETUP, S_MAIN, S_CHECKUP, S_NEXT_TURN, S_OVER = range(5)
DECISIONS = ("setup", "promote", "new_active", "retreat_energy", "attack_target",
             "own_bench_damage", "zone_attach")
(D_SETUP, D_PROMOTE, D_NEW_ACTIVE, D_RETREAT_ENERGY, D_ATTACK_TARGET, D_OWN_BENCH_DAMAGE,
 D_ZONE_ATTACH) = range(len(DECISIONS))
END_REASONS = ("", "points", "no Pokémon in play", "both players won at once", "turn limit")
R_NONE, R_POINTS, R_NO_POKEMON, R_BOTH, R_TURN_LIMIT = range(5)
NOT_OVER, DRAW = -2, -1

# name -> (shape, dtype, fill of a blank state)
FIELDS: dict[str, tuple[tuple[int, ...], Any, int]] = {
    "deck": ((2, ZONE), np.int16, 0), "hand": ((2, ZONE), np.int16, 0),
    "discard": ((2, ZONE), np.int16, 0), "stack": ((2, SLOTS, STACK), np.int16, 0),
    "energy": ((2, SLOTS, N_ENERGY), np.int8, 0), "damage": ((2, SLOTS), np.int16, 0),
    "entered_turn": ((2, SLOTS), np.int16, 0), "evolved_turn": ((2, SLOTS), np.int16, 0),
    "conditions": ((2, SLOTS, N_COND), np.bool_, 0),
    "effect_until": ((2, SLOTS, N_EFFECTS), np.int16, -1),
    "effect_amount": ((2, SLOTS, N_EFFECTS), np.int16, 0),
    "energy_types": ((2, MAX_TYPES), np.int8, -1), "energy_current": ((2,), np.int8, -1),
    "energy_next": ((2,), np.int8, -1), "points": ((2,), np.int8, 0),
    "x_speed": ((2,), np.int8, 0), "attached_energy": ((2,), np.bool_, 0),
    "played_supporter": ((2,), np.bool_, 0), "retreated": ((2,), np.bool_, 0),
    "giovanni": ((2,), np.bool_, 0), "blaine": ((2,), np.bool_, 0),
    "supporters_blocked_until": ((2,), np.int16, -1),
    "revealed_hand": ((2, ZONE), np.int16, 0), "revealed_hand_shown": ((2,), np.bool_, 0),
    "revealed_top": ((2, 3), np.int16, 0), "revealed_top_shown": ((2,), np.bool_, 0),
    "first": ((), np.int8, 0), "current": ((), np.int8, 0), "stage": ((), np.int8, 0),
    "winner": ((), np.int8, NOT_OVER), "end_reason": ((), np.int8, 0),
    "turn": ((), np.int16, 0), "attack_open": ((), np.bool_, 0),
    "pending_kind": ((MAX_PENDING,), np.int8, -1),
    "pending_player": ((MAX_PENDING,), np.int8, -1),
    "pending_left": ((MAX_PENDING,), np.int8, -1),
    "pending_energy": ((MAX_PENDING,), np.int8, -1),
    "pending_bench": ((MAX_PENDING,), np.int8, -1),
    "pending_amount": ((MAX_PENDING,), np.int16, 0),
    "pending_options": ((MAX_PENDING, SLOTS), np.bool_, 0),
    "pending_has_options": ((MAX_PENDING,), np.bool_, 0),
    "rng": ((2,), np.uint32, 0),
}


@pytree_dataclass
class State:
    deck: Any
    hand: Any
    discard: Any
    stack: Any
    energy: Any
    damage: Any
    entered_turn: Any
    evolved_turn: Any
    conditions: Any
    effect_until: Any
    effect_amount: Any
    energy_types: Any
    energy_current: Any
    energy_next: Any
    points: Any
    x_speed: Any
    attached_energy: Any
    played_supporter: Any
    retreated: Any
    giovanni: Any
    blaine: Any
    supporters_blocked_until: Any
    revealed_hand: Any
    revealed_hand_shown: Any
    revealed_top: Any
    revealed_top_shown: Any
    first: Any
    current: Any
    stage: Any
    winner: Any
    end_reason: Any
    turn: Any
    attack_open: Any
    pending_kind: Any
    pending_player: Any
    pending_left: Any
    pending_energy: Any
    pending_bench: Any
    pending_amount: Any
    pending_options: Any
    pending_has_options: Any
    rng: Any

    def replace(self, **changes: Any) -> State:
        """A copy with ``changes``, each cast to its field's dtype (arithmetic in int32 is
        stored back in the reference's width)."""
        return dataclasses.replace(self, **{k: jnp.asarray(v, FIELDS[k][1])
                                            for k, v in changes.items()})


def blank() -> State:
    return State(**{k: jnp.full(shape, fill, dtype) for k, (shape, dtype, fill) in FIELDS.items()})


def from_arrays(arrays: dict[str, Any]) -> State:
    return State(**{k: jnp.asarray(arrays[k], FIELDS[k][1]) for k in FIELDS})


def to_arrays(state: State) -> dict[str, np.ndarray]:
    return {k: np.asarray(getattr(state, k)).astype(FIELDS[k][1]) for k in FIELDS}
