"""The verifier judges every declared mode, with any seed the command line accepts, and with
non-default params (domain randomisation).

Each "fails" case is a real defect planted in a subclass of a real translation, checked against
the real reference: a bug that only shows in a non-default mode, params read from the object
instead of the argument, params that are compile-time constants."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

import envport
from envport.core.seeds import derive_key, derive_seed
from envport.envs.cartpole.jax_env import CartPole
from envport.envs.pong.jax_env import Pong
from envport.verify import verify
from envport.verify.layers import LAYERS

SMALL = {"episodes": 2, "states": 40, "examples": 2, "samples": 300}


class PongWrongAfterTheFirstSubFrame(Pong):
    """Pong whose reward is doubled with frameskip > 1 (the default mode is untouched)."""

    def transition(self, state: Any, action: Any, draws: Any, params: Any = None) -> Any:
        res = super().transition(state, action, draws, params)
        p = self.default_params() if params is None else params
        return res._replace(reward=res.reward * 2) if p.frameskip > 1 else res


def with_translation(name: str, cls: type) -> envport.EnvSpec:
    """The registered spec with the translation class replaced, in every mode."""
    base = envport.spec(name)

    def variant(**options: Any) -> Any:
        spec = base.variant(**options)
        return dataclasses.replace(spec, make=lambda **kw: cls(**options, **kw))

    return dataclasses.replace(base, make=lambda **kw: cls(**kw), variant=variant)


def test_every_declared_mode_is_verified_and_a_mode_only_bug_is_found() -> None:
    # Three of Pong's seven modes (each ~12 s here): beside the default, one that shows the bug
    # and one that does not; tests/envs/pong/test_verify_pong.py verifies all seven.
    spec = dataclasses.replace(with_translation("pong", PongWrongAfterTheFirstSubFrame),
                               modes=({}, {"frameskip": 4}, {"continuous": True}))
    report = verify(spec, ("interaction",), modes="all", **SMALL)
    declared = [spec.with_options(**m).mode_name for m in spec.declared_modes()[1:]]
    assert list(report.modes) == declared == ["pong[frameskip=4]", "pong[continuous=true]"]
    assert report.layers["interaction"].passed  # the default mode has no bug
    failing = [name for name, m in report.modes.items() if not m.passed]
    assert failing and all("frameskip" in name for name in failing)
    assert not report.passed
    data = report.to_json()
    assert data["passed"] is False and set(data["modes"]) == set(declared)
    prompt = report.to_prompt()
    assert "Lowest failing layer: L2 interaction in mode `pong[frameskip=" in prompt
    json.dumps(data)
    # Only the default mode is judged unless asked for all of them.
    assert verify(spec, ("interaction",), **SMALL).passed


# the edges: the largest uint32, the first seeds past it, the largest accepted (an ordinary seed
# such as 5000 runs under `slow`: every other verification test uses one)
@pytest.mark.parametrize("seed", [pytest.param(5000, marks=pytest.mark.slow), 2**32 - 1,
                                  2**32 + 3, 2**63 - 1])
def test_any_accepted_seed_works_in_every_layer(seed: int) -> None:
    report = verify("pong", seed=seed, **SMALL)
    assert report.passed, report.to_prompt()
    # Pong declares no ROLLOUT_DISTRIBUTION: that layer passes with a note
    assert set(report.layers) == set(LAYERS)
    assert report.layers["rollout_distribution"].counts["episodes"] == 0


def test_derived_seeds_fit_every_reference_and_do_not_collide() -> None:
    seeds = {derive_seed(s, i) for s in (0, 5, 2**32 + 5, 2**63 - 1) for i in range(100)}
    assert len(seeds) == 400 and all(0 <= s < 2**32 for s in seeds)
    import jax
    assert not (jax.random.key_data(derive_key(5)) == jax.random.key_data(
        derive_key(2**32 + 5))).all()
    for bad in (-5, 2**63, 1.5, True):
        with pytest.raises(ValueError, match="seed"):
            derive_seed(bad)  # type: ignore[arg-type]


class CartPoleReadingItsOwnParams(CartPole):
    """CartPole that ignores the params it is given: right at the default params only."""

    def transition(self, state: Any, action: Any, draws: Any = (), params: Any = None) -> Any:
        return super().transition(state, action, draws, self.default_params())


def test_l2_steps_non_default_params_against_references_built_with_them() -> None:
    good = verify("cartpole", ("interaction",), states=120)
    assert good.passed
    assert any("non-default param sets" in n for n in good.layers["interaction"].notes)
    stale = dataclasses.replace(envport.spec("cartpole"),
                                make=lambda **kw: CartPoleReadingItsOwnParams(**kw))
    report = verify(stale, ("interaction",), states=120)
    failures = report.layers["interaction"].failures
    assert not report.passed and failures
    assert all(", params " in f.test_id and "with params {" in f.message for f in failures)


def test_params_that_are_compile_time_constants_are_reported() -> None:
    from envport.core.api import pytree_dataclass, static_field
    from envport.envs.cartpole import jax_env

    @pytree_dataclass
    class StaticParams(jax_env.CartPoleParams):
        gravity: float = static_field(9.8)

    class StaticCartPole(CartPole):
        def __init__(self, **params: float) -> None:
            super().__init__()
            self._params = StaticParams(**params)

    spec = dataclasses.replace(envport.spec("cartpole"), make=lambda **kw: StaticCartPole(**kw))
    report = verify(spec, ("interaction",), states=40)
    (failure,) = report.layers["interaction"].failures
    assert failure.test_id == "interaction[params]"
    assert "params are not data: gravity of StaticParams is a static field" in failure.message
