"""Field-by-field comparison of one reference step with one translation step."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from envport.core.registry import Tolerance
from envport.verify.report import FieldDiff


def field_error(expected: Any, got: Any) -> float:
    e = np.asarray(expected)
    g = np.asarray(got)
    if e.shape != g.shape:
        return float("inf")
    if e.dtype == np.bool_ or g.dtype == np.bool_:
        return float(np.any(e.astype(bool) != g.astype(bool)))
    ef, gf = e.astype(np.float64), g.astype(np.float64)
    same_nan = np.isnan(ef) & np.isnan(gf)
    diff = np.where(same_nan, 0.0, np.abs(ef - gf))
    return float(np.max(diff)) if diff.size else 0.0


def within(expected: Any, got: Any, tol: Tolerance, bound: Any = None) -> bool:
    """|got - expected| within ``tol`` (:meth:`Tolerance.allowed`), or <= ``bound`` when given."""
    e = np.asarray(expected)
    g = np.asarray(got)
    if e.shape != g.shape:
        return False
    if e.dtype == np.bool_ or g.dtype == np.bool_ or (tol.exact and bound is None):
        if np.issubdtype(e.dtype, np.floating) or np.issubdtype(g.dtype, np.floating):
            ef, gf = e.astype(np.float64), g.astype(np.float64)
            return bool(np.all((ef == gf) | (np.isnan(ef) & np.isnan(gf))))
        return bool(np.all(e.astype(np.int64) == g.astype(np.int64)))
    ef, gf = e.astype(np.float64), g.astype(np.float64)
    allowed = tol.allowed(ef) if bound is None else np.asarray(bound)
    return bool(np.all((np.abs(ef - gf) <= allowed) | (np.isnan(ef) & np.isnan(gf))))


def compare_fields(
    expected: Mapping[str, Any],
    got: Mapping[str, Any],
    tolerance_for: Callable[[str], Tolerance],
    bounds: Mapping[str, Any] | None = None,
) -> list[FieldDiff]:
    """The fields that differ beyond tolerance (empty list: the two sides agree)."""
    diffs = []
    for name, exp in expected.items():
        if name not in got:
            diffs.append(FieldDiff(name, exp, "<missing>", float("inf"), "present"))
            continue
        tol = tolerance_for(name)
        bound = None if bounds is None else bounds.get(name)
        if not within(exp, got[name], tol, bound):
            shown = str(tol) if bound is None else f"envelope {float(np.max(bound)):.3g}"
            diffs.append(FieldDiff(name, exp, got[name], field_error(exp, got[name]), shown))
    return diffs


def step_fields(state: Mapping[str, Any], obs: Any, reward: Any, terminated: Any,
                truncated: Any) -> dict[str, Any]:
    """Everything a step is compared on, as one flat mapping."""
    out = {f"state.{k}": v for k, v in state.items()}
    out.update(obs=np.asarray(obs, np.float32), reward=np.float32(reward),
               terminated=np.bool_(terminated), truncated=np.bool_(truncated))
    return out
