"""Pong's translation mutants that are equivalent to it, with the reason (``envport mutate``).

Keyed by (file, original source line, mutation); applied only to mutants that survive every
layer in every declared mode, so a stale entry can never hide a detectable bug. Kinds: "proof"
holds for every input; "reachable" holds on every state the game can reach from a reset, on the
verifier's perturbations and for every valid param set, but not on arbitrary injected values.

Entries that held only for the discrete game at the default constants (the FMA guard's swapped
arguments, integer-speed boundary swaps, a serve speed of exactly 1) were removed when the
constants became data and every mode became verified: such mutants are judged, not excused.
"""

from __future__ import annotations


def known_equivalent() -> dict[tuple[str, str, str], tuple[str, str]]:
    return {
        ("jax_env.py", "return jnp.where(product != product, F32(0), product)", "0 -> 1"): (
            "proof", "Pong's `rounded` replaces a NaN product by 0 (a guard against fused "
                     "multiply-adds); its products are finite params times finite values, so "
                     "the replacement value is never used"),
        ("jax_env.py", "out = (out << bits) ^ ((nxt >> 16) % jnp.uint32(1 << bits))",
         "^ -> |"): (
            "proof", "in rand_r, `out << bits` has its low `bits` bits zero and the other "
                     "operand is below 2**bits: the operands share no set bit, so xor and or "
                     "are equal"),
        ("jax_env.py", "n_bx = jnp.where(hit_r, jnp.clip(n_bx, F32(0), width - bw), n_bx)",
         "0 -> 1"): ("reachable", (
            "the lower clip bound of the ball's x at a right-paddle hit: hit_r implies "
            "n_bx + ball_width > width, i.e. n_bx > width - ball_width, which is at least 1 in "
            "the default game (468) and in every param set the verifier draws, so a lower "
            "bound of 0 or 1 never binds; a game narrower than its ball plus 1 would tell them "
            "apart")),
        **{("jax_env.py", "played = PongState(pyl, pyr, bx, by, vx, vy, score_l, score_r, "
                          "state.tick + 1, state.rng)", f"PongState.{side} keeps state.{side}"): (
            "proof", f"`played` is the next state only when no point is scored (`stopped` is "
                     f"false), and then {side} equals state.{side}; after a point the served "
                     "state's scores are used. Keeping the old value changes nothing")
           for side in ("score_l", "score_r")},
    }
