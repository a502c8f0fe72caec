"""The Gen 1 engine's mutants that are equivalent to it, with the reason (``envport mutate
pokemon-gen1``; the README's "Mutation" has the runs that found them).

Keyed by (file, original source line, mutation), plus the column (or ``EVERY_SITE``) where the
line has several sites of that mutation (``envport mutate`` refuses a key that would cover
sites its reason was not written for); applied only to mutants that survive every layer, so an
entry never overrides a kill. Kinds: "proof" holds for every input; "reachable" holds on every
state a battle can reach and on the verifier's injected states (Showdown's exports and L2's
perturbations, which keep every standing Pokemon at 1 HP or more), not on arbitrary arrays.
"""

from __future__ import annotations

from typing import Any

# move_hit's write-back of the stored accuracy, for each of the two volatiles that keep one
_STORED_NOT_0 = (
    "move_hit writes the attacker's {0} accuracy back ({1}) where mechanics.accuracy's "
    "`stored` is > 0 instead of >= 0; `stored` is never 0: it is "
    "jnp.where(always | (override < 0), -1, a) with a = jnp.clip(..., 1, 255) at that point "
    "(the +1 of self-targeting moves comes after and goes only into the numerator), so it is "
    "-1 or 1..255 for every input (test_pokemon_mutants checks every move, stage pair and "
    "override). The two conditions differ nowhere, so every output is the original's")


# move_hit's recoil line, which has two equivalent mutants
_RECOIL_LINE = ("engine.py", "ctx, _ = damage(ctx, recoils, a, jnp.maximum(dealt * recoil[0] // "
                "jnp.maximum(recoil[1], 1), 1),")


def known_equivalent() -> dict[tuple[Any, ...], tuple[str, str]]:
    return {
        ("engine.py", 'hit_pt = number & partial & (_i(mon(ctx, "hp", d)) > 0)', "> -> >="): (
            "reachable", "the mutant also traps a target the trapping move's hit left at 0 HP "
            "(its partiallytrapped bit, trapped_move, trapped_maybe_locked, trapped_duration: "
            "all fields of that side's active). A target at 0 HP is one this hit knocked out "
            "(injected states hold standing Pokemon at 1 HP or more, and a fainted active is "
            "never a move's target). Nothing reads those fields before the action ends: the "
            "lock's own trap in move_hit requires the target's HP > 0, trap_after_move acts "
            "only on a target with HP > 0, the statuses, Mirror Move and Metronome read "
            "neither, and no further call follows a damaging move in run_move's loop. The "
            "action ends in after_action -> faint_messages, which for that target (slot set, "
            "not yet fainted, HP <= 0) runs rest_active -> _zero_active and sets every field "
            "of its active to rest, the mutant's writes included; no PRNG draw depends on "
            "them. The step's state and tape are the original's"),
        ("engine.py", 'go = en & has_vol(ctx, t, "rage") & (_i(aget(ctx, "boosts", t)[0]) < 6)',
         "6 -> 7"): (
            "proof", "the mutant lets Rage's boost run at +6 Attack too, where mechanics.boost_by "
            "skips it (delta > 0 at stage >= 6: the stage, the modified stat and the result are "
            "returned unchanged, BOOST_FALSE) and boost writes those same values back; "
            "rage_boost ignores the success flag and draws nothing. Below +6 both run it, above "
            "(no state holds one) boost_by skips it again. So every output is the original's, "
            "for every input"),
        ("mechanics.py", "d = jnp.clip(d // 50, 0, 997) + 2", "// -> /"): (
            "proof", "get_damage's base damage as a float32 x = n + f (n = d // 50 clipped to "
            "0..997, plus 2; 0 <= f <= 0.98) instead of n: its next readers are STAB's "
            "x + x // 2 and apply_type_effectiveness, which first truncates to int32 "
            "(_i). x + floor(x / 2) = n + n // 2 + f for either parity of n, and the "
            "truncation of n + f (or of n + n // 2 + f) is n (n + n // 2). float32 keeps f "
            "away from 1: below the clip (d < 49,900) the quotient is under 998 and its "
            "rounding error under 1e-4; above it both are 997 (a negative or overflowed d "
            "clips to 0 in both). Nothing else reads x"),
        ("mechanics.py", "jnp.where(counter_ok, 2 * _i(x.last_damage), 0)),", "0 -> 1"): (
            "proof", "get_damage's Counter case gives 1 instead of 0 as its value where Counter "
            "fails (~counter_ok), where its kind is KIND_FALSE: the value is read only by "
            "`damage = jnp.where(early, value, d)`, and the Damage it returns holds "
            "`jnp.where(kind == KIND_NUMBER, damage, 0)`, 0 for that kind either way; where "
            "Counter works, or another case fires, the line's 0 is not selected"),
        ("engine.py", "ctx = aset(ctx, leaf, s, 0, en)", "0 -> 1"): (
            "proof", "drop_vol leaves the counters of a volatile it removes (partiallytrapped, "
            "partialtrappinglock, fakepartiallytrapped, flinch) at 1 instead of 0, always "
            "together with clearing its bit (the same en): only counters of an absent volatile "
            "change. No reader sees them: the engine reads each of them under its bit "
            "(get_damage's lock_damage, trap_after_move's lock_duration/lock_total behind "
            "has_vol, legal_mask's lock and maybeLocked, residual's durations), and every path "
            "that sets a bit writes all of that volatile's counters under a condition the bit's "
            "own implies (move_hit's trap and lock, trap_after_move's restart and "
            "fakepartiallytrapped, flinch's duration); bridge.comparable, export and the "
            "observations read them only under the bit. So every step's draws, choices, "
            "observations and Showdown view are the original's. The raw fields are not battle "
            "state while the bit is clear: Showdown deletes the effect state, and the engine "
            "itself leaves lockedmove's, twoturnmove's and Bide's counters as they were when "
            "those go. test_pokemon_trapping's junk-counter battles check the claim"),
        ("engine.py", "amount = jnp.maximum(dealt * drain[0] // jnp.maximum(drain[1], 1), 1)",
         "// -> /"): (
            "proof", "move_hit's drain amount as the float32 max(x / 2, 1) instead of the int32 "
            "max(x // 2, 1), x = dealt * drain[0]: it is read only where `drains` holds, i.e. "
            "for a drain move (T.MOVE_DRAIN: Absorb, Mega Drain, Leech Life and Dream Eater, "
            "all 1/2), by bset's astype and heal's _i, which both truncate toward zero. There x "
            "is the hit's HP damage or getDamage's uncapped damage, whose formula clips the "
            "base at 997 before STAB and type effectiveness (at most 5,992, for any input), so "
            "float32 holds x and x / 2 exactly; for x >= 2 the truncation of x / 2 is x // 2, "
            "and for x <= 1 (negatives included) both maxima give 1. So last_damage and the "
            "healed HP are the original's, and nothing else reads the amount"),
        ("engine.py", 'more = number & (hits >= k) & (_i(mon(ctx, "hp", d)) > 0)', "> -> >="): (
            "proof", "move_hit's hits 2..5 also run on a target at exactly 0 HP (one an earlier "
            "hit knocked out): damage() does nothing there (its own `hp > 0` gate: no HP, no "
            "lastDamage, 0 dealt), so only `done` differs (the last hit instead of the one that "
            "knocked it out). Its readers: the Rage boosts (`done - 1` for a target not "
            "standing), each applied by rage_boost -> boost(), which is gated by the target's "
            "HP > 0, still 0 (nothing heals it in between): no stage, stat or draw changes; "
            "and the secondary's `done == hits & standing`, false for a target at 0 HP either "
            "way. Above 0 HP the two conditions agree, below 0 both are false. So every "
            "output is the original's, for every input"),
        ("engine.py", 'ctx = set_vol(ctx, t, _V["partiallytrapped"], True, new)',
         "arguments 2 and 3 swapped"): (
            "proof", "trap_after_move's set_vol(ctx, 4, t, ...) indexes side 4: its scatter is "
            "dropped, so where `new` holds the foe is not trapped afresh, and where it does not "
            "(en false) nothing is written either way. `new` never holds: it needs the lock "
            "held, the target (the foe; the trapping moves are not self-targeted) standing and "
            "without partiallytrapped. A lock held at BeforeMove survives before_move only where "
            "the foe holds partiallytrapped (the engine's reading of Showdown's "
            "effectState.locked: endTurn's clean-up drops a lock whose foe is not trapped, so a "
            "lock without it means the foe switched); a lock begun in this move's move_hit "
            "(`traps`, the foe standing) gives the foe partiallytrapped in the same lines. "
            "Between there and trap_after_move nothing clears a standing foe's partiallytrapped "
            "(only end_turn's clean-up, residual's durations and rest_active at a faint or "
            "switch do; Haze, paralysis and confusion clear other bits). So the step's state, "
            "draws and tape are the original's for every input. A state with a lock and a foe "
            "without partiallytrapped (tried as a move_effects setup in session 44) is one "
            "Showdown's endTurn never leaves; there the engine ends the lock at BeforeMove and "
            "Showdown, holding effectState.locked, does not"),
        ("engine.py", 'jnp.maximum(_i(ctx["st"]["side"]["pokemon_left"][s]) - 1, 0), f)',
         "arguments 1 and 2 swapped"): (
            "proof", "jnp.maximum(0, n - 1) and jnp.maximum(n - 1, 0) are the same int32 for "
            "every n (maximum is commutative, and the Python 0 is weakly typed, so the result "
            "keeps n's dtype in either order)"),
        ("engine.py", "ctx, _ = damage(ctx, made & (maxhp_t > 3), t, maxhp_t // 4, False)",
         "> -> >="): (
            "proof", "move_hit's Substitute also calls damage() where the user's max HP is "
            "exactly 3 (int32: the two conditions differ nowhere else). There the amount is "
            "maxhp_t // 4 = 0, which damage() keeps at 0 (it clamps to 1 only a nonzero "
            "amount): it writes the HP back unchanged (hp - 0), sets no lastDamage "
            "(sets_last_damage is False) and draws nothing, and its returned HP is discarded. "
            "So every output is the original's, for every input"),
        ("engine.py", "self_t = jnp.asarray(T.MOVE_TARGET_SELF)[move] & (move < T.N_MOVES)  "
         "# not 'cannotmove'", "< -> <="): (
            "proof", "use_move's self_t also lets through move == T.N_MOVES (int32: the two "
            "conditions differ nowhere else), the row of the pseudo-move 'recharge'. Its "
            "MOVE_TARGET_SELF is False (tables._col fills the column with False and only real "
            "moves' rows and 'nomove' (Fissure's 'normal') are set; "
            "test_pokemon_mutants checks the row), so self_t is False at that move in both. "
            "So every output is the original's, for every input"),
        ("engine.py", 't_has_pp = (mon(ctx, "moves", t) > 0) & (t_pp > 0)', "> -> >=", 12): (
            "reachable", "move_hit's t_has_pp (Disable's failure test and its sample among the "
            "slots with PP) with `moves >= 0` also counts an empty slot that holds PP; no "
            "state has one. Showdown "
            "has no empty slots: the bridge writes 0 PP into the padding, base slots too, and "
            "perturb writes PP only into slots holding a move. In the engine, create's empty "
            "slots get MOVE_PP[0] = 0; Transform writes 0 where the foe has no move; Mimic "
            "writes a move id, not PP; rest_active and _keep_base copy between a slot and its "
            "base slot; base_pp's other writes (deduct_pp's sync of a Mimic slot, a called "
            "two-turn move's refund below ppUps.length) are on slots holding a move. That "
            "leaves deduct_pp (-1 and +1) at last_selected_slot: the slot chosen this turn, "
            "a lock's slot (chosen after any Transform, since a locked user cannot transform) "
            "or switch-in's 0, all holding a move, except where a Transform into fewer moves "
            "emptied it and the Pokemon acts without choosing: a frozen or sleeping "
            "Pokemon's 'fight' (a partially trapped one's is cannotmove, aborted before PP). "
            "There Showdown's Gen 1 side.commitChoices throws ('moveSlot is null'), so no "
            "battle goes on from that state (test_pokemon_mutants checks the throw). A scratch "
            "run of 1,342 engine battles of pool teams found no empty slot with PP"),
        ("engine.py", 'ctx = aset(ctx, "locked_accuracy", a, acc.stored, go & has_lock & '
         "(acc.stored >= 0))", ">= -> >"): (
            "proof", _STORED_NOT_0.format("lockedmove", "locked_accuracy")),
        ("engine.py", 'ctx = aset(ctx, "rage_accuracy", a, acc.stored, go & has_rage & '
         "(acc.stored >= 0))", ">= -> >"): (
            "proof", _STORED_NOT_0.format("rage", "rage_accuracy")),
        (*_RECOIL_LINE, "1 -> 2", 89): (
            "proof", "move_hit's recoil divisor floored at 2 instead of 1: "
            "jnp.maximum(recoil[1], 2) for jnp.maximum(recoil[1], 1), `recoil` the row "
            "T.MOVE_RECOIL[move]. The two differ only where recoil[1] is 0 or 1. At 0, "
            "`recoils` is False (it requires recoil[1] > 0), and damage() with en False writes "
            "nothing (its bset and mset are predicated on en) and draws nothing, and its "
            "returned HP is discarded. No row has recoil[1] == 1: the recoil moves' fractions "
            "are 1/4, 25/100, 1/4 and Struggle's 1/2 (test_pokemon_mutants checks every row; "
            "an id outside the table still reads one of its rows). So every output is the "
            "original's, for every input"),
        (*_RECOIL_LINE, "// -> /"): (
            "proof", "move_hit's recoil amount as float32 a / b instead of a // b (a = dealt * "
            "recoil[0], b = max(recoil[1], 1)); jnp.maximum(q, 1) keeps it float and damage() "
            "truncates it to int32 (_i), which for a >= 0 is the floor. So the two differ only "
            "where float32 rounds a / b up to the next integer. `dealt` is 0 .. 32,767: an "
            "int16 HP taken (damage() clamps to the target's HP), or through a Substitute the "
            "uncapped getDamage of a recoil move (its formula is clipped at 997 + 2 before STAB "
            "and the two type factors: at most 5,994; a trapping lock's stored damage is an "
            "int16). recoil is a row of T.MOVE_RECOIL: 0 where `recoils` is False (damage() "
            "then writes nothing and its returned HP is discarded), else 1/4, 25/100 or 1/2. "
            "test_pokemon_mutants compares both expressions for every dealt in 0 .. 32,767 and "
            "every row: equal. So every output is the original's, for every input"),
        ("engine.py", 'back = (en & (slot(ctx, foe) >= 0) & (_i(mon(ctx, "hp", foe)) > 0)',
         "> -> >="): (
            "reachable", "run_switch's Gen 1 Metronome-lock rule (mods/gen4/scripts.ts "
            "runSwitch, over pokemon.foes(), which side.allies leaves without a foe at 0 HP) "
            "also takes a foe's active at exactly 0 HP; `back` needs it to hold "
            "partialtrappinglock as well, and no state at a switch has both. An active reaches "
            "0 HP only through damage() inside an action or residual, and after_action -> "
            "faint_messages faints it before the next action (residual's faints likewise): "
            "rest_active -> _zero_active clears every volatile. A switch is either a turn's "
            "action, and switches run before every move (Gen 1 has no move that switches), so "
            "its foe is an active that stood at the move request or the other side's new one, "
            "or a replacement after the faints, where a foe at 0 HP is a fainted one, volatiles "
            "clear; create's run_switch at the battle's start has no lock. Injected states are "
            "Showdown's exports (a faint clears the volatiles there too) written over by the "
            "verifier (L2's perturbations, move_effects' setups), which keeps every standing "
            "Pokemon at 1 HP or more and adds partialtrappinglock only to a standing user. So "
            "`back`, and with it the step, is the original's on every reachable state"),
        ("engine.py", "wants = jnp.where(status_move, h & (_i(jnp.asarray(MV.MOVE_BOOSTS)[move]) "
         "!= 0).any(),", "!= -> =="): (
            "proof", "move_hit's status-move boost runs where the move's MOVE_BOOSTS row has a "
            "zero instead of a non-zero entry. No row is non-zero in all 7 stats "
            "(test_pokemon_mutants checks the table), so for a move that boosts anything both "
            "conditions hold. For a move that boosts nothing the mutant calls boost() with "
            "`deltas` all 0 (Mist only zeroes more), so `order` is -1 in both places "
            "(`deltas[order] != 0` fails): boost() writes nothing and returns success False, "
            "which is what the original's unrun boost gives to reapply_penalty (`wants & "
            "boosted`) and to boost_ok below. A non-status move takes the other branch in "
            "both. So every output is the original's, for every input"),
        ("mechanics.py", "a = jnp.where(override >= 0, override, a)", "0 -> 1"): (
            "reachable", "accuracy takes the override where it is >= 1 instead of >= 0; they "
            "differ only at an override of 0, which no reachable state passes. The engine's one "
            "call (move_hit) passes the attacker's rage_accuracy where it holds rage, else its "
            "locked_accuracy where it holds lockedmove, else 80 for 'nomove' or -1. The engine "
            "writes those two fields only with 255 as the volatile begins (Showdown's onStart "
            "of lockedmove and rage: accuracy 255) and with accuracy's `stored` where it is >= "
            "0, which is then 1..255 (test_pokemon_mutants checks stored over every move, stage "
            "pair and override); Showdown writes them only so (onStart, and tryMoveHit's "
            "clampIntRange(accuracy, 1, 255)), so injected states carry 1..255 too, and no "
            "perturbation (spec_support.PERTURBATIONS) writes either field"),
        ("prng.py", "return mul_full(a, b)[0]", "arguments 1 and 2 swapped"): (
            "proof", "mul_hi(a, b) as mul_full(b, a): mul_full's expression is symmetric in its "
            "two arguments (both go through the same _u32 and 16-bit split; swapping them "
            "exchanges p01 and p10, which enter mid and hi only as the sums "
            "(p01 & M) + (p10 & M) and (p01 >> 16) + (p10 >> 16), and p00, p11 are unchanged), "
            "so the same uint32 arrays come out for every input, broadcasting included"),
    }
