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
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import json
import os
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
from envport.verify.mutation.equivalence import (
    compiled_programs,
    explain_equivalence,
    fingerprint,
    float_boundary,
)
from envport.verify.mutation.generate import (
    OPERATORS,
    Mutant,
    MutantSource,
    applied,
    generate,
    sample,
)
from envport.verify.mutation.report import MutationReport, Progress


def _first_failure(report: Any) -> tuple[str, str] | None:
    for name in LAYERS:
        r = report.layers.get(name)
        if r is not None and not r.passed:
            f = r.failures[0] if r.failures else None
            return name, (f"{f.test_id}: {f.message}" if f else "failed")[:300]
    return None


def mode_specs(spec: Any) -> list[Any]:
    """``spec`` in every mode it declares, the default first."""
    return [spec.with_options(**mode) for mode in spec.declared_modes()]


def run_mutant(specs: list[Any], module: Any, ms: MutantSource,
               original: dict[str, dict[str, str]], sizes: dict[str, Any], seed: int,
               original_programs: Callable[[], dict[str, Any]] | None = None
               ) -> dict[str, Any]:
    """Apply one mutant and run the hierarchy on it, lowest layer first, each layer in every
    mode of ``specs`` (:func:`mode_specs`), until one kills it; a survivor is examined for
    equivalence. ``original``: the original's fingerprint per mode name."""
    from envport.verify.runner import verify

    t0 = time.perf_counter()
    result: dict[str, Any] = {**ms.mutant.to_json(), "killed_by": None, "detail": "",
                              "mode": None, "equivalent": False, "equivalence": ""}
    path = inspect.getfile(module)
    with applied(module, ms):
        try:
            envs = {s.mode_name: s.make() for s in specs}
        except Exception as e:
            result.update(killed_by="property", detail=f"construction fails: {e}"[:300])
            result["seconds"] = round(time.perf_counter() - t0, 2)
            return result
        mine = {mode: fingerprint(env) for mode, env in envs.items()}
        if all("error" not in fp for fp in mine.values()) and mine == original:
            result.update(equivalent=True, equivalence_kind="program", equivalence=(
                "same program in every declared mode: the jaxprs of reset, sample_draws, "
                "transition and step (params traced), the spaces and flags are identical to the "
                "original's (the mutated code is unreachable, or is evaluated at trace time to "
                "the same value), so no test can tell them apart"))
            result["seconds"] = round(time.perf_counter() - t0, 2)
            return result
        for layer in LAYERS:
            for s in specs:
                try:
                    report = verify(s, (layer,), env=envs[s.mode_name], seed=seed, **sizes)
                except Exception as e:  # the verifier crashing on a mutant is a detection too
                    result.update(killed_by=layer, mode=s.mode_name,
                                  detail=f"crash: {type(e).__name__}: {e}"[:300])
                    break
                failure = _first_failure(report)
                if failure is not None:
                    result.update(killed_by=failure[0], detail=failure[1], mode=s.mode_name)
                    break
            if result["killed_by"]:
                break
    if result["killed_by"] is None and original_programs is not None:
        # The original is examined with the mutant NOT applied: every environment looks its
        # module's functions up at call time, the original's included.
        ref = original_programs()
        boundary = float_boundary(ref["envs"][specs[0].mode_name], ms.mutant, path)
        with applied(module, ms):
            envs = {s.mode_name: s.make() for s in specs}
            kind, why = explain_equivalence(specs[0], envs, ms.mutant, path, ref, boundary)
        if why:
            result.update(equivalent=True, equivalence=why, equivalence_kind=kind)
    result["seconds"] = round(time.perf_counter() - t0, 2)
    return result


def _digest(module: Any) -> str:
    import hashlib

    return hashlib.sha256(Path(inspect.getfile(module)).read_bytes()).hexdigest()


def translation_module(spec: Any) -> Any:
    return importlib.import_module(type(spec.make()).__module__)


class _Original:
    """What a worker holds for all its mutants: the environment in every mode and the
    original's fingerprints (its compiled programs only once a mutant survives)."""

    def __init__(self, env: str, module: str, digest: str, jax_cache: str | None) -> None:
        import jax

        if jax_cache:  # unchanged functions (reset...) compile once for all mutants
            jax.config.update("jax_compilation_cache_dir", jax_cache)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
        from envport.core.registry import spec as get_spec

        self.module = importlib.import_module(module)
        if _digest(self.module) != digest:  # the mutants were made from another version
            raise RuntimeError(f"{inspect.getfile(self.module)} changed since its mutants were "
                               "generated (or this worker imports another envport); rerun")
        self.specs = mode_specs(get_spec(env))
        self.envs = {s.mode_name: s.make() for s in self.specs}
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
        try:
            return run_mutant(self.specs, self.module, ms, self.original, sizes, seed,
                              self.programs)
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            return {**ms.mutant.to_json(), "killed_by": "property", "equivalent": False,
                    "mode": None, "equivalence": "",
                    "detail": f"crash: {type(e).__name__}: {e}"[:300]}


def _worker(task_file: str) -> int:
    """Worker process: mutants of one chunk, one JSON line per event on stdout."""
    task = json.loads(Path(task_file).read_text())
    try:
        original = _Original(task["env"], task["module"], task["digest"], task.get("jax_cache"))
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
_RAY_ORIGINALS: dict[tuple[str, str, str], _Original] = {}


def _ray_mutant(task: dict[str, Any]) -> dict[str, Any]:
    """A Ray task: one mutant's verdict (what a local worker prints as its result event)."""
    import tempfile

    key = (task["env"], task["module"], task["digest"])
    if key not in _RAY_ORIGINALS:
        cache = Path(tempfile.gettempdir()) / f"envport-mutate-jax-{task['digest'][:16]}"
        _RAY_ORIGINALS[key] = _Original(*key, str(cache))
    return _RAY_ORIGINALS[key].run(task["item"], task["sizes"], task["seed"])


def run_mutation(env_name: str, *, max_mutants: int | None = None, workers: int = 2,
                 operators: tuple[str, ...] = tuple(OPERATORS), seed: int = 0,
                 states: int = 1000, episodes: int = 4, examples: int = 4, samples: int = 10000,
                 chunk: int = 8, timeout_s: float = 300.0, progress: Progress | None = None,
                 only: list[str] | None = None, ray: str | None = None) -> MutationReport:
    """Generate mutants of ``env_name``'s translation and run the hierarchy on each, in every
    mode it declares: in ``workers`` local processes, or as Ray tasks on the cluster at ``ray``
    (an address, or ``"auto"``; ``workers`` and ``chunk`` then do not apply). Bad settings raise
    ValueError before any work starts."""
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
    module = translation_module(spec)
    every = generate(module, operators)
    if only:
        ids = {m.mutant.id for m in every}
        missing = [i for i in only if i not in ids]
        if missing:
            raise ValueError(f"no mutant {', '.join(missing)} among the {len(every)} of "
                             f"{Path(inspect.getfile(module)).name} (ids m001..m{len(every):03d}"
                             "; `envport mutate ENV --list` lists them)")
        chosen = [m for m in every if m.mutant.id in only]
    else:
        chosen = sample(every, max_mutants, seed)
    if not chosen:
        raise ValueError(f"no mutants to run: {Path(inspect.getfile(module)).name} gives none "
                         f"for operators {', '.join(operators)}")
    settings: dict[str, Any] = {
        **sizes, "seed": seed, "workers": workers, "operators": list(operators),
        "max_mutants": max_mutants, "modes": [s.mode_name for s in mode_specs(spec)]}
    if ray is not None:
        settings["ray"] = ray
    report = MutationReport(env_name, inspect.getfile(module), generated=len(every),
                            settings=settings)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="envport-mutate-") as tmp:
        if ray is None:
            results = _Pool(env_name, module.__name__, sizes, seed, Path(tmp), workers, chunk,
                            timeout_s, _digest(module)).run(chosen)
        else:
            results = _ray_verdicts(ray, env_name, module.__name__, sizes, seed, timeout_s,
                                    _digest(module), chosen)
        for result in results:
            report.results.append(result)
            if progress:
                progress(result, len(report.results), len(chosen))
    order = {m.mutant.id: i for i, m in enumerate(chosen)}
    report.results.sort(key=lambda r: order[r["id"]])
    report.seconds = time.perf_counter() - t0
    return report


def _verdict(ms: MutantSource, killed_by: str, detail: str) -> dict[str, Any]:
    """The result of a mutant that gave none itself (it hung, or its worker died)."""
    return {**ms.mutant.to_json(), "killed_by": killed_by, "detail": detail, "mode": None,
            "equivalent": False, "equivalence": ""}


CRASH = "the worker process died while verifying it (crash)"


def _ray_verdicts(address: str, env: str, module: str, sizes: dict[str, int], seed: int,
                  timeout_s: float, digest: str, mutants: list[MutantSource]
                  ) -> Iterator[dict[str, Any]]:
    """Each mutant a Ray task, at most one per CPU of the cluster at a time; verdicts as they
    come, recorded as the local pool records them (a timeout, a crash)."""
    from envport.scale import RayExecutor

    ex = RayExecutor(address)
    tasks = [{"env": env, "module": module, "digest": digest, "sizes": sizes, "seed": seed,
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

    def __init__(self, env: str, module: str, sizes: dict[str, int], seed: int, tmp: Path,
                 workers: int, chunk: int, timeout_s: float, digest: str):
        self.env, self.module, self.sizes, self.seed = env, module, sizes, seed
        self.digest = digest
        self.tmp, self.workers, self.chunk, self.timeout_s = tmp, workers, chunk, timeout_s
        self.jax_cache = str(tmp / "jax-cache")

    def _launch(self, batch: list[MutantSource], n: int) -> subprocess.Popen[str]:
        task = self.tmp / f"task-{n}.json"
        task.write_text(json.dumps({
            "env": self.env, "module": self.module, "sizes": self.sizes, "seed": self.seed,
            "jax_cache": self.jax_cache, "digest": self.digest,
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
    args, _ = p.parse_known_args(argv)
    if args.worker:
        return _worker(args.worker)
    p.print_usage()
    print("use `envport mutate ENV` (envport.agent.commands)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
