"""L1 component checks: the JAX Gen 1 pieces (``mechanics.py``) against Showdown's own functions.

Each check generates cases with a fixed seed (gen1randombattle species, levels and move pools,
random stat stages, statuses, screens, Focus Energy, ...), runs them through Showdown in the worker
(``reference/probe.js``: ``getDamage``, ``useMoveInner``, ``boostBy``... on a prepared battle, every
PRNG draw recorded with its arguments and the Showdown function that made it), runs the JAX
function on the state Showdown reports, and compares case by case: values, the number, order and
arguments of the draws, their results, and the LCG state after. The first differing case raises
:class:`AssertionError` naming the case, the field, both values and the Showdown draws.

:func:`component_checks` returns the checks as ``{name: callable}`` for
``Verification.components``; ``python -m envport.envs.pokemon_gen1.components [--scale slow]``
runs them and prints the case counts.
"""

from __future__ import annotations

import argparse
import atexit
import copy
import functools
import json
import random
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.pokemon_gen1 import mechanics as M
from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T
from envport.envs.pokemon_gen1.reference import ShowdownWorker

Array = jax.Array

STATS = T.STAT_NAMES
STORED = T.STORED_STAT_NAMES
SPECIES = sorted(T.SPECIES_IDS)
POOL_SPECIES = sorted(T.RANDOM_SETS)
SPECIES_NAME = {s["id"]: s["name"] for s in T._SPECIES}
SPECIES_BY_NAME = {s["name"]: s["num"] for s in T._SPECIES}

# Case counts per component: the default suite (fast) and the slow one (thousands).
SCALES: dict[str, dict[str, int]] = {
    "default": {"stats": 300, "boosts": 300, "types": 1, "crit": 300, "damage": 400,
                "accuracy": 300, "move_hit": 300, "worked_examples": 1, "move_effects": 378,
                "prng": 400},
    "slow": {"stats": 3000, "boosts": 3000, "types": 1, "crit": 3000, "damage": 6000,
             "accuracy": 4000, "move_hit": 4000, "worked_examples": 1, "move_effects": 4536,
             "prng": 4000},
}
# What each check's count counts.
UNITS = {"stats": "Pokemon (6 per case)", "boosts": "operations (1-20 per case)",
         "types": "attacking type x defending types", "crit": "getDamage calls",
         "damage": "getDamage calls", "accuracy": "useMoveInner calls",
         "move_hit": "useMoveInner calls", "worked_examples": "useMoveInner calls",
         "move_effects": "cases (each move and setup 2 / 24 times; 1-4 turns each)",
         "prng": "seeds (half Gen 5, half ChaCha20; 16 calls each)"}
CHUNK = 256  # cases per worker request and per JAX batch (one compiled shape)


# ---- the worker --------------------------------------------------------------------------------

@functools.cache
def worker() -> ShowdownWorker:
    """One shared Showdown worker for the checks (closed at exit)."""
    w = ShowdownWorker(timeout=300)
    atexit.register(w.close)
    return w


def _probe(op: str, cases: Sequence[dict], w: ShowdownWorker | None = None) -> list[dict]:
    w = w or worker()
    out: list[dict] = []
    for start in range(0, len(cases), CHUNK):
        chunk = list(cases[start:start + CHUNK])
        results = w.call(op, cases=chunk)
        for c, r in zip(chunk, results, strict=True):
            if not r["ok"]:
                raise RuntimeError(f"Showdown raised on {op} case {json.dumps(c)}:\n{r['error']}")
        out.extend(results)
    return out


# ---- case generation ---------------------------------------------------------------------------

def random_set(rng: random.Random, moves: Sequence[str] | None = None, pool: bool = True,
               level: int | None = None, species: str | None = None) -> dict[str, Any]:
    """A set: a gen1randombattle species at its level with its moves, or (pool=False, or by
    chance) any species, any level 1..100, random DVs/stat experience. ``species`` (an id):
    this one instead of a drawn one, its level and moves drawn as for a drawn one."""
    if species is None:
        species = rng.choice(POOL_SPECIES if pool and rng.random() < 0.85 else SPECIES)
    entry = T.RANDOM_SETS.get(species)
    if level is None:
        level = (entry.get("level", 80) if entry and rng.random() < 0.6
                 else rng.choice([rng.randint(1, 100), rng.randint(1, 10), 100]))
    if moves is None:
        options = T.set_moves(entry) if entry else list(T.POOL_MOVES)
        moves = rng.sample(options, min(4, len(options)))
    if rng.random() < 0.6:
        ivs = dict.fromkeys(STATS, 30)
        evs = dict.fromkeys(STATS, 255)
    else:
        ivs = {k: rng.randint(0, 31) for k in STATS}
        evs = {k: rng.choice([0, 255, rng.randint(0, 255)]) for k in STATS}
    return {"species": SPECIES_NAME[species], "level": level, "moves": list(moves), "ivs": ivs,
            "evs": evs}


def _seed(rng: random.Random) -> list[int]:
    return [rng.randint(0, 0xFFFF) for _ in range(4)]


def _boost_ops(rng: random.Random, stats: Sequence[str], n_max: int) -> list[list]:
    ops: list[list] = []
    for _ in range(rng.randint(0, n_max)):
        stat = rng.choice(stats)
        delta = rng.choice([-2, -1, 1, 2, rng.randint(-6, 6) or 1])
        if stat in ("spa", "spd"):
            ops += [["boost", "spa", delta], ["boost", "spd", delta]]  # Gen 1 Special moves both
        else:
            ops.append(["boost", stat, delta])
    return ops


def _status_ops(rng: random.Random, p: float, keep_speed: bool = False) -> list[list]:
    if rng.random() >= p:
        return []
    return [["status", rng.choice(["brn", "psn", "slp", "frz", "tox"]
                                  + ([] if keep_speed else ["par"]))]]


def _shuffled(rng: random.Random, *groups: list[list]) -> list[list]:
    groups_ = [g for g in groups if g]
    rng.shuffle(groups_)
    return [op for g in groups_ for op in g]


# ---- reading Showdown's reports --------------------------------------------------------------

def _types(names: Sequence[str]) -> list[int]:
    ids = [T.TYPE_ID[t] for t in names]
    return [*ids, T.TYPE_NONE, T.TYPE_NONE][:2]


def _combatant(summary: dict) -> dict[str, Any]:
    """The JAX inputs of one Pokemon as Showdown reports it before the call."""
    return {
        "level": summary["level"],
        "base_speed": int(T.BASE_STATS[T.SPECIES_IDS[summary["set_species"]], 5]),
        "types": _types(summary["types"]),
        "modified": [summary["modified"][k] for k in STORED],
        "unmodified": [summary["base_stored"][k] for k in STORED],
        "boosts": [summary["boosts"][k] for k in T.BOOST_NAMES],
        "hp": summary["hp"],
        "volatiles": summary["volatiles"],
    }


def _damage_inputs(case: dict, report: dict) -> dict[str, Any]:
    a = _combatant(report["before"]["attacker"])
    d = _combatant(report["before"]["defender"])
    lock = a["volatiles"].get("partialtrappinglock")
    side = case.get("defender_side") or {}
    last = side.get("last_enemy_move")
    return {
        "move": T.MOVE_IDS[case["move"]],
        "attacker_level": a["level"], "attacker_base_speed": a["base_speed"],
        "attacker_types": a["types"], "attacker_modified": a["modified"],
        "attacker_unmodified": a["unmodified"],
        "attacker_focus_energy": "focusenergy" in a["volatiles"],
        "target_types": d["types"], "target_modified": d["modified"],
        "target_unmodified": d["unmodified"],
        "target_reflect": "reflect" in d["volatiles"],
        "target_light_screen": "lightscreen" in d["volatiles"],
        "target_hp": d["hp"],
        "trap_lock_damage": lock["damage"] if lock else -1,
        "preset_damage": case.get("preset_damage", -1) if case.get("preset_damage") is not None
        else -1,
        "last_damage": case.get("last_damage", 0),
        "counter_last_move": T.MOVE_IDS[last] if last else 0,
        "counter_last_selected_is_counter": side.get("last_enemy_selected_move") == "counter",
    }


def _stack(rows: Sequence[dict[str, Any]], pad_to: int) -> dict[str, np.ndarray]:
    out = {}
    for k in rows[0]:
        col = np.asarray([r[k] for r in rows])
        if len(rows) < pad_to:
            col = np.concatenate([col, np.repeat(col[:1], pad_to - len(rows), axis=0)])
        out[k] = col
    return out


def _chunks(n: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, CHUNK):
        yield start, min(n, start + CHUNK)


def _fail(component: str, index: int, case: dict, what: str, jax_value: Any, showdown: Any,
          report: dict | None = None) -> None:
    lines = [f"pokemon-gen1 L1 component '{component}': case {index} differs in {what}:",
             f"  JAX      {jax_value!r}", f"  Showdown {showdown!r}",
             f"  case     {json.dumps(case)}"]
    if report is not None and "tape" in report:
        lines.append("  Showdown draws:")
        for i, d in enumerate(report["tape"]):
            lines.append(f"    [{i}] {d['api']}{tuple(d['args'])} -> random({d['from']}"
                         f"{'' if d['to'] is None else ', ' + str(d['to'])}) = {d['result']} "
                         f"at {' < '.join(d['site'])}")
    raise AssertionError("\n".join(lines))


def _expect(component: str, index: int, case: dict, report: dict | None,
            pairs: Sequence[tuple[str, Any, Any]]) -> None:
    for what, mine, theirs in pairs:
        if mine != theirs:
            _fail(component, index, case, what, mine, theirs, report)


def _seed_words(state: np.ndarray) -> list[int]:
    return [int(w) for w in np.asarray(prng.state_seed(state))]


# ---- stats -------------------------------------------------------------------------------------

@jax.jit
def _jax_stats(species: Array, level: Array, ivs: Array, evs: Array) -> Array:
    return M.calc_stats(species, level, ivs, evs)


def check_stats(n: int, seed: int = 0) -> int:
    """``calc_stats`` vs the stored stats and max HP Showdown gives sets of every species, at
    random levels, DVs (odd IVs too: Showdown keeps them even) and stat experience."""
    rng = random.Random(f"stats-{seed}")
    cases = [{"sets": [random_set(rng, pool=False) for _ in range(6)]} for _ in range(n)]
    reports = _probe("probe_stats", cases)
    sets = [s for c in cases for s in c["sets"]]
    got = []
    for start, end in _chunks(len(sets)):
        rows = [{"species": SPECIES_BY_NAME[s["species"]], "level": s["level"],
                 "ivs": [s["ivs"][k] for k in STATS], "evs": [s["evs"][k] for k in STATS]}
                for s in sets[start:end]]
        cols = _stack(rows, CHUNK)
        got.append(np.asarray(_jax_stats(cols["species"], cols["level"], cols["ivs"],
                                         cols["evs"]))[: end - start])
    mine = np.concatenate(got)
    k = 0
    for i, (c, r) in enumerate(zip(cases, reports, strict=True)):
        for j, p in enumerate(r["pokemon"]):
            theirs = [p["maxhp"]] + [p["stored"][s] for s in STORED]
            _expect("stats", i, c, None, [(f"pokemon {j} stats [hp atk def spa spd spe]",
                                           [int(v) for v in mine[k]], theirs),
                                          (f"pokemon {j} baseStoredStats",
                                           [int(v) for v in mine[k][1:]],
                                           [p["base_stored"][s] for s in STORED])])
            k += 1
    return len(sets)


# ---- stat stages -------------------------------------------------------------------------------

_PENALTY = {"par": ("spe", 1, 4), "brn": ("atk", 1, 2)}


def _jax_boost_sequence(start: dict, ops: list[list], showdown: list[dict]) -> list[dict]:
    """The JAX functions applied to the ops one by one (host loop over ops, JAX per op). Whether
    a status op succeeds (status immunities, e.g. a Poison type vs psn) is taken from Showdown:
    what is checked here is the penalty that follows it."""
    stage = np.asarray([start["boosts"][b] for b in T.BOOST_NAMES], np.int32)
    modified = np.asarray([start["modified"][k] for k in STORED], np.int32)
    stored = np.asarray([start["stored"][k] for k in STORED], np.int32)
    status = T.STATUS_CODES[start["status"]]
    out = []
    for op, theirs in zip(ops, showdown, strict=True):
        result: Any = None
        kind = op[0]
        if kind == "boost":
            i = T.BOOST_INDEX[op[1]]
            acc_eva = op[1] in ("accuracy", "evasion")
            m_i = modified[i] if not acc_eva else 0
            s_i = stored[i] if not acc_eva else 0
            st, mo, res = _jax_boost(stage[i], m_i, s_i, op[2], acc_eva)
            stage[i] = int(st)
            if not acc_eva:
                modified[i] = int(mo)
            result = {M.BOOST_FALSE: "false", M.BOOST_CHANGED: True, M.BOOST_AT_LIMIT: 0}[int(res)]
        elif kind == "penalty":
            i = STORED.index(op[1])
            num, den = {0.25: (1, 4), 0.5: (1, 2)}[op[2]]
            modified[i] = int(M.modify_stat(modified[i], num, den))
            result = "null"
        elif kind == "status":
            ok = theirs["result"] is True
            if ok:
                status = T.STATUS_CODES[op[1]]
                if op[1] in _PENALTY:
                    stat, num, den = _PENALTY[op[1]]
                    i = STORED.index(stat)
                    modified[i] = int(M.modify_stat(modified[i], num, den))
            result = True if ok else "false"
        elif kind == "clearboosts":
            stage[:] = 0
            modified = np.array(M.clear_boosts_stats(stored))
            result = "null"
        elif kind == "clearvolatile":
            stage[:] = 0
            modified = np.array(M.switch_in_stats(stored, status))
            result = "null"
        out.append({"result": result, "boosts": dict(zip(T.BOOST_NAMES, stage.tolist(),
                                                         strict=True)),
                    "modified": dict(zip(STORED, [int(v) for v in modified], strict=True))})
    return out


@jax.jit
def _jax_boost(stage: Any, modified: Any, stored: Any, delta: Any, acc_eva: Any
               ) -> tuple[Array, Array, Array]:
    return M.boost_by(stage, modified, stored, delta, acc_eva)


def check_boosts(n: int, seed: int = 0) -> int:
    """``boost_by`` / ``modify_stat`` / ``switch_in_stats`` vs Showdown's ``boostBy``,
    ``modifyStat`` (paralysis and burn penalties), ``clearBoosts`` and ``clearVolatile`` (the
    switch-in recalculation), step by step: boostBy's result (true / 0 / false), stages and
    modified stats after each. Stats range from level-1 values (drops to 1) to level-100 +6
    (the 999 cap and the uncapped drop below +6)."""
    rng = random.Random(f"boosts-{seed}")
    cases: list[dict[str, Any]] = []
    for _ in range(n):
        p = random_set(rng, pool=False, level=rng.choice([1, 2, 5, rng.randint(1, 100), 100]))
        ops: list[list] = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.7:
                stat = rng.choice(T.BOOST_NAMES)
                ops.append(["boost", stat, rng.choice([-2, -1, 1, 2, rng.randint(-12, 12)])])
            elif r < 0.8:
                ops.append(["penalty", rng.choice(["atk", "spe"]), rng.choice([0.25, 0.5])])
            elif r < 0.9 and not any(o[0] == "status" for o in ops):
                ops.append(["status", rng.choice(["par", "brn", "psn"])])
            elif r < 0.95:
                ops.append(["clearboosts"])
            else:
                ops.append(["clearvolatile"])
        if rng.random() < 0.35:
            # to the limits: up to +6 (999 for strong stats, then the uncapped drop) or down to
            # -6 (1 for level-1 stats, then the boost at 1)
            stat = rng.choice(STORED)
            sign = rng.choice([1, -1])
            p["level"] = 100 if sign > 0 else rng.choice([1, 2, 3])
            segment = [["boost", stat, sign * rng.choice([1, 2, 2, 6])]
                       for _ in range(rng.randint(2, 7))]
            segment += [["boost", stat, -sign * rng.choice([1, 2])]
                        for _ in range(rng.randint(1, 3))]
            segment += [["boost", stat, sign * rng.choice([1, 2])]
                        for _ in range(rng.randint(0, 2))]
            at = rng.randint(0, len(ops))
            ops[at:at] = segment
        cases.append({"pokemon": p, "ops": ops})
    reports = _probe("probe_boosts", cases)
    steps = 0
    for i, (c, rep) in enumerate(zip(cases, reports, strict=True)):
        mine = _jax_boost_sequence(rep["start"], c["ops"], rep["steps"])
        for j, (m, s) in enumerate(zip(mine, rep["steps"], strict=True)):
            _expect("boosts", i, c, None, [
                (f"step {j} {c['ops'][j]} result", m["result"], s["result"]),
                (f"step {j} {c['ops'][j]} boosts", m["boosts"], s["boosts"]),
                (f"step {j} {c['ops'][j]} modified stats", m["modified"], s["modified"])])
            steps += 1
    return steps


# ---- types -------------------------------------------------------------------------------------

def check_types(n: int = 1, seed: int = 0) -> int:
    """Effectiveness per defending type and immunity, for every attacking type against every
    species' types and every pair of types, vs ``Dex.getEffectiveness`` / ``getImmunity``."""
    defenders = sorted({tuple(s["types"]) for s in T._SPECIES}
                       | {(a,) for a in T.TYPES}
                       | {(a, b) for a in T.TYPES for b in T.TYPES if a != b})
    report = _probe("probe_types", [{"defenders": [list(d) for d in defenders]}])[0]
    if report["types"] != list(T.TYPES):
        _fail("types", 0, {}, "type list", list(T.TYPES), report["types"])
    # all pairs at once: attack type a (rows) x defender list i (columns)
    dtypes = np.asarray([_types(d) for d in defenders])
    attack = np.arange(len(T.TYPES))
    eff_all = np.asarray(M.effectiveness(attack[:, None, None], dtypes[None]))
    imm_all = np.asarray(M.is_immune(attack[:, None], dtypes[None]))
    count = 0
    for i, (defs, row) in enumerate(zip(defenders, report["rows"], strict=True)):
        for a, entry in enumerate(row):
            eff = [int(v) for v in eff_all[a, i, : len(defs)]]
            _expect("types", i, {"attack": T.TYPES[a], "defend": list(defs)}, None, [
                ("effectiveness per type", eff, entry["effectiveness"]),
                ("total effectiveness", sum(eff), entry["total"]),
                ("immune", bool(imm_all[a, i]), entry["immune"])])
            count += 1
    return count


# ---- damage and crits (getDamage) ----------------------------------------------------------

_DAMAGE_FIELDS = tuple(M.DamageInputs._fields)


@jax.jit
def _jax_damage(state: Array, cols: dict[str, Array]) -> tuple[Array, M.Damage]:
    return M.get_damage(state, M.DamageInputs(**cols))


# getDamage's early returns and special paths (fixed damage, callbacks, OHKO, partial trapping,
# multi-hit presets, Explosion's halving)
_SPECIAL_DAMAGE = ["superfang", "psywave", "counter", "counter", "seismictoss", "nightshade",
                   "dragonrage", "sonicboom", "wrap", "bind", "clamp", "firespin", "doubleslap",
                   "pinmissile", "twineedle", "doublekick", "explosion", "selfdestruct", "fissure",
                   "horndrill", "guillotine"]


def _damage_case(rng: random.Random, crit_focus: bool = False,
                 attacker_species: str | None = None) -> dict[str, Any]:
    attacker = random_set(rng, species=attacker_species)
    defender = random_set(rng)
    if crit_focus:
        # crit-relevant moves: damaging formula moves of both crit ratios
        move = rng.choice([m for m in T.POOL_MOVES if T.MOVES[m]["basePower"] > 1]
                          + ["slash", "razorleaf", "crabhammer", "karatechop"] * 4)
    else:
        r = rng.random()
        move = (rng.choice(attacker["moves"]) if r < 0.4 else rng.choice(_SPECIAL_DAMAGE)
                if r < 0.65 else rng.choice(sorted(T.MOVES)))
    a_ops = _shuffled(rng, _boost_ops(rng, ["atk", "spa", "spe"], 3), _status_ops(rng, 0.3))
    d_ops = _shuffled(rng, _boost_ops(rng, ["def", "spa"], 3), _status_ops(rng, 0.3))
    if rng.random() < (0.5 if crit_focus else 0.2):
        a_ops.append(["volatile", "focusenergy"])
    if rng.random() < 0.25:
        d_ops.append(["volatile", "reflect"])
    if rng.random() < 0.25:
        d_ops.append(["volatile", "lightscreen"])
    if rng.random() < 0.08:
        # +6 then a drop leaves the stat uncapped (up to 3.5 x stored): A >= 1024 rolls over
        attacker["level"] = 100
        stat = rng.choice(["atk", "spa"])
        a_ops += [["boost", stat, 6], ["boost", stat, -1]]
    if move in ("wrap", "bind") and rng.random() < 0.4:
        defender["species"] = rng.choice(["Gastly", "Haunter", "Gengar"])  # first hit: 0
    if rng.random() < 0.05:
        a_ops.append(["transform"])  # crits keep the user's own baseStoredStats and species
    if rng.random() < 0.05:
        a_ops.append(["types", [rng.choice(T.TYPES)]])  # as Conversion: STAB follows
    if rng.random() < 0.3:
        d_ops.append(["hp", rng.randint(1, 400)])  # Super Fang reads it
    case: dict[str, Any] = {"attacker": attacker, "defender": defender, "move": move,
                            "attacker_ops": a_ops, "defender_ops": d_ops, "seed": _seed(rng)}
    if T.MOVE_PARTIAL_TRAP[T.MOVE_IDS[move]] and rng.random() < 0.5:
        a_ops.append(["volatile", "partialtrappinglock", {"damage": rng.randint(0, 200)}])
    if T.MOVE_MULTIHIT_MIN[T.MOVE_IDS[move]] and rng.random() < 0.3:
        case["preset_damage"] = rng.choice([0, rng.randint(1, 300)])
    if move == "counter" or rng.random() < 0.05:
        case["last_damage"] = rng.choice([0, rng.randint(1, 400), rng.randint(1, 400)])
        case["defender_side"] = {
            "last_enemy_selected_move": rng.choice(["counter", "tackle", rng.choice(T.POOL_MOVES)]),
            "last_enemy_move": rng.choice([None, "counter", "bodyslam", "seismictoss", "growl",
                                           rng.choice(sorted(T.MOVES))])}
    return case


def _run_damage(cases: Sequence[dict], reports: Sequence[dict]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for start, end in _chunks(len(cases)):
        rows = [_damage_inputs(c, r) for c, r in zip(cases[start:end], reports[start:end],
                                                     strict=True)]
        cols = _stack(rows, CHUNK)
        seeds = _stack([{"s": c["seed"]} for c in cases[start:end]], CHUNK)["s"]
        state, dmg = _jax_damage(prng.seed_state(seeds), {k: cols[k] for k in _DAMAGE_FIELDS})
        state = np.asarray(state)
        dmg_np = {k: np.asarray(v) for k, v in dmg._asdict().items()}
        for i in range(end - start):
            out.append({"state": state[i], **{k: v[i].item() for k, v in dmg_np.items()}})
    return out


def _damage_draws(d: dict[str, Any], level: int) -> list[tuple]:
    """The draws the JAX getDamage made, as (api, args, site) in order."""
    draws = []
    if d["drew_psywave"]:
        draws.append(("random", [1, d["psywave_to"]], "damageCallback"))
    if d["drew_crit"]:
        draws.append(("randomChance", [d["crit_chance"], 256], "BattleActions.getDamage"))
    if d["drew_roll"]:
        draws.append(("random", [217, 256], "BattleActions.getDamage"))
    return draws


def _showdown_draws(report: dict) -> list[tuple]:
    return [(t["api"], list(t["args"]), t["site"][0]) for t in report["tape"]]


def _site_matches(mine: str, theirs: str) -> bool:
    return theirs.startswith(mine) if mine.startswith("BattleActions") else mine in theirs


def _compare_draws(component: str, i: int, case: dict, report: dict, mine: list[tuple],
                   showdown: list[tuple]) -> None:
    simple_mine = [(a, g) for a, g, _ in mine]
    simple_theirs = [(a, g) for a, g, _ in showdown[: len(mine)]]
    if simple_mine != simple_theirs or len(showdown) < len(mine):
        _fail(component, i, case, "draws (api, args) in order", simple_mine,
              [(a, g) for a, g, _ in showdown], report)
    for k, (m, s) in enumerate(zip(mine, showdown, strict=False)):
        if not _site_matches(m[2], s[2]):
            _fail(component, i, case, f"draw {k} made by", m[2], s[2], report)


def _damage_result(report: dict) -> tuple[int, int]:
    r = report["result"]
    if r == "false":
        return M.KIND_FALSE, 0
    if r == "undefined":
        return M.KIND_UNDEFINED, 0
    if isinstance(r, int):
        return M.KIND_NUMBER, r
    raise AssertionError(f"getDamage returned {r!r}, which the port does not model")


def _check_damage_cases(component: str, cases: list[dict]) -> int:
    reports = _probe("probe_damage", cases)
    mine = _run_damage(cases, reports)
    for i, (c, r, m) in enumerate(zip(cases, reports, mine, strict=True)):
        kind, value = _damage_result(r)
        draws = _damage_draws(m, c["attacker"]["level"])
        showdown = _showdown_draws(r)
        _compare_draws(component, i, c, r, draws, showdown)
        _expect(component, i, c, r, [
            ("number of draws", len(draws), len(showdown)),
            ("result kind (number / false / undefined)", m["kind"], kind),
            ("damage", m["damage"], value),
            ("crit", bool(m["crit"]), bool(r["crit"])),
            ("LCG state after (seed words)", _seed_words(m["state"]), r["prng"])])
        if m["drew_roll"]:
            roll = next(t for t in r["tape"] if t["args"] == [217, 256])["result"]
            _expect(component, i, c, r, [("damage roll R", m["roll"], roll)])
    return len(cases)


def check_damage(n: int, seed: int = 0) -> int:
    """``get_damage`` vs ``getDamage``: every Gen 1 move (half the cases from the attacker's
    random-battle pool) between random-battle Pokemon with random stages, statuses, screens,
    Focus Energy, Transform, Conversion-like types, partial-trapping locks, preset multi-hit
    damage and Counter's inputs: result (number / false / undefined), damage, crit, the draws
    (API, arguments, order, the Showdown function making each) and the LCG state after."""
    rng = random.Random(f"damage-{seed}")
    return _check_damage_cases("damage", [_damage_case(rng) for _ in range(n)])


# (base Speed, species id) of the first species by id of each base Speed, slowest first: the crit
# numerator is floor(baseSpe / 2) scaled by Focus Energy and the crit ratio, and only Slowpoke's
# 15 with Focus Energy gives 1.
CRIT_SPECIES = sorted({s["base_stats"]["spe"]: s["id"]
                       for s in sorted(T._SPECIES, key=lambda s: s["id"], reverse=True)}.items())


def check_crit(n: int, seed: int = 0) -> int:
    """Critical hits: ``crit_chance``/``crit_check`` through ``get_damage`` against getDamage on
    formula moves of both crit ratios, half the attackers with Focus Energy, the attackers of
    every base Speed in turn (:data:`CRIT_SPECIES`): the numerator of ``randomChance(c, 256)``,
    the crit and its effect (doubled level, unmodified stats, no screens) on the damage."""
    rng = random.Random(f"crit-{seed}")
    return _check_damage_cases("crit", [
        _damage_case(rng, crit_focus=True, attacker_species=CRIT_SPECIES[i % len(CRIT_SPECIES)][1])
        for i in range(n)])


# ---- a whole hit (useMoveInner): accuracy, hits, damage, secondary -------------------------

# Moves whose hit runs code the L1 pipeline does not model before or between its draws
# (two-turn charging, Thrash/Petal Dance's lock counter drawn before accuracy, moves calling
# other moves, Bide, Dream Eater's and Leech Seed's TryImmunity, Splash's Try, Substitute).
_HIT_EXCLUDED = {"razorwind", "fly", "dig", "solarbeam", "skullbash", "skyattack", "thrash",
                 "petaldance", "metronome", "mirrormove", "bide", "dreameater", "leechseed",
                 "splash", "substitute", "struggle"}
HIT_MOVES = sorted(m for m in T.MOVES if m not in _HIT_EXCLUDED)

# (label, api, site prefix) of the draws the pipeline models
_LABELS = {"accuracy": ("randomChance", "BattleActions.tryMoveHit"),
           "hits": ("sample", "BattleActions.tryMoveHit"),
           "psywave": ("random", "damageCallback"),
           "crit": ("randomChance", "BattleActions.getDamage"),
           "roll": ("random", "BattleActions.getDamage"),
           "secondary": ("randomChance", "BattleActions.moveHit")}


def _label(draw: dict) -> str | None:
    for name, (api, site) in _LABELS.items():
        if draw["api"] == api and _site_matches(site, draw["site"][0]):
            return name
    return None


class HitInputs(NamedTuple):
    damage: M.DamageInputs
    accuracy_stage: Any
    evasion_stage: Any
    target_must_recharge: Any
    accuracy_override: Any
    trapped_by_attacker: Any
    attacker_speed: Any
    target_speed: Any


class Hit(NamedTuple):
    immune: Array
    ohko_failed: Array
    accuracy: M.Accuracy
    drew_accuracy: Array
    hit: Array
    drew_hits: Array
    hits: Array
    first: M.Damage
    dealt: Array
    drew_secondary: Array
    secondary_numerator: Array
    secondary: Array


def hit_pipeline(state: Any, x: HitInputs) -> tuple[Array, Hit]:
    """The draws of ``data/mods/gen1/scripts.ts useMoveInner -> tryMoveHit -> moveHit`` for one
    move against a target without a Substitute, composed from :mod:`mechanics`: immunity and the
    OHKO speed check (no draw), the accuracy draw, the multi-hit count, the first hit's
    getDamage (crit, roll or Psywave), later hits repeating it (no draws) until the target
    faints, then the secondary's chance if the target still stands (on the last hit). The
    effects after a successful secondary (status, counters, tie draws) are the engine's."""
    state = jnp.asarray(state, jnp.uint32)
    d = x.damage
    move = jnp.asarray(d.move, jnp.int32)
    immune = M.is_immune(jnp.asarray(T.MOVE_TYPE)[move], d.target_types,
                         jnp.asarray(T.MOVE_IGNORE_IMMUNITY)[move])
    ohko_failed = ((jnp.asarray(T.MOVE_DAMAGE_KIND)[move] == T.DAMAGE_OHKO) & ~immune
                   & M.ohko_fails(x.attacker_speed, x.target_speed))
    go = ~immune & ~ohko_failed
    acc = M.accuracy(move, x.accuracy_stage, x.evasion_stage, x.target_must_recharge,
                     x.accuracy_override, x.trapped_by_attacker)
    s_acc, hit = M.accuracy_check(state, acc)
    state = jnp.where(go[..., None], s_acc, state)
    drew_acc = go & ~acc.always_hits
    hit = go & hit
    s_hits, hits, drew_hits = M.multihit_count(state, move)
    state = jnp.where(hit[..., None], s_hits, state)
    drew_hits = hit & drew_hits
    s_dmg, first = M.get_damage(state, d)
    state = jnp.where(hit[..., None], s_dmg, state)
    hp = jnp.asarray(d.target_hp, jnp.int32)
    landed = hit & (first.kind != M.KIND_FALSE)
    number = landed & (first.kind == M.KIND_NUMBER)
    first_dealt = jnp.where(number, jnp.minimum(first.damage, hp), 0)
    dealt = first_dealt
    remaining = hp - first_dealt
    for _ in range(4):  # hits 2..5 repeat the first hit's (dealt) damage while the target stands
        more = number & (hits > 1) & (remaining > 0)
        hits = jnp.where(more, hits - 1, hits)
        step = jnp.where(more, jnp.minimum(first_dealt, remaining), 0)
        dealt = dealt + step
        remaining = remaining - step
    applies = landed & (remaining > 0) & M.secondary_applies(move, d.target_types)
    s_sec, success = M.secondary_check(state, move)
    state = jnp.where(applies[..., None], s_sec, state)
    numerator = M.secondary_numerator(jnp.asarray(T.MOVE_SECONDARY_CHANCE)[move],
                                      jnp.asarray(T.MOVE_SECONDARY_KIND)[move]
                                      == T.SECONDARY_CONFUSION)
    return state, Hit(immune, ohko_failed, acc, drew_acc, hit, drew_hits, hits, first, dealt,
                      applies, numerator, applies & success)


@jax.jit
def _jax_hit(state: Array, dcols: dict[str, Array], hcols: dict[str, Array]) -> tuple[Array, Hit]:
    return hit_pipeline(state, HitInputs(damage=M.DamageInputs(**dcols), **hcols))


_MULTIHIT = sorted(m for m in HIT_MOVES if T.MOVE_MULTIHIT_MIN[T.MOVE_IDS[m]])
# sleep moves (always hit a recharging target), OHKO moves (the speed check), multi-hit moves,
# partial trapping, Rage
_OHKO = ("fissure", "horndrill", "guillotine")
_SPECIAL_HIT = ["sing", "spore", "hypnosis", "sleeppowder", "lovelykiss", *_OHKO, "wrap", "bind",
                "firespin", "clamp", "rage", "psywave", "superfang", *_MULTIHIT]


def _hit_case(rng: random.Random, secondary_focus: bool) -> dict[str, Any]:
    attacker = random_set(rng)
    defender = random_set(rng)
    if secondary_focus:
        move = rng.choice([m for m in HIT_MOVES if T.MOVE_SECONDARY_KIND[T.MOVE_IDS[m]]]
                          + [m for m in attacker["moves"] if m in HIT_MOVES] + _MULTIHIT * 2)
    else:
        r = rng.random()
        move = (rng.choice([m for m in attacker["moves"] if m in HIT_MOVES] or HIT_MOVES)
                if r < 0.4 else rng.choice(_SPECIAL_HIT) if r < 0.65 else rng.choice(HIT_MOVES))
    # half the OHKO moves meet their user's own set: equal Speeds, where they do not fail
    mirror = move in _OHKO and rng.random() < 0.5
    if mirror:
        defender = copy.deepcopy(attacker)
    speed = [] if mirror else ["spe"]
    a_ops = _shuffled(rng, _boost_ops(rng, ["accuracy", "atk", "spa", *speed], 3),
                      _status_ops(rng, 0.2, mirror))
    d_ops = _shuffled(rng, _boost_ops(rng, ["evasion", "def", "spa", *speed], 3),
                      _status_ops(rng, 0.2, mirror))
    sleep_move = T.MOVE_STATUS[T.MOVE_IDS[move]] == T.STATUS_SLP
    if rng.random() < (0.5 if sleep_move else 0.1):
        d_ops.append(["volatile", "mustrecharge"])  # sleep moves always hit it
    if rng.random() < 0.1:
        d_ops.append(["volatile", "partiallytrapped"])  # trapped by the attacker: always hit
    if rng.random() < 0.1:
        a_ops.append(["volatile", "rage", {"accuracy": rng.randint(1, 255)}])
    if rng.random() < 0.15:
        a_ops.append(["volatile", "focusenergy"])
    if rng.random() < 0.15:
        d_ops.append(["volatile", rng.choice(["reflect", "lightscreen"])])
    if rng.random() < 0.3:
        d_ops.append(["hp", rng.randint(1, 120)])  # faints mid multi-hit; no secondary then
    return {"attacker": attacker, "defender": defender, "move": move, "attacker_ops": a_ops,
            "defender_ops": d_ops, "seed": _seed(rng)}


def _hit_inputs(case: dict, report: dict) -> dict[str, Any]:
    a = _combatant(report["before"]["attacker"])
    d = _combatant(report["before"]["defender"])
    rage = a["volatiles"].get("rage")
    trapped = d["volatiles"].get("partiallytrapped")
    return {
        "accuracy_stage": a["boosts"][T.BOOST_INDEX["accuracy"]],
        "evasion_stage": d["boosts"][T.BOOST_INDEX["evasion"]],
        "target_must_recharge": "mustrecharge" in d["volatiles"],
        "accuracy_override": rage["accuracy"] if rage else -1,
        "trapped_by_attacker": trapped is not None,
        "attacker_speed": a["modified"][4],
        "target_speed": d["modified"][4],
    }


def _hit_draws(m: dict[str, Any]) -> list[tuple[str, list]]:
    draws: list[tuple[str, list]] = []
    if m["drew_accuracy"]:
        draws.append(("accuracy", [m["accuracy_numerator"], 256]))
    if m["drew_hits"]:
        draws.append(("hits", [8]))
    if m["hit"]:
        if m["first_drew_psywave"]:
            draws.append(("psywave", [1, m["first_psywave_to"]]))
        if m["first_drew_crit"]:
            draws.append(("crit", [m["first_crit_chance"], 256]))
        if m["first_drew_roll"]:
            draws.append(("roll", [217, 256]))
    if m["drew_secondary"]:
        draws.append(("secondary", [m["secondary_numerator"], 256]))
    return draws


def _run_hits(cases: Sequence[dict], reports: Sequence[dict]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for start, end in _chunks(len(cases)):
        pairs = list(zip(cases[start:end], reports[start:end], strict=True))
        dcols = _stack([_damage_inputs(c, r) for c, r in pairs], CHUNK)
        hcols = _stack([_hit_inputs(c, r) for c, r in pairs], CHUNK)
        seeds = _stack([{"s": c["seed"]} for c, _ in pairs], CHUNK)["s"]
        state, hit = _jax_hit(prng.seed_state(seeds), {k: dcols[k] for k in _DAMAGE_FIELDS},
                              hcols)
        state = np.asarray(state)
        flat: dict[str, np.ndarray] = {}
        for k, v in hit._asdict().items():
            if isinstance(v, M.Accuracy | M.Damage):
                prefix = "accuracy_" if k == "accuracy" else "first_"
                for kk, vv in v._asdict().items():
                    flat[prefix + kk] = np.asarray(vv)
            else:
                flat[k] = np.asarray(v)
        for i in range(end - start):
            out.append({"state": state[i], **{k: v[i].item() for k, v in flat.items()}})
    return out


def _check_hit_cases(component: str, cases: list[dict]) -> int:
    reports = _probe("probe_hit", cases)
    mine = _run_hits(cases, reports)
    for i, (c, r, m) in enumerate(zip(cases, reports, mine, strict=True)):
        draws = _hit_draws(m)
        labels = [_label(t) for t in r["tape"]]
        modeled = [k for k, lab in enumerate(labels) if lab is not None]
        theirs = [(labels[k], list(r["tape"][k]["args"])) for k in modeled]
        _expect(component, i, c, r, [("modeled draws (label, args) in order", draws, theirs)])
        if modeled != list(range(len(modeled))):
            _fail(component, i, c, "position of the modeled draws in Showdown's tape",
                  list(range(len(modeled))), modeled, r)
        after = r["tape"][len(draws) - 1]["state"] if draws else list(c["seed"])
        tape = r["tape"]
        pairs: list[tuple[str, Any, Any]] = [("LCG state after the modeled draws",
                                              _seed_words(m["state"]), after)]
        for k, (lab, _) in enumerate(draws):
            t = tape[k]
            if lab == "accuracy":
                pairs.append(("hit", bool(m["hit"]), t["result"] < t["args"][0]))
            elif lab == "hits":
                pairs.append(("hit count", None, None))  # checked through the damage dealt
            elif lab == "crit":
                pairs.append(("crit", bool(m["first_crit"]), t["result"] < t["args"][0]))
            elif lab == "roll":
                pairs.append(("damage roll R", m["first_roll"], t["result"]))
            elif lab == "secondary":
                pairs.append(("secondary succeeded", bool(m["secondary"]),
                              t["result"] < t["args"][0]))
        missed = any(line.startswith("|-miss|") for line in r["log"])
        pairs.append(("missed (Showdown: a -miss line)", m["drew_accuracy"] and not m["hit"],
                      missed))
        hp_before = r["before"]["defender"]["hp"]
        hp_after = r["after"]["defender"]["hp"]
        pairs.append(("damage dealt to the target", m["dealt"], hp_before - hp_after))
        _expect(component, i, c, r, pairs)
    return len(cases)


def check_accuracy(n: int, seed: int = 0) -> int:
    """``accuracy``/``accuracy_check`` (with immunity and the OHKO speed check before it) vs
    ``useMoveInner`` on Showdown: every move of the hit set, random accuracy and evasion stages,
    targets that must recharge (sleep moves always hit), partially trapped targets (always hit),
    Rage's stored accuracy, self-targeting moves (+1), ``accuracy: true`` moves (no draw). Checks
    the whole modeled draw prefix, hit/miss against Showdown's ``-miss`` line, damage dealt."""
    rng = random.Random(f"accuracy-{seed}")
    return _check_hit_cases("accuracy", [_hit_case(rng, False) for _ in range(n)])


def check_move_hit(n: int, seed: int = 0) -> int:
    """The whole hit of damaging moves with secondaries and multi-hit moves (``hit_pipeline``)
    vs ``useMoveInner``: accuracy, the 2-5 hit sample, crit and roll of the first hit, later hits
    repeating its damage until the target faints, then the secondary chance ceil(c*256/100)
    (-1 for confusion; none for par/brn/frz on a target sharing the move's type, none once the
    target has fainted): the draws in order and as a prefix of Showdown's tape, results, damage
    dealt and the LCG state after."""
    rng = random.Random(f"move_hit-{seed}")
    return _check_hit_cases("move_hit", [_hit_case(rng, True) for _ in range(n)])


# ---- the spec's worked example ---------------------------------------------------------------

_FULL = dict.fromkeys(STATS, 255)
_DV15 = dict.fromkeys(STATS, 30)


def _mon(species: str) -> dict[str, Any]:
    return {"species": species, "level": 100, "moves": ["bodyslam"], "ivs": _DV15, "evs": _FULL}


# (defender, seed, damage) measured in Showdown and written in the spec (section 4)
WORKED_EXAMPLES = (("Chansey", [1, 2, 3, 4], 279), ("Chansey", [5, 6, 7, 8], 253),
                   ("Starmie", [1, 2, 3, 4], 113))


def check_worked_examples(n: int = 1, seed: int = 0) -> int:
    """The spec's measured example: L100 Tauros Body Slam on L100 Chansey, 279 with seed
    1,2,3,4 and 253 with 5,6,7,8; on Starmie 113 with 1,2,3,4; the pipeline's damage must equal
    these numbers and Showdown's."""
    cases = [{"attacker": _mon("Tauros"), "defender": _mon(d), "move": "bodyslam",
              "attacker_ops": [], "defender_ops": [], "seed": s} for d, s, _ in WORKED_EXAMPLES]
    _check_hit_cases("worked_examples", cases)
    reports = _probe("probe_hit", cases)
    mine = _run_hits(cases, reports)
    for i, ((_, _, expected), m) in enumerate(zip(WORKED_EXAMPLES, mine, strict=True)):
        _expect("worked_examples", i, cases[i], None, [("damage (spec 4)", m["dealt"], expected)])
    return len(cases)


# ---- move effects: one turn of the engine's step ---------------------------------------------

class Setup(NamedTuple):
    """A state random players seldom make, for a ``move_effects`` case of one move (where the
    other side has PP)."""

    disabled: bool = False  # the user without a status, disabled on another move for the case
    replies: tuple[str, ...] = ()  # the other side's moves, turn by turn
    # the user's HP (0: as it is; negative: that far below its max, no case if it cannot be)
    hp: int = 0
    confused: bool = False  # the user confused, for this turn at least
    poisoned: bool = False  # the user poisoned (no case if it holds another status)
    # (stage name, stage) of the user's and the other active's stages (no case where a
    # Transform or a paralysis/burn penalty holds the stat: ``spec_support.stage_settable``)
    stages: tuple[tuple[str, int], ...] = ()
    foe_stages: tuple[tuple[str, int], ...] = ()
    volatiles: tuple[str, ...] = ()  # plain volatiles the user holds
    foe_without: tuple[str, ...] = ()  # plain volatiles the other active does not hold
    foe_frozen: bool = False  # the other active frozen (no case if it cannot be)
    foe_substitute: bool = False  # the other active behind a Substitute at its full HP
    substitute: bool = False  # the user behind a Substitute at its full HP
    # the leads of two pool teams (``lockstep.pool_team``), the case from the battle's start:
    # the user's species, and the species the other side's is drawn from
    lead: str = ""
    foe_leads: tuple[str, ...] = ()
    lead_moves: int = 0  # with ``lead``: every member of both teams knows this many moves (0: 2-4)
    # the user in the last turn of its own lock of this (trapping) move, as the turns before
    # leave it: the lock's damage stored, the foe trapped by it at that damage + 1 HP
    trap_last_turn: bool = False
    trap_damage: int = -1  # the lock's stored damage there (-1: drawn, 1 .. the foe's max HP - 1)
    foe_spent: bool = False  # the other active with PP left in one of its moves only
    # both actives with fakepartiallytrapped for one more turn, as the turn after a trapping
    # lock of 2-4 turns leaves them (partialtrappinglock.onAfterMove on its last turn)
    fake_trapped: bool = False
    # the LCG seed drawn (Showdown as the oracle) so that the case's first turn flinches the
    # other active: its log has ``cant ... flinch``
    flinches: bool = False
    # > 0: the user transformed (its Transform played in Showdown before the case, from another
    # slot) into a foe that knows the case's move in the case's slot, where the user's own
    # (base) slot holds this many PP
    transformed_base_pp: int = 0


def _double_resisting(move_type: str) -> tuple[str, ...]:
    """The random-battle species whose two types both resist ``move_type``."""
    a = T.TYPE_ID[move_type]
    return tuple(sp for sp in sorted(T.RANDOM_SETS) if all(
        t != T.TYPE_NONE and T.EFFECTIVENESS[a, t] < 0
        for t in T.SPECIES_TYPES[T.SPECIES_IDS[sp]]))


# Bide stored by a disabled user then put to sleep: endTurn's DisableMove handlers hold a status
# before two tied volatiles (Disable, Bide); Growl first: it neither knocks the user out nor
# binds the foe. A confused Jump Kick / High Jump Kick user at 1 HP, the foe at +6 evasion and
# answering Growl (a hit would knock the user out first): it hurts itself or crashes on most
# cases (both ``directDamage``), which must knock it out; the same two, the user and the foe
# each behind a Substitute: Gen 1's directDamage then hurts the foe's Substitute instead.
# Recover, Soft-Boiled and Rest 255 HP below the user's max: the Gen 1 glitch where they fail
# (unless the HP is a multiple of 256).
# Haze against a frozen foe at -6 Speed (so Haze mostly comes first): the thawed foe's queued
# move becomes 'cannotmove' because it has yet to act. Bide's release into a Substitute that
# survives it: a slower foe behind a full Substitute answers Sonic Boom (20 HP, so lastDamage is
# 20) then Growl twice (lastDamage back to 0 before Bide adds it again): 40 released.
# Submission dealing 0 (getDamage's 2 or 3 halved twice by a double resistance; moveHit takes
# no recoil then): Chansey at -6 Attack (its random-battle set has the lowest stored Attack)
# into a +6 Defense double resister (the Defense past 255, so both stats quartered: Attack 4,
# Defense at most 249) without Reflect, at +6 accuracy and with Focus Energy (Gen 1's bug: a
# quarter of the crit chance, 6 / 256), so it hits and does not crit on most cases; the foe
# answers Growl (Attack at -6 already: nothing changes). A trapping lock's last turn whose
# repeated damage leaves the foe at 1 HP: the move's volatileStatus restarts partiallytrapped
# on every hit while the target stands (the lock's own onAfterMove does not on its last turn),
# which shows only where the turn ends before its residual: the user poisoned at 1 HP faints
# after its move (onAfterMoveSelf), and Gen 1 clears the turn's queue at a faint; no Leech
# Seed on the foe, which would knock it out first. The recoil and drain moves (Submission
# has setups of its own) also hit a full Substitute: Gen 1 takes the recoil and drains only
# where it holds (``substitute.onTryHit``), so either outcome tells which one the engine has.
# Disable at +6 accuracy against a foe with PP left in one move only: its onStart samples
# among the moves with PP (one: random(1)), not among all the foe's moves.
# Fire Spin's lock whose first hit dealt 0 (a double resister, Rock/Water, at +6 Special
# against the user at -6: getDamage's 2 halved twice), so its stored damage is 0: the lock's
# last turn repeats 0, with no crit or roll drawn (getDamage returns the lock's damage before
# the formula whatever it is); no Leech Seed on the foe, which would knock it out first.
# Transform between two Pokemon that each know 3 moves: Showdown has no slot 3 on either side,
# base or not.
# Headbutt (30% flinch) by the faster side in the turn after a trapping lock ended, the foe
# answering Growl, with an LCG seed under which it flinches: the residual then has the foe's two
# duration volatiles (fakepartiallytrapped, flinch) against the user's one, so its shuffle
# draws for the slower side's group alone. Twice, so that the user is side 1 in one of the two
# (the residual's order depends on which side is faster).
# Wrap between two leads of one species (so the same stats) at the same Speed stage, the user at
# +6 accuracy against the foe's evasion at 0, the foe answering Growl: the lock and the trap are
# one duration volatile a side at speeds that tie, so the residual shuffles its two handlers as
# one group (a draw that a count of either side's handlers alone would not make).
# Thrash's lock, then the faster foe's Wrap (at +6 accuracy, the user at -6 Speed) on its second
# turn: the trapped user cannot move, and its lock keeps its counter (no tryMoveHit ran), which
# a count-down outside the move's own use would take.
# Transform between two leads of one level (so the same level, IVs and EVs) and different base
# Speeds, the foe at Speed stage 0: Transform's setSpecies caches as the user's speed the foe's
# own, so the eachEvent('Update') after the move ties the two (a draw) where the user's old
# speed did not.
# Metronome by a user transformed into a foe that knows it in the slot where the user's own
# move has 63 PP (Gen 1's deductPP underflows a forced use at 0 PP to 63): mods/gen1/scripts.ts
# useMove gives the base slot one PP modulo 64, so it wraps to 0.
NO_SETUP = Setup()
_ONE_HP_CONFUSED = (Setup(replies=("growl",), hp=1, confused=True,
                          foe_stages=(("evasion", 6),)),
                    Setup(replies=("growl",), confused=True, foe_stages=(("evasion", 6),),
                          substitute=True, foe_substitute=True))
_GAP_255 = (Setup(hp=-255),)
_ZERO_DAMAGE = Setup(replies=("growl",), lead="chansey", foe_leads=_double_resisting("Fighting"),
                     stages=(("accuracy", 6), ("atk", -6)), foe_stages=(("def", 6),),
                     volatiles=("focusenergy",), foe_without=("reflect",))
_TRAP_LAST = (NO_SETUP, Setup(hp=1, poisoned=True, foe_without=("leechseed",),
                              trap_last_turn=True))
_INTO_SUBSTITUTE = (NO_SETUP, Setup(foe_substitute=True))
_TIED_TRAP = Setup(replies=("growl",), lead="tauros", foe_leads=("tauros",),
                   stages=(("accuracy", 6), ("spe", 0)), foe_stages=(("evasion", 0), ("spe", 0)))
_TRAPPED_IN_LOCK = Setup(replies=("growl", "wrap"), stages=(("spe", -6),),
                         foe_stages=(("spe", 6), ("accuracy", 6), ("def", 6)))
_TRANSFORM_TIE = Setup(lead="tauros", foe_leads=("alakazam", "exeggutor", "chansey", "starmie",
                                                  "jynx", "zapdos"), foe_stages=(("spe", 0),))
_FLINCH_AFTER_TRAP = Setup(replies=("growl",), stages=(("spe", 6),), foe_stages=(("spe", -6),),
                           fake_trapped=True, flinches=True)
# Minimize and Defense Curl at +6: the boost changes nothing, so moveHit fails the move before
# its volatile
_AT_CAP = {"minimize": (NO_SETUP, Setup(stages=(("evasion", 6),))),
           "defensecurl": (NO_SETUP, Setup(stages=(("def", 6),)))}
# A move with several setups is a case entry per setup (:func:`move_effect_entries`).
SETUPS: dict[str, tuple[Setup, ...]] = {
    "bide": (Setup(disabled=True, replies=("growl", "spore")),
             Setup(replies=("sonicboom", "growl", "growl"), foe_stages=(("spe", -6),),
                   foe_substitute=True)),
    "jumpkick": _ONE_HP_CONFUSED, "highjumpkick": _ONE_HP_CONFUSED,
    "recover": _GAP_255, "softboiled": _GAP_255, "rest": _GAP_255,
    "haze": (Setup(foe_frozen=True, foe_stages=(("spe", -6),)),),
    "submission": (NO_SETUP, _ZERO_DAMAGE, _ZERO_DAMAGE),
    "wrap": (*_TRAP_LAST, _TIED_TRAP), "bind": _TRAP_LAST, "clamp": _TRAP_LAST,
    "firespin": (*_TRAP_LAST, Setup(lead="charizard", foe_leads=_double_resisting("Fire"),
                                    foe_without=("leechseed",), trap_last_turn=True,
                                    trap_damage=0)),
    "transform": (NO_SETUP, Setup(lead="ditto", foe_leads=("ditto", "mew", "snorlax", "tauros"),
                                  lead_moves=3), _TRANSFORM_TIE),
    "takedown": _INTO_SUBSTITUTE, "doubleedge": _INTO_SUBSTITUTE, "absorb": _INTO_SUBSTITUTE,
    "megadrain": _INTO_SUBSTITUTE, "leechlife": _INTO_SUBSTITUTE, **_AT_CAP,
    "disable": (NO_SETUP, Setup(stages=(("accuracy", 6),), foe_spent=True)),
    "headbutt": (NO_SETUP, _FLINCH_AFTER_TRAP, _FLINCH_AFTER_TRAP),
    "thrash": (NO_SETUP, _TRAPPED_IN_LOCK),
    "metronome": (NO_SETUP, Setup(transformed_base_pp=63))}


def move_effect_entries() -> list[tuple[int, Setup]]:
    """``move_effects``' entries in order: each supported move with each of its setups (one
    entry with :data:`NO_SETUP` for a move without)."""
    from envport.envs.pokemon_gen1 import spec_support as SS

    return [(int(m), setup) for m in SS.NEW_MOVES
            for setup in SETUPS.get(S.MOVE_NAME[int(m)], (NO_SETUP,))]


def at_move_request(state: Mapping[str, Any]) -> bool:
    """Both sides of a reference state choose a move (not over, no forced switch)."""
    return not state["battle.ended"] and bool(state["mask"][:, :4].any(axis=1).all())


def _move_effect_state(ref: Any, rng: np.random.Generator, seed: int, move: int, user: int,
                       foe_out_of_pp: bool, setup: Setup = NO_SETUP
                       ) -> tuple[dict, int, list[int]] | None:
    """A random-battle state at a move request (0-3 random turns in) written over so that
    ``user``'s active knows ``move`` (``spec_support.teach``, in place of a random slot), the
    other active knows the replies of a :data:`SETUPS` entry, and the entry's state is set;
    both actives hold random plain volatiles and stages (``spec_support``'s perturbations), the
    other active with no PP left when ``foe_out_of_pp`` (it struggles). As Showdown takes it
    back: ``(state, slot, the replies' slots)``, or None where that cannot be done."""
    from envport.envs.pokemon_gen1 import env as V
    from envport.envs.pokemon_gen1 import spec_support as SS

    turns = int(rng.integers(0, 4))
    if setup.lead:
        from envport.envs.pokemon_gen1.lockstep import pool_team

        teams = [pool_team(random.Random(int(rng.integers(2**32))), ref.battle.worker,
                           lead=lead, n_moves=setup.lead_moves or None)
                 for lead in (setup.lead, str(rng.choice(setup.foe_leads)))]
        ref.reset_with_teams(seed, (teams[user], teams[1 - user]))
        turns = 0  # the leads
    else:
        ref.reset(seed)
    for turn in range(turns + 1):
        state = ref.get_state()
        if not at_move_request(state):
            return None  # over, or a forced switch: no move this step
        if turn < turns:
            ref.step(V.legal_action(state, rng))
    b = SS.jax_free_copy(SS.battle_of(state))
    a = b.active
    slots = []
    for s, m in [(user, move), *((1 - user, S.MOVE_ID[r]) for r in setup.replies)]:
        k = int(a.slot[s])
        known = np.flatnonzero(b.team.moves[s, k] == m)
        if known.size:
            slots.append(int(known[0]))  # its PP as it is (no PP left: no case)
            continue
        free = [j for j in SS.replaceable_slots(b, s, k) if s == user or j not in slots[1:]]
        if not free:
            return None
        slots.append(free[rng.integers(len(free))])
        SS.teach(b, s, k, slots[-1], m, rng)
    if setup.disabled and (b.team.status[user, a.slot[user]] != T.STATUS_NONE or not SS.disable(
            b, user, rng, spare=slots[0], turns=FOLLOW_TURNS - 1)):
        return None
    for s in (0, 1):
        for name in SS.PLAIN_VOLATILES:
            if rng.random() < 0.2:
                a.volatiles[s] |= S.VOLATILE_BIT[name]
    for _ in range(int(rng.integers(0, 3))):
        SS.perturb_once(b, "stages", rng)
    if setup.hp:
        hp = setup.hp if setup.hp > 0 else int(b.team.maxhp[user, a.slot[user]]) + setup.hp
        if hp < 1:
            return None
        b.team.hp[user, a.slot[user]] = hp
    if setup.poisoned:
        if b.team.status[user, a.slot[user]] not in (T.STATUS_NONE, T.STATUS_PSN):
            return None
        b.team.status[user, a.slot[user]] = T.STATUS_PSN
        b.team.status_by_ally[user, a.slot[user]] = False
    if setup.confused:  # 2-5 turns left: still confused when it moves this turn
        a.volatiles[user] |= S.VOLATILE_BIT["confusion"]
        a.confusion_time[user] = rng.integers(2, 6)
    foe, j = 1 - user, int(a.slot[1 - user])
    for s, stages in ((user, setup.stages), (foe, setup.foe_stages)):
        for name, stage in stages:
            if not SS.stage_settable(b, s, T.BOOST_INDEX[name]):
                return None
            SS.set_stage(b, s, T.BOOST_INDEX[name], stage)
    for name in setup.volatiles:
        a.volatiles[user] |= S.VOLATILE_BIT[name]
    for name in setup.foe_without:
        a.volatiles[foe] &= ~np.uint32(S.VOLATILE_BIT[name])
    if setup.foe_frozen:
        if (b.team.status[foe, j] != T.STATUS_NONE
                or (b.team.status[foe] == T.STATUS_FRZ).any()):  # Freeze Clause Mod
            return None
        b.team.status[foe, j] = T.STATUS_FRZ
        b.team.status_by_ally[foe, j] = False
    for s, k, behind in ((foe, j, setup.foe_substitute),
                         (user, int(a.slot[user]), setup.substitute)):
        if behind:  # mods/gen1/moves.ts substitute: floor(maxhp / 4) + 1 HP
            a.volatiles[s] |= S.VOLATILE_BIT["substitute"]
            a.substitute_hp[s] = int(b.team.maxhp[s, k]) // 4 + 1
    if setup.trap_last_turn and not _trap_last_turn(b, user, move, slots[0], rng,
                                                    setup.trap_damage):
        return None
    if foe_out_of_pp and not SS.empty_pp(b, foe):
        return None
    if setup.foe_spent and not SS.empty_pp(b, foe, keep=1, rng=rng):
        return None
    if setup.fake_trapped:
        if (int(a.volatiles[user]) | int(a.volatiles[foe])) & _NOT_IN_TRAP:
            return None
        for s in (user, foe):
            a.volatiles[s] |= S.VOLATILE_BIT["fakepartiallytrapped"]
            a.fake_trapped_duration[s] = 1
    transform_slot = -1
    if setup.transformed_base_pp:
        transform_slot = _to_transform(b, user, move, slots[0], setup.transformed_base_pp, rng)
        if transform_slot < 0:
            return None
    template = V.stored_json(state)
    assert template is not None  # the reference's own state
    got = SS.take_back(ref, b, state["seen"], template)
    # a locked user's request offers its move alone, as the first choice
    slot = 0 if setup.trap_last_turn else slots[0]
    if got is None or not got["mask"][user, slot]:
        return None
    if setup.flinches:
        got = _with_a_flinch(ref, b, state["seen"], template, user, (slot, slots[1]), rng)
    if transform_slot >= 0:
        got = _transformed(ref, got, user, transform_slot, slot, setup.transformed_base_pp, rng)
    return None if got is None else (got, slot, slots[1:])


def _to_transform(b: S.Battle, user: int, move: int, slot: int, base_pp: int,
                  rng: np.random.Generator) -> int:
    """``user``'s active (numpy, in place) with ``base_pp`` PP in its move slot ``slot`` and
    Transform in another of its slots, the other active knowing ``move`` in ``slot``: the
    Transform's slot, or -1 (nothing done) where either active cannot be taught so (bound,
    transformed, too few moves, or a move it would then know twice)."""
    from envport.envs.pokemon_gen1 import spec_support as SS

    t, a = b.team, b.active
    transform, foe = S.MOVE_ID["transform"], 1 - user
    k, j = int(a.slot[user]), int(a.slot[foe])
    if slot not in SS.replaceable_slots(b, foe, j) or (
            move in np.delete(t.moves[foe, j], slot)):
        return -1
    known = [i for i in range(S.N_MOVE_SLOTS) if t.moves[user, k, i] == transform]
    spare = known or [i for i in SS.replaceable_slots(b, user, k) if i != slot]
    if slot in known or not spare:
        return -1
    if t.moves[foe, j, slot] != move:
        SS.teach(b, foe, j, slot, move, rng)
    there = spare[rng.integers(len(spare))]
    if t.moves[user, k, there] != transform:
        SS.teach(b, user, k, there, transform, rng)
    t.pp[user, k, slot] = base_pp
    return there


def _transformed(ref: Any, got: dict[str, Any] | None, user: int, transform_slot: int,
                 slot: int, base_pp: int, rng: np.random.Generator) -> dict[str, Any] | None:
    """Showdown's state after a turn from ``got`` where ``user`` uses Transform (move slot
    ``transform_slot``) and the other side a random legal move: None unless the user stands
    transformed, its base slot ``slot`` at ``base_pp`` PP and its new move there usable."""
    foe = 1 - user
    if got is None or not got["mask"][user, transform_slot] or not got["mask"][foe, :4].any():
        return None
    moves = np.flatnonzero(got["mask"][foe, :4])
    action = np.zeros(2, np.int32)
    action[user] = transform_slot
    action[foe] = moves[rng.integers(len(moves))]  # not a switch: the user copies this active
    ref.step(action)
    after = ref.get_state()
    k, j = int(after["active.slot"][user]), int(got["active.slot"][foe])
    if not at_move_request(after) or not (
            after["active.transformed"][user] and after["mask"][user, slot]
            and after["team.moves"][user, k, slot] == got["team.moves"][foe, j, slot]
            and after["active.base_pp"][user, slot] == base_pp):
        return None
    return after


def _with_a_flinch(ref: Any, b: S.Battle, seen: Any, template: Mapping[str, Any], user: int,
                   choices: tuple[int, int], rng: np.random.Generator, tries: int = 40
                   ) -> dict[str, Any] | None:
    """``b`` (numpy, in place) with an LCG seed under which Showdown's next turn, the user on
    move slot ``choices[0]`` and the other side on ``choices[1]``, flinches the other active
    (its log's ``cant ... flinch``), taken back into ``ref``; None where none of ``tries`` seeds
    does. Showdown decides, so the case's own first turn (the same choices) flinches too."""
    from envport.envs.pokemon_gen1 import spec_support as SS

    action = np.zeros(2, np.int32)
    action[user], action[1 - user] = choices
    for _ in range(tries):
        SS.perturb_once(b, "prng", rng)
        if SS.take_back(ref, b, seen, template) is None:
            return None
        *_, info = ref.step(action)
        if any(line.startswith(f"|cant|p{2 - user}a:") and line.endswith("|flinch")
               for line in info["log"]):
            return SS.take_back(ref, b, seen, template)
    return None


# An active holding any of these is left out of a trapping lock's setup: each binds it to
# another move or keeps it (or the target) from moving, or stands between the hit and the target
_NOT_IN_TRAP = sum(S.VOLATILE_BIT[v] for v in (
    "lockedmove", "twoturnmove", "disable", "rage", "bide", "partialtrappinglock",
    "partiallytrapped", "fakepartiallytrapped", "mustrecharge", "invulnerability", "substitute",
    "confusion"))


def _trap_last_turn(b: S.Battle, user: int, move: int, slot: int,
                    rng: np.random.Generator, damage: int = -1) -> bool:
    """``user``'s active in the last turn of its lock of the trapping ``move`` (in its move
    slot ``slot``; numpy, in place), as mods/gen1/conditions.ts partialtrappinglock leaves it
    after its earlier turns: duration 1 of 2-5, the first hit's damage D stored (lastDamage:
    ``damage``, or drawn from 1 .. the foe's max HP - 1 where it is negative);
    the move selected and used last (``side.commitChoices`` has a locked user use
    ``side.lastSelectedMove``); the foe's active trapped by it (partiallytrapped restarted at 2
    by the turn before, 1 after its residual; maybeLocked once a turn past the first) at D + 1
    HP. False (nothing done) where either active holds a volatile of :data:`_NOT_IN_TRAP`, the
    user a status that keeps it from moving, or the foe one that costs it HP before the hit
    (residual damage after the move it cannot make, where it is faster)."""
    a, t = b.active, b.team
    foe = 1 - user
    k, j = int(a.slot[user]), int(a.slot[foe])
    if (int(a.volatiles[user]) | int(a.volatiles[foe])) & _NOT_IN_TRAP or t.hp[foe, j] < 2:
        return False
    if t.status[user, k] in (T.STATUS_SLP, T.STATUS_FRZ, T.STATUS_PAR) or t.status[foe, j] in (
            T.STATUS_PSN, T.STATUS_BRN, T.STATUS_TOX):
        return False
    total = int(rng.choice([2, 2, 2, 3, 3, 3, 4, 5]))  # partialtrappinglock.durationCallback
    if damage < 0:
        damage = int(rng.integers(1, int(t.maxhp[foe, j])))
    a.volatiles[user] |= S.VOLATILE_BIT["partialtrappinglock"]
    a.lock_duration[user], a.lock_total[user] = 1, total
    a.lock_damage[user], a.lock_move[user] = damage, move
    sd = b.side
    sd.last_selected_move[user], sd.last_selected_slot[user] = move, slot
    sd.last_enemy_selected_move[user] = sd.last_move[user] = sd.last_enemy_move[user] = move
    a.last_move[user] = move
    a.volatiles[foe] |= S.VOLATILE_BIT["partiallytrapped"]
    a.trapped_duration[foe], a.trapped_move[foe] = 1, move
    a.trapped_maybe_locked[foe] = total > 2
    t.hp[foe, j] = damage + 1
    return True


# Turns a case follows its move for while the user stays bound to it (Bide's release, the
# second turn of a charging move, a Thrash or Wrap lock, Rage).
FOLLOW_TURNS = 4


def check_move_effects(n: int, seed: int = 0) -> int:
    """Each supported move's effect: the engine's step (``engine.compiled``) against Showdown's,
    from random-battle states where one side's active uses the move and the other a random legal
    move, both actives holding random plain volatiles (Mist, the screens, Focus Energy, Leech
    Seed) and stages; while the user stays bound to its move (locked, charging, storing Bide,
    raging, trapping) the case goes on, up to :data:`FOLLOW_TURNS` turns, the user choosing the
    same slot where it may. The entries in turn (:func:`move_effect_entries`: a move once per
    setup of :data:`SETUPS`), in rounds of every entry: the user side alternates by round, and
    every other case the other active has no PP left (Struggle; Disable fails on it), each entry
    once with it and once without in two rounds; with PP, the case starts from the entry's
    setup and the other side replies as it says. Compared after
    each turn: every field of the flat state (HP, status, stages, volatiles and counters, PP,
    the LCG state), both sides' legal masks, and the ``(from, to)`` of every draw, in order."""
    from envport.core.seeds import derive_seed
    from envport.envs.pokemon_gen1 import env as V
    from envport.envs.pokemon_gen1 import spec_support as SS
    from envport.envs.pokemon_gen1.lockstep import jax_tape

    rng = np.random.default_rng(seed)
    entries = move_effect_entries()
    ref = V.ShowdownReference()
    done = tries = 0

    def moving(state: dict, p: int) -> np.ndarray:
        return np.flatnonzero(state["mask"][p, :4])

    try:
        while done < n:
            tries += 1
            if tries > 4 * n + 100:
                raise RuntimeError(f"move_effects: {done} of {n} cases after {tries} tries")
            i, rnd = done % len(entries), done // len(entries)
            (move, setup), user, foe_out_of_pp = entries[i], rnd % 2, (i + rnd) % 2 == 1
            setup = NO_SETUP if foe_out_of_pp else setup
            made = _move_effect_state(ref, rng, derive_seed(seed, tries), move, user,
                                      foe_out_of_pp, setup)
            if made is None:
                continue
            state, slot, reply_slots = made
            actions: list[list[int]] = []
            case = {"move": S.MOVE_NAME[move], "user": user, "slot": slot,
                    "setup": setup._asdict(),
                    "foe_out_of_pp": foe_out_of_pp, "battle_seed": derive_seed(seed, tries),
                    "actions": actions}
            for turn in range(FOLLOW_TURNS):
                if turn and (state["battle.ended"] or not all(moving(state, p).size
                                                               for p in (0, 1))
                             or not int(state["active.volatiles"][user]) & SS.MOVE_BOUND):
                    break
                action = np.zeros(2, np.int32)
                mine, foe = moving(state, user), moving(state, 1 - user)
                action[user] = slot if slot in mine else mine[rng.integers(len(mine))]
                reply = reply_slots[turn] if turn < len(reply_slots) else -1
                free = [f for f in foe if f not in reply_slots[turn + 1:]] or foe  # not too soon
                action[1 - user] = reply if reply in foe else free[rng.integers(len(free))]
                actions.append(action.tolist())
                ref.step(action)
                expected = ref.get_state()
                got, info = V.engine_step(state, action)
                for field in (*SS.field_names(), "mask"):
                    if not np.array_equal(got[field], expected[field]):
                        _fail("move_effects", done, case, f"{field} after turn {turn + 1}",
                              np.asarray(got[field]).tolist(),
                              np.asarray(expected[field]).tolist())
                tape = ref.tape()
                theirs = list(zip(tape["from"].tolist(), tape["to"].tolist(), strict=True))
                _expect("move_effects", done, case, None,
                        [(f"draws (from, to) of turn {turn + 1}", jax_tape(info),
                          theirs[:int(tape["count"])])])
                state = expected
            done += 1
    finally:
        ref.close()
    return done


# ---- the PRNG: both of Showdown's generators against its own PRNG class -------------------------

# One fixed sequence of API calls; every seed gets its own random arguments.
PRNG_PATTERN = ("float", "int", "range", "chance", "sample", "shuffle", "int", "chance", "range",
                "float", "sample", "int", "shuffle", "chance", "int", "range")
PRNG_SAMPLE_LEN = 8
PRNG_SHUFFLE_LEN = 7


def _prng_arguments(rng: random.Random) -> list[dict]:
    def span() -> int:  # Showdown's double arithmetic is exact up to 2**21 (see prng.py)
        return rng.choice([1, 2, 3, 6, 8, 39, 217, 255, 256, 65535, 65536, 2**21,
                           rng.randint(1, 2**21)])

    args: list[dict] = []
    for api in PRNG_PATTERN:
        if api == "int":
            args.append({"n": span()})
        elif api == "range":
            m = rng.randint(0, 70000)
            args.append({"m": m, "n": m + span()})
        elif api == "chance":
            d = rng.choice([1, 2, 16, 256, 1000, rng.randint(1, 65536)])
            args.append({"k": rng.randint(0, d), "d": d})
        elif api == "sample":
            args.append({"items": [rng.randint(-1000, 1000) for _ in range(PRNG_SAMPLE_LEN)],
                         "length": rng.randint(1, PRNG_SAMPLE_LEN)})
        elif api == "shuffle":
            end = rng.randint(0, PRNG_SHUFFLE_LEN)
            args.append({"start": rng.randint(0, max(end, 1)), "end": end})
        else:
            args.append({})
    return args


def _prng_calls(args: list[dict]) -> list[list]:
    """The same calls as Showdown's ``PRNG`` methods (the worker's ``prng`` op)."""
    calls: list[list] = []
    for api, a in zip(PRNG_PATTERN, args, strict=True):
        if api == "float":
            calls.append(["random"])
        elif api == "int":
            calls.append(["random", a["n"]])
        elif api == "range":
            calls.append(["random", a["m"], a["n"]])
        elif api == "chance":
            calls.append(["randomChance", a["k"], a["d"]])
        elif api == "sample":
            calls.append(["sample", a["items"][:a["length"]]])
        else:
            calls.append(["shuffle", list(range(PRNG_SHUFFLE_LEN)), a["start"], a["end"]])
    return calls


@jax.jit
@jax.vmap
def _jax_prng(state: Array, args: list[dict]) -> tuple[Array, list]:
    out = []
    for api, a in zip(PRNG_PATTERN, args, strict=True):
        raw = prng.next_u32(state)[1]
        if api == "float":
            state, v = prng.random(state)
        elif api == "int":
            state, v = prng.random(state, a["n"])
        elif api == "range":
            state, v = prng.random(state, a["m"], a["n"])
        elif api == "chance":
            state, v = prng.random_chance(state, a["k"], a["d"])
        elif api == "sample":
            state, v = prng.sample(state, a["items"], a["length"])
        else:
            state, v = prng.shuffle(state, jnp.arange(PRNG_SHUFFLE_LEN), a["start"], a["end"])
        out.append((raw, v))
    return state, out


def check_prng(n: int, seed: int = 0) -> int:
    """``prng.py`` against Showdown's own ``PRNG`` class (the worker's ``prng`` op): ``n // 2``
    Gen 5 seeds (four words; all zeros, all ones and 1,2,3,4 first) and ``n - n // 2`` ChaCha20
    ``sodium`` seeds (1-64 hex digits, padded as Showdown pads; all zeros and all ones first),
    each through the 16 calls of every API with random arguments (ranges up to 2**21): every
    raw output, value and final seed equal."""
    rng = random.Random(f"prng-{seed}")
    gen5: list = [[rng.randint(0, 65535) for _ in range(4)] for _ in range(n // 2)]
    gen5[:3] = [[0, 0, 0, 0], [65535] * 4, [1, 2, 3, 4]][:len(gen5)]
    sodium: list = ["sodium," + "".join(rng.choice("0123456789abcdef")
                                        for _ in range(rng.choice([1, 16, 32, 63, 64])))
                    for _ in range(n - n // 2)]
    sodium[:2] = ["sodium,0", "sodium," + "f" * 64][:len(sodium)]
    index = 0
    for seeds in (gen5, sodium):  # each generator one request and one batch
        args = [_prng_arguments(rng) for _ in seeds]
        replies = worker().request([{"op": "prng", "seed": s, "calls": _prng_calls(a)}
                                    for s, a in zip(seeds, args, strict=True)])
        cols = jax.tree.map(lambda *xs: jnp.asarray(np.stack(xs)), *args)
        end_state, out = _jax_prng(jnp.asarray(np.stack([prng.state_of_seed(s) for s in seeds])),
                                   cols)
        for i, reply in enumerate(replies):
            case = {"seed": seeds[i], "calls": _prng_calls(args[i])}
            if not reply["ok"]:
                raise RuntimeError(f"Showdown raised on prng case {json.dumps(case)}:\n"
                                   f"{reply['error']}")
            result = reply["result"]
            pairs: list[tuple[str, Any, Any]] = []
            for j, (api, (raw, value)) in enumerate(zip(PRNG_PATTERN, out, strict=True)):
                theirs = result["results"][j]
                if theirs["raw"]:
                    pairs.append((f"call {j} ({api}) raw output", int(raw[i]), theirs["raw"][0]))
                if api == "float":
                    mine: Any = float(value[i])
                    expected: Any = float(np.float32(theirs["value"]))
                elif api == "shuffle":
                    mine, expected = [int(x) for x in value[i]], theirs["value"]
                elif api == "chance":
                    mine, expected = bool(value[i]), theirs["value"]
                else:
                    mine, expected = int(value[i]), theirs["value"]
                pairs.append((f"call {j} ({api}) value", mine, expected))
            pairs.append(("final seed", prng.seed_of_state(end_state[i]), result["state"]))
            _expect("prng", index, case, None, pairs)
            index += 1
    return index


# ---- registry ------------------------------------------------------------------------------------

CHECKS: dict[str, Callable[[int, int], int]] = {
    "stats": check_stats,
    "boosts": check_boosts,
    "types": check_types,
    "crit": check_crit,
    "damage": check_damage,
    "accuracy": check_accuracy,
    "move_hit": check_move_hit,
    "worked_examples": check_worked_examples,
    "move_effects": check_move_effects,
    "prng": check_prng,
}


def component_checks(scale: str = "default", seed: int = 0) -> dict[str, Callable[[], None]]:
    """``{name: check}`` for ``Verification.components``: each runs its cases against Showdown
    (needs Node and the pinned package) and raises AssertionError at the first differing case."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {sorted(SCALES)}, got {scale!r}")
    counts = SCALES[scale]

    def make(name: str) -> Callable[[], None]:
        def check() -> None:
            CHECKS[name](counts[name], seed)
        check.__name__ = f"pokemon_gen1_{name}"
        check.__doc__ = CHECKS[name].__doc__
        return check

    return {name: make(name) for name in CHECKS}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="default", choices=sorted(SCALES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", choices=sorted(CHECKS))
    args = parser.parse_args(argv)
    for name in args.only or CHECKS:
        t0 = time.perf_counter()
        count = CHECKS[name](SCALES[args.scale][name], args.seed)
        print(f"{name:16s} {count:7d} equal: {UNITS[name]}  ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
