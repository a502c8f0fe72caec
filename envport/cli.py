"""The ``envport`` command line: list, verify, bench, train, transfer, translate, mutate, report,
play, run."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envport import compile_cache
from envport.cli_args import alpha as alpha_level
from envport.cli_args import check_output, parse_options, positive_int, seed_int
from envport.core.registry import UnknownEnvironmentError, list_envs, spec
from envport.verify.report import LAYER_TITLES, LAYERS, Report

console = Console(stderr=False)
err = Console(stderr=True)


@contextmanager
def layer_progress() -> Iterator[Callable[[str, int, int], None]]:
    with Progress(TextColumn("{task.description:<16}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        tasks: dict[str, Any] = {}

        def update(layer: str, done: int, total: int) -> None:
            if layer not in tasks:
                name, _, mode = layer.partition(" ")  # "rollout pong[frameskip=4]"
                title = LAYER_TITLES.get(name, name) + (f" {mode}" if mode else "")
                tasks[layer] = bar.add_task(escape(title), total=total)
            bar.update(tasks[layer], completed=done, total=total)

        yield update


def run_verify(args: argparse.Namespace) -> Report:
    from envport.scale import session
    from envport.verify.runner import verify

    layers = tuple(args.layer) if args.layer else LAYERS
    # --ray: L3's reference side in Ray tasks (connects first: a bad address fails before work)
    with session(getattr(args, "ray", None)), layer_progress() as update:
        report = verify(args.env, layers, episodes=args.episodes, states=args.states,
                        examples=args.examples, seed=args.seed, progress=update,
                        options=parse_options(args.option), modes=args.modes,
                        horizon_episodes=getattr(args, "horizon_episodes", None),
                        policy_run=getattr(args, "policy_run", None),
                        horizon_alpha=getattr(args, "horizon_alpha", None))
    layer_flags = [f"--layer {layer}" for layer in (args.layer or [])]
    report.command = " ".join(["envport", "verify", args.env, *layer_flags, *(
        f"-o {o}" for o in (args.option or []))]) + f" --seed {args.seed}"
    for mode in report.modes.values():  # each other mode's own rerun command
        options = mode.env.partition("[")[2].rstrip("]").split("][")
        mode.command = " ".join(["envport", "verify", args.env, *layer_flags,
                                 *(f"-o {o}" for o in options), f"--seed {args.seed}"])
    return report


def cmd_list(args: argparse.Namespace) -> int:
    if args.options:
        return list_options()
    table = Table(title="envport environments")
    for col in ("name", "reference", "backend", "status", "summary"):
        table.add_column(col)
    for name in list_envs():
        s = spec(name)
        table.add_row(name, escape(s.reference), s.backend, escape(s.status), escape(s.summary))
    console.print(table)
    return 0


def list_options() -> int:
    """Each environment's options (``-o KEY=VALUE``) and the modes ``envport verify`` checks."""
    table = Table(title="envport environments: options (-o KEY=VALUE) and verified modes")
    for col in ("env", "option", "default", "values", "meaning"):
        table.add_column(col)
    for name in list_envs():
        s = spec(name)
        for key, o in s.options.items():
            values = (", ".join(map(str, o.choices)) if o.kind == "choice" else
                      o.kind + (f" >= {o.minimum:g}" if o.minimum is not None else ""))
            table.add_row(name, key, str(o.default), escape(values), escape(o.help))
        modes = ", ".join(s.with_options(**m).mode_name for m in s.declared_modes())
        table.add_row(name, "[dim]modes[/]", "", "", escape(modes))
    console.print(table)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    check_output(args.json, "--json")
    check_output(args.prompt, "--prompt")
    report = run_verify(args)
    report.render(console)
    if args.json:
        report.write_json(args.json)
        console.print(f"wrote {args.json}")
    if args.prompt:
        Path(args.prompt).write_text(report.to_prompt())
        console.print(f"wrote repair prompt {args.prompt}")
    if report.interrupted:
        return 130
    return 0 if report.passed else 1


def bench_table(result: dict[str, Any]) -> Table:
    table = Table(title=f"envport bench {result['env']}: random-action steps/s")
    for col in ("backend", "mode", "batch", "steps/s"):
        table.add_column(col, justify="right" if col in ("batch", "steps/s") else "left")
    for row in result["results"]:
        table.add_row(row["backend"], row.get("mode", ""), str(row["batch_size"]),
                      f"{row['steps_per_second']:,.0f}")
    return table


def _short_mode(row: dict[str, Any]) -> str:
    mode = row.get("mode", "")
    if "short" in row:  # a hook's own short label (a host translation's rows)
        return str(row["short"])
    if row["backend"] == "reference":
        return next((w for w in ("loop", "async", "vector", "thread", "C") if w in mode), "")
    if "threads" in row:  # a host peer (EnvPool): its own thread pool
        return f"{row['threads']} thr"
    return f"{row.get('devices', 1)} dev"


def side_by_side_table(result: dict[str, Any]) -> Table:
    """Batch size x backend: the best steps/s of each backend (its mode in brackets) and the
    JAX translation's ratio to each other backend."""
    by_batch = result.get("by_batch", [])
    ours = result.get("translation", "jax")  # a host translation's rows are "translation"
    backends = [ours, *[b for b in ("reference", *result.get("ratios", {}))
                        if b != ours and any(b in x["steps_per_second"] for x in by_batch)]]
    backends = list(dict.fromkeys(backends))
    others = backends[1:]
    table = Table(title=f"envport bench {result['env']}: random-action steps/s, side by side "
                        f"(best mode of each backend)")
    table.add_column("batch", justify="right")
    for b in backends:
        table.add_column(b, justify="right")
    for b in others:
        table.add_column(f"{ours}/{b}", justify="right")
    best_rows: dict[tuple[str, int], dict[str, Any]] = {}
    for row in result["results"]:
        key = (row["backend"], row["batch_size"])
        if key not in best_rows or row["steps_per_second"] > best_rows[key]["steps_per_second"]:
            best_rows[key] = row
    for x in by_batch:
        n = x["batch_size"]
        cells = [str(n)]
        for b in backends:
            row = best_rows.get((b, n))
            cells.append("-" if row is None else
                         f"{row['steps_per_second']:,.0f} [dim]({_short_mode(row)})[/]")
        for b in others:
            r = x["jax_ratio"].get(b)
            cells.append("-" if r is None else f"{r:.2f}x")
        table.add_row(*cells)
    best = [" best vs best"] + [""] * len(backends) + [
        f"[bold]{result['ratios'][b]['best']:.2f}x[/]" if b in result.get("ratios", {}) else "-"
        for b in others]
    table.add_row(*best)
    return table


def run_bench(env: str, batch_sizes: list[int] | None, peers: bool | list[str] = True,
              seconds: float | None = None, steps: int | None = None,
              stall_seconds: float | None = None) -> dict[str, Any]:
    from envport.bench.benchmark import run_benchmark
    from envport.bench.timing import DEFAULT_SECONDS, STALL_SECONDS

    with console.status(f"benchmarking {env} (reference, JAX and peers side by side)...") as st:
        def progress(line: str) -> None:
            console.print(f"[dim]{time.strftime('%H:%M:%S')}[/] {escape(line)}", highlight=False,
                          soft_wrap=True)
            st.update(f"benchmarking {env}: last {line.split('(')[0].strip()}")

        return run_benchmark(env, batch_sizes=batch_sizes, peers=peers, steps=steps,
                             seconds=DEFAULT_SECONDS if seconds is None else seconds,
                             progress=progress,
                             stall_seconds=STALL_SECONDS if stall_seconds is None
                             else stall_seconds)


def cmd_bench(args: argparse.Namespace) -> int:
    if args.ppo:
        from envport.train.commands import run_ppo_bench

        return run_ppo_bench(args)
    if args.seconds is not None and args.seconds <= 0:
        raise ValueError(f"--seconds must be positive, got {args.seconds}")
    if args.steps is not None and args.steps < 1:
        raise ValueError(f"--steps must be positive, got {args.steps}")
    peers: bool | list[str] = False if args.no_peers else (args.peers or True)
    result = run_bench(args.env, args.batch_sizes, peers, args.seconds, args.steps,
                       args.stall_seconds)
    console.print(side_by_side_table(result))
    for peer, why in result.get("skipped", {}).items():
        console.print(f"[yellow]{peer} skipped:[/] {escape(why)}")
    for peer, why in result.get("incomplete", {}).items():
        console.print(f"[yellow]{peer} incomplete (rows above were kept):[/] {escape(why)}")
    machine = result.get("machine", {})
    load = machine.get("load_average") or {}
    ours = "JAX" if result.get("translation", "jax") == "jax" else result["translation"]
    console.print(f"speedup (best {ours} / best reference): [bold]{result['speedup']:.2f}x[/] "
                  f"on {machine.get('cores')} cores, JAX backend {machine.get('jax_backend')}"
                  + (f"; load average {load.get('before')} before, {load.get('after')} after"
                     if load else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
        console.print(f"wrote {args.json}")
    if args.plot:
        from envport.bench.plots import plot_throughput

        plot_throughput(result, args.plot)
        console.print(f"wrote {args.plot}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """The main job: verify, benchmark, a short PPO run, and a one-page report."""
    from envport.bench.plots import plot_throughput

    out = Path(args.out or f"runs/{args.env}")
    check_output(str(out), "--out", folder=True)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    args.layer = None
    report = run_verify(args)
    report.render(console)
    report.write_json(str(out / "verify.json"))
    (out / "repair.md").write_text(report.to_prompt())
    if report.interrupted:
        return 130
    bench = run_bench(args.env, None)
    console.print(bench_table(bench))
    (out / "bench.json").write_text(json.dumps(bench, indent=2))
    plot_throughput(bench, out / "bench.png")
    training = None
    if not args.no_train:
        from envport.train.run import train

        training = train(args.env, "jax", steps=args.train_steps, out=str(out / "train-jax"),
                         overwrite=True)
        console.print(f"PPO on the JAX translation: {training.env_steps:,} steps in "
                      f"{training.wall_time:.0f} s, final mean return "
                      f"{training.final_mean_return:.2f}")
    summary = None
    if training is not None and args.eval_episodes > 0:
        from envport.train.commands import transfer_line
        from envport.train.transfer import policy_summary

        if spec(args.env).training.margin is not None:
            summary = policy_summary(args.env, training.run_dir, episodes=args.eval_episodes)
            console.print(transfer_line(summary))
    (out / "report.md").write_text(one_page(report, bench, time.perf_counter() - t0, training,
                                            summary))
    console.print(f"speedup {bench['speedup']:.2f}x; report written to {out / 'report.md'}")
    return 0 if report.passed else 1


def one_page(report: Report, bench: dict[str, Any], seconds: float,
             training: Any = None, summary: dict[str, Any] | None = None) -> str:
    s = spec(report.env)
    lines = [f"# envport run {report.env}", "",
             f"Reference: {s.reference}. Translation: JAX. Verdict: "
             f"**{'verified' if report.passed else 'NOT verified'}** ({seconds:.0f} s in all).", "",
             "## Verification", "", "| layer | result | checked | failures |", "|---|---|---|---|"]
    for name, r in report.layers.items():
        checked = ", ".join(f"{v} {k}" for k, v in r.counts.items())
        lines.append(f"| {LAYER_TITLES[name]} | {'pass' if r.passed else 'FAIL'} | {checked} | "
                     f"{len(r.failures)} |")
    lines += [""] + [f"- {LAYER_TITLES[r.name]}: {note}" for r in report.layers.values()
                     for note in r.notes]
    machine = bench.get("machine", {})
    lines += ["", f"Comparison rule: {s.verification.tolerance_note}", "",
              "## Throughput (random actions)", "",
              f"Speedup, best JAX over best reference, measured in this run: "
              f"**{bench['speedup']:.2f}x** ({machine.get('cores')} CPU cores, JAX "
              f"{machine.get('jax_version')} on {machine.get('jax_backend')}).", "",
              "![throughput](bench.png)", "",
              "| backend | mode | batch | steps/s |", "|---|---|---|---|"]
    lines += [f"| {r['backend']} | {r.get('mode', '')} | {r['batch_size']} | "
              f"{r['steps_per_second']:,.0f} |" for r in bench["results"]]
    if training is not None:
        lines += ["", "## PPO on the JAX translation", "",
                  f"{training.env_steps:,} environment steps in {training.wall_time:.0f} s "
                  f"({training.sps:,.0f} steps/s while training, compile "
                  f"{training.compile_time:.0f} s); final mean episode return "
                  f"**{training.final_mean_return:.2f}**. Run folder: `{training.run_dir}`."]
        if training.plot_path is not None:
            plot = Path(training.plot_path).relative_to(Path(training.run_dir).parent)
            lines += ["", f"![learning curve]({plot})"]
    if summary is not None:
        from envport.train.commands import transfer_line

        lines += ["", "## Transfer summary (one policy)", "", transfer_line(summary) + "."]
    return "\n".join(lines) + "\n"


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "list": cmd_list, "verify": cmd_verify, "bench": cmd_bench, "run": cmd_run}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="envport", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    lst = sub.add_parser("list", help="environments, their reference, backend and status")
    lst.add_argument("--options", action="store_true",
                     help="each environment's options (-o KEY=VALUE) and verified modes")

    def verify_options(q: argparse.ArgumentParser) -> None:
        q.add_argument("env")
        q.add_argument("--episodes", type=positive_int, default=100,
                       help="L3 lockstep episodes")
        q.add_argument("--states", type=positive_int, default=1000, help="L2 injected states")
        q.add_argument("--examples", type=positive_int, default=25,
                       help="L1 hypothesis examples")
        q.add_argument("--seed", type=seed_int, default=0, help="any integer 0 <= seed < 2**63")
        q.add_argument("-o", "--option", action="append", metavar="KEY=VALUE",
                       help="one mode of the environment, e.g. -o frameskip=4 -o "
                            "continuous=true (pong); `envport list --options` lists them")
        q.add_argument("--modes", choices=("default", "all"), default="all",
                       help="all (default): the default mode, then a short run of every "
                            "other mode the environment declares; default: that mode only")

    v = sub.add_parser("verify", help="run the verification hierarchy against the reference")
    verify_options(v)
    v.add_argument("--layer", action="append", choices=LAYERS,
                   help="run only this layer (repeatable)")
    v.add_argument("--horizon-episodes", type=positive_int, metavar="N",
                   help="rollout distribution: full episodes per side and policy (default: the "
                        "environment's; fewer than it needs for its target effect warns with "
                        "the effect detectable at N)")
    v.add_argument("--policy-run", metavar="DIR",
                   help="rollout distribution: also drive the episodes with the trained policy "
                        "of this `envport train` run folder (of the same environment)")
    v.add_argument("--horizon-alpha", type=alpha_level, metavar="ALPHA",
                   help="rollout distribution: family-wise significance level (default 0.01)")
    v.add_argument("--json", help="write the report as JSON")
    v.add_argument("--prompt", help="write the failures as a repair prompt (markdown)")
    v.add_argument("--ray", metavar="ADDRESS",
                   help="generate L3's reference episodes (and their perturbed copies' "
                        "replays) as tasks on this Ray cluster (auto: the one this machine "
                        "joined with `ray start`; HOST:PORT); the same episodes as without it; "
                        "needs pip install 'envport[scale]'")
    b = sub.add_parser("bench", help="random-action throughput, reference vs JAX (and the "
                                     "env's performance peers, e.g. MJX, Brax) in one run")
    b.add_argument("env")
    b.add_argument("--batch-sizes", type=int, nargs="+",
                   help="batch sizes (default: 1 8 64 512 1024 4096 8192 for an env with peers, "
                        "else powers of 4 to 65536)")
    b.add_argument("--peers", nargs="+", metavar="PEER",
                   help="time only these performance peers (default: all the env names)")
    b.add_argument("--no-peers", action="store_true", help="skip the performance peers")
    b.add_argument("--seconds", type=float,
                   help="timed seconds per measurement (default 2; run lengths are sized to it)")
    b.add_argument("--steps", type=int, help="fixed steps per run instead of --seconds")
    b.add_argument("--stall-seconds", type=float,
                   help="kill a benchmark child that prints nothing this long, keeping what it "
                        "measured (default 600)")
    b.add_argument("--json", help="write every row, the per-batch ratios and the machine")
    b.add_argument("--plot", help="write SPS (and JAX's ratio to each peer) vs batch size as a PNG")
    from envport.train.commands import add_ppo_bench, register

    add_ppo_bench(b)
    COMMANDS.update(register(sub))
    from envport.agent.commands import register as register_agent

    COMMANDS.update(register_agent(sub))
    from envport.envs.pokemon_gen1 import play as pokemon_play

    pokemon_play.add_parser(sub)
    COMMANDS["play"] = pokemon_play.cmd_play
    r = sub.add_parser("run", help="the main job: verify + bench + a one-page report")
    verify_options(r)
    r.add_argument("--out", help="output folder (default runs/ENV)")
    r.add_argument("--train-steps", type=int, help="PPO steps (default: the env's config)")
    r.add_argument("--no-train", action="store_true", help="skip the PPO training run")
    r.add_argument("--eval-episodes", type=int, default=100,
                   help="episodes the trained policy plays on each backend for the transfer "
                        "summary (0: skip)")
    return p




def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        compile_cache.enable()  # a bad ENVPORT_XLA_CACHE: exit 2 before any work
        if getattr(args, "env", None) is not None:
            s = spec(args.env)  # unknown environment: fail before any work
            if getattr(args, "option", None):  # so are unknown or malformed -o options
                s.parse_options(parse_options(args.option))
        return COMMANDS[args.command](args)
    except (UnknownEnvironmentError, ValueError) as e:
        err.print(f"[red]error:[/] {escape(str(e))}")
        return 2
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]")
        return 130


if __name__ == "__main__":
    sys.exit(main())
