"""The ``envport`` command line: list, verify, bench, train, transfer, translate, mutate, report,
run."""

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
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

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
                tasks[layer] = bar.add_task(LAYER_TITLES.get(layer, layer), total=total)
            bar.update(tasks[layer], completed=done, total=total)

        yield update


def run_verify(args: argparse.Namespace) -> Report:
    from envport.verify.runner import verify

    layers = tuple(args.layer) if args.layer else LAYERS
    with layer_progress() as update:
        report = verify(args.env, layers, episodes=args.episodes, states=args.states,
                        examples=args.examples, seed=args.seed, progress=update,
                        options=parse_options(args.option))
    report.command = " ".join(["envport", "verify", args.env, *(
        f"--layer {layer}" for layer in (args.layer or [])), *(
        f"-o {o}" for o in (args.option or []))]) + f" --seed {args.seed}"
    return report


def parse_options(items: list[str] | None) -> dict[str, str]:
    options = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"an option is KEY=VALUE, got {item!r}")
        options[key] = value
    return options


def cmd_list(args: argparse.Namespace) -> int:
    table = Table(title="envport environments")
    for col in ("name", "reference", "backend", "status", "summary"):
        table.add_column(col)
    for name in list_envs():
        s = spec(name)
        table.add_row(name, s.reference, "jax", s.status, s.summary)
    console.print(table)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
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


def run_bench(env: str, batch_sizes: list[int] | None) -> dict[str, Any]:
    from envport.bench.throughput import run_benchmark

    with console.status(f"benchmarking {env} (reference and JAX side by side)..."):
        return run_benchmark(env, batch_sizes=batch_sizes)


def cmd_bench(args: argparse.Namespace) -> int:
    if args.ppo:
        from envport.train.commands import run_ppo_bench

        return run_ppo_bench(args)
    result = run_bench(args.env, args.batch_sizes)
    console.print(bench_table(result))
    machine = result.get("machine", {})
    console.print(f"speedup (best JAX / best reference): [bold]{result['speedup']:.2f}x[/] "
                  f"on {machine.get('cores')} cores, JAX backend {machine.get('jax_backend')}")
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
        from envport.train.ppo import train

        training = train(args.env, "jax", steps=args.train_steps, out=str(out / "train-jax"),
                         overwrite=True)
        console.print(f"PPO on the JAX translation: {training.env_steps:,} steps in "
                      f"{training.wall_time:.0f} s, final mean return "
                      f"{training.final_mean_return:.2f}")
    (out / "report.md").write_text(one_page(report, bench, time.perf_counter() - t0, training))
    console.print(f"speedup {bench['speedup']:.2f}x; report written to {out / 'report.md'}")
    return 0 if report.passed else 1


def one_page(report: Report, bench: dict[str, Any], seconds: float,
             training: Any = None) -> str:
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
    lines += ["", f"Comparison rule: {s.tolerance_note}", "", "## Throughput (random actions)", "",
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
    return "\n".join(lines) + "\n"


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "list": cmd_list, "verify": cmd_verify, "bench": cmd_bench, "run": cmd_run}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="envport", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="environments, their reference, backend and status")

    def verify_options(q: argparse.ArgumentParser) -> None:
        q.add_argument("env")
        q.add_argument("--episodes", type=int, default=100, help="L3 lockstep episodes")
        q.add_argument("--states", type=int, default=1000, help="L2 injected states")
        q.add_argument("--examples", type=int, default=25, help="L1 hypothesis examples")
        q.add_argument("--seed", type=int, default=0)
        q.add_argument("-o", "--option", action="append", metavar="KEY=VALUE",
                       help="environment mode, e.g. -o frameskip=4 -o continuous=true (pong)")

    v = sub.add_parser("verify", help="run the verification hierarchy against the reference")
    verify_options(v)
    v.add_argument("--layer", action="append", choices=LAYERS,
                   help="run only this layer (repeatable)")
    v.add_argument("--json", help="write the report as JSON")
    v.add_argument("--prompt", help="write the failures as a repair prompt (markdown)")
    b = sub.add_parser("bench", help="random-action throughput, reference vs JAX, in one run")
    b.add_argument("env")
    b.add_argument("--batch-sizes", type=int, nargs="+", help="JAX batch sizes")
    b.add_argument("--json")
    b.add_argument("--plot", help="write SPS vs batch size as a PNG")
    from envport.train.commands import add_ppo_bench, register

    add_ppo_bench(b)
    COMMANDS.update(register(sub))
    from envport.agent.commands import register as register_agent

    COMMANDS.update(register_agent(sub))
    r = sub.add_parser("run", help="the main job: verify + bench + a one-page report")
    verify_options(r)
    r.add_argument("--out", help="output folder (default runs/ENV)")
    r.add_argument("--train-steps", type=int, help="PPO steps (default: the env's config)")
    r.add_argument("--no-train", action="store_true", help="skip the PPO training run")
    return p




def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if getattr(args, "env", None) is not None:
            spec(args.env)  # unknown environment: fail before any work
        return COMMANDS[args.command](args)
    except (UnknownEnvironmentError, ValueError) as e:
        err.print(f"[red]error:[/] {e}")
        return 2
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]")
        return 130


if __name__ == "__main__":
    sys.exit(main())
