"""Distribution test: the translation's own sampler against the reference's.

L2 injects the reference's draws and so never exercises the translation's sampler. Here each side
generates its random events independently (the spec says how) and a two-sample test compares
them: chi-square on a contingency table for discrete events, Kolmogorov-Smirnov for continuous
ones, Bonferroni-corrected over the events. A pass means "no difference detected at this sample
size", which is why ``samples`` is large and the L3 lockstep also runs the translation's sampler.
"""

from __future__ import annotations

import time

import numpy as np
from scipy import stats

from envport.core.registry import EnvSpec
from envport.core.seeds import derive_seed
from envport.verify.report import Failure, FieldDiff, LayerResult

ALPHA = 0.001


def two_sample_p(a: np.ndarray, b: np.ndarray) -> tuple[str, float]:
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    values = np.union1d(np.unique(a), np.unique(b))
    if values.size <= 32:  # discrete event
        if values.size == 1:
            return "identical constant", 1.0
        table = np.array([[np.sum(a == v) for v in values], [np.sum(b == v) for v in values]])
        return "chi-square", float(stats.chi2_contingency(table).pvalue)
    return "Kolmogorov-Smirnov", float(stats.ks_2samp(a, b).pvalue)


def check_distribution(spec: EnvSpec, samples: int = 2000, seed: int = 0) -> LayerResult:
    t0 = time.perf_counter()
    v = spec.verification
    if v.sample_reference_events is None or v.sample_translation_events is None:
        return LayerResult("distribution", passed=True, counts={"events": 0},
                           notes=["this environment declares no random events"])
    ref = v.sample_reference_events(samples, seed)
    # Each side its own seed: the translation's sampler must not replay the reference's.
    ours = v.sample_translation_events(samples, derive_seed(seed, 1))
    alpha = ALPHA / max(1, len(ref))
    failures, notes = [], []
    for name, ref_values in ref.items():
        test, p = two_sample_p(ref_values, ours[name])
        notes.append(f"{name}: {test} p={p:.3g} (n={len(ref_values)} per side)")
        if p < alpha:
            failures.append(Failure(
                layer="distribution", test_id=f"distribution[{name}]", seed=seed,
                message=f"the translation's sampler differs from the reference's for {name} "
                        f"({test} p={p:.3g} < {alpha:.3g})",
                diffs=[FieldDiff(f"mean {name}", float(np.mean(ref_values)),
                                 float(np.mean(ours[name])),
                                 abs(float(np.mean(ref_values) - np.mean(ours[name]))),
                                 f"p >= {alpha:.3g}")]))
    return LayerResult("distribution", passed=not failures, counts={"events": len(ref)},
                       failures=failures, notes=notes, seconds=time.perf_counter() - t0)
