"""Type matchups and damage estimates from public information, shared by the heuristic player
(``agents.decide``) and the observation (``spec_support.observe``, through
:func:`features`).

Everything here is written over ``xp`` (numpy or jax.numpy) in int32 arithmetic (floor
divisions of non-negative numbers) until a final float32 scaling by a float32 reciprocal, so
numpy (the Showdown and client side) and XLA (the jitted step) give the same bits.

The scoring (``move_scores``, ``threat``; see ``agents`` for the heuristic that uses them):
a move's score is ``power x hits x effectiveness x4 x STAB x accuracy``; the threat of the
opponent's active is a STAB attack of base power 80 of each of its types, its attacking stat
estimated from its base stats at its level (random battles' DV 15 and 255 stat experience).

:func:`features` is what a serious Pokemon RL setup hands its policy so that it need not learn
the type chart from species and move ids: for each own Pokemon's move slots the effectiveness
against the opposing active's (shown) types, STAB, base power, accuracy, the heuristic's score
and an estimated fraction of the opponent's HP the move takes; for each own Pokemon its best
effectiveness against the opposing active, the opposing active's best STAB effectiveness
against it, the heuristic's threat estimate as a fraction of its HP, whether the opposing
active outspeeds it, and whether it would be outsped and knocked out. All from a side's view
(``spec_support._side``) and the opponent's view as the client sees it
(``spec_support.as_client_sees``): nothing a client does not hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

SPE = 4  # index of Speed in the five stored stats (atk, def, spa, spd, spe)
THREAT_POWER = 80
# A neutral STAB move of power 100, 100% accurate, single hit: the score the features scale to 1.
SCORE_UNIT = 100 * 2 * 4 * 3 * 100


def _special_types() -> np.ndarray:
    """Gen 1 decides physical / special by type; read it from the move table (each type's
    damaging moves share one category there, checked)."""
    special = np.zeros(T.N_TYPES, bool)
    damaging = T.MOVE_CATEGORY != T.CATEGORY_STATUS
    for t in range(len(T.TYPES)):
        cats = set(T.MOVE_CATEGORY[damaging & np.equal(T.MOVE_TYPE, t)].tolist())
        if len(cats) > 1:
            raise AssertionError(f"type {T.TYPES[t]} has moves of both categories")
        special[t] = cats == {T.CATEGORY_SPECIAL}
    return special


SPECIAL_TYPE = _special_types()
_SELF_KO = T.MOVE_SELFDESTRUCT
_DREAM_EATER = T.MOVE_IDS["dreameater"]


def _power_table() -> np.ndarray:
    """``int32[N_MOVES]``: each move's power, -1 where it is the attacker's level (see
    ``agents``' module doc)."""
    kind = T.MOVE_DAMAGE_KIND
    p = np.where(kind == T.DAMAGE_FORMULA, T.MOVE_BASE_POWER, 0).astype(np.int32)
    p = np.where((kind == T.DAMAGE_LEVEL) | (kind == T.DAMAGE_PSYWAVE), -1, p)
    p = np.where(kind == T.DAMAGE_FIXED, T.MOVE_FIXED_DAMAGE, p)
    p = np.where((T.MOVE_CATEGORY == T.CATEGORY_STATUS) | _SELF_KO, 0, p)
    p[0] = 0
    return p.astype(np.int32)


POWER = _power_table()


def eff4(move_type: Any, def_types: Any, xp: Any) -> Any:
    """Effectiveness x4 of attacks of ``move_type`` (any shape) on a Pokemon of ``def_types``
    ``[2]``: 0 (immune), 1, 2, 4, 8, 16."""
    eff = xp.asarray(T.EFFECTIVENESS.astype(np.int32))
    immune = xp.asarray(T.IMMUNE)
    mt = xp.asarray(move_type).astype(np.int32)[..., None]
    dt = xp.asarray(def_types).astype(np.int32)
    total = eff[mt, dt].sum(-1)  # -2..2
    scale = xp.asarray(np.array([1, 2, 4, 8, 16], np.int32))[total + 2]
    return xp.where(immune[mt, dt].any(-1), 0, scale).astype(np.int32)


def move_scores(moves: Any, own_types: Any, level: Any, opp_types: Any, opp_asleep: Any,
                xp: Any) -> tuple[Any, Any, Any]:
    """(score, damaging, effectiveness x4) of each of ``moves`` (``[..., 4]`` ids) of an attacker
    of types ``own_types`` (``[..., 2]``) and ``level`` (broadcasting against ``moves``) against
    the opponent's active of ``opp_types``."""
    moves = xp.asarray(moves).astype(np.int32)
    power = xp.take(xp.asarray(POWER), moves)
    power = xp.where(power < 0, xp.asarray(level).astype(np.int32), power)
    power = xp.where((moves == _DREAM_EATER) & ~xp.asarray(opp_asleep), 0, power)
    mtype = xp.take(xp.asarray(T.MOVE_TYPE.astype(np.int32)), moves)
    kind = xp.take(xp.asarray(T.MOVE_DAMAGE_KIND.astype(np.int32)), moves)
    formula = kind == T.DAMAGE_FORMULA
    e4 = eff4(mtype, opp_types, xp)
    ignore = xp.take(xp.asarray(T.MOVE_IGNORE_IMMUNITY), moves)
    e4 = xp.where(formula, e4, xp.where((e4 == 0) & ~ignore, 0, 4))
    own = xp.asarray(own_types).astype(np.int32)
    stab = xp.where(formula & (mtype[..., None] == own[..., None, :]).any(-1), 3, 2)
    hits = _hits(moves, xp)
    acc = accuracy(moves, xp)
    damaging = power > 0
    score = (power * hits * e4 * stab * acc).astype(np.int32)
    return xp.where(damaging, score, 0), damaging, e4


def _hits(moves: Any, xp: Any) -> Any:
    """``min + max`` hits of a multi-hit move, else 2 (twice the expected hits, in integers)."""
    lo = xp.take(xp.asarray(T.MOVE_MULTIHIT_MIN.astype(np.int32)), moves)
    hi = xp.take(xp.asarray(T.MOVE_MULTIHIT_MAX.astype(np.int32)), moves)
    return xp.where(lo > 0, lo + hi, 2)


def accuracy(moves: Any, xp: Any) -> Any:
    """Accuracy in percent (100 for moves that never miss)."""
    return xp.where(xp.take(xp.asarray(T.MOVE_ALWAYS_HITS), moves), 100,
                    xp.take(xp.asarray(T.MOVE_ACCURACY.astype(np.int32)), moves))


def estimated_stat(base: Any, level: Any) -> Any:
    """A random-battle stat (DV 15, 255 stat experience) from its base stat."""
    return (2 * base + 93) * level // 100 + 5


def estimated_hp(base: Any, level: Any) -> Any:
    """A random-battle HP stat (DV 15, 255 stat experience) from the base HP."""
    return (2 * base + 93) * level // 100 + level + 10


def staged(x: Any, stage: Any, xp: Any) -> Any:
    stage = xp.asarray(stage).astype(np.int32)
    return xp.where(stage >= 0, x * (2 + stage) // 2, x * 2 // xp.maximum(2 - stage, 1))


def threat(opp_species: Any, opp_level: Any, opp_types: Any, opp_present: Any, def_stats: Any,
           def_types: Any, xp: Any) -> Any:
    """The estimated damage of the opponent's STAB attack (of its ``opp_types``) on a Pokemon of
    stored stats ``def_stats`` ``[5]`` and types ``def_types`` ``[2]``."""
    base = xp.take(xp.asarray(T.BASE_STATS.astype(np.int32)), opp_species, axis=0)
    level = opp_level
    otypes = xp.asarray(opp_types).astype(np.int32)
    special = xp.take(xp.asarray(SPECIAL_TYPE), otypes)
    attack = xp.where(special, estimated_stat(base[3], level), estimated_stat(base[1], level))
    defense = xp.where(special, def_stats[3], def_stats[1])
    core = ((2 * level // 5 + 2) * THREAT_POWER * attack // xp.maximum(defense, 1)) // 50 + 2
    core = core * 3 // 2
    dmg = core * eff4(otypes, def_types, xp) // 4
    real = otypes < len(T.TYPES)
    return xp.where(opp_present, xp.where(real, dmg, 0).max(), 0)


def _f(x: Any, xp: Any) -> Any:
    return xp.asarray(x).astype(np.float32)


def _scale(x: Any, n: int, xp: Any) -> Any:
    """``x / n`` as a float32 multiplication by the float32 reciprocal (as XLA compiles it)."""
    return _f(x, xp) * np.float32(1.0 / n)


# Per own move slot: effectiveness, STAB, base power, accuracy, score, estimated HP fraction.
MOVE_FEATURES = 6
# Per own Pokemon: best effectiveness, the foe's STAB effectiveness on it, threat / HP,
# outsped, outsped and knocked out.
MEMBER_FEATURES = 5
SIZE = S.TEAM_SIZE * (S.N_MOVE_SLOTS * MOVE_FEATURES + MEMBER_FEATURES)


def features(mine: Mapping[str, Any], theirs: Mapping[str, Any], xp: Any = np) -> Any:
    """``float32[SIZE]``: the matchup of each own Pokemon (original team order) and its move
    slots against the opposing active (module doc); zeros where there is no opposing active or
    no own Pokemon. ``mine``: a side's view leaves (``spec_support._side``); ``theirs``: the
    opponent's as the client sees them (``spec_support.as_client_sees``)."""
    i32 = np.int32
    slot = xp.asarray(theirs["slot"]).astype(i32)
    safe = xp.maximum(slot, 0)
    o_fainted = xp.asarray(theirs["fainted"], bool)[safe]
    foe = (slot >= 0) & ~o_fainted
    o_species = xp.asarray(theirs["species"]).astype(i32)[safe]
    o_level = xp.asarray(theirs["level"]).astype(i32)[safe]
    o_types = xp.asarray(theirs["types"]).astype(i32)[safe]
    o_status = xp.asarray(theirs["status"]).astype(i32)[safe]
    o_boosts = xp.asarray(theirs["boosts"]).astype(i32)
    o_base = xp.take(xp.asarray(T.BASE_STATS.astype(np.int32)), o_species, axis=0)

    present = xp.asarray(mine["present"], bool)
    own_slot = xp.asarray(mine["slot"]).astype(i32)
    moves = xp.asarray(mine["moves"]).astype(i32)  # [6, 4]
    types = xp.asarray(mine["types"]).astype(i32)  # [6, 2]
    level = xp.asarray(mine["level"]).astype(i32)  # [6]
    stats = xp.asarray(mine["stats"]).astype(i32)  # [6, 5]
    hp = xp.asarray(mine["hp"]).astype(i32)
    maxhp = xp.maximum(xp.asarray(mine["maxhp"]).astype(i32), 1)
    status = xp.asarray(mine["status"]).astype(i32)
    own_boosts = xp.asarray(mine["boosts"]).astype(i32)

    score, damaging, e4 = move_scores(moves, types, level[:, None], o_types,
                                      o_status == T.STATUS_SLP, xp)
    mtype = xp.take(xp.asarray(T.MOVE_TYPE.astype(np.int32)), moves)
    formula = xp.take(xp.asarray(T.MOVE_DAMAGE_KIND.astype(np.int32)), moves) == T.DAMAGE_FORMULA
    stab = formula & (mtype[..., None] == types[:, None, :]).any(-1)
    power = xp.take(xp.asarray(POWER), moves)
    power = xp.where(power < 0, level[:, None], power)
    acc = accuracy(moves, xp)
    # The Gen 1 damage formula's core with the foe's defence estimated from its base stats,
    # times hits, STAB, effectiveness and accuracy, over the foe's estimated HP, in percent.
    special = xp.take(xp.asarray(SPECIAL_TYPE), mtype)
    attack = xp.where(special, stats[:, 2:3], stats[:, 0:1])
    defense = xp.where(special, estimated_stat(o_base[4], o_level),
                       estimated_stat(o_base[2], o_level))
    core = ((2 * level[:, None] // 5 + 2) * power * attack // xp.maximum(defense, 1)) // 50 + 2
    core = xp.where(formula, core * xp.where(stab, 3, 2) // 2 * e4 // 4, power * (e4 > 0))
    dmg = core * _hits(moves, xp) // 2 * acc // 100
    pct = xp.minimum(100 * dmg // xp.maximum(estimated_hp(o_base[0], o_level), 1), 200)
    live = (present[:, None] & (moves > 0)) & foe
    per_move = [_scale(e4, 16, xp), _f(stab, xp), _scale(power, 250, xp), _scale(acc, 100, xp),
                _scale(xp.minimum(score, 4 * SCORE_UNIT), SCORE_UNIT, xp),
                _scale(xp.where(damaging, pct, 0), 100, xp)]
    per_move = [xp.where(live, x, np.float32(0)) for x in per_move]

    best_e4 = xp.where(damaging, e4, 0).max(-1)
    foe_e4 = xp.where(o_types < len(T.TYPES), eff4(o_types, types[:, None, :], xp), 0).max(-1)
    danger = xp.stack([threat(o_species, o_level, o_types, foe, stats[i], types[i], xp)
                       for i in range(S.TEAM_SIZE)])
    o_spe = staged(estimated_stat(o_base[5], o_level), o_boosts[SPE], xp)
    o_spe = xp.where(o_status == T.STATUS_PAR, o_spe // 4, o_spe)
    stage = xp.where(xp.arange(S.TEAM_SIZE) == own_slot, own_boosts[SPE], 0)
    spe = staged(stats[:, SPE], stage, xp)
    spe = xp.where(status == T.STATUS_PAR, spe // 4, spe)
    outsped = o_spe > spe
    standing = present & ~xp.asarray(mine["fainted"], bool) & foe
    per_member = [_scale(best_e4, 16, xp), _scale(foe_e4, 16, xp),
                  _scale(xp.minimum(100 * danger // maxhp, 200), 100, xp),
                  _f(outsped, xp), _f(outsped & (danger >= hp), xp)]
    per_member = [xp.where(standing, x, np.float32(0)) for x in per_member]
    return xp.concatenate([xp.stack(per_move, -1).reshape(S.TEAM_SIZE, -1),
                           xp.stack(per_member, -1)], axis=1).reshape(-1).astype(np.float32)
