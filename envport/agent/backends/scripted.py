"""A scripted agent: applies a YAML script of edits, one step per call (offline demos, CI).

Script format (``examples/scripted/cartpole.yaml``)::

    steps:
      - expect: module:jax_env          # optional: the prompt kind this step answers
        say: "what the agent answers"   # final_text
        usage: {input_tokens: 9000, output_tokens: 2500, cost_usd: 0.04}
        write: {translation/jax_env.py: "...whole file..."}
        replace: [{path: ..., find: ..., replace: ...}]   # exact, must match once
        patch: "unified diff"           # applied with `git apply`
        delete: [path, ...]
        status: ok                      # or error/crash/... to play a failing agent
        interrupt: true                 # raise KeyboardInterrupt after the edits (tests)

The position in the script is kept in a state file next to the agent logs, written before any
edit, so a run resumed after an interruption continues with the next step.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from envport.agent.backends.base import AgentRequest, AgentResult, AgentUnavailableError, Usage


def load_script(path: Path) -> dict[str, Any]:
    import yaml

    if not path.is_file():
        raise AgentUnavailableError(f"scripted agent: no script at {path}")
    data = yaml.safe_load(path.read_text())
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise AgentUnavailableError(f"scripted agent: {path} must hold a list `steps`")
    return data


class Scripted:
    name = "scripted"

    def __init__(self, script: str | Path):
        self.path = Path(script)

    def check(self) -> None:
        load_script(self.path)

    def preflight(self) -> list[str]:
        self.check()
        return []

    def _state_file(self, request: AgentRequest) -> Path:
        base = request.log_path.parent if request.log_path else request.workdir.parent
        return base / "scripted-state.json"

    def run(self, request: AgentRequest) -> AgentResult:
        t0 = time.monotonic()
        steps = load_script(self.path)["steps"]
        state_file = self._state_file(request)
        position = json.loads(state_file.read_text())["next"] if state_file.exists() else 0
        if position >= len(steps):
            return AgentResult("error", 0, "scripted", "", Usage(0, 0, 0, 0.0, "reported"),
                               turns=0, error=f"the script has no step {position + 1}",
                               wall_s=time.monotonic() - t0)
        step = steps[position]
        state_file.parent.mkdir(parents=True, exist_ok=True)
        state_file.write_text(json.dumps({"next": position + 1}))
        expect = step.get("expect")
        if expect and not request.kind.startswith(expect):
            return AgentResult("error", 0, "scripted", "", Usage(0, 0, 0, 0.0, "reported"),
                               error=f"script step {position + 1} expects a `{expect}` prompt, "
                                     f"got `{request.kind}`", wall_s=time.monotonic() - t0)
        written = self.apply(step, request.workdir)
        raw = step.get("usage") or {}
        usage = Usage(int(raw.get("input_tokens", 0)), int(raw.get("output_tokens", 0)),
                      int(raw.get("cached_tokens", 0)), float(raw.get("cost_usd", 0.0)),
                      "reported")
        if step.get("sleep"):
            time.sleep(float(step["sleep"]))
        if step.get("interrupt"):
            raise KeyboardInterrupt  # plays a Ctrl-C in the middle of an iteration
        return AgentResult(step.get("status", "ok"), 0, "scripted", str(step.get("say", "")),
                           usage, turns=1, wall_s=time.monotonic() - t0, files_written=written,
                           error=str(step.get("error", "")))

    @staticmethod
    def apply(step: dict[str, Any], workdir: Path) -> list[str]:
        written = []
        for rel, content in (step.get("write") or {}).items():
            target = workdir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            written.append(rel)
        for edit in step.get("replace") or []:
            target = workdir / edit["path"]
            text = target.read_text()
            if text.count(edit["find"]) != 1:
                raise ValueError(f"scripted edit: {edit['find']!r} must occur once in "
                                 f"{edit['path']}")
            target.write_text(text.replace(edit["find"], edit["replace"]))
            written.append(edit["path"])
        if step.get("patch"):
            subprocess.run(["git", "apply", "-"], cwd=workdir, input=step["patch"], text=True,
                           check=True, capture_output=True)
        for rel in step.get("delete") or []:
            (workdir / rel).unlink(missing_ok=True)
            written.append(rel)
        return written
