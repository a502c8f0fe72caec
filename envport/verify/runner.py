"""Run the verification hierarchy for one environment, lowest layer first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from envport.core.api import Environment
from envport.core.registry import EnvSpec
from envport.core.registry import spec as get_spec
from envport.verify.distribution import check_distribution
from envport.verify.interaction import check_interaction
from envport.verify.properties import check_properties
from envport.verify.report import LAYERS, LayerResult, Report
from envport.verify.rollout import check_rollout

Progress = Callable[[str, int, int], None]


def verify(name: str | EnvSpec, layers: tuple[str, ...] = LAYERS, *, episodes: int = 20,
           states: int = 300, examples: int = 20, samples: int = 2000, seed: int = 0,
           env: Environment | None = None, progress: Progress | None = None,
           options: dict[str, Any] | None = None) -> Report:
    """Verify the translation of ``name`` (or ``env``, a variant of it) against its reference.

    ``name`` may also be an unregistered ``EnvSpec`` (a translation in progress).
    Ctrl-C stops the run and returns what was verified so far, marked ``interrupted``.
    """
    spec = name if isinstance(name, EnvSpec) else get_spec(name)
    spec = spec.with_options(**(options or {}))
    name = spec.name
    unknown = set(layers) - set(LAYERS)
    if unknown:
        raise ValueError(f"unknown layer(s) {sorted(unknown)}; known: {', '.join(LAYERS)}")
    report = Report(env=name, tolerance_note=spec.verification.tolerance_note)

    def tick(layer: str) -> Callable[[int, int], None] | None:
        return (lambda done, total: progress(layer, done, total)) if progress else None

    def keep_partial(result: LayerResult) -> None:
        report.layers[result.name] = result

    runners: dict[str, Callable[[], LayerResult]] = {
        "property": lambda: check_properties(spec, examples, seed, tick("property"), env),
        "interaction": lambda: check_interaction(spec, states, seed, tick("interaction"), env),
        "rollout": lambda: check_rollout(spec, episodes, seed, tick("rollout"), env,
                                         on_partial=keep_partial),
        "distribution": lambda: check_distribution(spec, samples, seed),
    }
    try:
        for layer in LAYERS:
            if layer in layers:
                report.layers[layer] = runners[layer]()
    except KeyboardInterrupt:
        report.interrupted = True
    return report


def summary(report: Report) -> dict[str, Any]:
    return {name: r.passed for name, r in report.layers.items()}
