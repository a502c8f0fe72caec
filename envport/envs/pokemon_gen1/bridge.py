"""Showdown's battle state <-> the JAX state (:mod:`state`), and the comparable view of both.

* :func:`from_showdown` reads ``battle.toJSON()`` (the worker's ``export``; ``sim/state.ts``) into
  a :class:`~envport.envs.pokemon_gen1.state.Battle` of numpy arrays (``state.to_jax`` for JAX).
* :func:`comparable_from_showdown` reads the same JSON straight into a plain nested dict of the
  fields L3 compares (HP, status and counters, stages, stats, volatiles with their counters, PP,
  actives, positions, the side's remembered moves, LCG state, turn, winner).
* :func:`comparable` decodes a JAX state into that same dict. A state is faithful when
  ``comparable(from_showdown(j)) == comparable_from_showdown(j)``; :func:`differences` lists
  where two such dicts differ.

Anything in the JSON this layout cannot hold raises ValueError rather than being dropped: an
unknown volatile or volatile field, a value outside its dtype, a bench Pokemon with volatiles or
stages, an ActiveMove with changed type or power in ``lastMove`` (except runMove's 'nomove'
Fissure, read as the state's ``nomove`` id).

``toJSON`` layout used here (0.11.11): ``sides[i].pokemon`` is in Showdown's current order
(position), ``sides[i].team`` the digits ``position + 1`` of each original team member;
references are strings ``[Pokemon:p1a]`` (side, position letter), ``[Species:x]``,
``[Move:x]``/``[DataMove:x]``; ActiveMoves are objects with their ``move`` reference.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

STORED = T.STORED_STAT_NAMES
BOOSTS = T.BOOST_NAMES
POSITIONS = "abcdefghijklmnopqrstuvwx"

# Effect-state keys every volatile may carry that are bookkeeping, not battle state.
_BOOKKEEPING = {"id", "name", "target", "effectOrder", "source", "sourceSlot", "sourceEffect"}

# Per volatile: JSON field -> (Active field or None for a reference to check, kind, default).
# kind: "int", "bool", "move" (id string, or an ActiveMove/Move reference), "foe" (a reference
# that must be the foe's active Pokemon), "const:<value>".
VOLATILE_FIELDS: dict[str, dict[str, tuple[str | None, str, Any]]] = {
    "confusion": {"time": ("confusion_time", "int", None)},
    "substitute": {"hp": ("substitute_hp", "int", None)},
    "partiallytrapped": {"duration": ("trapped_duration", "int", None),
                         "sourceEffect": ("trapped_move", "move", None),
                         "maybeLocked": ("trapped_maybe_locked", "bool", False)},
    "partialtrappinglock": {"duration": ("lock_duration", "int", None),
                            "totalDuration": ("lock_total", "int", None),
                            "damage": ("lock_damage", "int", None),
                            "move": ("lock_move", "move", None),
                            "locked": (None, "foe", None)},
    "fakepartiallytrapped": {"duration": ("fake_trapped_duration", "int", None),
                             "counterpart": (None, "foe", None)},
    "mustrecharge": {},
    "lockedmove": {"time": ("locked_time", "int", None),
                   "accuracy": ("locked_accuracy", "int", None),
                   "move": ("locked_move", "move", None)},
    "twoturnmove": {"move": ("twoturn_move", "move", None),
                    "sourceEffect": ("twoturn_source", "move", "")},
    "invulnerability": {},
    "reflect": {},
    "lightscreen": {},
    "focusenergy": {},
    "leechseed": {},
    "disable": {"time": ("disable_time", "int", None), "slotIndex": ("disable_slot", "int", None),
                "move": ("disable_move", "move", None)},
    "rage": {"accuracy": ("rage_accuracy", "int", None), "move": (None, "const:rage", None)},
    "bide": {"time": ("bide_time", "int", None), "damage": ("bide_damage", "int", None)},
    "flinch": {"duration": ("flinch_duration", "int", None)},
    "mist": {},
    "minimize": {},
    "defensecurl": {},
    "residualdmg": {"counter": ("toxic_counter", "int", None)},
}
if tuple(VOLATILE_FIELDS) != S.VOLATILES:
    raise AssertionError("bridge.VOLATILE_FIELDS and state.VOLATILES list different volatiles")

# Volatile fields whose JSON value is kept as read (the rest are bookkeeping): sourceEffect is
# state only where VOLATILE_FIELDS names it.
_SOURCE_EFFECT_STATE = {v for v, f in VOLATILE_FIELDS.items() if "sourceEffect" in f}

_REF = re.compile(r"^\[(\w+)(?::(.*))?\]$")


def to_id(text: str) -> str:
    """Showdown's ``toID``: lower case, letters and digits only."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _ref(value: Any, kind: str) -> str | None:
    if not isinstance(value, str):
        return None
    m = _REF.match(value)
    return m.group(2) if m and m.group(1) == kind else None


def _pokemon_ref(value: Any) -> tuple[str, int]:
    ref = _ref(value, "Pokemon")
    if ref is None or len(ref) != 3:
        raise ValueError(f"not a Pokemon reference: {value!r}")
    return ref[:2], POSITIONS.index(ref[2])


_OVERRIDES = ("type", "basePower", "category", "accuracy", "priority", "id")


def move_id_of(value: Any) -> str:
    """A move as toJSON writes it: ``None``/'' -> '', an id string, ``[Move:x]``,
    ``[DataMove:x]``, or an ActiveMove object (its ``move`` reference)."""
    if value is None or value == "":
        return ""
    if isinstance(value, dict):
        changed = [k for k in _OVERRIDES if k in value]
        if changed and move_id_of(value.get("move")) == "fissure" and {
                k: value[k] for k in changed} == T.NOMOVE_ACTIVE_MOVE:
            # mods/gen1/scripts.ts runMove's 'nomove' ActiveMove (Fissure with 102 power, ???
            # type, Special, 81/256 accuracy): the state's 'nomove' id (tables.NOMOVE)
            return "nomove"
        if changed:
            raise ValueError(f"an ActiveMove with changed {changed} ({value}) cannot be held")
        return move_id_of(value.get("move"))
    if isinstance(value, str):
        for kind in ("Move", "DataMove"):
            ref = _ref(value, kind)
            if ref is not None:
                return ref
        if value.startswith("["):
            raise ValueError(f"not a move: {value!r}")
        return value
    raise ValueError(f"not a move: {value!r}")


def _move_code(name: str, what: str) -> int:
    if name not in S.MOVE_ID:
        raise ValueError(f"{what}: unknown move {name!r}")
    return S.MOVE_ID[name]


def _fits(value: Any, dtype: Any, what: str) -> Any:
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is not None and not (info.min <= int(value) <= info.max):
        raise ValueError(f"{what} = {value} does not fit {np.dtype(dtype)}")
    return value


# ---- toJSON -> the comparable dict (directly) ---------------------------------------------

def _team_order(side: Mapping[str, Any]) -> list[int]:
    """Position (index into side.pokemon) of each original team member."""
    team = side["team"]
    digits = team.split(",") if len(team) > 9 else list(team)
    return [int(d) - 1 for d in digits]


def _level(p: Mapping[str, Any]) -> int:
    s = p["set"]
    return int(s.get("adjustLevel") or s.get("level") or 100)


def _volatiles_view(p: Mapping[str, Any], side_id: str, foe_id: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for name, data in p["volatiles"].items():
        if name not in VOLATILE_FIELDS:
            raise ValueError(f"{side_id} {p['set']['species']}: volatile {name!r} is not in the "
                             f"state layout ({data})")
        spec = VOLATILE_FIELDS[name]
        extra = set(data) - _BOOKKEEPING - set(spec)
        if extra:
            raise ValueError(f"{side_id} {name}: fields {sorted(extra)} are not in the layout "
                             f"({data})")
        fields: dict[str, Any] = {}
        for key, (_, kind, default) in spec.items():
            if key not in data:
                if default is None:
                    raise ValueError(f"{side_id} {name}: field {key!r} missing ({data})")
                value = default
            else:
                value = data[key]
            if kind == "foe":
                # the foe's active when the volatile came (the state lets the foe's active
                # stand for it); after that Pokemon left the field (a turn cut short by a
                # faint), endTurn's Gen 1 clean-up ends the volatile, as it does for a foe's
                # active without the partner volatile
                ref_side, _ = _pokemon_ref(value)
                if ref_side != foe_id:
                    raise ValueError(f"{side_id} {name}.{key} = {value!r}, not a foe")
                continue
            if kind.startswith("const:"):
                if value != kind[6:]:
                    raise ValueError(f"{side_id} {name}.{key} = {value!r}, expected {kind[6:]}")
                continue
            if kind == "move":
                value = move_id_of(value)
            elif kind == "bool":
                value = bool(value)
            elif not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{side_id} {name}.{key} = {value!r} is not an integer")
            fields[key] = value
        out[name] = fields
    return out


def _status_source_is_ally(p: Mapping[str, Any], side_id: str) -> bool:
    source = p["statusState"].get("source")
    return bool(source) and _pokemon_ref(source)[0] == side_id


def _move_slots(slots: list[Mapping[str, Any]]) -> list[list]:
    return [[m["id"], m["pp"], m["maxpp"]] for m in slots]


def comparable_from_showdown(battle: Mapping[str, Any]) -> dict[str, Any]:
    """The comparable view of a ``toJSON`` (see the module docstring)."""
    sides = []
    names = [s["name"] for s in battle["sides"]]
    for s_index, side in enumerate(battle["sides"]):
        side_id = side["id"]
        foe_id = battle["sides"][1 - s_index]["id"]
        order = _team_order(side)
        mons = [side["pokemon"][pos] for pos in order]
        active_ref = side["active"][0] if side["active"] else None
        active_index = -1
        if active_ref is not None:
            ref_side, position = _pokemon_ref(active_ref)
            if ref_side != side_id:
                raise ValueError(f"{side_id}.active is {active_ref}")
            active_index = order.index(position)
        pokemon = []
        for j, p in enumerate(mons):
            if p["position"] != order[j]:
                raise ValueError(f"{side_id} team member {j}: position {p['position']} but "
                                 f"team string says {order[j]}")
            status = p["status"] or ""
            state = p["statusState"]
            by_ally = _status_source_is_ally(p, side_id)
            pokemon.append({
                "species": to_id(p["set"]["species"]),
                "level": _level(p),
                "hp": p["hp"], "maxhp": p["maxhp"],
                "stats": {k: p["baseStoredStats"][k] for k in STORED},
                "modified": {k: p["modifiedStats"][k] for k in STORED},
                "types": list(p["types"]),
                "moves": _move_slots(p["moveSlots"]),
                "status": status,
                "sleep": [state["time"], state["startTime"]] if status == "slp" else None,
                "status_by_ally": by_ally if status else False,
                "fainted": bool(p["fainted"]),
                "position": p["position"],
            })
            if j != active_index:
                _check_bench(p, side_id, j)
        active = None
        if active_index >= 0:
            p = mons[active_index]
            base = p.get("baseMoveSlots")
            slots = p["moveSlots"]
            # per slot: None where baseMoveSlots[i] is moveSlots[i] (the identity
            # deserializePokemon restores: same id, not virtual), else the base slot, or
            # ["", 0, 0] where the base has no slot i (Transform into a foe with more moves)
            base_view: list[Any] = [None] * len(slots)
            if base:
                base_view = [["", 0, 0]] * max(len(base), len(slots))
                for i, b in enumerate(base):
                    shared = i < len(slots) and b["id"] == slots[i]["id"] and not slots[i].get(
                        "virtual")
                    base_view[i] = None if shared else [b["id"], b["pp"], b["maxpp"]]
            active = {
                "species": _ref(p["species"], "Species"),
                "transformed": bool(p["transformed"]),
                "boosts": {k: p["boosts"][k] for k in BOOSTS},
                "stored": {k: p["storedStats"][k] for k in STORED},
                "last_move": move_id_of(p["lastMove"]),
                "base_moves": base_view,
                "virtual": [bool(m.get("virtual")) for m in slots],
                "volatiles": _volatiles_view(p, side_id, foe_id),
            }
        sides.append({
            "pokemon_left": side["pokemonLeft"],
            "active": active_index,
            "last_selected_move": side["lastSelectedMove"] or "",
            "last_selected_slot": side["lastSelectedMoveSlot"],
            "last_enemy_selected_move": side["lastEnemySelectedMove"] or "",
            "last_move": move_id_of(side["lastMove"]),
            "last_enemy_move": move_id_of(side["lastEnemyMove"]),
            "pokemon": pokemon,
            "active_pokemon": active,
        })
    winner = None
    if battle["ended"]:
        winner = "tie" if not battle["winner"] else battle["sides"][names.index(
            battle["winner"])]["id"]
    return {"turn": battle["turn"], "ended": bool(battle["ended"]), "winner": winner,
            "prng": _seed_view(str(battle["prng"])),
            "last_damage": battle["lastDamage"], "sides": sides}


def _seed_view(seed: str) -> list[int] | str:
    """``battle.prng`` of an export: four numbers (Gen 5), or the ``"sodium,HEX"`` string."""
    return seed if seed.startswith("sodium,") else [int(w) for w in seed.split(",")]


def _check_bench(p: Mapping[str, Any], side_id: str, j: int) -> None:
    """What the layout keeps only for the active Pokemon must be at rest on the others."""
    problems = []
    if p["volatiles"]:
        problems.append(f"volatiles {sorted(p['volatiles'])}")
    if any(p["boosts"][k] for k in BOOSTS):
        problems.append(f"boosts {p['boosts']}")
    if p["transformed"]:
        problems.append("transformed")
    if any(p["storedStats"][k] != p["baseStoredStats"][k] for k in STORED):
        problems.append("storedStats != baseStoredStats")
    if p["lastMove"] is not None:
        problems.append(f"lastMove {p['lastMove']}")
    if p.get("baseMoveSlots"):
        problems.append("separate baseMoveSlots")
    if _ref(p["species"], "Species") != to_id(p["set"]["species"]):
        problems.append(f"species {p['species']}")
    if problems:
        raise ValueError(f"{side_id} team member {j} is not active but has {', '.join(problems)}")


# ---- toJSON -> the JAX state -------------------------------------------------------------------

def _type_codes(names: list[str], what: str) -> list[int]:
    if not 1 <= len(names) <= 2:
        raise ValueError(f"{what}: {len(names)} types")
    return [T.TYPE_ID[t] for t in names] + [T.TYPE_NONE] * (2 - len(names))


def _slots(slots: list[list], what: str) -> tuple[list[int], list[int], list[int]]:
    if len(slots) > S.N_MOVE_SLOTS:
        raise ValueError(f"{what}: {len(slots)} move slots")
    pad = S.N_MOVE_SLOTS - len(slots)
    ids = [_move_code(m[0], what) for m in slots] + [0] * pad
    pp = [_fits(m[1], np.uint8, f"{what} pp") for m in slots] + [0] * pad
    maxpp = [_fits(m[2], np.uint8, f"{what} maxpp") for m in slots] + [0] * pad
    return ids, pp, maxpp


def from_showdown(battle: Mapping[str, Any]) -> S.Battle:
    """The JAX state (numpy leaves) of a ``toJSON``; raises ValueError on what it cannot hold."""
    view = comparable_from_showdown(battle)
    out = S.empty(np)
    team, active, side = out.team, out.active, out.side
    for s, sv in enumerate(view["sides"]):
        if len(sv["pokemon"]) > S.TEAM_SIZE:
            raise ValueError(f"side {s} has {len(sv['pokemon'])} Pokemon")
        side.pokemon_left[s] = sv["pokemon_left"]
        side.last_selected_move[s] = _move_code(sv["last_selected_move"], "lastSelectedMove")
        side.last_selected_slot[s] = _fits(sv["last_selected_slot"], np.int8,
                                           "lastSelectedMoveSlot")
        side.last_enemy_selected_move[s] = _move_code(sv["last_enemy_selected_move"],
                                                      "lastEnemySelectedMove")
        side.last_move[s] = _move_code(sv["last_move"], "side.lastMove")
        side.last_enemy_move[s] = _move_code(sv["last_enemy_move"], "side.lastEnemyMove")
        for j, p in enumerate(sv["pokemon"]):
            what = f"side {s} Pokemon {j}"
            team.present[s, j] = True
            team.species[s, j] = T.SPECIES_IDS[p["species"]]
            team.level[s, j] = _fits(p["level"], np.uint8, f"{what} level")
            team.hp[s, j] = _fits(p["hp"], np.int16, f"{what} hp")
            team.maxhp[s, j] = _fits(p["maxhp"], np.int16, f"{what} maxhp")
            team.stats[s, j] = [_fits(p["stats"][k], np.int16, f"{what} {k}") for k in STORED]
            team.modified[s, j] = [_fits(p["modified"][k], np.int16, f"{what} {k}")
                                   for k in STORED]
            team.types[s, j] = _type_codes(p["types"], what)
            team.moves[s, j], team.pp[s, j], team.maxpp[s, j] = _slots(p["moves"], what)
            team.status[s, j] = T.STATUS_CODES[p["status"]]
            if p["sleep"] is not None:
                team.sleep_turns[s, j] = _fits(p["sleep"][0], np.int8, f"{what} sleep time")
                team.sleep_start[s, j] = _fits(p["sleep"][1], np.int8, f"{what} sleep start")
            team.fainted[s, j] = p["fainted"]
            team.position[s, j] = p["position"]
        raw = battle["sides"][s]
        for j, pos in enumerate(_team_order(raw)):
            # statusState.source also without a status (the view shows it only with one):
            # setStatus('') of a cure keeps a source, and 'fnt' later shows it
            team.status_by_ally[s, j] = _status_source_is_ally(raw["pokemon"][pos], raw["id"])
            # the set's Speed IV/EV as the Pokemon constructor normalizes them (not in the view:
            # constant for the battle; Transform's cached speed is computed from them)
            pset = raw["pokemon"][pos]["set"]
            iv = (pset.get("ivs") or {}).get("spe", 31)
            ev = (pset.get("evs") or {}).get("spe", 0)
            team.spe_iv[s, j] = min(max(int(iv), 0), 31) & 30
            team.spe_ev[s, j] = min(max(int(ev), 0), 255)
        active.slot[s] = sv["active"]
        a = sv["active_pokemon"]
        if a is None:
            continue
        what = f"side {s} active"
        active.species[s] = T.SPECIES_IDS[a["species"]]
        active.transformed[s] = a["transformed"]
        active.boosts[s] = [a["boosts"][k] for k in BOOSTS]
        active.stored[s] = [_fits(a["stored"][k], np.int16, f"{what} {k}") for k in STORED]
        active.last_move[s] = _move_code(a["last_move"], f"{what} lastMove")
        for i, b in enumerate(a["base_moves"]):
            if b is not None:
                active.base_separate[s, i] = True
                active.base_moves[s, i] = _move_code(b[0], f"{what} base move")
                active.base_pp[s, i] = _fits(b[1], np.uint8, f"{what} base pp")
                active.base_maxpp[s, i] = _fits(b[2], np.uint8, f"{what} base maxpp")
        active.slot_virtual[s, : len(a["virtual"])] = a["virtual"]
        bits = 0
        for name, fields in a["volatiles"].items():
            bits |= S.VOLATILE_BIT[name]
            for key, value in fields.items():
                leaf, kind, _ = VOLATILE_FIELDS[name][key]
                assert leaf is not None
                arr = getattr(active, leaf)
                code = _move_code(value, f"{what} {name}.{key}") if kind == "move" else value
                arr[s] = _fits(code, arr.dtype, f"{what} {name}.{key}")
        active.volatiles[s] = bits
    # a SodiumRNG battle's state is 8 words where a Gen 5 one has 2 (prng.state_of_seed)
    out = dataclasses.replace(out, prng=prng.state_of_seed(view["prng"]))
    out.turn[...] = _fits(view["turn"], np.int16, "turn")
    out.ended[...] = view["ended"]
    out.winner[...] = {None: S.WINNER_NONE, "p1": S.WINNER_P1, "p2": S.WINNER_P2,
                       "tie": S.WINNER_TIE}[view["winner"]]
    out.last_damage[...] = _fits(view["last_damage"], np.int32, "lastDamage")
    return out


# ---- the JAX state -> the comparable dict ------------------------------------------------------

def _species_name(num: int) -> str:
    return T.SPECIES_NAMES[int(num)]


def _type_names(codes: Any) -> list[str]:
    return [T.TYPES[int(c)] for c in codes if int(c) != T.TYPE_NONE]


def comparable(state: S.Battle) -> dict[str, Any]:
    """The comparable view of one (unbatched) JAX state."""
    st = S.to_numpy(state)
    team, active, side = st.team, st.active, st.side
    sides = []
    for s in range(S.N_SIDES):
        pokemon = []
        for j in range(S.TEAM_SIZE):
            if not team.present[s, j]:
                continue
            n_moves = int(np.count_nonzero(team.moves[s, j]))
            status = T.STATUS_NAMES[int(team.status[s, j])]
            pokemon.append({
                "species": _species_name(team.species[s, j]),
                "level": int(team.level[s, j]),
                "hp": int(team.hp[s, j]), "maxhp": int(team.maxhp[s, j]),
                "stats": dict(zip(STORED, team.stats[s, j].tolist(), strict=True)),
                "modified": dict(zip(STORED, team.modified[s, j].tolist(), strict=True)),
                "types": _type_names(team.types[s, j]),
                "moves": [[S.MOVE_NAME[int(team.moves[s, j, i])], int(team.pp[s, j, i]),
                           int(team.maxpp[s, j, i])] for i in range(n_moves)],
                "status": status,
                "sleep": ([int(team.sleep_turns[s, j]), int(team.sleep_start[s, j])]
                          if status == "slp" else None),
                # the field keeps statusState.source's side also while there is no status (a
                # cure leaves the Pokemon itself as source: 'fnt' later shows it); the view,
                # like Showdown's, shows it only with a status
                "status_by_ally": bool(team.status_by_ally[s, j]) and status != "",
                "fainted": bool(team.fainted[s, j]),
                "position": int(team.position[s, j]),
            })
        slot = int(active.slot[s])
        active_view = None
        if slot >= 0:
            n_moves = int(np.count_nonzero(team.moves[s, slot]))
            volatiles: dict[str, dict] = {}
            for name in S.VOLATILES:
                if not int(active.volatiles[s]) & S.VOLATILE_BIT[name]:
                    continue
                fields: dict[str, Any] = {}
                for key, (leaf, kind, _) in VOLATILE_FIELDS[name].items():
                    if leaf is None:
                        continue
                    value = getattr(active, leaf)[s]
                    fields[key] = (S.MOVE_NAME[int(value)] if kind == "move"
                                   else bool(value) if kind == "bool" else int(value))
                volatiles[name] = fields
            active_view = {
                "species": _species_name(active.species[s]),
                "transformed": bool(active.transformed[s]),
                "boosts": dict(zip(BOOSTS, active.boosts[s].tolist(), strict=True)),
                "stored": dict(zip(STORED, active.stored[s].tolist(), strict=True)),
                "last_move": S.MOVE_NAME[int(active.last_move[s])],
                "base_moves": [[S.MOVE_NAME[int(active.base_moves[s, i])],
                                int(active.base_pp[s, i]), int(active.base_maxpp[s, i])]
                               if active.base_separate[s, i] else None
                               for i in range(max([n_moves] + [
                                   i + 1 for i in range(S.N_MOVE_SLOTS)
                                   if active.base_separate[s, i] and active.base_moves[s, i]]))],
                "virtual": [bool(v) for v in active.slot_virtual[s, :n_moves]],
                "volatiles": volatiles,
            }
        sides.append({
            "pokemon_left": int(side.pokemon_left[s]),
            "active": slot,
            "last_selected_move": S.MOVE_NAME[int(side.last_selected_move[s])],
            "last_selected_slot": int(side.last_selected_slot[s]),
            "last_enemy_selected_move": S.MOVE_NAME[int(side.last_enemy_selected_move[s])],
            "last_move": S.MOVE_NAME[int(side.last_move[s])],
            "last_enemy_move": S.MOVE_NAME[int(side.last_enemy_move[s])],
            "pokemon": pokemon,
            "active_pokemon": active_view,
        })
    return {"turn": int(st.turn), "ended": bool(st.ended),
            "winner": {S.WINNER_NONE: None, S.WINNER_P1: "p1", S.WINNER_P2: "p2",
                       S.WINNER_TIE: "tie"}[int(st.winner)],
            "prng": prng.seed_of_state(st.prng),
            "last_damage": int(st.last_damage), "sides": sides}


def differences(a: Any, b: Any, path: str = "", limit: int = 20) -> list[str]:
    """Where two comparable dicts differ (``path: a != b``), at most ``limit`` entries."""
    out: list[str] = []

    def walk(x: Any, y: Any, p: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y), key=str):
                if k not in x or k not in y:
                    out.append(f"{p}.{k}: {x.get(k, 'missing')!r} != {y.get(k, 'missing')!r}")
                else:
                    walk(x[k], y[k], f"{p}.{k}")
        elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (u, v) in enumerate(zip(x, y, strict=True)):
                walk(u, v, f"{p}[{i}]")
        elif x != y or type(x) is not type(y):
            out.append(f"{p}: {x!r} != {y!r}")

    walk(a, b, path)
    return out


# ---- the worker's compact state: the same fields from Showdown's live objects -------------------

def compact_differences(view: Mapping[str, Any], compact: Mapping[str, Any]) -> list[str]:
    """Where a comparable view (of an export) disagrees with the worker's compact ``state`` of the
    same battle, on the fields both have: a check of the export reading against Showdown's live
    objects (``reference/worker.js opState``)."""
    out: list[str] = []

    def eq(path: str, mine: Any, theirs: Any) -> None:
        if mine != theirs:
            out.append(f"{path}: export {mine!r} != state {theirs!r}")

    eq("turn", view["turn"], compact["turn"])
    eq("ended", view["ended"], compact["ended"])
    eq("winner", view["winner"], compact["winner"])
    eq("prng", view["prng"], compact["prng"])
    eq("last_damage", view["last_damage"], compact["last_damage"])
    for sv, sc in zip(view["sides"], compact["sides"], strict=True):
        sid = sc["id"]
        eq(f"{sid}.active", sv["active"], sc["active"])
        eq(f"{sid}.pokemon_left", sv["pokemon_left"], sc["pokemon_left"])
        for j, (p, c) in enumerate(zip(sv["pokemon"], sc["pokemon"], strict=True)):
            w = f"{sid}[{j}]"
            eq(f"{w}.species", p["species"] if j != sv["active"] or not sv["active_pokemon"]
               else sv["active_pokemon"]["species"], c["species"])
            eq(f"{w}.level", p["level"], c["level"])
            eq(f"{w}.hp", p["hp"], c["hp"])
            eq(f"{w}.maxhp", p["maxhp"], c["maxhp"])
            eq(f"{w}.status", p["status"], c["status"])
            if p["status"] == "slp":
                eq(f"{w}.sleep", p["sleep"], [c["status_state"]["time"],
                                              c["status_state"]["startTime"]])
            eq(f"{w}.fainted", p["fainted"], c["fainted"])
            eq(f"{w}.position", p["position"], c["position"])
            eq(f"{w}.modified", p["modified"], c["modified_stats"])
            eq(f"{w}.types", p["types"], c["types"])
            eq(f"{w}.moves", p["moves"], [[m["id"], m["pp"], m["maxpp"]] for m in c["moves"]])
            a = sv["active_pokemon"] if j == sv["active"] else None
            eq(f"{w}.boosts", a["boosts"] if a else dict.fromkeys(BOOSTS, 0), c["boosts"])
            eq(f"{w}.stored", a["stored"] if a else p["stats"], c["stored_stats"])
            eq(f"{w}.transformed", a["transformed"] if a else False, c["transformed"])
            # the live lastMove of a 'nomove' use is Fissure's ActiveMove (its id 'fissure')
            last = (a["last_move"] if a else "") or None
            eq(f"{w}.last_move", "fissure" if last == "nomove" else last, c["last_move"])
            vol = a["volatiles"] if a else {}
            eq(f"{w}.volatiles", sorted(vol), sorted(c["volatiles"]))
            for name, fields in vol.items():
                for key, value in fields.items():
                    theirs = c["volatiles"].get(name, {}).get(key, "missing")
                    if VOLATILE_FIELDS[name][key][1] == "move":
                        theirs = "" if theirs in ("missing", None) else move_id_of(theirs)
                    elif VOLATILE_FIELDS[name][key][1] == "bool" and theirs == "missing":
                        theirs = False
                    eq(f"{w}.volatiles.{name}.{key}", value, theirs)
    return out
