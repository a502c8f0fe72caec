"""tcg-pocket: Pokémon TCG Pocket battles (Genetic Apex, A1), from the rules specification
(``shared/specs/tcg-pocket.md``) to a readable Python reference engine (``reference.py``) and a
JAX engine produced through ``envport translate`` (``jax_engine/``).

``SPEC`` compares the JAX engine with the reference dealing the ``full`` pool: every card the
reference plays (every Pokémon without an Ability, with all 29 attack templates; the fossils;
every Item and Supporter). Abilities (13 Pokémon) and three attacks are not played by either
engine: a deck holding one is rejected by ``deck.validate_deck`` (the README lists them).
``spec_support.py`` holds the verifier's legal and scripted actions, the random events and the
benchmark's hooks.
"""

from __future__ import annotations

from typing import Any

from envport.core.registry import Benchmark, EnvSpec, Tolerance, Training, Verification, lazy
from envport.envs.tcg_pocket import training as _training
from envport.envs.tcg_pocket.cards import SUPPORTED_TEMPLATES, TRAINER_EFFECTS

_SUPPORT = "envport.envs.tcg_pocket.spec_support"
# One L1 check per attack template and per Trainer effect the reference plays (all are in the
# ``full`` pool), the fossils' three (``components.FOSSIL_CHECKS``)
_CHECKS = ("mask:legal", "reset:deal", "reset:decks",
           *(f"template:{t}" for t in sorted(SUPPORTED_TEMPLATES)),
           "checkup:poisoned", "checkup:burned", "checkup:asleep", "checkup:paralyzed",
           "checkup:confused", "end:both_win",
           *(f"trainer:{e}" for e in sorted(TRAINER_EFFECTS - {"fossil"})),
           "fossil:play", "fossil:evolve", "fossil:discard")


def _components() -> dict[str, Any]:
    """L1's checks per attack template and per Special Condition (``components.py``), named
    here so that listing environments imports no engine; each imports its check when run."""

    def check(name: str) -> Any:
        def run() -> None:
            from envport.envs.tcg_pocket.components import components

            components()[name]()
        return run

    return {name: check(name) for name in _CHECKS}


SPEC = EnvSpec(
    name="tcg-pocket",
    summary=("Pokémon TCG Pocket (A1), the JAX engine of the 'full' pool: every Pokémon "
             "without an Ability (all 29 attack templates), fossils, all 15 Trainers"),
    reference=("envport's Python rules engine of shared/specs/tcg-pocket.md "
               "(envport.envs.tcg_pocket.reference, pool='full')"),
    # The loop's engine, its resets dealing the reference's decks of spec_support.POOL
    # (dealt.py).
    make=lazy("envport.envs.tcg_pocket.dealt:DealtTcgPocket"),
    make_reference=lazy(f"{_SUPPORT}:make_reference"),
    make_bridge=lazy("envport.envs.tcg_pocket.jax_engine.bridge:TcgPocketBridge"),
    status="verified (every card but the 13 Abilities and 3 attacks neither engine plays)",
    verification=Verification(
        tolerance=Tolerance(),
        tolerance_note=("exact: integer game state, and the state carries the reference's "
                        "counter-based generator, so every draw is reproduced bit for bit"),
        scripted_policy=lazy(f"{_SUPPORT}:scripted_policy"),
        random_action=lazy(f"{_SUPPORT}:random_action"),
        legal_action=lazy(f"{_SUPPORT}:legal_action"),
        scripted_action=lazy(f"{_SUPPORT}:scripted_action"),
        state_bins=lazy(f"{_SUPPORT}:state_bins"),
        perturb=lazy(f"{_SUPPORT}:perturb"),
        # A game ends by the turn limit at the latest; 200 games here (random legal and
        # heuristic players) took 62 actions on average and 89 at most.
        max_rollout_steps=1000,
        sample_reference_events=lazy(f"{_SUPPORT}:reference_events"),
        sample_translation_events=lazy(f"{_SUPPORT}:translation_events"),
        rollout_distribution=lazy("envport.verify.rollout_distribution_games:tcg_settings"),
        components=_components(),
        equivalent_mutants=lazy("envport.envs.tcg_pocket.mutants:known_equivalent"),
    ),
    benchmark=Benchmark(
        reference_throughput=lazy(f"{_SUPPORT}:reference_throughput"),
        batch_sizes=(1, 64, 1024, 4096),
    ),
    # PPO as player 0 against a fixed opponent (envport.pettingzoo.TurnVsOpponent, built by
    # envport.train.backends.translation from the ``opponent`` option; --opponent overrides);
    # the reference backend: the rules engine's games, the opponent on the host. L4: a game's
    # return is +1 / -1 (0 for the turn limit's draw); a policy is scored by its win rate, with
    # the margin in it
    training=Training(ppo=_training.PPO, env_kwargs=_training.ENV_KWARGS, metric="win_rate",
                      margin=0.05,
                      margin_note="0.05 in win rate against the opponent, the paper's margin",
                      make_vector_reference=lazy(
                          "envport.envs.tcg_pocket.vector_reference:make")),
)
