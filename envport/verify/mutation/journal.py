"""A mutation run's verdicts on disk as they arrive, so that a run cut short can be resumed.

The journal is a JSON-lines file (``envport mutate ENV --json FILE`` keeps it beside FILE, as
``FILE``'s stem + ``.verdicts.jsonl``). Its first line is the run's header: the environment,
every setting that decides a verdict (seed, sizes, operators, sample size, ``--only``, the
translation's mutation plan, its declared modes), the digests of the mutated modules and of the
environment's package, and the mutant ids in the order the run takes them. Each later line is
one mutant's verdict (or the components control, :mod:`execute`), written, flushed and synced
as soon as it is known: a run killed, or stopped with Ctrl-C, keeps every verdict it finished.

A run that finds a journal with the same header decides only the mutants the journal has no
verdict for; a journal with another header is refused (:class:`JournalMismatch`, exit 2 in the
CLI), naming the flag that differs, since a sample mixed from two settings (or two versions of
the code) would be no one run's score. ``restart`` discards it instead.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

VERSION = 1

# The header field -> the flag (or what) that sets it, for the refusal's message.
FLAGS = {
    "env": "ENV", "seed": "--seed", "states": "--states", "episodes": "--episodes",
    "examples": "--examples", "samples": "--samples", "operators": "--operators",
    "max_mutants": "--max-mutants", "only": "--only", "modes": "the declared modes",
    "layers": "the mutation_plan's layers", "modules": "the mutation_plan's modules",
    "recorded_interaction": "the mutation_plan's recorded_interaction",
    "eager": "--eager / --no-eager (default: the mutation_plan's eager)",
    "components": "the mutation_plan's components",
    "interaction_sources": "the mutation_plan's interaction_sources",
    "digests": "the mutated modules' code (their sha256)",
    "code": "the environment package's code (its sha256)",
    "mutants": "the sampled mutants", "version": "the journal format",
}


class JournalMismatch(ValueError):
    """A journal written by a run with other settings (or code) than this one."""


def journal_for(json_path: str | Path) -> Path:
    """Where ``envport mutate --json FILE`` keeps its verdicts: beside FILE."""
    p = Path(json_path)
    return p.with_name(f"{p.stem}.verdicts.jsonl")


def package_digest(module_file: str | Path) -> str:
    """sha256 over every ``.py`` file of the environment package holding ``module_file`` (the
    folder with an ``__init__.py`` nearest ``envport/envs`` or the file's own folder): its
    components, references, bridges and perturbations decide verdicts too."""
    folder = Path(module_file).resolve().parent
    while (folder.parent / "__init__.py").is_file() and folder.parent.name != "envs":
        folder = folder.parent
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        if "__pycache__" in path.parts or "node_modules" in path.parts:
            continue
        h.update(str(path.relative_to(folder)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


class Journal:
    """One run's verdict file: :meth:`open` checks (or writes) its header and returns the
    records already there; :meth:`add` appends one, synced to disk."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def open(self, header: dict[str, Any], restart: bool = False) -> list[dict[str, Any]]:
        """The records (``{"kind": "verdict" | "control", ...}``) of a journal with this
        ``header``; a new journal (header only) when there is none, or when ``restart``.
        Raises :class:`JournalMismatch` for a journal of another run."""
        header = {"kind": "header", "version": VERSION, **header}
        if self.path.exists() and not restart:
            records = self._read()
            if not records or records[0].get("kind") != "header":
                raise JournalMismatch(f"{self.path} is not a verdict journal of envport mutate "
                                      "(no header line): pass --restart to overwrite it, or "
                                      "another --json")
            old = records[0]
            differ = [k for k in sorted(set(old) | set(header))
                      if k != "kind" and old.get(k) != header.get(k)]
            if differ:
                done = sum(1 for r in records if r.get("kind") == "verdict")
                what = "; ".join(_difference(k, old.get(k), header.get(k)) for k in differ)
                raise JournalMismatch(
                    f"{self.path} holds {done} verdicts of a run with other settings ({what}): "
                    "resume with that run's arguments, or pass --restart to discard its "
                    "verdicts (or another --json)")
            return records[1:]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(header) + "\n")
        os.replace(tmp, self.path)
        return []

    def add(self, kind: str, record: dict[str, Any]) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps({"kind": kind, **record}) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _read(self) -> list[dict[str, Any]]:
        out = []
        for line in self.path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by a kill mid-write: that verdict is lost
                continue
        return out


def _difference(key: str, old: Any, new: Any) -> str:
    flag = FLAGS.get(key, key)
    if key in ("digests", "code", "mutants"):
        return f"{flag} differ"
    return f"{flag} {_show(old)} there, {_show(new)} here"


def _show(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(map(str, value)) or "(none)"
    return "(not set)" if value is None else str(value)
