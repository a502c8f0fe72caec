"""Verification results as records, rendered for a terminal, as JSON and as a repair prompt.

One :class:`Failure` carries everything needed to reproduce and fix a divergence: the layer, the
test id, the seed, the (shrunk) counterexample (state, action, draws), the first diverging step,
and a field | expected | got | error | tolerance table.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from envport.verify.layers import LAYER_TITLES, LAYERS

__all__ = ["LAYERS", "LAYER_TITLES", "Failure", "FieldDiff", "LayerResult", "Report"]


def _plain(x: Any) -> Any:
    """numpy/JAX values -> JSON-friendly Python values."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        arr = np.asarray(x)
        return arr.item() if arr.ndim == 0 else arr.tolist()
    if isinstance(x, float) and not np.isfinite(x):
        return str(x)
    return x


@dataclass
class FieldDiff:
    field: str
    expected: Any
    got: Any
    error: float
    tolerance: str


@dataclass
class Failure:
    layer: str
    test_id: str
    message: str
    seed: int | None = None
    state: dict[str, Any] | None = None  # reference-form state before the failing step
    action: Any = None
    draws: dict[str, Any] | None = None  # the reference's tape for that step
    step: int | None = None  # first diverging step of a rollout
    diffs: list[FieldDiff] = field(default_factory=list)
    shrunk: bool = False

    def to_json(self) -> dict[str, Any]:
        return _plain(asdict(self))


@dataclass
class LayerResult:
    name: str
    passed: bool
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    complete: bool = True  # False when interrupted part-way
    # Said loudly but not a failure (e.g. too few episodes for the requested power).
    warnings: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)  # a layer's details for --json

    def to_json(self) -> dict[str, Any]:
        out = {
            "passed": self.passed,
            **self.counts,
            "failures": [f.to_json() for f in self.failures],
            "seconds": round(self.seconds, 3),
            "notes": self.notes,
            "complete": self.complete,
        }
        if self.warnings:
            out["warnings"] = self.warnings
        if self.data:
            out["data"] = _plain(self.data)
        return out


@dataclass
class Report:
    """The layers of one mode (``env`` names it: ``pong`` or ``pong[frameskip=4]``) and, in
    ``modes``, the reports of the environment's other declared modes (``--modes all``)."""

    env: str
    layers: dict[str, LayerResult] = field(default_factory=dict)
    interrupted: bool = False
    tolerance_note: str = ""
    command: str = ""
    sizes: dict[str, int] = field(default_factory=dict)
    modes: dict[str, Report] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return (
            not self.interrupted
            and bool(self.layers)
            and all(r.passed and r.complete for r in self.layers.values())
            and all(m.passed for m in self.modes.values())
        )

    def all_modes(self) -> list[Report]:
        """This report and those of the other modes, the default first."""
        return [self, *self.modes.values()]

    def to_json(self) -> dict[str, Any]:
        out = {
            "env": self.env,
            "passed": self.passed,
            "interrupted": self.interrupted,
            "tolerance": self.tolerance_note,
            "sizes": self.sizes,
            "layers": {name: r.to_json() for name, r in self.layers.items()},
        }
        if self.modes:
            out["modes"] = {name: m.to_json() for name, m in self.modes.items()}
        return out

    def write_json(self, path: str) -> None:
        with open(path, "w") as f:
            json.dump(self.to_json(), f, indent=2)

    # ------------------------------------------------------------------ terminal
    def render(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        console = console or Console()
        title = f"envport verify {self.env}" + (
            f" and {len(self.modes)} other mode(s)" if self.modes else "")
        summary = Table(title=escape(title), show_lines=False)
        for col in ("mode", "layer", "result", "checked", "failures", "seconds"):
            summary.add_column(col)
        for mode in self.all_modes():
            for name, r in mode.layers.items():
                verdict = "[green]pass" if r.passed else "[red]FAIL"
                if not r.complete:
                    verdict += " [yellow](interrupted)"
                checked = ", ".join(f"{v} {k}" for k, v in r.counts.items())
                summary.add_row(escape(mode.env), LAYER_TITLES.get(name, name), verdict, checked,
                                str(len(r.failures)), f"{r.seconds:.1f}")
        console.print(summary)
        for mode in self.all_modes():
            for r in mode.layers.values():
                for note in r.notes if mode is self else []:
                    console.print(f"[dim]{LAYER_TITLES.get(r.name, r.name)}: {escape(note)}")
                for warning in r.warnings:
                    where = f" ({mode.env})" if mode is not self else ""
                    console.print(f"[yellow]warning: {LAYER_TITLES.get(r.name, r.name)}{where}: "
                                  f"{escape(warning)}")
                for f in r.failures[:3]:
                    if mode is not self:
                        console.print(f"[red]in mode {escape(mode.env)}:[/]")
                    self._render_failure(console, f)
        if self.interrupted:
            console.print("[yellow]Interrupted: the table shows what was verified before Ctrl-C.")
        console.print("[bold green]PASSED" if self.passed else "[bold red]NOT VERIFIED")

    @staticmethod
    def _render_failure(console: Any, f: Failure) -> None:
        from rich.markup import escape
        from rich.table import Table

        where = f" at step {f.step}" if f.step is not None else ""
        console.print(f"[red]{LAYER_TITLES.get(f.layer, f.layer)} {escape(f.test_id)}{where}[/]: "
                      + escape(f.message + (f" (seed {f.seed})" if f.seed is not None else "")))
        if f.diffs:
            t = Table(show_header=True)
            for col in ("field", "expected", "got", "error", "tolerance"):
                t.add_column(col)
            for d in f.diffs:
                t.add_row(escape(d.field), escape(_fmt(d.expected)), escape(_fmt(d.got)),
                          f"{d.error:.3g}", d.tolerance)
            console.print(t)

    # ------------------------------------------------------------------ prompt
    def to_prompt(self) -> str:
        """A repair prompt: the lowest failing layer in detail, the others as counts."""
        lines = [f"# Repair request: the JAX translation of `{self.env}`", ""]
        lines.append("## Verification status")
        for mode in self.all_modes():
            for name, r in mode.layers.items():
                state = "pass" if r.passed else f"FAIL ({len(r.failures)} failures)"
                counts = ", ".join(f"{v} {k}" for k, v in r.counts.items())
                where = f" ({mode.env})" if self.modes else ""
                lines.append(f"- {LAYER_TITLES.get(name, name)}{where}: {state}; checked {counts}")
        # The lowest failing layer over every mode (the default mode first at equal layers).
        failing = sorted(((LAYERS.index(r.name) if r.name in LAYERS else len(LAYERS), i), r, m)
                         for i, m in enumerate(self.all_modes())
                         for r in m.layers.values() if not r.passed)
        if not failing:
            lines += ["", "Every layer passes. Nothing to repair."]
            return "\n".join(lines) + "\n"
        _, lowest, mode = failing[0]
        in_mode = f" in mode `{mode.env}`" if mode is not self else ""
        lines += ["", f"## Lowest failing layer: {LAYER_TITLES.get(lowest.name, lowest.name)}"
                  f"{in_mode}", ""]
        if self.tolerance_note:
            lines += [f"Comparison rule: {self.tolerance_note}", ""]
        for i, f in enumerate(lowest.failures[:3], 1):
            lines.append(f"### Failure {i}: `{f.test_id}`" + (f" (seed {f.seed})" if f.seed
                                                              is not None else ""))
            lines.append(f.message)
            if f.step is not None:
                lines.append(f"First diverging step: {f.step}")
            if f.state is not None:
                kind = "minimal (shrunk) counterexample" if f.shrunk else "counterexample"
                lines += ["", f"State before the step ({kind}, reference form):", "```json",
                          json.dumps(_plain(f.state), indent=1), "```"]
            if f.action is not None:
                lines.append(f"Action: `{_plain(f.action)}`")
            if f.draws:
                lines.append(f"Reference random draws (tape): `{json.dumps(_plain(f.draws))}`")
            if f.diffs:
                lines += ["", "| field | expected | got | error | tolerance |",
                          "|---|---|---|---|---|"]
                lines += [f"| {d.field} | {_fmt(d.expected)} | {_fmt(d.got)} | {d.error:.3g} | "
                          f"{d.tolerance} |" for d in f.diffs]
            lines.append("")
        rerun = (mode.command or self.command if mode is self else mode.command) or (
            f"envport verify {mode.env} --layer {lowest.name}")
        lines += [
            "## What to do",
            f"Rerun: `{rerun}`",
            "The reference and the tests are correct. Fix the translation files so the expected "
            "values above are produced; do not edit the tests, the reference or the harness.",
        ]
        return "\n".join(lines) + "\n"


def _fmt(x: Any) -> str:
    x = _plain(x)
    if isinstance(x, float):
        return f"{x:.9g}"
    return str(x)
