"""TOST against scipy: expected values come from scipy.stats.ttest_ind / ttest_rel with one-sided
alternatives on shifted samples, and the interval from the textbook formula, never from the code
under test."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from envport.train.stats import tost


def welch_reference(a: np.ndarray, b: np.ndarray, margin: float, alpha: float):
    # H0 diff <= -margin  <=>  mean(a + margin) - mean(b) <= 0, alternative "greater".
    p_lower = stats.ttest_ind(a + margin, b, equal_var=False, alternative="greater").pvalue
    p_upper = stats.ttest_ind(a - margin, b, equal_var=False, alternative="less").pvalue
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = stats.t.ppf(1 - alpha, df) * math.sqrt(va + vb)
    diff = a.mean() - b.mean()
    return p_lower, p_upper, (diff - half, diff + half)


def test_clearly_equivalent_matches_scipy() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(100.0, 2.0, 40), rng.normal(100.5, 3.0, 30)
    r = tost(a, b, margin=5.0)
    p_lower, p_upper, ci = welch_reference(a, b, 5.0, 0.05)
    assert r["p_lower"] == pytest.approx(p_lower, rel=1e-9)
    assert r["p_upper"] == pytest.approx(p_upper, rel=1e-9)
    assert r["ci"] == pytest.approx(list(ci), rel=1e-9)
    assert r["equivalent"] is True and r["p"] < 0.05
    assert -5.0 < r["ci"][0] < r["ci"][1] < 5.0
    assert r["ci_level"] == pytest.approx(0.90)


def test_clearly_different_is_not_equivalent() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(100.0, 2.0, 40), rng.normal(90.0, 2.0, 40)
    r = tost(a, b, margin=5.0)
    p_lower, p_upper, ci = welch_reference(a, b, 5.0, 0.05)
    assert (r["p_lower"], r["p_upper"]) == pytest.approx((p_lower, p_upper), rel=1e-9)
    assert r["ci"] == pytest.approx(list(ci), rel=1e-9)
    assert r["equivalent"] is False and r["p_upper"] > 0.5
    assert r["ci"][0] > 5.0


def test_noisy_small_samples_are_not_equivalent_though_not_different() -> None:
    # Same true mean, but 3 noisy samples: a t-test cannot tell them apart, and TOST must not
    # call them equivalent (absence of evidence).
    a, b = np.array([90.0, 110.0, 100.0]), np.array([80.0, 120.0, 101.0])
    assert stats.ttest_ind(a, b, equal_var=False).pvalue > 0.5
    r = tost(a, b, margin=5.0)
    p_lower, p_upper, _ = welch_reference(a, b, 5.0, 0.05)
    assert (r["p_lower"], r["p_upper"]) == pytest.approx((p_lower, p_upper), rel=1e-9)
    assert r["equivalent"] is False


@pytest.mark.parametrize(("a", "b"), [([1.0], [1.0, 2.0]), ([], [1.0, 2.0]), ([3.0], [3.0])])
def test_too_few_samples_are_not_equivalent(a: list, b: list) -> None:
    r = tost(a, b, margin=100.0)
    assert r["equivalent"] is False and r["p"] == 1.0
    assert all(math.isnan(c) for c in r["ci"])


def test_paired_matches_scipy_ttest_rel() -> None:
    rng = np.random.default_rng(2)
    base = rng.normal(300.0, 80.0, 12)  # large between-unit spread, small within-pair noise
    a, b = base + rng.normal(0, 1.0, 12), base + rng.normal(0.3, 1.0, 12)
    r = tost(a, b, margin=2.0, paired=True)
    p_lower = stats.ttest_rel(a + 2.0, b, alternative="greater").pvalue
    p_upper = stats.ttest_rel(a - 2.0, b, alternative="less").pvalue
    assert (r["p_lower"], r["p_upper"]) == pytest.approx((p_lower, p_upper), rel=1e-9)
    d = a - b
    half = stats.t.ppf(0.95, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    assert r["ci"] == pytest.approx([d.mean() - half, d.mean() + half], rel=1e-9)
    assert r["equivalent"] is True
    # The same data unpaired: the between-policy spread swamps the test.
    assert tost(a, b, margin=2.0)["equivalent"] is False


def test_zero_spread_and_bad_arguments() -> None:
    assert tost([500.0, 500.0], [500.0, 500.0], margin=1.0)["equivalent"] is True
    assert tost([500.0, 500.0], [400.0, 400.0], margin=1.0)["equivalent"] is False
    with pytest.raises(ValueError, match="margin"):
        tost([1.0, 2.0], [1.0, 2.0], margin=0.0)
    with pytest.raises(ValueError, match="equal lengths"):
        tost([1.0, 2.0], [1.0], margin=1.0, paired=True)
