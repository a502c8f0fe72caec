"""Registry: an environment is one folder whose ``__init__.py`` defines ``SPEC = EnvSpec(...)``.

Everything envport knows about an environment is reached through its :class:`EnvSpec`, grouped
in three records: :class:`Verification` (how the translation is compared with its reference),
:class:`Benchmark` (how the reference is timed, and which peers beside it) and
:class:`Training` (PPO settings, the L4 margin, the reference batched for host training). The
spec also declares its options (``-o KEY=VALUE``) and the modes the verifier must check.

Environments are found in three places, in this order: the packages under ``envport/envs``;
every folder listed in ``$ENVPORT_ENV_PATH`` (``os.pathsep``-separated; a folder is either an
environment package itself or a folder of them; child processes inherit the variable); and the
``envport.envs`` entry-point group of installed distributions (``name = "module:SPEC"``). Adding
an environment is copying a folder; nothing here needs editing.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import pkgutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from envport.core.api import Environment
from envport.core.reference import Bridge, Reference, RefState

ENV_PATH_VARIABLE = "ENVPORT_ENV_PATH"
BACKENDS = ("jax", "host")  # what an EnvSpec's ``make`` builds (``EnvSpec.backend``)
ENTRY_POINT_GROUP = "envport.envs"


def lazy(target: str) -> Callable[..., Any]:
    """``"module:Name"`` -> a factory that imports ``module`` on first call and calls ``Name``.

    Environment packages name their classes this way so that listing environments imports no
    simulator or reference code.
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


# ------------------------------------------------------------------------------ options
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Option:
    """One option of an environment (``envport verify ENV -o KEY=VALUE``,
    ``envport.make(ENV, KEY=VALUE)``): its default, the kind of value, and what it means.

    ``kind`` is ``"int"``, ``"bool"``, ``"float"`` or ``"choice"`` (one of ``choices``);
    ``minimum`` bounds ints and floats. :meth:`parse` turns a command-line string (or a
    Python value) into the typed value, raising ValueError that names the option."""

    default: Any
    help: str
    kind: str = "choice"
    choices: tuple[Any, ...] = ()
    minimum: float | None = None

    def parse(self, name: str, value: Any) -> Any:
        def bad(expected: str) -> ValueError:
            return ValueError(f"option {name}={value!r}: expected {expected}")

        text = str(value).strip()
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            if text.lower() in _TRUE:
                return True
            if text.lower() in _FALSE:
                return False
            raise bad("true or false (also 1/0, yes/no, on/off)")
        if self.kind in ("int", "float"):
            if isinstance(value, bool):
                raise bad(f"a{'n integer' if self.kind == 'int' else ' number'}")
            try:
                number = int(text) if self.kind == "int" else float(text)
            except ValueError:
                raise bad("an integer" if self.kind == "int" else "a number") from None
            if self.minimum is not None and not number >= self.minimum:
                raise bad(f"a value >= {self.minimum:g}")
            return number
        by_text = {str(c).lower(): c for c in self.choices}
        if text.lower() not in by_text:
            raise bad(f"one of {', '.join(str(c) for c in self.choices)}")
        return by_text[text.lower()]


# ------------------------------------------------------------------------------ the records
@dataclass(frozen=True)
class Verification:
    """How the translation is compared with its reference, layer by layer."""

    # Comparison: one tolerance for every compared field unless ``field_tolerance`` overrides.
    tolerance: Tolerance = Tolerance()
    field_tolerance: Mapping[str, Tolerance] = field(default_factory=dict)
    tolerance_note: str = "exact: every field must be bit-identical"
    # Policies that drive the reference to interesting states: (obs, rng) -> action.
    scripted_policy: Callable[[np.ndarray, np.random.Generator], Any] | None = None
    random_action: Callable[[np.random.Generator], Any] | None = None
    # Games whose legal actions depend on the state (action masks): (reference state, rng) -> a
    # uniformly random legal action. Where declared, the verifier draws every random action it
    # takes from a known state with it instead of ``random_action``.
    legal_action: Callable[[RefState, np.random.Generator], Any] | None = None
    # The scripted policy of such a game, which needs the state to stay legal: (reference state,
    # rng) -> action; where declared, it is the verifier's scripted policy (``scripted_policy``
    # is given only the observation).
    scripted_action: Callable[[RefState, np.random.Generator], Any] | None = None
    # L2: perturb a visited state into a nearby (possibly unvisited) one; coarse bins for novelty.
    perturb: Callable[[RefState, np.random.Generator], RefState] | None = None
    state_bins: Callable[[RefState], tuple] | None = None
    # L2 with other params: one random non-default param set (field -> value). Both sides are
    # built with it (the translation's params replaced, ``make_reference(params=...)``).
    sample_params: Callable[[np.random.Generator], dict[str, Any]] | None = None
    # L3: a rollout is cut after this many steps (a Pong episode can be very long).
    max_rollout_steps: int = 10_000
    # L3 tolerance envelope for floating-point physics: ``make_perturbed_reference(copy=i)`` is a
    # copy of the reference perturbed at float32 rounding level (its noise seeded by ``i``), driven
    # by the same actions (None: use ``tolerance`` per step).
    make_perturbed_reference: Callable[..., Reference] | None = None
    # Distribution test: (n, seed) -> {event: samples} of the env's random events, per side.
    sample_reference_events: Callable[[int, int], dict[str, np.ndarray]] | None = None
    sample_translation_events: Callable[[int, int], dict[str, np.ndarray]] | None = None
    # L1 component checks against reference input/output pairs: name -> callable raising on failure.
    components: Mapping[str, Callable[[], None]] = field(default_factory=dict)
    # Mutants of the translation known to be equivalent, with the reason, for ``envport
    # mutate``: () -> {(file name, source line, mutant description[, column]): (kind, why)};
    # with the column (``Mutant.column``) a key holds for that site of the line only.
    equivalent_mutants: Callable[[], dict[tuple[Any, ...], tuple[str, str]]] | None = None
    # The rollout-distribution layer's settings (``envport.verify.rollout_distribution.Settings``
    # or a mapping of its fields); None: the environment does not take part in that layer.
    rollout_distribution: Any = None

    def tolerance_for(self, name: str) -> Tolerance:
        return self.field_tolerance.get(name, self.tolerance)


@dataclass(frozen=True)
class Benchmark:
    """How ``envport bench`` times the reference, and which other implementations beside it."""

    # The reference stepped the way a user would, (batch_sizes, steps) -> rows, with ``steps``
    # the env-steps per row (a hook may raise it to time a fast reference stably):
    # {"backend": "reference", "mode": str, "batch_size": int, "steps_per_second": float}.
    reference_throughput: Callable[[list[int], int], list[dict[str, Any]]] | None = None
    # Performance peers: other implementations of the same task, timed beside the translation
    # at the same batch sizes; name -> factory (see ``envport.bench.peers``). Speed only: a
    # peer is never a reference.
    peers: Mapping[str, Callable[[], Any]] = field(default_factory=dict)
    # Default batch sizes (None: powers of 4 up to 65,536, or the peers' sizes).
    batch_sizes: tuple[int, ...] | None = None
    # A host translation (``EnvSpec.backend == "host"``) timed the way a user steps it,
    # (batch_sizes, steps) -> rows as ``reference_throughput``'s with backend "translation"
    # (a JAX translation is timed by envport.bench.throughput instead).
    translation_throughput: Callable[[list[int], int], list[dict[str, Any]]] | None = None


@dataclass(frozen=True)
class Training:
    """PPO on either backend, and L4."""

    # The PPO settings ``envport train`` starts from (an ``envport.train.config.PPOConfig``;
    # None: its defaults) and the environment options they train with.
    ppo: Any = None
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    # L4's measure of a policy on a backend over its evaluation episodes: "return", the mean
    # episode return, or "win_rate", the share of episodes with a positive return (a game
    # scored +1 / -1 / 0 at its end). ``margin`` is in its units.
    metric: str = "return"
    # L4: the difference of ``metric`` that counts as equivalent (None: --margin required).
    margin: float | None = None
    margin_note: str = ""
    # The reference batched for host training: (num_envs, seed, **env_kwargs) -> a
    # ``envport.train.backends.HostVectorEnv`` with same-step autoreset (None: no reference
    # backend for training).
    make_vector_reference: Callable[..., Any] | None = None
    # (seed, num_envs) -> the per-environment seeds the vector reference resets from
    # (jittable), when the translation has ``reset_from_seed``: the JAX backend then plays the
    # same games as the reference backend (``envport.train.backends.seeded_reset``).
    reset_seeds: Callable[[Any, int], Any] | None = None
    # A host translation (``EnvSpec.backend == "host"``) batched for training, the same
    # signature and contract as ``make_vector_reference``: the translation backend (kind "jax",
    # alias "translation") of ``envport train``/``transfer``, stepped by the host rollout as
    # the reference is (a JAX translation needs none: it is vmapped and jitted instead).
    make_vector_translation: Callable[..., Any] | None = None
    # A JAX translation batched on the host that draws its episodes from the generator
    # ``make_vector_reference``'s batch of the same seed draws from, in the same order (the
    # same signature and contract): the two batches of a seed play the same episodes, so
    # ``envport.train.evaluation.evaluate`` of a policy on both backends meets common random
    # numbers (L4's sim-to-sim test). None: the JAX side is evaluated with its own draws.
    make_matched_translation: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        if self.metric not in L4_METRICS:
            raise ValueError(f"Training.metric must be one of {', '.join(L4_METRICS)}, got "
                             f"{self.metric!r}")


# Training.metric's values, each with how reports name it.
L4_METRICS = {"return": "mean return", "win_rate": "win rate"}


@dataclass(frozen=True)
class EnvSpec:
    """Everything envport knows about one environment: how to build both sides, compare, time
    and train them."""

    name: str
    summary: str
    reference: str  # what the reference is, with the version verified against
    make: Callable[..., Environment]
    make_reference: Callable[..., Reference]
    make_bridge: Callable[..., Bridge]
    verification: Verification = Verification()
    benchmark: Benchmark = Benchmark()
    training: Training = Training()
    status: str = "verified"
    # Options of the environment (``-o KEY=VALUE``), and ``variant(**typed options)`` -> the
    # spec of that mode (both sides built with the options).
    options: Mapping[str, Option] = field(default_factory=dict)
    variant: Callable[..., EnvSpec] | None = None
    # The modes ``envport verify`` and ``envport mutate`` check beside the default: option sets.
    modes: tuple[Mapping[str, Any], ...] = ()
    # The options this spec was built with (a variant's), {} for the default mode.
    mode: Mapping[str, Any] = field(default_factory=dict)
    # What ``make`` builds: "jax", a JAX ``Environment`` (the layers jit and vmap it), or
    # "host", a translation stepped on the host (a Rust core through Python bindings...) that
    # exposes the ``Reference`` protocol itself (``envport.core.reference.HostTranslation``);
    # ``envport verify`` then runs the host form of each layer (``envport.verify.host``).
    backend: str = "jax"

    def parse_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """Typed values of ``options`` (strings from the command line or Python values);
        ValueError naming an unknown option or a bad value."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            known = ", ".join(sorted(self.options)) or "none"
            raise ValueError(f"{self.name} has no option {', '.join(map(repr, unknown))} "
                             f"(its options: {known})")
        return {k: self.options[k].parse(k, v) for k, v in options.items()}

    def with_options(self, **options: Any) -> EnvSpec:
        """This environment in another mode (``envport verify pong -o frameskip=4``)."""
        parsed = self.parse_options(options)
        defaults = {k: o.default for k, o in self.options.items()}
        full = {**defaults, **dict(self.mode), **parsed}
        if full == defaults:
            return self if not self.mode else _base(self)
        assert self.variant is not None, f"{self.name} declares options but no variant"
        return replace(self.variant(**full), mode={k: v for k, v in full.items()
                                                   if v != defaults[k]})

    def tolerance_for(self, name: str) -> Tolerance:
        return self.verification.tolerance_for(name)

    @property
    def host(self) -> bool:
        """True for a host translation (``backend == "host"``)."""
        if self.backend not in BACKENDS:
            raise ValueError(f"{self.name}: backend must be one of {', '.join(BACKENDS)}, got "
                             f"{self.backend!r}")
        return self.backend == "host"

    @property
    def mode_name(self) -> str:
        """``name`` plus the non-default options: ``pong[frameskip=4]``."""
        return self.name + "".join(f"[{k}={_show(v)}]" for k, v in self.mode.items())

    def declared_modes(self) -> list[dict[str, Any]]:
        """The default mode first, then every other declared mode, as typed option sets."""
        modes: list[dict[str, Any]] = [{}] + [self.parse_options(m) for m in self.modes if m]
        return [dict(m) for m in dict.fromkeys(tuple(sorted(m.items())) for m in modes)]


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _base(spec: EnvSpec) -> EnvSpec:
    return _specs().get(spec.name, spec)


# ------------------------------------------------------------------------------ discovery
def _spec_of(module_name: str) -> EnvSpec | None:
    spec = getattr(importlib.import_module(module_name), "SPEC", None)
    return spec if isinstance(spec, EnvSpec) else None


def _folder_packages(folder: Path) -> list[str]:
    """Import names of the environment packages in ``folder`` (itself one, or a folder of
    them), with the parent of each put on ``sys.path`` so its ``lazy("pkg.mod:Name")`` targets
    import."""
    folder = folder.resolve()
    if not folder.is_dir():
        raise ValueError(f"{ENV_PATH_VARIABLE} names {folder}, which is not a folder")
    if (folder / "__init__.py").is_file():
        parent, names = folder.parent, [folder.name]
    else:
        parent = folder
        names = sorted(p.name for p in folder.iterdir() if (p / "__init__.py").is_file())
    if str(parent) not in sys.path:
        sys.path.insert(0, str(parent))
    return names


def _entry_point_specs() -> list[EnvSpec]:
    out = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        spec = ep.load()
        if isinstance(spec, EnvSpec):
            out.append(spec)
    return out


_REGISTERED: dict[str, EnvSpec] = {}


def register(spec: EnvSpec) -> EnvSpec:
    """Register ``spec`` in this process (an environment defined in a notebook or a test);
    for the CLI and child processes, name its folder in ``$ENVPORT_ENV_PATH`` instead."""
    _REGISTERED[spec.name] = spec
    _specs.cache_clear()
    return spec


@cache
def _specs() -> dict[str, EnvSpec]:
    import envport.envs as pkg

    specs: dict[str, EnvSpec] = {}

    def add(spec: EnvSpec | None, where: str) -> None:
        if spec is None:
            return
        if spec.name in specs and specs[spec.name] is not spec:
            raise ValueError(f"two environments are named {spec.name!r} (the second in {where})")
        specs[spec.name] = spec

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.ispkg:
            add(_spec_of(f"envport.envs.{mod.name}"), f"envport.envs.{mod.name}")
    for entry in filter(None, os.environ.get(ENV_PATH_VARIABLE, "").split(os.pathsep)):
        for name in _folder_packages(Path(entry)):
            add(_spec_of(name), f"{entry} ({ENV_PATH_VARIABLE})")
    for spec in _entry_point_specs():
        add(spec, f"the {ENTRY_POINT_GROUP} entry points")
    for spec in _REGISTERED.values():
        specs[spec.name] = spec
    return dict(sorted(specs.items()))


def list_envs() -> list[str]:
    return list(_specs())


def spec(name: str) -> EnvSpec:
    specs = _specs()
    if name not in specs:
        raise UnknownEnvironmentError(name, list(specs))
    return specs[name]


def make(name: str, **kwargs: Any) -> Any:
    """Build the translation of ``name``: a JAX ``Environment``, or for ``backend="host"`` a
    host translation (``envport.core.reference.HostTranslation``); keyword arguments are its
    options (checked)."""
    s = spec(name)
    options = {k: v for k, v in kwargs.items() if k in s.options}
    s.parse_options(options)
    return s.make(**kwargs)
