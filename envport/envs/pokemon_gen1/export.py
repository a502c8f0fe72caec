"""The JAX battle state -> a Showdown ``toJSON`` that ``Battle.fromJSON`` accepts (the way back
of :mod:`bridge`).

:func:`to_showdown` writes every field of a :class:`state.Battle` (or of the verifier's flat
state, :func:`flat_to_showdown`) over a real export of the **same battle** (the template: the
same two teams, any turn). What the layout holds is overwritten: HP, status and its counters,
fainted, stats (stored, modified), types, move slots (PP, virtual, Disable's flag), Showdown's
current order (``side.pokemon``, ``side.team``, every ``[Pokemon:pXy]`` reference renamed), the
active's species, stages, storedStats, lastMove, Transform/Mimic's base move slots and every
volatile with its counters, the side's remembered moves, pokemon left, the LCG words, turn,
``ended``/``winner`` and ``lastDamage``. What it does not hold is the template's (the log, the
effect orders of unchanged effects, ``attackedBy``...) or derived the way Showdown derives it:
the cached ``speed`` of an active whose Speed changed (``getActionSpeed``: ``modifiedStats.spe``
in Gen 1), the request state and switch flags of a forced switch, and the requests themselves,
which ``Battle.fromJSON`` rebuilds (``getRequests``) when the export carries none.

Raises ValueError when the template is another battle (other sets) or the state cannot be
written (an active Pokemon that is not in Showdown's first position, a team of another size).
``tests/envs/pokemon_gen1/test_pokemon_export.py``: Showdown JSON -> JAX -> JSON (over an
earlier turn's export) -> ``fromJSON`` -> ``toJSON`` -> JAX equal, requests included.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from envport.envs.pokemon_gen1 import bridge as B
from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

_POKEMON_REF = re.compile(r"^\[Pokemon:(p[12])([a-x])\]$")
SIDE_IDS = ("p1", "p2")


def _ref(side: str, position: int) -> str:
    return f"[Pokemon:{side}{B.POSITIONS[position]}]"


def _rename_refs(obj: Any, renames: Mapping[str, Mapping[int, int]]) -> Any:
    """Every ``[Pokemon:pXy]`` reference with its position renamed (``renames[side][old]``)."""
    if isinstance(obj, str):
        m = _POKEMON_REF.match(obj)
        if m is None:
            return obj
        old = B.POSITIONS.index(m.group(2))
        return _ref(m.group(1), renames.get(m.group(1), {}).get(old, old))
    if isinstance(obj, list):
        return [_rename_refs(x, renames) for x in obj]
    if isinstance(obj, dict):
        return {k: _rename_refs(v, renames) for k, v in obj.items()}
    return obj


def _move_name(code: int) -> str:
    return S.MOVE_NAME[int(code)]


def _move_value(old: Any, move: str) -> Any:
    """A move reference as Showdown wrote it where it names the same move; else a fresh
    ActiveMove reference (``{hit: 0, move: [Move:x]}``, what ``serializeActiveMove`` writes for
    an unchanged move) or null."""
    if move == "":
        return None
    try:
        if B.move_id_of(old) == move:
            return old
    except ValueError:
        pass
    return {"hit": 0, "move": f"[Move:{move}]"}


def _slot(old: Mapping[str, Any] | None, move: str, pp: int, maxpp: int) -> dict[str, Any]:
    if old is not None and old.get("id") == move:
        out = dict(old)
    else:
        data = T.MOVES[move]
        out = {"move": data["name"], "id": move, "pp": 0, "maxpp": 0,
               "target": data["target"], "disabled": False, "disabledSource": "",
               "used": False}
    out["pp"], out["maxpp"] = int(pp), int(maxpp)
    return out


class _Orders:
    """Showdown's ``effectOrder`` counter: a new effect state takes the next number."""

    def __init__(self, battle: dict[str, Any]):
        self.battle = battle

    def next(self) -> int:
        n = int(self.battle["effectOrder"])
        self.battle["effectOrder"] = n + 1
        return n


def _check_template(b: S.Battle, j: Mapping[str, Any]) -> None:
    for s, side in enumerate(j["sides"]):
        order = B._team_order(side)
        n = int(np.count_nonzero(b.team.present[s]))
        if len(order) != n:
            raise ValueError(f"template side {s} has {len(order)} Pokemon, the state {n}")
        for k, pos in enumerate(order):
            p = side["pokemon"][pos]
            want = (T.SPECIES_NAMES[int(b.team.species[s, k])], int(b.team.level[s, k]),
                    [int(x) for x in b.team.stats[s, k]])
            have = (B.to_id(p["set"]["species"]), B._level(p),
                    [int(p["baseStoredStats"][x]) for x in B.STORED])
            if want != have:
                raise ValueError(f"the template is another battle: side {s} team member {k} is "
                                 f"{have} there, {want} in the state")


def _status_state(old: Mapping[str, Any], old_status: str, status: str, sleep: tuple[int, int],
                  by_ally: bool, own: str, foe: str, orders: _Orders) -> dict[str, Any]:
    if status == old_status and status:
        out = dict(old)
        source = out.get("source")
        if bool(source) and (B._pokemon_ref(source)[0] == own[9:11]) != by_ally:
            out["source"] = own if by_ally else foe
    elif status:
        out = {"id": status, "target": own, "effectOrder": orders.next(),
               "source": own if by_ally else foe}
    else:
        out = {"id": "", "effectOrder": 0}
        if by_ally:  # a cure's setStatus('') keeps a source on this side, which 'fnt' shows
            out["source"] = own
    if status == "slp":
        out["time"], out["startTime"] = sleep
    else:
        out.pop("time", None)
        out.pop("startTime", None)
    return out


# Volatiles the foe puts on a Pokemon: their effect state's source is the foe (Leech Seed's
# residual heals it).
_FROM_FOE = {"confusion", "leechseed", "disable", "partiallytrapped", "flinch"}


def _condition_name(name: str) -> str:
    """The ``name`` of a volatile's effect state: the move's name for the conditions moves
    define (Reflect, Substitute...), the id for those of ``conditions.ts`` (confusion is also a
    move, but its volatile is the condition)."""
    return T.MOVES[name]["name"] if name in T.MOVES and name != "confusion" else name


def _volatiles(b: S.Battle, s: int, old: Mapping[str, Any], own: str, foe: str,
               orders: _Orders) -> dict[str, Any]:
    a = b.active
    bits = int(a.volatiles[s])
    out: dict[str, Any] = {}
    for name in S.VOLATILES:
        if not bits & S.VOLATILE_BIT[name]:
            continue
        if name in old:
            v = dict(old[name])
        else:
            source = foe if name in _FROM_FOE else own
            v = {"id": name, "name": _condition_name(name), "target": own,
                 "effectOrder": orders.next(), "source": source, "sourceSlot": source[9:12],
                 "sourceEffect": ""}
        for key, (leaf, kind, default) in B.VOLATILE_FIELDS[name].items():
            if kind == "foe":
                v[key] = foe
            elif kind.startswith("const:"):
                v[key] = kind[6:]
            else:
                assert leaf is not None
                value = getattr(a, leaf)[s]
                if kind == "int":
                    v[key] = int(value)
                elif kind == "bool":
                    v[key] = bool(value)
                else:
                    move = _move_name(value)
                    if move == "" and default == "":
                        v[key] = ""
                    elif key in old.get(name, {}) and B.move_id_of(old[name][key]) == move:
                        v[key] = old[name][key]
                    else:
                        v[key] = move
        out[name] = v
    return out


def _request_state(b: S.Battle) -> str:
    """``battle.requestState`` between two steps: a forced switch while an active Pokemon lies
    fainted with a replacement left (Gen 1 clears the turn's queue at a faint), else a move."""
    for s in range(S.N_SIDES):
        slot = int(b.active.slot[s])
        bench = [k for k in range(S.TEAM_SIZE) if b.team.present[s, k] and k != slot
                 and not b.team.fainted[s, k]]
        if slot >= 0 and b.team.fainted[s, slot] and bench:
            return "switch"
    return "move"


def to_showdown(battle: S.Battle, template: Mapping[str, Any]) -> dict[str, Any]:
    """A ``toJSON`` of ``battle`` (unbatched, numpy or JAX leaves) written over ``template``
    (an export of the same battle), for ``Battle.fromJSON``; see the module docstring."""
    b = S.to_numpy(battle)
    _check_template(b, template)
    t, a, sd = b.team, b.active, b.side
    orders_old = [B._team_order(side) for side in template["sides"]]
    renames = {side["id"]: {orders_old[s][k]: int(t.position[s, k])
                            for k in range(len(orders_old[s]))}
               for s, side in enumerate(template["sides"])}
    for s, order in enumerate(orders_old):
        new = [int(t.position[s, k]) for k in range(len(order))]
        if sorted(new) != list(range(len(order))):
            raise ValueError(f"side {s}: positions {new} are not an order of the team")
    j: dict[str, Any] = _rename_refs(copy.deepcopy(dict(template)), renames)
    orders = _Orders(j)
    request = "" if bool(b.ended) else _request_state(b)
    same_request = request == template["requestState"]
    for s, side in enumerate(j["sides"]):
        sid, fid = side["id"], j["sides"][1 - s]["id"]
        foe = _ref(fid, 0)
        n = len(orders_old[s])
        members = [side["pokemon"][orders_old[s][k]] for k in range(n)]
        slot = int(a.slot[s])
        if slot >= 0 and int(t.position[s, slot]) != 0:
            raise ValueError(f"side {s}: the active Pokemon {slot} is at position "
                             f"{int(t.position[s, slot])}, not 0")
        for k, p in enumerate(members):
            pos = int(t.position[s, k])
            own = _ref(sid, pos)
            active = k == slot
            was_active = bool(p.get("isActive"))
            p["position"] = pos
            old_status = p["status"] or ""
            status = T.STATUS_NAMES[int(t.status[s, k])]
            p["status"] = status
            p["statusState"] = _status_state(
                p["statusState"], old_status, status,
                (int(t.sleep_turns[s, k]), int(t.sleep_start[s, k])),
                bool(t.status_by_ally[s, k]), own, foe, orders)
            p["hp"] = int(t.hp[s, k])
            p["maxhp"] = int(t.maxhp[s, k])
            p["fainted"] = bool(t.fainted[s, k])
            p["baseStoredStats"] = {**p["baseStoredStats"],
                                    **{x: int(v) for x, v in zip(B.STORED, t.stats[s, k],
                                                                 strict=True)}}
            old_spe = p["modifiedStats"]["spe"]
            p["modifiedStats"] = {x: int(v) for x, v in zip(B.STORED, t.modified[s, k],
                                                            strict=True)}
            p["types"] = [T.TYPES[int(c)] if int(c) != T.TYPE_TYPELESS else "???"
                          for c in t.types[s, k] if int(c) != T.TYPE_NONE]
            n_moves = int(np.count_nonzero(t.moves[s, k]))
            old_slots = p["moveSlots"]
            slots = [_slot(old_slots[i] if i < len(old_slots) else None,
                           _move_name(t.moves[s, k, i]), t.pp[s, k, i], t.maxpp[s, k, i])
                     for i in range(n_moves)]
            if active:
                stored = {x: int(v) for x, v in zip(B.STORED, a.stored[s], strict=True)}
                p["storedStats"] = stored
                p["boosts"] = {x: int(v) for x, v in zip(B.BOOSTS, a.boosts[s], strict=True)}
                p["species"] = f"[Species:{T.SPECIES_NAMES[int(a.species[s])]}]"
                p["transformed"] = bool(a.transformed[s])
                p["lastMove"] = _move_value(p["lastMove"], _move_name(a.last_move[s]))
                p["volatiles"] = _volatiles(b, s, p["volatiles"], own, foe, orders)
                disable = int(a.volatiles[s]) & S.VOLATILE_BIT["disable"]
                for i, m in enumerate(slots):
                    if a.slot_virtual[s, i]:
                        m["virtual"] = True
                    else:
                        m.pop("virtual", None)
                    if request == "move":  # endTurn's DisableMove event marks the slot
                        marked = bool(disable) and i == int(a.disable_slot[s])
                        m["disabled"], m["disabledSource"] = marked, "Disable" if marked else ""
                if request == "move":
                    # endTurn clears these (no Gen 1 pool move traps by TrapPokemon); the
                    # request sets ``trapped`` again for a locked move (getMoveRequestData)
                    p["trapped"] = p["maybeTrapped"] = False
                n_base = max([n_moves] + [i + 1 for i in range(S.N_MOVE_SLOTS)
                                          if a.base_separate[s, i] and a.base_moves[s, i]])
                base = []
                for i in range(n_base):
                    if not a.base_separate[s, i]:
                        base.append(dict(slots[i]))
                    elif a.base_moves[s, i]:
                        old = (p.get("baseMoveSlots") or [])
                        base.append(_slot(old[i] if i < len(old) else None,
                                          _move_name(a.base_moves[s, i]), a.base_pp[s, i],
                                          a.base_maxpp[s, i]))
                        base[-1].pop("virtual", None)
                if any(a.base_separate[s, :n_base]) or n_base != n_moves:
                    # deserializePokemon links back every base slot naming moveSlots[i]'s move
                    # (not virtual): written as a copy, it becomes the same object
                    p["baseMoveSlots"] = [m for m in base if m["id"]]
                else:
                    p.pop("baseMoveSlots", None)
                if p["modifiedStats"]["spe"] != old_spe or not was_active:
                    p["speed"] = p["modifiedStats"]["spe"] & 0x1FFF  # getActionSpeed, trunc 13
            else:
                p["storedStats"] = {x: p["baseStoredStats"][x] for x in B.STORED}
                p["boosts"] = dict.fromkeys(B.BOOSTS, 0)
                p["species"] = f"[Species:{B.to_id(p['set']['species'])}]"
                p["transformed"] = False
                p["lastMove"] = None
                p["volatiles"] = {}
                p.pop("baseMoveSlots", None)
                for m in slots:
                    m.pop("virtual", None)
            p["moveSlots"] = slots
            if not same_request and request == "move":  # a new turn: nothing moved yet
                p["moveThisTurn"] = ""
            # a forced switch is asked of the side whose active lies fainted (getRequests)
            p["switchFlag"] = bool(active and request == "switch" and t.fainted[s, k])
            if bool(p.get("isActive")) != active:  # switched in or out since the template
                p["isActive"] = p["isStarted"] = active
                p["newlySwitched"] = False
        ordered: list[Any] = [None] * n
        for k, p in enumerate(members):
            ordered[int(t.position[s, k])] = p
        side["pokemon"] = ordered
        digits = [str(int(t.position[s, k]) + 1) for k in range(n)]
        side["team"] = ",".join(digits) if n > 9 else "".join(digits)
        if slot >= 0:
            side["active"] = [_ref(sid, 0)]
        side["pokemonLeft"] = int(sd.pokemon_left[s])
        side["lastSelectedMove"] = _move_name(sd.last_selected_move[s])
        side["lastSelectedMoveSlot"] = int(sd.last_selected_slot[s])
        side["lastEnemySelectedMove"] = _move_name(sd.last_enemy_selected_move[s])
        side["lastMove"] = _move_value(side["lastMove"], _move_name(sd.last_move[s]))
        side["lastEnemyMove"] = _move_value(side["lastEnemyMove"],
                                            _move_name(sd.last_enemy_move[s]))
        if not same_request:
            fainted = slot >= 0 and request == "switch" and bool(t.fainted[s, slot])
            side["faintedThisTurn"] = _ref(sid, 0) if fainted else None
        if request:
            side.pop("activeRequest", None)  # fromJSON rebuilds both requests (getRequests)
    seed = prng.seed_of_state(b.prng)
    j["prng"] = seed if isinstance(seed, str) else ",".join(map(str, seed))
    j["turn"] = int(b.turn)
    j["ended"] = bool(b.ended)
    winner = int(b.winner)
    j["winner"] = {S.WINNER_NONE: j.get("winner", ""), S.WINNER_TIE: "",
                   S.WINNER_P1: j["sides"][0]["name"], S.WINNER_P2: j["sides"][1]["name"]}[winner]
    j["lastDamage"] = int(b.last_damage)
    j["requestState"] = request if request else template["requestState"]
    if request:  # a forced switch is asked in the middle of a turn; a move request between two
        j["midTurn"] = request == "switch"
    return j


def flat_to_showdown(flat: Mapping[str, Any], template: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`to_showdown` of the verifier's flat state (``spec_support.flat_state``)."""
    from envport.envs.pokemon_gen1 import spec_support as SS

    return to_showdown(SS.battle_of(flat, np), template)
