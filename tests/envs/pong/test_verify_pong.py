"""The verifier on Pong: the translation is exact, and hand-made mutants of it are caught."""

import inspect
import itertools
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from envport.envs.pong import MODES, jax_env, sample_params
from envport.verify import verify

SOURCE = Path(inspect.getfile(jax_env)).read_text()


def mutant(find: str, replace: str, **options: Any) -> jax_env.Pong:
    """The translation with one edit; state/param classes stay shared with the bridge."""
    assert SOURCE.count(find) == 1, f"mutation site {find!r} must occur exactly once"
    module = types.ModuleType("pong_mutant")
    sys.modules[module.__name__] = module  # dataclasses resolve annotations through it
    exec(compile(SOURCE.replace(find, replace), "pong_mutant.py", "exec"), module.__dict__)
    for shared in ("PongState", "PongDraws", "PongParams"):
        setattr(module, shared, getattr(jax_env, shared))
    return module.Pong(**options)


def test_every_layer_passes_exactly():
    report = verify("pong", episodes=4, states=200, examples=6, samples=1000)
    assert report.passed, report.to_prompt()
    assert report.layers["rollout"].counts["steps"] > 4 * 1000  # whole episodes, not prefixes


@pytest.mark.parametrize("options", [m for m in MODES if m], ids=str)
def test_every_declared_mode_is_exact(options):
    report = verify("pong", ("interaction", "rollout"), episodes=2, states=200, options=options)
    assert report.passed, report.to_prompt()
    assert report.layers["rollout"].counts["steps"] > 200


def other_modes() -> list[dict[str, Any]]:
    """The rest of frameskip {1, 4, 8} x discrete/continuous x both rule books."""
    default = {"frameskip": 1, "continuous": False, "rules": "61f27b3"}
    out = []
    for f, c, r in itertools.product((1, 4, 8), (False, True), ("61f27b3", "8e3e754")):
        mode = {"frameskip": f, "continuous": c, "rules": r}
        if {k: v for k, v in mode.items() if v != default[k]} not in MODES:
            out.append(mode)
    return out


@pytest.mark.parametrize("options", other_modes(), ids=str)
def test_the_other_mode_combinations_are_exact_one_step_at_a_time(options):
    report = verify("pong", ("interaction",), states=150, options=options)
    assert report.passed, report.to_prompt()


@pytest.mark.parametrize("seed", [1, 2])
def test_non_default_constants_are_exact(seed):
    """A variant with random constants (``-o width=...``): both sides built with them."""
    options = sample_params(np.random.default_rng(seed))
    if seed == 2:
        options = {**options, "rules": "8e3e754", "frameskip": 4, "continuous": True}
    report = verify("pong", ("interaction", "rollout", "distribution"), episodes=2, states=200,
                    samples=300, options=options)
    assert report.passed, report.to_prompt()


def test_state_is_at_most_64_bytes_per_environment():
    import jax

    state, _ = jax_env.Pong().reset(jax.random.key(0))
    assert sum(x.nbytes for x in jax.tree_util.tree_leaves(state)) <= 64


ODD = sample_params(np.random.default_rng(7))

# name -> (find, replace, the mode it is verified in); None: the translation with speed 9.
MUTANTS: dict[str, tuple[str, str, dict[str, Any]] | None] = {
    "paddle speed 8 -> 9 (constant)": None,
    "hit reward 0.1 -> 0.2 (constant)": ("F32(0.1), reward", "F32(0.2), reward", {}),
    "left edge < -> > (comparison)": ("left = n_bx < 0", "left = n_bx > 0", {}),
    "wall bounce < -> <= (comparison)": ("(n_by < 0) |", "(n_by <= 0) |", {}),
    "tick not advanced (dropped update)": ("state.tick + 1", "state.tick", {}),
    "serve vy +1/0 instead of 0/-1 (constant)": ("(r % 2 - 1)", "(r % 2)", {}),
    "paddle clip uses max for both ends (swapped)": ("n_pyr = jnp.clip(n_pyr, lo, hi)",
                                                     "n_pyr = jnp.clip(n_pyr, lo, lo + hi)", {}),
    # Wrong only in another mode: each is verified in the mode that shows it.
    "8e3e754 returns the stale observation (rules ignored)": (
        "old_rules = p.rules == RULES_61F27B3", "old_rules = True", {"rules": "8e3e754"}),
    "8e3e754 pays 0.1 per return": ("if old_rules else reward", "if True else reward",
                                    {"rules": "8e3e754", "frameskip": 8}),
    "a later sub-frame runs after a point (frameskip 4)": (
        "                live = ~stopped\n", "                live = ~stopped | True\n",
        {"frameskip": 4}),
    "serve at x = 100 whatever the width (default constant baked in)": (
        "rounded(divide(c.width, 5.0))", "F32(100)", ODD),
    "opponent speed from the default (constant baked in)": (
        "jnp.clip(by - (pyl + ph * F32(0.5)), -speed, speed)",
        "jnp.clip(by - (pyl + ph * F32(0.5)), -F32(8), F32(8))", ODD),
}


# One mutant of each kind stays in the default suite (a constant, a comparison, a dropped
# update, a mode-only bug, a default baked in); the others (~6 s each) run under `slow`.
DEFAULT_SUITE_MUTANTS = {"paddle speed 8 -> 9 (constant)", "left edge < -> > (comparison)",
                         "tick not advanced (dropped update)", "8e3e754 pays 0.1 per return",
                         "serve at x = 100 whatever the width (default constant baked in)"}


@pytest.mark.parametrize("name", [
    n if n in DEFAULT_SUITE_MUTANTS else pytest.param(n, marks=pytest.mark.slow)
    for n in MUTANTS])
def test_mutant_is_killed(name):
    edit = MUTANTS[name]
    options: dict[str, Any] = {} if edit is None else edit[2]
    env = jax_env.Pong(paddle_speed=9.0) if edit is None else mutant(edit[0], edit[1], **options)
    report = verify("pong", ("interaction", "rollout"), episodes=2, states=300, env=env,
                    options=options)
    assert not report.passed, f"mutant survived: {name}"
