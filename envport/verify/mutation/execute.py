"""Running mutants: each in a worker process, every layer in every declared mode.

Each mutant runs in a worker process (fresh JAX state; a mutant that hangs or crashes the
interpreter cannot take the run down), ``workers`` at a time, each worker taking a chunk of
mutants so the JAX import is paid once per chunk. In the worker the hierarchy runs lowest layer
first, each layer in every mode the environment declares (``EnvSpec.modes``: a mutant that only
changes a non-default mode is killed there, not called equivalent), until a layer fails.

With ``ray`` (``envport mutate ENV --ray ADDRESS``), each mutant is a Ray task instead
(:func:`_ray_mutant`): the same verdicts for the same mutants and seed, with the same per-mutant
timeout (the task is cancelled, its worker process killed) and a worker process that dies on a
mutant recorded as a crash after Ray's retry (a lost node is retried, not blamed on the mutant).

Each verdict is written to the run's journal as it arrives (:mod:`journal`); a run that finds
the journal of the same run decides only the mutants it has no verdict for. With the plan's
``components``, the property layer of each mutant is the environment's L1 component checks
alone (:func:`check_components`), after a control run of them on the original.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from envport.scale import own_path
from envport.verify.layers import LAYERS
from envport.verify.mutation.apply import applied
from envport.verify.mutation.equivalence import (
    check_known_table,
    compiled_programs,
    explain_equivalence,
    fingerprint,
    float_boundary,
)
from envport.verify.mutation.generate import (
    OPERATORS,
    Mutant,
    MutantSource,
    generate,
    sample,
)
from envport.verify.mutation.journal import Journal, package_digest
from envport.verify.mutation.recorded import check as check_recorded
from envport.verify.mutation.recorded import load as load_recorded
from envport.verify.mutation.report import MutationReport, Progress
from envport.verify.report import Failure, LayerResult

# Every object a mutant put in a module, kept for the worker's life when component checks run:
# a check may key what it compiled on the ids of the engine's objects (tcg-pocket's does), and
# CPython reuses a freed object's id, so a later mutant of the same statement could look like
# the one before it.
_HELD: list[list[Any]] = []


def _first_failure(report: Any) -> tuple[str, str] | None:
    for name in LAYERS:
        r = report.layers.get(name)
        if r is not None and not r.passed:
            f = r.failures[0] if r.failures else None
            return name, (f"{f.test_id}: {f.message}" if f else "failed")[:300]
    return None


def check_components(spec: Any, first_only: bool = True) -> LayerResult:
    """The environment's L1 component checks (``Verification.components``) alone, as the
    property layer: each raises AssertionError on a difference from the reference; any other
    exception propagates (a crash). ``first_only``: stop at the first failing check (a
    mutant's verdict needs one). JAX's caches are cleared first: a check's module-level jitted
    functions would otherwise keep the code they traced before the mutant was applied."""
    import jax

    jax.clear_caches()
    t0 = time.perf_counter()
    failures: list[Failure] = []
    checks = dict(spec.verification.components)
    for name, check in checks.items():
        try:
            check()
        except AssertionError as e:
            failures.append(Failure(layer="property", test_id=f"property[component:{name}]",
                                    message=str(e)[:2000]))
            if first_only:
                break
    return LayerResult("property", passed=not failures, counts={"components": len(checks)},
                       failures=failures, seconds=time.perf_counter() - t0,
                       notes=["component checks only (the mutation plan's components)"])


def mode_specs(spec: Any) -> list[Any]:
    """``spec`` in every mode it declares, the default first."""
    return [spec.with_options(**mode) for mode in spec.declared_modes()]


def run_mutant(specs: list[Any], module: Any, ms: MutantSource,
               original: dict[str, dict[str, str]], sizes: dict[str, Any], seed: int,
               original_programs: Callable[[], dict[str, Any]] | None = None,
               layers: tuple[str, ...] = LAYERS, recorded: list[Any] | None = None,
               eager: bool = False, components: bool = False,
               modules: tuple[Any, ...] = (),
               rollout_sources: tuple[str, ...] = ()) -> dict[str, Any]:
    """Apply one mutant and run the hierarchy on it, lowest layer first, each layer in every
    mode of ``specs`` (:func:`mode_specs`), until one kills it; a survivor is examined for
    equivalence. ``original``: the original's fingerprint per mode name. ``layers``: the layers
    run (the translation's ``mutation_plan``); ``recorded``: L2 cases with the reference's
    results recorded once for the run (:mod:`recorded`), used for the default mode's L2;
    ``eager``: the recorded L2 runs op by op (``jax.disable_jit``), not compiled (the other
    layers do not run op by op: L3 crashed so); ``components``: the property layer is the
    component checks alone (:func:`check_components`, once: they take no mode), and they run
    on a mutant with the original's program too (they call the engine's functions directly),
    which is called equivalent only if it passes them. ``modules``: the translation's other
    modules, whose import-time copies of what the mutant changes are made again
    (:func:`apply.applied`). ``rollout_sources``: ``"module:factory"`` references whose
    episodes L3 plays too, after the default mode's (:func:`source_spec`)."""
    import jax

    from envport.verify.runner import verify

    t0 = time.perf_counter()
    result: dict[str, Any] = {**ms.mutant.to_json(), "killed_by": None, "detail": "",
                              "mode": None, "equivalent": False, "equivalence": ""}
    path = inspect.getfile(module)
    with applied(module, ms, modules) as new_objects:
        if components:
            _HELD.append(new_objects)
        try:
            envs = {s.mode_name: s.make() for s in specs}
        except Exception as e:
            result.update(killed_by="property", detail=f"construction fails: {e}"[:300])
            result["seconds"] = round(time.perf_counter() - t0, 2)
            return result
        mine = {mode: fingerprint(env) for mode, env in envs.items()}
        same = all("error" not in fp for fp in mine.values()) and mine == original
        no_jit = jax.disable_jit() if eager else contextlib.nullcontext()
        report: Any
        for layer in (("property",) if components else ()) if same else layers:
            if result["killed_by"]:
                break
            if layer == "property" and components:
                try:
                    report = _Recorded(check_components(specs[0]))
                except Exception as e:  # as below: a crash on a mutant is a detection
                    result.update(killed_by=layer, mode=specs[0].mode_name,
                                  detail=f"crash: {type(e).__name__}: {e}"[:300])
                    break
                failure = _first_failure(report)
                if failure is not None:
                    result.update(killed_by=failure[0], detail=failure[1],
                                  mode=specs[0].mode_name)
                continue
            # every mode, then (L3) the episodes of each rollout source, in the default mode
            runs = [(s, "") for s in specs] + ([
                (source_spec(specs[0], t), f"{t.rpartition(':')[2]}: ") for t in rollout_sources]
                if layer == "rollout" else [])
            for s, label in runs:
                try:
                    if layer == "interaction" and recorded is not None and s is specs[0]:
                        with no_jit:  # only the recorded L2: the other layers crash op by op
                            report = _Recorded(check_recorded(s, envs[s.mode_name], recorded,
                                                              seed))
                    else:
                        report = verify(s, (layer,), env=envs[s.mode_name], seed=seed, **sizes)
                except Exception as e:  # the verifier crashing on a mutant is a detection too
                    result.update(killed_by=layer, mode=s.mode_name,
                                  detail=f"{label}crash: {type(e).__name__}: {e}"[:300])
                    break
                failure = _first_failure(report)
                if failure is not None:
                    result.update(killed_by=failure[0], detail=f"{label}{failure[1]}"[:300],
                                  mode=s.mode_name)
                    break
    if components:  # the checks' jitted functions hold the mutant's traces: drop them
        jax.clear_caches()
    if same and result["killed_by"] is None:
        result.update(equivalent=True, equivalence_kind="program", equivalence=(
            "same program in every declared mode: the jaxprs of reset, sample_draws, "
            "transition and step (params traced), the spaces and flags are identical to the "
            "original's (the mutated code is unreachable, or is evaluated at trace time to "
            "the same value), so no test can tell them apart"
            + (", and it passes every component check" if components else "")))
        result["seconds"] = round(time.perf_counter() - t0, 2)
        return result
    if result["killed_by"] is None and original_programs is not None:
        # The original is examined with the mutant NOT applied: every environment looks its
        # module's functions up at call time, the original's included.
        ref = original_programs()
        boundary = float_boundary(ref["envs"][specs[0].mode_name], ms.mutant, path)
        with applied(module, ms, modules):
            envs = {s.mode_name: s.make() for s in specs}
            kind, why = explain_equivalence(specs[0], envs, ms.mutant, path, ref, boundary)
        if why:
            result.update(equivalent=True, equivalence=why, equivalence_kind=kind)
    result["seconds"] = round(time.perf_counter() - t0, 2)
    return result


def source_spec(spec: Any, target: str) -> Any:
    """``spec`` with the reference ``target`` (``"module:factory"``, of the same kind: a plan's
    ``rollout_sources``), whose resets start other episodes; the translation starts each from
    the reference's first state, as L3 always does."""
    import dataclasses

    from envport.core.registry import lazy

    return dataclasses.replace(spec, make_reference=lazy(target))


class _Recorded:
    """A one-layer report (what :func:`_first_failure` reads) of the recorded L2."""

    def __init__(self, result: Any) -> None:
        self.layers = {result.name: result}


def _digest(module: Any) -> str:
    import hashlib

    return hashlib.sha256(Path(inspect.getfile(module)).read_bytes()).hexdigest()


def mutation_plan(spec: Any) -> dict[str, Any]:
    """How ``envport mutate`` scores a translation, from its class's optional ``mutation_plan``
    (a mapping): ``modules``, the modules whose source is mutated (default: the translation's
    own module; a translation whose step lives in other modules names them); ``layers``, the
    layers run on each mutant, lowest first (default: all, :data:`LAYERS`);
    ``recorded_interaction``, L2 against reference steps recorded once per run
    (:mod:`recorded`; for a reference too slow to step again for every mutant); ``eager``,
    the recorded L2 runs op by op (``jax.disable_jit``) where one XLA compilation of a large step
    costs more than running it uncompiled; the original must then pass the recorded L2 op by op
    too (checked once per worker), so that a kill is the mutant's and not the mode's;
    ``interaction_sources``, ``"module:factory"`` references whose resets add recorded L2 cases
    (:func:`recorded.record`; only with ``recorded_interaction``); ``rollout_sources``,
    ``"module:factory"`` references whose episodes L3 plays too (:func:`source_spec`: battles
    no reset of the spec's reference starts; the original must pass them, checked once per
    worker); ``components``, the
    property layer of each mutant is the environment's ``Verification.components`` alone, run
    first (without the generic properties, whose compilations make L1 too dear per mutant;
    "property" is added to ``layers`` if absent), its kills counted under "property"."""
    cls = type(spec.make())
    plan = dict(getattr(cls, "mutation_plan", None) or {})
    unknown = sorted(set(plan) - {"modules", "layers", "recorded_interaction", "eager",
                                  "interaction_sources", "components", "rollout_sources"})
    if unknown:
        raise ValueError(f"{cls.__name__}.mutation_plan: unknown keys {unknown}")
    layers = tuple(plan.get("layers") or LAYERS)
    bad = sorted(set(layers) - set(LAYERS))
    if bad:
        raise ValueError(f"{cls.__name__}.mutation_plan: unknown layers {bad}")
    components = bool(plan.get("components", False))
    if components:
        if not spec.verification.components:
            raise ValueError(f"{cls.__name__}.mutation_plan: components, but {spec.name} "
                             "declares no Verification.components")
        layers = ("property", *layers)
    sources = tuple(plan.get("interaction_sources") or ())
    if sources and not plan.get("recorded_interaction"):
        raise ValueError(f"{cls.__name__}.mutation_plan: interaction_sources need "
                         "recorded_interaction")
    rollout_sources = tuple(plan.get("rollout_sources") or ())
    if rollout_sources and "rollout" not in layers:
        raise ValueError(f"{cls.__name__}.mutation_plan: rollout_sources need the rollout layer")
    for key, names in (("interaction_sources", sources), ("rollout_sources", rollout_sources)):
        if any(":" not in x for x in names):
            raise ValueError(f"{cls.__name__}.mutation_plan: {key} are 'module:factory' names, "
                             f"got {list(names)}")
    return {"modules": list(plan.get("modules") or [cls.__module__]),
            "layers": tuple(x for x in LAYERS if x in layers),
            "recorded_interaction": bool(plan.get("recorded_interaction", False)),
            "eager": bool(plan.get("eager", False)),
            "interaction_sources": sources, "components": components,
            "rollout_sources": rollout_sources}


def translation_modules(spec: Any) -> list[Any]:
    """The modules ``envport mutate`` mutates (:func:`mutation_plan`)."""
    return [importlib.import_module(m) for m in mutation_plan(spec)["modules"]]


def translation_module(spec: Any) -> Any:
    """The first of :func:`translation_modules` (the translation's own module by default)."""
    return translation_modules(spec)[0]


def generate_all(modules: list[Any], operators: tuple[str, ...]) -> list[MutantSource]:
    """Every mutant of every module; with several modules, ids are ``<file stem>:m001``..."""
    out: list[MutantSource] = []
    for module in modules:
        for ms in generate(module, operators):
            ms.mutant.module = module.__name__
            if len(modules) > 1:
                ms.mutant.id = f"{module.__name__.rsplit('.', 1)[-1]}:{ms.mutant.id}"
            out.append(ms)
    return out


class _Original:
    """What a worker holds for all its mutants: the environment in every mode and the
    original's fingerprints (its compiled programs only once a mutant survives)."""

    def __init__(self, env: str, modules: dict[str, str], jax_cache: str | None,
                 layers: tuple[str, ...] = LAYERS, recorded: str | None = None,
                 eager: bool = False, components: bool = False,
                 sizes: dict[str, Any] | None = None, seed: int = 0) -> None:
        import jax

        from envport.verify.runner import verify

        if jax_cache:  # unchanged functions (reset...) compile once for all mutants
            jax.config.update("jax_compilation_cache_dir", jax_cache)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
        from envport.core.registry import spec as get_spec

        spec = get_spec(env)  # first: finding it puts an $ENVPORT_ENV_PATH folder on sys.path
        self.modules = {name: importlib.import_module(name) for name in modules}
        for name, module in self.modules.items():
            if _digest(module) != modules[name]:  # the mutants were made from another version
                raise RuntimeError(f"{inspect.getfile(module)} changed since its mutants were "
                                   "generated (or this worker imports another envport); rerun")
        self.layers = tuple(layers)
        self.components = components
        self.recorded = load_recorded(Path(recorded)) if recorded else None
        self.specs = mode_specs(spec)
        self.envs = {s.mode_name: s.make() for s in self.specs}
        self.eager = eager
        if eager and self.recorded is not None:  # the control: the original op by op
            with jax.disable_jit():
                control = check_recorded(self.specs[0], self.envs[self.specs[0].mode_name],
                                         self.recorded, 0)
            if not control.passed:
                raise RuntimeError("the original translation fails the recorded L2 run op by op "
                                   f"(jax.disable_jit): {control.notes}; eager mutation "
                                   "scoring would blame the mode on the mutants")
        self.rollout_sources = (mutation_plan(spec)["rollout_sources"]
                                if "rollout" in self.layers else ())
        for target in self.rollout_sources:  # the control: the original plays them alike
            report = verify(source_spec(self.specs[0], target), ("rollout",),
                            env=self.envs[self.specs[0].mode_name], seed=seed,
                            **(sizes or {}))
            failure = _first_failure(report)
            if failure is not None:
                raise RuntimeError(f"the original translation fails L3 on {target}'s episodes "
                                   f"({failure[1]}): scoring mutants with them would count the "
                                   "original's failure as kills")
        self.original = {mode: fingerprint(e) for mode, e in self.envs.items()}
        self._programs: dict[str, Any] = {}

    def programs(self) -> dict[str, Any]:  # compiled once, and only if a mutant survives
        if not self._programs:  # (called with no mutant applied)
            self._programs.update(
                programs={m: compiled_programs(e) for m, e in self.envs.items()},
                fingerprint=self.original, envs=self.envs)
        return self._programs

    def run(self, item: dict[str, Any], sizes: dict[str, Any], seed: int) -> dict[str, Any]:
        ms = MutantSource(Mutant(**item["mutant"]), item["statement_code"])
        module = self.modules[ms.mutant.module] if ms.mutant.module else next(
            iter(self.modules.values()))
        try:
            return run_mutant(self.specs, module, ms, self.original, sizes, seed,
                              self.programs, self.layers, self.recorded, self.eager,
                              self.components, tuple(self.modules.values()),
                              self.rollout_sources)
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            return {**ms.mutant.to_json(), "killed_by": "property", "equivalent": False,
                    "mode": None, "equivalence": "",
                    "detail": f"crash: {type(e).__name__}: {e}"[:300]}


def _worker(task_file: str) -> int:
    """Worker process: mutants of one chunk, one JSON line per event on stdout."""
    task = json.loads(Path(task_file).read_text())
    try:
        original = _Original(task["env"], task["modules"], task.get("jax_cache"),
                             tuple(task.get("layers") or LAYERS), task.get("recorded"),
                             bool(task.get("eager")), bool(task.get("components")),
                             task["sizes"], task["seed"])
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 3
    for item in task["mutants"]:
        print(json.dumps({"event": "start", "id": item["mutant"]["id"]}), flush=True)
        result = original.run(item, task["sizes"], task["seed"])
        print(json.dumps({"event": "result", "result": result}), flush=True)
    return 0


# A Ray worker process runs many mutant tasks one after the other: it keeps the original's
# environments and fingerprints between them, as a local worker does over its chunk.
_RAY_ORIGINALS: dict[str, _Original] = {}


def _ray_mutant(task: dict[str, Any]) -> dict[str, Any]:
    """A Ray task: one mutant's verdict (what a local worker prints as its result event)."""
    import tempfile

    key = json.dumps([task["env"], task["modules"], task.get("layers"),
                      task.get("components"), task["sizes"], task["seed"]], sort_keys=True)
    if key not in _RAY_ORIGINALS:
        first = sorted(task["modules"].values())[0]
        cache = Path(tempfile.gettempdir()) / f"envport-mutate-jax-{first[:16]}"
        # a recorded L2 lives in the starting machine's temporary folder: Ray tasks run L2 live
        _RAY_ORIGINALS[key] = _Original(task["env"], task["modules"], str(cache),
                                        tuple(task.get("layers") or LAYERS),
                                        components=bool(task.get("components")),
                                        sizes=task["sizes"], seed=task["seed"])
    return _RAY_ORIGINALS[key].run(task["item"], task["sizes"], task["seed"])


def run_mutation(env_name: str, *, max_mutants: int | None = None, workers: int = 2,
                 operators: tuple[str, ...] = tuple(OPERATORS), seed: int = 0,
                 states: int = 1000, episodes: int = 4, examples: int = 4, samples: int = 10000,
                 chunk: int = 8, timeout_s: float = 300.0, progress: Progress | None = None,
                 only: list[str] | None = None, ray: str | None = None,
                 journal: str | Path | None = None, restart: bool = False,
                 eager: bool | None = None) -> MutationReport:
    """Generate mutants of ``env_name``'s translation and run the hierarchy on each, in every
    mode it declares: in ``workers`` local processes, or as Ray tasks on the cluster at ``ray``
    (an address, or ``"auto"``; ``workers`` and ``chunk`` then do not apply). Bad settings raise
    ValueError before any work starts.

    ``journal``: a JSON-lines file each verdict is written to as it arrives (:mod:`journal`);
    if it holds verdicts of the same run (same settings, sample and code) only the other
    mutants are run, and a journal of another run raises :class:`journal.JournalMismatch` (a
    ValueError naming the flag), unless ``restart`` discards it. Ctrl-C (KeyboardInterrupt)
    stops the run: the report returned holds the verdicts finished so far, ``interrupted``.

    ``eager``: overrides the plan's ``eager`` (None: the plan's). Which is cheaper depends on
    the machine: op by op wins where one compilation of the step takes minutes (loaded cores),
    compiled wins on quiet ones."""
    from envport.core.registry import spec as get_spec
    from envport.scale import check_address, require_ray

    spec = get_spec(env_name)
    if spec.host:
        raise ValueError(f"{env_name} is a host translation (backend 'host'): envport mutate "
                         "mutates a JAX translation's Python source and has no mutants of a "
                         "host translation's code (the Game Boy's is Rust)")
    sizes = {"states": states, "episodes": episodes, "examples": examples, "samples": samples}
    for name, value in {**sizes, "workers": workers, "chunk": chunk}.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if max_mutants is not None and max_mutants < 1:
        raise ValueError(f"max_mutants must be at least 1 (or None for all), got {max_mutants}")
    if not timeout_s > 0:
        raise ValueError(f"timeout must be positive, got {timeout_s}")
    if ray is not None:
        check_address(ray)
        require_ray()
    unknown_ops = sorted(set(operators) - set(OPERATORS))
    if unknown_ops or not operators:
        raise ValueError(f"unknown operator(s) {unknown_ops or '(none given)'}; known: "
                         f"{', '.join(OPERATORS)}")
    plan = mutation_plan(spec)
    if eager is not None:
        plan["eager"] = eager
    modules = translation_modules(spec)
    names = ", ".join(Path(inspect.getfile(m)).name for m in modules)
    every = generate_all(modules, operators)
    if spec.verification.equivalent_mutants is not None:
        check_known_table(spec.verification.equivalent_mutants(),
                          [(f"{m.mutant.module.rsplit('.', 1)[-1]}.py", m.mutant) for m in every])
    if only:
        ids = {m.mutant.id for m in every}
        missing = [i for i in only if i not in ids]
        if missing:
            raise ValueError(f"no mutant {', '.join(missing)} among the {len(every)} of "
                             f"{names} (`envport mutate ENV --list` lists their ids)")
        chosen = [m for m in every if m.mutant.id in only]
    else:
        chosen = sample(every, max_mutants, seed)
    if not chosen:
        raise ValueError(f"no mutants to run: {names} gives none "
                         f"for operators {', '.join(operators)}")
    settings: dict[str, Any] = {
        **sizes, "seed": seed, "workers": workers, "operators": list(operators),
        "max_mutants": max_mutants, "modes": [s.mode_name for s in mode_specs(spec)],
        "layers": list(plan["layers"]), "modules": plan["modules"],
        "recorded_interaction": plan["recorded_interaction"] and ray is None
        and "interaction" in plan["layers"], "eager": plan["eager"],
        "interaction_sources": list(plan["interaction_sources"]),
        "rollout_sources": list(plan["rollout_sources"]),
        "components": plan["components"], "only": sorted(only) if only else None}
    if ray is not None:
        settings["ray"] = ray
    report = MutationReport(env_name, ", ".join(inspect.getfile(m) for m in modules),
                            generated=len(every), settings=settings)
    digests = {m.__name__: _digest(m) for m in modules}
    # Run in a seeded random order (reported in source order): the verdicts of a run cut
    # short are a random subsample of the sample, not the first module's mutants.
    runs = list(chosen)
    random.Random(seed).shuffle(runs)
    # What decides a verdict (not workers, timeout or --ray): a journal of another run is refused
    header = {"env": env_name, **{k: v for k, v in settings.items()
                                  if k not in ("workers", "ray", "recorded_interaction")},
              "recorded_interaction": plan["recorded_interaction"],
              "digests": digests, "code": package_digest(inspect.getfile(modules[0])),
              "mutants": [m.mutant.id for m in runs]}
    jr = Journal(journal) if journal is not None else None
    records = jr.open(header, restart) if jr is not None else []
    decided = {r["result"]["id"]: r["result"] for r in records if r.get("kind") == "verdict"}
    report.resumed = len(decided)
    for result in decided.values():
        report.results.append(result)
        if progress:
            progress(result, len(report.results), len(chosen))
    runs = [m for m in runs if m.mutant.id not in decided]
    t0 = time.perf_counter()
    results: Iterator[dict[str, Any]] | None = None
    try:
        if plan["components"] and runs and not any(
                r.get("kind") == "control" and r.get("passed") for r in records):
            control = _control(env_name, timeout_s)
            if jr is not None:
                jr.add("control", control)
            if not control["passed"]:
                raise ValueError(f"the original translation of {env_name} fails its own "
                                 f"component checks ({control['detail']}): scoring mutants "
                                 "with them would count the original's failure as kills")
        with tempfile.TemporaryDirectory(prefix="envport-mutate-") as tmp:
            recorded = None
            if settings["recorded_interaction"] and runs:
                from envport.verify.mutation.recorded import record, save

                recorded = Path(tmp) / "interaction-cases.pkl"
                save(record(spec, states, seed, plan["interaction_sources"]), recorded)
            if not runs:
                results = iter(())
            elif ray is None:
                results = _Pool(env_name, digests, sizes, seed, Path(tmp), workers, chunk,
                                timeout_s, plan["layers"], recorded, plan["eager"],
                                plan["components"]).run(runs)
            else:
                results = _ray_verdicts(ray, env_name, digests, sizes, seed, timeout_s,
                                        runs, plan["layers"], plan["components"])
            for result in results:
                if jr is not None:
                    jr.add("verdict", {"result": result})
                report.results.append(result)
                if progress:
                    progress(result, len(report.results), len(chosen))
    except KeyboardInterrupt:  # what was finished is in the journal and in the report
        report.interrupted = True
    finally:
        close = getattr(results, "close", None)
        if close is not None:  # a generator left mid-way: its finally stops the workers
            close()
    order = {m.mutant.id: i for i, m in enumerate(chosen)}
    report.results.sort(key=lambda r: order[r["id"]])
    report.seconds = time.perf_counter() - t0
    report.planned = len(chosen)
    return report


def _control(env: str, timeout_s: float) -> dict[str, Any]:
    """The component checks on the original translation, in a child process (the parent keeps
    no JAX state): ``{"passed", "detail", "seconds"}``."""
    t0 = time.perf_counter()
    proc_env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": own_path()}
    proc_env.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "envport.verify.mutation.execute", "--control", env],
            capture_output=True, text=True, env=proc_env, stdin=subprocess.DEVNULL,
            timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the component checks of the original {env} ran past the "
                           f"per-mutant timeout ({timeout_s:.0f} s, --timeout)") from None
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    try:
        out = json.loads(last)
    except json.JSONDecodeError:
        raise RuntimeError(f"the component checks of the original {env} crashed "
                           f"(exit {proc.returncode}):\n{proc.stderr[-3000:]}") from None
    return {**out, "seconds": round(time.perf_counter() - t0, 1)}


def _control_main(env: str) -> int:
    from envport.core.registry import spec as get_spec

    result = check_components(get_spec(env), first_only=False)
    detail = "; ".join(f"{f.test_id}: {f.message}"[:300] for f in result.failures)
    print(json.dumps({"passed": result.passed, "detail": detail,
                      "checks": result.counts["components"]}), flush=True)
    return 0


def _verdict(ms: MutantSource, killed_by: str, detail: str) -> dict[str, Any]:
    """The result of a mutant that gave none itself (it hung, or its worker died)."""
    return {**ms.mutant.to_json(), "killed_by": killed_by, "detail": detail, "mode": None,
            "equivalent": False, "equivalence": ""}


CRASH = "the worker process died while verifying it (crash)"


def _ray_verdicts(address: str, env: str, modules: dict[str, str], sizes: dict[str, int],
                  seed: int, timeout_s: float, mutants: list[MutantSource],
                  layers: tuple[str, ...] = LAYERS, components: bool = False
                  ) -> Iterator[dict[str, Any]]:
    """Each mutant a Ray task, at most one per CPU of the cluster at a time; verdicts as they
    come, recorded as the local pool records them (a timeout, a crash)."""
    from envport.scale import RayExecutor

    ex = RayExecutor(address)
    tasks = [{"env": env, "modules": modules, "layers": list(layers), "sizes": sizes,
              "seed": seed, "components": components,
              "item": {"mutant": m.mutant.to_json(), "statement_code": m.statement_code}}
             for m in mutants]
    # As in a local worker: one XLA thread pool per task, the tasks are the parallelism.
    env_vars = {"XLA_FLAGS": os.environ.get("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false"),
                "PYTHONUNBUFFERED": "1"}
    try:
        # One retry: a worker that dies twice on the same mutant is the mutant's doing (the
        # local pool calls it a crash at once); a single loss may be the cluster's.
        for out in ex.outcomes(_ray_mutant, tasks, timeout_s=timeout_s, max_retries=1,
                               env_vars=env_vars):
            ms = mutants[out.index]
            if out.failure is None:
                yield out.value
            elif out.failure == "timeout":
                yield _verdict(ms, "timeout", f"no verdict within {timeout_s:.0f} s")
            elif out.failure == "crash":
                yield _verdict(ms, "property", CRASH)
            else:  # the task itself failed (not the mutant: run_mutant catches its errors)
                raise RuntimeError(f"the Ray task of mutant {ms.mutant.id} failed: "
                                   f"{out.detail}")
    finally:
        ex.close()


class _Pool:
    """Worker processes over chunks of mutants; a mutant that runs past the timeout is recorded
    as killed by ``timeout`` (a hang is a detectable bug) and its worker is replaced."""

    def __init__(self, env: str, modules: dict[str, str], sizes: dict[str, int], seed: int,
                 tmp: Path, workers: int, chunk: int, timeout_s: float,
                 layers: tuple[str, ...] = LAYERS, recorded: Path | None = None,
                 eager: bool = False, components: bool = False):
        self.env, self.modules, self.sizes, self.seed = env, modules, sizes, seed
        self.layers, self.recorded, self.eager = layers, recorded, eager
        self.components = components
        self.tmp, self.workers, self.chunk, self.timeout_s = tmp, workers, chunk, timeout_s
        self.jax_cache = str(tmp / "jax-cache")

    def _launch(self, batch: list[MutantSource], n: int) -> subprocess.Popen[str]:
        task = self.tmp / f"task-{n}.json"
        task.write_text(json.dumps({
            "env": self.env, "modules": self.modules, "sizes": self.sizes, "seed": self.seed,
            "jax_cache": self.jax_cache, "layers": list(self.layers),
            "recorded": str(self.recorded) if self.recorded else None, "eager": self.eager,
            "components": self.components,
            "mutants": [{"mutant": m.mutant.to_json(), "statement_code": m.statement_code}
                        for m in batch]}))
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": own_path()}
        # One XLA thread pool per worker: the workers themselves are the parallelism.
        env.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
        with open(self.tmp / f"task-{n}.log", "w") as log:  # the child keeps its own handle
            return subprocess.Popen(
                [sys.executable, "-m", "envport.verify.mutation.execute", "--worker", str(task)],
                stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                env=env, start_new_session=True)

    def run(self, mutants: list[MutantSource]) -> Iterator[dict[str, Any]]:
        import queue

        pending = list(mutants)
        by_id = {m.mutant.id: m for m in mutants}
        events: queue.Queue[tuple[int, dict[str, Any] | None]] = queue.Queue()
        running: dict[int, dict[str, Any]] = {}
        launched = barren = 0

        def verdict(mid: str, killed_by: str, detail: str) -> dict[str, Any]:
            return _verdict(by_id[mid], killed_by, detail)

        def reader(n: int, proc: subprocess.Popen[str]) -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                with contextlib.suppress(json.JSONDecodeError):
                    events.put((n, json.loads(line)))
            proc.wait()
            events.put((n, None))

        def start() -> None:
            nonlocal launched
            # Chunks shrink at the end so the last mutants are shared by every worker.
            size = max(1, min(self.chunk, -(-len(pending) // self.workers)))
            batch, pending[:] = pending[:size], pending[size:]
            launched += 1
            proc = self._launch(batch, launched)
            running[launched] = {"proc": proc, "todo": [m.mutant.id for m in batch],
                                 "current": None, "since": time.monotonic(), "done": 0}
            threading.Thread(target=reader, args=(launched, proc), daemon=True).start()

        try:
            while pending or running:
                while pending and len(running) < self.workers:
                    start()
                try:
                    n, got = events.get(timeout=1.0)
                except queue.Empty:  # nothing said: look for a mutant past its time
                    for late in running.values():
                        if late["current"] and time.monotonic() - late["since"] > self.timeout_s:
                            with contextlib.suppress(ProcessLookupError):
                                os.killpg(late["proc"].pid, signal.SIGKILL)
                            mid, late["current"] = late["current"], None
                            late["todo"].remove(mid)
                            late["done"] += 1
                            yield verdict(mid, "timeout",
                                          f"no verdict within {self.timeout_s:.0f} s")
                    continue
                w = running.get(n)
                if w is None:
                    continue
                if got is None:  # the worker ended: requeue what it did not finish
                    del running[n]
                    left = list(w["todo"])
                    if w["current"] in left:  # it died on this one: the interpreter crashed
                        left.remove(w["current"])
                        w["done"] += 1
                        yield verdict(w["current"], "property", CRASH)
                    barren = barren + 1 if w["done"] == 0 else 0
                    if barren >= 3:  # workers die before any mutant: a setup problem
                        log = (self.tmp / f"task-{n}.log").read_text()[-3000:]
                        raise RuntimeError(f"mutation workers fail to start:\n{log}")
                    pending[:0] = [by_id[i] for i in left]
                    continue
                if got["event"] == "start":
                    w["current"], w["since"] = got["id"], time.monotonic()
                elif got["event"] == "result":
                    result = got["result"]
                    if result["id"] in w["todo"]:
                        w["todo"].remove(result["id"])
                    w["current"] = None
                    w["done"] += 1
                    yield result
        finally:  # Ctrl-C or an error: no worker outlives the run
            for w in running.values():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(w["proc"].pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m envport.verify.mutation.execute")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--control", help=argparse.SUPPRESS)
    args, _ = p.parse_known_args(argv)
    if args.worker:
        return _worker(args.worker)
    if args.control:
        return _control_main(args.control)
    p.print_usage()
    print("use `envport mutate ENV` (envport.agent.commands)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
