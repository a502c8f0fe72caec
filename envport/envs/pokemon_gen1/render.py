"""Plain-text views of a battle: what a person reads when a comparison fails.

``render_state`` takes the worker's compact ``state`` (:meth:`ShowdownBattle.state`);
``render_turn`` takes one ``choose``/``create`` result (log, requests, tape).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_BOOST_NAMES = {"atk": "Atk", "def": "Def", "spa": "Spc", "spe": "Spe",
                "accuracy": "Acc", "evasion": "Eva"}  # spd mirrors spa in Gen 1


def _counter(state: Mapping[str, Any]) -> str:
    keys = [k for k in ("time", "startTime", "duration", "counter", "hp", "damage") if k in state]
    return ",".join(f"{k}={state[k]}" for k in keys)


def render_pokemon(p: Mapping[str, Any]) -> str:
    hp = "fnt" if p["fainted"] else f"{p['hp']}/{p['maxhp']}"
    status = p["status"] or "-"
    if p["status"] and _counter(p["status_state"]):
        status += f"({_counter(p['status_state'])})"
    boosts = " ".join(f"{_BOOST_NAMES[k]}{v:+d}" for k, v in p["boosts"].items()
                      if v and k in _BOOST_NAMES)
    stats = p["modified_stats"] or p["stored_stats"]
    stat_text = "/".join(str(stats[k]) for k in ("atk", "def", "spa", "spe"))
    vol = " ".join(f"{k}({_counter(v)})" if _counter(v) else k for k, v in p["volatiles"].items())
    moves = " ".join(f"{m['id']}:{m['pp']}" + ("(x)" if m["disabled"] else "") for m in p["moves"])
    mark = "*" if p["active"] else " "
    parts = [f"{mark}{p['team_index'] + 1} {p['species']} L{p['level']}", hp, status,
             f"A/D/S/Sp {stat_text}", moves]
    if boosts:
        parts.append(boosts)
    if vol:
        parts.append(f"[{vol}]")
    return "  ".join(parts)


def render_state(state: Mapping[str, Any]) -> str:
    """Every Pokemon of both sides (``*`` active) with HP, status, stats, PP, stages, volatiles."""
    head = f"turn {state['turn']}  prng {','.join(map(str, state['prng']))}"
    if state["ended"]:
        head += f"  ended, winner {state['winner']}"
    lines = [head]
    for side in state["sides"]:
        extra = f"  {side['side_conditions']}" if side["side_conditions"] else ""
        lines.append(f"{side['id']} ({side['pokemon_left']} left){extra}")
        lines.extend(f"  {render_pokemon(p)}" for p in side["pokemon"])
    return "\n".join(lines)


def render_tape(tape: Sequence[Mapping[str, Any]]) -> str:
    """One draw per line: index, API, arguments, raw output, result."""
    lines = []
    for d in tape:
        args = ",".join(str(a) for a in (d["from"], d["to"]) if a is not None)
        lines.append(f"  #{d['i']:<3} {d['api']}({args}) raw={d['raw']} -> {d['result']}")
    return "\n".join(lines)


def render_turn(result: Mapping[str, Any], log: bool = True, tape: bool = True) -> str:
    """A turn: its public log lines (secret halves of |split| pairs kept), then its draws."""
    lines = [f"turn {result['turn']}" + (f"  ended, winner {result['winner']}"
                                         if result["ended"] else "")]
    if log:
        lines.extend(f"  {line}" for line in result["log"] if line)
    if tape:
        lines.append(f" draws ({len(result['tape'])}):")
        if result["tape"]:
            lines.append(render_tape(result["tape"]))
    return "\n".join(lines)
