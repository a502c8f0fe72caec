"""Gen 1 battle mechanics as pure JAX functions, each following one Showdown function.

Every function is jittable and vmappable (elementwise over leading axes); functions that draw take
the LCG state (``prng.py``, ``(hi, lo)`` uint32) first and return the new state first, drawing
exactly what Showdown draws, in Showdown's order, and nothing when Showdown draws nothing. Integer
arithmetic is int32 throughout; Showdown's doubles are exact for every value reached here (the
largest product is the damage formula's ``82 * 255 * 255``).

Files cited are those of the pinned ``pokemon-showdown`` 0.11.11 (TypeScript sources shipped in
the package): ``sim/battle.ts``, ``sim/pokemon.ts``, ``data/mods/gen1/{scripts,moves}.ts``.
Gen 1 inherits the rest from gen2 .. base.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1 import tables as T

Array = jax.Array

I32 = jnp.int32


def _i(x: Any) -> Array:
    return jnp.asarray(x).astype(I32)


# ---- stats -------------------------------------------------------------------------------------

def normalize_iv(iv: Any) -> Array:
    """``sim/pokemon.ts`` constructor: IVs clamped to 0..31, then ``&= 30`` for gen <= 2 (DVs
    are represented as even IVs)."""
    return jnp.clip(_i(iv), 0, 31) & 30


def normalize_ev(ev: Any) -> Array:
    """``sim/pokemon.ts`` constructor: EVs (stat experience) clamped to 0..255."""
    return jnp.clip(_i(ev), 0, 255)


def stat_value(base: Any, iv: Any, ev: Any, level: Any, is_hp: Any) -> Array:
    """``sim/battle.ts statModify`` (no natures in Gen 1):
    HP = floor(floor(2B + IV + floor(EV/4) + 100) * L / 100 + 10),
    other = floor(floor(2B + IV + floor(EV/4)) * L / 100 + 5). IV/EV as given to the set."""
    core = 2 * _i(base) + normalize_iv(iv) + normalize_ev(ev) // 4
    level = _i(level)
    hp = (core + 100) * level // 100 + 10
    other = core * level // 100 + 5
    return jnp.where(jnp.asarray(is_hp), hp, other)


def calc_stats(species: Any, level: Any, ivs: Any, evs: Any) -> Array:
    """All six stats ``[hp, atk, def, spa, spd, spe]`` of a set (``sim/battle.ts spreadModify``
    over ``Dex.forGen(1)`` base stats, Special in both spa and spd). ``ivs``/``evs``: ``[..., 6]``
    in that order."""
    base = jnp.asarray(T.BASE_STATS)[_i(species)]
    is_hp = jnp.arange(6) == 0
    return stat_value(base, ivs, evs, _i(level)[..., None], is_hp)


# ---- stat stages (data/mods/gen1/scripts.ts pokemon.boostBy / modifyStat) -----------------------

# [100, 66, 50, 40, 33, 28, 25] / 100 below 0, [1, 1.5, ..., 4] above: the multiplier of stage s
# is STAGE_NUM[s + 6] / 100 (also the accuracy/evasion table of tryMoveHit).
STAGE_NUM = np.array([25, 28, 33, 40, 50, 66, 100, 150, 200, 250, 300, 350, 400], np.int32)

BOOST_FALSE = 0  # boostBy returned false: the stage was already at +6 (-6), nothing happened
BOOST_CHANGED = 1  # returned true
BOOST_AT_LIMIT = 2  # returned 0: boosted at 999 (or dropped at 1); stage moved by delta -/+ 1


def modify_stat(value: Any, numerator: Any, denominator: Any) -> Array:
    """``pokemon.modifyStat(stat, n/d)`` = max(1, floor(value * n / d)); the paralysis (1/4) and
    burn (1/2) penalties. Showdown multiplies by the double n/d; for the ratios used (quarters,
    halves and the hundredths of :data:`STAGE_NUM`) the floor is the same as in integers."""
    return jnp.maximum(_i(value) * _i(numerator) // _i(denominator), 1)


def stage_stat(stored: Any, stage: Any) -> Array:
    """The modified stat recomputed from the stored one at ``stage`` (boostBy's recalculation:
    ``modifiedStats = storedStats`` then ``modifyStat(table[stage])``), before the 999 cap."""
    num = jnp.asarray(STAGE_NUM)[_i(stage) + 6]
    return modify_stat(stored, num, 100)


def boost_by(stage: Any, modified: Any, stored: Any, delta: Any,
             accuracy_or_evasion: Any) -> tuple[Array, Array, Array]:
    """One stat of ``data/mods/gen1/scripts.ts pokemon.boostBy({stat: delta})``.

    Returns ``(stage, modified, result)`` with result :data:`BOOST_FALSE`, :data:`BOOST_CHANGED`
    or :data:`BOOST_AT_LIMIT`. Accuracy/evasion only move their stage. Other stats: a boost of a
    stat already at 999 (a drop at 1) moves the stage by ``delta - 1`` (``+ 1``) and leaves the
    stat; otherwise the stat is recomputed from the stored value (dropping any paralysis/burn
    penalty) and capped at 999 **only when delta > 0** (a drop from +6 may leave it above 999).
    """
    stage, modified, stored, delta = _i(stage), _i(modified), _i(stored), _i(delta)
    acc_eva = jnp.asarray(accuracy_or_evasion)
    # delta 0 (never sent by battle.boost) still "changes" accuracy/evasion, nothing else
    skip = ((delta > 0) & (stage >= 6)) | ((delta < 0) & (stage <= -6)) | ((delta == 0) & ~acc_eva)
    moved = jnp.clip(stage + delta, -6, 6)
    up_limit = (delta > 0) & (modified == 999)
    down_limit = (delta < 0) & (modified == 1)
    at_limit = ~acc_eva & (up_limit | down_limit)
    limit_stage = jnp.where(up_limit, moved - 1, moved + 1)
    new_stage = jnp.where(skip, stage, jnp.where(at_limit, limit_stage, moved))
    recomputed = stage_stat(stored, moved)
    recomputed = jnp.where(delta > 0, jnp.minimum(recomputed, 999), recomputed)
    changed = ~skip & ~at_limit
    new_modified = jnp.where(changed & ~acc_eva, recomputed, modified)
    result = jnp.where(skip, BOOST_FALSE, jnp.where(at_limit, BOOST_AT_LIMIT, BOOST_CHANGED))
    return new_stage, new_modified, result.astype(I32)


def clear_boosts_stats(stored: Any) -> Array:
    """``pokemon.clearBoosts`` (Haze): every modified stat back to the stored one."""
    return _i(stored)


def switch_in_stats(stored: Any, status: Any) -> Array:
    """``sim/pokemon.ts setSpecies`` (switch-in, clearVolatile): modified = stored, then the
    paralysis (Speed x1/4) and burn (Attack x1/2) penalties applied again. ``stored``:
    ``[..., 5]`` (atk, def, spa, spd, spe)."""
    stored = _i(stored)
    status = _i(status)[..., None]
    idx = jnp.arange(5)
    par = (status == T.STATUS_PAR) & (idx == 4)
    brn = (status == T.STATUS_BRN) & (idx == 0)
    out = jnp.where(par, modify_stat(stored, 1, 4), stored)
    return jnp.where(brn, modify_stat(out, 1, 2), out)


# ---- types ---------------------------------------------------------------------------------------

def is_immune(move_type: Any, target_types: Any, ignore_immunity: Any = False) -> Array:
    """``sim/pokemon.ts runImmunity`` (``Dex.getImmunity`` per defending type): True when the
    target is immune. ``ignoreImmunity`` moves and the typeless ``???`` are never blocked."""
    move_type = _i(move_type)
    types = _i(target_types)
    imm = jnp.asarray(T.IMMUNE)[move_type[..., None], types].any(axis=-1)
    return imm & ~jnp.asarray(ignore_immunity) & (move_type != T.TYPE_TYPELESS)


def effectiveness(move_type: Any, target_type: Any) -> Array:
    """``Dex.getEffectiveness(type, targetType)`` for one defending type: -1, 0 or 1."""
    return jnp.asarray(T.EFFECTIVENESS)[_i(move_type), _i(target_type)].astype(I32)


def apply_type_effectiveness(damage: Any, move_type: Any, target_types: Any) -> Array:
    """``scripts.ts getDamage`` step 6b: for each defending type in order, x20/10 (super
    effective) or x5/10 (resisted), flooring after each."""
    damage = _i(damage)
    types = _i(target_types)
    for k in range(types.shape[-1]):
        e = effectiveness(move_type, types[..., k])
        damage = jnp.where(e > 0, damage * 20 // 10, jnp.where(e < 0, damage * 5 // 10, damage))
    return damage


def has_type(types: Any, t: Any) -> Array:
    """``pokemon.hasType(t)`` on the current types (``[..., 2]``, padded with TYPE_NONE)."""
    return (_i(types) == _i(t)[..., None]).any(axis=-1)


# ---- accuracy (scripts.ts tryMoveHit) --------------------------------------------------------

class Accuracy(NamedTuple):
    always_hits: Array  # accuracy ended up `true`: no draw
    numerator: Array  # the k of randomChance(k, 256); read only where not always_hits
    stored: Array  # the value tryMoveHit writes back into lockedmove/rage .accuracy (-1: none)


def accuracy(move: Any, attacker_accuracy_stage: Any, target_evasion_stage: Any,
             target_must_recharge: Any = False, override: Any = -1,
             trapped_by_attacker: Any = False) -> Accuracy:
    """The accuracy of ``data/mods/gen1/scripts.ts tryMoveHit``, before its draw.

    * ``accuracy: true`` moves, and sleep moves against a target that must recharge: always hit.
    * otherwise a = floor(acc% * 255 / 100), replaced by ``override`` (the attacker's
      ``lockedmove``/``rage`` .accuracy, -1 for none), then floor(a * table[accStage] / 100),
      floor(a * table[-evaStage] / 100), clamped to 1..255 (and stored back, ``stored``).
    * ``runEvent('Accuracy')``: the target partially trapped by the attacker is always hit
      (``conditions.ts partiallytrapped.onAccuracy``).
    * self-targeting moves get +1 (no 1/256 miss).
    """
    move = _i(move)
    always = jnp.asarray(T.MOVE_ALWAYS_HITS)[move]
    always = always | ((jnp.asarray(T.MOVE_STATUS)[move] == T.STATUS_SLP)
                       & jnp.asarray(target_must_recharge))
    a = _i(jnp.asarray(T.MOVE_ACCURACY)[move]) * 255 // 100
    override = _i(override)
    a = jnp.where(override >= 0, override, a)
    stage_num = jnp.asarray(STAGE_NUM)
    a = a * stage_num[_i(attacker_accuracy_stage) + 6] // 100
    a = a * stage_num[-_i(target_evasion_stage) + 6] // 100
    a = jnp.clip(a, 1, 255)
    stored = jnp.where(always | (override < 0), -1, a)
    always = always | jnp.asarray(trapped_by_attacker)
    a = a + jnp.asarray(T.MOVE_TARGET_SELF)[move].astype(I32)
    return Accuracy(always, a, stored)


def accuracy_check(state: Any, acc: Accuracy) -> tuple[Array, Array]:
    """The hit draw of tryMoveHit: ``randomChance(a, 256)`` unless the move always hits (no
    draw). Returns ``(state, hit)``."""
    new_state, hit = prng.random_chance(state, acc.numerator, 256)
    return (jnp.where(acc.always_hits[..., None], jnp.asarray(state, jnp.uint32), new_state),
            acc.always_hits | hit)


def ohko_fails(attacker_speed: Any, target_speed: Any) -> Array:
    """tryMoveHit: an OHKO move fails (no draw) when the target's current Speed is higher."""
    return _i(target_speed) > _i(attacker_speed)


# ---- critical hits (scripts.ts getDamage) ----------------------------------------------------

def crit_chance(base_speed: Any, focus_energy: Any, crit_ratio: Any) -> Array:
    """c = floor(baseSpe / 2) (the set's species, so Transform does not change it); Focus Energy
    halves it (the Gen 1 bug), else c = clampIntRange(2c, 1, 255); crit ratio 1 halves again,
    crit ratio 2 gives clampIntRange(4c, 1, 255)."""
    c = _i(base_speed) // 2
    c = jnp.where(jnp.asarray(focus_energy), c // 2, jnp.clip(c * 2, 1, 255))
    ratio = _i(crit_ratio)
    return jnp.where(ratio == 1, c // 2, jnp.where(ratio == 2, jnp.clip(c * 4, 1, 255), c))


def crit_check(state: Any, chance: Any) -> tuple[Array, Array]:
    """``randomChance(c, 256)``; no draw (and no crit) when c = 0."""
    chance = _i(chance)
    new_state, crit = prng.random_chance(state, chance, 256)
    drew = chance > 0
    return jnp.where(drew[..., None], new_state, jnp.asarray(state, jnp.uint32)), drew & crit


# ---- secondary effects (scripts.ts moveHit) --------------------------------------------------

def secondary_numerator(chance_percent: Any, confusion: Any) -> Array:
    """ceil(c * 256 / 100), minus one for a confusion secondary (10% -> 25/256)."""
    c = (_i(chance_percent) * 256 + 99) // 100
    return c - jnp.asarray(confusion).astype(I32)


def secondary_applies(move: Any, target_types: Any) -> Array:
    """False when moveHit skips the secondary without a draw: a par/brn/frz secondary against a
    target that has the move's type (Body Slam never paralyzes a Normal type). Also False for
    moves with no secondary."""
    move = _i(move)
    kind = jnp.asarray(T.MOVE_SECONDARY_KIND)[move]
    status = jnp.asarray(T.MOVE_SECONDARY_STATUS)[move]
    shares = has_type(target_types, jnp.asarray(T.MOVE_TYPE)[move])
    blocked = ((kind == T.SECONDARY_STATUS)
               & ((status == T.STATUS_PAR) | (status == T.STATUS_BRN) | (status == T.STATUS_FRZ))
               & shares)
    return (kind != T.SECONDARY_NONE) & ~blocked


def secondary_check(state: Any, move: Any) -> tuple[Array, Array]:
    """The secondary's ``randomChance(ceil(c*256/100) [-1], 256)`` (call only where
    :func:`secondary_applies`). Returns ``(state, success)``."""
    move = _i(move)
    num = secondary_numerator(jnp.asarray(T.MOVE_SECONDARY_CHANCE)[move],
                              jnp.asarray(T.MOVE_SECONDARY_KIND)[move] == T.SECONDARY_CONFUSION)
    return prng.random_chance(state, num, 256)


# ---- multi-hit (scripts.ts tryMoveHit) -----------------------------------------------------------

HITS_2_TO_5 = np.array([2, 2, 2, 3, 3, 3, 4, 5], np.int32)


def multihit_count(state: Any, move: Any) -> tuple[Array, Array, Array]:
    """Hits of a multi-hit move: [2, 5] -> ``sample([2,2,2,3,3,3,4,5])``; a fixed count (Double
    Kick, Twineedle, Bonemerang: 2) draws nothing. Showdown's branch for other ranges,
    ``random(lo, hi + 1)``, is left out: no Gen 1 move has one (``test_pokemon_mechanics``
    checks the table). Returns ``(state, hits, drew)``; hits = 1 (and no draw) for other
    moves."""
    move = _i(move)
    lo = _i(jnp.asarray(T.MOVE_MULTIHIT_MIN)[move])
    hi = _i(jnp.asarray(T.MOVE_MULTIHIT_MAX)[move])
    s_sample, h_sample = prng.sample(state, jnp.broadcast_to(jnp.asarray(HITS_2_TO_5),
                                                             (*lo.shape, 8)))
    drew = (lo == 2) & (hi == 5)
    new_state = jnp.where(drew[..., None], s_sample, jnp.asarray(state, jnp.uint32))
    hits = jnp.where(drew, h_sample, jnp.where(lo > 0, lo, 1))
    return new_state, _i(hits), drew


# ---- damage (scripts.ts getDamage) -----------------------------------------------------------

KIND_NUMBER = 0  # getDamage returned a number
KIND_FALSE = 1  # returned false (immune, Counter failed, Psywave softlock level)
KIND_UNDEFINED = 2  # returned undefined (base power 0: status moves)


class DamageInputs(NamedTuple):
    """What ``getDamage(source, target, move)`` reads (one battle each, or batched)."""

    move: Any
    attacker_level: Any
    attacker_base_speed: Any  # base Speed of the attacker's *set* species (crit chance)
    attacker_types: Any  # [2] current types (STAB)
    attacker_modified: Any  # [5] modifiedStats (atk, def, spa, spd, spe)
    attacker_unmodified: Any  # [5] baseStoredStats (getStat(stat, true): crits)
    attacker_focus_energy: Any
    target_types: Any  # [2]
    target_modified: Any  # [5]
    target_unmodified: Any  # [5]
    target_reflect: Any
    target_light_screen: Any
    target_hp: Any  # Super Fang
    trap_lock_damage: Any = -1  # attacker's partialtrappinglock.damage if it locks this target
    preset_damage: Any = -1  # move.damage set by an earlier hit of a multi-hit move
    last_damage: Any = 0  # battle.lastDamage (Counter)
    counter_last_move: Any = 0  # target.side.lastEnemyMove's id (Counter), 0 = none
    counter_last_selected_is_counter: Any = False  # target.side.lastEnemySelectedMove == counter


class Damage(NamedTuple):
    kind: Array  # KIND_*
    damage: Array  # the number (0 unless kind == KIND_NUMBER)
    crit: Array
    drew_crit: Array
    crit_chance: Array  # the numerator of the crit draw
    drew_psywave: Array
    psywave_to: Array  # the upper bound of psywave's random(1, to)
    drew_roll: Array
    roll: Array  # R of random(217, 256)


def _stat(stats: Any, index: Array) -> Array:
    return jnp.take_along_axis(_i(stats), index[..., None], axis=-1)[..., 0]


def get_damage(state: Any, x: DamageInputs) -> tuple[Array, Damage]:
    """``data/mods/gen1/scripts.ts actions.getDamage``, in its order (spec 4, steps 1-7):

    1. immunity (``runImmunity``) -> false; OHKO -> 65535; ``damageCallback`` (Counter, Psywave
       with its ``random(1, trunc(1.5 L))`` draw, Super Fang); ``damage: 'level'``; a fixed
       ``damage``; Normal partial trapping vs Ghost -> 0; the attacker's partial-trapping lock on
       this target -> its stored damage; base power 0 -> undefined. None of these draws a crit.
    2. crit: ``randomChance(c, 256)`` unless c = 0. A, D: modifiedStats, Reflect/Light Screen
       double D; a crit uses baseStoredStats for both, no screens, and doubles the level (& 255).
    3. A or D >= 256: A = max(1, floor(A/4) & 255), D = floor(D/4) & 255 (0 -> 1).
    4. Explosion/Self-Destruct: D = max(1, floor(D/2)) (physical only).
    5. d = floor(floor(2L/5) + 2) * BP * A / D); d = min(floor(d/50), 997) + 2.
    6. STAB +floor(d/2) (never for ???), then per defending type x2 / x1/2 with floors.
    7. d = 0 -> 0; d > 1 -> floor(d * random(217, 256) / 255); d = 1 is returned unrolled.
    """
    state = jnp.asarray(state, jnp.uint32)
    move = _i(x.move)
    mtype = _i(jnp.asarray(T.MOVE_TYPE)[move])
    category = _i(jnp.asarray(T.MOVE_CATEGORY)[move])
    bp = _i(jnp.asarray(T.MOVE_BASE_POWER)[move])
    dkind = _i(jnp.asarray(T.MOVE_DAMAGE_KIND)[move])
    level = _i(x.attacker_level)
    shape = move.shape

    immune = is_immune(mtype, x.target_types, jnp.asarray(T.MOVE_IGNORE_IMMUNITY)[move])

    # damageCallback / fixed damage (no crit draw, no roll)
    psy_to = level + (level >> 1)  # trunc(1.5 * level)
    psy_softlock = (psy_to & 0xFF) < 2
    s_psy, psy = prng.random_range(state, 1, jnp.maximum(psy_to, 2))
    counterable = ((jnp.isin(_i(jnp.asarray(T.MOVE_TYPE)[_i(x.counter_last_move)]),
                             jnp.asarray([T.TYPE_ID["Normal"], T.TYPE_ID["Fighting"]])))
                   & (_i(jnp.asarray(T.MOVE_BASE_POWER)[_i(x.counter_last_move)]) > 0))
    counter_ok = (~jnp.asarray(x.counter_last_selected_is_counter) & counterable
                  & (_i(x.last_damage) > 0))
    superfang = jnp.maximum(_i(x.target_hp) // 2, 1)
    preset = _i(x.preset_damage)
    trap_lock = _i(x.trap_lock_damage)
    ghost_trap = (jnp.asarray(T.MOVE_PARTIAL_TRAP)[move] & (mtype == T.TYPE_ID["Normal"])
                  & has_type(x.target_types, T.TYPE_ID["Ghost"]))

    # (kind, value) of the early returns, in getDamage's order; `early` marks which one fires.
    cases: list[tuple[Any, Any, Any]] = [
        (immune, KIND_FALSE, 0),
        (dkind == T.DAMAGE_OHKO, KIND_NUMBER, 65535),
        (dkind == T.DAMAGE_COUNTER, jnp.where(counter_ok, KIND_NUMBER, KIND_FALSE),
         jnp.where(counter_ok, 2 * _i(x.last_damage), 0)),
        (dkind == T.DAMAGE_PSYWAVE, jnp.where(psy_softlock, KIND_FALSE, KIND_NUMBER),
         jnp.where(psy_softlock, 0, psy)),
        (dkind == T.DAMAGE_SUPERFANG, KIND_NUMBER, superfang),
        (dkind == T.DAMAGE_LEVEL, KIND_NUMBER, level),
        (preset >= 0, KIND_NUMBER, preset),
        (dkind == T.DAMAGE_FIXED, KIND_NUMBER, _i(jnp.asarray(T.MOVE_FIXED_DAMAGE)[move])),
        (ghost_trap, KIND_NUMBER, 0),
        (trap_lock >= 0, KIND_NUMBER, trap_lock),
        (bp <= 0, KIND_UNDEFINED, 0),
    ]
    early = jnp.zeros(shape, bool)
    kind = jnp.full(shape, KIND_NUMBER, I32)
    value = jnp.zeros(shape, I32)
    psywave_fires = jnp.zeros(shape, bool)
    for k, (cond, ckind, cvalue) in enumerate(cases):
        fire = ~early & cond
        kind = jnp.where(fire, ckind, kind)
        value = jnp.where(fire, cvalue, value)
        if k == 3:
            psywave_fires = fire & ~psy_softlock
        early = early | fire
    state = jnp.where(psywave_fires[..., None], s_psy, state)

    # crit (only on the formula path)
    chance = crit_chance(x.attacker_base_speed, x.attacker_focus_energy,
                         jnp.asarray(T.MOVE_CRIT_RATIO)[move])
    formula = ~early
    s_crit, crit = crit_check(state, chance)
    drew_crit = formula & (chance > 0)
    state = jnp.where(formula[..., None], s_crit, state)
    crit = formula & crit

    physical = category == T.CATEGORY_PHYSICAL
    atk_index = jnp.where(physical, 0, 2)
    def_index = jnp.where(physical, 1, 3)
    attack = jnp.where(crit, _stat(x.attacker_unmodified, atk_index),
                       _stat(x.attacker_modified, atk_index))
    screen = jnp.where(physical, jnp.asarray(x.target_reflect), jnp.asarray(x.target_light_screen))
    defense = _stat(x.target_modified, def_index)
    defense = jnp.where(screen, defense * 2, defense)
    defense = jnp.where(crit, _stat(x.target_unmodified, def_index), defense)
    lvl = jnp.where(crit, level * 2, level) & 0xFF

    big = (attack >= 256) | (defense >= 256)
    attack = jnp.where(big, jnp.maximum((attack // 4) & 0xFF, 1), attack)
    defense = jnp.where(big, (defense // 4) & 0xFF, defense)
    defense = jnp.where(big & (defense == 0), 1, defense)
    selfdestruct = jnp.asarray(T.MOVE_SELFDESTRUCT)[move] & physical
    defense = jnp.where(selfdestruct, jnp.maximum(defense // 2, 1), defense)

    d = (lvl * 2 // 5 + 2) * jnp.maximum(bp, 1) * attack // jnp.maximum(defense, 1)
    d = jnp.clip(d // 50, 0, 997) + 2
    stab = (mtype != T.TYPE_TYPELESS) & has_type(x.attacker_types, mtype)
    d = jnp.where(stab, d + d // 2, d)
    d = apply_type_effectiveness(d, mtype, x.target_types)

    rolls = formula & (d > 1)
    s_roll, roll = prng.random_range(state, 217, 256)
    state = jnp.where(rolls[..., None], s_roll, state)
    d = jnp.where(rolls, d * roll // 255, d)

    damage = jnp.where(early, value, d)
    return state, Damage(kind=kind, damage=jnp.where(kind == KIND_NUMBER, damage, 0), crit=crit,
                         drew_crit=drew_crit, crit_chance=chance, drew_psywave=psywave_fires,
                         psywave_to=psy_to, drew_roll=rolls, roll=jnp.where(rolls, roll, 0))


def confusion_self_damage(level: Any, attack: Any, defense: Any) -> Array:
    """``data/mods/gen1/conditions.ts confusion.onBeforeMove``: the self-hit,
    floor(floor((floor(2L/5) + 2) * Atk * 40 / Def) / 50) + 2 with the current (modified) Attack
    and Defense, no roll, no crit, no scaling."""
    d = (_i(level) * 2 // 5 + 2) * _i(attack) * 40 // jnp.maximum(_i(defense), 1)
    return d // 50 + 2
