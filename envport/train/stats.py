"""Equivalence testing: TOST (two one-sided tests) with Welch's t, or paired.

Why not "not significantly different"? A two-sided t-test that fails to reject "the means are
equal" is absence of evidence, not evidence of equivalence: with few seeds or noisy returns it
fails to reject almost anything, so a worse test would "pass" more easily. TOST reverses the
burden of proof. For a stated margin ``D`` it tests two null hypotheses, each one-sided:

- H0_lower: ``mean(a) - mean(b) <= -D``  (rejected when the difference is credibly above -D)
- H0_upper: ``mean(a) - mean(b) >= +D``  (rejected when the difference is credibly below +D)

and declares equivalence only when BOTH are rejected at level ``alpha``; equivalently, when the
``(1 - 2 alpha)`` confidence interval of the difference lies inside ``(-D, D)``. Too few samples
or too much noise then give "not equivalent", never a false "equivalent".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as _st


def _t_sf(t: float, df: float) -> float:
    return float(_st.t.sf(t, df))


def tost(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, margin: float,
         alpha: float = 0.05, *, paired: bool = False) -> dict[str, Any]:
    """Two one-sided tests of ``|mean(a) - mean(b)| < margin``.

    Welch's t (unequal variances, Welch-Satterthwaite degrees of freedom) by default; with
    ``paired=True``, a one-sample t on the differences ``a[i] - b[i]`` (the same units measured
    twice, e.g. the same policies on two evaluation backends).

    Returns ``{"diff", "se", "df", "p_lower", "p_upper", "p", "ci", "ci_level", "margin",
    "alpha", "n_a", "n_b", "method", "equivalent"}``: ``p_lower`` tests H0 diff <= -margin,
    ``p_upper`` tests H0 diff >= +margin, ``p`` is the larger of the two (the TOST p-value), and
    ``ci`` the ``(1 - 2 alpha)`` confidence interval of ``mean(a) - mean(b)``. ``equivalent`` is
    True only when both p-values are below ``alpha``. With fewer than 2 samples per group (2
    pairs when paired) nothing can be shown: p-values 1, NaN interval, not equivalent.
    """
    if not margin > 0:
        raise ValueError(f"margin must be positive, got {margin}")
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    x = np.asarray(a, np.float64).ravel()
    y = np.asarray(b, np.float64).ravel()
    if paired and x.shape != y.shape:
        raise ValueError(f"paired samples need equal lengths, got {x.size} and {y.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("samples must be finite")
    result: dict[str, Any] = {
        "method": "paired t" if paired else "Welch t", "n_a": int(x.size), "n_b": int(y.size),
        "margin": float(margin), "alpha": float(alpha), "ci_level": 1.0 - 2.0 * alpha,
        "mean_a": float(x.mean()) if x.size else math.nan,
        "mean_b": float(y.mean()) if y.size else math.nan,
    }
    if paired:
        d = x - y
        n = d.size
        enough = n >= 2
        diff = float(d.mean()) if n else math.nan
        se = float(d.std(ddof=1) / math.sqrt(n)) if enough else math.nan
        df = float(n - 1) if enough else math.nan
    else:
        enough = x.size >= 2 and y.size >= 2
        diff = float(x.mean() - y.mean()) if x.size and y.size else math.nan
        if enough:
            va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
            se = float(math.sqrt(va + vb))
            denom = va**2 / (x.size - 1) + vb**2 / (y.size - 1)
            df = float((va + vb) ** 2 / denom) if denom > 0 else float(x.size + y.size - 2)
        else:
            se, df = math.nan, math.nan
    result.update(diff=diff, se=se, df=df)
    if not enough:
        result.update(p_lower=1.0, p_upper=1.0, p=1.0, ci=[math.nan, math.nan],
                      equivalent=False, note="too few samples to test equivalence")
        return result
    if se == 0.0:  # no spread at all: the difference is known exactly
        inside_low, inside_high = diff > -margin, diff < margin
        p_lower, p_upper = (0.0 if inside_low else 1.0), (0.0 if inside_high else 1.0)
        ci = [diff, diff]
    else:
        p_lower = _t_sf((diff + margin) / se, df)  # H0: diff <= -margin
        p_upper = _t_sf((margin - diff) / se, df)  # H0: diff >= +margin
        half = float(_st.t.ppf(1.0 - alpha, df)) * se
        ci = [diff - half, diff + half]
    result.update(p_lower=p_lower, p_upper=p_upper, p=max(p_lower, p_upper), ci=ci,
                  equivalent=bool(p_lower < alpha and p_upper < alpha))
    return result
