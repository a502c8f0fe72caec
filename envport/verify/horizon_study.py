"""The rollout-distribution layer's figures: false-alarm rates, mutant kills, detectable effects.

    python -m envport.verify.horizon_study calibrate ENV --against self --repetitions 20
    python -m envport.verify.horizon_study calibrate ENV --against perturbed --repetitions 20
    python -m envport.verify.horizon_study calibrate ENV --against translation --repetitions 20
    python -m envport.verify.horizon_study mutants ENV [--lower-layers] [--only NAME]
    JAX_ENABLE_X64=1 python -m envport.verify.horizon_study calibrate ENV -o dtype=float64 ...

``calibrate``: the layer R times (run seeds 0..R-1) with, in the translation's place, the
reference itself (``self``: independent seeds on each side, so any rejection is a false alarm),
one of L3's float32-perturbed reference copies (``perturbed``) or the translation. Prints each
run's rejections and the rate of runs with at least one. ``mutants``: every param mutant of the
environment folder's ``mutants.param_mutants()``, each a translation built with that param
changed, through this layer (and with ``--lower-layers`` L2 and L3 at the CLI's sizes first);
prints which layer kills it and the feature that does, with the smallest adjusted p (every
mutant against the same reference episodes, drawn once: their seeds do not depend on the
translation). ``-o KEY=VALUE`` (repeatable) runs the environment in that mode (``envport
verify``'s options: HalfCheetah's float64 is ``-o dtype=float64`` with ``JAX_ENABLE_X64=1``).
Each prints a JSON line per run.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import functools
import importlib
import json
import shutil
import sys
import tempfile
import time
from typing import Any

import numpy as np

from envport.cli_args import parse_options
from envport.core.registry import EnvSpec
from envport.core.registry import spec as get_spec
from envport.verify.rollout_distribution import (
    LAYER,
    ReferenceCache,
    Settings,
    check_rollout_distribution,
    reference_vs,
    settings_for,
)


def _smallest(tests: list[dict[str, Any]]) -> str:
    """The test of smallest raw p: which summary, its effect and both p-values."""
    t = min(tests, key=lambda t: t["p"])
    effect = f"d={t['d']:+.2f}, " if np.isfinite(t["d"]) else ""
    return (f"[{t['policy']}] {t['feature']} ({t['test']}): {effect}p={t['p']:.2g}, "
            f"adjusted p={t['p_adjusted']:.2g}")


def _top(result: Any) -> str:
    return result.failures[0].test_id if result.failures else ""


def only_policies(settings: Settings, policies: list[str] | None) -> Settings:
    """The settings with only ``policies`` run (``--policies``): a part of the layer's family,
    whose rejections include every one the whole family makes (Holm and Bonferroni over fewer
    tests are less strict), so a part's alarm rate bounds that part's share of the whole's."""
    if not policies:
        return settings
    unknown = sorted(set(policies) - set(settings.policies))
    if unknown:
        raise ValueError(f"--policies {', '.join(unknown)}: the layer's policies are "
                         f"{', '.join(settings.policies)}")
    return dataclasses.replace(settings, policies=tuple(policies))


def calibrate(spec: EnvSpec, against: str, repetitions: int, episodes: int | None,
              first_seed: int = 0, policies: list[str] | None = None) -> dict[str, Any]:
    base = settings_for(spec)
    if base is None:
        raise ValueError(f"{spec.name} declares no Verification.rollout_distribution")
    settings = only_policies(base, policies)
    runs = []
    for seed in range(first_seed, first_seed + repetitions):
        t0 = time.perf_counter()
        if against == "translation":
            r = check_rollout_distribution(spec, episodes, seed, settings=settings)
        elif against == "self":
            # The layer's own reference where it declares one (a game's: resets sampling what
            # the translation's do).
            r = reference_vs(spec, functools.partial(settings.reference, spec), episodes, seed,
                             settings=settings)
        elif against == "perturbed":
            make = spec.verification.make_perturbed_reference
            if make is None:
                raise ValueError(f"{spec.name} has no float32-perturbed reference")
            r = reference_vs(spec, functools.partial(make, copy=0), episodes, seed,
                             settings=settings)
        else:
            raise ValueError(f"--against must be self, perturbed or translation, got {against}")
        row = {"seed": seed, "rejected": r.counts["rejected"], "tests": r.counts["tests"],
               "alarm": not r.passed, "first": _top(r),
               "min_p_adjusted": min(t["p_adjusted"] for t in r.data["tests"]),
               "smallest_p": _smallest(r.data["tests"]),
               "seconds": round(time.perf_counter() - t0, 1)}
        print(json.dumps(row), flush=True)
        runs.append(row)
    alarms = sum(r["alarm"] for r in runs)
    out = {"env": spec.name, "mode": dict(spec.mode), "policies": list(settings.policies),
           "against": against,
           "repetitions": repetitions,
           "episodes": episodes or settings_for(spec).episodes,  # type: ignore[union-attr]
           "alarms": alarms, "rate": alarms / repetitions,
           "seconds_per_run": round(float(np.mean([r["seconds"] for r in runs])), 1)}
    print(json.dumps(out), flush=True)
    return out


def mutants(spec: EnvSpec, episodes: int | None, lower: bool, seed: int = 0,
            states: int = 300, l3_episodes: int = 20, only: list[str] | None = None
            ) -> list[dict[str, Any]]:
    from envport.verify.runner import verify

    package = type(spec.make()).__module__.rpartition(".")[0]
    table = importlib.import_module(f"{package}.mutants").param_mutants()
    unknown = sorted(set(only or ()) - set(table))
    if unknown:
        raise ValueError(f"--only {', '.join(unknown)}: {spec.name} has no such mutant (its "
                         f"mutants: {', '.join(table)})")
    settings = settings_for(spec)
    if settings is None:
        raise ValueError(f"{spec.name} declares no Verification.rollout_distribution")
    # Every mutant is run on this seed against the same reference episodes (their seeds do not
    # depend on the translation): drawn once, for the first mutant, and reused.
    cache = ReferenceCache(spec, settings)
    rows = []
    # --only's order (the mutants most worth measuring first), else the table's.
    for name in only or table:
        params = table[name]
        t0 = time.perf_counter()
        env = spec.make(**params)
        row: dict[str, Any] = {"mutant": name}
        if lower:
            rep = verify(spec, ("interaction", "rollout", "distribution"), env=env, seed=seed,
                         states=states, episodes=l3_episodes)
            row.update({k: v.passed for k, v in rep.layers.items()})
        hits = cache.hits
        r = check_rollout_distribution(spec, episodes, seed, env=env, settings=settings,
                                       cache=cache)
        first = r.failures[0].message if r.failures else ""
        row.update({LAYER: r.passed, "rejected": r.counts["rejected"],
                    "tests": r.counts["tests"], "killed": not r.passed,
                    "by": first[first.find("["):][:200],
                    "min_p_adjusted": min(t["p_adjusted"] for t in r.data["tests"]),
                    "smallest_p": _smallest(r.data["tests"]),
                    "reference_reused": cache.hits > hits,
                    "seconds": round(time.perf_counter() - t0, 1)})
        print(json.dumps(row), flush=True)
        rows.append(row)
    killed = sum(r["killed"] for r in rows)
    n = episodes or settings_for(spec).episodes  # type: ignore[union-attr]
    print(json.dumps({"env": spec.name, "mode": dict(spec.mode), "episodes": n,
                      "mutants": len(rows), "killed": killed}), flush=True)
    return rows


def compile_once_per_program() -> None:
    """A persistent compilation cache for this process (unless one is configured): the param
    mutants' batched steps are one program (params are its arguments), compiled once instead of
    once a mutant (a HalfCheetah float64 compile is minutes on 2 cores)."""
    import jax

    if getattr(jax.config, "jax_compilation_cache_dir", None):
        return
    folder = tempfile.mkdtemp(prefix="envport-horizon-xla-")
    atexit.register(shutil.rmtree, folder, True)
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m envport.verify.horizon_study")
    sub = p.add_subparsers(dest="command", required=True)

    def option_flag(q: argparse.ArgumentParser) -> None:
        q.add_argument("-o", "--option", action="append", metavar="KEY=VALUE",
                       help="a mode of the environment, as `envport verify -o`")

    c = sub.add_parser("calibrate")
    c.add_argument("env")
    option_flag(c)
    c.add_argument("--against", choices=("self", "perturbed", "translation"), default="self")
    c.add_argument("--repetitions", type=int, default=20)
    c.add_argument("--episodes", type=int)
    c.add_argument("--first-seed", type=int, default=0)
    c.add_argument("--policies", nargs="+", metavar="POLICY",
                   help="run only these of the layer's policies (a part of its family)")
    m = sub.add_parser("mutants")
    m.add_argument("env")
    option_flag(m)
    m.add_argument("--episodes", type=int)
    m.add_argument("--only", action="append", metavar="NAME",
                   help="run only this mutant (repeatable; a name of param_mutants())")
    m.add_argument("--lower-layers", action="store_true",
                   help="run L2, L3 and the distribution layer on each mutant first")
    args = p.parse_args(argv)
    if args.command == "mutants":
        compile_once_per_program()  # before anything compiles: JAX decides on its first compile
    try:
        spec = with_mode(get_spec(args.env), args.option)
        if args.command == "calibrate":
            calibrate(spec, args.against, args.repetitions, args.episodes, args.first_seed,
                      args.policies)
        else:
            mutants(spec, args.episodes, args.lower_layers, only=args.only)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def with_mode(spec: EnvSpec, options: list[str] | None) -> EnvSpec:
    """``spec`` in the mode of ``-o KEY=VALUE`` flags; a float64 mode needs JAX's x64 on
    (ValueError saying so, rather than a float32 run reported as float64)."""
    if not options:
        return spec
    out = spec.with_options(**parse_options(options))
    if "float64" in {str(v) for v in out.mode.values()}:
        import jax

        if not jax.config.read("jax_enable_x64"):
            raise ValueError(f"-o {' -o '.join(options)}: float64 needs JAX's x64 mode "
                             "(run with JAX_ENABLE_X64=1)")
    return out


if __name__ == "__main__":
    sys.exit(main())
