"""The rules (reference ``rules.py``) in JAX, for the cards of the ``full`` pool: every
Pokémon the reference plays (no Ability; every attack template, ``cards.TEMPLATES``), the
fossils and every Trainer (``cards.EFFECTS``).

Covered, with the reference's order of draws: the opening hands (``basic_first``), the
first-player coin, setup placements, the Energy Zone (rolls, rotation, the first turn's none),
draw with the hand limit and an empty deck, attach, Basics and fossils to the Bench, retreat
(cost, the Energy choice as ``retreat_energy`` decisions, answered at once when only one type
is left; not while Asleep or Paralyzed, not a fossil, not under "can't retreat"), discarding a
fossil, attacks (cost; Asleep/Paralyzed or "can't attack" cannot attack; Confusion's coin; the
damage templates: multi-coin, flip until tails, coin bonus, all-heads bonus, coin bonus or
recoil, coin fail, per count, bonus if; the damage to the opponent's Active: Giovanni's +10,
Blaine's +30, +20 Weakness on damage > 0, the T13 reductions, Dig's protection; then the effect
(``AFTER``): a Special Condition, a coin for one, self-heal, discarding own Energy, recoil,
Bench damage, discarding the opponent's Energy or a card of its hand, draw, searches, the
opponent's hand revealed, a chosen target (snipe), T13 effects on either Active, Energy from the
Zone, switches, blocked Supporters, healing the damage dealt, damage to a chosen Benched
Pokémon of one's own; a choice with one answer taken at once, with none dropped, and Knock
Outs once every choice is made), Special Conditions (Asleep, Paralyzed and Confused replace
each other; Poisoned and Burned stack; they and attack effects go when the Pokémon leaves the
Active Spot or evolves), the Checkup (both Actives, condition by condition: Poisoned 10,
Burned 20 then a coin, Asleep a coin, Paralyzed removed after its owner's turn; the current
player's Active first within one condition), Knock Outs (points, 2 for an ``ex``; after the
attack and again after the Checkup), the game's end (3 points, no Pokémon in play, both at
once: a draw; the turn limit), promotions (``promotion_order``, a single Benched Pokémon
promoted without asking) and evolution (onto ``evolves_from`` one stage lower, fossils
included; not on a player's first turn, not on a Pokémon that entered play or evolved this
turn; damage and Energy stay).
Trainers (8): an Item any number of times, a Supporter once per turn (not on turn 1, not while
blocked), each card's check as the mask (its target, and "would do nothing" refused at the
flag's default); Potion, Erika (heal 20, 50), Misty (coins until tails, a Water Energy per
heads), Brock (a Fighting Energy), Sabrina (the opponent's ``new_active`` choice), Lt. Surge
(the Bench's Lightning Energy to the Active), Giovanni (+10), Blaine (+30 for Ninetales,
Rapidash, Magmar), X Speed (retreat -1), Hand Scope and Pokédex (what is revealed), Professor's
Research (draw 2), Poké Ball (a pick over the deck's Basics), Red Card (the opponent's hand into
its deck, a shuffle, draw 3), Koga (the Active Muk or Weezing back to the hand, then a
promotion); the card then goes to the discard pile.
Not covered: Abilities (the reference does not play them either), and the flags
``config.UNSUPPORTED`` keeps at their defaults.

Every function maps a ``State`` to a ``State``; branches are taken with ``select`` on whole
states so that everything traces under ``jit`` and ``vmap``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from envport.envs.tcg_pocket.jax_engine import actions as A
from envport.envs.tcg_pocket.jax_engine import cards as C
from envport.envs.tcg_pocket.jax_engine import rng as R
from envport.envs.tcg_pocket.jax_engine.config import Params
from envport.envs.tcg_pocket.jax_engine.state import (
    C_ASLEEP,
    C_BURNED,
    C_CONFUSED,
    C_PARALYZED,
    C_POISONED,
    D_ATTACK_TARGET,
    D_NEW_ACTIVE,
    D_OWN_BENCH_DAMAGE,
    D_PROMOTE,
    D_RETREAT_ENERGY,
    D_SETUP,
    D_ZONE_ATTACH,
    DRAW,
    FIELDS,
    MAX_PENDING,
    R_BOTH,
    R_NO_POKEMON,
    R_POINTS,
    R_TURN_LIMIT,
    S_CHECKUP,
    S_MAIN,
    S_NEXT_TURN,
    S_OVER,
    S_SETUP,
    SLOTS,
    ZONE,
    State,
)

OPENING_HAND = 5
POINTS_TO_WIN = 3
BOARD = ("stack", "energy", "damage", "entered_turn", "evolved_turn", "conditions",
         "effect_until", "effect_amount")
PENDING = ("pending_kind", "pending_player", "pending_left", "pending_energy", "pending_bench",
           "pending_amount", "pending_options", "pending_has_options")

IS_BASIC = jnp.asarray(C.IS_BASIC)
IS_POKEMON = jnp.asarray(C.IS_POKEMON)
STAGE = jnp.asarray(C.STAGE, jnp.int32)
EVOLVES_FROM = jnp.asarray(C.EVOLVES_FROM, jnp.int32)
IS_FOSSIL = jnp.asarray(C.IS_FOSSIL)
HP = jnp.asarray(C.HP, jnp.int32)
RETREAT = jnp.asarray(C.RETREAT, jnp.int32)
EX = jnp.asarray(C.EX)
TYPE = jnp.asarray(C.TYPE, jnp.int32)
WEAKNESS = jnp.asarray(C.WEAKNESS, jnp.int32)
N_ATK = jnp.asarray(C.N_ATK, jnp.int32)
ATK_TYPED = jnp.asarray(C.ATK_TYPED, jnp.int32)
ATK_COLORLESS = jnp.asarray(C.ATK_COLORLESS, jnp.int32)
ATK_DAMAGE = jnp.asarray(C.ATK_DAMAGE, jnp.int32)
ATK_TEMPLATE = jnp.asarray(C.ATK_TEMPLATE, jnp.int32)
ATK_X = jnp.asarray(C.ATK_X)
ATK_COINS = jnp.asarray(C.ATK_COINS, jnp.int32)
ATK_PER_HEADS = jnp.asarray(C.ATK_PER_HEADS, jnp.int32)
ATK_BONUS = jnp.asarray(C.ATK_BONUS, jnp.int32)
ATK_AMOUNT = jnp.asarray(C.ATK_AMOUNT, jnp.int32)
ATK_CONDITION = jnp.asarray(C.ATK_CONDITION, jnp.int32)
ATK_DISCARD_TYPE = jnp.asarray(C.ATK_DISCARD_TYPE, jnp.int32)
ATK_DISCARD_COUNT = jnp.asarray(C.ATK_DISCARD_COUNT, jnp.int32)
ATK_COIN = jnp.asarray(C.ATK_COIN)
ATK_PER = jnp.asarray(C.ATK_PER, jnp.int32)
ATK_COUNT = jnp.asarray(C.ATK_COUNT, jnp.int32)
ATK_PREDICATE = jnp.asarray(C.ATK_PREDICATE, jnp.int32)
ATK_N = jnp.asarray(C.ATK_N, jnp.int32)
ATK_ENERGY = jnp.asarray(C.ATK_ENERGY, jnp.int32)
ATK_NAME = jnp.asarray(C.ATK_NAME, jnp.int32)
ATK_TARGET_TYPE = jnp.asarray(C.ATK_TARGET_TYPE, jnp.int32)
ATK_BENCH_ONLY = jnp.asarray(C.ATK_BENCH_ONLY)
ATK_EFFECT = jnp.asarray(C.ATK_EFFECT, jnp.int32)
MAX_COINS = int(C.ATK_COINS.max())  # the static bound of a multi-coin attack's loop
MAX_DRAW = int(C.ATK_N[C.ATK_TEMPLATE == C.T_DRAW].max(initial=0))  # the draw template's bound
CANNOT_ATTACK, CANNOT_RETREAT, ATTACK_MINUS, TAKES_MINUS, PREVENT_ALL = range(
    len(C.ATTACK_EFFECTS))
IS_SUPPORTER = jnp.asarray(C.IS_SUPPORTER)
IS_TRAINER = jnp.asarray(C.IS_TRAINER)
TRAINER_EFFECT = jnp.asarray(C.TRAINER_EFFECT, jnp.int32)
BLAINE = jnp.asarray(C.BLAINE)
BROCK = jnp.asarray(C.BROCK)
SURGE = jnp.asarray(C.SURGE)
KOGA = jnp.asarray(C.KOGA)
GRASS, WATER, LIGHTNING, FIGHTING = (C.ENERGY_TYPES.index(t) for t in (
    "Grass", "Water", "Lightning", "Fighting"))  # a Pokémon's type and an Energy type alike
EXCLUSIVE = jnp.zeros(5, bool).at[jnp.asarray([C_ASLEEP, C_PARALYZED, C_CONFUSED])].set(True)


def select(c: Any, a: State, b: State) -> State:
    """``a`` where ``c`` else ``b``, field by field."""
    return jax.tree_util.tree_map(lambda x, y: jnp.where(c, x, y), a, b)


def i32(x: Any) -> jax.Array:
    return jnp.asarray(x, jnp.int32)


# ---------------------------------------------------------------- zones (card ids, then 0)
def zcount(row: jax.Array) -> jax.Array:
    return jnp.sum(row != 0).astype(jnp.int32)


def zpop(row: jax.Array, i: jax.Array | int) -> tuple[jax.Array, jax.Array]:
    """The card at ``i`` and the row without it (the rest shifts left)."""
    idx = jnp.arange(row.shape[0])
    shifted = jnp.concatenate([row[1:], jnp.zeros(1, row.dtype)])
    return row[i], jnp.where(idx >= i, shifted, row)


def zpush(row: jax.Array, card: jax.Array) -> jax.Array:
    n = zcount(row)
    return jnp.where(jnp.arange(row.shape[0]) == n, card.astype(row.dtype), row)


# ---------------------------------------------------------------- board helpers
def card_at(s: State, p: Any, slot: Any) -> jax.Array:
    """The card that counts at (p, slot): the top of its stack (0: empty)."""
    stack = s.stack[p, slot]
    n = jnp.sum(stack != 0)
    return i32(stack[jnp.maximum(n - 1, 0)])


def occupied(s: State, p: Any) -> jax.Array:
    return s.stack[p, :, 0] != 0


def clear_slot(s: State, p: Any, slot: Any) -> State:
    out = {}
    for k in BOARD:
        blank = jnp.full(FIELDS[k][0][2:], FIELDS[k][2], FIELDS[k][1])
        out[k] = getattr(s, k).at[p, slot].set(blank)
    return s.replace(**out)


def move_slot(s: State, p: Any, src: Any, dst: Any) -> State:
    """The Pokémon at ``src`` moves to ``dst`` (overwriting it); ``src`` is emptied."""
    out = {k: getattr(s, k).at[p, dst].set(getattr(s, k)[p, src]) for k in BOARD}
    return clear_slot(s.replace(**out), p, src)


def switch_active(s: State, p: Any, slot: Any) -> State:
    """The Active goes to Bench ``slot``, the Pokémon there becomes Active; the outgoing one
    loses its conditions and attack effects."""
    s = s.replace(conditions=s.conditions.at[p, 0].set(False),
                  effect_until=s.effect_until.at[p, 0].set(-1),
                  effect_amount=s.effect_amount.at[p, 0].set(0))
    out = {}
    for k in BOARD:
        x = getattr(s, k)
        a, b = x[p, 0], x[p, slot]
        out[k] = x.at[p, 0].set(b).at[p, slot].set(a)
    return s.replace(**out)


def put_in_play(s: State, p: Any, card: jax.Array, turn: Any) -> State:
    occ = occupied(s, p)
    bench_free = jnp.argmax(~occ[1:]) + 1
    slot = jnp.where(occ[0], bench_free, 0)
    s = clear_slot(s, p, slot)
    return s.replace(stack=s.stack.at[p, slot, 0].set(card.astype(jnp.int16)),
                     entered_turn=s.entered_turn.at[p, slot].set(turn),
                     evolved_turn=s.evolved_turn.at[p, slot].set(-1))  # in play: never evolved


# ---------------------------------------------------------------- the decision queue
def queue_push(s: State, kind: Any, player: Any, left: Any = -1, bench: Any = -1,
               energy: Any = -1, amount: Any = 0, options: Any = None) -> State:
    """Append a decision (reference ``ask`` appends); ``options``: bool[4], the slots it
    allows (reference ``data["options"]``), None: the decision's own (Benched slots, or the
    attached Energy types)."""
    n = jnp.sum(s.pending_kind >= 0)
    at = jnp.arange(MAX_PENDING) == n
    has = options is not None
    opts = jnp.zeros(SLOTS, bool) if options is None else options
    return s.replace(pending_kind=jnp.where(at, kind, s.pending_kind),
                     pending_player=jnp.where(at, player, s.pending_player),
                     pending_left=jnp.where(at, left, s.pending_left),
                     pending_bench=jnp.where(at, bench, s.pending_bench),
                     pending_energy=jnp.where(at, energy, s.pending_energy),
                     pending_amount=jnp.where(at, amount, s.pending_amount),
                     pending_options=jnp.where(at[:, None], opts[None, :], s.pending_options),
                     pending_has_options=jnp.where(at, has, s.pending_has_options))


def queue_pop(s: State) -> State:
    out = {}
    for k in PENDING:
        x = getattr(s, k)
        _, dtype, fill = FIELDS[k]
        tail = jnp.full((1, *x.shape[1:]), fill, dtype)
        out[k] = jnp.concatenate([x[1:], tail])
    return s.replace(**out)


def queue_clear(s: State) -> State:
    return s.replace(**{k: jnp.full(FIELDS[k][0], FIELDS[k][2], FIELDS[k][1])
                        for k in PENDING})


def has_pending(s: State) -> jax.Array:
    return s.pending_kind[0] >= 0


def to_act(s: State) -> jax.Array:
    """Whose decision the game waits for (-1 once it is over)."""
    who = jnp.where(has_pending(s), i32(s.pending_player[0]), i32(s.current))
    return jnp.where(s.stage == S_OVER, -1, who)


# ---------------------------------------------------------------- setup (3)
def deal_opening_hand(s: State, p: int) -> State:
    """``basic_first``: a random Basic (a pick over the deck's Basics in deck order), then the
    rest shuffled, then 4 more from the top."""
    deck = s.deck[p]
    is_b = IS_BASIC[i32(deck)] & (deck != 0)
    k, rng = R.randint(s.rng, jnp.sum(is_b))
    pos = jnp.argmax(jnp.cumsum(is_b) == k + 1)
    first, deck = zpop(deck, pos)
    deck, rng = R.shuffle(rng, deck, zcount(deck))
    hand = jnp.zeros(ZONE, jnp.int16).at[0].set(first).at[1:OPENING_HAND].set(
        deck[:OPENING_HAND - 1])
    deck = jnp.concatenate([deck[OPENING_HAND - 1:], jnp.zeros(OPENING_HAND - 1, jnp.int16)])
    return s.replace(deck=s.deck.at[p].set(deck), hand=s.hand.at[p].set(hand), rng=rng)


def new_game(s: State, params: Params) -> State:
    """From a state holding both decks (in order) and Energy types: both opening hands, the
    first-player coin (heads: player 0), then both setup decisions."""
    s = deal_opening_hand(s, 0)
    s = deal_opening_hand(s, 1)
    heads, rng = R.coin(s.rng)
    s = select(params.first_player_coin, s.replace(first=jnp.where(heads, 0, 1), rng=rng), s)
    s = s.replace(current=s.first, stage=S_SETUP)
    s = queue_push(s, D_SETUP, 0)
    return queue_push(s, D_SETUP, 1)


def roll_energy(s: State, p: Any) -> tuple[jax.Array, jax.Array]:
    types = s.energy_types[p]
    i, rng = R.randint(s.rng, jnp.sum(types >= 0))
    return types[i], rng


def finish_setup(s: State, params: Params) -> State:
    for p in (0, 1):
        e, rng = roll_energy(s, p)
        s = s.replace(energy_next=s.energy_next.at[p].set(e), rng=rng)
    return s.replace(stage=S_NEXT_TURN, current=1 - i32(s.first))  # `apply` advances


# ---------------------------------------------------------------- turns (4)
def draw(s: State, p: Any, params: Params) -> State:
    deck, hand = s.deck[p], s.hand[p]
    ok = (zcount(deck) > 0) & (zcount(hand) < params.hand_limit)
    card, rest = zpop(deck, 0)
    return select(ok, s.replace(deck=s.deck.at[p].set(rest),
                                hand=s.hand.at[p].set(zpush(hand, card))), s)


def start_turn(s: State, params: Params) -> State:
    turn = i32(s.turn) + 1
    p = 1 - i32(s.current)
    s = s.replace(turn=turn, current=p, revealed_hand=jnp.zeros_like(s.revealed_hand),
                  revealed_hand_shown=jnp.zeros_like(s.revealed_hand_shown),
                  revealed_top=jnp.zeros_like(s.revealed_top),
                  revealed_top_shown=jnp.zeros_like(s.revealed_top_shown))
    s = s.replace(**{k: getattr(s, k).at[p].set(False) for k in (
        "attached_energy", "played_supporter", "retreated", "giovanni", "blaine")},
        x_speed=s.x_speed.at[p].set(0))
    s = draw(s, p, params)
    e, rng = roll_energy(s, p)
    later = s.replace(energy_current=s.energy_current.at[p].set(s.energy_next[p]),
                      energy_next=s.energy_next.at[p].set(e), rng=rng)
    first = s.replace(energy_current=s.energy_current.at[p].set(-1))
    return select(turn == 1, first, later).replace(stage=S_MAIN)


def end_turn(s: State) -> State:
    return s.replace(energy_current=s.energy_current.at[s.current].set(-1), stage=S_CHECKUP)


def finish(s: State, winner: Any, reason: Any) -> State:
    return queue_clear(s.replace(winner=winner, end_reason=reason, stage=S_OVER))


def advance(s: State, params: Params) -> State:
    """Knock Outs, the Checkup and its Knock Outs, then the next turn (or the turn limit),
    until someone must decide. An attack ends the turn (stage checkup) and its Knock Outs come
    here first (after END there are none: the pass changes nothing); a promotion to decide
    leaves the stage at checkup, as the reference leaves it after an attack, and the Checkup
    follows once it is made. The Checkup's Knock Outs leave the stage at next_turn."""
    idle = (s.stage != S_OVER) & ~has_pending(s)
    knocked = process_knockouts(s, params)
    waits = (knocked.stage == S_OVER) | has_pending(knocked)
    checked = process_knockouts(checkup(knocked).replace(stage=S_NEXT_TURN), params)
    s = select(idle & (s.stage == S_CHECKUP), select(waits, knocked, checked), s)
    idle = (s.stage != S_OVER) & ~has_pending(s)
    limit = finish(s, DRAW, R_TURN_LIMIT)
    nxt = select(i32(s.turn) >= params.turn_limit, limit, start_turn(s, params))
    return select(idle & (s.stage == S_NEXT_TURN), nxt, s)


# ---------------------------------------------------------------- Checkup (9.1)
def checkup(s: State) -> State:
    """Both Active Pokémon, condition by condition (Poisoned, Burned, Asleep, Paralyzed);
    within one condition the current player's Active first. A coin is drawn only for a
    Pokémon that has the condition."""
    cur = i32(s.current)
    for cond in (C_POISONED, C_BURNED, C_ASLEEP, C_PARALYZED):
        for who in (cur, 1 - cur):
            has = (card_at(s, who, 0) != 0) & s.conditions[who, 0, cond]
            if cond == C_POISONED:
                after = s.replace(damage=s.damage.at[who, 0].add(10))
            elif cond == C_PARALYZED:  # removed after its owner's turn
                after = s.replace(conditions=s.conditions.at[who, 0, cond].set(
                    s.conditions[who, 0, cond] & (who != cur)))
            else:  # Burned: 20, then heads cures; Asleep: heads wakes
                hurt = s.damage.at[who, 0].add(20) if cond == C_BURNED else s.damage
                heads, rng = R.coin(s.rng)
                after = s.replace(damage=hurt, rng=rng, conditions=s.conditions.at[
                    who, 0, cond].set(~heads))
            s = select(has, after, s)
    return s


def add_condition(s: State, p: Any, cond: Any) -> State:
    """Asleep, Paralyzed and Confused replace each other; Poisoned and Burned stack."""
    row = s.conditions[p, 0]
    row = jnp.where(EXCLUSIVE[cond], row & ~EXCLUSIVE, row)
    return s.replace(conditions=s.conditions.at[p, 0].set(row.at[cond].set(True)))


# ---------------------------------------------------------------- Knock Outs (9.2)
def process_knockouts(s: State, params: Params) -> State:
    for owner in (0, 1):
        for slot in range(SLOTS):
            c = card_at(s, owner, slot)
            out = (c != 0) & (i32(s.damage[owner, slot]) >= HP[c])
            points = s.points.at[1 - owner].add(jnp.where(EX[c], 2, 1).astype(jnp.int8))
            discard = s.discard[owner]
            for j in range(3):
                x = s.stack[owner, slot, j]
                discard = jnp.where(x != 0, zpush(discard, x), discard)
            ko = clear_slot(s.replace(points=points, discard=s.discard.at[owner].set(discard)),
                            owner, slot)
            s = select(out, ko, s)
    s = check_game_over(s)
    later = s
    first, second = 1 - i32(s.current), i32(s.current)
    first, second = (jnp.where(params.promotion_current_first, second, first),
                     jnp.where(params.promotion_current_first, first, second))
    for who in (first, second):
        later = ask_promote(later, who)
    return select(s.stage == S_OVER, s, later)


def check_game_over(s: State) -> State:
    in_play = jnp.stack([jnp.any(occupied(s, 0)), jnp.any(occupied(s, 1))])
    by_points = s.points >= POINTS_TO_WIN
    wins = by_points | ~in_play[::-1]
    w = jnp.argmax(wins)
    one = finish(s, w, jnp.where(by_points[w], R_POINTS, R_NO_POKEMON))
    both = finish(s, DRAW, R_BOTH)
    return select(jnp.all(wins), both, select(jnp.any(wins), one, s))


def ask_promote(s: State, who: Any) -> State:
    occ = occupied(s, who)
    benched = jnp.sum(occ[1:])
    need = ~occ[0] & (benched > 0)
    only = jnp.argmax(occ[1:]) + 1
    auto = move_slot(s, who, only, 0)
    asked = queue_push(s, D_PROMOTE, who)
    return select(need & (benched == 1), auto, select(need, asked, s))


# ---------------------------------------------------------------- retreat (6)
def retreat_cost(s: State, p: Any) -> jax.Array:
    return jnp.maximum(0, RETREAT[card_at(s, p, 0)] - i32(s.x_speed[p]))


def resolve_retreat(s: State, p: Any, bench: Any, left: Any) -> State:
    """Discard ``left`` more Energy from the Active: at once while one type is left, then a
    ``retreat_energy`` decision for the player; with none left, the switch."""
    for _ in range(4):  # a retreat costs at most 4
        e = s.energy[p, 0]
        single = (jnp.sum(e > 0) == 1) & (left > 0)
        t = jnp.argmax(e > 0)
        s = select(single, s.replace(energy=s.energy.at[p, 0, t].add(-1)), s)
        left = jnp.where(single, left - 1, left)
    done = switch_active(s, p, bench)
    asked = queue_push(s, D_RETREAT_ENERGY, p, left=left, bench=bench)
    return select(left > 0, asked, done)


def retreat(s: State, bench: Any) -> State:
    p = i32(s.current)
    s = s.replace(retreated=s.retreated.at[p].set(True))
    cost = retreat_cost(s, p)
    total = jnp.sum(i32(s.energy[p, 0]))
    free = switch_active(s, p, bench)
    everything = switch_active(s.replace(energy=s.energy.at[p, 0].set(0)), p, bench)
    return select(cost == 0, free, select(total == cost, everything,
                                          resolve_retreat(s, p, bench, cost)))


# ---------------------------------------------------------------- attacks (7)
def cost_paid(energy: jax.Array, typed: jax.Array, colorless: jax.Array) -> jax.Array:
    energy = i32(energy)
    return jnp.all(energy >= typed) & (jnp.sum(energy - typed) >= colorless)


def use_attack(s: State, i: Any, params: Params) -> State:
    """7: Confusion's coin (tails: nothing, flag ``confusion_tails`` at its default); the
    damage templates' coins and counts; the damage to the opponent's Active
    (``damage_to_active``; none for a snipe); the effect template (``AFTER``, which may ask a
    decision: the attack stays open until it is answered); recoil. Knock Outs: in ``advance``."""
    p = i32(s.current)
    attacker = card_at(s, p, 0)
    s = end_turn(s)
    heads, rng = R.coin(s.rng)
    confused = s.conditions[p, 0, C_CONFUSED]
    s = s.replace(rng=jnp.where(confused, rng, s.rng))
    fails = confused & ~heads
    t = ATK_TEMPLATE[attacker, i]
    # the damage step's coins: n coins (multi-coin, all-heads), one coin, or until tails
    n = jnp.where((t == C.T_MULTI_COIN) | (t == C.T_ALL_HEADS_BONUS), ATK_COINS[attacker, i],
                  jnp.where((t == C.T_COIN_BONUS) | (t == C.T_COIN_BONUS_OR_RECOIL)
                            | (t == C.T_COIN_FAIL), 1, 0))
    h, rng_n = R.heads(s.rng, n, MAX_COINS)
    h_tails, rng_t = R.heads_until_tails(s.rng)
    until = t == C.T_FLIP_UNTIL_TAILS
    h = jnp.where(until, h_tails, h)
    s = s.replace(rng=jnp.where(fails, s.rng, jnp.where(until, rng_t, rng_n)))
    base = jnp.where(ATK_X[attacker, i], 0, ATK_DAMAGE[attacker, i])
    base = jnp.where((t == C.T_MULTI_COIN) | until, ATK_PER_HEADS[attacker, i] * h, base)
    bonus = ((t == C.T_COIN_BONUS) | (t == C.T_COIN_BONUS_OR_RECOIL)) & (h == 1)
    bonus = bonus | ((t == C.T_ALL_HEADS_BONUS) & (h == n))
    bonus = bonus | ((t == C.T_BONUS_IF) & bonus_holds(s, p, attacker, i))
    base = base + jnp.where(bonus, ATK_BONUS[attacker, i], 0)
    base = base + jnp.where(t == C.T_PER_COUNT, ATK_PER[attacker, i] * counted(s, p, attacker, i),
                            0)
    recoil = jnp.where((t == C.T_COIN_BONUS_OR_RECOIL) & (h == 0), ATK_AMOUNT[attacker, i], 0)
    recoil = recoil + jnp.where(t == C.T_RECOIL, ATK_AMOUNT[attacker, i], 0)
    nothing = fails | ((t == C.T_COIN_FAIL) & (h == 0))
    defender = card_at(s, 1 - p, 0)
    dealt = jnp.where((defender != 0) & (t != C.T_SNIPE),
                      damage_to_active(s, p, attacker, base), 0)
    hit = s.replace(damage=s.damage.at[1 - p, 0].add(dealt.astype(jnp.int16)))
    after = hit
    for k, effect in AFTER.items():
        after = select(t == k, effect(hit, p, attacker, i, dealt, params), after)
    after = after.replace(damage=after.damage.at[p, 0].add(recoil.astype(jnp.int16)),
                          attack_open=has_pending(after))
    return select(nothing, s, after)


def damage_to_active(s: State, p: Any, attacker: Any, base: Any) -> jax.Array:
    """7 steps 2-4 on the opponent's Active (reference ``damage_to_active``): Giovanni's +10
    and Blaine's +30 (Ninetales, Rapidash, Magmar) only on damage > 0; none through Dig's
    protection; +20 Weakness on damage > 0, then the T13 reductions (the attacker's "-20",
    the defender's "takes -20"; ``weakness_before_reduction`` at its default), floor 0."""
    o = 1 - p
    defender = card_at(s, o, 0)
    damage = base + jnp.where((base > 0) & s.giovanni[p], 10, 0)
    damage = damage + jnp.where((base > 0) & s.blaine[p] & BLAINE[attacker], 30, 0)
    reduction = effect_on(s, p, ATTACK_MINUS) + effect_on(s, o, TAKES_MINUS)
    weak = (WEAKNESS[defender] >= 0) & (WEAKNESS[defender] == TYPE[attacker])
    damage = damage + jnp.where(weak & (damage > 0), 20, 0)
    return jnp.where(protected(s, o), 0, jnp.maximum(0, damage - reduction))


def in_force(s: State, p: Any, effect: int) -> jax.Array:
    """A T13 effect on ``p``'s Active still in force this turn (reference ``effect_on``)."""
    return i32(s.effect_until[p, 0, effect]) >= i32(s.turn)


def effect_on(s: State, p: Any, effect: int) -> jax.Array:
    """The amount of a T13 effect on ``p``'s Active in force this turn, else 0."""
    return jnp.where(in_force(s, p, effect), i32(s.effect_amount[p, 0, effect]), 0)


def protected(s: State, p: Any) -> jax.Array:
    """Dig's "prevent all damage from and effects of attacks" on ``p``'s Active."""
    return (card_at(s, p, 0) != 0) & in_force(s, p, PREVENT_ALL)


def counted(s: State, p: Any, attacker: Any, i: Any) -> jax.Array:
    """T10's count (reference ``t_per_count``): the Energy on the opponent's Active, or the
    player's Benched Pokémon of the printed type and/or name."""
    tops = jnp.stack([card_at(s, p, t) for t in range(1, SLOTS)])
    kind, name = ATK_ENERGY[attacker, i], ATK_NAME[attacker, i]
    match = (tops != 0) & ((kind < 0) | (TYPE[tops] == kind)) & ((name == 0) | (tops == name))
    energy = jnp.sum(i32(s.energy[1 - p, 0]))
    return jnp.where(ATK_COUNT[attacker, i] == 0, energy, jnp.sum(match))


def bonus_holds(s: State, p: Any, attacker: Any, i: Any) -> jax.Array:
    """T11's condition (reference ``t_bonus_if``): extra Energy of a type beyond the cost
    (``extra_energy``), the attacker damaged, the defender damaged or Poisoned."""
    o = 1 - p
    e = i32(s.energy[p, 0])
    kind = jnp.clip(ATK_ENERGY[attacker, i], 0, len(C.ENERGY_TYPES) - 1)
    attached = e[kind]
    others = jnp.sum(e) - attached
    from_type = jnp.maximum(0, ATK_COLORLESS[attacker, i] - others)
    extra = jnp.maximum(0, attached - ATK_TYPED[attacker, i, kind] - from_type)
    defender = card_at(s, o, 0) != 0
    return jnp.stack([extra >= ATK_N[attacker, i], s.damage[p, 0] > 0,
                      defender & (s.damage[o, 0] > 0),
                      defender & s.conditions[o, 0, C_POISONED]])[
        jnp.clip(ATK_PREDICATE[attacker, i], 0, len(C.PREDICATES) - 1)]


# ---------------------------------------------------------------- attack effects (after damage)
def coin_first(s: State, attacker: Any, i: Any) -> tuple[State, jax.Array]:
    """A template with a coin (``ATK_COIN``): the coin is drawn, the effect goes on on heads."""
    heads, rng = R.coin(s.rng)
    has = ATK_COIN[attacker, i]
    return s.replace(rng=jnp.where(has, rng, s.rng)), ~has | heads


def a_status(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    o = 1 - p
    ok = (card_at(s, o, 0) != 0) & ~protected(s, o)
    return select(ok, add_condition(s, o, jnp.clip(ATK_CONDITION[attacker, i], 0, 4)), s)


def a_coin_status(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    heads, rng = R.coin(s.rng)
    s = s.replace(rng=rng)
    return select(heads, a_status(s, p, attacker, i, dealt, params), s)


def a_heal_self(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    return heal(s, p, 0, ATK_AMOUNT[attacker, i])


def a_discard_energy(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    e = i32(s.energy[p, 0])
    k = ATK_DISCARD_COUNT[attacker, i]
    kind = jnp.clip(ATK_DISCARD_TYPE[attacker, i], 0, 7)
    less = jnp.where(k == C.DISCARD_ALL, jnp.zeros_like(e),
                     e.at[kind].set(jnp.maximum(0, e[kind] - k)))
    return s.replace(energy=s.energy.at[p, 0].set(less.astype(s.energy.dtype)))


def a_bench_damage(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    """Each of the opponent's Benched Pokémon, the printed amount (no Weakness, no bonuses)."""
    o = 1 - p
    hurt = jnp.where(occupied(s, o)[1:], ATK_AMOUNT[attacker, i], 0)
    return s.replace(damage=s.damage.at[o, 1:].add(hurt.astype(jnp.int16)))


def a_discard_opponent_energy(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    """The coin first where printed; then a random Energy unit of the defender (a pick over
    the units in Energy-type order), unless there is none or it is protected."""
    o = 1 - p
    s, go = coin_first(s, attacker, i)
    e = i32(s.energy[o, 0])
    total = jnp.sum(e)
    k, rng = R.randint(s.rng, total)
    kind = jnp.argmax(jnp.cumsum(e) > k)
    ok = go & (card_at(s, o, 0) != 0) & (total > 0) & ~protected(s, o)
    less = s.replace(energy=s.energy.at[o, 0, kind].add(-1), rng=rng)
    return select(ok, less, s)


def a_draw(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    for j in range(MAX_DRAW):
        s = select(j < ATK_N[attacker, i], draw(s, p, params), s)
    return s


def a_reveal_hand(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    return effect_hand_scope(s, p, 0, params)


def a_snipe(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    """T12: the attacker chooses one of the opponent's Pokémon (the Bench only, if printed)."""
    occ = occupied(s, 1 - p)
    options = occ & ~(ATK_BENCH_ONLY[attacker, i] & (jnp.arange(SLOTS) == 0))
    amount = ATK_AMOUNT[attacker, i]
    return ask(s, D_ATTACK_TARGET, p, options,
               lambda x, slot: snipe_hit(x, p, slot, amount), amount=amount)


def snipe_hit(s: State, p: Any, slot: Any, amount: Any) -> State:
    """On the Active the whole pipeline (``damage_to_active``); on the Bench the amount."""
    hit = jnp.where(slot == 0, damage_to_active(s, p, card_at(s, p, 0), amount), amount)
    return s.replace(damage=s.damage.at[1 - p, slot].add(hit.astype(jnp.int16)))


def a_defending_effect(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    """T13 on the opponent's Active until the end of the opponent's next turn."""
    o = 1 - p
    s, go = coin_first(s, attacker, i)
    ok = go & (card_at(s, o, 0) != 0) & ~protected(s, o)
    return select(ok, set_effect(s, o, attacker, i), s)


def a_self_effect(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    """T13 on the attacker until the end of the opponent's next turn."""
    s, go = coin_first(s, attacker, i)
    return select(go, set_effect(s, p, attacker, i), s)


def set_effect(s: State, p: Any, attacker: Any, i: Any) -> State:
    e = jnp.clip(ATK_EFFECT[attacker, i], 0, len(C.ATTACK_EFFECTS) - 1)
    until = (i32(s.turn) + 1).astype(s.effect_until.dtype)
    return s.replace(effect_until=s.effect_until.at[p, 0, e].set(until),
                     effect_amount=s.effect_amount.at[p, 0, e].set(
                         ATK_AMOUNT[attacker, i].astype(s.effect_amount.dtype)))


def a_zone_attach(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    """T14: Energy from the Energy Zone (not the turn's): the printed count, else one per heads
    of the printed coins; to the attacker, or one at a time to a chosen Benched Pokémon of the
    printed type."""
    fixed = ATK_N[attacker, i]
    h, rng = R.heads(s.rng, jnp.where(fixed > 0, 0, ATK_COINS[attacker, i]), MAX_COINS)
    s = s.replace(rng=rng)
    count = jnp.where(fixed > 0, fixed, h)
    kind = jnp.clip(ATK_ENERGY[attacker, i], 0, len(C.ENERGY_TYPES) - 1)
    to_self = add_energy(s, p, 0, kind, count)
    tops = jnp.stack([card_at(s, p, t) for t in range(SLOTS)])
    options = (tops != 0) & (TYPE[tops] == ATK_TARGET_TYPE[attacker, i]) & (
        jnp.arange(SLOTS) > 0)
    to_bench = ask(s, D_ZONE_ATTACH, p, options,
                   lambda x, slot: add_energy(x, p, slot, kind, count), left=count, energy=kind)
    return select(ATK_TARGET_TYPE[attacker, i] < 0, to_self, select(count > 0, to_bench, s))


def a_search_hand(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    """T16: a random Pokémon of the type from the deck to the hand (a pick over the matching
    cards in deck order; none: no draw; ``hand_limit_applies_to_search`` at its default)."""
    deck = i32(s.deck[p])
    match = (deck != 0) & IS_POKEMON[deck] & (TYPE[deck] == ATK_ENERGY[attacker, i])
    return pick_to_hand(s, p, match)


def a_search_bench(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    """T16: a random card of the name from the deck onto the Bench, if there is room."""
    deck = i32(s.deck[p])
    room = jnp.any(~occupied(s, p)[1:])
    match = (deck != 0) & (deck == ATK_NAME[attacker, i]) & room
    return pick_from_deck(s, p, match, lambda x, card: put_in_play(x, p, card, x.turn))


def pick_from_deck(s: State, p: Any, match: jax.Array, then: Any) -> State:
    """A uniform pick over the deck's ``match`` cards in deck order, taken out of the deck and
    given to ``then``; with none, nothing is drawn."""
    n = jnp.sum(match)
    k, rng = R.randint(s.rng, n)
    card, rest = zpop(s.deck[p], jnp.argmax(jnp.cumsum(match) == k + 1))
    found = then(s.replace(deck=s.deck.at[p].set(rest), rng=rng), card)
    return select(n > 0, found, s)


def pick_to_hand(s: State, p: Any, match: jax.Array) -> State:
    """``pick_from_deck`` into the hand."""
    return pick_from_deck(s, p, match, lambda x, card: x.replace(
        hand=x.hand.at[p].set(zpush(x.hand[p], card))))


def a_switch_opponent(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    """T17: the opponent's Active to the Bench; the opponent chooses the new Active."""
    o = 1 - p
    return select(protected(s, o), s, ask_new_active(s, o))


def a_switch_self(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    return ask_new_active(s, p)


def a_block_supporters(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    until = (i32(s.turn) + 1).astype(s.supporters_blocked_until.dtype)
    return s.replace(supporters_blocked_until=s.supporters_blocked_until.at[1 - p].set(until))


def a_discard_opponent_hand(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    """The coin first where printed; then a random card of the opponent's hand (a pick over
    its order) to its discard pile."""
    o = 1 - p
    s, go = coin_first(s, attacker, i)
    n = zcount(s.hand[o])
    k, rng = R.randint(s.rng, n)
    card, rest = zpop(s.hand[o], k)
    out = s.replace(hand=s.hand.at[o].set(rest), discard=s.discard.at[o].set(
        zpush(s.discard[o], card)), rng=rng)
    return select(go & (n > 0), out, s)


def a_heal_dealt(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    return heal(s, p, 0, dealt)


def a_own_bench_damage(s: State, p: Any, attacker: Any, i: Any, dealt: Any,
        params: Params) -> State:
    """The attacker chooses one of its own Benched Pokémon (no Weakness)."""
    options = occupied(s, p) & (jnp.arange(SLOTS) > 0)
    amount = ATK_AMOUNT[attacker, i]
    return ask(s, D_OWN_BENCH_DAMAGE, p, options, lambda x, slot: x.replace(
        damage=x.damage.at[p, slot].add(amount.astype(jnp.int16))), amount=amount)


AFTER = {  # reference ``AFTER_TEMPLATES`` (recoil is added by ``use_attack``)
    C.T_STATUS: a_status, C.T_COIN_STATUS: a_coin_status, C.T_HEAL_SELF: a_heal_self,
    C.T_DISCARD_ENERGY: a_discard_energy, C.T_BENCH_DAMAGE: a_bench_damage,
    C.T_DISCARD_OPPONENT_ENERGY: a_discard_opponent_energy, C.T_DRAW: a_draw,
    C.T_REVEAL_HAND: a_reveal_hand, C.T_SNIPE: a_snipe,
    C.T_DEFENDING_EFFECT: a_defending_effect, C.T_SELF_EFFECT: a_self_effect,
    C.T_ZONE_ATTACH: a_zone_attach, C.T_SEARCH_HAND: a_search_hand,
    C.T_SEARCH_BENCH: a_search_bench, C.T_SWITCH_OPPONENT: a_switch_opponent,
    C.T_SWITCH_SELF: a_switch_self, C.T_BLOCK_SUPPORTERS: a_block_supporters,
    C.T_DISCARD_OPPONENT_HAND: a_discard_opponent_hand, C.T_HEAL_DEALT: a_heal_dealt,
    C.T_OWN_BENCH_DAMAGE: a_own_bench_damage,
}


def ask(s: State, kind: int, player: Any, options: jax.Array, resolve: Any, left: Any = -1,
        energy: Any = -1, amount: Any = 0) -> State:
    """Reference ``ask``: a decision with one legal answer is taken at once
    (``resolve(state, slot)``), one with none is dropped, else it is queued."""
    n = jnp.sum(options)
    only = jnp.argmax(options)
    queued = queue_push(s, kind, player, left=left, energy=energy, amount=amount,
                        options=options)
    return select(n == 1, resolve(s, only), select(n > 1, queued, s))


def ask_new_active(s: State, p: Any) -> State:
    """A ``new_active`` decision for ``p`` (reference ``ask``, the Benched slots)."""
    occ = occupied(s, p)
    benched = jnp.sum(occ[1:])
    only = jnp.argmax(occ[1:]) + 1
    return select(benched == 1, switch_active(s, p, only), select(
        benched > 1, queue_push(s, D_NEW_ACTIVE, p), s))


# ---------------------------------------------------------------- legality
def legal_mask(s: State) -> jax.Array:
    """bool[106]: what the player to act may do (all False once the game is over)."""
    p = jnp.clip(to_act(s), 0, 1)
    d = i32(s.pending_kind[0])
    hand = s.hand[p]
    n_hand = zcount(hand)
    occ = occupied(s, p)
    bench_room = jnp.any(~occ[1:])
    hand_cards = i32(hand)
    h_ok = jnp.arange(A.MAX_HAND) < n_hand
    basic_in_hand = h_ok & (IS_BASIC[hand_cards] | IS_FOSSIL[hand_cards])
    mask = jnp.zeros(A.N_ACTIONS, bool)
    # setup: Basics (target 0) while there is room, END once there is an Active
    setup = mask.at[A.END].set(occ[0])
    play_t0 = jnp.zeros((A.MAX_HAND, SLOTS), bool).at[:, 0].set(
        h_ok & IS_BASIC[hand_cards] & (~occ[0] | bench_room))
    setup = setup.at[A.PLAY:A.CHOOSE].set(play_t0.ravel())
    # decisions: promote/new_active -> a Benched slot; retreat_energy -> an attached type
    choose = jnp.zeros(A.N_ACTIONS, bool).at[A.CHOOSE + 1:A.CHOOSE + SLOTS].set(occ[1:])
    options = jnp.where(s.pending_has_options[0], s.pending_options[0], False)
    choose = jnp.where(s.pending_has_options[0],
                       jnp.zeros(A.N_ACTIONS, bool).at[A.CHOOSE:A.ENERGY].set(options), choose)
    energy = jnp.zeros(A.N_ACTIONS, bool).at[A.ENERGY:].set(s.energy[p, 0] > 0)
    decision = jnp.where(d == D_RETREAT_ENERGY, energy, choose)
    # main phase
    active = card_at(s, p, 0)
    cond = s.conditions[p, 0]
    blocked = cond[2] | cond[3]  # asleep, paralyzed
    turn = i32(s.turn)
    no_attack = i32(s.effect_until[p, 0, 0]) >= turn
    no_retreat = i32(s.effect_until[p, 0, 1]) >= turn
    main = jnp.zeros(A.N_ACTIONS, bool).at[A.END].set(True)
    for i in range(2):
        ok = (active != 0) & (i < N_ATK[active]) & ~blocked & ~no_attack & cost_paid(
            s.energy[p, 0], ATK_TYPED[active, i], ATK_COLORLESS[active, i])
        main = main.at[A.ATTACK + i].set(ok)
    can_retreat = (~s.retreated[p] & (active != 0) & ~IS_FOSSIL[active] & ~blocked & ~no_retreat
                   & (jnp.sum(i32(s.energy[p, 0])) >= retreat_cost(s, p)))
    main = main.at[A.RETREAT:A.ATTACH].set(can_retreat & occ[1:])
    main = main.at[A.ATTACH:A.DISCARD].set((s.energy_current[p] >= 0) & occ)
    tops = jnp.stack([card_at(s, p, t) for t in range(SLOTS)])
    main = main.at[A.DISCARD:A.PLAY].set(IS_FOSSIL[tops] & occ & (jnp.sum(occ) > 1))
    play = jnp.zeros((A.MAX_HAND, SLOTS), bool).at[:, 0].set(basic_in_hand & bench_room)
    play = play | evolve_mask(s, p, hand_cards, h_ok) | trainer_mask(s, p, hand_cards, h_ok)
    main = main.at[A.PLAY:A.CHOOSE].set(play.ravel())
    out = jnp.where(has_pending(s), jnp.where(d == D_SETUP, setup, decision), main)
    return out & (s.stage != S_OVER)


def evolve_mask(s: State, p: jax.Array, hand_cards: jax.Array, h_ok: jax.Array) -> jax.Array:
    """bool[hand, slot]: 5, the evolution card at h onto slot t: the target is the card it
    evolves from, one stage lower; not on the player's first turn (turns 1 and 2); not on a
    Pokémon that entered play or evolved this turn."""
    turn = i32(s.turn)
    tops = jnp.stack([card_at(s, p, t) for t in range(SLOTS)])
    fresh = (i32(s.entered_turn[p]) == turn) | (i32(s.evolved_turn[p]) == turn)
    target_ok = (tops != 0) & ~fresh & (turn > 2)
    evo = h_ok & IS_POKEMON[hand_cards] & (STAGE[hand_cards] > 0)
    match = (EVOLVES_FROM[hand_cards][:, None] == tops[None, :]) & (
        STAGE[tops][None, :] == STAGE[hand_cards][:, None] - 1)
    return evo[:, None] & match & target_ok[None, :]


def trainer_mask(s: State, p: jax.Array, hand_cards: jax.Array, h_ok: jax.Array) -> jax.Array:
    """bool[hand, slot]: 8, the Trainer at h played with target t (0 for one that takes
    none): a Supporter once per turn, not on turn 1, not while blocked; each card's own check
    (reference ``TRAINER_CHECKS``), "would do nothing" included (``allow_no_effect_plays``
    at its default, False)."""
    turn = i32(s.turn)
    o = 1 - p
    supporter_ok = (~s.played_supporter[p] & (turn != 1)
                    & (i32(s.supporters_blocked_until[p]) < turn))
    playable = h_ok & IS_TRAINER[hand_cards] & (~IS_SUPPORTER[hand_cards] | supporter_ok)
    tops = jnp.stack([card_at(s, p, t) for t in range(SLOTS)])
    occ = tops != 0
    damaged = occ & (s.damage[p] > 0)
    kind = TYPE[tops]
    t0 = jnp.arange(SLOTS) == 0
    opp_bench = jnp.any(occupied(s, o)[1:])
    bench_lightning = jnp.any(occupied(s, p)[1:] & (s.energy[p, 1:, LIGHTNING] > 0))
    own_deck = zcount(s.deck[p]) > 0
    opp_hand = zcount(s.hand[o]) > 0
    opp_cards = opp_hand | (zcount(s.deck[o]) > 0)
    by_effect = jnp.stack([  # [effect, slot], in ``C.EFFECTS`` order
        jnp.zeros(SLOTS, bool),
        damaged,  # potion
        damaged & (kind == GRASS),  # erika
        occ & (kind == WATER),  # misty
        occ & BROCK[tops],  # brock
        t0 & opp_bench,  # sabrina
        t0 & SURGE[tops] & bench_lightning,  # lt_surge
        t0, t0, t0,  # giovanni, blaine, x_speed: always
        t0 & opp_hand,  # hand_scope
        t0 & own_deck, t0 & own_deck, t0 & own_deck,  # pokedex, professors_research, poke_ball
        t0 & opp_cards,  # red_card
        t0 & KOGA[tops],  # koga: the Active Muk or Weezing
    ])
    return playable[:, None] & by_effect[jnp.clip(TRAINER_EFFECT[hand_cards], 0,
                                                  len(C.EFFECTS) - 1)]


# ---------------------------------------------------------------- Trainers (8), one per effect
def heal(s: State, p: Any, t: Any, amount: Any) -> State:
    healed = jnp.maximum(0, i32(s.damage[p, t]) - amount)
    return s.replace(damage=s.damage.at[p, t].set(healed.astype(s.damage.dtype)))


def add_energy(s: State, p: Any, t: Any, kind: Any, n: Any) -> State:
    more = i32(s.energy[p, t, kind]) + n
    return s.replace(energy=s.energy.at[p, t, kind].set(more.astype(s.energy.dtype)))


def effect_potion(s: State, p: Any, t: Any, params: Params) -> State:
    return heal(s, p, t, 20)


def effect_erika(s: State, p: Any, t: Any, params: Params) -> State:
    return heal(s, p, t, 50)


def effect_misty(s: State, p: Any, t: Any, params: Params) -> State:
    """Coins until tails; each heads a Water Energy on the target (not the turn's Energy)."""
    h, rng = R.heads_until_tails(s.rng)
    return add_energy(s.replace(rng=rng), p, t, WATER, h)


def effect_brock(s: State, p: Any, t: Any, params: Params) -> State:
    return add_energy(s, p, t, FIGHTING, 1)


def effect_sabrina(s: State, p: Any, t: Any, params: Params) -> State:
    """The opponent switches its Active with a Benched Pokémon it chooses (one Benched: at
    once, as the reference's ``ask``)."""
    return ask_new_active(s, 1 - p)


def effect_lt_surge(s: State, p: Any, t: Any, params: Params) -> State:
    """All Lightning Energy of the Bench to the Active."""
    bench = i32(s.energy[p, 1:, LIGHTNING])
    s = add_energy(s, p, 0, LIGHTNING, jnp.sum(bench))
    return s.replace(energy=s.energy.at[p, 1:, LIGHTNING].set(0))


def effect_giovanni(s: State, p: Any, t: Any, params: Params) -> State:
    return s.replace(giovanni=s.giovanni.at[p].set(True))


def effect_blaine(s: State, p: Any, t: Any, params: Params) -> State:
    return s.replace(blaine=s.blaine.at[p].set(True))


def effect_x_speed(s: State, p: Any, t: Any, params: Params) -> State:
    return s.replace(x_speed=s.x_speed.at[p].add(jnp.int8(1)))


def effect_hand_scope(s: State, p: Any, t: Any, params: Params) -> State:
    return s.replace(revealed_hand=s.revealed_hand.at[p].set(s.hand[1 - p]),
                     revealed_hand_shown=s.revealed_hand_shown.at[p].set(True))


def effect_pokedex(s: State, p: Any, t: Any, params: Params) -> State:
    return s.replace(revealed_top=s.revealed_top.at[p].set(s.deck[p, :3]),
                     revealed_top_shown=s.revealed_top_shown.at[p].set(True))


def effect_professors_research(s: State, p: Any, t: Any, params: Params) -> State:
    return draw(draw(s, p, params), p, params)


def effect_poke_ball(s: State, p: Any, t: Any, params: Params) -> State:
    """A random Basic of the deck (a pick over the deck's Basics in deck order) to the hand;
    with none, nothing is drawn."""
    deck = s.deck[p]
    return pick_to_hand(s, p, IS_BASIC[i32(deck)] & (deck != 0))


def effect_red_card(s: State, p: Any, t: Any, params: Params) -> State:
    """The opponent's hand goes under its deck, the deck is shuffled, it draws 3."""
    o = 1 - p
    deck, hand = s.deck[o], s.hand[o]
    n_deck = zcount(deck)
    idx = jnp.arange(ZONE)
    both = jnp.where(idx < n_deck, deck, hand[jnp.clip(idx - n_deck, 0, ZONE - 1)])
    both, rng = R.shuffle(s.rng, both, zcount(both))
    s = s.replace(deck=s.deck.at[o].set(both), hand=s.hand.at[o].set(jnp.zeros_like(hand)),
                  rng=rng)
    for _ in range(3):
        s = draw(s, o, params)
    return s


def effect_koga(s: State, p: Any, t: Any, params: Params) -> State:
    """The Active Muk or Weezing returns to the hand with its evolution cards (bottom first);
    its Energy leaves play; then the game's end (no Pokémon in play), else a promotion."""
    hand = s.hand[p]
    for j in range(3):
        x = s.stack[p, 0, j]
        hand = jnp.where(x != 0, zpush(hand, x), hand)
    s = check_game_over(clear_slot(s.replace(hand=s.hand.at[p].set(hand)), p, 0))
    return select(s.stage == S_OVER, s, ask_promote(s, p))


EFFECTS: tuple[Any, ...] = (  # annotated after the loop (mypy: the None is never called)
    None, effect_potion, effect_erika, effect_misty, effect_brock, effect_sabrina,
    effect_lt_surge, effect_giovanni, effect_blaine, effect_x_speed, effect_hand_scope,
    effect_pokedex, effect_professors_research, effect_poke_ball, effect_red_card, effect_koga)
assert len(EFFECTS) == len(C.EFFECTS)


def play_trainer(s: State, p: jax.Array, card: jax.Array, t: jax.Array, params: Params
                 ) -> State:
    """The card (already out of the hand): a Supporter marks the turn's one; its effect;
    then the card to the discard pile."""
    e = TRAINER_EFFECT[i32(card)]
    s = s.replace(played_supporter=s.played_supporter.at[p].set(
        s.played_supporter[p] | IS_SUPPORTER[i32(card)]))
    out = s
    for k in range(1, len(EFFECTS)):
        out = select(e == k, EFFECTS[k](s, p, t, params), out)
    return out.replace(discard=out.discard.at[p].set(zpush(out.discard[p], card)))


def evolve(s: State, p: jax.Array, card: jax.Array, t: jax.Array) -> State:
    """The card goes on top of slot ``t``; damage and Energy stay; Special Conditions and
    attack effects go; ``evolved_turn`` is this turn."""
    height = jnp.sum(s.stack[p, t] != 0)
    return s.replace(stack=s.stack.at[p, t, height].set(card.astype(jnp.int16)),
                     conditions=s.conditions.at[p, t].set(False),
                     effect_until=s.effect_until.at[p, t].set(-1),
                     effect_amount=s.effect_amount.at[p, t].set(0),
                     evolved_turn=s.evolved_turn.at[p, t].set(s.turn))


def discard_fossil(s: State, p: Any, slot: Any) -> State:
    """8: the fossil to the discard pile, no points; an Active fossil's spot is filled by a
    promotion."""
    discard = zpush(s.discard[p], s.stack[p, slot, 0])
    s = clear_slot(s.replace(discard=s.discard.at[p].set(discard)), p, slot)
    return select(slot == 0, ask_promote(s, p), s)


# ---------------------------------------------------------------- applying an action
def apply_decision(s: State, kind: jax.Array, x: jax.Array, params: Params) -> State:
    d = i32(s.pending_kind[0])
    p = i32(s.pending_player[0])
    # setup: PLAY puts a Basic in play (the decision stays first); END finishes it
    card, rest = zpop(s.hand[p], x)
    placed = put_in_play(s.replace(hand=s.hand.at[p].set(rest)), p, card, 0)
    ended = queue_pop(s)
    ended = select(jnp.any(ended.pending_kind == D_SETUP), ended, finish_setup(ended, params))
    setup = select(kind == A.K_PLAY, placed, ended)
    # promote / retreat_energy
    popped = queue_pop(s)
    promoted = move_slot(popped, p, x, 0)
    spent = popped.replace(energy=popped.energy.at[p, 0, x].add(-1))
    retreated = resolve_retreat(spent, p, i32(s.pending_bench[0]), i32(s.pending_left[0]) - 1)
    switched = switch_active(popped, p, x)  # new_active (Sabrina): the Active to the Bench
    amount = i32(s.pending_amount[0])
    sniped = snipe_hit(popped, p, x, amount)
    hurt = popped.replace(damage=popped.damage.at[p, x].add(amount.astype(jnp.int16)))
    left, kind = i32(s.pending_left[0]), jnp.clip(i32(s.pending_energy[0]), 0, 7)
    attached = add_energy(popped, p, x, kind, 1)
    attached = select(left > 1, queue_push(attached, D_ZONE_ATTACH, p, left=left - 1,
                                           energy=kind, options=s.pending_options[0]), attached)
    other = promoted
    for k, out in ((D_RETREAT_ENERGY, retreated), (D_NEW_ACTIVE, switched),
                   (D_ATTACK_TARGET, sniped), (D_OWN_BENCH_DAMAGE, hurt),
                   (D_ZONE_ATTACH, attached)):
        other = select(d == k, out, other)
    # an attack whose choices are all made is over (reference ``finish_attack``)
    other = other.replace(attack_open=other.attack_open & has_pending(other))
    return select(d == D_SETUP, setup, other)


def apply_main(s: State, kind: jax.Array, x: jax.Array, y: jax.Array, params: Params
               ) -> State:
    p = i32(s.current)
    ended = end_turn(s)
    attacked = use_attack(s, jnp.clip(x, 0, 1), params)
    retreated = retreat(s, jnp.clip(x, 1, 3))
    e = jnp.clip(i32(s.energy_current[p]), 0, 7)
    attached = s.replace(energy=s.energy.at[p, jnp.clip(x, 0, 3), e].add(1),
                         energy_current=s.energy_current.at[p].set(-1),
                         attached_energy=s.attached_energy.at[p].set(True))
    card, rest = zpop(s.hand[p], jnp.clip(x, 0, A.MAX_HAND - 1))
    without = s.replace(hand=s.hand.at[p].set(rest))
    y = jnp.clip(y, 0, SLOTS - 1)
    played = select(IS_BASIC[i32(card)] | IS_FOSSIL[i32(card)],
                    put_in_play(without, p, card, s.turn),
                    select(IS_TRAINER[i32(card)], play_trainer(without, p, card, y, params),
                           evolve(without, p, card, y)))
    discarded = discard_fossil(s, p, jnp.clip(x, 0, SLOTS - 1))
    branches = [ended, attacked, retreated, attached, discarded, played, s, s]
    out = branches[0]
    for k in range(1, len(branches)):
        out = select(kind == k, branches[k], out)
    return out


def apply(s: State, action: jax.Array, params: Params) -> tuple[State, jax.Array]:
    """(the state after ``action`` of whoever must act, whether it was legal); an illegal
    action leaves the state as it was."""
    a = jnp.clip(i32(action), 0, A.N_ACTIONS - 1)
    legal = legal_mask(s)[a] & (i32(action) == a)
    kind, x, y = A.decode(a)
    x = jnp.clip(x, 0, A.MAX_HAND - 1)
    decided = apply_decision(s, kind, x, params)
    played = apply_main(s, kind, x, y, params)
    nxt = advance(select(has_pending(s), decided, played), params)
    return select(legal, nxt, s), legal
