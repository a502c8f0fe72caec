"""Throughput plots for :func:`envport.bench.benchmark.run_benchmark` results."""

from __future__ import annotations

import math
import os
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: benchmarks run on servers and in CI

import matplotlib.pyplot as plt  # after use("Agg"), so pyplot never picks a GUI

COLORS = {"jax": "tab:blue", "reference": "tab:orange", "mjx": "tab:green", "brax": "tab:red",
          "gymnax": "tab:purple", "envpool": "tab:brown"}
STYLES = ("-", "--", ":", "-.")


def plot_throughput(result: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Steps/s vs batch size (log-log), one line per (backend, mode), saved to ``path``; with
    other backends than the reference (performance peers), a second panel shows the JAX
    translation's steps/s over each other backend's, per batch size."""
    lines: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for row in result["results"]:
        sps = row.get("steps_per_second", math.nan)
        if not (isinstance(sps, int | float) and math.isfinite(sps)):
            continue
        key = (row["backend"], row.get("mode", ""))
        lines.setdefault(key, []).append((row["batch_size"], sps))
    ratios = result.get("ratios") or {}
    with_ratios = any(b != "reference" for b in ratios)

    fig, axes = plt.subplots(1, 2 if with_ratios else 1, figsize=(13 if with_ratios else 7, 4.8),
                             squeeze=False)
    ax = axes[0][0]
    try:
        seen: dict[str, int] = {}
        order = list(COLORS)
        for (backend, mode), points in sorted(lines.items(), key=lambda kv: (
                order.index(kv[0][0]) if kv[0][0] in order else len(order), kv[0])):
            points.sort()
            xs, ys = zip(*points, strict=True)
            k = seen[backend] = seen.get(backend, -1) + 1
            marker = "o" if backend == "jax" else "s"
            ax.plot(xs, ys, STYLES[k % len(STYLES)], marker=marker, color=COLORS.get(backend),
                    label=f"{backend}: {mode}", markersize=4)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("batch size (environments)")
        ax.set_ylabel("steps per second")
        speedup = result.get("speedup", math.nan)
        title = f"{result.get('env', '?')}: random-action throughput"
        if isinstance(speedup, int | float) and math.isfinite(speedup):
            title += f" (best JAX / best reference = {speedup:.3g}x)"
        machine = result.get("machine", {})
        if machine:
            title += (f"\n{machine.get('cores', '?')} cores, jax {machine.get('jax_version', '?')}"
                      f" on {machine.get('jax_backend', '?')}")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        if with_ratios:
            rx = axes[0][1]
            for backend, r in ratios.items():
                points = sorted((int(n), v) for n, v in r["per_batch"].items())
                if points:
                    xs, ys = zip(*points, strict=True)
                    rx.plot(xs, ys, "-o", color=COLORS.get(backend), markersize=4,
                            label=f"jax / {backend} (best vs best {r['best']:.3g}x)")
            rx.axhline(1.0, color="grey", lw=0.8)
            rx.set_xscale("log", base=2)
            rx.set_yscale("log")
            rx.set_xlabel("batch size (environments)")
            rx.set_ylabel("JAX translation steps/s over the other's")
            rx.set_title("ratio at matched batch size (best mode of each)", fontsize=10)
            rx.grid(True, which="both", alpha=0.3)
            rx.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)  # repeated benchmarks must not accumulate open figures
