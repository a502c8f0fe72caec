"""The contracts between a reference implementation, its translation, and the verifier.

A *reference* is the real thing (Gymnasium, a C library through cffi, a Node.js process...). Its
adapter exposes one environment instance through :class:`Reference`. A *bridge* maps reference
state to translation state and back, and the reference's tape (the random draws it consumed in
its last step) to the translation's ``draws``. Bridges must stay small and obviously correct:
everything else is compared by the verifier.

Reference states are flat ``dict[str, np.ndarray]``; the bridge works on such dicts with an
optional leading batch axis, so the verifier can convert many states at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

RefState = dict[str, Any]  # field -> a NumPy array or scalar, in the reference's own dtype


@runtime_checkable
class Reference(Protocol):
    def reset(self, seed: int) -> np.ndarray: ...

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]: ...

    def get_state(self) -> RefState: ...

    def set_state(self, state: Mapping[str, np.ndarray]) -> None: ...

    def tape(self) -> dict[str, np.ndarray]:
        """The random draws consumed by the last ``step`` (empty if the step used none)."""
        ...


@runtime_checkable
class HostTranslation(Reference, Protocol):
    """A translation stepped on the host (``EnvSpec.backend == "host"``: a Rust core through
    Python bindings...), verified through the same protocol as its reference, with the same
    reference-form states: ``set_state`` takes a state the *reference*'s ``get_state`` gave (L2
    injects it into both sides) or its own.

    ``opaque_fields``: state fields that carry a side's own snapshot for ``set_state`` (a save
    state), in each side's format, never compared; ``get_state(include_opaque=False)`` leaves
    them out (the verifier asks for them only where it injects a state). Optional
    ``step_batch(states, actions) -> [(state, obs, reward, terminated, truncated)]``: one step
    from each state in one batched call, the translation's batch path (L2 steps every case
    through it when present)."""

    opaque_fields: tuple[str, ...]

    def get_state(self, include_opaque: bool = True) -> RefState: ...


class IdentityBridge:
    """The bridge of a host translation: it takes and gives reference-form states itself."""

    def to_jax(self, state: Mapping[str, np.ndarray]) -> Any:
        return dict(state)

    def from_jax(self, state: Any) -> RefState:
        return dict(state)

    def draws(self, tape: Mapping[str, np.ndarray], state: Mapping[str, np.ndarray]) -> Any:
        return {}


class Bridge(Protocol):
    def to_jax(self, state: Mapping[str, np.ndarray]) -> Any: ...

    def from_jax(self, state: Any) -> RefState: ...

    def draws(self, tape: Mapping[str, np.ndarray], state: Mapping[str, np.ndarray]) -> Any:
        """Translation draws equivalent to ``tape``, consumed from reference ``state``."""
        ...


def stack_states(states: list[Mapping[str, np.ndarray]]) -> RefState:
    """List of reference states -> one dict of arrays with a leading batch axis."""
    return {k: np.stack([np.asarray(s[k]) for s in states]) for k in states[0]}


def index_state(states: Mapping[str, np.ndarray], i: int) -> RefState:
    return {k: np.asarray(v[i]) for k, v in states.items()}
