"""Registry: each package under ``envport/envs`` that defines ``SPEC`` is an environment.

Adding an environment is copying a folder; nothing here needs editing.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from envport.core.api import Environment
from envport.core.reference import Bridge, Reference, RefState


def lazy(target: str) -> Callable[..., Any]:
    """``"module:Name"`` -> a factory that imports ``module`` on first call and calls ``Name``.

    Environment packages name their classes this way so that listing environments imports no
    simulator, reference or JAX code.
    """
    module_name, _, attr = target.partition(":")

    def factory(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module_name), attr)(*args, **kwargs)

    factory.__qualname__ = f"lazy({target!r})"
    factory.target = target  # type: ignore[attr-defined]
    return factory


class UnknownEnvironmentError(KeyError):
    def __init__(self, name: str, known: list[str]):
        self.name, self.known = name, known
        super().__init__(name)

    def __str__(self) -> str:
        return f"unknown environment {self.name!r}; known environments: {', '.join(self.known)}"


@dataclass(frozen=True)
class Tolerance:
    """Per-field comparison rule: |got - expected| <= atol + rtol * |expected| elementwise, or
    with ``normwise`` <= atol + rtol * max |expected| over the field (one step's vector): the
    error of a vector computed by one linear solve scales with the vector, not with each of
    its components (a small joint velocity carries the rounding of the large ones)."""

    atol: float = 0.0
    rtol: float = 0.0
    normwise: bool = False

    @property
    def exact(self) -> bool:
        return self.atol == 0.0 and self.rtol == 0.0

    def allowed(self, expected: np.ndarray, steps: bool = False) -> np.ndarray:
        """The allowed |error| for each element of ``expected`` (float64). ``steps``: the
        leading axis counts steps, and a normwise scale is taken per step."""
        mag = np.abs(np.asarray(expected, np.float64))
        if self.normwise and mag.size:
            if steps:
                per_step = mag.reshape(len(mag), -1).max(axis=1, initial=0.0)
                mag = np.broadcast_to(per_step.reshape((-1,) + (1,) * (mag.ndim - 1)),
                                      mag.shape)
            else:
                mag = np.full_like(mag, mag.max())
        return self.atol + self.rtol * mag

    def __str__(self) -> str:
        if self.exact:
            return "exact"
        return f"atol={self.atol:g} rtol={self.rtol:g}" + (" (normwise)" if self.normwise
                                                             else "")


@dataclass(frozen=True)
class EnvSpec:
    """Everything envport knows about one environment: how to build both sides and compare them."""

    name: str
    summary: str
    reference: str  # what the reference is, with the version verified against
    make: Callable[..., Environment]
    make_reference: Callable[..., Reference]
    make_bridge: Callable[..., Bridge]
    # Comparison: one tolerance for every compared field unless ``field_tolerance`` overrides.
    tolerance: Tolerance = Tolerance()
    field_tolerance: dict[str, Tolerance] = field(default_factory=dict)
    tolerance_note: str = "exact: every field must be bit-identical"
    # Policies that drive the reference to interesting states (obs, rng) -> action.
    scripted_policy: Callable[[np.ndarray, np.random.Generator], Any] | None = None
    random_action: Callable[[np.random.Generator], Any] | None = None
    # L2: perturb a visited state into a nearby (possibly unvisited) one; coarse bins for novelty.
    perturb: Callable[[RefState, np.random.Generator], RefState] | None = None
    state_bins: Callable[[RefState], tuple] | None = None
    # L3: a rollout is cut after this many steps (a Pong episode can be very long).
    max_rollout_steps: int = 10_000
    # L3 tolerance envelope for floating-point physics: ``make_perturbed_reference(copy=i)`` is a
    # copy of the reference perturbed at float32 rounding level (its noise seeded by ``i``), driven
    # by the same actions (None: use ``tolerance`` per step).
    make_perturbed_reference: Callable[..., Reference] | None = None
    # Distribution test: (reference events, translation events) for the env's random events.
    sample_reference_events: Callable[[int, int], dict[str, np.ndarray]] | None = None
    sample_translation_events: Callable[[int, int], dict[str, np.ndarray]] | None = None
    # Benchmarks: the reference stepped the way a user would, (batch_sizes, steps) -> rows, with
    # ``steps`` the env-steps per row (a hook may raise it to time a fast reference stably):
    # {"backend": "reference", "mode": str, "batch_size": int, "steps_per_second": float}.
    reference_throughput: Callable[[list[int], int], list[dict[str, Any]]] | None = None
    # Performance peers: other implementations of the same task that ``envport bench`` times
    # beside the translation at the same batch sizes (HalfCheetah: MJX, Brax). name -> factory()
    # -> (init(batch_size, key) -> state, step(state, action) -> state, mode description),
    # raising ImportError when the peer is not installed (see ``envport.bench.peers``). Speed
    # only: a peer is never a reference.
    peers: dict[str, Callable[[], Any]] = field(default_factory=dict)
    # L1 component checks against reference input/output pairs: name -> callable raising on failure.
    components: dict[str, Callable[[], None]] = field(default_factory=dict)
    status: str = "verified"
    # Other modes of the same environment (e.g. Pong's frameskip): options -> a spec for them.
    variant: Callable[..., EnvSpec] | None = None

    def with_options(self, **options: Any) -> EnvSpec:
        """This environment in another mode (``envport verify pong -o frameskip=4``)."""
        if not options:
            return self
        if self.variant is None:
            raise ValueError(f"{self.name} has no options (got {sorted(options)})")
        return self.variant(**options)

    def tolerance_for(self, name: str) -> Tolerance:
        return self.field_tolerance.get(name, self.tolerance)


@cache
def _specs() -> dict[str, EnvSpec]:
    import envport.envs as pkg

    specs: dict[str, EnvSpec] = {}
    for mod in pkgutil.iter_modules(pkg.__path__):
        if not mod.ispkg:
            continue
        module = importlib.import_module(f"envport.envs.{mod.name}")
        spec = getattr(module, "SPEC", None)
        if isinstance(spec, EnvSpec):
            specs[spec.name] = spec
    return dict(sorted(specs.items()))


def list_envs() -> list[str]:
    return list(_specs())


def spec(name: str) -> EnvSpec:
    specs = _specs()
    if name not in specs:
        raise UnknownEnvironmentError(name, list(specs))
    return specs[name]


def make(name: str, **kwargs: Any) -> Environment:
    """Build the JAX translation of ``name``; keyword arguments override its default params."""
    return spec(name).make(**kwargs)
