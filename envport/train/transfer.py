"""L4 of the verification hierarchy: policy transfer between the translation and the reference.

:func:`transfer` trains ``seeds`` PPO runs on each backend with matched hyperparameters (the same
config, only the seed and the backend differ; enforced by :func:`envport.train.assert_matched`),
evaluates every policy on both backends, and builds the 2x2 cross-evaluation table

=================  ======================  ======================
train \\ eval       JAX translation         reference
=================  ======================  ======================
JAX                mean ± std              mean ± std
reference          mean ± std              mean ± std
=================  ======================  ======================

where each cell is the mean ± std, over the policies of that training backend, of each policy's
score over ``episodes`` evaluation episodes: its mean return, or, for a game whose
``SPEC.training.metric`` is ``"win_rate"``, the share of the episodes it won (the issues state
their margins in win rate). Two equivalence tests (TOST, see :mod:`envport.train.stats`) at
``alpha`` with the stated ``margin`` (in the metric's units):

``sim_to_sim`` (evaluation backend)
    The SAME 2N policies (N trained on each backend), each evaluated on the JAX translation and
    on the reference: paired TOST on the per-policy scores, JAX minus reference. Does a
    policy behave the same on the translation as on the reference? Identical policies (the two
    runs of a seed, when training on both backends is the same computation) count once.
``train_backend`` (training backend)
    The N policies trained on the JAX translation against the N trained on the reference, all
    evaluated on the reference: paired TOST on the per-policy scores, JAX-trained minus
    reference-trained, pairs matched by seed. Does training on the translation produce policies
    as good on the real thing as training on the real thing?

    Why paired: the two runs of seed ``i`` start from the same network parameters and draw the
    same PPO keys (minibatch shuffles, action sampling: ``Program.host_keys`` splits as the JAX
    rollout does), only the environment differs; where the translation reproduces the
    reference's draws (Pong), the JAX backend also starts from the reference batch's seeds
    (``backends.seeded_reset``), so the two runs of a seed play the same games and, with a
    faithful translation, are the same computation. Much of the spread between seeds comes
    from what the runs of a seed share, so the design pairs by seed, as common random numbers,
    and tests the per-seed differences. The
    pairing is fixed by the design before any run, never chosen after seeing the data; pairs
    are independent across seeds, which is what the paired t needs. The Welch (unpaired) test on
    the same numbers is reported as ``train_backend_unpaired`` for information only.

The verdict ``equivalent`` is True only when BOTH tests show equivalence.

Why "not significantly different" is not the test
-------------------------------------------------
A t-test that fails to reject "equal means" is absence of evidence, not evidence of absence:
with few seeds or noisy returns it fails to reject almost any difference, so a broken
translation evaluated with fewer seeds would "pass" more easily. TOST puts the burden of proof
on equivalence: it must reject both "the difference is <= -margin" and "the difference is >=
+margin", i.e. the 90% confidence interval of the difference (for alpha 0.05) must lie inside
(-margin, +margin). More noise or fewer seeds can then only make equivalence harder to show.

A start (``init_from``, ``--init DIR``): every run of both backends starts from the final
network of the run in DIR (e.g. ``envport imitate``'s clone of a fixed player, where PPO from
scratch would leave every policy losing nearly every game), with its own seed's optimizer and
keys. The start's parameter digest is in the result.

Resumption: every run lives in ``out/<backend>-seed<seed>``. A finished run with the same
configuration is reused, an unfinished one (Ctrl-C, crash) is resumed from its checkpoint, and
the evaluations are cached in ``out/evaluations.json``, so re-running an interrupted transfer
retrains nothing. The cache is keyed by the policy's parameters (their digest), the evaluation
backend, episodes, seed and environment options: an evaluation is a function of those, so two
runs holding the same network (a seed's runs on both backends, where training is the same
computation) are evaluated once. Reuse keys a run by its configuration, not by the code that
trained it: each run's config.json records that code (``source``,
:func:`envport.train.run.source_digest`), the result lists the runs by it (``sources``), and a
comparison of runs trained by different code says so on the terminal and in the report.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import envport
from envport.core.registry import L4_METRICS
from envport.train.backends import BACKENDS
from envport.train.evaluation import evaluate
from envport.train.run import (
    CHECKPOINT_FILE,
    CONFIG_FILE,
    RESULT_FILE,
    assert_matched,
    hyperparameter_diff,
    load_params,
    load_run_config,
    resolve_config,
    run_config,
    train,
)
from envport.train.stats import tost

EVAL_CACHE = "evaluations.json"
RESULT_JSON = "transfer.json"
REPORT_MD = "transfer.md"
PLOT_PNG = "transfer.png"
EVAL_SEED = 10_000  # evaluation seeds are EVAL_SEED + training seed: disjoint from training

def default_margin(name: str) -> float:
    """The documented margin of ``name`` (``SPEC.training.margin``, in ``SPEC.training.metric``'s
    units: about 5% of the best return a trained policy reaches, or the paper's margin in win
    rate, with the reason in ``margin_note``); environments without one must be given a margin
    explicitly."""
    margin = envport.spec(name).training.margin
    if margin is None:
        raise ValueError(f"no default equivalence margin for {name!r}: pass --margin D (a "
                         "difference of mean returns, or win rates, that counts as equivalent)")
    return margin


def episode_scores(name: str, returns: Any) -> np.ndarray:
    """Each evaluation episode's contribution to ``name``'s L4 metric (``SPEC.training.
    metric``): its return, or 1.0 for a win (a positive return) and 0.0 otherwise, so the mean
    is the win rate. The evaluations cache keeps the returns; the metric is applied here."""
    values = np.asarray(returns, dtype=np.float64)
    if envport.spec(name).training.metric == "win_rate":
        return (values > 0).astype(np.float64)
    return values


def score_format(metric: str) -> str:
    """The format spec reports print a policy's score in: a win rate to three decimals."""
    return ".3f" if metric == "win_rate" else ",.1f"


def metric_label(name: str) -> str:
    """How reports name ``name``'s L4 metric ("mean return", "win rate")."""
    return L4_METRICS[envport.spec(name).training.metric]


def policy_summary(name: str, run_dir: str | os.PathLike[str], episodes: int = 100,
                   margin: float | None = None, alpha: float = 0.05) -> dict[str, Any]:
    """One trained policy evaluated on both backends (``episodes`` each, the same seed): mean
    and std of the episodes' scores (:func:`episode_scores`: returns, or wins) per backend and a
    Welch TOST on them, JAX minus reference. Cheap (no training), so ``envport run`` reports it;
    it is a sim-to-sim check of ONE policy, not L4's test over seeds (:func:`transfer`)."""
    margin = default_margin(name) if margin is None else margin
    scores = {b: episode_scores(name, evaluate(name, b, run_dir, episodes=episodes,
                                               seed=EVAL_SEED)) for b in BACKENDS}
    test = tost(scores["jax"], scores["reference"], margin, alpha)
    return _finite({"env": name, "episodes": episodes, "margin": margin,
                    "metric": envport.spec(name).training.metric,
                    "metric_label": metric_label(name),
                    "scores": {b: {"mean": float(r.mean()), "std": float(r.std(ddof=1))
                                    if r.size > 1 else 0.0} for b, r in scores.items()},
                    "tost": test})

WHY_TOST = (
    "A test that fails to find a significant difference is absence of evidence, not evidence "
    "of equivalence: fewer seeds or noisier returns make it pass more easily. TOST (two "
    "one-sided tests) puts the burden of proof on equivalence: both H0 'difference <= -margin' "
    "and H0 'difference >= +margin' must be rejected at alpha, i.e. the (1 - 2 alpha) "
    "confidence interval of the difference must lie inside (-margin, +margin).")

COMPARES = {
    "sim_to_sim": (
        "evaluation backend: the same policies (all seeds, trained on either backend), each "
        "evaluated on the JAX translation (a) and on the reference (b); paired TOST on the "
        "per-policy scores, a - b"),
    "train_backend": (
        "training backend: policies trained on the JAX translation (a) vs policies trained on "
        "the reference (b), all evaluated on the reference; paired TOST (pairs share the seed: "
        "same initial network and PPO keys) on the per-policy scores, a - b"),
}


def _finite(x: Any) -> Any:
    """JSON-safe: NaN/inf become None, NumPy scalars plain numbers."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_finite(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _log(progress: bool, message: str) -> None:
    if progress:
        print(message, flush=True)


def _plan_run(name: str, backend: str, seed: int, steps: int | None,
              overrides: dict[str, Any] | None, env_kwargs: dict[str, Any] | None,
              run_dir: Path, init_from: str | None = None) -> tuple[str, dict[str, Any] | None]:
    """What ``run_dir`` needs: ``("reused", its summary)`` for a finished run with this
    configuration, ``("resume", None)`` for an unfinished one, ``("train", None)`` for none;
    ValueError for a run with another configuration (or another start, ``init_from``)."""
    cfg, kwargs = resolve_config(name, backend, steps, seed, overrides, env_kwargs, None)
    expected = run_config(name, backend, cfg, kwargs)
    if not ((run_dir / CONFIG_FILE).is_file() and (run_dir / CHECKPOINT_FILE).is_file()):
        return "train", None
    saved = load_run_config(run_dir)
    diffs = hyperparameter_diff(saved, expected)
    if saved["backend"] != backend:
        diffs.append(f"backend: {saved['backend']!r} vs {backend!r}")
    if saved.get("init_from") != init_from:
        diffs.append(f"init_from: {saved.get('init_from')!r} vs {init_from!r}")
    if diffs:
        raise ValueError(f"{run_dir} holds a run with a different configuration ("
                         + "; ".join(diffs) + "): choose another output folder")
    if (run_dir / RESULT_FILE).is_file():
        done = json.loads((run_dir / RESULT_FILE).read_text())
        if not done.get("interrupted") and int(done.get("updates", -1)) == cfg.num_updates:
            return "reused", done
    return "resume", None


def _train_run(name: str, backend: str, seed: int, steps: int | None,
               overrides: dict[str, Any] | None, env_kwargs: dict[str, Any] | None,
               run_dir: Path, resume: bool, progress: bool,
               init_from: str | None = None) -> dict[str, Any]:
    """Train (or resume) the run in ``run_dir``; its result.json."""
    if resume:
        result = train(name, backend, out=run_dir, resume=True, steps=steps, seed=seed,
                       config_overrides=overrides, env_kwargs=env_kwargs, progress=progress)
    else:
        result = train(name, backend, steps=steps, seed=seed, out=run_dir,
                       config_overrides=overrides, env_kwargs=env_kwargs, progress=progress,
                       overwrite=True, init_from=init_from)
    if result.interrupted:
        raise KeyboardInterrupt(f"training of {run_dir} was interrupted; run the transfer "
                                "again to resume it")
    return json.loads((run_dir / RESULT_FILE).read_text())


def _ensure_run(name: str, backend: str, seed: int, steps: int | None,
                overrides: dict[str, Any] | None, env_kwargs: dict[str, Any] | None,
                run_dir: Path, progress: bool, init_from: str | None = None) -> dict[str, Any]:
    """Train, resume or reuse the run in ``run_dir``; returns its summary and what was done."""
    action, done = _plan_run(name, backend, seed, steps, overrides, env_kwargs, run_dir,
                             init_from)
    if done is not None:
        _log(progress, f"  reusing {run_dir}")
        return {**done, "status": "reused"}
    _log(progress, f"  {'resuming' if action == 'resume' else 'training'} {run_dir}")
    done = _train_run(name, backend, seed, steps, overrides, env_kwargs, run_dir,
                      action == "resume", progress, init_from)
    return {**done, "status": "resumed" if action == "resume" else "trained"}


def _remote_run(task: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bytes]]:
    """A Ray task: one training run in a folder of the worker's own, from the files of the
    driver's run folder (a checkpoint to resume, or none); returns result.json and every file
    of the folder, so the driver needs no file system shared with the workers."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="envport-transfer-") as tmp:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        for fname, data in task["files"].items():
            (run_dir / fname).write_bytes(data)
        done = _train_run(task["name"], task["backend"], task["seed"], task["steps"],
                          task["overrides"], task["env_kwargs"], run_dir, task["resume"],
                          progress=False, init_from=task["init_from"])
        # result.json names its folder: the driver's, where these files go
        here, there = str(run_dir), task["run_dir"]
        done = {k: there + v[len(here):] if isinstance(v, str) and v.startswith(here) else v
                for k, v in done.items()}
        (run_dir / RESULT_FILE).write_text(json.dumps(done, indent=2, default=str) + "\n")
        return done, {f.name: f.read_bytes() for f in run_dir.iterdir() if f.is_file()}


def _ensure_runs_on_ray(address: str, name: str, jobs: list[tuple[str, int, Path]],
                        steps: int | None, overrides: dict[str, Any] | None,
                        env_kwargs: dict[str, Any] | None, progress: bool,
                        init_from: str | None = None) -> list[dict[str, Any]]:
    """:func:`_ensure_run` for every ``(backend, seed, run_dir)`` of ``jobs``, the runs that
    need training as Ray tasks at once; each task's folder is written into its ``run_dir``.
    A start (``init_from``) is read by the workers from its path: a folder they can all read."""
    from envport.scale import RayExecutor

    summaries: list[dict[str, Any] | None] = [None] * len(jobs)
    tasks: list[dict[str, Any]] = []
    where: list[int] = []
    for j, (backend, seed, run_dir) in enumerate(jobs):
        action, done = _plan_run(name, backend, seed, steps, overrides, env_kwargs, run_dir,
                                 init_from)
        if done is not None:
            _log(progress, f"  reusing {run_dir}")
            summaries[j] = {**done, "status": "reused"}
            continue
        files = ({f.name: f.read_bytes() for f in run_dir.iterdir() if f.is_file()}
                 if action == "resume" else {})
        tasks.append({"name": name, "backend": backend, "seed": seed, "steps": steps,
                      "overrides": overrides, "env_kwargs": env_kwargs,
                      "resume": action == "resume", "files": files,
                      "run_dir": str(run_dir), "init_from": init_from})
        where.append(j)
    if tasks:
        ex = RayExecutor(address)
        _log(progress, f"  {len(tasks)} training runs as Ray tasks ({ex.cpus} CPUs)")
        try:
            for out in ex.outcomes(_remote_run, tasks):
                j, task = where[out.index], tasks[out.index]
                if out.failure is not None:
                    raise RuntimeError(f"training {task['run_dir']} on Ray failed ("
                                       f"{out.failure}): {out.detail}")
                done, files = out.value
                run_dir = Path(task["run_dir"])
                run_dir.mkdir(parents=True, exist_ok=True)
                for fname, data in files.items():
                    (run_dir / fname).write_bytes(data)
                _log(progress, f"  trained {run_dir}")
                summaries[j] = {**done, "status": "resumed" if task["resume"] else "trained"}
        finally:
            ex.close()
    assert all(s is not None for s in summaries)
    return summaries  # type: ignore[return-value]


def params_digest(run_dir: str | os.PathLike[str]) -> str:
    """SHA-256 of a run's final parameters (their bytes, leaf by leaf)."""
    import hashlib

    import jax

    h = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(load_params(run_dir)[1]):
        h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return h.hexdigest()


def _cell(values: list[float]) -> dict[str, Any]:
    arr = np.asarray(values, np.float64)
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
            "n_policies": int(arr.size), "per_policy": [float(v) for v in arr]}


def transfer(name: str, seeds: int, margin: float, steps: int | None = None,
             episodes: int = 100, out: str | os.PathLike[str] | None = None,
             progress: bool = True, *, alpha: float = 0.05,
             config_overrides: dict[str, Any] | None = None,
             env_kwargs: dict[str, Any] | None = None,
             plot: str | os.PathLike[str] | None = None,
             ray: str | None = None,
             init_from: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Train ``seeds`` PPO runs per backend (seeds 0..seeds-1, matched hyperparameters),
    evaluate each policy on both backends over ``episodes`` episodes, and test equivalence
    with TOST at ``alpha`` and ``margin`` (return units). See the module docstring for exactly
    what each test compares.

    ``steps`` (env steps per run), ``config_overrides`` and ``env_kwargs`` default to the
    environment's config. ``out`` (default ``runs/<name>-transfer``) receives the runs,
    ``transfer.json``, ``transfer.md`` and the plot (``plot``, default ``out/transfer.png``).
    Re-running with the same arguments reuses finished runs and cached evaluations and resumes
    unfinished ones. With ``ray`` (a Ray cluster's address, or ``"auto"``) the training runs
    are Ray tasks, all at once, each sent back into its folder under ``out``; the parameters
    are the same as trained here (a run is a function of its config, seed and device count).
    The evaluations run here. ``init_from``: every run starts from the final network of the
    run in that folder (module doc). Returns the JSON written to ``out/transfer.json``.
    """
    envport.spec(name)  # unknown environment: UnknownEnvironmentError naming the known ones
    if int(seeds) < 1:
        raise ValueError(f"seeds must be at least 1, got {seeds}")
    if not margin > 0:
        raise ValueError(f"margin must be positive, got {margin}")
    if int(episodes) < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    if not 0 < alpha < 0.5:  # checked here, not after hours of training
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    if ray is not None:
        from envport.scale import check_address, require_ray

        check_address(ray)
        require_ray()
    start = None
    if init_from is not None:
        # Checked here, not after the first run's set-up; the path is recorded absolute, so
        # a rerun from another folder (or a Ray worker) names the same start.
        init_from = str(Path(init_from).resolve())
        if load_run_config(Path(init_from))["env"] != name:
            raise ValueError(f"init_from {init_from} holds a run of another environment, not "
                             f"{name!r}")
        start = {"dir": init_from, "params_sha256": params_digest(init_from)}
    out_dir = Path(out if out is not None else f"runs/{name}-transfer")
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    jobs = [(backend, seed, out_dir / f"{backend}-seed{seed}")
            for backend in BACKENDS for seed in range(int(seeds))]
    if ray is None:
        summaries = [_ensure_run(name, backend, seed, steps, config_overrides, env_kwargs,
                                 run_dir, progress, init_from)
                     for backend, seed, run_dir in jobs]
    else:
        summaries = _ensure_runs_on_ray(ray, name, jobs, steps, config_overrides, env_kwargs,
                                        progress, init_from)
    runs: list[dict[str, Any]] = []
    for (backend, seed, run_dir), summary in zip(jobs, summaries, strict=True):
        runs.append({"backend": backend, "seed": seed, "dir": str(run_dir),
                     "status": summary["status"], "env_steps": summary["env_steps"],
                     "wall_time": summary["wall_time"], "sps": summary["sps"],
                     "final_mean_return": summary["final_mean_return"]})
    configs = assert_matched(*(r["dir"] for r in runs))
    sources = source_versions(runs, configs)
    if len(sources) > 1:
        print(f"warning: {mixed_sources_note(sources)}", file=sys.stderr, flush=True)

    cache_path = out_dir / EVAL_CACHE
    cache: dict[str, list[float]] = (json.loads(cache_path.read_text())
                                     if cache_path.is_file() else {})
    options = json.dumps(configs[0]["env_kwargs"], sort_keys=True)
    means: dict[tuple[str, str], list[float]] = {}
    for r in runs:
        r["params_sha256"] = params_digest(r["dir"])
        for eval_backend in BACKENDS:
            key = (f"{r['params_sha256']}|{eval_backend}|{episodes}|{EVAL_SEED + r['seed']}|"
                   f"{options}")
            if key not in cache:
                _log(progress, f"  evaluating {r['backend']}-seed{r['seed']} on {eval_backend}"
                               f" ({episodes} episodes)")
                returns = evaluate(name, eval_backend, r["dir"], episodes=int(episodes),
                                   seed=EVAL_SEED + r["seed"])
                cache[key] = [float(x) for x in returns]
                cache_path.write_text(json.dumps(cache))
            r.setdefault("eval", {})[eval_backend] = float(np.mean(episode_scores(name,
                                                                               cache[key])))
            means.setdefault((r["backend"], eval_backend), []).append(r["eval"][eval_backend])

    table = {tb: {eb: _cell(means[tb, eb]) for eb in BACKENDS} for tb in BACKENDS}
    # sim_to_sim counts each distinct policy once: where training is the same computation on
    # both backends (Pong), the two runs of a seed hold identical parameters, and counting the
    # pair twice would shrink the interval with no new information.
    distinct: dict[str, dict[str, Any]] = {}
    for r in runs:
        distinct.setdefault(r["params_sha256"], r)
    on_jax = [r["eval"]["jax"] for r in distinct.values()]
    on_ref = [r["eval"]["reference"] for r in distinct.values()]
    tests = {
        "sim_to_sim": {**tost(on_jax, on_ref, margin, alpha, paired=True),
                       "compares": COMPARES["sim_to_sim"], "a": "evaluated on jax",
                       "b": "evaluated on reference"},
        # runs were appended seed by seed per backend, so index i is seed i on both sides
        "train_backend": {**tost(means["jax", "reference"], means["reference", "reference"],
                                 margin, alpha, paired=True),
                          "compares": COMPARES["train_backend"], "a": "trained on jax",
                          "b": "trained on reference"},
    }
    equivalent = all(t["equivalent"] for t in tests.values())
    unpaired = {**tost(means["jax", "reference"], means["reference", "reference"], margin,
                       alpha), "compares": "as train_backend, Welch (unpaired): information "
                "only, not part of the verdict"}
    plot_path = Path(plot) if plot is not None else out_dir / PLOT_PNG
    result = {
        "env": name, "seeds": int(seeds), "margin": float(margin), "alpha": float(alpha),
        "metric": envport.spec(name).training.metric, "metric_label": metric_label(name),
        "episodes": int(episodes), "steps": runs[0]["env_steps"],
        "config": configs[0]["ppo"] | {"seed": None}, "env_kwargs": configs[0]["env_kwargs"],
        "table": table, "tost": tests, "train_backend_unpaired": unpaired,
        "equivalent": bool(equivalent),
        "verdict": ("equivalent" if equivalent else "equivalence NOT shown"),
        "why_tost": WHY_TOST, "runs": runs, "wall_time": time.perf_counter() - t0,
        "plot": str(plot_path), "out": str(out_dir), "sources": sources, "init_from": start,
    }
    result = _finite(result)
    plot_transfer(result, plot_path)
    (out_dir / RESULT_JSON).write_text(json.dumps(result, indent=2) + "\n")
    (out_dir / REPORT_MD).write_text(markdown(result))
    return result


def plot_transfer(result: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Bars (mean ± std over policies) per cell of the cross-evaluation table."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    try:
        width = 0.38
        for j, eb in enumerate(BACKENDS):
            xs = np.arange(len(BACKENDS)) + (j - 0.5) * width
            cells = [result["table"][tb][eb] for tb in BACKENDS]
            ax.bar(xs, [c["mean"] for c in cells], width, yerr=[c["std"] for c in cells],
                   capsize=5, label=f"evaluated on {eb}")
        ax.set_xticks(np.arange(len(BACKENDS)), [f"trained on {tb}" for tb in BACKENDS])
        ax.set_ylabel(f"{result['metric_label']} per policy ({result['episodes']} episodes)")
        s2s, tr = result["tost"]["sim_to_sim"], result["tost"]["train_backend"]
        ax.set_title(
            f"{result['env']}: {result['seeds']} seeds per backend, margin {result['margin']:g}"
            f" -> {result['verdict']}\nTOST p: eval-backend {s2s['p']:.3g}, "
            f"train-backend {tr['p']:.3g}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)


def _fmt(x: Any, spec: str = ".4g") -> str:
    return "n/a" if x is None else format(x, spec)


def source_versions(runs: list[dict[str, Any]], configs: list[dict[str, Any]]
                    ) -> dict[str, list[str]]:
    """The runs by the envport source that trained them (config.json's ``source``; runs from
    before it was recorded: "unrecorded"). A reused run folder may hold runs of older code."""
    sources: dict[str, list[str]] = {}
    for r, c in zip(runs, configs, strict=True):
        sources.setdefault(c.get("source", "unrecorded"), []).append(
            f"{r['backend']}-seed{r['seed']}")
    return sources


def mixed_sources_note(sources: dict[str, list[str]]) -> str:
    return (f"these runs were trained by {len(sources)} versions of envport's source ("
            + "; ".join(f"{k}: {', '.join(v)}" for k, v in sources.items())
            + "): the comparison mixes code; retrain the older runs in a new folder")


def markdown(result: dict[str, Any]) -> str:
    """The transfer result as a short markdown report."""
    lines = [f"# envport transfer {result['env']}", "",
             f"{result['seeds']} PPO seeds per backend, {result['steps']} env steps each, "
             f"matched hyperparameters; every policy evaluated over {result['episodes']} "
             f"episodes on each backend; a policy's score is its {result['metric_label']}. "
             + (f"Every run started from the network of `{result['init_from']['dir']}` "
                f"(parameters sha256 {result['init_from']['params_sha256'][:16]}). "
                if result.get("init_from") else "") +
             f"Margin {result['margin']:g}, alpha "
             f"{result['alpha']:g}. Verdict: **{result['verdict']}**.", "",
             *([f"**Warning**: {mixed_sources_note(result['sources'])}.", ""]
               if len(result.get("sources", {})) > 1 else []),
             "| trained on \\ evaluated on | " + " | ".join(BACKENDS) + " |",
             "|---|" + "---|" * len(BACKENDS)]
    digits = score_format(result["metric"])
    for tb in BACKENDS:
        cells = [result["table"][tb][eb] for eb in BACKENDS]
        lines.append(f"| {tb} | " + " | ".join(
            f"{_fmt(c['mean'], digits)} ± {_fmt(c['std'], digits)}" for c in cells) + " |")
    lines += ["", "| test | compares | diff | CI | p (lower, upper) | equivalent |",
              "|---|---|---|---|---|---|"]
    for name, t in result["tost"].items():
        ci = t["ci"]
        lines.append(f"| {name} | {t['compares']} | {_fmt(t['diff'])} | "
                     f"[{_fmt(ci[0])}, {_fmt(ci[1])}] | {_fmt(t['p_lower'])}, "
                     f"{_fmt(t['p_upper'])} | {t['equivalent']} |")
    lines += ["", "## Why not \"not significantly different\"", "", WHY_TOST, ""]
    return "\n".join(lines)
