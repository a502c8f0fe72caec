"""The verifier on Pong: the translation is exact, and hand-made mutants of it are caught."""

import inspect
import sys
import types
from pathlib import Path

import pytest

from envport.envs.pong import jax_env
from envport.verify import verify

SOURCE = Path(inspect.getfile(jax_env)).read_text()


def mutant(find: str, replace: str) -> jax_env.Pong:
    """The translation with one edit; state/param classes stay shared with the bridge."""
    assert SOURCE.count(find) == 1, f"mutation site {find!r} must occur exactly once"
    module = types.ModuleType("pong_mutant")
    sys.modules[module.__name__] = module  # dataclasses resolve annotations through it
    exec(compile(SOURCE.replace(find, replace), "pong_mutant.py", "exec"), module.__dict__)
    for shared in ("PongState", "PongDraws", "PongParams"):
        setattr(module, shared, getattr(jax_env, shared))
    return module.Pong()


def test_every_layer_passes_exactly():
    report = verify("pong", episodes=4, states=200, examples=6, samples=1000)
    assert report.passed, report.to_prompt()
    assert report.layers["rollout"].counts["steps"] > 4 * 1000  # whole episodes, not prefixes


@pytest.mark.parametrize("options", [{"frameskip": "4"}, {"continuous": "true"},
                                     {"frameskip": "2", "continuous": "true"}])
def test_other_modes_are_exact_too(options):
    report = verify("pong", ("interaction", "rollout"), episodes=2, states=200, options=options)
    assert report.passed, report.to_prompt()


def test_state_is_at_most_64_bytes_per_environment():
    import jax

    state, _ = jax_env.Pong().reset(jax.random.key(0))
    assert sum(x.nbytes for x in jax.tree_util.tree_leaves(state)) <= 64


MUTANTS = {
    "paddle speed 8 -> 9 (constant)": None,
    "hit reward 0.1 -> 0.2 (constant)": ("F32(0.1), reward", "F32(0.2), reward"),
    "left edge < -> > (comparison)": ("left = n_bx < 0", "left = n_bx > 0"),
    "wall bounce < -> <= (comparison)": ("(n_by < 0) |", "(n_by <= 0) |"),
    "tick not advanced (dropped update)": ("state.tick + 1", "state.tick"),
    "serve vy +1/0 instead of 0/-1 (constant)": ("(r % 2 - 1)", "(r % 2)"),
    "paddle clip uses max for both ends (swapped)": ("n_pyr = jnp.clip(n_pyr, lo, hi)",
                                                     "n_pyr = jnp.clip(n_pyr, lo, lo + hi)"),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_mutant_is_killed(name):
    edit = MUTANTS[name]
    env = jax_env.Pong(paddle_speed=9.0) if edit is None else mutant(*edit)
    report = verify("pong", ("interaction", "rollout"), episodes=2, states=300, env=env)
    assert not report.passed, f"mutant survived: {name}"
