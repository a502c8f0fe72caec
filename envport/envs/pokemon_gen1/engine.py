"""The Gen 1 turn loop in JAX: ``step(battle, choice_p1, choice_p2) -> battle`` and ``legal_mask``.

One call is what Showdown does between two requests (``sim/battle.ts commitChoices`` ->
``turnLoop`` -> ``runAction`` ... until the next ``makeRequest``): either a whole turn (both
players chose a move or a switch) or the forced switches after a faint (``makeRequest('switch')``;
the side that waits passes :data:`NO_CHOICE`). Everything is predicated (``jnp.where`` on enable
masks), so one compiled function serves every battle and ``jax.vmap`` batches it.

Choices (integers): 0-3 the move slot (``move N+1``; 0 also stands for Showdown's lone "Fight" of a
sleeping or frozen Pokemon and for Struggle), ``SWITCH + k`` switch to the Pokemon at request
position k = 1..5 (``switch k+1``: Showdown's current order, the active one at position 0),
:data:`NO_CHOICE` for a side whose request is ``wait``.

Order of events followed (files of the pinned pokemon-showdown 0.11.11, ``dist/``):

* ``side.ts commitChoices`` (gen 1 branch): ``lastSelectedMove``/``Slot``,
  ``lastEnemySelectedMove``, ``side.lastMove``; a sleeping/frozen Pokemon's "fight" re-uses
  ``lastSelectedMove``.
* ``battle.ts commitChoices``: ``updateSpeed``; the queue sorted by ``speedSort`` (switch order 103
  before moves 200, priority, Speed; a tie costs one ``shuffle`` draw, spec 7.3 #3).
* ``turnLoop``: ``beforeTurn`` (``eachEvent('BeforeTurn')``: one tie draw when the two actives'
  cached speeds are equal, spec 7.3 #2), the actions, ``residual`` (``fieldEvent('Residual')``:
  durations, i.e. flinch ends), ``endTurn`` (turn + 1, Endless Battle Clause). After each action
  ``runAction``'s tail: ``faintMessages`` (gen 1: a faint clears the whole queue), ``checkFainted``,
  the switch request, else ``eachEvent('Update')`` (gen < 5: another tie draw on equal speeds).
* ``battle-actions.ts switchIn`` + ``mods/gen4/scripts.ts runSwitch`` (gen <= 2: every active's
  ``lastMove`` cleared, ``lastSelectedMoveSlot = 0``, ``AfterSwitchInSelf`` burn/poison damage
  unless the side fainted this turn); ``queue.insertChoice`` of ``runSwitch`` (a tie between two
  runSwitch actions draws ``random(0, 2)``).
* ``mods/gen1/scripts.ts runMove`` (``BeforeMove`` handlers by priority: frz 12, slp 10, flinch 8,
  recharge 7, Disable 6, confusion 3, par 2, Bide 0; PP deduction on ``lastSelectedMoveSlot`` with
  the 6-bit wrap, none while locked), ``useMove`` (``side.lastMove``, ``lastEnemyMove``,
  ``pokemon.lastMove``; Mirror Move's call is a second pass of the same loop), ``useMoveInner``
  (``lastDamage = 0``),
  ``tryMoveHit`` (immunity, accuracy, multi-hit), ``moveHit`` (``getDamage``, ``battle.damage`` ->
  ``lastDamage``, secondaries only while the target stands, on the last hit), ``AfterMoveSecondary``
  (a burn secondary thaws), ``AfterMoveSelf`` (the Toxic counter, ``mods/gen1/conditions.ts`` slp
  wake-up and brn/psn/tox damage, Leech Seed; after a move only if the target still has HP,
  always after an aborted move), ``endTurn`` (DisableMove's tie draw between Disable and Bide).
* ``pokemon.ts setStatus``: ``runEvent('SetStatus')`` meets the two clause handlers (Sleep Clause
  Mod, Freeze Clause Mod, both field pseudo-weathers with equal priority): one tie draw (spec 7.3
  #1), then Freeze Clause refuses a second frozen Pokemon on that side.

Only the moves of :mod:`moves` are played (``moves.check_supported``); see README "Engine".
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.pokemon_gen1 import mechanics as M
from envport.envs.pokemon_gen1 import moves as MV
from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

Array = jax.Array
I32 = jnp.int32

N_CHOICES = 11
SWITCH = 4  # SWITCH + k: switch to request position k (1..5)
NO_CHOICE = 10
TAPE_SIZE = 64  # draws recorded per step (a turn makes ~4 on average; the rest is dropped)

# tape codes of the PRNG entry point, like the worker's tape `from`/`to` (spec 7.1)
NONE = -1

_V = S.VOLATILE_BIT

# BeforeMove handlers removed when a Pokemon is fully paralyzed / hurts itself in confusion
_PAR_CLEARS = _V["bide"] | _V["twoturnmove"] | _V["partialtrappinglock"] | _V["lockedmove"]
_CONFUSION_CLEARS = _PAR_CLEARS | _V["invulnerability"]


def _i(x: Any) -> Array:
    return jnp.asarray(x).astype(I32)


def _setk(arr: Array, k: Any, value: Any) -> Array:
    """``arr.at[k].set(value)`` in ``arr``'s dtype."""
    return arr.at[k].set(jnp.asarray(value).astype(arr.dtype))


# ---- the carry: the battle as dicts of leaves, plus what Showdown keeps only within a turn ------

def _unpack(b: S.Battle) -> dict[str, Any]:
    return {"team": dict(vars(b.team)), "active": dict(vars(b.active)),
            "side": dict(vars(b.side)), "prng": b.prng, "turn": b.turn, "ended": b.ended,
            "winner": b.winner, "last_damage": b.last_damage}


def _pack(st: dict[str, Any]) -> S.Battle:
    return S.Battle(team=S.Team(**st["team"]), active=S.Active(**st["active"]),
                    side=S.Side(**st["side"]), prng=st["prng"], turn=st["turn"],
                    ended=st["ended"], winner=st["winner"], last_damage=st["last_damage"])


# The step's carry, a plain dict (a pytree): ``st`` (the battle's leaves), ``speed`` (each
# active's cached ``pokemon.speed``), ``live`` (the queue has not been cleared by a faint),
# ``ftt`` (``side.faintedThisTurn``), the draw tape (``tn``, ``tfrom``, ``tto``).
Ctx = dict


def _ctx(st: dict, **kw: Any) -> Ctx:
    return {"st": st, **kw}


def _upd(ctx: Ctx, **kw: Any) -> Ctx:
    return {**ctx, **kw}


def _put(group: dict, name: str, index: tuple, value: Any, en: Any) -> dict:
    arr = group[name]
    new = arr.at[index].set(jnp.asarray(value).astype(arr.dtype))
    return {**group, name: jnp.where(en, new, arr)}


def tset(ctx: Ctx, name: str, s: Any, j: Any, value: Any, en: Any = True) -> Ctx:
    st = ctx["st"]
    return _upd(ctx, st={**st, "team": _put(st["team"], name, (s, j), value, en)})


def aset(ctx: Ctx, name: str, s: Any, value: Any, en: Any = True) -> Ctx:
    st = ctx["st"]
    return _upd(ctx, st={**st, "active": _put(st["active"], name, (s,), value, en)})


def sset(ctx: Ctx, name: str, s: Any, value: Any, en: Any = True) -> Ctx:
    st = ctx["st"]
    return _upd(ctx, st={**st, "side": _put(st["side"], name, (s,), value, en)})


def bset(ctx: Ctx, name: str, value: Any, en: Any = True) -> Ctx:
    st = ctx["st"]
    old = st[name]
    return _upd(ctx, st={**st, name: jnp.where(en, jnp.asarray(value).astype(old.dtype), old)})


def tget(ctx: Ctx, name: str, s: Any, j: Any) -> Array:
    return ctx["st"]["team"][name][s, j]


def aget(ctx: Ctx, name: str, s: Any) -> Array:
    return ctx["st"]["active"][name][s]


def slot(ctx: Ctx, s: Any) -> Array:
    return _i(aget(ctx, "slot", s))


def mon(ctx: Ctx, name: str, s: Any) -> Array:
    """A team field of side ``s``'s active Pokemon."""
    return tget(ctx, name, s, slot(ctx, s))


def mset(ctx: Ctx, name: str, s: Any, value: Any, en: Any = True) -> Ctx:
    return tset(ctx, name, s, slot(ctx, s), value, en)


def has_vol(ctx: Ctx, s: Any, name: str) -> Array:
    return (aget(ctx, "volatiles", s) & jnp.uint32(_V[name])) != 0


def set_vol(ctx: Ctx, s: Any, bits: int, on: bool, en: Any = True) -> Ctx:
    v = aget(ctx, "volatiles", s)
    new = v | jnp.uint32(bits) if on else v & ~jnp.uint32(bits)
    return aset(ctx, "volatiles", s, new, en)


# the counters each volatile keeps (state.py), set back to rest when it goes
_VOLATILE_LEAVES = {
    "partiallytrapped": ("trapped_duration", "trapped_move", "trapped_maybe_locked"),
    "partialtrappinglock": ("lock_duration", "lock_total", "lock_damage", "lock_move"),
    "fakepartiallytrapped": ("fake_trapped_duration",),
    "flinch": ("flinch_duration",),
}


def drop_vol(ctx: Ctx, s: Any, name: str, en: Any) -> Ctx:
    """``delete pokemon.volatiles[name]`` / ``removeVolatile(name)`` (none of these has an
    ``onEnd`` in Gen 1), its counters back at rest."""
    ctx = set_vol(ctx, s, _V[name], False, en)
    for leaf in _VOLATILE_LEAVES.get(name, ()):
        ctx = aset(ctx, leaf, s, 0, en)
    return ctx


# ---- draws (each one recorded on the step's tape: Showdown's `from`, `to`) ---------------------

def _record(ctx: Ctx, en: Any, frm: Any, to: Any) -> Ctx:
    n = ctx["tn"]
    k = jnp.minimum(n, TAPE_SIZE - 1)
    tfrom = jnp.where(en, ctx["tfrom"].at[k].set(_i(frm)), ctx["tfrom"])
    tto = jnp.where(en, ctx["tto"].at[k].set(_i(to)), ctx["tto"])
    return _upd(ctx, tn=n + jnp.asarray(en).astype(I32), tfrom=tfrom, tto=tto)


def _advance(ctx: Ctx, en: Any, new_state: Array) -> Ctx:
    st = ctx["st"]
    return _upd(ctx, st={**st, "prng": jnp.where(en, new_state, st["prng"])})


def chance(ctx: Ctx, en: Any, k: Any, d: int) -> tuple[Ctx, Array]:
    """``randomChance(k, d)`` when ``en`` (recorded as ``random(d)``)."""
    new, ok = prng.random_chance(ctx["st"]["prng"], k, d)
    ctx = _record(_advance(ctx, en, new), en, d, NONE)
    return ctx, en & ok


def rand_range(ctx: Ctx, en: Any, m: Any, n: Any) -> tuple[Ctx, Array]:
    """``random(m, n)`` when ``en``."""
    new, v = prng.random_range(ctx["st"]["prng"], m, n)
    ctx = _record(_advance(ctx, en, new), en, m, n)
    return ctx, v


def tie(ctx: Ctx, en: Any) -> tuple[Ctx, Array]:
    """``speedSort``'s ``shuffle`` of two tied entries: one ``random(0, 2)``; True = swapped."""
    new, v = prng.random_range(ctx["st"]["prng"], 0, 2)
    ctx = _record(_advance(ctx, en, new), en, 0, 2)
    return ctx, en & (v == 1)


def shuffle_group(ctx: Ctx, en: Any, start: Any, n: Any, max_n: int) -> Ctx:
    """``speedSort``'s ``prng.shuffle(list, start, start + n)`` of ``n`` tied handlers (at most
    ``max_n``): ``random(start + k, start + n)`` for k = 0 .. n - 2."""
    start, n = _i(start), _i(n)
    for k in range(max_n - 1):
        ctx, _ = rand_range(ctx, en & (k < n - 1), start + k, start + n)
    return ctx


def each_event(ctx: Ctx, en: Any) -> Ctx:
    """``eachEvent('BeforeTurn'|'Update')``: speedSort of the unfainted actives by cached speed;
    no Gen 1 handler listens to these events, so only the tie draw matters."""
    both = ~mon(ctx, "fainted", 0) & ~mon(ctx, "fainted", 1) & (slot(ctx, 0) >= 0) & (
        slot(ctx, 1) >= 0)
    ctx, _ = tie(ctx, en & both & (ctx["speed"][0] == ctx["speed"][1]))
    return ctx


def cur_speed(ctx: Ctx, s: Any) -> Array:
    """``getActionSpeed`` (gen 4 override: ``getStat('spe')`` = modifiedStats.spe in Gen 1)."""
    return _i(mon(ctx, "modified", s)[4])


def update_speed(ctx: Ctx, s: Any, en: Any = True) -> Ctx:
    return _upd(ctx, speed=jnp.where(en, _setk(ctx["speed"], s, cur_speed(ctx, s)), ctx["speed"]))


# ---- damage, faint, status -------------------------------------------------------------------

def damage(ctx: Ctx, en: Any, s: Any, amount: Any, sets_last_damage: Any) -> tuple[Ctx, Array]:
    """``battle.damage`` -> ``spreadDamage`` -> ``pokemon.damage`` on side ``s``'s active: the
    amount clamped to >= 1 unless 0, HP floored at 0 (the faint is queued by HP 0 and processed in
    :func:`faint_messages`). Gen 1 sets ``battle.lastDamage`` for move damage (not for statuses).
    Returns the HP taken."""
    hp = _i(mon(ctx, "hp", s))
    en = en & (hp > 0)
    amount = _i(amount)
    amount = jnp.where(amount != 0, jnp.maximum(amount, 1), 0)
    dealt = jnp.minimum(amount, hp)  # moveHit clamps a move's damage to the target's HP first
    ctx = bset(ctx, "last_damage", dealt, en & sets_last_damage)
    ctx = mset(ctx, "hp", s, hp - dealt, en)
    return ctx, jnp.where(en, dealt, 0)


def _zero_active(ctx: Ctx, s: Any, j: Any, en: Any) -> Ctx:
    """Side ``s``'s active fields at rest for team member ``j`` (one select per leaf)."""
    st = ctx["st"]
    # slot stays; species and stored come from the team; the rest is 0 (a scalar the select
    # broadcasts, so the step carries ~3 operations per leaf instead of ~6)
    kept = {"species": st["team"]["species"][s, j], "stored": st["team"]["stats"][s, j]}
    on = en & (jnp.arange(2) == s)
    rows = {nd: on.reshape((2,) + (1,) * (nd - 1)) for nd in {v.ndim for v in
                                                             st["active"].values()}}
    active = {k: v if k == "slot" else
              jnp.where(rows[v.ndim], kept[k].astype(v.dtype) if k in kept else v.dtype.type(0), v)
              for k, v in st["active"].items()}
    return _upd(ctx, st={**st, "active": active})


def rest_active(ctx: Ctx, s: Any, en: Any) -> Ctx:
    """``pokemon.clearVolatile`` on side ``s``'s active (switch-out, faint): stages, volatiles
    and their counters, lastMove, Transform state gone; ``setSpecies`` recomputes the modified
    stats from the stored ones with the paralysis/burn penalty."""
    j = slot(ctx, s)
    # moveSlots = baseMoveSlots.slice(): Mimic's and Transform's slots give way to the base ones
    # (a slot the base lacks becomes empty); setSpecies(baseSpecies) resets the types
    sep = aget(ctx, "base_separate", s)
    for name, base in (("moves", "base_moves"), ("pp", "base_pp"), ("maxpp", "base_maxpp")):
        ctx = tset(ctx, name, s, j, jnp.where(sep, aget(ctx, base, s), tget(ctx, name, s, j)), en)
    ctx = tset(ctx, "types", s, j, jnp.asarray(T.SPECIES_TYPES)[_i(tget(ctx, "species", s, j))],
               en)
    ctx = _zero_active(ctx, s, j, en)
    return tset(ctx, "modified", s, j,
                M.switch_in_stats(tget(ctx, "stats", s, j), tget(ctx, "status", s, j)), en)


def faint_messages(ctx: Ctx, en: Any) -> tuple[Ctx, Array]:
    """``battle.faintMessages`` + ``checkWin`` + (queue empty) ``checkFainted``: an active at 0 HP
    faints (pokemonLeft - 1, clearVolatile, faintedThisTurn, status 'fnt'); in Gen 1 any faint
    clears the queue. Returns (ctx, something fainted)."""
    any_faint = jnp.asarray(False)
    for s in (0, 1):
        f = en & (slot(ctx, s) >= 0) & ~mon(ctx, "fainted", s) & (_i(mon(ctx, "hp", s)) <= 0)
        ctx = sset(ctx, "pokemon_left", s,
                   jnp.maximum(_i(ctx["st"]["side"]["pokemon_left"][s]) - 1, 0), f)
        ctx = rest_active(ctx, s, f)
        ctx = mset(ctx, "fainted", s, True, f)
        ctx = _upd(ctx, ftt=jnp.where(f, ctx["ftt"].at[s].set(True), ctx["ftt"]))
        any_faint = any_faint | f
    left = ctx["st"]["side"]["pokemon_left"]
    none0, none1 = left[0] <= 0, left[1] <= 0
    winner = jnp.where(none0 & none1, S.WINNER_TIE,
                       jnp.where(none1, S.WINNER_P1, S.WINNER_P2))
    ends = any_faint & (none0 | none1)
    ctx = bset(ctx, "ended", True, ends)
    ctx = bset(ctx, "winner", winner, ends)
    for s in (0, 1):  # checkFainted (the queue is empty after a Gen 1 faint)
        ctx = mset(ctx, "status", s, T.STATUS_FNT, any_faint & ~ends & mon(ctx, "fainted", s))
    return _upd(ctx, live=ctx["live"] & ~any_faint), any_faint


def set_status(ctx: Ctx, en: Any, s: Any, status: Any, by_ally: Any = False
               ) -> tuple[Ctx, Array]:
    """``pokemon.setStatus(status)`` on side ``s``'s active (``status`` may be traced): fails
    without a draw at 0 HP, on the same status or a type immunity (Poison types: poison); else
    the SetStatus event (the clause handlers' tie draw), where Sleep Clause Mod refuses a foe's
    sleep while another Pokemon of that side sleeps from a foe, Freeze Clause Mod a second
    frozen one; then the status, its ``onStart`` (sleep: ``random(1, 8)`` turns) and, for par/brn,
    ``moveHit``'s penalty. ``by_ally``: the source is on the same side (Rest)."""
    status = _i(status)
    by_ally = jnp.asarray(by_ally)
    cur = _i(mon(ctx, "status", s))
    poison = (status == T.STATUS_PSN) | (status == T.STATUS_TOX)
    en = en & (_i(mon(ctx, "hp", s)) > 0) & (cur != status) & ~(
        poison & M.has_type(mon(ctx, "types", s), MV.POISON_TYPE))
    ctx, _ = tie(ctx, en)
    team = ctx["st"]["team"]
    frozen = (team["status"][s] == T.STATUS_FRZ).any()
    foe_slept = ((team["status"][s] == T.STATUS_SLP) & (team["hp"][s] > 0)
                 & ~team["status_by_ally"][s]).any()
    en = en & ~((status == T.STATUS_FRZ) & frozen) & ~(
        (status == T.STATUS_SLP) & ~by_ally & foe_slept)
    ctx = mset(ctx, "status", s, status, en)
    ctx = mset(ctx, "status_by_ally", s, by_ally, en)
    sleep = en & (status == T.STATUS_SLP)
    ctx, turns = rand_range(ctx, sleep, 1, 8)
    ctx = mset(ctx, "sleep_turns", s, turns, sleep)
    ctx = mset(ctx, "sleep_start", s, turns, sleep)
    mod = mon(ctx, "modified", s)
    mod = jnp.where(status == T.STATUS_PAR, _setk(mod, 4, M.modify_stat(mod[4], 1, 4)), mod)
    mod = jnp.where(status == T.STATUS_BRN, _setk(mod, 0, M.modify_stat(mod[0], 1, 2)), mod)
    return mset(ctx, "modified", s, mod, en), en


def heal(ctx: Ctx, en: Any, s: Any, amount: Any) -> Ctx:
    """``battle.heal`` -> ``pokemon.heal``: HP up to the maximum."""
    hp, maxhp = _i(mon(ctx, "hp", s)), _i(mon(ctx, "maxhp", s))
    return mset(ctx, "hp", s, jnp.minimum(hp + jnp.maximum(_i(amount), 1), maxhp),
                en & (hp > 0) & (hp < maxhp))


def cure_status(ctx: Ctx, s: Any, en: Any, by_ally: Any = False) -> Ctx:
    """``pokemon.cureStatus`` -> ``setStatus('')``: only with HP left; the modified stats keep any
    penalty. The new statusState's source is the running event's source (``by_ally``: on this
    side), which shows once the Pokemon faints ('fnt' keeps that statusState)."""
    en = en & (_i(mon(ctx, "hp", s)) > 0) & (_i(mon(ctx, "status", s)) != T.STATUS_NONE)
    ctx = mset(ctx, "status", s, T.STATUS_NONE, en)
    ctx = mset(ctx, "sleep_turns", s, 0, en)
    ctx = mset(ctx, "sleep_start", s, 0, en)
    return mset(ctx, "status_by_ally", s, by_ally, en)


def residual_status_damage(ctx: Ctx, s: Any, en: Any, self_target: Any = False) -> Ctx:
    """``runEvent('AfterMoveSelf')`` on side ``s``'s active, its handlers by priority:
    ``residualdmg`` (100: the Toxic counter + 1 while brn/psn/tox), ``mods/gen1/conditions.ts``
    slp (3: wakes when its counter is spent), brn/psn/tox (2: floor(maxHP/16), min 1, times the
    counter if there is one), ``mods/gen1/moves.ts leechseed`` (1: with a living foe active, the
    counter + 1 again, floor(maxHP/16) (min 1) times it dealt to the seeded Pokemon, even at 0
    HP, and the full amount healed to the foe). ``self_target``: the move's target is the user
    (the event's source, kept by a cure)."""
    status = _i(mon(ctx, "status", s))
    hurt_status = (status == T.STATUS_BRN) | (status == T.STATUS_PSN) | (status == T.STATUS_TOX)
    rd = has_vol(ctx, s, "residualdmg")
    counter = _i(aget(ctx, "toxic_counter", s)) + (en & rd & hurt_status).astype(I32)
    ctx = aset(ctx, "toxic_counter", s, counter, en & rd)
    ctx = cure_status(ctx, s, en & (status == T.STATUS_SLP) & (_i(mon(ctx, "sleep_turns", s)) <= 0),
                      self_target)
    hurt = en & hurt_status
    unit = jnp.maximum(_i(mon(ctx, "maxhp", s)) // 16, 1)
    ctx, _ = damage(ctx, hurt, s, unit * jnp.where(rd, counter, 1), False)
    foe = 1 - s
    leech = (en & has_vol(ctx, s, "leechseed") & (slot(ctx, foe) >= 0)
             & ~mon(ctx, "fainted", foe) & (_i(mon(ctx, "hp", foe)) > 0))
    counter = counter + (leech & rd).astype(I32)
    ctx = aset(ctx, "toxic_counter", s, counter, leech & rd)
    amount = unit * jnp.where(rd, counter, 1)
    ctx, _ = damage(ctx, leech, s, amount, False)
    return heal(ctx, leech, foe, amount)


# ---- boosts (scripts.ts battle.boost / pokemon.boostBy) ---------------------------------------

def boost(ctx: Ctx, en: Any, s: Any, deltas: Any, order: Any) -> tuple[Ctx, Array]:
    """``battle.boost(deltas)`` on side ``s``'s active, stat by stat in ``order`` (up to two
    stats, -1 = none). Returns (ctx, success): some stat changed (boostBy returned true)."""
    en = en & (_i(mon(ctx, "hp", s)) > 0)
    success = jnp.asarray(False)
    for k in range(order.shape[-1]):
        i = _i(order[k])
        go = en & (i >= 0)
        i = jnp.maximum(i, 0)
        delta = _i(deltas[i])
        boosts = aget(ctx, "boosts", s)
        mod = mon(ctx, "modified", s)
        stored = aget(ctx, "stored", s)
        stat = jnp.minimum(i, 4)
        acc_eva = i >= 5
        stage, new_mod, result = M.boost_by(boosts[i], mod[stat], stored[stat], delta, acc_eva)
        ctx = aset(ctx, "boosts", s, _setk(boosts, i, stage), go)
        ctx = mset(ctx, "modified", s, _setk(mod, stat, new_mod), go & ~acc_eva)
        success = success | (go & (result == M.BOOST_CHANGED))
    return ctx, success


def reapply_penalty(ctx: Ctx, s: Any, en: Any) -> Ctx:
    """``moveHit`` after a successful stat change: the user's foe's paralysis (Speed x1/4) or burn
    (Attack x1/2) penalty applied again."""
    status = _i(mon(ctx, "status", s))
    mod = mon(ctx, "modified", s)
    mod = jnp.where(status == T.STATUS_PAR, _setk(mod, 4, M.modify_stat(mod[4], 1, 4)), mod)
    mod = jnp.where(status == T.STATUS_BRN, _setk(mod, 0, M.modify_stat(mod[0], 1, 2)), mod)
    return mset(ctx, "modified", s, mod, en)


# ---- a move (scripts.ts runMove / useMove / useMoveInner / tryMoveHit / moveHit) -------------

def _damage_inputs(ctx: Ctx, a: Any, d: Any, move: Array, preset: Any) -> M.DamageInputs:
    return M.DamageInputs(
        move=move, attacker_level=mon(ctx, "level", a),
        attacker_base_speed=jnp.asarray(T.BASE_STATS)[_i(mon(ctx, "species", a)), 5],
        attacker_types=mon(ctx, "types", a), attacker_modified=mon(ctx, "modified", a),
        attacker_unmodified=mon(ctx, "stats", a), attacker_focus_energy=has_vol(ctx, a,
                                                                               "focusenergy"),
        target_types=mon(ctx, "types", d), target_modified=mon(ctx, "modified", d),
        target_unmodified=mon(ctx, "stats", d), target_reflect=has_vol(ctx, d, "reflect"),
        target_light_screen=has_vol(ctx, d, "lightscreen"), target_hp=mon(ctx, "hp", d),
        preset_damage=preset, last_damage=ctx["st"]["last_damage"],
        # Counter reads the target's side: lastEnemyMove and lastEnemySelectedMove
        counter_last_move=ctx["st"]["side"]["last_enemy_move"][d],
        counter_last_selected_is_counter=(ctx["st"]["side"]["last_enemy_selected_move"][d]
                                          == MV.ID["counter"]))


def get_damage(ctx: Ctx, en: Any, a: Any, d: Any, move: Array, preset: Any, trap_lock: Any = -1
               ) -> tuple[Ctx, M.Damage]:
    state, dmg = M.get_damage(ctx["st"]["prng"],
                              _damage_inputs(ctx, a, d, move, preset)._replace(
                                  trap_lock_damage=trap_lock))
    ctx = _advance(ctx, en, state)
    ctx = _record(ctx, en & dmg.drew_psywave, 1, dmg.psywave_to)
    ctx = _record(ctx, en & dmg.drew_crit, 256, NONE)
    ctx = _record(ctx, en & dmg.drew_roll, 217, 256)
    return ctx, dmg


def direct_damage(ctx: Ctx, en: Any, s: Any, amount: Any) -> Ctx:
    """``battle.ts directDamage`` with a Gen 1 effect of confusion / Jump Kick / High Jump Kick:
    lastDamage = the amount (min 1); a Pokemon behind a Substitute hurts the foe's Substitute if
    there is one, else nobody; otherwise its own HP."""
    amount = jnp.maximum(_i(amount), 1)
    en = en & (_i(mon(ctx, "hp", s)) > 0)
    ctx = bset(ctx, "last_damage", amount, en)
    own_sub = has_vol(ctx, s, "substitute")
    foe = 1 - s
    foe_sub = en & own_sub & has_vol(ctx, foe, "substitute")
    left = _i(aget(ctx, "substitute_hp", foe)) - amount
    ctx = aset(ctx, "substitute_hp", foe, jnp.maximum(left, 0), foe_sub)
    ctx = set_vol(ctx, foe, _V["substitute"], False, foe_sub & (left <= 0))
    ctx, _ = damage(ctx, en & ~own_sub, s, amount, False)
    return ctx


def recovery_fails(hp: Array, maxhp: Array) -> Array:
    """``mods/gen1/moves.ts`` recover / softboiled / rest ``onHit``: full HP, or maxHP - HP of
    255 or 511 unless HP is a multiple of 256."""
    gap = maxhp - hp
    return (hp == maxhp) | (((gap == 255) | (gap == 511)) & (hp % 256 != 0))


def rage_boost(ctx: Ctx, en: Any, t: Any) -> Ctx:
    """``mods/gen1/moves.ts rage.condition.onHit`` (and useMoveInner's Self-Destruct / Disable
    rule): a Pokemon with ``rage`` under +6 Attack gets ``boost({atk: 1})`` (none at 0 HP)."""
    go = en & has_vol(ctx, t, "rage") & (_i(aget(ctx, "boosts", t)[0]) < 6)
    ctx, _ = boost(ctx, go, t, jnp.zeros(7, I32).at[0].set(1), jnp.array([0, -1], jnp.int8))
    return ctx


def bide_hit(ctx: Ctx, en: Any, a: Any, d: Any, amount: Any) -> Ctx:
    """Bide's release, ``moveHit(target, pokemon, bide, {damage: 2 * stored})`` (no accuracy
    check, no type immunity): a Substitute takes the uncapped amount (and lastDamage); else the
    foe takes it (clamped to its HP, lastDamage), and a raging foe builds Rage."""
    amount = _i(amount)
    sub = en & has_vol(ctx, d, "substitute")
    ctx = bset(ctx, "last_damage", amount, sub)
    left = _i(aget(ctx, "substitute_hp", d)) - amount
    ctx = aset(ctx, "substitute_hp", d, jnp.maximum(left, 0), sub)
    broke = sub & (left <= 0)
    ctx = set_vol(ctx, d, _V["substitute"], False, broke)
    ctx = aset(ctx, "substitute_hp", d, 0, broke)
    hit = en & ~sub
    ctx, _ = damage(ctx, hit, d, amount, True)
    return rage_boost(ctx, hit, d)


def move_hit(ctx: Ctx, en: Any, a: Any, d: Any, move: Array) -> Ctx:
    """``tryMoveHit`` + ``moveHit`` (``mods/gen1/scripts.ts``) for side ``a``'s move on its target
    (the foe, or itself for ``target: 'self'``), both kinds of move in one predicated pass:

    * immunity (``runImmunity``), the accuracy draw (none for ``accuracy: true``), a miss sets
      ``lastDamage = 0``;
    * a damaging move: the multi-hit count, ``getDamage`` (crit, roll, Psywave), ``battle.damage``
      per hit (later hits repeat the first's damage while the target stands), then on the last
      hit, target standing, its secondary: the skip without a draw for a par/brn/frz secondary on
      a target of the move's type, the chance draw, then the effect;
    * a status move (``getDamage`` undefined, no draw): ``onTryHit`` (a screen already up fails),
      ``boosts`` (Mist keeps a foe's status move from lowering stats);
    * the effects, shared by secondaries and status moves: stat changes (on success the user's
      foe's penalty is re-applied), a status (only on a target with none, except sleep on a
      recharging one), flinch, a volatile (confusion lasts ``random(2, 6)``), ``onHit`` (Recover /
      Softboiled heal half the maximum HP; Rest: sleep for 2 turns after its ``random(1, 8)``,
      full HP), and ``AfterMoveSecondary``: a burn secondary thaws a frozen target.
    """
    # mods/gen1/moves.ts wrap / bind / clamp / firespin onTryMove (before tryMoveHit, hit or
    # miss): the target's recharge turn is gone
    partial = jnp.asarray(T.MOVE_PARTIAL_TRAP)[move]
    ctx = set_vol(ctx, d, _V["mustrecharge"], False, en & partial)
    # tryMoveHit opens with Thrash / Petal Dance's lock (move.self.volatileStatus 'lockedmove'):
    # the first use adds lockedmove (random(2, 4) turns, accuracy 255), later ones count down
    # and the last confuses the user afresh (random(2, 6))
    thrash = en & jnp.asarray(MV.LOCKS)[move]
    locked = has_vol(ctx, a, "lockedmove")
    left = _i(aget(ctx, "locked_time", a)) - 1
    ctx = aset(ctx, "locked_time", a, left, thrash & locked)
    confused = thrash & locked & (left == 0)
    ctx = set_vol(ctx, a, _V["confusion"], True, confused)
    ctx, turns = rand_range(ctx, confused, 2, 6)
    ctx = aset(ctx, "confusion_time", a, turns, confused)
    begins = thrash & ~locked
    ctx = set_vol(ctx, a, _V["lockedmove"], True, begins)
    ctx = aset(ctx, "locked_move", a, move, begins)
    ctx, turns = rand_range(ctx, begins, 2, 4)
    ctx = aset(ctx, "locked_time", a, turns, begins)
    ctx = aset(ctx, "locked_accuracy", a, 255, begins)
    category = _i(jnp.asarray(T.MOVE_CATEGORY)[move])
    status_move = category == T.CATEGORY_STATUS
    self_t = jnp.asarray(T.MOVE_TARGET_SELF)[move]
    t = jnp.where(self_t, a, d)
    mtype = _i(jnp.asarray(T.MOVE_TYPE)[move])
    immune = M.is_immune(mtype, mon(ctx, "types", t), jnp.asarray(T.MOVE_IGNORE_IMMUNITY)[move])
    # singleEvent('TryImmunity'): Leech Seed fails on a Grass type, Dream Eater unless the target
    # sleeps without a Substitute; then an OHKO move fails on a faster target (both without a draw)
    immune = immune | ((move == MV.ID["leechseed"]) & M.has_type(mon(ctx, "types", t),
                                                                T.TYPE_ID["Grass"]))
    immune = immune | ((move == MV.ID["dreameater"]) & (
        (_i(mon(ctx, "status", t)) != T.STATUS_SLP) | has_vol(ctx, t, "substitute")))
    immune = immune | ((jnp.asarray(T.MOVE_DAMAGE_KIND)[move] == T.DAMAGE_OHKO)
                       & M.ohko_fails(mon(ctx, "modified", a)[4], mon(ctx, "modified", t)[4]))
    # runEvent('Invulnerability') comes first (conditions.ts invulnerability: a Pokemon in the
    # air or underground is missed by all but Swift and Transform, without a draw)
    invulnerable = has_vol(ctx, t, "invulnerability") & ~self_t & (move != MV.ID["swift"]) & (
        move != MV.ID["transform"])
    go = en & ~immune & ~invulnerable
    # the accuracy of a lockedmove user is the one stored last time, with the stages applied
    # again (Gen 1's Thrash accuracy bug), and is stored back
    # (Rage's, when it has one, likewise)
    has_lock = has_vol(ctx, a, "lockedmove")
    has_rage = has_vol(ctx, a, "rage")
    # 'nomove''s accuracy 100 * 81 / 256 % is 80 / 255, not a whole percent: given as the base
    # (no lockedmove or rage holds on a Pokemon that was frozen)
    # partiallytrapped.onAccuracy: the source of the target's partiallytrapped always hits it
    # (that source is the foe whose lock is on it)
    acc = M.accuracy(move, aget(ctx, "boosts", a)[5], aget(ctx, "boosts", t)[6],
                     has_vol(ctx, t, "mustrecharge"),
                     jnp.where(has_rage, _i(aget(ctx, "rage_accuracy", a)),
                               jnp.where(has_lock, _i(aget(ctx, "locked_accuracy", a)),
                                         jnp.where(move == T.NOMOVE, T.NOMOVE_ACCURACY_255, -1))),
                     trapped_by_attacker=has_vol(ctx, t, "partiallytrapped")
                     & has_vol(ctx, a, "partialtrappinglock"))
    ctx = aset(ctx, "locked_accuracy", a, acc.stored, go & has_lock & (acc.stored >= 0))
    ctx = aset(ctx, "rage_accuracy", a, acc.stored, go & has_rage & (acc.stored >= 0))
    ctx, ok = chance(ctx, go & ~acc.always_hits, acc.numerator, 256)
    hit = go & (acc.always_hits | ok)
    ctx = bset(ctx, "last_damage", 0, go & ~hit)
    # -- damaging: hits, damage
    dhit = hit & ~status_move
    state, hits, drew = M.multihit_count(ctx["st"]["prng"], move)
    ctx = _record(_advance(ctx, dhit & drew, state), dhit & drew, 8, NONE)
    # getDamage: the attacker's lock on this target repeats the stored damage
    locks_d = has_vol(ctx, a, "partialtrappinglock") & has_vol(ctx, d, "partiallytrapped")
    trap_lock = jnp.where(locks_d, _i(aget(ctx, "lock_damage", a)), -1)
    ctx, dmg = get_damage(ctx, dhit, a, d, move, -1, trap_lock)
    landed = dhit & (dmg.kind != M.KIND_FALSE)
    number = landed & (dmg.kind == M.KIND_NUMBER)
    # mods/gen1/moves.ts substitute.onTryHit: the Substitute takes the uncapped damage (also
    # battle.lastDamage); on hits 2..5 lastDamage again; the target itself is not hit
    had_sub = has_vol(ctx, d, "substitute")
    into_sub = landed & had_sub
    uncapped = dmg.damage
    ctx = bset(ctx, "last_damage", uncapped, into_sub)
    sub_hp = _i(aget(ctx, "substitute_hp", d))
    for k in range(1, 6):
        hit_k = into_sub & (hits >= k) & (sub_hp > 0)
        sub_hp = jnp.where(hit_k, sub_hp - jnp.minimum(uncapped, sub_hp), sub_hp)
    broke = into_sub & (sub_hp <= 0)
    survived = into_sub & ~broke
    ctx = aset(ctx, "substitute_hp", d, jnp.maximum(sub_hp, 0), into_sub)
    ctx = set_vol(ctx, d, _V["substitute"], False, broke)
    ctx = aset(ctx, "substitute_hp", d, 0, broke)
    number = number & ~had_sub
    ctx, first = damage(ctx, number, d, dmg.damage, True)
    # spreadDamage's drain (gen <= 4: lastDamage = the amount, then heal), then moveHit's
    # applyRecoilDamage (mods/gen4/scripts.ts: floor(dealt * recoil), min 1; no lastDamage);
    # through a Substitute that holds, both on the uncapped damage (none when it breaks)
    dealt = jnp.where(had_sub, uncapped, first)
    drain = jnp.asarray(T.MOVE_DRAIN)[move]
    drains = ((number & (first > 0)) | survived) & (drain[1] > 0)
    amount = jnp.maximum(dealt * drain[0] // jnp.maximum(drain[1], 1), 1)
    ctx = bset(ctx, "last_damage", amount, drains)
    ctx = heal(ctx, drains, a, amount)
    recoil = jnp.asarray(T.MOVE_RECOIL)[move]
    recoils = (number | survived) & (dealt > 0) & (recoil[1] > 0)
    ctx, _ = damage(ctx, recoils, a, jnp.maximum(dealt * recoil[0] // jnp.maximum(recoil[1], 1), 1),
                    False)
    # moveHit's self effect: Hyper Beam's mustrecharge (AfterMove drops it after a KO; none
    # after breaking a Substitute)
    ctx = set_vol(ctx, a, _V["mustrecharge"], True,
                  landed & ~broke & jnp.asarray(MV.SELF_RECHARGE)[move])
    # Rage's self volatile (onStart: accuracy 255), likewise
    rages = landed & ~broke & (move == MV.ID["rage"]) & ~has_vol(ctx, a, "rage")
    ctx = set_vol(ctx, a, _V["rage"], True, rages)
    ctx = aset(ctx, "rage_accuracy", a, 255, rages)
    # Bide's volatileStatus (moveHit: getDamage undefined, then the volatile): random(2, 4)
    # moveHit's self volatileStatus partialtrappinglock (also through a Substitute, even one that
    # breaks): addVolatile draws its duration (durationCallback: sample([2, 2, 2, 3, 3, 3, 4, 5]))
    # first; onStart (no lock without a foe standing) stores lastDamage and the move and adds
    # the foe's partiallytrapped (duration 2; onRestart if it is there)
    # the trapping moves keep the base data's volatileStatus 'partiallytrapped' (inherit: true):
    # every hit on the target itself (not a Substitute; not once it fainted) adds it or restarts
    # it (duration 2), the lock's last turn included
    hit_pt = number & partial & (_i(mon(ctx, "hp", d)) > 0)
    new = hit_pt & ~has_vol(ctx, d, "partiallytrapped")
    ctx = set_vol(ctx, d, _V["partiallytrapped"], True, new)
    ctx = aset(ctx, "trapped_move", d, move, new)
    ctx = aset(ctx, "trapped_maybe_locked", d, False, new)
    ctx = aset(ctx, "trapped_duration", d, 2, hit_pt)
    traps = landed & partial & ~has_vol(ctx, a, "partialtrappinglock")
    state, lock_turns = prng.sample(ctx["st"]["prng"], jnp.asarray([2, 2, 2, 3, 3, 3, 4, 5]))
    ctx = _record(_advance(ctx, traps, state), traps, 8, NONE)
    traps = traps & (_i(mon(ctx, "hp", d)) > 0)
    ctx = set_vol(ctx, a, _V["partialtrappinglock"], True, traps)
    ctx = aset(ctx, "lock_duration", a, lock_turns, traps)
    ctx = aset(ctx, "lock_total", a, lock_turns, traps)
    ctx = aset(ctx, "lock_damage", a, ctx["st"]["last_damage"], traps)
    ctx = aset(ctx, "lock_move", a, move, traps)
    new = traps & ~has_vol(ctx, d, "partiallytrapped")
    ctx = set_vol(ctx, d, _V["partiallytrapped"], True, new)
    ctx = aset(ctx, "trapped_move", d, move, new)
    ctx = aset(ctx, "trapped_maybe_locked", d, False, new)
    ctx = aset(ctx, "trapped_duration", d, 2, traps)
    bides = landed & (move == MV.ID["bide"]) & ~has_vol(ctx, a, "bide")
    ctx = set_vol(ctx, a, _V["bide"], True, bides)
    ctx = aset(ctx, "bide_damage", a, 0, bides)
    ctx, turns = rand_range(ctx, bides, 2, 4)
    ctx = aset(ctx, "bide_time", a, turns, bides)
    done = jnp.asarray(1)
    for k in range(2, 6):  # hits 2..5 repeat the first hit's damage while the target stands
        more = number & (hits >= k) & (_i(mon(ctx, "hp", d)) > 0)
        ctx, _ = damage(ctx, more, d, first, True)
        done = jnp.where(more, k, done)
    standing = _i(mon(ctx, "hp", d)) > 0
    # runEvent('Hit') on the target after each hit of a damaging move but Self-Destruct /
    # Explosion: a raging target builds Rage while it has HP (the hits between repeat the first
    # hit's damage, so the boosts can follow them); useMoveInner adds one after Self-Destruct,
    # Explosion or Disable, hit or not (nothing else touches Attack in between)
    selfdestruct = jnp.asarray(T.MOVE_SELFDESTRUCT)[move]
    boosts = jnp.where(number & ~selfdestruct, done - (~standing).astype(I32), 0) + (
        en & (selfdestruct | (move == MV.ID["disable"]))).astype(I32)
    ctx = jax.lax.fori_loop(0, 5, lambda k, c: rage_boost(c, k < boosts, d), ctx)
    kind = _i(jnp.asarray(T.MOVE_SECONDARY_KIND)[move])
    # secondaries: not through a Substitute, except a confusion secondary while it holds
    applies = ((number & (done == hits) & standing)
               | (survived & (kind == T.SECONDARY_CONFUSION))) & M.secondary_applies(
                   move, mon(ctx, "types", d))
    state, sec_ok = M.secondary_check(ctx["st"]["prng"], move)
    ctx = _record(_advance(ctx, applies, state), applies, 256, NONE)
    sec = applies & sec_ok
    # -- status move: onTryHit
    vol = jnp.asarray(MV.MOVE_VOLATILE)[move]
    screen_up = (((move == MV.ID["reflect"]) & has_vol(ctx, t, "reflect"))
                 | ((move == MV.ID["lightscreen"]) & has_vol(ctx, t, "lightscreen")))
    hp_t, maxhp_t = _i(mon(ctx, "hp", t)), _i(mon(ctx, "maxhp", t))
    sub_fails = (move == MV.ID["substitute"]) & (has_vol(ctx, t, "substitute")
                                                 | (hp_t * 4 < maxhp_t))
    # a foe's Substitute blocks poison, stat changes and confusion (not sleep or paralysis)
    primary = _i(jnp.asarray(T.MOVE_STATUS)[move])
    blocked = has_vol(ctx, t, "substitute") & ~self_t & (
        (primary == T.STATUS_PSN) | (primary == T.STATUS_TOX)
        | (_i(jnp.asarray(MV.MOVE_BOOSTS)[move]) != 0).any() | (vol == _V["confusion"]))
    # disable.onTryHit: fails on a target without a move with PP
    t_pp = mon(ctx, "pp", t)
    t_has_pp = (mon(ctx, "moves", t) > 0) & (t_pp > 0)
    dis_fails = (move == MV.ID["disable"]) & ~t_has_pp.any()
    h = hit & status_move & ~screen_up & ~sub_fails & ~blocked & ~dis_fails
    # -- stat changes (scripts.ts battle.boost; conditions mist.onTryBoost)
    deltas = jnp.where(status_move, _i(jnp.asarray(MV.MOVE_BOOSTS)[move]),
                       _i(jnp.asarray(MV.SECONDARY_BOOSTS)[move]))
    deltas = jnp.where(status_move & has_vol(ctx, t, "mist") & ~self_t & (deltas < 0), 0, deltas)
    order = jnp.where(status_move, jnp.asarray(MV.MOVE_BOOST_ORDER)[move],
                      jnp.asarray(MV.SECONDARY_BOOST_ORDER)[move])
    order = jnp.where(deltas[jnp.maximum(_i(order), 0)] != 0, order, -1)
    wants = jnp.where(status_move, h & (_i(jnp.asarray(MV.MOVE_BOOSTS)[move]) != 0).any(),
                      sec & (kind == T.SECONDARY_BOOST))
    ctx, boosted = boost(ctx, wants, t, deltas, order)
    ctx = reapply_penalty(ctx, d, wants & boosted)
    # -- a status (moveHit: only on a target without one, save sleep on a recharging target)
    rest = h & (move == MV.ID["rest"])
    hp, maxhp = _i(mon(ctx, "hp", t)), _i(mon(ctx, "maxhp", t))
    free = (_i(mon(ctx, "status", t)) == T.STATUS_NONE) | (
        (primary == T.STATUS_SLP) & has_vol(ctx, t, "mustrecharge"))
    code = jnp.where(status_move, jnp.where(rest, T.STATUS_SLP, primary),
                     _i(jnp.asarray(T.MOVE_SECONDARY_STATUS)[move]))
    wants = jnp.where(status_move, (h & free & (primary != 0) & ~rest)
                      | (rest & ~recovery_fails(hp, maxhp)),
                      sec & (kind == T.SECONDARY_STATUS) & free)
    ctx, done_status = set_status(ctx, wants, t, code, by_ally=rest)
    # tox.onStart (mods/gen2/conditions.ts): the residualdmg volatile, its counter at 0
    toxic = done_status & (code == T.STATUS_TOX)
    ctx = set_vol(ctx, t, _V["residualdmg"], True, toxic)
    ctx = aset(ctx, "toxic_counter", t, 0, toxic)
    ctx = set_vol(ctx, t, _V["mustrecharge"], False,
                  done_status & status_move & (primary == T.STATUS_SLP))
    ctx = mset(ctx, "sleep_turns", t, 2, done_status & rest)
    ctx = mset(ctx, "sleep_start", t, 2, done_status & rest)
    ctx = heal(ctx, done_status & rest, t, maxhp)
    recover = h & ((move == MV.ID["recover"]) | (move == MV.ID["softboiled"]))
    ctx = heal(ctx, recover & ~recovery_fails(hp, maxhp), t, maxhp // 2)
    ctx = mimic(ctx, h & (move == MV.ID["mimic"]), a, d)
    ctx = haze(ctx, h & (move == MV.ID["haze"]), a)
    # mods/gen1/moves.ts conversion.onHit: the user takes the target's types
    ctx = mset(ctx, "types", a, mon(ctx, "types", d), h & (move == MV.ID["conversion"]))
    ctx = transform(ctx, h & (move == MV.ID["transform"]), a, d)
    # -- flinch, volatiles (addVolatile fails on one already there)
    flinch = sec & (kind == T.SECONDARY_FLINCH)
    ctx = set_vol(ctx, d, _V["flinch"], True, flinch)
    ctx = aset(ctx, "flinch_duration", d, 1, flinch)
    ctx = set_vol(ctx, d, _V["mustrecharge"], False, flinch)  # flinch.onStart
    vol = jnp.where(status_move, vol, jnp.where(kind == T.SECONDARY_CONFUSION,
                                                jnp.uint32(_V["confusion"]), jnp.uint32(0)))
    # moveHit: a status move whose boosts changed nothing fails before its volatile (Minimize,
    # Defense Curl at +6)
    boost_ok = ~(_i(jnp.asarray(MV.MOVE_BOOSTS)[move]) != 0).any() | boosted
    add = jnp.where(status_move, h & boost_ok, sec) & (vol != 0) & (
        (aget(ctx, "volatiles", t) & vol) == 0)
    confuse = add & (vol == _V["confusion"])
    ctx, turns = rand_range(ctx, confuse, 2, 6)
    ctx = aset(ctx, "confusion_time", t, turns, confuse)
    ctx = aset(ctx, "volatiles", t, aget(ctx, "volatiles", t) | vol, add)
    # disable.condition.onStart: sample() among the slots with PP, then random(1, 9) turns
    disabling = add & (vol == _V["disable"])
    n = t_has_pp.sum().astype(I32)
    state, pick = prng.random_int(ctx["st"]["prng"], jnp.maximum(n, 1))
    ctx = _record(_advance(ctx, disabling, state), disabling, n, NONE)
    ds = jnp.argmax(jnp.cumsum(t_has_pp.astype(I32)) == _i(pick) + 1).astype(I32)
    ctx = aset(ctx, "disable_slot", t, ds, disabling)
    ctx = aset(ctx, "disable_move", t, mon(ctx, "moves", t)[ds], disabling)
    ctx, turns = rand_range(ctx, disabling, 1, 9)
    ctx = aset(ctx, "disable_time", t, turns, disabling)
    # Substitute: hp floor(maxHP/4) + 1 (condition onStart), then onHit's directDamage(maxHP/4)
    made = add & (vol == _V["substitute"])
    ctx = aset(ctx, "substitute_hp", t, maxhp_t // 4 + 1, made)
    ctx, _ = damage(ctx, made & (maxhp_t > 3), t, maxhp_t // 4, False)
    # -- useMoveInner's MoveFail (miss, immune): Jump Kick / High Jump Kick's directDamage(1),
    # which sets lastDamage in Gen 1
    crash = en & ~landed & ((move == MV.ID["jumpkick"]) | (move == MV.ID["highjumpkick"]))
    ctx = direct_damage(ctx, crash, a, 1)
    # -- tryMoveHit: the Self-Destruct / Explosion user faints, hit, miss or immune
    ctx = mset(ctx, "hp", a, 0, en & jnp.asarray(T.MOVE_SELFDESTRUCT)[move] & ~broke)
    # -- AfterMoveSecondary (conditions.ts frz.onAfterMoveSecondary)
    thaw = landed & jnp.asarray(MV.SECONDARY_IS_BURN)[move] & (
        _i(mon(ctx, "status", d)) == T.STATUS_FRZ)
    return cure_status(ctx, d, thaw)


def _own_move_count(ctx: Ctx, a: Any) -> Array:
    """``pokemon.ppUps.length``: the set's own moves (the base slots)."""
    base = jnp.where(aget(ctx, "base_separate", a), aget(ctx, "base_moves", a),
                     mon(ctx, "moves", a))
    return (base > 0).sum().astype(I32)


def _keep_base(ctx: Ctx, a: Any, keep: Array, en: Any) -> Ctx:
    """Slots ``keep`` of side ``a``'s moveSlots get new objects: baseMoveSlots keep the old ones
    (where they were not separate already)."""
    sep = aget(ctx, "base_separate", a)
    for name, base in (("moves", "base_moves"), ("pp", "base_pp"), ("maxpp", "base_maxpp")):
        ctx = aset(ctx, base, a, jnp.where(sep, aget(ctx, base, a), mon(ctx, name, a)), en)
    return aset(ctx, "base_separate", a, sep | keep, en)


def mimic(ctx: Ctx, en: Any, a: Any, d: Any) -> Ctx:
    """``mods/gen1/moves.ts mimic.onHit``: ``sample(target.moves)``, which goes into the user's
    ``lastSelectedMoveSlot`` as a virtual slot with that slot's PP and the copied move's
    ``calculatePP(move, ppUps[slot] || 0)`` as max PP."""
    foe_moves = mon(ctx, "moves", d)
    n = (foe_moves > 0).sum().astype(I32)
    state, pick = prng.sample(ctx["st"]["prng"], foe_moves, jnp.maximum(n, 1))
    ctx = _record(_advance(ctx, en, state), en, n, NONE)
    k = jnp.clip(_i(ctx["st"]["side"]["last_selected_slot"][a]), 0, 3)
    ups = k < _own_move_count(ctx, a)
    maxpp = jnp.where(ups, jnp.asarray(MV.MAXPP_UPS3)[_i(pick)],
                      jnp.asarray(MV.MAXPP_UPS0)[_i(pick)])
    ctx = _keep_base(ctx, a, jnp.arange(4) == k, en)
    ctx = mset(ctx, "moves", a, _setk(mon(ctx, "moves", a), k, pick), en)
    ctx = mset(ctx, "maxpp", a, _setk(mon(ctx, "maxpp", a), k, maxpp), en)
    return aset(ctx, "slot_virtual", a, _setk(aget(ctx, "slot_virtual", a), k, True), en)


def transform(ctx: Ctx, en: Any, a: Any, d: Any) -> Ctx:
    """``sim/pokemon.ts transformInto`` (Gen 1: also into a transformed target): the target's
    species, types, storedStats, modifiedStats, stages; new virtual move slots of its moves with
    ``min(5, pp)`` PP (max PP ``calculatePP`` with the user's ppUps of that slot); baseMoveSlots
    keep the user's own. ``setSpecies`` caches as ``pokemon.speed`` the Speed of the target's
    species with the user's own level, IV and EV (the copy of storedStats comes after)."""
    ctx = aset(ctx, "species", a, aget(ctx, "species", d), en)
    ctx = aset(ctx, "transformed", a, True, en)
    ctx = mset(ctx, "types", a, mon(ctx, "types", d), en)
    ctx = aset(ctx, "stored", a, aget(ctx, "stored", d), en)
    ctx = mset(ctx, "modified", a, mon(ctx, "modified", d), en)
    ctx = aset(ctx, "boosts", a, aget(ctx, "boosts", d), en)
    foe_moves = _i(mon(ctx, "moves", d))
    n_foe = (foe_moves > 0).sum()
    n_own = _own_move_count(ctx, a)
    idx = jnp.arange(4)
    ctx = _keep_base(ctx, a, idx < jnp.maximum(n_own, n_foe), en)
    has = foe_moves > 0
    maxpp = jnp.where(idx < n_own, jnp.asarray(MV.MAXPP_UPS3)[foe_moves],
                      jnp.asarray(MV.MAXPP_UPS0)[foe_moves])
    ctx = mset(ctx, "moves", a, foe_moves, en)
    ctx = mset(ctx, "pp", a, jnp.where(has, jnp.asarray(MV.TRANSFORM_PP)[foe_moves], 0), en)
    ctx = mset(ctx, "maxpp", a, jnp.where(has, maxpp, 0), en)
    ctx = aset(ctx, "slot_virtual", a, has, en)
    base = jnp.asarray(T.BASE_STATS)[_i(aget(ctx, "species", d)), 5]
    spe = M.stat_value(base, mon(ctx, "spe_iv", a), mon(ctx, "spe_ev", a), mon(ctx, "level", a),
                       False)
    return _upd(ctx, speed=jnp.where(en, _setk(ctx["speed"], a, spe), ctx["speed"]))


_HAZE_CLEARS = (_V["disable"] | _V["confusion"] | _V["mist"] | _V["focusenergy"] | _V["leechseed"]
                | _V["lightscreen"] | _V["reflect"] | _V["residualdmg"])
CANNOTMOVE = S.MOVE_ID["cannotmove"]


def haze(ctx: Ctx, en: Any, a: Any) -> Ctx:
    """``mods/gen1/moves.ts haze.onHit``, for each active in order (p1, p2): clearBoosts (stages
    0, modified stats = stored, penalties gone); the foe of the user loses its status, and if it
    was frozen or asleep its lastSelectedMove / lastEnemySelectedMove become ``cannotmove``, as
    does its queued move if it has yet to act; a badly poisoned Pokemon (the user) becomes
    poisoned (``setStatus('psn')``: the clause handlers' tie draw); ``updateSpeed``; the volatiles
    disable, confusion, mist, focusenergy, leechseed, lightscreen, reflect, residualdmg go."""
    for p in (0, 1):
        ctx = aset(ctx, "boosts", p, jnp.zeros(7, jnp.int8), en)
        ctx = mset(ctx, "modified", p, aget(ctx, "stored", p), en)
        other = en & (a != p)
        status = _i(mon(ctx, "status", p))
        stuck = other & ((status == T.STATUS_FRZ) | (status == T.STATUS_SLP))
        ctx = sset(ctx, "last_selected_move", p, CANNOTMOVE, stuck)
        ctx = sset(ctx, "last_enemy_selected_move", p, CANNOTMOVE, stuck)
        ctx = _upd(ctx, queued=jnp.where(stuck & ctx["pending"][p],
                                         ctx["queued"].at[p].set(CANNOTMOVE), ctx["queued"]))
        ctx = cure_status(ctx, p, other, by_ally=False)
        ctx = update_speed(ctx, p, en)
        ctx = set_vol(ctx, p, _HAZE_CLEARS, False, en)
        for leaf in ("confusion_time", "disable_time", "disable_slot", "disable_move",
                     "toxic_counter"):
            ctx = aset(ctx, leaf, p, 0, en)
    # only the user can still be badly poisoned (the foe's status is gone): its setStatus('psn')
    # makes the only draw, so it may come after the foe's part
    ctx, _ = set_status(ctx, en & (_i(mon(ctx, "status", a)) == T.STATUS_TOX), a, T.STATUS_PSN,
                        by_ally=True)
    return ctx


def before_move(ctx: Ctx, en: Any, a: Any, move: Array) -> tuple[Ctx, Array]:
    """``runEvent('BeforeMove')`` handlers in priority order; returns (ctx, aborted)."""
    status = _i(mon(ctx, "status", a))
    frz = en & (status == T.STATUS_FRZ)
    ctx = aset(ctx, "last_move", a, 0, frz)
    slp = en & ~frz & (status == T.STATUS_SLP)
    ctx = mset(ctx, "sleep_turns", a, _i(mon(ctx, "sleep_turns", a)) - 1, slp)
    ctx = aset(ctx, "last_move", a, 0, slp)
    aborted = frz | slp
    # mods/gen1/conditions.ts partiallytrapped.onBeforeMove (priority 9): cannot move
    aborted = aborted | (en & ~aborted & has_vol(ctx, a, "partiallytrapped"))
    flinch = en & ~aborted & has_vol(ctx, a, "flinch")
    aborted = aborted | flinch
    recharge = en & ~aborted & has_vol(ctx, a, "mustrecharge")  # returns null: stops the event
    ctx = set_vol(ctx, a, _V["mustrecharge"], False, recharge)
    aborted = aborted | recharge
    # mods/gen1/moves.ts disable.condition.onBeforeMove (priority 6): the counter runs down and
    # ends the Disable at 0; else the disabled move (by id) is not used, twoturnmove goes
    dis = en & ~aborted & has_vol(ctx, a, "disable")
    left = _i(aget(ctx, "disable_time", a)) - 1
    ctx = aset(ctx, "disable_time", a, left, dis)
    over = dis & (left <= 0)
    ctx = set_vol(ctx, a, _V["disable"], False, over)
    for leaf in ("disable_time", "disable_slot", "disable_move"):
        ctx = aset(ctx, leaf, a, 0, over)
    stopped = dis & ~over & (move == _i(aget(ctx, "disable_move", a)))
    ctx = set_vol(ctx, a, _V["twoturnmove"], False, stopped)
    aborted = aborted | stopped
    conf = en & ~aborted & has_vol(ctx, a, "confusion")
    t = _i(aget(ctx, "confusion_time", a)) - 1
    ctx = aset(ctx, "confusion_time", a, t, conf)
    ends = conf & (t == 0)
    ctx = set_vol(ctx, a, _V["confusion"], False, ends)
    ctx = aset(ctx, "confusion_time", a, 0, ends)
    ctx, acts = chance(ctx, conf & ~ends, 128, 256)
    hurts = conf & ~ends & ~acts
    mod = mon(ctx, "modified", a)
    self_hit = M.confusion_self_damage(mon(ctx, "level", a), mod[0], mod[1])
    ctx = direct_damage(ctx, hurts, a, self_hit)
    ctx = set_vol(ctx, a, _CONFUSION_CLEARS, False, hurts)
    ctx = drop_vol(ctx, a, "partialtrappinglock", hurts)
    aborted = aborted | hurts
    par = en & ~aborted & (status == T.STATUS_PAR)
    ctx, full = chance(ctx, par, 63, 256)
    ctx = set_vol(ctx, a, _PAR_CLEARS, False, full)
    ctx = drop_vol(ctx, a, "partialtrappinglock", full)
    aborted = aborted | full
    # partialtrappinglock.onBeforeMove (priority 0, as Bide's, which never holds at the same
    # time): the lock ends when the target is not the locked Pokemon, i.e. the foe switched (the
    # new one is not partially trapped)
    ctx = drop_vol(ctx, a, "partialtrappinglock", en & ~aborted & has_vol(
        ctx, a, "partialtrappinglock") & ~has_vol(ctx, 1 - a, "partiallytrapped"))
    # mods/gen1/moves.ts bide.condition.onBeforeMove (priority 0): lastDamage is stored, the
    # counter runs down; at 0, twice the stored damage hits the foe (nothing stored: it fails)
    bide = en & ~aborted & has_vol(ctx, a, "bide")
    stored = _i(aget(ctx, "bide_damage", a)) + _i(ctx["st"]["last_damage"])
    ctx = aset(ctx, "bide_damage", a, stored, bide)
    left = _i(aget(ctx, "bide_time", a)) - 1
    ctx = aset(ctx, "bide_time", a, left, bide)
    release = bide & (left == 0)
    ctx = bide_hit(ctx, release & (stored != 0), a, 1 - a, 2 * stored)
    ctx = set_vol(ctx, a, _V["bide"], False, release)
    return ctx, aborted | bide


MAX_CALLS = 4  # useMove passes of one runMove: a move, and up to 3 Metronome / Mirror Move calls


def use_move(ctx: Ctx, en: Any, a: Any, move: Array, caller: Any, aborted: Any = False
             ) -> tuple[Ctx, Array, Array]:
    """``mods/gen1/scripts.ts useMove`` -> ``useMoveInner`` for side ``a``'s active using
    ``move``; ``caller``: the id of the Metronome or Mirror Move whose ``onHit`` calls it (its
    sourceEffect; 0 for runMove's own). ``aborted``: runMove stopped before useMove (``en`` is
    then false), whose abortMove runs AfterMoveSelf here too, so that one traced copy serves
    both. Returns (ctx, a Metronome / Mirror Move called a move, the move it calls)."""
    d = 1 - a
    from_mirror = _i(caller) != 0
    self_t = jnp.asarray(T.MOVE_TARGET_SELF)[move] & (move < T.N_MOVES)  # not 'cannotmove'
    two = jnp.asarray(MV.TWO_TURN)[move]
    charged = has_vol(ctx, a, "twoturnmove")
    charging = en & two & ~charged
    # a two-turn move called by Metronome or Mirror Move gives back the PP runMove took from the
    # lastSelectedMoveSlot (deductPP(-1)); a transformed user's base slot also gains one
    k = _i(ctx["st"]["side"]["last_selected_slot"][a])
    refund = en & from_mirror & two
    ctx = deduct_pp(ctx, refund, a, k, -1)
    bk = jnp.clip(k, 0, 3)
    ctx = aset(ctx, "base_pp", a, _setk(aget(ctx, "base_pp", a), bk,
                                         (_i(aget(ctx, "base_pp", a)[bk]) + 1) % 64),
               en & from_mirror & aget(ctx, "transformed", a) & (k < _own_move_count(ctx, a)))
    ctx = sset(ctx, "last_move", a, move, en)
    ctx = sset(ctx, "last_enemy_move", a, move, en)
    ctx = aset(ctx, "last_move", a, move, en & ~charging)
    # two-turn moves (scripts.ts TWO_TURN_MOVES; moves.ts onTryMove): the first turn adds
    # twoturnmove and stops in useMoveInner's TryMove (no PP, no pokemon.lastMove, lastDamage
    # untouched); the second removes it and runs the move
    ctx = set_vol(ctx, a, _V["twoturnmove"], True, charging)
    ctx = set_vol(ctx, a, _V["invulnerability"], True,
                  charging & jnp.asarray(MV.INVULNERABLE_CHARGE)[move])
    ctx = aset(ctx, "twoturn_move", a, move, charging)
    ctx = aset(ctx, "twoturn_source", a, caller, charging)
    ctx = set_vol(ctx, a, _V["twoturnmove"] | _V["invulnerability"], False, en & two & charged)
    ctx = aset(ctx, "twoturn_move", a, 0, en & two & charged)
    go_hit = en & ~charging
    ctx = bset(ctx, "last_damage", 0, go_hit & ~jnp.asarray(MV.SKIP_LASTDAMAGE)[move])
    ctx = move_hit(ctx, go_hit, a, d, move)
    # mods/gen1/moves.ts mirrormove.onHit: fails without a foe's lastMove or when it is Mirror
    # Move; else lastSelectedMove and lastEnemySelectedMove become that move, which is used
    foe_last = _i(aget(ctx, "last_move", d))
    # the 'nomove' ActiveMove is Fissure by id: Mirror Move calls the real Fissure
    foe_last = jnp.where(foe_last == T.NOMOVE, MV.ID["fissure"], foe_last)
    mirror = go_hit & (move == MV.ID["mirrormove"]) & (foe_last != 0) & (
        foe_last != MV.ID["mirrormove"])
    # mods/gen1/moves.ts metronome.onHit: sample() of METRONOME_MOVES (in num order), which
    # becomes lastSelectedMove and lastEnemySelectedMove and is used; it never fails in Gen 1
    metronome = go_hit & (move == MV.ID["metronome"])
    n_metronome = len(MV.METRONOME_MOVES)
    state, pick = prng.sample(ctx["st"]["prng"], jnp.asarray(MV.METRONOME_IDS), n_metronome)
    ctx = _record(_advance(ctx, metronome, state), metronome, n_metronome, NONE)
    called = jnp.where(metronome, _i(pick), foe_last)
    calls = mirror | metronome
    ctx = sset(ctx, "last_selected_move", a, called, calls)
    ctx = sset(ctx, "last_enemy_selected_move", a, called, calls)
    # AfterMove and AfterMoveSelf: never after Metronome, after a Mirror Move only when it
    # failed (the called move ran its own); mods/gen1/conditions.ts mustrecharge.onAfterMove
    # (no recharge after a KO)
    tail = en & ~mirror & ~(move == MV.ID["metronome"])
    t = jnp.where(self_t, a, d)  # useMove: target 'self'
    ctx = set_vol(ctx, a, _V["mustrecharge"], False, tail & (_i(mon(ctx, "hp", t)) <= 0))
    # conditions.ts lockedmove.onAfterMove: the lock ends when its counter is spent
    ctx = set_vol(ctx, a, _V["lockedmove"], False,
                  tail & has_vol(ctx, a, "lockedmove") & (_i(aget(ctx, "locked_time", a)) <= 0))
    ctx = trap_after_move(ctx, tail & has_vol(ctx, a, "partialtrappinglock"), a, t, move)
    ctx = residual_status_damage(ctx, a, (tail & (_i(mon(ctx, "hp", t)) > 0)) | aborted, self_t)
    return ctx, calls, called


def trap_after_move(ctx: Ctx, en: Any, a: Any, t: Any, move: Array) -> Ctx:
    """``mods/gen1/conditions.ts partialtrappinglock.onAfterMove``: a fainted target ends the
    lock; on its last turn (duration 1) both Pokemon get ``fakepartiallytrapped`` (duration 2)
    unless it lasted 5 turns; otherwise the target's ``partiallytrapped`` restarts (duration 2;
    added afresh, with this move as sourceEffect, if it was gone), ``maybeLocked`` once the lock
    has been used before."""
    ctx = drop_vol(ctx, a, "partialtrappinglock", en & (_i(mon(ctx, "hp", t)) <= 0))
    en = en & (_i(mon(ctx, "hp", t)) > 0)
    dur = _i(aget(ctx, "lock_duration", a))
    total = _i(aget(ctx, "lock_total", a))
    fake = en & (dur == 1) & (total != 5)
    for p in (0, 1):  # addVolatile fails on a volatile already there (no onRestart)
        new = fake & ~has_vol(ctx, p, "fakepartiallytrapped")
        ctx = set_vol(ctx, p, _V["fakepartiallytrapped"], True, new)
        ctx = aset(ctx, "fake_trapped_duration", p, 2, new)
    hold = en & (dur != 1)
    new = hold & ~has_vol(ctx, t, "partiallytrapped")
    ctx = set_vol(ctx, t, _V["partiallytrapped"], True, new)
    ctx = aset(ctx, "trapped_move", t, move, new)
    ctx = aset(ctx, "trapped_maybe_locked", t, False, new)
    ctx = aset(ctx, "trapped_duration", t, 2, hold)  # partiallytrapped.onRestart
    return aset(ctx, "trapped_maybe_locked", t, True, hold & (total - dur > 0))


def deduct_pp(ctx: Ctx, en: Any, a: Any, k: Any, amount: int) -> Ctx:
    """``mods/gen1/scripts.ts pokemon.deductPP`` on move slot ``k`` (lastSelectedMoveSlot): PP
    minus ``amount`` with the 6-bit wrap; a virtual slot of a Pokemon that is not transformed
    (Mimic's) also writes the PP into its base slot."""
    k = jnp.clip(_i(k), 0, 3)
    pp = mon(ctx, "pp", a)
    new = (_i(pp[k]) - amount) & 63
    ctx = mset(ctx, "pp", a, _setk(pp, k, new), en)
    sync = en & aget(ctx, "slot_virtual", a)[k] & ~aget(ctx, "transformed", a)
    return aset(ctx, "base_pp", a, _setk(aget(ctx, "base_pp", a), k, new), sync)


def run_move(ctx: Ctx, en: Any, a: Any, move: Array) -> Ctx:
    """``runMove`` for side ``a``'s active using ``move`` (the queued move id,
    ``side.lastSelectedMove``): BeforeMove, the PP, then ``useMove``; a Mirror Move that works
    calls ``useMove`` again from its ``onHit`` (the second pass of one loop, so that one compiled
    move body serves both)."""
    en = en & (slot(ctx, a) >= 0) & ~mon(ctx, "fainted", a)
    # 'cannotmove' (queued by Haze, or a thawed/woken Pokemon's "fight" after it): abortMove
    # before BeforeMove
    cannot = move == CANNOTMOVE
    ctx, aborted = before_move(ctx, en & ~cannot, a, move)
    aborted = aborted | (en & cannot)
    go = en & ~aborted
    # deductPP on lastSelectedMoveSlot, except on a two-turn move's charge turn and Struggle
    # (getLockedMove: a Thrash / Petal Dance lock takes no PP either)
    charging = jnp.asarray(MV.TWO_TURN)[move] & ~has_vol(ctx, a, "twoturnmove")
    k = ctx["st"]["side"]["last_selected_slot"][a]
    ctx = deduct_pp(ctx, go & ~charging & (move != MV.ID["struggle"])
                    & ~has_vol(ctx, a, "lockedmove") & ~has_vol(ctx, a, "rage")
                    & ~has_vol(ctx, a, "partialtrappinglock"), a, k, 1)
    # 'nomove' (thawed before its side ever selected a move) runs as the ActiveMove runMove
    # makes of Fissure (tables.NOMOVE's row); its id stays 'nomove' in the state (lastMove)

    def more(carry: tuple) -> Array:
        i, _, en, *_ = carry
        return (i == 0) | (en & (i < MAX_CALLS))

    def use(carry: tuple) -> tuple:
        i, ctx, en, mv, _ = carry
        # the first pass also runs abortMove's AfterMoveSelf
        ctx, again, nxt = use_move(ctx, en, a, mv, _i(carry[4]), (i == 0) & en_abort)
        return i + 1, ctx, again, nxt, jnp.where(again, mv, 0)

    en_abort = en & aborted
    z = _i(move) * 0
    # (a Metronome or Mirror Move that called a move leaves its moveHit with onHit's undefined,
    # i.e. the relay value true: tryMoveHit keeps a lock its called move made)
    _, ctx, *_ = jax.lax.while_loop(more, use, (z, ctx, go, _i(move), z))
    return ctx


# ---- switches (battle-actions.ts switchIn, mods/gen4/scripts.ts runSwitch) --------------------

def switch_in(ctx: Ctx, en: Any, s: Any, j: Any) -> Ctx:
    """``switchIn``: the old active is cleared (clearVolatile) unless fainted (then its status
    becomes ''), positions are swapped, team member ``j`` becomes active; its cached speed is
    updated (``insertChoice`` of its runSwitch)."""
    old = slot(ctx, s)
    alive = _i(mon(ctx, "hp", s)) > 0
    ctx = rest_active(ctx, s, en & alive)
    ctx = mset(ctx, "status", s, T.STATUS_NONE, en & mon(ctx, "fainted", s))
    new_pos = tget(ctx, "position", s, j)
    ctx = tset(ctx, "position", s, old, new_pos, en)
    ctx = tset(ctx, "position", s, j, 0, en)
    ctx = aset(ctx, "slot", s, j, en)
    ctx = _zero_active(ctx, s, j, en)
    return update_speed(ctx, s, en)


def run_switch(ctx: Ctx, en: Any, s: Any) -> Ctx:
    """``mods/gen4/scripts.ts runSwitch`` (gen <= 2): every active's lastMove cleared,
    ``lastSelectedMoveSlot = 0`` (and Gen 1's Metronome-lock rule below),
    ``AfterSwitchInSelf``: brn/psn/tox deal floor(maxHP/16) unless the side fainted this turn."""
    for t in (0, 1):
        ctx = aset(ctx, "last_move", t, 0, en & ~mon(ctx, "fainted", t))
    # runEvent('SwitchIn'): tox.onSwitchIn, a badly poisoned Pokemon comes back merely poisoned
    ctx = mset(ctx, "status", s, T.STATUS_PSN, en & (_i(mon(ctx, "status", s)) == T.STATUS_TOX))
    ctx = sset(ctx, "last_selected_slot", s, 0, en)
    # then each standing foe under a partial-trapping lock whose lastSelectedMoveSlot holds
    # Metronome (a lock that Metronome's call made) goes back to Metronome: lastSelectedMove,
    # lastEnemySelectedMove and, if it has yet to act, its queued move (queue.changeAction)
    foe = 1 - s
    k = jnp.clip(_i(ctx["st"]["side"]["last_selected_slot"][foe]), 0, 3)
    back = (en & (slot(ctx, foe) >= 0) & (_i(mon(ctx, "hp", foe)) > 0)
            & has_vol(ctx, foe, "partialtrappinglock")
            & (_i(mon(ctx, "moves", foe)[k]) == MV.ID["metronome"]))
    ctx = sset(ctx, "last_selected_move", foe, MV.ID["metronome"], back)
    ctx = sset(ctx, "last_enemy_selected_move", foe, MV.ID["metronome"], back)
    if "pending" in ctx:  # (create.py's battle start has no queue, and no lock)
        ctx = _upd(ctx, queued=jnp.where(back & ctx["pending"][foe],
                                         ctx["queued"].at[foe].set(MV.ID["metronome"]),
                                         ctx["queued"]))
    status = _i(mon(ctx, "status", s))
    hurt = en & ~ctx["ftt"][s] & ((status == T.STATUS_BRN) | (status == T.STATUS_PSN)
                                  | (status == T.STATUS_TOX))
    ctx, _ = damage(ctx, hurt, s, jnp.maximum(_i(mon(ctx, "maxhp", s)) // 16, 1), False)
    return ctx


def after_action(ctx: Ctx, en: Any, update: Any = True) -> Ctx:
    """``runAction``'s tail: faints (which stop the turn), else ``eachEvent('Update')``."""
    ctx, fainted = faint_messages(ctx, en)
    return each_event(ctx, en & ~fainted & update)


def team_index_at(ctx: Ctx, s: Any, position: Any) -> Array:
    pos = _i(ctx["st"]["team"]["position"][s])
    present = ctx["st"]["team"]["present"][s]
    return jnp.argmax(present & (pos == _i(position))).astype(I32)


# ---- the step -------------------------------------------------------------------------------

def usable_slots(pp: Array, moves: Array, volatiles: Array, disable_slot: Array) -> Array:
    """``getMoves``: the slots a move request offers, a move with PP and not disabled (Disable's
    ``onDisableMove`` marks its slot); none: Struggle."""
    disabled = ((volatiles & jnp.uint32(_V["disable"])) != 0) & (jnp.arange(4) == _i(disable_slot))
    return (moves > 0) & (pp > 0) & ~disabled


def _commit_move(ctx: Ctx, s: Any, c: Array, en: Array) -> tuple[Ctx, Array]:
    """``side.ts commitChoices`` (gen 1) for a move choice; returns the queued move id: the
    chosen slot's move; ``lastSelectedMove`` again for a sleeping or frozen Pokemon's "fight" and
    for a locked one (Hyper Beam's recharge); Struggle when no move has PP."""
    status = _i(mon(ctx, "status", s))
    moves = mon(ctx, "moves", s)
    frz_slp = (status == T.STATUS_FRZ) | (status == T.STATUS_SLP)
    # getLockedMove() || getSemiLockedMove() (the partial-trapping lock is a semi-lock too),
    # then Gen 1's "fight" of a frozen, asleep or partially trapped Pokemon
    locked = (has_vol(ctx, s, "mustrecharge") | has_vol(ctx, s, "twoturnmove")
              | has_vol(ctx, s, "lockedmove") | has_vol(ctx, s, "rage") | has_vol(ctx, s, "bide")
              | has_vol(ctx, s, "partialtrappinglock"))
    trapped = has_vol(ctx, s, "partiallytrapped")
    fight = frz_slp | locked | trapped
    struggle = en & ~fight & ~usable_slots(ctx["st"]["team"]["pp"][s, slot(ctx, s)], moves,
                                            aget(ctx, "volatiles", s),
                                            aget(ctx, "disable_slot", s)).any()
    choose = en & ~fight & ~struggle
    k = jnp.clip(c, 0, 3)
    ctx = sset(ctx, "last_selected_move", s, moves[k], choose)
    ctx = sset(ctx, "last_selected_slot", s, k, choose)
    ctx = sset(ctx, "last_move", s, moves[k], choose)
    lss = _i(ctx["st"]["side"]["last_selected_slot"][s])
    ctx = sset(ctx, "last_enemy_selected_move", s, moves[jnp.clip(lss, 0, 3)], en & ~struggle)
    # a partially trapped Pokemon's "fight" (not frozen or asleep): both become 'cannotmove'
    cannot = en & trapped & ~locked & ~frz_slp
    ctx = sset(ctx, "last_selected_move", s, CANNOTMOVE, cannot)
    ctx = sset(ctx, "last_enemy_selected_move", s, CANNOTMOVE, cannot)
    ctx = sset(ctx, "last_selected_move", s, MV.ID["struggle"], struggle)
    ctx = sset(ctx, "last_enemy_selected_move", s, MV.ID["struggle"], struggle)
    return ctx, _i(ctx["st"]["side"]["last_selected_move"][s])


def _turn(ctx: Ctx, c: Array) -> Ctx:
    """A move request answered by both sides: the whole turn."""
    is_switch = [c[s] >= SWITCH for s in (0, 1)]
    moves = []
    for s in (0, 1):
        ctx, m = _commit_move(ctx, s, c[s], ~is_switch[s])
        moves.append(m)
    move = jnp.stack(moves)
    is_sw = jnp.stack(is_switch)
    speed = ctx["speed"]
    # queue.sort: order (switch 103, move 200), then priority, then speed; a tie shuffles
    prio = jnp.where(is_sw, 0, _i(jnp.asarray(T.MOVE_PRIORITY)[move]))
    order = jnp.where(is_sw, 103, 200)
    key0 = (-order[0], prio[0], speed[0])
    key1 = (-order[1], prio[1], speed[1])
    p2_first = ((key1[0] > key0[0]) | ((key1[0] == key0[0]) & (key1[1] > key0[1]))
                | ((key1[0] == key0[0]) & (key1[1] == key0[1]) & (key1[2] > key0[2])))
    tied = (key0[0] == key1[0]) & (key0[1] == key1[1]) & (key0[2] == key1[2])
    ctx, swapped = tie(ctx, tied)
    first = jnp.where(p2_first | swapped, 1, 0)
    # beforeTurn (eachEvent) and its Update
    ctx = each_event(ctx, True)
    ctx = each_event(ctx, True)

    # the queued moves (Haze may change one that has yet to run) and which are still queued
    ctx = _upd(ctx, queued=move, pending=~is_sw)

    def action(k: int, ctx: Ctx) -> Ctx:
        s = jnp.where(k == 0, first, 1 - first)
        ctx = _upd(ctx, pending=ctx["pending"].at[s].set(False))
        en = ctx["live"] & ~ctx["st"]["ended"]
        sw = en & is_sw[s]
        target = team_index_at(ctx, s, c[s] - SWITCH)
        ctx = switch_in(ctx, sw, s, target)
        ctx = after_action(ctx, sw)
        ctx = run_switch(ctx, sw & ctx["live"], s)
        mv = en & ~is_sw[s]
        ctx = run_move(ctx, mv, s, ctx["queued"][s])
        # one tail for both kinds: run_move does nothing for a switch, so the switch's tail
        # (after its runSwitch) may come after it
        return after_action(ctx, (sw & ctx["live"]) | mv)

    ctx = jax.lax.fori_loop(0, 2, action, ctx)
    # residual: updateSpeed, fieldEvent('Residual')
    en = ctx["live"] & ~ctx["st"]["ended"]
    for s in (0, 1):
        ctx = update_speed(ctx, s, en & ~mon(ctx, "fainted", s))
    ctx = residual(ctx, en)
    ctx = after_action(ctx, en)
    return end_turn(ctx, ctx["live"] & ~ctx["st"]["ended"])


# the Gen 1 volatiles with a ``duration`` (the rest count with their own fields): the handlers of
# fieldEvent('Residual'), and the leaf holding each duration
_DURATIONS = (("flinch", "flinch_duration"), ("partiallytrapped", "trapped_duration"),
              ("fakepartiallytrapped", "fake_trapped_duration"),
              ("partialtrappinglock", "lock_duration"))


def residual(ctx: Ctx, en: Any) -> Ctx:
    """``battle.ts fieldEvent('Residual')``: a handler per volatile with a duration on each
    active (flinch, partiallytrapped, fakepartiallytrapped, partialtrappinglock; none has an
    ``onResidual`` or ``onResidualOrder`` in Gen 1, so all share order, priority 0 and subOrder 2),
    speedSort'ed by the cached speed: the tied ones (one group when the two speeds are equal) are
    shuffled (``random(start + k, end)`` draws); then each duration goes down by one and the
    volatile ends at 0. No handler draws or depends on another, so only the draws follow the
    sorted order."""
    n = [sum(has_vol(ctx, s, name).astype(I32) for name, _ in _DURATIONS) for s in (0, 1)]
    sp = ctx["speed"]
    same = sp[0] == sp[1]
    hi = jnp.where(sp[1] > sp[0], 1, 0)
    n_hi = jnp.where(hi == 1, n[1], n[0])
    n_lo = jnp.where(hi == 1, n[0], n[1])
    # equal speeds: one group of all n handlers, shuffle(0, n); else the faster side's group,
    # shuffle(0, n_hi), then the slower side's, shuffle(n_hi, n_hi + n_lo). Their draws as one
    # run of draw sites (g1 from the first group, then g2 from the second), so that the step
    # holds 7 draw sites here, not 13
    g1 = jnp.where(same, n[0] + n[1] - 1, jnp.maximum(n_hi - 1, 0))
    g2 = jnp.where(same, 0, jnp.maximum(n_lo - 1, 0))
    for k in range(2 * len(_DURATIONS) - 1):
        second = k >= g1
        ctx, _ = rand_range(ctx, en & (k < g1 + g2), jnp.where(second, n_hi + k - g1, k),
                            jnp.where(same, n[0] + n[1], jnp.where(second, n_hi + n_lo, n_hi)))
    for s in (0, 1):
        for name, leaf in _DURATIONS:
            on = en & has_vol(ctx, s, name)
            left = _i(aget(ctx, leaf, s)) - 1
            ctx = aset(ctx, leaf, s, left, on)
            ctx = drop_vol(ctx, s, name, on & (left <= 0))
    return ctx


def _forced_switches(ctx: Ctx, c: Array) -> Ctx:
    """A switch request (``makeRequest('switch')``) answered: the instaswitches in speed order
    (the fainted Pokemon's Speed), their runSwitch actions in the new Pokemon's speed order (a
    tie in ``insertChoice`` draws ``random(0, 2)``), then ``endTurn``."""
    need = jnp.stack([mon(ctx, "fainted", s) for s in (0, 1)]) & (c >= SWITCH)
    both = need[0] & need[1]
    sp = jnp.stack([cur_speed(ctx, s) for s in (0, 1)])
    ctx, swapped = tie(ctx, both & (sp[0] == sp[1]))
    first = jnp.where(need[0] & need[1], jnp.where((sp[1] > sp[0]) | swapped, 1, 0),
                      jnp.where(need[0], 0, 1))

    def instaswitch(k: int, carry: tuple) -> tuple:
        ctx, rs_first = carry
        s = jnp.where(k == 0, first, 1 - first)
        en = (k == 0) | both
        ctx = switch_in(ctx, en, s, team_index_at(ctx, s, c[s] - SWITCH))
        # insertChoice(runSwitch) of the second into [runSwitch of the first]: by the new
        # Pokemon's speed, a tie drawing random(0, 2)
        sf, ss = ctx["speed"][first], ctx["speed"][1 - first]
        ctx, lands = rand_range(ctx, en & (k == 1) & (sf == ss), 0, 2)
        second_first = en & (k == 1) & ((ss > sf) | ((ss == sf) & (lands == 0)))
        rs_first = jnp.where(second_first, 1 - first, rs_first)
        # with another instaswitch next in the queue, runAction returns before Update
        ctx = after_action(ctx, en, update=(k == 1) | ~both)
        return ctx, rs_first

    ctx, r1 = jax.lax.fori_loop(0, 2, instaswitch, (ctx, first))

    def runswitch(k: int, ctx: Ctx) -> Ctx:
        s = jnp.where(k == 0, r1, 1 - r1)
        en = ctx["live"] & ((k == 0) | both)
        ctx = run_switch(ctx, en, s)
        return after_action(ctx, en)

    ctx = jax.lax.fori_loop(0, 2, runswitch, ctx)
    return end_turn(ctx, ctx["live"] & ~ctx["st"]["ended"])


def end_turn(ctx: Ctx, en: Any) -> Ctx:
    """``battle.endTurn``: turn + 1 and Gen 1's Endless Battle Clause (every side's Pokemon all
    fainted or frozen, or out of PP against an all-Ghost foe: a tie; a tie at turn 1001)."""
    st = ctx["st"]
    turn = _i(st["turn"]) + 1
    ctx = bset(ctx, "turn", turn, en)
    # Gen 1's partial-trapping clean-up, active by active (p1 fully, then p2): a lock whose
    # locked Pokemon fainted or is no longer partially trapped, a partiallytrapped whose source
    # fainted or lost its lock, a fakepartiallytrapped whose counterpart fainted or lost its own.
    # The locked Pokemon, the source and the counterpart were the foe's active when the volatile
    # came, and one that left the field lost its volatiles: so the foe's active stands for them.
    for s in (0, 1):
        on = en & (slot(ctx, s) >= 0) & ~mon(ctx, "fainted", s)
        foe = 1 - s
        foe_down = _i(mon(ctx, "hp", foe)) <= 0
        ctx = drop_vol(ctx, s, "partialtrappinglock", on & has_vol(ctx, s, "partialtrappinglock")
                       & (foe_down | ~has_vol(ctx, foe, "partiallytrapped")))
        ctx = drop_vol(ctx, s, "partiallytrapped", on & has_vol(ctx, s, "partiallytrapped")
                       & (foe_down | ~has_vol(ctx, foe, "partialtrappinglock")))
        ctx = drop_vol(ctx, s, "fakepartiallytrapped", on & has_vol(ctx, s, "fakepartiallytrapped")
                       & (foe_down | ~has_vol(ctx, foe, "fakepartiallytrapped")))
    # runEvent('DisableMove') on each active: its handlers in priority order, a tie costing a
    # shuffle: partiallytrapped and fakepartiallytrapped (priority 1) first, then slp / frz (a
    # status: subOrder 0) before the volatiles of priority 0 (Disable, Bide, the lock), which tie
    for s in (0, 1):
        on = en & (slot(ctx, s) >= 0)
        status = _i(mon(ctx, "status", s))
        first = (has_vol(ctx, s, "partiallytrapped").astype(I32)
                 + has_vol(ctx, s, "fakepartiallytrapped").astype(I32))
        ctx = shuffle_group(ctx, on, 0, first, 2)
        start = first + ((status == T.STATUS_SLP) | (status == T.STATUS_FRZ)).astype(I32)
        tied = (has_vol(ctx, s, "disable").astype(I32) + has_vol(ctx, s, "bide").astype(I32)
                + has_vol(ctx, s, "partialtrappinglock").astype(I32))
        ctx = shuffle_group(ctx, on, start, tied, 3)
    team = st["team"]
    present = team["present"]
    gone = team["fainted"] | ~present
    ghost = M.has_type(team["types"], T.TYPE_ID["Ghost"])
    foe_all_ghosts = (gone | ghost).all(axis=-1)[::-1]
    no_pp = (_i(team["pp"]) == 0).all(axis=-1)
    stuck = (gone | (team["status"] == T.STATUS_FRZ) | (no_pp & foe_all_ghosts[:, None])).all(-1)
    ties = en & (stuck.all() | (turn > 1000))
    ctx = bset(ctx, "ended", True, ties)
    return bset(ctx, "winner", S.WINNER_TIE, ties)


def _step(b: S.Battle, c1: Any, c2: Any) -> tuple[S.Battle, dict[str, Array]]:
    st = _unpack(b)
    # side.faintedThisTurn survives into the forced-switch request that a faint made
    fainted = jnp.stack([st["team"]["fainted"][s, jnp.maximum(_i(st["active"]["slot"][s]), 0)]
                         for s in (0, 1)])
    # the carry's constants made functions of the state (adding zero): under shard_map a
    # constant does not vary along the batch, and fori_loop's carry must keep its type
    z = (jnp.asarray(b.prng[0]) * jnp.uint32(0)).astype(I32)
    ctx = _ctx(st, speed=jnp.zeros(2, I32) + z, live=z == 0, ftt=fainted,
               queued=jnp.zeros(2, I32) + z, pending=jnp.zeros(2, bool) | (z != 0),
               tn=z, tfrom=jnp.full(TAPE_SIZE, NONE, I32) + z,
               tto=jnp.full(TAPE_SIZE, NONE, I32) + z)
    for s in (0, 1):  # commitChoices: updateSpeed of the unfainted actives
        ctx = update_speed(ctx, s, ~mon(ctx, "fainted", s))
    c = jnp.stack([_i(c1), _i(c2)])
    forced = mon(ctx, "fainted", 0) | mon(ctx, "fainted", 1)
    ended = st["ended"]
    ctx_turn = _turn(ctx, c)
    ctx_sw = _forced_switches(ctx, c)
    out = jax.tree_util.tree_map(lambda x, y: jnp.where(forced, y, x), ctx_turn, ctx_sw)
    out = jax.tree_util.tree_map(lambda x, y: jnp.where(ended, y, x), out, ctx)
    return _pack(out["st"]), {"draws": out["tn"], "tape_from": out["tfrom"],
                              "tape_to": out["tto"]}


def step(b: S.Battle, c1: Any, c2: Any) -> S.Battle:
    """One request answered: the battle after Showdown's turn (or forced switches)."""
    return _step(b, c1, c2)[0]


step_with_tape = _step


@functools.cache
def compiled(batched: bool = False) -> Any:
    """The jitted ``step_with_tape`` (vmapped over a leading batch axis when ``batched``), one per
    process: compile once and reuse."""
    f = jax.vmap(_step) if batched else _step
    return jax.jit(f)


# ---- legal choices (sim/pokemon.ts getMoveRequestData, sim/side.ts) ---------------------------

def legal_mask(b: S.Battle, player: Any) -> Array:
    """``bool[N_CHOICES]``: the choices Showdown's request allows ``player`` (0 = p1, 1 = p2).

    A forced switch: the unfainted bench positions; the other side waits (only ``NO_CHOICE``). A
    move request: the move slots with PP and not disabled (none -> slot 0, Struggle), only slot 0
    ("Fight") while asleep or frozen, only slot 0 and no switch while locked (recharge, a charged
    two-turn move, Thrash / Petal Dance, Rage), only slot 0 (Bide) while Bide stores damage;
    switches to every unfainted bench position. An ended battle: nothing."""
    s = _i(player)
    team, active = b.team, b.active
    j = _i(active.slot[s])
    fainted_active = team.fainted[jnp.arange(2), jnp.maximum(_i(active.slot), 0)]
    forced = fainted_active.any()
    mine_forced = fainted_active[s]
    pos = _i(team.position[s])
    bench_ok = team.present[s] & ~team.fainted[s] & (pos > 0)
    switch = jnp.zeros(6, bool).at[jnp.where(bench_ok, pos, 0)].max(bench_ok).at[0].set(False)
    moves = team.moves[s, j]
    pp = team.pp[s, j]
    usable = usable_slots(pp, moves, active.volatiles[s], active.disable_slot[s])
    status = team.status[s, j]
    frz_slp = (status == T.STATUS_FRZ) | (status == T.STATUS_SLP)
    vol = active.volatiles[s]

    def on(name: str) -> Array:
        return (vol & jnp.uint32(_V[name])) != 0

    # locked (Hyper Beam's recharge, a charged two-turn move): one move, trapped
    recharge = (vol & jnp.uint32(_V["mustrecharge"] | _V["twoturnmove"] | _V["lockedmove"]
                                 | _V["rage"])) != 0
    # pokemon.maybeLocked as endTurn's DisableMove handlers leave it, in their order:
    # partiallytrapped (if its maybeLocked) and fakepartiallytrapped set it, slp / frz clear it,
    # then Bide clears it and the lock sets it after a second use (never both on one Pokemon)
    lock = on("partialtrappinglock")
    lock_ml = lock & (_i(active.lock_total[s]) - _i(active.lock_duration[s]) > 1)
    maybe_locked = lock_ml | (~on("bide") & ~frz_slp & (
        (on("partiallytrapped") & active.trapped_maybe_locked[s]) | on("fakepartiallytrapped")))
    # getSemiLockedMove(true) (none while maybeLocked): Bide's or the trapping move only,
    # switching allowed; Gen 1's lone "Fight" for a frozen, asleep or partially trapped Pokemon
    # (this one unless maybeLocked); while maybeLocked the request lists the usual moves
    semi = (on("bide") | lock) & ~maybe_locked
    fight = frz_slp | (on("partiallytrapped") & ~maybe_locked)
    usable = jnp.where(fight | recharge | semi | ~usable.any(), jnp.arange(4) == 0, usable)
    switch = switch & ~recharge
    move_req = jnp.concatenate([usable, switch[:1] & False, switch[1:], jnp.zeros(1, bool)])
    switch_req = jnp.concatenate([jnp.zeros(5, bool), switch[1:], jnp.zeros(1, bool)])
    wait = jnp.zeros(N_CHOICES, bool).at[NO_CHOICE].set(True)
    mask = jnp.where(forced, jnp.where(mine_forced, switch_req, wait), move_req)
    return jnp.where(b.ended, jnp.zeros(N_CHOICES, bool), mask)


def choice_string(choice: int) -> str | None:
    """The Showdown choice of an integer choice (``None`` for :data:`NO_CHOICE`)."""
    choice = int(choice)
    if choice == NO_CHOICE:
        return None
    if 0 <= choice < 4:
        return f"move {choice + 1}"
    if SWITCH < choice < NO_CHOICE:
        return f"switch {choice - SWITCH + 1}"
    raise ValueError(f"choice {choice} is not a choice (0-3 moves, 5-9 switches, 10 none)")


def check_supported(b: S.Battle) -> None:
    """Raise ValueError naming every move in the battle the engine does not play yet."""
    moves = np.asarray(b.team.moves)[np.asarray(b.team.present)]
    MV.check_supported([S.MOVE_NAME[int(m)] for m in moves.ravel() if int(m)], "battle")
