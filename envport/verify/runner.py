"""Run the verification hierarchy for one environment, lowest layer first, in its modes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from envport.core.api import Environment
from envport.core.registry import EnvSpec
from envport.core.registry import spec as get_spec
from envport.core.seeds import check_seed
from envport.verify.distribution import check_distribution
from envport.verify.interaction import check_interaction
from envport.verify.layers import LAYERS
from envport.verify.properties import check_properties
from envport.verify.report import LayerResult, Report
from envport.verify.rollout import check_rollout
from envport.verify.rollout_distribution import check_policy_run, check_rollout_distribution

Progress = Callable[[str, int, int], None]
MODES = ("default", "all")
# A declared mode other than the default gets a short run: this share of each size, at least
# the floor (so a mode-only bug is still met by every layer).
SHORT_RUN = {"episodes": (0.2, 4), "states": (0.2, 50), "examples": (0.4, 4),
             "samples": (0.5, 500)}


def check_sizes(**sizes: int) -> None:
    """ValueError naming the first size below 1 (``--episodes 0``)."""
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"--{name} must be a positive integer, got {value!r}")


def short_sizes(sizes: dict[str, int]) -> dict[str, int]:
    return {k: max(min(v, floor), round(v * share)) for k, v in sizes.items()
            for share, floor in [SHORT_RUN[k]]}


def verify(name: str | EnvSpec, layers: tuple[str, ...] = LAYERS, *, episodes: int = 20,
           states: int = 300, examples: int = 20, samples: int = 2000, seed: int = 0,
           env: Environment | None = None, progress: Progress | None = None,
           options: dict[str, Any] | None = None, modes: str = "default",
           horizon_episodes: int | None = None, policy_run: str | None = None,
           horizon_alpha: float | None = None) -> Report:
    """Verify the translation of ``name`` (or ``env``, a variant of it) against its reference.

    ``name`` may also be an unregistered ``EnvSpec`` (a translation in progress). ``options``
    picks one mode (``{"frameskip": 4}``); ``modes="all"`` verifies the default mode and then
    every other mode the environment declares (``EnvSpec.modes``) with shorter runs
    (:data:`SHORT_RUN`), each in ``Report.modes``. Bad arguments raise ValueError before any
    work. Ctrl-C stops the run and returns what was verified so far, marked ``interrupted``.
    ``horizon_episodes`` (default: the environment's ``Verification.rollout_distribution`` N),
    ``policy_run`` (a training run of this environment whose policy also drives the episodes)
    and ``horizon_alpha`` set the rollout-distribution layer; it runs with the same N in every
    mode (its power is its N).
    """
    spec = name if isinstance(name, EnvSpec) else get_spec(name)
    spec = spec.with_options(**(options or {}))
    if spec.host and env is not None:
        raise ValueError(f"{spec.name} is a host translation: verify builds it from its spec "
                         "(pass no JAX env)")
    unknown = set(layers) - set(LAYERS)
    if unknown or not layers:
        raise ValueError(f"unknown layer(s) {sorted(unknown)}; known: {', '.join(LAYERS)}")
    if modes not in MODES:
        raise ValueError(f"modes must be one of {', '.join(MODES)}, got {modes!r}")
    check_seed(seed, "--seed")
    sizes = {"episodes": episodes, "states": states, "examples": examples, "samples": samples}
    check_sizes(**sizes)
    rd: dict[str, Any] = {"episodes": horizon_episodes, "policy_run": policy_run,
                          "alpha": horizon_alpha}
    if horizon_episodes is not None and (isinstance(horizon_episodes, bool) or not isinstance(
            horizon_episodes, int) or horizon_episodes < 2):
        raise ValueError(f"--horizon-episodes must be an integer >= 2, got {horizon_episodes!r}")
    if horizon_alpha is not None and not 0 < horizon_alpha < 0.5:
        raise ValueError(f"--horizon-alpha must be between 0 and 0.5, got {horizon_alpha!r}")
    if policy_run is not None and "rollout_distribution" in layers:
        check_policy_run(spec, policy_run)
    others = ([spec.with_options(**m) for m in spec.declared_modes()[1:]]
              if modes == "all" and not options and env is None else [])
    report = _verify_mode(spec, layers, sizes, seed, env, progress, rd)
    for other in others:
        if report.interrupted:
            break
        sub = _verify_mode(other, layers, short_sizes(sizes), seed, None, progress, rd)
        report.modes[other.mode_name] = sub
        report.interrupted = sub.interrupted
    return report


def _verify_mode(spec: EnvSpec, layers: tuple[str, ...], sizes: dict[str, int], seed: int,
                 env: Environment | None, progress: Progress | None,
                 rd: dict[str, Any] | None = None) -> Report:
    report = Report(env=spec.mode_name, tolerance_note=spec.verification.tolerance_note,
                    sizes=dict(sizes))
    label = "" if not spec.mode else f" {spec.mode_name}"
    rd = rd or {}

    def tick(layer: str) -> Callable[[int, int], None] | None:
        return (lambda done, total: progress(layer + label, done, total)) if progress else None

    def keep_partial(result: LayerResult) -> None:
        report.layers[result.name] = result

    runners: dict[str, Callable[[], LayerResult]] = {
        "property": lambda: check_properties(spec, sizes["examples"], seed, tick("property"),
                                             env),
        "interaction": lambda: check_interaction(spec, sizes["states"], seed,
                                                 tick("interaction"), env),
        "rollout": lambda: check_rollout(spec, sizes["episodes"], seed, tick("rollout"), env,
                                         on_partial=keep_partial),
        "distribution": lambda: check_distribution(spec, sizes["samples"], seed),
        "rollout_distribution": lambda: check_rollout_distribution(
            spec, rd.get("episodes"), seed, tick("rollout_distribution"), env,
            policy_run=rd.get("policy_run"), **({"alpha": rd["alpha"]} if rd.get("alpha")
                                                 else {})),
    }
    if spec.host:
        runners = host_runners(spec, sizes, seed, tick, keep_partial)
    try:
        for layer in LAYERS:
            if layer in layers:
                report.layers[layer] = runners[layer]()
    except KeyboardInterrupt:
        report.interrupted = True
    return report


def host_runners(spec: EnvSpec, sizes: dict[str, int], seed: int,
                 tick: Callable[[str], Callable[[int, int], None] | None],
                 keep_partial: Callable[[LayerResult], None]
                 ) -> dict[str, Callable[[], LayerResult]]:
    """The layers' host forms (``EnvSpec.backend == "host"``, :mod:`envport.verify.host`)."""
    from envport.verify import host

    return {
        "property": lambda: host.check_host_properties(spec, sizes["examples"], seed,
                                                       tick("property")),
        "interaction": lambda: host.check_host_interaction(spec, sizes["states"], seed,
                                                           tick("interaction")),
        "rollout": lambda: host.check_host_rollout(spec, sizes["episodes"], seed,
                                                   tick("rollout"), on_partial=keep_partial),
        "distribution": lambda: host.not_run("distribution"),
        "rollout_distribution": lambda: host.not_run("rollout_distribution"),
    }


def summary(report: Report) -> dict[str, Any]:
    return {name: r.passed for name, r in report.layers.items()}
