"""CartPole's translation mutants that are equivalent to it, with the reason (``envport mutate``).

Keyed by (file, original source line, mutation); applied only to mutants that survive every
layer in every declared mode, so a stale entry can never hide a detectable bug. Kinds: "proof"
holds for every input; "reachable" holds on every state the game can reach from a reset and on
the verifier's perturbations, but not on arbitrary injected states.
"""

from __future__ import annotations

_CLAMPED = ("4 -> 5", "x = jax.random.uniform(key, (4,), self.dtype, -0.05, 0.05)")


def known_equivalent() -> dict[tuple[str, str, str], tuple[str, str]]:
    return {
        ("jax_env.py", _CLAMPED[1], _CLAMPED[0]): ("proof", (
            "reset draws five uniforms and uses the first four. JAX's threefry generator "
            "(partitionable, the default) makes element i of a draw from counter i, so the "
            "first four of five values are exactly the four values of the original: the reset "
            "states are identical for every key (only the compiled program differs)")),
        **{("jax_env.py",
            "state = CartPoleState(x[0], x[1], x[2], x[3], jnp.zeros((), jnp.int32))",
            f"arguments {i} and {i + 1} swapped"): ("proof", (
                "swaps two of the four i.i.d. U(-0.05, 0.05) draws that make CartPole's reset "
                "state: the components are exchangeable, so the distribution of reset states "
                "is unchanged (reset is specified in distribution only; L3 starts from the "
                "reference's state)")) for i in (1, 2, 3)},
    }


def param_mutants() -> dict[str, dict[str, float]]:
    """Subtle physics mutants for the rollout-distribution layer: ``CartPole(**params)`` with
    one constant off by 1-2% (params are data, so the mutant is a param change of the
    translation). L2 and L3 are run on each too (``python -m envport.verify.horizon_study
    mutants cartpole``); the README gives which layer kills which."""
    return {
        "masspole +2%": {"masspole": 0.102},
        "masspole -2%": {"masspole": 0.098},
        "masscart +2%": {"masscart": 1.02},
        "length +2%": {"length": 0.51},
        "force_mag +1%": {"force_mag": 10.1},
    }
