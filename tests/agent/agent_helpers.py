"""Helpers of the agent tests: fake agent executables on PATH and a fast fake verifier.

The fake executables replay recorded outputs (``recordings/``) and make the edits an agent
would, so the real subprocess path (process group, closed stdin, timeout, parsing) is tested
without any agent installed. They answer envport's preflight probes (``--version``,
``--help``, ``auth status``, ``login status``, ``--exit``) from the real CLIs' recorded
outputs (``recordings/clis/``, see test_agent_clis.py) without using up a step. The fake
verifier judges a workspace from marker strings in the translation, so the loop's logic is
tested in seconds; one test runs the real harness.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

RECORDINGS = Path(__file__).parent / "recordings"
REFERENCE = "envport.envs.cartpole.reference:CartPoleReference"

FAKE_AGENT = '''#!{python}
"""A fake coding agent: replays step N of its script (N = how often it has been called)."""
import json, os, subprocess, sys, time
from pathlib import Path

argv = sys.argv[1:]
core = [a for i, a in enumerate(argv) if a != "-c" and (i == 0 or argv[i - 1] != "-c")]
for probe in json.loads(Path({steps!r} + ".probes").read_text()):
    if probe.get("argv") == core or (probe.get("last") and argv[-1:] == [probe["last"]]):
        with open({steps!r} + ".probe-argv", "a") as f:
            f.write(json.dumps(argv) + "\\n")
        text = (Path(probe["recording"]).read_text() if "recording" in probe
                else probe.get("stdout", ""))
        (sys.stderr if probe.get("stream") == "stderr" else sys.stdout).write(text)
        sys.exit(probe.get("exit", 0))
steps = json.loads(Path({steps!r}).read_text())
counter = Path({steps!r} + ".count")
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
with open({steps!r} + ".argv", "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
step = steps[min(n, len(steps) - 1)]
for rel, text in step.get("write", {{}}).items():
    path = Path(rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
if step.get("child_pid_file"):  # a grandchild the timeout must kill with the group
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    Path(step["child_pid_file"]).write_text(str(child.pid))
time.sleep(step.get("sleep", 0))
out = step.get("stdout", "")
if step.get("recording"):
    out = Path(step["recording"]).read_text()
sys.stdout.write(out)
sys.stderr.write(step.get("stderr", ""))
sys.exit(step.get("exit", 0))
'''


CLIS = RECORDINGS / "clis"
# What the real pinned CLIs answer to envport's preflight when they are set up (recorded with a
# dummy API key: the login checks are offline): test_agent_clis.py has the not-logged-in ones.
PREFLIGHT: dict[str, list[dict[str, Any]]] = {
    "claude": [{"argv": ["--version"], "stdout": "2.1.332 (Claude Code)\n"},
               {"argv": ["--help"], "recording": str(CLIS / "claude-2.1.332-help.txt")},
               {"argv": ["auth", "status"],
                "recording": str(CLIS / "claude_auth_status_api_key.json")}],
    "codex": [{"argv": ["--version"], "stdout": "codex-cli 0.171.0\n"},
              {"argv": ["exec", "--help"], "recording": str(CLIS / "codex-0.171.0-exec-help.txt")},
              {"argv": ["exec", "resume", "--help"],
               "recording": str(CLIS / "codex-0.171.0-exec-resume-help.txt")},
              {"argv": ["login", "status"], "stream": "stderr",
               "recording": str(CLIS / "codex_login_status_api_key.txt")}],
    "gemini": [{"argv": ["--version"], "stdout": "0.61.0\n"},
               {"argv": ["--help"], "recording": str(CLIS / "gemini-0.61.0-help.txt")}],
    "aider": [{"argv": ["--version"], "stdout": "aider 0.86.2\n"},
              {"argv": ["--help"], "recording": str(CLIS / "aider-0.86.2-help.txt")},
              {"last": "--exit", "recording": str(CLIS / "aider_exit_api_key.txt")}],
}


class FakeAgents:
    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch):
        self.bin = root / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        monkeypatch.setenv("PATH", f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")
        # only the fakes: never a developer's own CLI or the project-local install
        for name in PREFLIGHT:
            monkeypatch.delenv(f"ENVPORT_{name.upper()}", raising=False)
        monkeypatch.setenv("ENVPORT_AGENT_CLIS", str(root / "no-local-clis"))

    def install(self, name: str, steps: list[dict[str, Any]],
                probes: list[dict[str, Any]] | None = None) -> Path:
        """A fake ``name`` on PATH: ``steps`` are its calls in turn; ``probes`` (first match
        wins) answer the preflight before the recorded defaults of PREFLIGHT do."""
        steps_file = self.bin / f"{name}.steps.json"
        steps_file.write_text(json.dumps(steps))
        Path(str(steps_file) + ".probes").write_text(
            json.dumps([*(probes or []), *PREFLIGHT.get(name, [])]))
        for suffix in (".count", ".argv", ".probe-argv"):
            Path(str(steps_file) + suffix).unlink(missing_ok=True)
        exe = self.bin / name
        exe.write_text(FAKE_AGENT.format(python=sys.executable, steps=str(steps_file)))
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
        return steps_file

    def calls(self, name: str, probes: bool = False) -> list[list[str]]:
        """The argv of each call (``probes``: of each preflight probe instead)."""
        path = self.bin / f"{name}.steps.json.{'probe-argv' if probes else 'argv'}"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() \
            else []


@pytest.fixture
def fake_agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeAgents:
    return FakeAgents(tmp_path, monkeypatch)


def recording(name: str) -> str:
    return str(RECORDINGS / name)


# ---------------------------------------------------------------- a fast fake verifier
def _layer(passed: bool, failures: list[dict[str, Any]] | None = None, **counts: int
           ) -> dict[str, Any]:
    return {"passed": passed, **counts, "failures": failures or [], "seconds": 0.0,
            "notes": [], "complete": True}


def _failure(layer: str, test_id: str, field: str) -> dict[str, Any]:
    return {"layer": layer, "test_id": test_id, "message": f"one step diverges in {field}",
            "seed": 0, "state": {"x": 0.01, "theta": 0.02}, "action": 1, "draws": {},
            "step": None, "diffs": [{"field": field, "expected": 0.5, "got": 0.51,
                                     "error": 0.01, "tolerance": "atol=1e-06 rtol=1e-05"}],
            "shrunk": True}


class FakeVerifier:
    """Judges the workspace by markers in translation/jax_env.py:
    ``BUG`` fails L2; ``ROLLOUT_BUG`` fails L3; ``HELDOUT_BUG`` fails on held-out seeds only;
    a missing file fails L1. ``bench`` and ``compare`` time ``FAST`` translations twice as
    fast, with a few percent of noise in ``compare``."""

    def __init__(self, run_dir: Path, dev_seed: int = 0):
        self.workspace = Path(run_dir) / "workspace"
        self.dev_seed = dev_seed
        self.calls: list[dict[str, Any]] = []

    def _text(self, name: str) -> str | None:
        path = self.workspace / "translation" / name
        return path.read_text() if path.exists() else None

    def verify(self, *, module: Any, seed: int, sizes: dict[str, int], out: Path
               ) -> dict[str, Any]:
        self.calls.append({"module": getattr(module, "name", None), "seed": seed})
        env = self._text("jax_env.py")
        layers: dict[str, Any] = {}
        if module is not None:
            target = self._text(Path(module.target).name)
            ok = target is not None
            layers["property"] = _layer(ok, [] if ok else [
                {**_failure("property", "property[import]", "module"), "diffs": []}], tests=6)
        elif env is None:
            layers["property"] = _layer(False, [_failure("property", "property[import]",
                                                         "module")], tests=6)
        else:
            layers["property"] = _layer(True, tests=6)
            bug = "BUG" in env.replace("ROLLOUT_BUG", "").replace("HELDOUT_BUG", "")
            held = "HELDOUT_BUG" in env and seed != self.dev_seed
            layers["interaction"] = _layer(not (bug or held), [] if not (bug or held) else [
                _failure("interaction", "interaction[random]", "state.theta_dot")], states=60)
            if layers["interaction"]["passed"]:
                ok = "ROLLOUT_BUG" not in env
                layers["rollout"] = _layer(ok, [] if ok else [
                    {**_failure("rollout", "rollout[random]", "obs"), "step": 17}],
                    episodes=4, steps=400)
                layers["distribution"] = _layer(True, events=4)
        passed = all(v["passed"] for v in layers.values())
        result = {"report": {"env": "cartpole", "passed": passed, "interrupted": False,
                             "tolerance": "atol 1e-6 + rtol 1e-5", "layers": layers},
                  "prompt": "", "module": getattr(module, "name", None),
                  "command": "python harness/verify.py", "verify_s": 0.01}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result))
        return result

    def bench(self, out: Path) -> dict[str, Any]:
        env = self._text("jax_env.py") or ""
        sps = 2e6 if "FAST" in env else 1e6
        result = {"results": [{"backend": "translation", "batch_size": 64,
                               "steps_per_second": sps},
                              {"backend": "reference", "batch_size": 1,
                               "steps_per_second": 5e4}], "steps": 10}
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result))
        return result

    # a machine whose speed drifts by a few percent between timings
    NOISE = (1.03, 0.98, 1.01, 0.96, 1.02, 0.99, 1.04, 0.97, 1.0, 1.01)

    def compare(self, baseline: str, out: Path) -> dict[str, Any]:
        """Old (commit ``baseline``) and new timed alternately: ``FAST`` runs twice as fast."""
        import subprocess

        from envport.agent.speed import interleaved_order, speedup_report

        old_text = subprocess.run(["git", "show", f"{baseline}:translation/jax_env.py"],
                                  cwd=self.workspace, capture_output=True, text=True).stdout
        new_text = self._text("jax_env.py") or ""
        timings: dict[str, list[dict[int, float]]] = {"old": [], "new": []}
        for i, which in enumerate(interleaved_order(self.repeats)):
            text = old_text if which == "old" else new_text
            base = 2e6 if "FAST" in text else 1e6
            timings[which].append({64: base * self.NOISE[i % len(self.NOISE)]})
        self.calls.append({"compare": baseline})
        report = speedup_report(timings["old"], timings["new"], 0.95)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, default=str))
        return report

    repeats = 5


@pytest.fixture
def fake_verifier_cls() -> type[FakeVerifier]:
    return FakeVerifier


def make_config(tmp_path: Path, agent: str, **kw: Any) -> Any:
    from envport.agent.loop import TranslateConfig

    base = {"reference": REFERENCE, "agent": agent, "workdir": str(tmp_path / "run"),
            "held_out_seeds": [7], "optimise_rounds": 0, "patience": 4,
            "max_iterations": 12}
    base.update(kw)
    return TranslateConfig(**base)


@pytest.fixture
def config_factory(tmp_path: Path) -> Any:
    return lambda agent, **kw: make_config(tmp_path, agent, **kw)


ENV_OK = "# a translation\nGRAVITY = 9.8\n"
ENV_BUG = "# a translation\nGRAVITY = 9.81  # BUG\n"
BRIDGE = "# the bridge\n"
