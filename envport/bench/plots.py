"""Throughput plots for :func:`envport.bench.throughput.run_benchmark` results."""

from __future__ import annotations

import math
import os
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: benchmarks run on servers and in CI

import matplotlib.pyplot as plt  # after use("Agg"), so pyplot never picks a GUI


def plot_throughput(result: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Steps/s vs batch size (log-log), one line per (backend, mode), saved to ``path``."""
    lines: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for row in result["results"]:
        key = (row["backend"], row["mode"])
        lines.setdefault(key, []).append((row["batch_size"], row["steps_per_second"]))

    fig, ax = plt.subplots(figsize=(7, 4.5))
    try:
        for (backend, mode), points in lines.items():
            points.sort()
            xs, ys = zip(*points, strict=True)
            style = "-o" if backend == "jax" else "--s"
            ax.plot(xs, ys, style, label=f"{backend}: {mode}", markersize=4)
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
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)  # repeated benchmarks must not accumulate open figures
