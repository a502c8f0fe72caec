"""The result of a mutation run: kill rates, by layer and operator, survivors, equivalences;
as JSON and as rich tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envport.verify.layers import LAYERS


@dataclass
class MutationReport:
    env: str
    source: str
    results: list[dict[str, Any]] = field(default_factory=list)
    generated: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0  # this invocation's wall time (a resumed run's earlier ones excluded)
    planned: int = 0  # mutants in the sample (``results`` holds fewer when interrupted)
    resumed: int = 0  # verdicts read back from the run's journal, not decided by this invocation
    interrupted: bool = False  # stopped by Ctrl-C: ``results`` is what was finished

    @property
    def equivalent(self) -> list[dict[str, Any]]:
        return [r for r in self.results if r["equivalent"]]

    @property
    def killed(self) -> list[dict[str, Any]]:
        return [r for r in self.results if r["killed_by"]]

    @property
    def survivors(self) -> list[dict[str, Any]]:
        return [r for r in self.results if not r["killed_by"] and not r["equivalent"]]

    @property
    def kill_rate(self) -> float:
        """Killed / non-equivalent mutants."""
        live = len(self.results) - len(self.equivalent)
        return len(self.killed) / live if live else 1.0

    @property
    def kill_rate_strict(self) -> float:
        """The same, counting as equivalent only mutants equal on every input: those shown
        equal within the tolerance or on the reachable states only count as survivors."""
        loose = sum(1 for r in self.equivalent if r.get("equivalence_kind") in
                    ("boundary", "reachable"))
        live = len(self.results) - len(self.equivalent) + loose
        return len(self.killed) / live if live else 1.0

    def equivalent_by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.equivalent:
            kind = r.get("equivalence_kind", "program")
            out[kind] = out.get(kind, 0) + 1
        return out

    def by_layer(self) -> dict[str, int]:
        out = {layer: 0 for layer in (*LAYERS, "timeout")}
        for r in self.killed:
            out[r["killed_by"]] = out.get(r["killed_by"], 0) + 1
        return out

    def by_operator(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for r in self.results:
            row = out.setdefault(r["operator"], {"mutants": 0, "killed": 0, "equivalent": 0,
                                                 "survived": 0})
            row["mutants"] += 1
            kind = "killed" if r["killed_by"] else "equivalent" if r["equivalent"] else "survived"
            row[kind] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        keep = ("id", "operator", "line", "source_line", "original", "mutated", "description",
                "detail")
        return {
            "env": self.env,
            "source": self.source,
            "generated": self.generated,
            "mutants": len(self.results),
            "killed": len(self.killed),
            "equivalent": len(self.equivalent),
            "kill_rate": round(self.kill_rate, 4),
            "kill_rate_strict": round(self.kill_rate_strict, 4),
            "equivalent_by_kind": self.equivalent_by_kind(),
            "by_layer": self.by_layer(),
            "by_operator": self.by_operator(),
            "survivors": [{k: r.get(k) for k in keep} for r in self.survivors],
            "equivalent_mutants": [{**{k: r.get(k) for k in keep},
                                    "kind": r.get("equivalence_kind", "program"),
                                    "explanation": r["equivalence"]} for r in self.equivalent],
            "results": self.results,
            "settings": self.settings,
            "seconds": round(self.seconds, 1),
            "planned": self.planned or len(self.results),
            "resumed": self.resumed,
            "interrupted": self.interrupted,
            "complete": len(self.results) >= (self.planned or len(self.results)),
        }


Progress = Callable[[dict[str, Any], int, int], None]


def render(report: MutationReport, console: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    data = report.to_json()
    # ``source``: the mutated files' paths joined by ", " (an environment may mutate several)
    files = ", ".join(Path(p).name for p in report.source.split(", "))
    t = Table(title=f"envport mutate {report.env}: {data['mutants']} mutants of "
                    f"{files} ({report.generated} generated)")
    for col in ("layer", "killed"):
        t.add_column(col)
    for layer, n in data["by_layer"].items():
        t.add_row(layer, str(n))
    console.print(t)
    ops = Table(title="by operator")
    for col in ("operator", "mutants", "killed", "equivalent", "survived"):
        ops.add_column(col)
    for op, row in data["by_operator"].items():
        ops.add_row(op, *(str(row[k]) for k in ("mutants", "killed", "equivalent", "survived")))
    console.print(ops)
    for r in report.survivors:
        console.print(f"[yellow]survivor[/] {r['id']} line {r['line']} ({r['operator']}: "
                      f"{r['description']}): `{r['source_line']}`")
    kinds = ", ".join(f"{n} {k}" for k, n in report.equivalent_by_kind().items())
    console.print(f"equivalent: {len(report.equivalent)}" + (f" ({kinds})" if kinds else "")
                  + f"; kill rate of non-equivalent mutants: [bold]{100 * report.kill_rate:.1f}%"
                  f"[/] ({len(report.killed)} of {len(report.results) - len(report.equivalent)})"
                  f", {100 * report.kill_rate_strict:.1f}% counting only equivalences that hold "
                  f"for every input; {report.seconds:.0f} s")
    if report.resumed:
        console.print(f"{report.resumed} of these verdicts were read back from the run's "
                      "journal (an earlier, interrupted invocation)")
    if data["complete"] is False:
        console.print(f"[yellow]unfinished[/]: {len(report.results)} of {data['planned']} "
                      "mutants decided" + (" (interrupted)" if report.interrupted else "")
                      + ": rerun the same command to decide the rest")
