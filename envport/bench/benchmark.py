"""``envport bench ENV``: the reference, the JAX translation and the environment's performance
peers timed side by side in one run, with the translation's ratio to each per batch size and
best vs best (see ``throughput.py`` for how the translation is timed, ``peers.py`` for the
peers, ``timing.py`` for what they share).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import jax

import envport
from envport.bench.peers import peers_throughput, peers_throughput_per_core
from envport.bench.throughput import jax_throughput, jax_throughput_per_core, state_bytes_per_env
from envport.bench.timing import (
    DEFAULT_BATCH_SIZES,
    DEFAULT_SECONDS,
    FIXED_REPEATS,
    PEER_BATCH_SIZES,
    REFERENCE_MAX_BATCH,
    REFERENCE_STEPS,
    SIZED_REPEATS,
    STALL_SECONDS,
    load_average,
    peak_rss_mb,
)


def best_rows(results: Sequence[dict[str, Any]]) -> dict[str, dict[int, dict[str, Any]]]:
    """``{backend: {batch_size: the row with the most steps/s}}`` over modes and devices."""
    best: dict[str, dict[int, dict[str, Any]]] = {}
    for r in results:
        sps = r.get("steps_per_second", math.nan)
        if not (isinstance(sps, int | float) and math.isfinite(sps)):
            continue
        at = best.setdefault(r["backend"], {})
        if r["batch_size"] not in at or sps > at[r["batch_size"]]["steps_per_second"]:
            at[r["batch_size"]] = r
    return best


def ratios(results: Sequence[dict[str, Any]], translation: str = "jax"
           ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per batch size, the best steps/s of each backend and the translation's (JAX's, or a
    host translation's rows under ``translation``) ratio to each other backend; and per other
    backend, ``{"per_batch": {n: ratio}, "best": best translation / best of it}``. A ratio is
    only given where both were measured at that batch size."""
    best = best_rows(results)
    jax_best = best.get(translation, {})
    others = [b for b in best if b != translation]
    sizes = sorted({n for at in best.values() for n in at})
    by_batch: list[dict[str, Any]] = []
    for n in sizes:
        sps = {b: best[b][n]["steps_per_second"] for b in best if n in best[b]}
        ratio = {b: sps[translation] / sps[b] for b in others if translation in sps and b in sps}
        by_batch.append({"batch_size": n, "steps_per_second": sps, "jax_ratio": ratio})
    summary = {}
    for b in others:
        top_jax = max((r["steps_per_second"] for r in jax_best.values()), default=math.nan)
        top = max(r["steps_per_second"] for r in best[b].values())
        summary[b] = {"per_batch": {str(x["batch_size"]): x["jax_ratio"][b]
                                    for x in by_batch if b in x["jax_ratio"]},
                      "best": top_jax / top}
    return by_batch, summary


def run_benchmark(name: str, batch_sizes: Sequence[int] | None = None,
                  steps: int | None = None, per_core: bool = True,
                  peers: bool | Sequence[str] = True, seconds: float = DEFAULT_SECONDS,
                  reference: bool = True,
                  progress: Callable[[str], None] | None = None,
                  stall_seconds: float = STALL_SECONDS, interleave: bool = True,
                  repeats: int | None = None) -> dict[str, Any]:
    """JAX translation of ``name`` vs its reference's throughput hook and its performance peers
    (``EnvSpec.benchmark.peers``; ``peers=False`` skips them, a list picks some), plus memory
    figures.

    ``steps`` fixes the run length (JAX and peers) and the env-steps per batch size (reference);
    by default runs are sized to about ``seconds`` per measurement and the reference hook gets
    ``REFERENCE_STEPS``; each JAX and peer measurement is the best of ``repeats`` runs (default
    ``SIZED_REPEATS`` sized by time, ``FIXED_REPEATS`` with ``steps``). With ``per_core``
    (default) the JAX side runs in a child process with one device per core
    (:func:`jax_throughput_per_core`), else in this process on its current devices. A peer that
    is not installed (or whose child fails) is listed in ``skipped`` with the reason, never an
    error; one that fails part-way keeps its rows (``incomplete``) and is not timed at larger
    batches. ``progress`` receives one line per measured row. The reference runs first; then with
    ``interleave`` (default) each batch size is timed on the translation and every peer before
    the next (a child per backend and batch size), else each sweeps every size in one child.
    """
    spec = envport.spec(name)
    if spec.host:
        return run_host_benchmark(name, batch_sizes, steps, progress)
    env = envport.make(name)
    if isinstance(peers, bool):
        peer_names = list(spec.benchmark.peers) if peers else []
    else:
        unknown = sorted(set(peers) - set(spec.benchmark.peers))
        if unknown:
            raise ValueError(f"{name} has no peer(s) {', '.join(unknown)}; its peers: "
                             f"{', '.join(spec.benchmark.peers) or 'none'}")
        peer_names = [p for p in spec.benchmark.peers if p in peers]
    default_sizes = spec.benchmark.batch_sizes or (
        PEER_BATCH_SIZES if spec.benchmark.peers else DEFAULT_BATCH_SIZES)
    jax_sizes = sorted(set(default_sizes if batch_sizes is None else batch_sizes))
    if not jax_sizes or min(jax_sizes) < 1:
        raise ValueError(f"batch sizes must be positive integers, got {batch_sizes}")
    ref_sizes = [n for n in jax_sizes if n <= REFERENCE_MAX_BATCH] or [min(jax_sizes)]
    ref_steps = REFERENCE_STEPS if steps is None else steps
    if repeats is None:
        repeats = SIZED_REPEATS if steps is None else FIXED_REPEATS
    if repeats < 1:
        raise ValueError(f"repeats must be positive, got {repeats}")

    def report(row: dict[str, Any]) -> None:
        if progress is not None:
            progress(f"{row['backend']:<9} batch {row['batch_size']:>6}  "
                     f"{row['steps_per_second']:>12,.0f} steps/s  ({row.get('mode', '')})")

    load = {"before": load_average()}
    results: list[dict[str, Any]] = []
    hook = spec.benchmark.reference_throughput
    if hook is not None and reference:
        # One call for every size: a hook may add rows of its own (CartPole's Python loop at
        # batch 1) and set up per call.
        for row in hook(ref_sizes, ref_steps):
            results.append(row)
            report(row)
    skipped: dict[str, str] = {}
    incomplete: dict[str, str] = {}
    jax_rss = 0.0
    peer_rss = None
    active = list(peer_names)
    # Interleaved: at each batch size the translation's child, then each peer's, so that the rows
    # compared were measured seconds apart (on a shared machine the load drifts over the minutes
    # a whole sweep takes), at the cost of a child start (~3 s) per backend and batch size.
    for sizes in ([n] for n in jax_sizes) if interleave else [jax_sizes]:
        if per_core:
            rows, rss = jax_throughput_per_core(name, [(n, steps) for n in sizes], repeats,
                                                seconds=seconds, on_row=report,
                                                stall_seconds=stall_seconds)
            jax_rss = max(jax_rss, rss)
            results += rows
        else:
            for n in sizes:
                results += jax_throughput(env, [n], steps, repeats, seconds=seconds,
                                          on_row=report)
            jax_rss = peak_rss_mb()
        for peer in list(active):  # one child per peer: one that stalls loses nothing of others
            try:
                if per_core:
                    rows, rss = peers_throughput_per_core(
                        name, sizes, [peer], steps, repeats, seconds=seconds, on_row=report,
                        stall_seconds=stall_seconds)
                    peer_rss = max(rss, peer_rss or 0.0)
                else:
                    rows = peers_throughput(name, sizes, [peer], steps, repeats,
                                            seconds=seconds, on_row=report)
            except RuntimeError as e:  # crashed or stalled (ChildFailed): keep its rows, and
                rows = list(getattr(e, "rows", []))  # time it at no larger batch
                active.remove(peer)
                if rows or any(r["backend"] == peer for r in results):
                    incomplete[peer] = str(e)
                else:
                    rows = [{"backend": peer, "error": str(e)}]
            for r in rows:
                if "error" in r:  # not installed: no use trying other sizes
                    skipped[r["backend"]] = r["error"]
                    if r["backend"] in active:
                        active.remove(r["backend"])
                else:
                    results.append(r)
    load["after"] = load_average()
    rss_here = peak_rss_mb()
    largest = max(jax_sizes)

    def best(backend: str) -> dict[str, Any]:
        rows = [r for r in results if r["backend"] == backend]
        return max(rows, key=lambda r: r["steps_per_second"], default={})

    best_jax, best_ref = best("jax"), best("reference")
    by_batch, summary = ratios(results)
    return {
        "env": name,
        "results": results,
        "speedup": (best_jax.get("steps_per_second", math.nan)
                    / best_ref.get("steps_per_second", math.nan)),
        # Where each side peaks: the rows behind the speedup.
        "best": {b: best(b) for b in ("jax", "reference", *peer_names) if best(b)},
        # JAX's steps/s over each other backend's, per batch size and best vs best.
        "by_batch": by_batch,
        "ratios": summary,
        "peers": {p: ("skipped: " + skipped[p]) if p in skipped else "measured"
                  for p in peer_names},
        "skipped": skipped,
        "incomplete": incomplete,
        "machine": {"cores": os.cpu_count(), "jax_backend": jax.default_backend(),
                    "jax_version": jax.__version__, "load_average": load},
        # steps None: each JAX/peer row's own "steps" was sized to ~seconds of timed runs.
        "steps": {"reference": ref_steps, "jax": steps, "seconds_per_measurement": seconds,
                  "repeats": repeats},
        "memory": {
            "batch_size": largest,
            "state_bytes_per_env": state_bytes_per_env(env, largest),
            # Peak RSS of this process (the reference's; with per_core nothing else runs
            # here), and of the processes that ran the JAX side (the largest of its children
            # with per_core, else this one, reference included) and the peers.
            "peak_rss_mb_before_jax": rss_here,
            "peak_rss_mb": jax_rss,
            "peerspeak_rss_mb": peer_rss,
        },
    }


def run_host_benchmark(name: str, batch_sizes: Sequence[int] | None = None,
                       steps: int | None = None,
                       progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """A host translation (``EnvSpec.backend == "host"``) vs its reference: the spec's two
    hooks (``Benchmark.reference_throughput`` and ``Benchmark.translation_throughput``) at the
    same batch sizes, one after the other in this process; the result has the keys of
    :func:`run_benchmark`'s, with ``translation`` naming the translation's backend."""
    spec = envport.spec(name)
    hooks = {"reference": spec.benchmark.reference_throughput,
             "translation": spec.benchmark.translation_throughput}
    if hooks["translation"] is None:
        raise ValueError(f"{name} is a host translation with no Benchmark.translation_throughput")
    sizes = sorted(set(batch_sizes or spec.benchmark.batch_sizes or (1,)))
    if not sizes or min(sizes) < 1:
        raise ValueError(f"batch sizes must be positive integers, got {batch_sizes}")
    n_steps = REFERENCE_STEPS if steps is None else steps
    load = {"before": load_average()}
    results: list[dict[str, Any]] = []
    for hook in hooks.values():
        if hook is None:
            continue
        for row in hook(list(sizes), n_steps):
            results.append(row)
            if progress is not None:
                progress(f"{row['backend']:<11} batch {row['batch_size']:>6}  "
                         f"{row['steps_per_second']:>12,.0f} steps/s  ({row.get('mode', '')})")
    load["after"] = load_average()
    by_batch, summary = ratios(results, "translation")
    top = {b: max((r for r in results if r["backend"] == b),
                  key=lambda r: r["steps_per_second"], default={}) for b in hooks}
    return {
        "env": name, "translation": "translation", "results": results,
        "speedup": (top["translation"].get("steps_per_second", math.nan)
                    / top["reference"].get("steps_per_second", math.nan)),
        "best": {b: r for b, r in top.items() if r}, "by_batch": by_batch, "ratios": summary,
        "peers": {}, "skipped": {}, "incomplete": {},
        "machine": {"cores": os.cpu_count(), "jax_backend": "none (host translation)",
                    "load_average": load},
        "steps": {"reference": n_steps, "translation": n_steps},
    }
