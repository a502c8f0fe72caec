"""Agents envport cannot call: ``manual`` (a person, an IDE assistant, anything that edits the
workspace by itself) and ``command:'CLI ... {prompt}'`` (any agent CLI that takes a prompt file).

``manual``: each call writes ``NEXT.md`` in the run directory (which prompt, where to edit, how
to continue) and answers ``waiting``; the loop records the call and stops with a resumable
status. ``envport translate --resume DIR`` then verifies the workspace as it is (frozen paths
restored and the edit recorded, as for any agent), records the iteration and writes the next
prompt, repair or next module, and stops again.

``command``: the command line is split like a shell would (no shell runs it) and its
placeholders filled: ``{prompt}`` the prompt file, ``{workspace}`` the workspace, ``{iteration}``
and ``{kind}``; without ``{prompt}`` the prompt file's path is appended as the last argument. It
runs in the workspace, in its own process group with stdin closed and the call's timeout. Exit
0 is ``ok``; a non-zero exit is a ``crash`` (retried without using an iteration, as for the
other command-line agents); its cost is recorded as unknown (an arbitrary command reports no
tokens).
"""

from __future__ import annotations

import shlex
import shutil
import time
from pathlib import Path

from envport.agent.backends.base import (
    AgentRequest,
    AgentResult,
    AgentUnavailableError,
    Usage,
    run_process,
)

RESUME_EXIT = 3  # `envport translate` exits with this when it waits for a manual edit


def resume_command(run_dir: Path) -> str:
    return f"envport translate --resume {shlex.quote(str(run_dir))}"


class Manual:
    name = "manual"

    def check(self) -> None:
        return None

    def preflight(self) -> list[str]:
        return []

    def run(self, request: AgentRequest) -> AgentResult:
        run_dir = request.workdir.parent
        prompt = request.prompt_path or run_dir / "prompts" / "(not written)"
        note = run_dir / "NEXT.md"
        note.write_text(
            f"# Waiting for iteration {request.iteration} ({request.kind})\n\n"
            f"1. Read the prompt: `{prompt}`\n"
            f"2. Edit the workspace as it asks: `{request.workdir}` (only "
            f"{', '.join(f'`{p}`' for p in request.editable) or 'the translation'}; edits to "
            f"{', '.join(f'`{p}`' for p in request.frozen)} are reverted and recorded)\n"
            f"3. Continue: `{resume_command(run_dir)}` (verifies the workspace, records "
            "the iteration and writes the next prompt)\n")
        return AgentResult("waiting", None, None, "", Usage(0, 0, 0, None, "unknown"),
                           turns=0, error=f"edit the workspace as {prompt} asks, then run "
                                          f"`{resume_command(run_dir)}`")


class Command:
    """Any agent CLI that takes a prompt file (see the module docstring)."""

    def __init__(self, template: str, price: tuple[float, float, float] | None = None):
        if not template.strip():
            raise AgentUnavailableError("command agent: give the command line, e.g. "
                                        "--agent \"command:myagent --prompt-file {prompt}\"")
        try:
            self.argv = shlex.split(template)
        except ValueError as e:
            raise AgentUnavailableError(f"command agent: cannot split {template!r}: {e}") from e
        self.template = template
        self.price = price
        self.name = f"command:{self.argv[0]}"

    def check(self) -> None:
        exe = self.argv[0]
        if shutil.which(exe) is None and not Path(exe).is_file():
            raise AgentUnavailableError(f"command agent: `{exe}` was not found on PATH (give "
                                        "its full path, or install it)")

    def preflight(self) -> list[str]:
        self.check()
        return []

    def command(self, request: AgentRequest, prompt_file: Path) -> list[str]:
        values = {"prompt": str(prompt_file), "workspace": str(request.workdir),
                  "iteration": str(request.iteration), "kind": request.kind}
        argv = [a.format(**values) if "{" in a else a for a in self.argv]
        if "{prompt}" not in self.template:
            argv.append(str(prompt_file))
        return argv

    def run(self, request: AgentRequest) -> AgentResult:
        t0 = time.monotonic()
        prompt_file = request.prompt_path
        if prompt_file is None:  # called outside the loop: keep the prompt next to the log
            base = request.log_path.parent if request.log_path else request.workdir.parent
            prompt_file = base / f"{request.iteration:04d}.prompt.md"
            prompt_file.parent.mkdir(parents=True, exist_ok=True)
            prompt_file.write_text(request.prompt)
        try:
            argv = self.command(request, prompt_file)
        except (KeyError, IndexError, ValueError) as e:
            return AgentResult("config_error", None, error=f"command agent: the placeholder "
                               f"{e} is not one of {{prompt}}, {{workspace}}, {{iteration}}, "
                               "{kind}")
        try:
            done = run_process(argv, request.workdir, request.timeout_s,
                               log_path=request.log_path)
        except FileNotFoundError as e:
            return AgentResult("unavailable", None, error=f"command agent: {e}")
        usage = Usage(0, 0, 0, None, "unknown")
        wall = time.monotonic() - t0
        if done.timed_out:
            return AgentResult("timeout", None, final_text=done.stdout[-4000:], usage=usage,
                               wall_s=wall, error=f"no answer within {request.timeout_s:.0f} s")
        if done.exit_code != 0:
            return AgentResult("crash", done.exit_code, final_text=done.stdout[-4000:],
                               usage=usage, wall_s=wall,
                               error=f"exit {done.exit_code}: {done.stderr.strip()[-500:]}")
        return AgentResult("ok", 0, final_text=done.stdout[-4000:], usage=usage, turns=1,
                           wall_s=wall)
