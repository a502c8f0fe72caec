"""The functional environment contract every translation implements.

A translation is a set of pure functions over explicit state (gymnax style). The step is split in
two so that verification can inject a reference's random draws:

    draws = env.sample_draws(key, state, params)          # all randomness of the step
    result = env.transition(state, action, draws, params)  # deterministic

and ``step`` is exactly that composition. State and params are frozen dataclasses registered as
JAX pytrees (see :func:`pytree_dataclass`); fields marked ``static`` are compile-time constants.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Generic, NamedTuple, TypeVar, dataclass_transform

import jax
import jax.numpy as jnp

from envport.core.spaces import Space

Array = jax.Array
S = TypeVar("S")
P = TypeVar("P")


def static_field(default: Any = dataclasses.MISSING) -> Any:
    """A field that is part of the pytree's structure (hashable, compile-time), not a leaf."""
    return dataclasses.field(default=default, metadata={"static": True})


T = TypeVar("T")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, static_field))
def pytree_dataclass(cls: type[T]) -> type[T]:
    """Make ``cls`` a frozen dataclass that JAX treats as a pytree.

    Fields declared with ``static_field()`` become part of the tree structure (hashable,
    compile-time), the rest are leaves.
    """
    dc = dataclasses.dataclass(frozen=True)(cls)
    return jax.tree_util.register_dataclass(dc)


class StepResult(NamedTuple):
    state: Any
    obs: Array
    reward: Array
    terminated: Array
    truncated: Array
    info: dict[str, Array]


class Environment(Generic[S, P]):
    """Base class of a JAX translation. Subclasses implement the five abstract methods."""

    name: ClassVar[str] = "environment"
    # True when the environment resets itself inside ``step`` at episode end (PufferLib style):
    # the observation returned with ``terminated`` is then already the next episode's first.
    autoresets: ClassVar[bool] = False

    def default_params(self) -> P:
        raise NotImplementedError

    def reset(self, key: Array, params: P | None = None) -> tuple[S, Array]:
        raise NotImplementedError

    def sample_draws(self, key: Array, state: S, params: P | None = None) -> Any:
        raise NotImplementedError

    def transition(self, state: S, action: Array, draws: Any,
                   params: P | None = None) -> StepResult:
        raise NotImplementedError

    def observation_space(self, params: P | None = None) -> Space:
        raise NotImplementedError

    def action_space(self, params: P | None = None) -> Space:
        raise NotImplementedError

    def step(self, key: Array, state: S, action: Array, params: P | None = None) -> StepResult:
        params = self.default_params() if params is None else params
        draws = self.sample_draws(key, state, params)
        return self.transition(state, action, draws, params)

    # Optional, for games whose legal actions depend on the state (card games): a method
    # ``action_mask(state) -> bool[n]`` over a ``Discrete(n)`` action space. Where defined,
    # ``envport bench`` draws its random actions among the legal ones.

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def tree_stack(trees: list[Any]) -> Any:
    """Stack a list of identical pytrees into one pytree with a leading batch axis."""
    return jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *trees)
