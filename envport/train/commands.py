"""Command-line entries for training: ``envport train``, ``envport transfer`` and
``envport bench ENV --ppo``. ``register(subparsers)`` adds the first two to the main parser and
returns their handlers; ``add_ppo_bench`` / ``run_ppo_bench`` extend ``envport bench``.

Every handler returns an exit status: 0 success, 1 when ``transfer`` does not show equivalence,
2 for bad input (with a one-line message), 130 on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from envport.cli_args import alpha, check_output, positive_float, positive_int, seed_int
from envport.core.registry import UnknownEnvironmentError

console = Console()
err = Console(stderr=True)

Handler = Callable[[argparse.Namespace], int]


def parse_set(items: list[str] | None) -> dict[str, Any]:
    """``["lr=1e-3", "hidden_sizes=128,128", "network=gru"]`` -> typed overrides (JSON values,
    comma lists as lists of numbers, anything else a string)."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--set takes KEY=VALUE, got {item!r}")
        value: Any
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            if "," in raw:
                try:
                    value = [json.loads(v) for v in raw.split(",") if v.strip()]
                except json.JSONDecodeError:
                    raise ValueError(f"--set {key}: cannot parse {raw!r}") from None
            else:
                value = raw
        out[key] = value
    return out


def _guard(fn: Handler) -> Handler:
    """Bad input -> a clear message and exit 2; Ctrl-C -> 130."""
    def run(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except (UnknownEnvironmentError, ValueError) as e:
            err.print(f"[red]error:[/] {escape(str(e))}")
            return 2
        except KeyboardInterrupt as e:
            err.print(f"[yellow]interrupted[/] {escape(str(e))}".rstrip())
            return 130
    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


def _fmt(x: Any, spec: str = ",.1f") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return format(x, spec)


def _summary(title: str, rows: tuple[tuple[str, str], ...]) -> Table:
    table = Table(title=title)
    table.add_column("")
    table.add_column("value", justify="right")
    for label, value in rows:
        table.add_row(label, value)
    return table


# ---------------------------------------------------------------------------------- train
def check_init(path: str | None) -> None:
    """``--init DIR`` (train, transfer) names a run folder, checked before any work."""
    if path is not None and not (Path(path) / "config.json").is_file():
        raise ValueError(f"--init {path}: not a run folder (no config.json)")


@_guard
def cmd_train(args: argparse.Namespace) -> int:
    """envport train ENV --backend jax|reference --steps N --seed S --out DIR"""
    from envport.pettingzoo import POOL
    from envport.train import load_run_config, train
    from envport.train.backends import OPPONENT, POOL_OPTIONS, check_opponent
    from envport.train.run import default_config

    overrides = parse_set(args.set)
    env_kwargs = None
    if args.opponent is not None:
        # Checked before anything is built or written: a bad value names the flag.
        check_opponent(args.env, args.opponent)
        if args.resume:
            env_kwargs = dict(load_run_config(args.resume)["env_kwargs"])
        else:
            env_kwargs = default_config(args.env)[1]
        env_kwargs[OPPONENT] = args.opponent
    pool = {k: getattr(args, k) for k in POOL_OPTIONS if getattr(args, k) is not None}
    if pool:
        flags = ", ".join("--" + k.replace("_", "-") for k in pool)
        if args.resume:
            raise ValueError(f"{flags}: a --resume'd run keeps its own pool (its checkpoint "
                             "holds the ring)")
        if args.opponent != POOL:
            raise ValueError(f"{flags}: options of self-play (--opponent {POOL}), not of "
                             f"--opponent {args.opponent}")
        assert env_kwargs is not None
        env_kwargs |= pool
    if args.resume:
        if args.init is not None:
            raise ValueError("--init DIR starts a new run from DIR's network; a --resume'd "
                             "run keeps its own start")
        saved = load_run_config(args.resume)
        if args.out and Path(args.out) != Path(args.resume):
            raise ValueError("--resume DIR continues the run in DIR; do not also give --out")
        backend = args.backend or saved["backend"]
        result = train(args.env, backend, steps=args.steps, seed=args.seed, out=args.resume,
                       config_overrides=overrides or None, resume=True, env_kwargs=env_kwargs)
    else:
        backend = args.backend or "jax"
        out = args.out or f"runs/{args.env}-{backend}"
        check_output(out, "--out", folder=True)
        check_init(args.init)
        result = train(args.env, backend, steps=args.steps, seed=args.seed, out=out,
                       config_overrides=overrides or None, overwrite=args.overwrite,
                       env_kwargs=env_kwargs, init_from=args.init)
    table = _summary(f"envport train {result.env} ({result.backend} backend)", (
        ("env steps", f"{result.env_steps:,}"), ("updates", f"{result.updates:,}"),
        ("training time", f"{result.wall_time:.1f} s (+{result.compile_time:.1f} s compile)"),
        ("steps/s", _fmt(result.sps, ",.0f")),
        ("final mean return", _fmt(result.final_mean_return, ".2f")),
        ("seed", str(result.config.seed)), ("run", str(result.run_dir))))
    console.print(table)
    if result.interrupted:
        console.print(f"interrupted: continue with envport train {result.env} --resume "
                      f"{result.run_dir}")
        return 130
    return 0


# -------------------------------------------------------------------------------- imitate
@_guard
def cmd_imitate(args: argparse.Namespace) -> int:
    """envport imitate ENV --expert heuristic --steps N --out DIR"""
    from envport.train.backends import OPPONENT, check_opponent
    from envport.train.imitation import check_expert, imitate
    from envport.train.run import default_config

    # Checked before anything is built or written: a bad value names its flag.
    check_expert(args.env, args.expert)
    env_kwargs = default_config(args.env)[1]
    if args.opponent is not None:
        check_opponent(args.env, args.opponent)
        env_kwargs[OPPONENT] = args.opponent
    out = args.out or f"runs/{args.env}-imitate-{args.expert}"
    check_output(out, "--out", folder=True)
    result = imitate(args.env, args.expert, steps=args.steps, out=out, seed=args.seed,
                     env_kwargs=env_kwargs, config_overrides=parse_set(args.set) or None,
                     overwrite=args.overwrite)
    table = _summary(f"envport imitate {args.env} (expert: {result.expert})", (
        ("env steps", f"{result.env_steps:,}"), ("iterations", f"{result.iterations:,}"),
        ("time", f"{result.wall_time:.1f} s (+{result.compile_time:.1f} s compile)"),
        ("agreement with the expert (held out)", _fmt(result.held_out_accuracy, ".3f")),
        ("expert's mean return", _fmt(result.expert_return, ".3f")),
        ("run", str(result.run_dir))))
    console.print(table)
    console.print(f"fine-tune it: envport train {args.env} --init {result.run_dir} --out DIR")
    return 130 if result.interrupted else 0


# ------------------------------------------------------------------------------- transfer
def transfer_table(result: dict[str, Any]) -> Table:
    backends = list(result["table"])
    table = Table(title=f"envport transfer {result['env']}: {result['metric_label']} per policy "
                        f"(mean ± std over {result['seeds']} seeds)")
    table.add_column("trained on \\ evaluated on")
    for b in backends:
        table.add_column(b, justify="right")
    from envport.train.transfer import score_format

    digits = score_format(result["metric"])
    for tb in backends:
        table.add_row(tb, *(f"{_fmt(result['table'][tb][eb]['mean'], digits)} ± "
                            f"{_fmt(result['table'][tb][eb]['std'], digits)}" for eb in backends))
    return table


def transfer_line(summary: dict[str, Any]) -> str:
    """One line: the trained policy's mean return (or win rate) on each backend and the TOST
    verdict."""
    r, t = summary["scores"], summary["tost"]
    ci = t["ci"]
    ci_text = "n/a" if None in ci else f"[{ci[0]:.3g}, {ci[1]:.3g}]"
    return (f"the trained policy's {summary['metric_label']} over {summary['episodes']} "
            f"episodes: {r['jax']['mean']:.2f} ± "
            f"{r['jax']['std']:.2f} on the JAX translation, {r['reference']['mean']:.2f} ± "
            f"{r['reference']['std']:.2f} on the reference; difference "
            f"{t['ci_level']:.0%} CI {ci_text} vs margin ±{t['margin']:g} -> "
            f"{'equivalent' if t['equivalent'] else 'equivalence NOT shown'} (Welch TOST on "
            "the episodes; L4 over seeds: envport transfer)")


@_guard
def cmd_transfer(args: argparse.Namespace) -> int:
    """envport transfer ENV --seeds N --margin D: L4 policy transfer with TOST."""
    from envport.train.transfer import default_margin, transfer

    margin = default_margin(args.env) if args.margin is None else args.margin
    check_output(args.json, "--json")
    check_output(args.plot, "--plot")
    check_output(args.out or f"runs/{args.env}-transfer", "--out", folder=True)
    check_init(args.init)
    result = transfer(args.env, seeds=args.seeds, margin=margin, steps=args.steps,
                      episodes=args.episodes, out=args.out, alpha=args.alpha,
                      config_overrides=parse_set(args.set) or None, plot=args.plot,
                      ray=args.ray, init_from=args.init)
    console.print(transfer_table(result))
    for name, t in result["tost"].items():
        ci = t["ci"]
        console.print(f"[bold]{name}[/] ({t['compares']}): diff {_fmt(t['diff'], '.3g')}, "
                      f"{t['ci_level']:.0%} CI [{_fmt(ci[0], '.3g')}, {_fmt(ci[1], '.3g')}] vs "
                      f"±{t['margin']:g}, p = {_fmt(t['p_lower'], '.3g')} / "
                      f"{_fmt(t['p_upper'], '.3g')} -> "
                      f"{'equivalent' if t['equivalent'] else 'NOT shown'}")
    colour = "green" if result["equivalent"] else "red"
    console.print(f"verdict: [bold {colour}]{result['verdict']}[/] (margin {result['margin']:g},"
                  f" alpha {result['alpha']:g}); report in {result['out']}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        console.print(f"wrote {args.json}")
    console.print(f"wrote {result['plot']}")
    return 0 if result["equivalent"] else 1


def register(subparsers: Any) -> dict[str, Handler]:
    """Add ``train`` and ``transfer`` to ``subparsers``; returns ``{command: handler}``."""
    t = subparsers.add_parser(
        "train", help="train PPO on the JAX translation or the reference",
        description="Train PPO on the JAX translation (--backend jax) or the real reference "
                    "(--backend reference). The run folder gets config.json, log.csv (one row "
                    "per update), checkpoint.pkl, learning_curve.png and TensorBoard event "
                    "files: view them with `tensorboard --logdir runs` (pip install "
                    "tensorboard).")
    t.add_argument("env")
    t.add_argument("--backend", choices=("jax", "translation", "reference"),
                   help="jax (default; also named translation: the translation, a host "
                        "translation's batch for EnvSpec.backend='host') or reference; a "
                        "resumed run keeps its own")
    t.add_argument("--steps", type=positive_int,
                   help="total environment steps (default: the config's)")
    t.add_argument("--seed", type=seed_int)
    t.add_argument("--out", help="run folder (default runs/ENV-BACKEND); it holds config.json, "
                                 "log.csv, checkpoint.pkl, learning_curve.png and TensorBoard "
                                 "event files (view them: tensorboard --logdir runs)")
    t.add_argument("--resume", metavar="DIR", help="continue the run in DIR exactly")
    t.add_argument("--overwrite", action="store_true", help="replace a run already in --out")
    t.add_argument("--init", metavar="DIR",
                   help="start from the final network of the run in DIR (a curriculum, e.g. "
                        "a run against a weaker opponent); fresh optimizer and schedule; the "
                        "network and observation must match")
    t.add_argument("--opponent", metavar="NAME",
                   help="two-player games (pokemon-gen1, tcg-pocket): train player 0 against "
                        "this opponent: heuristic or random (fixed players), or pool "
                        "(pokemon-gen1: self-play against the run's own past policies, JAX "
                        "backend) (default: the "
                        "environment's SPEC.training.env_kwargs); the policy samples legal "
                        "actions only")
    t.add_argument("--pool-size", type=positive_int, metavar="N",
                   help="with --opponent pool: past networks the pool keeps (default 8)")
    t.add_argument("--pool-every", type=positive_int, metavar="K",
                   help="with --opponent pool: PPO updates between two writes of the current "
                        "network into the pool (default 50; the first update writes too)")
    t.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="PPO hyperparameter override, e.g. --set lr=1e-3 --set "
                        "hidden_sizes=128,128 (repeatable)")

    x = subparsers.add_parser("transfer", help="L4: train on both backends, cross-evaluate, "
                                                "TOST for equivalence")
    x.add_argument("env")
    x.add_argument("--seeds", type=positive_int, default=5, help="PPO seeds per backend")
    x.add_argument("--margin", type=positive_float,
                   help="equivalence margin in the environment's L4 metric (default: its "
                        "documented one, SPEC.training.margin: in mean return pong 1.0, "
                        "cartpole 25, halfcheetah 100, gb-catch 0.5; in win rate "
                        "pokemon-gen1 0.02, tcg-pocket 0.05)")
    x.add_argument("--steps", type=positive_int,
                   help="env steps per run (default: the config's)")
    x.add_argument("--episodes", type=positive_int, default=100,
                   help="evaluation episodes per policy and backend")
    x.add_argument("--alpha", type=alpha, default=0.05,
                   help="significance level of each one-sided test (0 < alpha < 0.5)")
    x.add_argument("--out", help="folder for the runs and the report (default runs/ENV-transfer)")
    x.add_argument("--json", help="write the result as JSON")
    x.add_argument("--plot", help="write the cross-evaluation plot here (PNG)")
    x.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="PPO hyperparameter override for every run (repeatable)")
    x.add_argument("--init", metavar="DIR",
                   help="start every run of both backends from the final network of the run "
                        "in DIR (e.g. `envport imitate`'s clone); each seed keeps its own "
                        "optimizer and keys")
    x.add_argument("--ray", metavar="ADDRESS",
                   help="train the runs as tasks on this Ray cluster, all at once (auto: the "
                        "one this machine joined with `ray start`; HOST:PORT); the evaluation "
                        "stays here; needs pip install 'envport[scale]'")
    i = subparsers.add_parser(
        "imitate", help="behaviour cloning of a fixed player, the start PPO fine-tunes",
        description="Clone a fixed player of a two-player game (its choices by masked "
                    "cross-entropy, the value of its games by the critic) into a PPO run "
                    "folder at update 0; start PPO from it with `envport train ENV --init "
                    "DIR`.")
    i.add_argument("env")
    i.add_argument("--expert", default="heuristic",
                   help="the fixed player to clone: heuristic (default) or random")
    i.add_argument("--opponent", metavar="NAME",
                   help="the fixed player the expert plays against (default: the "
                        "environment's SPEC.training.env_kwargs)")
    i.add_argument("--steps", type=positive_int, default=1_000_000,
                   help="environment steps of the expert's play (default 1,000,000)")
    i.add_argument("--seed", type=seed_int, default=0)
    i.add_argument("--out", help="run folder (default runs/ENV-imitate-EXPERT)")
    i.add_argument("--overwrite", action="store_true", help="replace a run already in --out")
    i.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="PPO hyperparameter override (network, batch, lr), repeatable")
    return {"train": cmd_train, "transfer": cmd_transfer, "imitate": cmd_imitate}


# --------------------------------------------------------------------------- bench --ppo
def add_ppo_bench(bench_parser: argparse.ArgumentParser) -> None:
    """Options of ``envport bench ENV --ppo`` (``--json`` and ``--plot`` are bench's own)."""
    bench_parser.add_argument("--ppo", action="store_true",
                              help="PPO steps/s per backend and the time breakdown of an "
                                   "iteration at three model sizes")
    bench_parser.add_argument("--model-sizes", nargs="+", default=["0.1M", "2M", "20M"],
                              metavar="SIZE", help="PPO model sizes in parameters (--ppo)")
    bench_parser.add_argument("--iterations", type=int, default=2,
                              help="timed PPO iterations per backend and size (--ppo)")


def ppo_bench_table(result: dict[str, Any]) -> Table:
    from envport.bench.ppo_throughput import PHASES

    table = Table(title=f"envport bench {result['env']} --ppo: PPO steps/s and time shares")
    for col in ("model", "params", "backend", "steps/s", *PHASES):
        table.add_column(col, justify="left" if col in ("model", "backend") else "right")
    for r in result["rows"]:
        share = r["phases"]["share"]
        table.add_row(r["model_size"], f"{r['params']:,}", r["backend"], f"{r['sps']:,.0f}",
                      *(f"{share[p]:.0%}" if math.isfinite(share[p]) else "n/a"
                        for p in PHASES))
    return table


@_guard
def run_ppo_bench(args: argparse.Namespace) -> int:
    """envport bench ENV --ppo [--model-sizes ...] [--iterations N] [--json F] [--plot P]"""
    from envport.bench.ppo_throughput import parse_size, plot_ppo_benchmark, ppo_benchmark

    sizes = list(getattr(args, "model_sizes", None) or ["0.1M", "2M", "20M"])
    for s in sizes:
        parse_size(s)  # a malformed size fails before any work
    iterations = getattr(args, "iterations", 2)
    with console.status(f"PPO benchmark of {args.env} (both backends, {len(sizes)} sizes)..."):
        result = ppo_benchmark(args.env, model_sizes=sizes, iterations=iterations)
    console.print(ppo_bench_table(result))
    machine = result["machine"]
    console.print("speedup (JAX / reference PPO steps/s): " + ", ".join(
        f"{k}: [bold]{_fmt(v, '.2f')}x[/]" for k, v in result["speedup"].items())
        + f" on {machine['cores']} cores, JAX {machine['jax_version']} on "
          f"{machine['jax_backend']}")
    console.print("at most (the same update runs on both backends; 1 / its share of a "
                  "reference iteration): " + ", ".join(
                      f"{k}: {_fmt(v, '.2f')}x" for k, v in result["speedup_bound"].items()))
    if getattr(args, "json", None):
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        console.print(f"wrote {args.json}")
    if getattr(args, "plot", None):
        plot_ppo_benchmark(result, args.plot)
        console.print(f"wrote {args.plot}")
    return 0
