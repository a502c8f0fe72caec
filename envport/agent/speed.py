"""Is a change measurably faster? Old and new timed interleaved, a confidence interval on the
speedup, and the decision the optimisation phase takes from it.

The two versions are timed alternately in one run (old, new, new, old, old, new, ...: the order
flips every repeat so a drift of the machine's speed falls on both alike), ``repeats`` times
each. Repeat ``i`` gives one paired speedup per batch size, ``new_i / old_i``; the speedup of
the repeat is the geometric mean over the batch sizes. The interval is Student's t on the log
speedups over the repeats (n - 1 degrees of freedom), mapped back with exp. A change is kept
only when the interval's lower end is above 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def t_interval(logs: Sequence[float], confidence: float) -> tuple[float, float, float]:
    """(mean, low, high) of the mean of ``logs``; low = high = mean for one value."""
    from scipy import stats

    n = len(logs)
    mean = sum(logs) / n
    if n < 2:
        return mean, -math.inf, math.inf
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def speedup_report(old: Sequence[dict[int, float]], new: Sequence[dict[int, float]],
                   confidence: float = 0.95) -> dict[str, Any]:
    """The paired speedups of ``new`` over ``old`` (one dict batch size -> steps/s per repeat)
    with their interval, overall and per batch size; ``faster``: the lower end is above 1."""
    if len(old) != len(new) or not old:
        raise ValueError(f"speedup_report: {len(old)} old and {len(new)} new timings")
    batches = sorted(set(old[0]).intersection(*old, *new))
    if not batches or any(r[b] <= 0 for r in (*old, *new) for b in batches):
        return {"faster": False, "reason": "a timing is missing or zero", "repeats": len(old),
                "confidence": confidence, "speedup": None, "per_batch": {}}
    per_repeat = [sum(math.log(n[b] / o[b]) for b in batches) / len(batches)
                  for o, n in zip(old, new, strict=True)]
    mean, low, high = t_interval(per_repeat, confidence)
    per_batch = {}
    for b in batches:
        m, lo, hi = t_interval([math.log(n[b] / o[b]) for o, n in zip(old, new, strict=True)],
                               confidence)
        per_batch[b] = {"speedup": math.exp(m), "low": math.exp(lo), "high": math.exp(hi),
                        "old_median": _median([o[b] for o in old]),
                        "new_median": _median([n[b] for n in new])}
    speedup = {"point": math.exp(mean), "low": math.exp(low), "high": math.exp(high)}
    return {"faster": speedup["low"] > 1.0, "repeats": len(old), "confidence": confidence,
            "batch_sizes": batches, "speedup": speedup, "per_batch": per_batch,
            "old": [dict(o) for o in old], "new": [dict(n) for n in new]}


def describe(report: dict[str, Any]) -> str:
    """One line: the speedup, its interval, the repeats, and per batch size."""
    s = report.get("speedup")
    if not s:
        return f"not measured ({report.get('reason', 'no timings')})"
    level = f"{report['confidence'] * 100:g}%"
    batches = ", ".join(f"batch {b}: {v['speedup']:.3f}x [{v['low']:.3f}, {v['high']:.3f}]"
                        for b, v in report["per_batch"].items())
    return (f"speedup {s['point']:.3f}x, {level} CI [{s['low']:.3f}, {s['high']:.3f}] over "
            f"{report['repeats']} interleaved repeats ({batches})")


def _median(xs: list[float]) -> float:
    ys = sorted(xs)
    mid = len(ys) // 2
    return ys[mid] if len(ys) % 2 else (ys[mid - 1] + ys[mid]) / 2


def interleaved_order(repeats: int) -> list[str]:
    """old, new, new, old, old, new, ...: each repeat's pair, its order flipped every repeat."""
    order: list[str] = []
    for r in range(repeats):
        order += ["old", "new"] if r % 2 == 0 else ["new", "old"]
    return order
