"""pokemon-gen1: Gen 1 singles random battles in JAX, verified against Pokemon Showdown 0.11.11.

The reference side (the pinned Showdown under Node: ``reference.py``, ``reference/worker.js``;
the tables generated from it, ``data/`` and ``tables.py``; Showdown's PRNG in JAX, ``prng.py``),
the fixed-size battle state (``state.py``), the bridge from Showdown's state (``bridge.py``), the
Gen 1 mechanics (``mechanics.py``) with their L1 component checks (``components.py``), the turn
loop (``engine.py``, supported moves in ``moves.py``) with L3 lockstep battles (``lockstep.py``),
battle creation from two teams and an LCG seed (``create.py``, teams sampled in JAX from a
committed pool of Showdown's own ``Teams.generate`` teams), and the environment around it
(``env.py``: two players' joint action ``int32[2]``, per-player observations ``float32[2, D]``
with the opponent as revealed, legal masks in ``info["action_mask"]``, player 1's reward; the
Showdown reference adapter and the bridge; ``spec_support.py``) and the benchmark (``bench.py``).

Only the moves of ``moves.SUPPORTED_MOVES`` are played: the team pool and the reference's resets
keep the teams whose moves are all supported (README.md, "Environment").
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from envport.core.registry import Benchmark, EnvSpec, Training, Verification, lazy
from envport.envs.pokemon_gen1 import training as _training

_make = lazy("envport.envs.pokemon_gen1.env:PokemonGen1")
_make_reference = lazy("envport.envs.pokemon_gen1.env:ShowdownReference")
_make_bridge = lazy("envport.envs.pokemon_gen1.env:PokemonBridge")

# components.CHECKS (tests/envs/pokemon_gen1/test_pokemon_env.py checks this list against it),
# named here so that listing environments imports neither JAX nor Node.
MECHANICS_CHECKS = ("stats", "boosts", "types", "crit", "damage", "accuracy", "move_hit",
                    "worked_examples", "move_effects", "prng")


def _mechanics_check(name: str) -> None:
    from envport.envs.pokemon_gen1.components import component_checks

    component_checks()[name]()


def _creation_check() -> None:
    from envport.envs.pokemon_gen1.create import check_creation

    check_creation(40, 0)


COMPONENTS: dict[str, Callable[[], None]] = {
    **{name: functools.partial(_mechanics_check, name) for name in MECHANICS_CHECKS},
    "create": _creation_check}

SPEC = EnvSpec(
    name="pokemon-gen1",
    summary="Gen 1 singles random battles (two players, joint action), Showdown's rules and LCG",
    reference="pokemon-showdown 0.11.11 under Node (gen1randombattle; in-process worker)",
    make=_make,
    make_reference=_make_reference,
    make_bridge=_make_bridge,
    verification=Verification(
        tolerance_note=("exact: every leaf of the battle state (with the leaves Showdown's "
                        "state does not hold at rest), the 4 LCG words, seen Pokemon, both legal "
                        "masks, observations and rewards bit-identical"),
        scripted_policy=lazy("envport.envs.pokemon_gen1.env:scripted_policy"),
        legal_action=lazy("envport.envs.pokemon_gen1.env:legal_action"),
        state_bins=lazy("envport.envs.pokemon_gen1.env:state_bins"),
        perturb=lazy("envport.envs.pokemon_gen1.spec_support:perturb"),
        max_rollout_steps=3000,
        sample_reference_events=lazy("envport.envs.pokemon_gen1.distribution:reference_events"),
        sample_translation_events=lazy(
            "envport.envs.pokemon_gen1.distribution:translation_events"),
        components=COMPONENTS,
        rollout_distribution=lazy("envport.verify.rollout_distribution_games:pokemon_settings"),
        equivalent_mutants=lazy("envport.envs.pokemon_gen1.mutants:known_equivalent"),
    ),
    benchmark=Benchmark(
        reference_throughput=lazy("envport.envs.pokemon_gen1.bench:reference_throughput"),
        batch_sizes=(1, 16, 256, 1024, 4096)),
    # PPO as player 0 against a fixed opponent (envport.pettingzoo.VsOpponent, built by
    # envport.train.backends.translation from the ``opponent`` option; --opponent overrides).
    # The reference backend: Showdown battles over Node workers, the opponent on the host.
    # L4 (envport transfer): a battle's return is +1 / -1 (0 for the Endless Battle Clause's
    # tie); a policy is scored by its win rate, with the paper's margin in it
    training=Training(ppo=_training.PPO, env_kwargs=_training.ENV_KWARGS, metric="win_rate",
                      margin=0.02,
                      margin_note="0.02 in win rate against the opponent, the paper's margin",
                      make_vector_reference=lazy(
                          "envport.envs.pokemon_gen1.vector_reference:make"),
                      # the JAX engine with the reference batch's draws: evaluations of a
                      # policy on both backends play the same battles
                      make_matched_translation=lazy(
                          "envport.envs.pokemon_gen1.vector_engine:make")),
    status="verified (supported moves only)",
)
