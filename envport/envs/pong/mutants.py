"""Pong's translation mutants that are equivalent to it, with the reason (``envport mutate``).

Keyed by (file, original source line, mutation); applied only to mutants that survive every
layer in every declared mode, so a stale entry can never hide a detectable bug. Kinds: "proof"
holds for every input; "reachable" holds on every state the game can reach from a reset and on
the verifier's perturbations, but not on arbitrary injected states.
"""

from __future__ import annotations


def known_equivalent() -> dict[tuple[str, str, str], tuple[str, str]]:
    return {
        ("jax_env.py", "return jnp.where(product != product, F32(0), product)",
         "arguments 1 and 2 swapped"): ("proof", (
            "`rounded` keeps XLA from fusing a multiply-add (a select between the multiply and "
            "the add); the mutant's condition is the constant 0, the select folds away and XLA may "
            "fuse. In the discrete game the product is 3 times a direction in {-1, 0, 1}, exact, "
            "so the fused and the separate multiply-add round identically")),
        ("jax_env.py", "return jnp.where(product != product, F32(0), product)", "0 -> 1"): (
            "proof", "Pong's `rounded` replaces a NaN product by 0 (a guard against fused "
                     "multiply-adds); the product is a speed increment times a direction in "
                     "[-1, 1], always finite, so the replacement value is never used"),
        ("jax_env.py", "out = (out << bits) ^ ((nxt >> 16) % jnp.uint32(1 << bits))", "^ -> |"): (
            "proof", "in rand_r, `out << bits` has its low `bits` bits zero and the other operand "
                     "is below 2**bits: the operands share no set bit, so xor and or are equal"),
        ("jax_env.py", "ball_vy=(r % 2 - 1).astype(jnp.float32) * F32(p.ball_initial_speed_y),",
         "* -> /"): ("proof", (
            "the serve speed is 1.0 in the default params, and x * 1.0 and x / 1.0 are both "
            "exactly x in IEEE arithmetic (NaN and infinities included)")),
        ("jax_env.py", "n_bx = jnp.where(hit_r, jnp.clip(n_bx, F32(0), F32(p.width) - bw), n_bx)",
         "0 -> 1"): ("proof", (
            "the lower clip bound of the ball's x at a right-paddle hit: hit_r implies "
            "n_bx + ball_width > width, i.e. n_bx > 468, so a lower bound of 0 or 1 never binds")),
        **{("jax_env.py", "played = PongState(pyl, pyr, bx, by, vx, vy, score_l, score_r, "
                          "state.tick + 1, state.rng)", f"PongState.{side} keeps state.{side}"): (
            "proof", f"`played` is the next state only when no point is scored (`stopped` is "
                     f"false), and then {side} equals state.{side}; after a point the served "
                     "state's scores are used. Keeping the old value changes nothing")
           for side in ("score_l", "score_r")},
        ("jax_env.py", "left = n_bx < 0", "< -> <="): ("reachable", (
            "the ball's x is 100 + 10k moving right from a serve and 468 - 10k moving left (a "
            "right-paddle hit clips it to 468, and only such a hit sends it left), so it is "
            "never exactly 0; the verifier's perturbations draw x from a continuous range. An "
            "injected state with x = 10 moving left would tell them apart")),
        **{("jax_env.py", "bounced = jnp.where(jnp.abs(bounced) <= F32(0.01),", d): ("reachable", (
            "the bounced vertical speed is an integer in every reachable state (serves give -1 "
            "or 0, paddle hits add -3/0/+3, walls flip the sign, the clip is at +-13; the "
            "perturbations draw integers too), so |v| <= 0.01, |v| < 0.01 and |v| <= 0.011 all "
            "mean v == 0"))
           for d in ("<= -> <", "0.01 -> 0.011000000000000001")},
    }
