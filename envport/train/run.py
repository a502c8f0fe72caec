"""A PPO training run: its folder, log, checkpoints, resume and Ctrl-C, around ``program.py``.

A run folder holds ``config.json`` (what defines the experiment), ``log.csv`` (one row per
update), ``checkpoint.pkl`` (every piece of state, after every chunk of updates),
``learning_curve.png`` and ``result.json``. :func:`train` starts or resumes one and
:func:`resume` continues it exactly where its checkpoint left it.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import hashlib
import json
import math
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

import envport
from envport.train.backends import check_backend, check_self_play_backend, check_trainable
from envport.train.config import PPOConfig
from envport.train.host_rollout import HostTrainer
from envport.train.ppo import Params, learning_rate
from envport.train.program import JaxTrainer, program, restore_tree

CONFIG_FILE, LOG_FILE, CHECKPOINT_FILE, PLOT_FILE, RESULT_FILE = (
    "config.json", "log.csv", "checkpoint.pkl", "learning_curve.png", "result.json")
LOG_FIELDS = ("update", "env_steps", "wall_time", "sps", "mean_return", "mean_length", "episodes",
              "learning_rate", "policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac")
RUN_FORMAT = "envport-ppo-run/1"
# Chunks of about this many env steps between progress updates, log lines and checkpoints.
CHUNK_ENV_STEPS = 2**16


class TrainingDiverged(ValueError):
    """An update's loss was not finite: the environment returned a NaN/inf observation or
    reward, or the update blew up. Raised at the end of the chunk that contains it; the run's
    checkpoint stays at the last chunk whose losses were all finite (resumable from there). A
    ValueError, so the CLI reports it in one line like other bad runs."""


@dataclasses.dataclass
class TrainResult:
    run_dir: Path
    env: str
    backend: str
    config: PPOConfig
    env_kwargs: dict[str, Any]
    params: Params  # host (NumPy) pytree of the final network parameters
    updates: int
    env_steps: int
    wall_time: float  # seconds spent training, compilation excluded, all sessions together
    compile_time: float  # seconds compiling, this session
    sps: float  # env steps per second over the training time
    final_mean_return: float  # see final_return()
    interrupted: bool  # stopped by Ctrl-C; resume(run_dir) continues
    log_path: Path
    checkpoint_path: Path
    plot_path: Path | None


# What a run's behaviour can depend on in envport's own tree: the engines, the trainer, the
# generated data, the Node worker and the ROM's sources (not prompt templates or docs).
SOURCE_SUFFIXES = (".py", ".json", ".js", ".c", ".h", ".s", ".inc")


def tree_digest(root: str | os.PathLike[str]) -> str:
    """16 hex digits of sha256 over the files under ``root`` with :data:`SOURCE_SUFFIXES`, by
    relative path and content (installed ``node_modules`` and bytecode left out)."""
    root = Path(root)
    files = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [d for d in subfolders if d not in ("node_modules", "__pycache__")]
        files += [Path(folder, n) for n in names if Path(n).suffix in SOURCE_SUFFIXES]
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@functools.cache
def source_digest() -> str:
    """:func:`tree_digest` of the envport package this process runs: which code trained a run
    (config.json's ``source``), so that a comparison of runs trained by different code says
    so. Compiled extensions and dependencies are not in it (``versions`` names those)."""
    return tree_digest(Path(envport.__file__).resolve().parent)


def run_config(name: str, backend: str, cfg: PPOConfig, env_kwargs: dict[str, Any]
               ) -> dict[str, Any]:
    """What config.json records: enough to rebuild the run and to compare runs."""
    import flax
    return {
        "format": RUN_FORMAT, "env": name, "backend": backend, "env_kwargs": dict(env_kwargs),
        "ppo": cfg.to_dict(), "devices": len(jax.devices()),
        "versions": {"jax": jax.__version__, "flax": flax.__version__,
                     "optax": optax.__version__, "numpy": np.__version__},
        "source": source_digest(),
    }


DAMAGED = ("the run cannot be resumed from it: restore the file, or start the run again with "
           "`envport train ENV --out DIR --overwrite` (Python: overwrite=True)")


def load_run_config(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"{run_dir} is not a training run: it has no {CONFIG_FILE}")
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is damaged (not JSON: {e}); {DAMAGED}") from None
    if not isinstance(config, dict) or config.get("format") != RUN_FORMAT:
        found = config.get("format") if isinstance(config, dict) else type(config).__name__
        raise ValueError(f"{path} is not an envport PPO run config (format {found!r}, "
                         f"expected {RUN_FORMAT!r})")
    missing = [k for k in ("env", "backend", "env_kwargs", "ppo") if k not in config]
    if missing:
        raise ValueError(f"{path} lacks {', '.join(missing)}; {DAMAGED}")
    return config


def hyperparameter_diff(a: dict[str, Any], b: dict[str, Any],
                        ignore: Sequence[str] = ()) -> list[str]:
    """Differences between two run configs in what defines the experiment: the environment, its
    options and every PPO hyperparameter (minus ``ignore``, e.g. "seed")."""
    diffs = []
    for key in ("env", "env_kwargs"):
        if a[key] != b[key]:
            diffs.append(f"{key}: {a[key]!r} vs {b[key]!r}")
    for key in sorted(set(a["ppo"]) | set(b["ppo"])):
        if key not in ignore and a["ppo"].get(key) != b["ppo"].get(key):
            diffs.append(f"ppo.{key}: {a['ppo'].get(key)!r} vs {b['ppo'].get(key)!r}")
    return diffs


def assert_matched(*run_dirs: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Refuse (ValueError) to compare runs unless they share the environment, its options and
    every hyperparameter; only the seed and the backend may differ. Returns their configs.

    Matched hyperparameters are enforced, not assumed: a cross-backend comparison then differs
    in the environment implementation alone.
    """
    configs = [load_run_config(d) for d in run_dirs]
    for d, c in zip(run_dirs[1:], configs[1:], strict=True):
        diffs = hyperparameter_diff(configs[0], c, ignore=("seed",))
        if diffs:
            raise ValueError(f"runs {run_dirs[0]} and {d} cannot be compared: their "
                             "hyperparameters differ (matched hyperparameters are enforced): "
                             + "; ".join(diffs))
    return configs


INT_FIELDS = ("update", "env_steps", "episodes")  # written and read back as integers


def read_log(run_dir: str | os.PathLike[str]) -> list[dict[str, float]]:
    """The rows of ``log.csv`` (``[]`` when there is none); ValueError naming the file and line
    when it is damaged."""
    path = Path(run_dir) / LOG_FILE
    if not path.is_file():
        return []
    rows = []
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is not None and list(reader.fieldnames) != list(LOG_FIELDS):
            raise ValueError(f"{path} has the columns {reader.fieldnames}, not envport's "
                             f"{list(LOG_FIELDS)}; {DAMAGED}")
        for line, row in enumerate(reader, 2):
            try:
                rows.append({k: int(float(v)) if k in INT_FIELDS else float(v)
                             for k, v in row.items()})
            except (TypeError, ValueError):
                raise ValueError(f"{path}, line {line}, is damaged ({row}); {DAMAGED}") from None
    return rows


def final_return(rows: Sequence[dict[str, float]], fraction: float = 0.05) -> float:
    """Mean return of the episodes that ended in the last ``fraction`` of updates (at least
    one update; episode-weighted). NaN when none ended there."""
    if not rows:
        return math.nan
    tail = rows[-max(1, math.ceil(len(rows) * fraction)):]
    episodes = sum(r["episodes"] for r in tail)
    total = sum(r["mean_return"] * r["episodes"] for r in tail if r["episodes"] > 0)
    return total / episodes if episodes else math.nan


def plot_learning_curve(run_dir: str | os.PathLike[str]) -> Path | None:
    """``learning_curve.png`` in ``run_dir``: mean episodic return against env steps."""
    rows = [r for r in read_log(run_dir) if r["episodes"] > 0]
    if not rows:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    config = load_run_config(run_dir)
    steps = np.array([r["env_steps"] for r in rows])
    ret = np.array([r["mean_return"] for r in rows])
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(steps, ret, ".", alpha=0.3, label="per update")
    window = max(1, len(rows) // 50)
    if window > 1:
        smooth = np.convolve(ret, np.ones(window) / window, mode="valid")
        ax.plot(steps[window - 1:], smooth, label=f"mean of {window} updates")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean episodic return")
    ax.set_title(f"PPO on {config['env']} ({config['backend']} backend, "
                 f"seed {config['ppo']['seed']})")
    ax.grid(alpha=0.3)
    ax.legend()
    path = Path(run_dir) / PLOT_FILE
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _save_checkpoint(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as f:
        pickle.dump(payload, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)  # atomic: a crash never leaves half a checkpoint


def load_checkpoint(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(run_dir) / CHECKPOINT_FILE
    if not path.is_file():
        raise ValueError(f"{run_dir} has no checkpoint ({CHECKPOINT_FILE}) to resume from")
    try:
        with path.open("rb") as f:
            ckpt = pickle.load(f)
    except Exception as e:  # truncated, overwritten, or not a pickle at all
        raise ValueError(f"{path} is damaged ({type(e).__name__}: {e}); {DAMAGED}") from None
    missing = [k for k in ("format", "env", "update", "wall_time", "state")
               if not isinstance(ckpt, dict) or k not in ckpt]
    if missing:
        raise ValueError(f"{path} is not an envport checkpoint (it lacks "
                         f"{', '.join(missing)}); {DAMAGED}")
    return ckpt


def _write_log(path: Path, rows: Sequence[dict[str, float]], append: bool) -> None:
    with path.open("a" if append else "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=LOG_FIELDS)
        if not append:
            writer.writeheader()
        for row in rows:
            writer.writerow({k: row[k] for k in LOG_FIELDS})


class _StopFlag:
    """Ctrl-C asks the loop to stop after the chunk in flight (so the checkpoint and the log
    agree); a second Ctrl-C interrupts at once."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: Any = None

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\nCtrl-C: saving a checkpoint after this chunk (Ctrl-C again to abort)",
              flush=True)

    def __enter__(self) -> _StopFlag:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)


def _progress_bar(enabled: bool, total: int, description: str) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("steps  {task.fields[sps]:>9,.0f} SPS  return {task.fields[ret]:>8.2f}"),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        disable=not enabled, transient=False)


def _chunk_rows(stats: list[dict[str, float]], cfg: PPOConfig, first_update: int,
                wall_before: float, seconds: float) -> list[dict[str, float]]:
    rows = []
    sps = len(stats) * cfg.batch_size / max(seconds, 1e-9)
    for i, s in enumerate(stats):
        update = first_update + i + 1
        episodes = s["episodes"]
        rows.append({
            "update": update, "env_steps": update * cfg.batch_size,
            "wall_time": wall_before + seconds * (i + 1) / len(stats), "sps": sps,
            "mean_return": s["return_sum"] / episodes if episodes else math.nan,
            "mean_length": s["length_sum"] / episodes if episodes else math.nan,
            "episodes": int(episodes), "learning_rate": learning_rate(cfg, update - 1),
            **{k: s[k] for k in ("policy_loss", "value_loss", "entropy", "approx_kl",
                                 "clip_frac")},
        })
    return rows


def default_config(name: str) -> tuple[PPOConfig, dict[str, Any]]:
    """``(PPOConfig, env_kwargs)`` that ``envport train NAME`` starts from: the environment's
    ``SPEC.training`` (PPOConfig defaults and no options where it declares none)."""
    training = envport.spec(name).training
    return training.ppo or PPOConfig(), dict(training.env_kwargs)


def resolve_config(name: str, backend: str, steps: int | None, seed: int | None,
                    overrides: dict[str, Any] | None, env_kwargs: dict[str, Any] | None,
                    saved: dict[str, Any] | None) -> tuple[PPOConfig, dict[str, Any]]:
    """The run's config: the saved one when resuming (anything given must agree with it), else
    the environment's defaults (``SPEC.training``), with the overrides applied."""
    if saved is not None:
        base, base_env = PPOConfig.from_dict(saved["ppo"]), dict(saved["env_kwargs"])
    else:
        base, base_env = default_config(name)
    values = base.to_dict()
    for key, value in (overrides or {}).items():
        if key not in values:
            raise ValueError(f"unknown PPO hyperparameter {key!r} in config_overrides; known: "
                             f"{', '.join(sorted(values))}")
        values[key] = value
    if steps is not None:
        values["total_steps"] = int(steps)
    if seed is not None:
        values["seed"] = int(seed)
    cfg = PPOConfig.from_dict(values)
    kwargs = base_env if env_kwargs is None else dict(env_kwargs)
    if saved is not None:
        diffs = hyperparameter_diff(saved, run_config(name, backend, cfg, kwargs))
        if diffs:
            raise ValueError("cannot resume with different hyperparameters (matched "
                             "hyperparameters are enforced): " + "; ".join(diffs))
    return cfg, kwargs


def train(name: str, backend: str = "jax", steps: int | None = None, seed: int | None = None,
          out: str | os.PathLike[str] = "runs/x", config_overrides: dict[str, Any] | None = None,
          resume: bool = False, *, env_kwargs: dict[str, Any] | None = None,
          progress: bool = True, chunk_updates: int | None = None, overwrite: bool = False,
          on_chunk: Callable[[dict[str, float]], None] | None = None,
          init_from: str | os.PathLike[str] | None = None) -> TrainResult:
    """Train PPO on ``name`` with ``backend`` ("jax": the translation, rollout under jit;
    "reference": the real reference stepped on the host) and write the run to ``out``.

    ``steps`` (total env steps) and ``seed`` default to the environment's config
    (``SPEC.training``), as do hyperparameters not in ``config_overrides`` and the
    environment options (``env_kwargs``). ``resume=True`` continues the run in ``out`` exactly;
    anything given must then agree with its config.json (ValueError otherwise). ``out`` holding
    a run is never overwritten unless ``overwrite=True``.

    Writes ``config.json``, ``log.csv`` (one row per update), ``checkpoint.pkl`` (after every
    chunk), ``learning_curve.png`` and ``result.json``. Ctrl-C stops after the chunk in flight,
    saves, and returns with ``interrupted=True``. ``on_chunk`` is called with the last log row
    after each chunk. ``chunk_updates`` (updates between log writes, checkpoints and progress
    refreshes; default about 65k env steps) never changes the results.

    ``init_from`` (a new run only): start from the final network parameters of the run in that
    folder (a curriculum: e.g. a run against a weaker opponent), with a fresh optimizer and
    learning-rate schedule; its environment and network must be this run's (ValueError naming
    the shapes otherwise). The folder is recorded in config.json as ``init_from``.
    """
    backend = check_backend(backend)  # "translation" is "jax"
    spec = envport.spec(name)  # unknown environment: UnknownEnvironmentError naming them
    check_trainable(name, backend)  # no batch for this backend: before any folder is made
    run_dir = Path(out)
    has_run = (run_dir / CONFIG_FILE).is_file() or (run_dir / CHECKPOINT_FILE).is_file()
    saved = None
    if resume:
        saved = load_run_config(run_dir)
        if saved["env"] != name:
            raise ValueError(f"{run_dir} holds a run of {saved['env']!r}, not {name!r}: a "
                             "checkpoint from another environment cannot be resumed")
        if saved["backend"] != backend:
            raise ValueError(f"{run_dir} holds a {saved['backend']!r}-backend run, not "
                             f"{backend!r}")
        if not (run_dir / CHECKPOINT_FILE).is_file():
            raise ValueError(f"{run_dir} has no checkpoint ({CHECKPOINT_FILE}) to resume from")
        if init_from is not None:
            raise ValueError("init_from starts a new run; a resumed run keeps its own start")
    elif has_run and not overwrite:
        raise ValueError(f"{run_dir} already holds a run: continue it with `envport train "
                         f"{name} --resume {run_dir}` (Python: resume=True), replace it with "
                         "--overwrite (overwrite=True), or choose another --out")
    cfg, env_kwargs = resolve_config(name, backend, steps, seed, config_overrides, env_kwargs,
                                      saved)
    devices = len(jax.devices())
    cfg.check(devices)
    if saved is not None and saved.get("devices") != devices:
        import warnings
        warnings.warn(f"{run_dir} was trained on {saved.get('devices')} device(s), resumed on "
                      f"{devices}: it continues correctly but not bit for bit", stacklevel=2)

    # Across processes (jax.distributed.initialize before this call; the mesh over
    # jax.devices() then spans every process): every process runs the same updates, which meet
    # in the collectives, but only process 0 writes the run folder (a shared folder would get
    # every log row once per process). The JAX backend only: the reference backend steps its
    # batch on one host.
    writes = jax.process_index() == 0
    # A host translation's "jax" backend is a host batch too, stepped by the host rollout.
    on_host = backend != "jax" or spec.host
    check_self_play_backend(backend, env_kwargs)  # before any folder is made
    if on_host and jax.process_count() > 1:
        raise ValueError(f"the {backend!r} backend of {name} trains in one process; across "
                         "processes (jax.distributed) only a JAX translation's backend runs")
    prog = program(name, env_kwargs, cfg)
    # Checked against this run's shapes before any folder is made (placed after trainer.init).
    start = None if init_from is None else _start_params(
        init_from, name, jax.eval_shape(prog._init_train, jnp.int32(0))[0].params)
    trainer: JaxTrainer | HostTrainer = (HostTrainer(prog, backend) if on_host
                                         else JaxTrainer(prog))

    created = not run_dir.exists()
    if writes:
        run_dir.mkdir(parents=True, exist_ok=True)
    log_path, ckpt_path = run_dir / LOG_FILE, run_dir / CHECKPOINT_FILE
    if saved is not None:
        ckpt = load_checkpoint(run_dir)
        if ckpt.get("env") != name:
            raise ValueError(f"{ckpt_path} was saved by a {ckpt.get('env')!r} run, not {name!r}")
        done_updates, wall = int(ckpt["update"]), float(ckpt["wall_time"])
        logged = read_log(run_dir)
        if not log_path.is_file() or len([r for r in logged if r["update"] <= done_updates]
                                         ) < done_updates:
            raise ValueError(
                f"{log_path} is missing or holds fewer than the {done_updates} updates the "
                f"checkpoint has done, so the resumed log would have a gap; {DAMAGED}")
        try:
            state = trainer.load(cfg.seed, ckpt["state"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{ckpt_path} does not fit this run ({e}); {DAMAGED}") from None
        # Rows past the checkpoint (a crash between log and checkpoint) would repeat: drop them.
        rows_so_far = [r for r in logged if r["update"] <= done_updates]
        if writes:
            _write_log(log_path, rows_so_far, append=False)
    else:
        if writes:
            for stale in (CHECKPOINT_FILE, RESULT_FILE, PLOT_FILE):  # from an overwritten run
                (run_dir / stale).unlink(missing_ok=True)
            config = run_config(name, backend, cfg, env_kwargs)
            if init_from is not None:
                config["init_from"] = str(init_from)
            (run_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
            _write_log(log_path, [], append=False)
        state = trainer.init(cfg.seed)
        if start is not None:
            # Both backends' states hold the TrainState first as ``train``.
            placed = restore_tree(state.train.params, jax.tree_util.tree_leaves(start))
            state = state._replace(train=state.train._replace(params=placed))
        done_updates, wall, rows_so_far = 0, 0.0, []

    def checkpoint(state: Any = state, done_updates: int = done_updates,
                   wall: float = wall) -> None:
        saved_state = trainer.save(state)  # on every process: it may gather across them
        if writes:
            _save_checkpoint(ckpt_path, {
                "format": RUN_FORMAT, "env": name, "backend": backend,
                "update": done_updates, "env_steps": done_updates * cfg.batch_size,
                "wall_time": wall, "state": saved_state})

    if saved is None:
        checkpoint()  # resumable from the start, even if stopped while compiling
    try:
        run = _Run(name, backend, cfg, env_kwargs, run_dir, trainer, writes)
        return _train_loop(run, state, done_updates, wall, rows_so_far, checkpoint, progress,
                           chunk_updates, on_chunk)
    except (Exception, KeyboardInterrupt) as e:
        # A divergence keeps its finite checkpoint (documented), Ctrl-C its resumable one.
        if saved is None and not _updates_done(ckpt_path) and not isinstance(
                e, KeyboardInterrupt | TrainingDiverged):
            # Nothing was trained: leave no folder that would block the rerun.
            _remove_run(run_dir, created)
        raise


def _start_params(init_from: str | os.PathLike[str], name: str, template: Any) -> Params:
    """The final parameters (host arrays) of the run in ``init_from``, checked against this
    run's parameter shapes ``template``."""
    config, params = load_params(init_from)  # a folder without a run: ValueError naming it
    if config["env"] != name:
        raise ValueError(f"init_from {init_from} holds a run of {config['env']!r}, not "
                         f"{name!r}")
    try:
        restore_tree(template, [np.asarray(x) for x in jax.tree_util.tree_leaves(params)])
    except ValueError as e:
        raise ValueError(f"init_from {init_from}: its network does not fit this run's ({e})"
                         ) from None
    return params


def _updates_done(ckpt_path: Path) -> int:
    try:
        return int(load_checkpoint(ckpt_path.parent)["update"])
    except ValueError:
        return 0


def _remove_run(run_dir: Path, created: bool) -> None:
    for name in (CONFIG_FILE, LOG_FILE, CHECKPOINT_FILE, RESULT_FILE, PLOT_FILE):
        (run_dir / name).unlink(missing_ok=True)
    for events in run_dir.glob("events.out.tfevents.*"):
        events.unlink()
    if created and not any(run_dir.iterdir()):
        run_dir.rmdir()


@dataclasses.dataclass(frozen=True)
class _Run:
    """What a run's loop needs to know about it (``writes``: this process writes its files)."""

    name: str
    backend: str
    cfg: PPOConfig
    env_kwargs: dict[str, Any]
    run_dir: Path
    trainer: JaxTrainer | HostTrainer
    writes: bool


def _train_loop(run: _Run, state: Any, done_updates: int, wall: float,
                rows_so_far: list[dict[str, float]], save: Callable[[Any, int, float], None],
                progress: bool, chunk_updates: int | None,
                on_chunk: Callable[[dict[str, float]], None] | None) -> TrainResult:
    """The updates, chunk by chunk: log.csv and TensorBoard rows, a checkpoint after every
    chunk, the progress bar, Ctrl-C; then the plot and result.json."""
    name, backend, cfg, run_dir, trainer, writes = (
        run.name, run.backend, run.cfg, run.run_dir, run.trainer, run.writes)
    log_path, ckpt_path = run_dir / LOG_FILE, run_dir / CHECKPOINT_FILE
    total = cfg.num_updates
    chunk = chunk_updates or max(1, round(CHUNK_ENV_STEPS / cfg.batch_size))
    interrupted = False
    with _StopFlag() as stop, _progress_bar(progress, total * cfg.batch_size,
                                            f"{name}/{backend}") as bar, \
            _tensorboard(run_dir, done_updates * cfg.batch_size, writes) as board:
        t0 = time.perf_counter()
        if done_updates < total:
            trainer.compile(state)
        compile_time = time.perf_counter() - t0
        task = bar.add_task(f"{name}/{backend}", total=total * cfg.batch_size,
                            completed=done_updates * cfg.batch_size, sps=0.0,
                            ret=final_return(rows_so_far))
        while done_updates < total:
            if stop.requested:
                interrupted = True
                break
            n = min(chunk, total - done_updates)
            t = time.perf_counter()
            new_state, stats = trainer.run(state, n)
            seconds = time.perf_counter() - t
            rows = _chunk_rows(stats, cfg, done_updates, wall, seconds)
            if writes:
                _write_log(log_path, rows, append=True)
                for row in rows:
                    for key in LOG_FIELDS[2:]:
                        if math.isfinite(row[key]):  # no episode ended: no mean return to plot
                            board.add_scalar(f"ppo/{key}", row[key],
                                             global_step=row["env_steps"])
                board.flush()
            bad = [r["update"] for r in rows
                   if not (math.isfinite(r["policy_loss"]) and math.isfinite(r["value_loss"]))]
            if bad:  # carrying NaN parameters on would waste the rest of the run
                raise TrainingDiverged(
                    f"{name}/{backend} seed {cfg.seed}: the loss of update {int(bad[0])} is not "
                    f"finite (a NaN or inf from the environment, or an exploding update); "
                    f"{run_dir} keeps the checkpoint of update {done_updates} (log rows after "
                    "it are dropped on resume)")
            state, done_updates, wall = new_state, done_updates + n, wall + seconds
            save(state, done_updates, wall)
            rows_so_far += rows
            bar.update(task, completed=done_updates * cfg.batch_size, sps=rows[-1]["sps"],
                       ret=final_return(rows_so_far, 0.02))
            if on_chunk is not None:
                on_chunk(rows[-1])
        if stop.requested and done_updates < total:
            interrupted = True

    plot_path = plot_learning_curve(run_dir) if writes else None
    result = TrainResult(
        run_dir=run_dir, env=name, backend=backend, config=cfg, env_kwargs=run.env_kwargs,
        params=trainer.params(state), updates=done_updates,
        env_steps=done_updates * cfg.batch_size, wall_time=wall, compile_time=compile_time,
        sps=done_updates * cfg.batch_size / wall if wall > 0 else math.nan,
        final_mean_return=final_return(rows_so_far), interrupted=interrupted,
        log_path=log_path, checkpoint_path=ckpt_path, plot_path=plot_path)
    summary = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)
               if f.name not in ("params", "config")}
    summary["config"] = cfg.to_dict()
    if writes:
        (run_dir / RESULT_FILE).write_text(json.dumps(summary, indent=2, default=str) + "\n")
    if interrupted:
        print(f"Stopped after {done_updates}/{total} updates; checkpoint and log saved in "
              f"{run_dir}. Continue with `envport train {name} --resume {run_dir}` "
              f"(Python: envport.train.resume({str(run_dir)!r})).", flush=True)
    return result


@contextlib.contextmanager
def _tensorboard(run_dir: Path, resumed_at: int, writes: bool) -> Iterator[Any]:
    """A TensorBoard writer of event files beside log.csv (``tensorboard --logdir runs``),
    steps in env steps. A resumed run purges the events a crash left past its checkpoint.
    None on a process that does not write the run's files."""
    if not writes:
        yield None
        return
    from tensorboardX import SummaryWriter

    writer = SummaryWriter(logdir=str(run_dir), purge_step=resumed_at + 1 if resumed_at else None)
    try:
        yield writer
    finally:
        writer.close()


def resume(run_dir: str | os.PathLike[str], *, progress: bool = True,
           chunk_updates: int | None = None,
           on_chunk: Callable[[dict[str, float]], None] | None = None) -> TrainResult:
    """Continue the run in ``run_dir`` exactly where its checkpoint left it (same results as
    an uninterrupted run with the same seed, on the same number of devices)."""
    config = load_run_config(run_dir)
    return train(config["env"], config["backend"], out=run_dir, resume=True, progress=progress,
                 chunk_updates=chunk_updates, on_chunk=on_chunk)


def load_params(run_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], Params]:
    """``(run config, final network parameters)`` of a run, from its checkpoint."""
    config = load_run_config(run_dir)
    ckpt = load_checkpoint(run_dir)
    cfg = PPOConfig.from_dict(config["ppo"])
    prog = program(config["env"], config["env_kwargs"], cfg)
    # Shapes only (no compilation): the parameters come from the checkpoint.
    template = jax.eval_shape(prog._init_train, jnp.int32(0))[0].params
    n = len(jax.tree_util.tree_leaves(template))
    leaves = ckpt["state"]["device"][:n]  # TrainState.params is the first field of both states
    return config, jax.device_get(restore_tree(template, leaves))
