"""The closed translation loop (the paper's Algorithm 1).

    plan = modules of the reference in dependency order, then the environment, then the bridge
    for each module: prompt -> agent -> L1 of the module -> repair prompt ... until it passes
    then the composition: L1 -> L2 -> L3 -> distribution (-> L4 hook); the lowest failing
    layer becomes the repair prompt, until everything passes on the development seed
    then the same hierarchy on held-out seeds (never shown to the agent): the verdict
    then optimisation rounds: measured steps/s -> prompt -> agent -> the whole hierarchy again
    (a change that breaks it is reverted)

An optimisation round is kept only when it is measurably faster: the last verified commit and
the new one are timed interleaved in one run, ``bench_repeats`` times each, and the change stays
only if the speedup's confidence interval lies above 1 (``speed.py``); otherwise it is reverted
and the interval is what the next prompt and the ledger report.

Stops: success, max iterations, budget (USD), wall time, no progress for ``patience``
iterations (a hand-off note is written for a human), Ctrl-C, and, with an agent envport cannot
call (``manual``), after each prompt: the run waits, resumable, for ``--resume``. An agent
failure of the infrastructure (crash, malformed output) is retried without consuming an
iteration. Every agent call is written to the ledger as soon as it returns and every
iteration right after its verification, and the workspace is committed once per iteration, so
``--resume`` continues with nothing lost: an iteration interrupted during verification is
verified on resume, one interrupted during the agent call is re-prompted with the agent's
partial edits in place.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from envport.agent.backends import AgentBackend, AgentRequest, AgentResult, make_backend
from envport.agent.backends.base import run_process
from envport.agent.ledger import Ledger
from envport.agent.plan import ModulePlan, SourceFile, plan_modules, reference_sources
from envport.agent.prompts import render
from envport.agent.workspace import EDITABLE, FROZEN, Workspace
from envport.verify.layers import HIERARCHY
from envport.verify.policies import can_draw_actions, draw_action

LAYER_TITLES = {"property": "L1 property", "interaction": "L2 interaction",
                "rollout": "L3 rollout", "distribution": "distribution", "transfer": "L4 transfer"}
PHASES = ("modules", "compose", "optimise", "done")


# ---------------------------------------------------------------- configuration
@dataclass
class TranslateConfig:
    reference: str  # module:Class implementing envport's Reference protocol
    agent: str  # claude[:MODEL], codex, gemini, aider, openai:MODEL, anthropic:MODEL,
    # scripted:PATH, manual, command:'CLI ... {prompt}'
    workdir: str
    target: str = "jax"
    name: str = ""
    base_url: str | None = None
    agent_args: list[str] = field(default_factory=list)
    price: list[float] | None = None  # USD per Mtok (input, output, cached) overriding the table
    like: str | None = None  # a registered environment whose policies/tolerance are reused
    sources: list[str] = field(default_factory=list)  # extra reference source (modules/files)
    reference_kwargs: dict[str, Any] = field(default_factory=dict)
    tolerance: dict[str, float] | None = None  # {"atol": .., "rtol": ..}
    budget_usd: float | None = None
    max_iterations: int = 50
    max_wall_s: float | None = None
    patience: int = 5
    agent_timeout_s: float = 1800.0
    verify_timeout_s: float = 900.0
    max_infra_retries: int = 3
    sizes: dict[str, int] = field(default_factory=lambda: {
        "examples": 10, "states": 300, "episodes": 20, "samples": 2000})
    seed: int = 0  # the development seed (the agent sees it in repair prompts)
    held_out_seeds: list[int] = field(default_factory=list)  # never shown to the agent
    optimise_rounds: int = 1
    batch_sizes: list[int] = field(default_factory=lambda: [1, 1024])
    bench_steps: int = 200
    bench_repeats: int = 5  # interleaved timings of old and new per optimisation round
    speedup_confidence: float = 0.95  # keep a change only if this interval is above 1
    transfer_check: str | None = None  # module:function(spec, seed) -> LayerResult | bool
    env_class: str = ""
    bridge_class: str = ""
    package: str = "translation"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TranslateConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


class TranslateError(RuntimeError):
    """Bad input: the message says what is wrong and how to fix it (exit code 2)."""


# ---------------------------------------------------------------- loop state
@dataclass
class LoopState:
    phase: str = "modules"
    module_index: int = 0
    prompt_kind: str = "module"  # module | repair | heldout-repair | optimise
    result_path: str | None = None  # the verification the next prompt is built from
    iteration: int = 0  # iterations completed
    best: list[int] = field(default_factory=lambda: [0, 0, 0, 0, 0])
    stall: int = 0
    optimise_round: int = 0
    last_green: str | None = None  # commit verified on development and held-out seeds
    bench_path: str | None = None
    previous: str | None = None  # what the last optimisation round did
    session_id: str | None = None
    last_layers: dict[str, bool] = field(default_factory=dict)
    frozen_edits: list[str] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)
    verified: bool = False  # passed on the held-out seeds at least once

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LoopState:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


# ---------------------------------------------------------------- verification
class Verifier(Protocol):
    def verify(self, *, module: ModulePlan | None, seed: int, sizes: dict[str, int],
               out: Path) -> dict[str, Any]: ...

    def bench(self, out: Path) -> dict[str, Any]: ...

    def compare(self, baseline: str, out: Path) -> dict[str, Any]:
        """The speedup of the workspace over commit ``baseline`` (``speed.speedup_report``)."""
        ...


class SubprocessVerifier:
    """Runs ``python -m envport.agent.harness`` on the workspace: fresh imports of the agent's
    code, its own process group, a timeout; a hang or crash becomes an L1 failure to repair."""

    def __init__(self, run_dir: Path, cfg: TranslateConfig):
        # absolute: the harness runs in the workspace, so a relative --workdir would be
        # resolved against the workspace itself
        self.run_dir, self.cfg = Path(run_dir).resolve(), cfg
        self.workspace = self.run_dir / "workspace"

    def _run(self, args: list[str], out: Path, workspace: Path | None = None
             ) -> tuple[dict[str, Any] | None, str, bool]:
        workspace = workspace or self.workspace
        out = Path(out).resolve()  # the harness's cwd is the workspace
        out.parent.mkdir(parents=True, exist_ok=True)
        out.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "envport.agent.harness", *args, "--workspace",
               str(workspace), "--config", str(workspace / "harness" / "config.json"),
               "--out", str(out), "--jax-cache", str(self.run_dir / ".jax-cache")]
        done = run_process(cmd, workspace, self.cfg.verify_timeout_s, env=child_env())
        log = done.stdout + done.stderr
        (out.with_suffix(".log")).write_text(log)
        if done.exit_code == 2 and not out.exists():
            raise TranslateError(log.strip()[-2000:])
        data = json.loads(out.read_text()) if out.exists() else None
        return data, log, done.timed_out

    def verify(self, *, module: ModulePlan | None, seed: int, sizes: dict[str, int],
               out: Path) -> dict[str, Any]:
        args = ["verify", "--seed", str(seed)]
        args += [x for k, v in sizes.items() for x in (f"--{k}", str(v))]
        if module is not None:
            args += ["--module", module.name, "--module-kind", module.kind]
        t0 = time.monotonic()
        data, log, timed_out = self._run(args, out)
        if data is None:  # a hang or a crash of the interpreter in the agent's code
            why = (f"verification did not finish within {self.cfg.verify_timeout_s:.0f} s "
                   "(an endless loop, or a very slow compilation, in the translation?)"
                   if timed_out else "the verification process crashed")
            data = synthetic_failure("harness[timeout]" if timed_out else "harness[crash]",
                                     f"{why}\n{log.strip()[-2000:]}", self.cfg.name)
            out.write_text(json.dumps(data, indent=1))
        data["verify_s"] = round(time.monotonic() - t0, 2)
        return data

    def bench(self, out: Path) -> dict[str, Any]:
        args = ["bench", "--batch-sizes", *map(str, self.cfg.batch_sizes), "--steps",
                str(self.cfg.bench_steps)]
        t0 = time.monotonic()
        data, log, _ = self._run(args, out)
        if data is None:
            data = {"results": [], "error": log.strip()[-1000:]}
        data["bench_s"] = round(time.monotonic() - t0, 2)
        return data

    def compare(self, baseline: str, out: Path) -> dict[str, Any]:
        """Time the commit ``baseline`` (exported next to the workspace) and the workspace
        alternately, one harness process per timing, and return the speedup report."""
        from envport.agent.speed import interleaved_order, speedup_report

        old_dir = self.run_dir / "bench" / f"baseline-{baseline[:12]}"
        if not (old_dir / "harness" / "config.json").exists():
            export_commit(self.workspace, baseline, old_dir)
        args = ["bench", "--translation-only", "--batch-sizes", *map(str, self.cfg.batch_sizes),
                "--steps", str(self.cfg.bench_steps)]
        timings: dict[str, list[dict[int, float]]] = {"old": [], "new": []}
        t0 = time.monotonic()
        for i, which in enumerate(interleaved_order(self.cfg.bench_repeats)):
            data, _, _ = self._run(args, out.with_name(f"{out.stem}-{i:02d}-{which}.json"),
                                     workspace=old_dir if which == "old" else None)
            rows = {} if data is None else {int(r["batch_size"]): float(r["steps_per_second"])
                                            for r in data.get("results", [])
                                            if r.get("backend") == "translation"}
            timings[which].append(rows)
        report = speedup_report(timings["old"], timings["new"], self.cfg.speedup_confidence)
        report["compare_s"] = round(time.monotonic() - t0, 2)
        report["baseline"] = baseline
        out.write_text(json.dumps(report, indent=1, default=str))
        return report


def export_commit(workspace: Path, commit: str, target: Path) -> None:
    """The files of ``commit`` in ``target`` (no repository: a plain tree to import from)."""
    import io
    import subprocess
    import tarfile

    tar = subprocess.run(["git", "archive", "--format=tar", commit], cwd=workspace,
                         capture_output=True, check=True).stdout
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(target, filter="data")


def child_env() -> dict[str, str]:
    """The environment of a harness process: it imports this very envport (a workspace's cwd
    or another editable install must not shadow it)."""
    import envport

    root = str(Path(envport.__file__).resolve().parents[1])
    path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path}


def synthetic_failure(test_id: str, message: str, env: str) -> dict[str, Any]:
    report = {"env": env, "passed": False, "interrupted": False, "tolerance": "",
              "layers": {"property": {"passed": False, "tests": 1, "failures": [
                  {"layer": "property", "test_id": test_id, "message": message, "seed": None,
                   "state": None, "action": None, "draws": None, "step": None, "diffs": [],
                   "shrunk": False}], "seconds": 0.0, "notes": [], "complete": True}}}
    return {"report": report, "prompt": "", "module": None, "command": ""}


# ---------------------------------------------------------------- reading reports
def layer_summary(result: dict[str, Any]) -> dict[str, Any]:
    """Highest layer passed (0-5, bottom-up), tests passed/total, per-layer verdicts."""
    layers = result["report"]["layers"]
    level = 0
    for name in HIERARCHY:
        if name not in layers:
            continue
        if not layers[name]["passed"]:
            break
        level = HIERARCHY.index(name) + 1
    passed = total = 0
    for r in layers.values():
        n = sum(v for k, v in r.items() if isinstance(v, int) and not isinstance(v, bool)
                and k in ("tests", "states", "episodes", "events", "checks", "agent tests"))
        failed = len(r["failures"])
        for note in r.get("notes", []):
            words = note.split()
            if len(words) > 3 and words[1:3] == ["of", words[2]] and "diverge" in note:
                failed = max(failed, int(words[0]))
        total += n
        passed += max(0, n - failed) if not r["passed"] else n
    highest = HIERARCHY[level - 1] if level else "none"
    return {"level": level, "highest": highest, "tests_passed": passed, "tests_total": total,
            "layers": {k: bool(v["passed"]) for k, v in layers.items()},
            "passed": bool(result["report"]["passed"])}


def repair_context(result: dict[str, Any]) -> dict[str, Any]:
    report = result["report"]
    layers = []
    for name in sorted(report["layers"], key=lambda n: (*HIERARCHY, n).index(n)):
        r = report["layers"][name]
        counts = {k: v for k, v in r.items() if isinstance(v, int) and not isinstance(v, bool)}
        layers.append({"name": name, "title": LAYER_TITLES.get(name, name),
                       "passed": r["passed"], "failures": r["failures"],
                       "checked": ", ".join(f"{v} {k}" for k, v in counts.items()) or "-",
                       "more": max(0, len(r["failures"]) - 3)})
    failing = [x for x in layers if not x["passed"]]
    return {"layers": layers, "lowest": failing[0] if failing else layers[0],
            "tolerance_note": report.get("tolerance", "")}


def failure_digest(result: dict[str, Any]) -> str:
    """One paragraph on the lowest failure (hand-off notes, optimisation regressions)."""
    ctx = repair_context(result)
    lowest = ctx["lowest"]
    if lowest["passed"]:
        return "every layer passes"
    f = lowest["failures"][0] if lowest["failures"] else {"test_id": lowest["name"],
                                                           "message": "failed"}
    fields = ", ".join(d["field"] for d in f.get("diffs", [])[:6])
    return (f"{lowest['title']} fails: `{f['test_id']}`: {f['message'].splitlines()[0][:300]}"
            + (f" (fields: {fields})" if fields else ""))


# ---------------------------------------------------------------- the loop
class Loop:
    def __init__(self, run_dir: Path, cfg: TranslateConfig, backend: AgentBackend | None = None,
                 verifier: Verifier | None = None,
                 log: Callable[[str], None] | None = None):
        self.run_dir = Path(run_dir)
        self.cfg = cfg
        self.workspace = Workspace(self.run_dir / "workspace")
        self.ledger = Ledger(self.run_dir / "ledger.jsonl")
        price = tuple(cfg.price) if cfg.price else None
        self.backend = backend or make_backend(cfg.agent, base_url=cfg.base_url,
                                               extra_args=cfg.agent_args,
                                               price=price)  # type: ignore[arg-type]
        self.verifier = verifier or SubprocessVerifier(self.run_dir, cfg)
        self.log = log or (lambda msg: print(msg, file=sys.stderr))
        meta = read_run_json(self.run_dir)
        self.plan = [ModulePlan(**m) for m in meta["plan"]]
        self.sources = [SourceFile(**{k: s[k] for k in ("name", "path", "text", "role")})
                        for s in meta["sources"]]
        self.reference_info = meta.get("reference_info", {})
        self.state = LoopState()
        self.infra_streak = 0
        self.fatal: str | None = None  # a reason to stop that no retry can fix
        self.waiting: dict[str, Any] | None = None  # a manual agent's pending prompt
        self.config_failure = False  # ... because the agent is misconfigured (exit code 2)

    # -- persistence
    @property
    def rerun(self) -> str:
        return f"python harness/verify.py --seed {self.cfg.seed}"

    def save_config(self) -> None:
        meta = read_run_json(self.run_dir)
        meta["config"] = self.cfg.to_json()
        (self.run_dir / "run.json").write_text(json.dumps(meta, indent=1))

    def restore(self) -> dict[str, Any] | None:
        """Loop state from the ledger; returns an agent call whose verification is pending.

        Only iteration records carry the state: a run stopped mid-verification may hold a
        half-updated state in memory, which is never written.
        """
        last_state = None
        pending = None
        for r in self.ledger.records():
            if r.get("type") == "iteration":
                last_state = r["state"]
            if r.get("type") == "agent":
                pending = r
            elif r.get("type") == "iteration" and pending and \
                    r["iteration"] >= pending["iteration"]:
                pending = None
        if last_state:
            self.state = LoopState.from_json(last_state)
        return pending

    def wall_used(self) -> float:
        past = sum(float(r.get("agent_s", 0)) + float(r.get("verify_s", 0))
                   for r in self.ledger.records() if r.get("type") in ("agent", "iteration",
                                                                        "infra", "verify"))
        return past

    # -- the run
    def run(self) -> dict[str, Any]:
        pending = self.restore()
        self.ledger.append({"type": "resume" if self.ledger.iterations() or pending else "start",
                            "config": self.cfg.to_json()})
        try:
            if pending is not None:  # interrupted after the agent call: verify that work
                self.log(f"resuming: verifying iteration {pending['iteration']}")
                agent = AgentResult.from_json(pending["agent"])
                agent_s = pending["agent_s"]
                if agent.status == "waiting":  # a manual agent: the edit happened meanwhile
                    agent = dataclasses.replace(
                        agent, status="ok", error="", wall_s=time.time() - pending["time"],
                        final_text="(the workspace was edited outside envport; "
                                   "`--resume` verified it)")
                    agent_s = agent.wall_s
                self.state.session_id = agent.session_id or self.state.session_id
                self.finish_iteration(pending["iteration"], pending["kind"], agent, agent_s)
            while True:
                reason = self.stop_reason()
                if reason:
                    return self.stop(reason)
                self.one_iteration()
        except KeyboardInterrupt:
            return self.stop("interrupted")

    def stop_reason(self) -> str | None:
        st, cfg = self.state, self.cfg
        if st.phase == "done":
            return "success"
        if self.waiting:
            return "waiting for the agent"
        if self.fatal:
            return self.fatal
        if st.iteration >= cfg.max_iterations:
            return f"max iterations ({cfg.max_iterations})"
        spent = self.ledger.totals()["cost_usd"]
        if cfg.budget_usd is not None and spent >= cfg.budget_usd:
            return f"budget reached ({spent:.2f} of {cfg.budget_usd:.2f} USD)"
        if cfg.max_wall_s is not None and self.wall_used() >= cfg.max_wall_s:
            return f"wall time ({cfg.max_wall_s:g} s)"
        if st.stall >= cfg.patience:
            return f"no progress for {cfg.patience} iterations"
        if self.infra_streak > cfg.max_infra_retries:
            return f"infrastructure: {self.infra_streak} agent failures in a row"
        return None

    def one_iteration(self) -> None:
        n = self.state.iteration + 1
        kind, prompt = self.build_prompt()
        prompt_path = self.run_dir / "prompts" / f"{n:04d}-{kind.replace(':', '-')}.md"
        prompt_path.parent.mkdir(parents=True, exist_ok=True)
        prompt_path.write_text(prompt)
        spent = self.ledger.totals()["cost_usd"]
        remaining_wall = (self.cfg.max_wall_s - self.wall_used()
                          if self.cfg.max_wall_s is not None else None)
        timeout = self.cfg.agent_timeout_s if remaining_wall is None else max(
            10.0, min(self.cfg.agent_timeout_s, remaining_wall))
        request = AgentRequest(
            prompt=prompt, workdir=self.workspace.root, timeout_s=timeout,
            editable=[m.target for m in self.plan] + [f"{self.cfg.package}/tests"],
            frozen=list(FROZEN), session_id=self.state.session_id,
            max_budget_usd=None if self.cfg.budget_usd is None else max(
                0.0, self.cfg.budget_usd - spent),
            iteration=n, kind=kind, log_path=self.run_dir / "agent" / f"{n:04d}.log",
            prompt_path=prompt_path)
        self.log(f"iteration {n}: {kind} -> {self.backend.name}")
        t0 = time.monotonic()
        result = self.backend.run(request)
        agent_s = time.monotonic() - t0
        if result.status in ("unavailable", "config_error"):
            # not logged in, a key revoked, a flag this CLI version rejects: no retry can fix
            # it, a human must act; no iteration is spent on it
            self.ledger.append({"type": "infra", "iteration": n, "kind": kind,
                                "agent": result.to_json(), "agent_s": round(agent_s, 2)})
            self.fatal = (f"agent configuration: {result.error}"
                          if result.status == "config_error"
                          else f"agent unavailable: {result.error}")
            self.config_failure = True
            return
        if result.infrastructure_error:
            self.infra_streak += 1
            self.ledger.append({"type": "infra", "iteration": n, "kind": kind,
                                "agent": result.to_json(), "agent_s": round(agent_s, 2),
                                "retry": self.infra_streak})
            self.log(f"  infrastructure error ({result.status}: {result.error[:200]}); "
                     f"retry {self.infra_streak} of {self.cfg.max_infra_retries}, "
                     "no iteration used")
            return
        self.infra_streak = 0
        if result.session_id:
            self.state.session_id = result.session_id
        self.ledger.append({"type": "agent", "iteration": n, "kind": kind,
                            "agent": result.to_json(), "agent_s": round(agent_s, 2),
                            "prompt": str(prompt_path.relative_to(self.run_dir))})
        if result.status == "waiting":  # verified by the `--resume` that follows the edit
            self.waiting = {"iteration": n, "kind": kind, "prompt": str(prompt_path)}
            self.log(f"  waiting: {result.error}")
            return
        self.finish_iteration(n, kind, result, agent_s)

    def finish_iteration(self, n: int, kind: str, result: AgentResult, agent_s: float) -> None:
        st = self.state
        frozen = self.workspace.restore_frozen()
        if frozen:
            self.log(f"  frozen paths edited and restored: {', '.join(frozen)}")
        commit = self.workspace.commit(f"iteration {n}: {kind} ({result.status})",
                                       tag=f"iter-{n:04d}")
        t0 = time.monotonic()
        events: list[str] = []
        result_path = self.verify_phase(n, commit, events)
        verify_s = time.monotonic() - t0
        summary = layer_summary(json.loads(Path(result_path).read_text()))
        regressions = [k for k, v in summary["layers"].items()
                       if v is False and st.last_layers.get(k)]
        if summary["layers"] and st.phase != "modules":
            st.last_layers = summary["layers"]
        st.regressions, st.frozen_edits = regressions, frozen
        st.iteration = n
        key = [PHASES.index(st.phase), st.module_index, st.optimise_round, summary["level"],
               summary["tests_passed"]]
        if key > st.best:
            st.best, st.stall = key, 0
        else:
            st.stall += 1
        record = {
            "type": "iteration", "iteration": n, "kind": kind, "phase": st.phase,
            "commit": commit, "agent_status": result.status,
            "agent": {"status": result.status, "exit_code": result.exit_code,
                      "session_id": result.session_id, "turns": result.turns,
                      "usage": result.usage.to_json(), "final_text": result.final_text[-1000:]},
            "agent_s": 0.0, "verify_s": round(verify_s, 2), "agent_wall_s": round(agent_s, 2),
            "highest_layer": summary["highest"], "level": summary["level"],
            "tests_passed": summary["tests_passed"], "tests_total": summary["tests_total"],
            "layers": summary["layers"], "regressions": regressions, "frozen_edits": frozen,
            "files": self.workspace.changed_files(commit), "events": events,
            "result": str(Path(result_path).relative_to(self.run_dir)),
            "state": asdict(st),
        }
        # agent_s is 0 here: the agent's time is on its own ``agent`` record (no double count)
        self.ledger.append(record)
        self.log(f"  -> {summary['highest']} passed ({summary['tests_passed']}/"
                 f"{summary['tests_total']} tests), {verify_s:.0f} s verifying"
                 + (f"; {'; '.join(events)}" if events else ""))

    # -- phases
    def _out(self, n: int, what: str) -> Path:
        return self.run_dir / "verify" / f"{n:04d}-{what}.json"

    def full(self, n: int, seed: int | None = None, held_out: bool = False) -> tuple[dict, Path]:
        out = self._out(n, "heldout" if held_out else "full")
        sizes = self.cfg.sizes
        if held_out:  # every held-out seed must pass; the first failure is the verdict
            data: dict[str, Any] = {}
            for s in self.cfg.held_out_seeds:
                data = self.verifier.verify(module=None, seed=s, sizes=sizes, out=out)
                if not data["report"]["passed"]:
                    break
            return data, out
        return self.verifier.verify(module=None, seed=self.cfg.seed if seed is None else seed,
                                    sizes=sizes, out=out), out

    def verify_phase(self, n: int, commit: str, events: list[str]) -> str:
        st = self.state
        if st.phase == "modules":
            module = self.plan[st.module_index]
            out = self._out(n, f"module-{module.name}")
            data = self.verifier.verify(module=module, seed=self.cfg.seed, sizes=self.cfg.sizes,
                                        out=out)
            if not data["report"]["passed"]:
                st.prompt_kind, st.result_path = "repair", str(out)
                return str(out)
            events.append(f"module {module.name} passes L1")
            st.module_index += 1
            if st.module_index < len(self.plan):
                st.prompt_kind, st.result_path = "module", None
                return str(out)
            st.phase = "compose"
            events.append("composition")
        if st.phase == "compose":
            return self.verify_composition(n, commit, events)
        return self.verify_optimisation(n, commit, events)

    def verify_composition(self, n: int, commit: str, events: list[str]) -> str:
        st = self.state
        data, out = self.full(n)
        if not data["report"]["passed"]:
            st.prompt_kind, st.result_path = "repair", str(out)
            return str(out)
        events.append("every layer passes on the development seed")
        held, held_out = self.full(n, held_out=True)
        if not held["report"]["passed"]:
            events.append("held-out seeds FAIL")
            st.prompt_kind, st.result_path = "heldout-repair", str(held_out)
            return str(held_out)
        events.append("held-out seeds pass: verified")
        st.verified, st.last_green = True, commit
        self.ledger.append({"type": "verify", "iteration": n, "what": "verified",
                            "commit": commit})
        if self.cfg.optimise_rounds <= 0:
            st.phase = "done"
            return str(held_out)
        st.phase, st.prompt_kind = "optimise", "optimise"
        bench_path = self.run_dir / "bench" / f"{n:04d}.json"
        bench_path.parent.mkdir(exist_ok=True)
        bench = self.verifier.bench(bench_path)
        bench_path.write_text(json.dumps(bench, indent=1))
        st.bench_path = str(bench_path)
        return str(held_out)

    def verify_optimisation(self, n: int, commit: str, events: list[str]) -> str:
        st = self.state
        data, out = self.full(n)
        if data["report"]["passed"]:
            data, out = self.full(n, held_out=True)
        st.optimise_round += 1
        if not data["report"]["passed"]:
            assert st.last_green is not None
            digest = failure_digest(data)
            self.workspace.reset_to(st.last_green)
            self.workspace.commit(f"revert iteration {n}: the optimisation broke verification",
                                  tag=f"iter-{n:04d}-reverted")
            st.previous = f"your last change was reverted because it broke verification: {digest}"
            events.append("optimisation broke verification: reverted")
        else:
            self.keep_if_faster(n, commit, events)
        if st.optimise_round >= self.cfg.optimise_rounds:
            st.phase = "done"
        return str(out)

    def keep_if_faster(self, n: int, commit: str, events: list[str]) -> None:
        """A verified optimisation stays only if it is measurably faster than the last verified
        commit (``speed.py``); otherwise it is reverted. Either way the interval is recorded."""
        from envport.agent.speed import describe

        st = self.state
        assert st.last_green is not None
        path = self.run_dir / "bench" / f"{n:04d}-compare.json"
        path.parent.mkdir(exist_ok=True)
        report = self.verifier.compare(st.last_green, path)
        line = describe(report)
        self.ledger.append({"type": "verify", "iteration": n, "what": "speedup",
                            "commit": commit, "baseline": st.last_green,
                            "kept": bool(report["faster"]), "speedup": report.get("speedup"),
                            "per_batch": report.get("per_batch"),
                            "repeats": report.get("repeats"),
                            "confidence": report.get("confidence"),
                            "verify_s": report.get("compare_s", 0.0)})
        if not report["faster"]:
            self.workspace.reset_to(st.last_green)
            self.workspace.commit(f"revert iteration {n}: verified but not measurably faster",
                                  tag=f"iter-{n:04d}-reverted")
            st.previous = (f"your last change passed verification but was not measurably "
                           f"faster, so it was reverted: {line}")
            events.append(f"optimisation verified but not faster: reverted; {line}")
            return
        bench_path = self.run_dir / "bench" / f"{n:04d}.json"
        bench = self.verifier.bench(bench_path)
        bench_path.write_text(json.dumps(bench, indent=1))
        st.previous = f"your last change was kept: {line}"
        st.bench_path, st.last_green = str(bench_path), commit
        events.append(f"optimisation kept: {line}")

    # -- prompts
    def task(self) -> dict[str, Any]:
        return {"name": self.cfg.name, "reference": self.cfg.reference,
                "target": self.cfg.target}

    def common(self) -> dict[str, Any]:
        tol = self.cfg.tolerance
        return {"task": self.task(), "package": self.cfg.package,
                "env_class": self.cfg.env_class, "bridge_class": self.cfg.bridge_class,
                "editable": [f"`{m.target}`" for m in self.plan]
                + [f"`{self.cfg.package}/tests/`"], "rerun": self.rerun,
                "tolerance": (f"atol {tol['atol']:g} + rtol {tol['rtol']:g}" if tol
                              else self.reference_info.get("tolerance", "exact equality"))}

    def build_prompt(self) -> tuple[str, str]:
        st = self.state
        if st.prompt_kind == "module":
            module = self.plan[st.module_index]
            return f"module:{module.name}", self.module_prompt(module)
        if st.prompt_kind in ("repair", "heldout-repair"):
            assert st.result_path is not None
            data = json.loads(Path(st.result_path).read_text())
            ctx = repair_context(data)
            files = ([self.plan[st.module_index].target] if st.phase == "modules"
                     else [m.target for m in self.plan])
            prefix = f"repair:{self.plan[st.module_index].name}" if st.phase == "modules" \
                else st.prompt_kind
            text = render("repair.md.j2", **self.common(), **ctx,
                          held_out=st.prompt_kind == "heldout-repair",
                          regressions=[LAYER_TITLES.get(r, r) for r in st.regressions],
                          frozen_edits=st.frozen_edits, files=[f"`{f}`" for f in files])
            if st.phase == "modules":  # the module's own check is what to rerun
                text = text.replace(self.rerun, f"{self.rerun} --module "
                                                f"{self.plan[st.module_index].name}")
            return prefix, text
        bench = json.loads(Path(st.bench_path).read_text()) if st.bench_path else {"results": []}
        return "optimise", render("optimise.md.j2", **self.common(), bench=bench,
                                  previous=st.previous,
                                  machine=f"{os.cpu_count()} CPU cores, JAX "
                                          f"{self.reference_info.get('jax_backend', 'cpu')}")

    def module_prompt(self, module: ModulePlan) -> str:
        if module.kind == "helper":
            sources = [s for s in self.sources if s.name in module.sources]
        else:
            sources = [s for s in self.sources if s.role in ("reference", "context")]
        data = [{"path": reference_path(s), "chars": s.chars, "lines": s.lines}
                for s in self.sources if s.role == "data"]
        done = [m.name for m in self.plan[: self.state.module_index]]
        checks = {"helper": f"its L1 tests in `{self.cfg.package}/tests/test_{module.name}.py` "
                            "exist and pass",
                  "env": "the L1 property layer passes (shapes, dtypes, spaces, determinism, "
                         "jit/vmap, step == transition(sample_draws), auto-reset)",
                  "bridge": "the bridge round-trips reference states and its state and draws "
                            "have the translation's structure; then L2 and L3 run on the "
                            "composition"}
        context = {**self.common(), "rerun": f"{self.rerun} --module {module.name}"}
        return render("module.md.j2", **context, module=module,
                      index=self.state.module_index + 1, plan=self.plan, done=done,
                      sources=[{**s.to_json(), "path": ""} for s in sources],
                      state_fields=self.reference_info.get("state_fields", {}),
                      tape_fields=self.reference_info.get("tape_fields", {}),
                      notes=self.reference_info.get("notes", ""), check=checks[module.kind],
                      data=data)

    # -- stopping
    def stop(self, reason: str) -> dict[str, Any]:
        totals = self.ledger.totals()
        st = self.state
        success = reason == "success"
        config = self.config_failure and reason == self.fatal
        waiting = self.waiting is not None and reason == "waiting for the agent"
        summary = {
            "status": "success" if success else "interrupted" if reason == "interrupted"
            else "config_error" if config else "waiting" if waiting else "stopped",
            "reason": reason,
            "iterations": st.iteration,
            "phase": st.phase, "verified": st.verified, "last_green": st.last_green,
            "cost_usd": round(totals["cost_usd"], 4),
            "unknown_cost_calls": totals["unknown_cost_calls"], "tokens": totals["tokens"],
            "agent_s": round(totals["agent_s"], 1), "verify_s": round(totals["verify_s"], 1),
            "infra_errors": totals["infra_errors"], "run_dir": str(self.run_dir),
            "workspace": str(self.workspace.root),
        }
        if waiting:
            assert self.waiting is not None
            from envport.agent.backends.manual import resume_command

            summary["next_prompt"] = self.waiting["prompt"]
            summary["resume"] = resume_command(self.run_dir)
        # a misconfigured agent before any iteration: the reason is the whole note
        if not success and not waiting and reason != "interrupted" and not (
                config and st.iteration == 0):
            summary["handoff"] = str(self.write_handoff(reason, totals))
        self.ledger.append({"type": "stop", "reason": reason, "summary": summary})
        return summary

    def write_handoff(self, reason: str, totals: dict[str, Any]) -> Path:
        st = self.state
        iterations = self.ledger.iterations()
        last = iterations[-1] if iterations else None
        last_failure = last_status = None
        if st.result_path and Path(st.result_path).exists():
            data = json.loads(Path(st.result_path).read_text())
            last_failure = failure_digest(data)
            s = layer_summary(data)
            last_status = (f"highest layer passed {s['highest']}, {s['tests_passed']} of "
                           f"{s['tests_total']} tests")
        history = [{"iteration": r["iteration"], "kind": r["kind"],
                    "agent_status": r["agent_status"], "highest": r["highest_layer"],
                    "tests": f"{r['tests_passed']}/{r['tests_total']}",
                    "cost": _fmt_cost(r["agent"]["usage"].get("cost_usd"))}
                   for r in iterations[-10:]]
        module = self.plan[st.module_index].name if st.phase == "modules" else None
        text = render("handoff.md.j2", task=self.task(), reason=reason,
                      iterations=st.iteration, cost_usd=totals["cost_usd"],
                      unknown_cost=totals["unknown_cost_calls"],
                      wall_s=totals["agent_s"] + totals["verify_s"], phase=st.phase,
                      module=module, best=_describe_best(st.best, self.plan),
                      last_status=last_status or "none", last_failure=last_failure,
                      history=history,
                      last_text=(last or {}).get("agent", {}).get("final_text", "")[-1500:],
                      workspace=self.workspace.root, rerun=self.rerun, run_dir=self.run_dir)
        path = self.run_dir / "HANDOFF.md"
        path.write_text(text)
        return path


def _fmt_cost(cost: float | None) -> str:
    return "unknown" if cost is None else f"{cost:.3f}"


def _describe_best(best: list[int], plan: list[ModulePlan]) -> str:
    phase, module, rounds, level, tests = best
    where = {0: f"module {plan[min(module, len(plan) - 1)].name}", 1: "composition",
             2: f"optimisation round {rounds}", 3: "done"}[phase]
    layer = HIERARCHY[level - 1] if level else "none"
    return f"{where}; highest layer passed {layer}; {tests} tests passed"


# ---------------------------------------------------------------- creating a run
def reference_info(cfg: TranslateConfig) -> dict[str, Any]:
    """Instantiate the reference once (a clear error if it cannot be), describe its state and
    tape for the prompts, and find the registered environment it belongs to."""
    import numpy as np

    from envport.agent.harness import ReferenceError_, load_reference_class
    from envport.core.registry import list_envs
    from envport.core.registry import spec as registered

    try:
        cls = load_reference_class(cfg.reference)
        ref = cls(**cfg.reference_kwargs)
        ref.reset(0)
        state = ref.get_state()
    except ReferenceError_ as e:
        raise TranslateError(f"the reference cannot be used: {e}") from e
    except Exception as e:
        raise TranslateError(f"the reference {cfg.reference} fails on reset(0)/get_state(): "
                             f"{type(e).__name__}: {e}") from e
    like = cfg.like
    if like is None:  # one of envport's own references: reuse its environment's spec
        package = cls.__module__.rsplit(".", 1)[0]
        for name in list_envs():
            s = registered(name)
            target = getattr(s.make_reference, "target", None)  # registry.lazy("mod:Class")
            origin = (target.partition(":")[0].rsplit(".", 1)[0] if target
                      else getattr(s.make_reference, "__module__", None))
            if origin != package:
                continue
            try:  # confirm with the one candidate only (references can be costly to build)
                if type(s.make_reference()) is cls:
                    like = name
                    break
            except Exception:
                continue
    info: dict[str, Any] = {"like": like, "state_fields": {
        k: f"{np.asarray(v).dtype}{list(np.shape(v)) if np.shape(v) else ''}"
        for k, v in state.items()}}
    def fields(tape: dict[str, Any]) -> dict[str, str]:
        return {k: f"{np.asarray(v).dtype}{list(np.shape(v)) if np.shape(v) else ''}"
                for k, v in tape.items()}

    notes = []
    masked = callable(getattr(ref, "action_mask", None))
    if like:
        s = registered(like)
        notes.append(f"Comparison rule used by the verifier: {s.verification.tolerance_note}")
        info["tolerance"] = str(s.verification.tolerance)
        if can_draw_actions(s):  # a legal action where the spec declares legal_action
            ref.step(draw_action(s, state, np.random.default_rng(0)))
            info["tape_fields"] = fields(ref.tape())
    elif masked:
        # a masked game: an unmasked random action is illegal (the reference raises)
        legal = np.flatnonzero(np.asarray(ref.action_mask()))
        if len(legal):
            ref.step(int(legal[0]))
            info["tape_fields"] = fields(ref.tape())
    if masked:
        notes.append(
            "Legal actions depend on the state: the reference has `action_mask()` (bool per "
            "action) and raises on an illegal action. The verifier (L2, L3) takes only legal "
            "actions, drawn from the reference's mask. L1 samples actions from your "
            "`action_space()` without a mask, so your `transition` must accept any action of "
            "the space: leave the state unchanged on an illegal one (no reward, not "
            "terminated), and export a jittable `action_mask(state)` that matches the "
            "reference's.")
        if "rng" in info["state_fields"]:
            notes.append(
                "The state holds the reference's generator position (`rng`): carry it in your "
                "state and reproduce the generator, so that L3 (which runs your own "
                "`sample_draws`) draws what the reference draws; the tape is for diagnosis.")
    if notes:
        info["notes"] = "\n\n".join(notes)
    try:
        import jax

        info["jax_backend"] = jax.default_backend()
    except Exception:
        info["jax_backend"] = "unknown"
    return info


HARNESS_SCRIPT = '''"""Rerun envport's verification of this workspace (frozen: restored each time).

    python harness/verify.py                      # every layer, the development seed
    python harness/verify.py --layer interaction  # one layer
    python harness/verify.py --module jax_env     # the L1 checks of one module
"""
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
sys.exit(subprocess.call([sys.executable, "-m", "envport.agent.harness", "verify",
                          "--workspace", str(root),
                          "--config", str(root / "harness" / "config.json"), *sys.argv[1:]]))
'''

TESTS = '''"""envport's verification hierarchy of this translation as pytest tests (frozen)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("layer", ["property", "interaction", "rollout", "distribution"])
def test_layer(layer, tmp_path):
    out = tmp_path / "result.json"
    subprocess.run([sys.executable, "-m", "envport.agent.harness", "verify", "--workspace",
                    str(ROOT), "--layer", layer, "--out", str(out)], check=False)
    result = json.loads(out.read_text())
    assert result["report"]["passed"], result["prompt"]
'''


def create_run(cfg: TranslateConfig) -> Path:
    """A new run directory: run.json (config, plan, sources), the workspace at its baseline."""
    if cfg.target != "jax":
        raise TranslateError(f"--target {cfg.target}: only `jax` is supported (a Rust target "
                             "is planned)")
    run_dir = Path(cfg.workdir)
    if (run_dir / "run.json").exists():
        raise TranslateError(f"{run_dir} already holds a run: continue it with "
                             f"`envport translate --resume {run_dir}` or choose another --workdir")
    info = reference_info(cfg)
    cls_name = cfg.reference.partition(":")[2]
    base = cls_name.removesuffix("Reference") or cls_name
    cfg.name = cfg.name or base.lower()
    cfg.env_class = cfg.env_class or base
    cfg.bridge_class = cfg.bridge_class or f"{base}Bridge"
    cfg.like = cfg.like if cfg.like is not None else info.get("like")
    if not cfg.held_out_seeds:
        # The verifier derives episode and reset seeds as seed * 100_003 + i (uint32 keys,
        # glibc rand_r states), so seeds stay below 40,000; the development seed is excluded.
        cfg.held_out_seeds = [secrets.choice([s for s in range(1, 40_000) if s != cfg.seed])]
    try:
        sources = reference_sources(cfg.reference, cfg.sources)
    except FileNotFoundError as e:
        raise TranslateError(str(e)) from e
    plan = plan_modules(sources, cfg.package)
    run_dir.mkdir(parents=True, exist_ok=True)
    public = {"name": cfg.name, "reference": cfg.reference,
              "reference_kwargs": cfg.reference_kwargs, "like": cfg.like,
              "tolerance": cfg.tolerance, "package": cfg.package, "env_class": cfg.env_class,
              "bridge_class": cfg.bridge_class, "seed": cfg.seed, "sizes": cfg.sizes,
              "transfer_check": cfg.transfer_check, "modules": [m.to_json() for m in plan]}
    files = {
        "harness/config.json": json.dumps(public, indent=1),
        "harness/verify.py": HARNESS_SCRIPT,
        "tests/test_hierarchy.py": TESTS,
        "TASK.md": task_text(cfg, plan, sources),
        f"{cfg.package}/__init__.py": f'"""{cfg.target.upper()} translation of {cfg.name}."""\n',
        f"{cfg.package}/tests/__init__.py": "",
    }
    for s in sources:
        files[reference_path(s)] = s.text
    meta = {"config": cfg.to_json(), "plan": [m.to_json() for m in plan],
            "sources": [s.to_json() for s in sources], "reference_info": info,
            "created": time.time()}
    (run_dir / "run.json").write_text(json.dumps(meta, indent=1))
    Workspace(run_dir / "workspace").create(files)
    return run_dir


def reference_path(s: SourceFile) -> str:
    """Where a source lies in the workspace: ``reference/<module>.py``, a context file under its
    own name, a data file (``cards.json``) under its file name."""
    if s.role == "data":
        return f"reference/{s.name}"
    stem = s.name.rsplit(".", 1)[-1] if s.role != "context" else s.name
    return f"reference/{stem}" + ("" if s.name.endswith(".py") else ".py")


def task_text(cfg: TranslateConfig, plan: list[ModulePlan], sources: list[SourceFile]) -> str:
    lines = [f"# Translate `{cfg.reference}` to {cfg.target.upper()}", "",
             "envport drives this translation and verifies it against the reference with its "
             "hierarchy: L1 property, L2 interaction (one step from injected states and random "
             "draws), L3 lockstep rollouts, distribution tests of the sampler.", "",
             "## Plan (dependency order)"]
    lines += [f"{i}. `{m.target}` ({m.kind})" for i, m in enumerate(plan, 1)]
    lines += ["", "## Reference source (in `reference/`)"]
    lines += [f"- `{reference_path(s)}` ({s.role}, {s.lines} lines)" for s in sources]
    lines += ["", "## Rules",
              f"- Edit only `{cfg.package}/` (the translation and your own tests in "
              f"`{cfg.package}/tests/`).",
              f"- Frozen (restored before every verification): {', '.join(FROZEN)}.",
              "- Check your work: `python harness/verify.py` (add `--module NAME` for one "
              "module's L1 checks, `--layer NAME` for one layer).", ""]
    return "\n".join(lines)


RUN_KEYS = ("config", "plan", "sources")


def read_run_json(run_dir: Path) -> dict[str, Any]:
    """A run's ``run.json``; TranslateError naming the file and what to do when it is missing
    or damaged."""
    path = Path(run_dir) / "run.json"
    if not path.exists():
        raise TranslateError(f"{run_dir} is not a translation run (no run.json)")
    try:
        meta = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        meta, problem = None, f"not JSON: {e}"
    else:
        missing = [k for k in RUN_KEYS if not isinstance(meta, dict) or k not in meta]
        problem = f"it lacks {', '.join(missing)}" if missing else ""
    if meta is None or problem:
        raise TranslateError(f"{path} is damaged ({problem}): restore it from the run's "
                             "workspace history or start a new run in another --workdir")
    return meta


def load_run(run_dir: Path, overrides: dict[str, Any] | None = None) -> TranslateConfig:
    cfg = TranslateConfig.from_json(read_run_json(run_dir)["config"])
    for k, v in (overrides or {}).items():
        if v is not None:
            setattr(cfg, k, v)
    return cfg


def translate(cfg: TranslateConfig | None = None, *, resume: Path | None = None,
              overrides: dict[str, Any] | None = None, backend: AgentBackend | None = None,
              verifier: Verifier | None = None,
              log: Callable[[str], None] | None = None,
              preflight: bool = True) -> dict[str, Any]:
    """Create (or resume) a run and drive it until it stops; returns the stop summary.

    Before anything is created, the agent is checked (``backend.preflight()``: for a
    command-line agent its version, the flags envport passes, its login); a misconfigured
    agent raises TranslateError with the fix (exit code 2), so no iteration is spent on it.
    ``preflight=False`` (``--no-agent-preflight``) skips that for setups it cannot judge.
    """
    from envport.agent.backends import AgentUnavailableError

    if resume is not None:
        cfg = load_run(resume, overrides)
    assert cfg is not None
    try:  # a missing or misconfigured agent is reported before anything is created
        if backend is None:
            price = tuple(cfg.price) if cfg.price else None
            backend = make_backend(cfg.agent, base_url=cfg.base_url, extra_args=cfg.agent_args,
                                   price=price)  # type: ignore[arg-type]
            backend.check()
            if preflight:
                for note in backend.preflight():
                    (log or (lambda m: print(m, file=sys.stderr)))(f"agent: {note}")
    except AgentUnavailableError as e:
        raise TranslateError(str(e)) from e
    run_dir = Path(resume) if resume is not None else create_run(cfg)
    loop = Loop(run_dir, cfg, backend=backend, verifier=verifier, log=log)
    loop.save_config()
    # SIGTERM (a CI cancel, `kill`) ends the run like Ctrl-C: recorded, resumable.
    # (Only possible from the main thread, and only if nobody else handles SIGTERM.)
    install = (threading.current_thread() is threading.main_thread()
               and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None))
    if install:
        signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        return loop.run()
    finally:
        if install:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


__all__ = ["EDITABLE", "FROZEN", "Loop", "LoopState", "SubprocessVerifier", "TranslateConfig",
           "TranslateError", "Verifier", "create_run", "layer_summary", "load_run",
           "repair_context", "translate"]
