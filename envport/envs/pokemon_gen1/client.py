"""What a Showdown client knows of a Gen 1 battle, as the engine's observation.

A client (``poke-env`` over a server's websocket, or anything reading a player's stream) gets
two things: **its requests** (``|request|`` JSON: its own team in full, in Showdown's current
order, with exact HP, stats, moves and, for the active, PP) and **the protocol log** as that
player's stream carries it (``|split|`` pairs resolved: exact HP for its own side, percentages
for the opponent's). :class:`ClientRecord` follows both and builds from them a numpy battle of
the engine's layout (``state.empty`` filled in) and the ``seen`` mask, and :meth:`observe` hands
them to the project's own observation function (``spec_support.flat_state`` then
``spec_support.observe``), so a change of the observation flows through unchanged.

What a client cannot know, the record holds in a fixed form. The engine's observation shows
the opponent in that form itself (``spec_support.as_client_sees``, jittable), so
``observe(client record)`` equals ``observe(engine state)`` exactly: what a policy trained in
envport reads is what it reads through a client. :func:`client_view` writes a whole engine
state in the same form with plain loops (an independent writing of it; the tests check
``observe(client_view(state)) == observe(state)``):

* **the opponent's HP** is a percentage (Showdown's ``HP Percentage Mod``:
  ``ceil(100 hp / maxhp)``, 99 while below full, at least 1 while standing): ``hp`` = that
  percentage, ``maxhp`` = 100;
* **the opponent's team order** is unknown beyond what was seen: the revealed Pokemon are
  held in slots 0.. in order of species id (the unrevealed ones are absent);
* **the opponent's move slots** are unknown: its revealed moves (used: the engine's
  ``pp < maxpp``) are held in slots 0.. in order of move id, with ``pp`` 0 of ``maxpp`` 1;
* **volatiles the protocol does not announce** (:data:`HIDDEN_VOLATILES`) are clear on both
  sides.

The choice the policy returns is an engine integer; :func:`choice_string` is Showdown's text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import spec_support as SS
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

SIDES = ("p1", "p2")
MAX_PP_GEN1 = 61
# Volatiles whose presence Showdown's protocol does not show a player (spec_support's list: the
# engine's observation leaves them out too).
HIDDEN_VOLATILES = SS.HIDDEN_VOLATILES
HIDDEN_BITS = SS.HIDDEN_BITS
# ``|-start|`` / ``|-end|`` effect names -> the engine's volatile.
START_EFFECTS = {"confusion": "confusion", "substitute": "substitute", "reflect": "reflect",
                 "lightscreen": "lightscreen", "focusenergy": "focusenergy",
                 "leechseed": "leechseed", "disable": "disable", "bide": "bide",
                 "mist": "mist"}
# Moves whose use sets a volatile without a ``-start`` message.
MOVE_VOLATILES = {"minimize": "minimize", "defensecurl": "defensecurl"}
BOOST_INDEX = {"atk": 0, "def": 1, "spa": 2, "spd": 3, "spe": 4, "accuracy": 5, "evasion": 6}


def to_id(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def showdown_percent(hp: int, maxhp: int) -> int:
    """The HP a player sees of the opponent (``Pokemon.getHealth`` under HP Percentage Mod)."""
    if hp <= 0:
        return 0
    pct = math.ceil(100 * hp / maxhp)
    return 99 if pct == 100 and hp < maxhp else pct


def player_lines(log: Iterable[str], side: str) -> list[str]:
    """The lines of an omniscient log (both halves of ``|split|`` pairs) that ``side``'s stream
    carries: the secret half for the named side, the public half for the other (as
    ``BattleStream``'s player streams split them)."""
    out: list[str] = []
    lines = list(log)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("|split|"):
            owner = line.split("|")[2]
            if i + 2 < len(lines) + 1:
                out.append(lines[i + 1] if owner == side else lines[i + 2])
            i += 3
            continue
        out.append(line)
        i += 1
    return out


def _details(text: str) -> tuple[int, int]:
    """``"Kingler, L76"`` -> (species id, level)."""
    name, *rest = text.split(", ")
    level = next((int(x[1:]) for x in rest if x.startswith("L") and x[1:].isdigit()), 100)
    return T.SPECIES_IDS[to_id(name)], level


def _condition(text: str) -> tuple[int, int, int]:
    """``"166/240 par"`` / ``"0 fnt"`` -> (hp, maxhp or -1, status)."""
    parts = text.split()
    if not parts:
        return 0, -1, T.STATUS_NONE
    hp_text = parts[0]
    hp, _, mx = hp_text.partition("/")
    status = T.STATUS_CODES.get(parts[1], T.STATUS_NONE) if len(parts) > 1 else T.STATUS_NONE
    return int(hp), int(mx) if mx else -1, status


def _side_of(ident: str) -> int:
    return SIDES.index(ident[:2])


class ClientRecord:
    """One battle as player ``side`` (``"p1"``/``"p2"``) knows it: fed requests
    (:meth:`request`) and its stream's protocol lines (:meth:`line`) in any interleaving."""

    def __init__(self, side: str) -> None:
        if side not in SIDES:
            raise ValueError(f"side must be p1 or p2, got {side!r}")
        self.side = side
        self.me = SIDES.index(side)
        self.last_request: Mapping[str, Any] | None = None
        self.turn = 0
        self.ended = False
        self.winner: str | None = None
        self.errors: list[str] = []
        # own team, original order: ident -> index
        self.own_index: dict[str, int] = {}
        self.own: list[dict[str, Any]] = []
        # opponent: revealed Pokemon by species name (Species Clause: one of each)
        self.opp: dict[str, dict[str, Any]] = {}
        self.active_ident: list[str | None] = [None, None]
        self.boosts = np.zeros((2, 7), np.int8)
        self.volatiles = [set(), set()]  # type: list[set[str]]
        self.types: list[list[int] | None] = [None, None]  # Transform / Conversion
        self.current_species = [0, 0]  # each active's species (Transform's target's)

    # ---- input ---------------------------------------------------------------------------------
    def request(self, req: Mapping[str, Any]) -> None:
        if req.get("side", {}).get("id") not in (None, self.side):
            raise ValueError(f"a request of {req['side']['id']} given to {self.side}'s record")
        if "side" in req and not self.own:
            for i, mon in enumerate(req["side"]["pokemon"]):  # the first request: team order
                species, level = _details(mon["details"])
                moves = [S.MOVE_ID.get(m, 0) for m in mon["moves"]][:4]
                maxpp = [min(int(T.MOVE_PP[m]) * 8 // 5, MAX_PP_GEN1) if m else 0 for m in moves]
                self.own_index[mon["ident"]] = i
                self.own.append({"species": species, "level": level, "moves": moves,
                                 "maxpp": maxpp, "pp": list(maxpp), "hp": 0, "maxhp": 1,
                                 "status": 0, "stats": [0] * 5, "position": i})
        self.last_request = req

    def line(self, line: str) -> None:
        parts = line.split("|")
        if len(parts) < 2:
            return
        kind = parts[1]
        handler = getattr(self, "_on_" + kind.replace("-", "_"), None)
        if handler is not None:
            handler(parts[2:])

    def lines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.line(line)

    # ---- protocol ------------------------------------------------------------------------------
    def _mon(self, ident: str) -> dict[str, Any] | None:
        s = _side_of(ident)
        name = ident.split(": ", 1)[1]
        if s == self.me:
            key = f"{ident[:2]}: {name}"
            i = self.own_index.get(key)
            return None if i is None else self.own[i]
        return self.opp.get(name)

    def _on_switch(self, a: list[str]) -> None:
        ident, details, cond = a[0], a[1], a[2] if len(a) > 2 else ""
        s = _side_of(ident)
        name = ident.split(": ", 1)[1]
        prev = self.active_ident[s]
        if s != self.me and prev is not None and prev in self.opp:
            self._leave(self.opp[prev])
        if s == self.me and prev is not None:
            left = self._mon(f"{ident[:2]}: {prev}")
            if left is not None:
                left["virtual"] = None
        self.active_ident[s] = name
        self.boosts[s] = 0
        self.volatiles[s] = set()
        self.types[s] = None
        self.current_species[s] = _details(details)[0]
        if s != self.me:
            species, level = _details(details)
            mon = self.opp.setdefault(name, {"species": species, "level": level, "moves": set(),
                                             "status": 0, "hp": 100, "fainted": False})
            mon["species"], mon["level"] = species, level
            hp, _, status = _condition(cond)
            mon["hp"], mon["status"] = hp, status
            mon["fainted"] = hp == 0
        else:
            own = self._mon(ident)
            if own is not None:
                hp, mx, status = _condition(cond)
                own["hp"], own["status"] = hp, status
                if mx > 0:
                    own["maxhp"] = mx

    @staticmethod
    def _leave(mon: dict[str, Any]) -> None:
        mon["transformed"], mon["mimicked"] = False, 0

    _on_drag = _on_switch
    _on_replace = _on_switch

    def _set_condition(self, a: list[str]) -> None:
        mon = self._mon(a[0])
        if mon is None or len(a) < 2:
            return
        hp, mx, status = _condition(a[1])  # Showdown's condition text carries the status
        mon["hp"] = hp
        if mx > 0 and _side_of(a[0]) == self.me:
            mon["maxhp"] = mx
        if hp == 0:  # "0 fnt": the engine holds a fainted Pokemon without status
            mon["fainted"], mon["status"] = True, T.STATUS_NONE
        else:
            mon["status"] = status

    _on__damage = _set_condition
    _on__heal = _set_condition
    _on__sethp = _set_condition

    def _on_faint(self, a: list[str]) -> None:
        s = _side_of(a[0])  # a fainted active loses its stages and volatiles (clearVolatile)
        self.boosts[s] = 0
        self.volatiles[s] = set()
        self.types[s] = None
        mon = self._mon(a[0])
        if mon is not None:
            mon["fainted"] = True
            mon["hp"] = 0

    def _on__status(self, a: list[str]) -> None:
        mon = self._mon(a[0])
        if mon is not None:
            mon["status"] = T.STATUS_CODES.get(a[1], 0)
        if len(a) > 1 and a[1] == "slp":  # Gen 1: sleep ends a pending recharge
            self.volatiles[_side_of(a[0])].discard("mustrecharge")

    def _on__curestatus(self, a: list[str]) -> None:
        mon = self._mon(a[0])
        if mon is not None:
            mon["status"] = T.STATUS_NONE

    def _boost(self, a: list[str], sign: int) -> None:
        s = _side_of(a[0])
        if a[1] in BOOST_INDEX and len(a) > 2:
            i = BOOST_INDEX[a[1]]
            self.boosts[s, i] = np.clip(int(self.boosts[s, i]) + sign * int(a[2]), -6, 6)

    def _on__boost(self, a: list[str]) -> None:
        self._boost(a, 1)

    def _on__unboost(self, a: list[str]) -> None:
        self._boost(a, -1)

    def _on__setboost(self, a: list[str]) -> None:
        if a[1] in BOOST_INDEX:
            self.boosts[_side_of(a[0]), BOOST_INDEX[a[1]]] = int(a[2])

    def _on__clearallboost(self, a: list[str]) -> None:
        self.boosts[:] = 0

    def _on__clearboost(self, a: list[str]) -> None:
        self.boosts[_side_of(a[0])] = 0

    def _effect(self, text: str) -> str | None:
        return START_EFFECTS.get(to_id(text.split(": ", 1)[-1]))

    def _on__transform(self, a: list[str]) -> None:
        s = _side_of(a[0])
        target = self._mon(a[1]) if len(a) > 1 else None
        if target is not None:
            self.types[s] = [int(x) for x in T.SPECIES_TYPES[target["species"]]]
            self.current_species[s] = int(target["species"])
        if len(a) > 1:  # Transform copies the target's stat stages
            self.boosts[s] = self.boosts[_side_of(a[1])]
        user = self._mon(a[0])
        if s != self.me and user is not None:
            user["transformed"] = True

    def _on__start(self, a: list[str]) -> None:
        if len(a) > 2 and a[1] == "typechange":  # Conversion: "Water/Psychic"
            ids = [T.TYPE_ID[x.strip()] for x in a[2].split("/") if x.strip() in T.TYPE_ID][:2]
            self.types[_side_of(a[0])] = ids + [T.TYPE_NONE] * (2 - len(ids))
            return
        if len(a) > 2 and a[1] == "Mimic" and _side_of(a[0]) != self.me:
            user = self._mon(a[0])  # Mimic's slot now holds the copied move, unused so far
            if user is not None:
                user["mimicked"] = S.MOVE_ID.get(to_id(a[2]), 0)
            return
        v = self._effect(a[1]) if len(a) > 1 else None
        if v is not None:
            self.volatiles[_side_of(a[0])].add(v)

    def _on__end(self, a: list[str]) -> None:
        v = self._effect(a[1]) if len(a) > 1 else None
        if v is not None:
            self.volatiles[_side_of(a[0])].discard(v)

    def _on__mustrecharge(self, a: list[str]) -> None:
        self.volatiles[_side_of(a[0])].add("mustrecharge")

    def _on_cant(self, a: list[str]) -> None:
        # not moving ends a recharge, and a charge (full paralysis, sleep... cancel it)
        self.volatiles[_side_of(a[0])] -= {"mustrecharge", "twoturnmove"}

    def _on__prepare(self, a: list[str]) -> None:
        self.volatiles[_side_of(a[0])].add("twoturnmove")

    def _on_move(self, a: list[str]) -> None:
        s = _side_of(a[0])
        move = to_id(a[1])
        # "[from]" another move: Metronome's / Mirror Move's call (only the caller spends PP);
        # "[from]" the move itself: a two-turn move's second turn, which spends it
        called = any(x.startswith("[from]") and to_id(x[6:].split(": ", 1)[-1]) != move
                     for x in a[3:])
        charging = "[still]" in a[3:]  # a two-turn move's first turn spends no PP yet
        self.volatiles[s].discard("twoturnmove")
        self.volatiles[s].discard("mustrecharge")
        if move in MOVE_VOLATILES:
            self.volatiles[s].add(MOVE_VOLATILES[move])
        if called or charging:
            return
        mon = self._mon(a[0])
        mid = S.MOVE_ID.get(move, 0)
        if mon is None or not mid:
            return
        if s == self.me:
            virtual = mon.get("virtual")
            if virtual is not None and mid in virtual[0]:  # a copied slot (Transform, Mimic)
                k = virtual[0].index(mid)
                virtual[1][k] = max(virtual[1][k] - 1, 0)
            elif mid in mon["moves"]:
                k = mon["moves"].index(mid)
                mon["pp"][k] = max(mon["pp"][k] - 1, 0)
        elif not mon.get("transformed") and mid != mon.get("mimicked"):
            mon["moves"].add(mid)  # a base slot (not Transform's copies, not Mimic's copy)

    def _on_turn(self, a: list[str]) -> None:
        self.turn = int(a[0])

    def _on_win(self, a: list[str]) -> None:
        self.ended = True
        self.winner = a[0] if a else None

    def _on_tie(self, a: list[str]) -> None:
        self.ended = True
        self.winner = "tie"

    def _on_error(self, a: list[str]) -> None:
        self.errors.append("|".join(a))

    # ---- the engine-like record ----------------------------------------------------------------
    def mask(self) -> np.ndarray:
        return SS.mask_from_request(self.last_request, self.ended)

    def battle(self) -> tuple[S.Battle, np.ndarray]:
        """The numpy battle (engine layout) and ``seen`` mask this player knows."""
        b = S.empty(np)
        t, a = b.team, b.active
        me, op = self.me, 1 - self.me
        req = self.last_request or {}
        # At a decision the request is the truth of the own team (it was made after the turn);
        # after the battle's end no request follows: the log's own exact HP lines are.
        current = [] if self.ended else req.get("side", {}).get("pokemon", [])
        virtual: dict[int, tuple[list[int], list[int], list[int]]] = {}
        for pos, mon in enumerate(current):  # exact: HP, status, stats, moves, order
            i = self.own_index.get(mon["ident"])
            if i is None:
                continue
            rec = self.own[i]
            hp, mx, status = _condition(mon["condition"])
            status = T.STATUS_NONE if hp == 0 else status
            rec["hp"], rec["status"], rec["position"] = hp, status, pos
            if mx > 0:
                rec["maxhp"] = mx
            rec["stats"] = [mon["stats"][k] for k in T.STORED_STAT_NAMES]
            rec["fainted"] = hp == 0
            if mon.get("active"):
                a.slot[me] = i
            if mon.get("active") and req.get("active"):
                for m in req["active"][0]["moves"][:4]:
                    mid = S.MOVE_ID.get(m["id"], 0)
                    if mid in rec["moves"] and "pp" in m:
                        j = rec["moves"].index(mid)
                        rec["pp"][j], rec["maxpp"][j] = int(m["pp"]), int(m["maxpp"])
            current_moves = [S.MOVE_ID.get(m, 0) for m in mon["moves"]][:4]
            if mon.get("active") and current_moves != rec["moves"]:
                # Transform / Mimic: the active's move slots are the copied ones, with their PP
                # from the last request that listed them (a waiting side's request does not)
                listed = req["active"][0]["moves"] if req.get("active") else []
                if [S.MOVE_ID.get(m["id"], 0) for m in listed][:4] == current_moves:
                    rec["virtual"] = (current_moves, [int(m.get("pp", 0)) for m in listed][:4],
                                      [int(m.get("maxpp", 0)) for m in listed][:4])
                if rec.get("virtual") and rec["virtual"][0] == current_moves:
                    virtual[i] = rec["virtual"]
        for i, rec in enumerate(self.own):
            t.present[me, i] = True
            t.species[me, i], t.level[me, i] = rec["species"], rec["level"]
            t.hp[me, i], t.maxhp[me, i] = rec["hp"], rec["maxhp"]
            t.stats[me, i] = rec["stats"]
            t.types[me, i] = T.SPECIES_TYPES[rec["species"]]
            moves, pp, maxpp = virtual.get(i, (rec["moves"], rec["pp"], rec["maxpp"]))
            t.moves[me, i, : len(moves)] = moves
            t.pp[me, i, : len(pp)] = pp
            t.maxpp[me, i, : len(maxpp)] = maxpp
            t.status[me, i] = rec["status"]
            t.fainted[me, i] = bool(rec.get("fainted", False))
            if t.fainted[me, i]:  # Showdown's 'fnt' stays while the fainted one is active
                t.status[me, i] = T.STATUS_FNT if a.slot[me] == i else T.STATUS_NONE
            t.position[me, i] = rec["position"]
        seen = np.zeros((2, S.TEAM_SIZE), bool)
        opp = sorted(self.opp.items(), key=lambda kv: kv[1]["species"])
        for k, (name, mon) in enumerate(opp[: S.TEAM_SIZE]):
            t.present[op, k] = seen[op, k] = True
            t.species[op, k], t.level[op, k] = mon["species"], mon["level"]
            t.types[op, k] = T.SPECIES_TYPES[mon["species"]]  # the active's: below
            t.hp[op, k], t.maxhp[op, k] = mon["hp"], 100
            t.status[op, k] = mon["status"]
            t.fainted[op, k] = mon["fainted"]
            moves = sorted(mon["moves"])[:4]
            t.moves[op, k, : len(moves)] = moves
            t.maxpp[op, k, : len(moves)] = 1
            if name == self.active_ident[op]:
                a.slot[op] = k
            if mon["fainted"]:
                t.status[op, k] = T.STATUS_FNT if a.slot[op] == k else T.STATUS_NONE
        for s in (me, op):
            if a.slot[s] >= 0 and self.types[s] is not None:
                t.types[s, a.slot[s]] = self.types[s]
            if a.slot[s] >= 0:
                a.boosts[s] = self.boosts[s]
                a.species[s] = t.species[s, a.slot[s]]
                a.volatiles[s] = np.uint32(sum(S.VOLATILE_BIT[v] for v in self.volatiles[s])
                                           & ~HIDDEN_BITS)
        b.turn[...] = self.turn
        b.ended[...] = self.ended
        seen[me] = t.present[me]
        return b, seen

    def observe(self) -> np.ndarray:
        """``float32[OBS_SIZE]``: this player's row of the engine's observation function."""
        b, seen = self.battle()
        masks = np.zeros((2, E.N_CHOICES), bool)
        masks[self.me] = self.mask()
        return SS.observe(SS.flat_state(b, seen, np), masks, np)[self.me]


def client_view(flat: Mapping[str, Any], player: int) -> dict[str, np.ndarray]:
    """A flat engine state (``spec_support.flat_state``, numpy, unbatched) as player ``player``'s
    client holds it (module doc): the opponent's HP as Showdown's percentage, its seen Pokemon in
    species order and its used moves in move-id order, hidden volatiles clear on both sides."""
    out = {k: np.array(v, copy=True) for k, v in flat.items()}
    op = 1 - player
    present = out["team.present"][op] & out["seen"][op]
    order = sorted(np.flatnonzero(present), key=lambda k: int(out["team.species"][op, k]))
    team_keys = [k for k in out if k.startswith("team.")]
    old = {k: out[k][op].copy() for k in team_keys}
    slot = int(out["active.slot"][op])
    if slot >= 0:  # Transform's / Mimic's copies: the client counts the base slots' use only
        sep = np.asarray(out["active.base_separate"][op], bool)
        virt = np.asarray(out["active.slot_virtual"][op], bool)
        for key, base in (("moves", "base_moves"), ("pp", "base_pp"), ("maxpp", "base_maxpp")):
            row = old[f"team.{key}"][slot]
            row[:] = np.where(sep, out[f"active.{base}"][op], np.where(virt, 0, row))
    for key in team_keys:
        out[key][op] = 0
    out["seen"][op] = False
    new_slot = -1
    for j, k in enumerate(order):
        for key in team_keys:
            out[key][op, j] = old[key][k]
        out["seen"][op, j] = True
        hp, mx = int(old["team.hp"][k]), int(old["team.maxhp"][k])
        out["team.hp"][op, j] = showdown_percent(hp, mx)
        out["team.maxhp"][op, j] = 100
        used = sorted(int(m) for m, p, q in zip(old["team.moves"][k], old["team.pp"][k],
                                                 old["team.maxpp"][k], strict=True)
                      if m and p < q)
        out["team.moves"][op, j] = 0
        out["team.pp"][op, j] = 0
        out["team.maxpp"][op, j] = 0
        out["team.moves"][op, j, : len(used)] = used
        out["team.maxpp"][op, j, : len(used)] = 1
        if k == slot:
            new_slot = j
    out["active.slot"][op] = new_slot if slot >= 0 else -1
    # the copies were resolved into the slots above: the client knows no base/copy split
    for key in ("base_moves", "base_pp", "base_maxpp", "base_separate", "slot_virtual"):
        out[f"active.{key}"][op] = 0
    out["active.volatiles"] = (out["active.volatiles"].astype(np.uint32)
                               & np.uint32(~HIDDEN_BITS & 0xFFFFFFFF))
    return out


def choice_string(choice: int) -> str | None:
    """An engine choice -> Showdown's ``move N`` / ``switch N`` (None: nothing to choose)."""
    return E.choice_string(int(choice))


def describe_differences(a: np.ndarray, b: np.ndarray) -> Sequence[int]:
    return [int(i) for i in np.flatnonzero(a != b)]
