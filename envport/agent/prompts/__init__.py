"""Prompt templates (Jinja2), one file each: module translation, L1/L2 test generation, repair,
optimisation and the hand-off note. ``render("repair.md.j2", **context)``."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

TEMPLATES = Path(__file__).parent


def _fmt(x: Any) -> str:
    """Numbers as the verifier shows them: 9 significant digits, lists compactly."""
    if isinstance(x, float):
        return f"{x:.9g}"
    if isinstance(x, list) and len(x) > 12:
        return json.dumps(x[:12])[:-1] + ", ...]"
    return str(x)


def _tojson(x: Any, indent: int | None = None) -> str:
    return json.dumps(x, indent=indent, default=lambda o: np.asarray(o).tolist())


@cache
def environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters["fmt"] = _fmt
    env.filters["tojson"] = _tojson
    return env


def render(name: str, **context: Any) -> str:
    text = environment().get_template(name).render(**context)
    # Collapse the blank lines left by conditional blocks (prompts are read by models and
    # people), except inside code fences: the reference code is quoted verbatim.
    lines: list[str] = []
    blank, fenced = 0, False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        blank = blank + 1 if not line.strip() else 0
        if fenced or blank <= 1:
            lines.append(line if fenced else line.rstrip())
    return "\n".join(lines).strip() + "\n"


def names() -> list[str]:
    return sorted(p.name for p in TEMPLATES.glob("*.md.j2") if not p.name.startswith("_"))
