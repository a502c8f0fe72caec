"""The game state as fixed-size arrays (``get_state``) and back (``set_state``): the shape a
JAX engine and a bridge work with. Zones are padded with the no-card id 0; card ids are
1 + the card's position in ``cards.json`` (232 cards). Nothing of the state is left out but the
log (text for people) and the generator (its draws are the tape, not state).

Fields (a leading axis of 2 is the player):

    deck, hand, discard      int16[2, 20]     card ids in order, then 0
    stack                    int16[2, 4, 3]   per slot (0 Active, 1..3 Bench) the cards, bottom
                                              first (a Stage 2 on its Stage 1 on its Basic)
    energy                   int8[2, 4, 8]    attached Energy per type (ENERGY_TYPES order)
    damage, entered_turn, evolved_turn       int16[2, 4]
    conditions               bool[2, 4, 5]    CONDITIONS order
    effect_until, effect_amount              int16[2, 4, 5] EFFECTS order; until -1: none
    energy_types             int8[2, 3]       declared types, -1 padded
    energy_current, energy_next              int8[2]  a type index, -1 none
    points, x_speed          int8[2]
    attached_energy, played_supporter, retreated, giovanni, blaine     bool[2]
    supporters_blocked_until int16[2]
    revealed_hand            int16[2, 20], revealed_hand_shown bool[2]
    revealed_top             int16[2, 3],  revealed_top_shown bool[2]
    first, current, stage, winner, end_reason     int8   (winner -2: not over, -1: a draw)
    turn                     int16
    attack_open              bool
    pending_kind             int8[4]          DECISIONS index, -1 none (the queue, in order)
    pending_player, pending_left, pending_energy, pending_bench     int8[4]
    pending_amount           int16[4]
    pending_options          bool[4, 4]       the allowed slots, where the decision fixes them
    pending_has_options      bool[4]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envport.envs.tcg_pocket.cards import ENERGY_TYPES, load_table
from envport.envs.tcg_pocket.config import RulesConfig
from envport.envs.tcg_pocket.state import CONDITIONS, Decision, GameState, InPlay, Player

ZONE = 20
STACK = 3
SLOTS = 4
MAX_TYPES = 3
MAX_PENDING = 4
NO_CARD = 0
EFFECTS = ("cannot_attack", "cannot_retreat", "attack_minus", "takes_minus", "prevent_all")
STAGES = ("setup", "main", "checkup", "next_turn", "over")
DECISIONS = ("setup", "promote", "new_active", "retreat_energy", "attack_target",
             "own_bench_damage", "zone_attach")
END_REASONS = ("", "points", "no Pokémon in play", "both players won at once", "turn limit")

_TABLE = load_table()
CARD_NAMES: tuple[str, ...] = tuple(_TABLE.cards)  # cards.json order
CARD_ID = {n: i + 1 for i, n in enumerate(CARD_NAMES)}


def _ids(names: list[str], size: int, what: str) -> np.ndarray:
    if len(names) > size:
        raise ValueError(f"{what}: {len(names)} cards do not fit in {size}")
    out = np.zeros(size, np.int16)
    out[:len(names)] = [CARD_ID[n] for n in names]
    return out


def _names(ids: np.ndarray) -> list[str]:
    return [CARD_NAMES[int(i) - 1] for i in ids if int(i) != NO_CARD]


def _type_index(t: str | None) -> int:
    return -1 if t is None else ENERGY_TYPES.index(t)


def _type(i: Any) -> str | None:
    return None if int(i) < 0 else ENERGY_TYPES[int(i)]


def get_state(s: GameState) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}

    def per_player(key: str, values: list[Any], dtype: Any) -> None:
        out[key] = np.asarray(values, dtype)

    pls = s.players
    per_player("deck", [_ids(p.deck, ZONE, "deck") for p in pls], np.int16)
    per_player("hand", [_ids(p.hand, ZONE, "hand") for p in pls], np.int16)
    per_player("discard", [_ids(p.discard, ZONE, "discard") for p in pls], np.int16)
    slots = [[p.slot(i) for i in range(SLOTS)] for p in pls]
    per_player("stack", [[_ids(x.stack, STACK, "stack") if x else np.zeros(STACK, np.int16)
                          for x in row] for row in slots], np.int16)
    per_player("energy", [[x.energy if x else [0] * 8 for x in row] for row in slots], np.int8)
    for key in ("damage", "entered_turn", "evolved_turn"):
        per_player(key, [[getattr(x, key) if x else 0 for x in row] for row in slots],
                   np.int16)
    per_player("conditions", [[[c in x.conditions if x else False for c in CONDITIONS]
                               for x in row] for row in slots], bool)
    per_player("effect_until", [[[x.effects[e][0] if x and e in x.effects else -1
                                  for e in EFFECTS] for x in row] for row in slots], np.int16)
    per_player("effect_amount", [[[x.effects[e][1] if x and e in x.effects else 0
                                   for e in EFFECTS] for x in row] for row in slots], np.int16)
    per_player("energy_types", [[_type_index(t) for t in p.energy_types]
                                + [-1] * (MAX_TYPES - len(p.energy_types)) for p in pls],
               np.int8)
    per_player("energy_current", [_type_index(p.energy_current) for p in pls], np.int8)
    per_player("energy_next", [_type_index(p.energy_next) for p in pls], np.int8)
    per_player("points", [p.points for p in pls], np.int8)
    per_player("x_speed", [p.x_speed for p in pls], np.int8)
    for key in ("attached_energy", "played_supporter", "retreated", "giovanni", "blaine"):
        per_player(key, [getattr(p, key) for p in pls], bool)
    per_player("supporters_blocked_until", [p.supporters_blocked_until for p in pls], np.int16)
    per_player("revealed_hand", [_ids(p.revealed.get("opponent_hand", []), ZONE, "revealed")
                                 for p in pls], np.int16)
    per_player("revealed_hand_shown", ["opponent_hand" in p.revealed for p in pls], bool)
    per_player("revealed_top", [_ids(p.revealed.get("deck_top", []), 3, "revealed")
                                for p in pls], np.int16)
    per_player("revealed_top_shown", ["deck_top" in p.revealed for p in pls], bool)
    out["first"] = np.asarray(s.first, np.int8)
    out["current"] = np.asarray(s.current, np.int8)
    out["stage"] = np.asarray(STAGES.index(s.stage), np.int8)
    out["winner"] = np.asarray(-2 if s.winner is None else s.winner, np.int8)
    out["end_reason"] = np.asarray(END_REASONS.index(s.end_reason.split(" (")[0]), np.int8)
    out["turn"] = np.asarray(s.turn, np.int16)
    out["attack_open"] = np.asarray(s.attack_open, bool)
    if len(s.pending) > MAX_PENDING:
        raise ValueError(f"{len(s.pending)} pending decisions do not fit in {MAX_PENDING}")
    kinds = np.full(MAX_PENDING, -1, np.int8)
    fields = {k: np.full(MAX_PENDING, -1, np.int8) for k in ("player", "left", "energy",
                                                             "bench")}
    amount = np.zeros(MAX_PENDING, np.int16)
    options = np.zeros((MAX_PENDING, SLOTS), bool)
    has_options = np.zeros(MAX_PENDING, bool)
    for i, d in enumerate(s.pending):
        kinds[i] = DECISIONS.index(d.kind)
        fields["player"][i] = d.player
        fields["left"][i] = d.data.get("left", -1)
        fields["energy"][i] = _type_index(d.data.get("energy"))
        fields["bench"][i] = d.data.get("bench", -1)
        amount[i] = d.data.get("amount", 0)
        if "options" in d.data:
            has_options[i] = True
            options[i, d.data["options"]] = True
    out["pending_kind"] = kinds
    for k, v in fields.items():
        out[f"pending_{k}"] = v
    out["pending_amount"] = amount
    out["pending_options"] = options
    out["pending_has_options"] = has_options
    return out


def _in_play(state: dict[str, np.ndarray], p: int, slot: int) -> InPlay | None:
    stack = _names(state["stack"][p, slot])
    if not stack:
        return None
    effects = {e: [int(state["effect_until"][p, slot, j]), int(state["effect_amount"][p, slot, j])]
               for j, e in enumerate(EFFECTS) if int(state["effect_until"][p, slot, j]) >= 0}
    return InPlay(stack=stack, entered_turn=int(state["entered_turn"][p, slot]),
                  energy=[int(x) for x in state["energy"][p, slot]],
                  damage=int(state["damage"][p, slot]),
                  conditions={c for j, c in enumerate(CONDITIONS)
                              if state["conditions"][p, slot, j]},
                  evolved_turn=int(state["evolved_turn"][p, slot]), effects=effects)


def _player(state: dict[str, np.ndarray], p: int) -> Player:
    revealed = {}
    if state["revealed_hand_shown"][p]:
        revealed["opponent_hand"] = _names(state["revealed_hand"][p])
    if state["revealed_top_shown"][p]:
        revealed["deck_top"] = _names(state["revealed_top"][p])
    return Player(
        deck=_names(state["deck"][p]),
        energy_types=tuple(ENERGY_TYPES[int(t)] for t in state["energy_types"][p] if t >= 0),
        hand=_names(state["hand"][p]), discard=_names(state["discard"][p]),
        active=_in_play(state, p, 0), bench=[_in_play(state, p, s) for s in (1, 2, 3)],
        energy_current=_type(state["energy_current"][p]),
        energy_next=_type(state["energy_next"][p]), points=int(state["points"][p]),
        attached_energy=bool(state["attached_energy"][p]),
        played_supporter=bool(state["played_supporter"][p]),
        retreated=bool(state["retreated"][p]), giovanni=bool(state["giovanni"][p]),
        blaine=bool(state["blaine"][p]), x_speed=int(state["x_speed"][p]),
        supporters_blocked_until=int(state["supporters_blocked_until"][p]), revealed=revealed)


def set_state(state: dict[str, np.ndarray], config: RulesConfig, rng: Any) -> GameState:
    """A GameState from ``get_state``'s arrays, drawing from ``rng`` from here on."""
    pending = []
    for i in range(MAX_PENDING):
        k = int(state["pending_kind"][i])
        if k < 0:
            continue
        data: dict[str, Any] = {}
        if int(state["pending_left"][i]) >= 0:
            data["left"] = int(state["pending_left"][i])
        if int(state["pending_energy"][i]) >= 0:
            data["energy"] = ENERGY_TYPES[int(state["pending_energy"][i])]
        if int(state["pending_bench"][i]) >= 0:
            data["bench"] = int(state["pending_bench"][i])
        if DECISIONS[k] in ("attack_target", "own_bench_damage"):
            data["amount"] = int(state["pending_amount"][i])
        if state["pending_has_options"][i]:
            data["options"] = [int(x) for x in np.flatnonzero(state["pending_options"][i])]
        pending.append(Decision(int(state["pending_player"][i]), DECISIONS[k], data))
    winner = int(state["winner"])
    reason = END_REASONS[int(state["end_reason"])]
    if reason == "turn limit":
        reason = f"turn limit ({config.turn_limit})"
    return GameState(config=config, players=[_player(state, 0), _player(state, 1)],
                     first=int(state["first"]), current=int(state["current"]),
                     turn=int(state["turn"]), stage=STAGES[int(state["stage"])],
                     pending=pending, winner=None if winner == -2 else winner,
                     end_reason=reason, attack_open=bool(state["attack_open"]), rng=rng)


PER_PLAYER = ("deck", "hand", "discard", "stack", "energy", "damage", "entered_turn",
              "evolved_turn", "conditions", "effect_until", "effect_amount", "energy_types",
              "energy_current", "energy_next", "points", "x_speed", "attached_energy",
              "played_supporter", "retreated", "giovanni", "blaine",
              "supporters_blocked_until", "revealed_hand", "revealed_hand_shown",
              "revealed_top", "revealed_top_shown")
BOARD = ("stack", "energy", "damage", "entered_turn", "evolved_turn", "conditions",
         "effect_until", "effect_amount")


def observation_arrays(state: dict[str, np.ndarray], player: int) -> dict[str, np.ndarray]:
    """What ``player`` may know, from ``get_state``'s arrays, the player's own side first:
    both decks and the opponent's hand become counts (``deck_size``, ``hand_size``), the
    opponent's revealed information is dropped, and during setup the opponent's board is
    hidden; the rest (boards, discards, Energy Zones, points, the decision queue) is public."""
    order = [player, 1 - player]
    out = {k: np.array(state[k][order]) for k in PER_PLAYER}
    out["deck_size"] = (state["deck"][order] != NO_CARD).sum(axis=1).astype(np.int16)
    out["hand_size"] = (state["hand"][order] != NO_CARD).sum(axis=1).astype(np.int16)
    out["deck"][:] = NO_CARD
    out["hand"][1] = NO_CARD
    for k in ("revealed_hand", "revealed_hand_shown", "revealed_top", "revealed_top_shown"):
        out[k][1] = 0
    if STAGES[int(state["stage"])] == "setup":
        for k in BOARD:
            out[k][1] = 0
    for k in ("stage", "turn", "winner", "attack_open", "pending_kind", "pending_left",
              "pending_energy", "pending_bench", "pending_amount", "pending_options",
              "pending_has_options"):
        out[k] = np.array(state[k])
    relative = {"first": state["first"], "current": state["current"],
                "pending_player": state["pending_player"]}
    for k, v in relative.items():  # 0: this player, 1: the opponent, -1: none
        v = np.asarray(v).astype(np.int8)
        out[k] = np.where(v < 0, v, (v != player).astype(np.int8))
    return out


def observation_vector(state: dict[str, np.ndarray], player: int) -> np.ndarray:
    """``observation_arrays`` flattened to one int16 vector (fields in sorted order)."""
    obs = observation_arrays(state, player)
    return np.concatenate([np.asarray(obs[k], np.int16).ravel() for k in sorted(obs)])
