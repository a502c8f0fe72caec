"""The ``translate``, ``mutate`` and ``report`` subcommands of ``envport``.

``register(subparsers)`` adds them to the CLI's subparsers and returns their handlers, so
``envport/cli.py`` wires them with ``COMMANDS.update(register(sub))``.

Exit codes: 0 success (translate: verified and optimised; mutate: kill rate at least
``--min-kill-rate``), 1 not reached, 2 bad input (reference, agent, arguments; an agent that is
not logged in, has no API key or rejects envport's flags), 3 translate is waiting for a manual
edit (``--agent manual``: edit the workspace as the prompt it names asks, then
``envport translate --resume DIR``), 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from envport.cli_args import check_output, positive_float, positive_int, seed_int

console = Console()
err = Console(stderr=True)

Handler = Callable[[argparse.Namespace], int]


# ---------------------------------------------------------------- translate
def _translate_parser(sub: Any) -> None:
    t = sub.add_parser(
        "translate", help="drive a coding agent until the translation passes the hierarchy",
        description="Translate a reference environment with a coding agent in a closed loop: "
                    "module by module with L1, then L2/L3 on the composition, repair prompts "
                    "from the lowest failing layer, held-out seeds for the verdict, then "
                    "optimisation under the same tests.")
    t.add_argument("--reference", help="module:Class implementing envport's Reference protocol")
    t.add_argument("--target", default="jax", help="target language (jax)")
    t.add_argument("--agent", help="claude[:MODEL] | codex[:MODEL] | gemini[:MODEL] | "
                                   "aider[:MODEL] | openai:MODEL | anthropic:MODEL | "
                                   "scripted:PATH | manual (you, or any tool, edit the "
                                   "workspace between --resume calls) | command:'CLI ... "
                                   "{prompt}' (any agent CLI taking a prompt file)")
    t.add_argument("--base-url", help="OpenAI-compatible endpoint (local servers included)")
    t.add_argument("--workdir", help="run directory (default runs/NAME)")
    t.add_argument("--resume", metavar="DIR", help="continue the run in DIR")
    t.add_argument("--budget-usd", type=float, help="stop when the agents' cost reaches this")
    t.add_argument("--max-iterations", type=int)
    t.add_argument("--max-wall-minutes", type=float)
    t.add_argument("--patience", type=int, help="stop after K iterations without progress")
    t.add_argument("--json", help="write the run's summary as JSON")
    t.add_argument("--name", help="name of the translation (default from the class)")
    t.add_argument("--like", help="registered environment whose policies and tolerance the "
                                  "verifier reuses (found automatically for envport's own)")
    t.add_argument("--source", action="append", default=[],
                   help="extra reference source shown to the agent (module or file)")
    t.add_argument("--reference-kwargs", help="JSON keyword arguments of the reference")
    t.add_argument("--atol", type=float, help="comparison tolerance (with --rtol)")
    t.add_argument("--rtol", type=float)
    t.add_argument("--agent-timeout", type=float, help="seconds per agent call")
    t.add_argument("--verify-timeout", type=float, help="seconds per verification")
    t.add_argument("--agent-arg", action="append", default=None,
                   help="extra argument for a command-line agent (repeatable)")
    t.add_argument("--no-agent-preflight", action="store_true",
                   help="skip the agent's check before iteration 1 (version, flags, login), "
                        "for a setup it cannot judge (a proxy, a custom provider)")
    t.add_argument("--price", type=float, nargs=3, metavar=("IN", "OUT", "CACHED"),
                   help="USD per million tokens, when the agent reports no cost")
    for size, default in (("examples", 10), ("states", 300), ("episodes", 20),
                          ("samples", 2000)):
        t.add_argument(f"--{size}", type=int, help=f"verification size (default {default})")
    t.add_argument("--seed", type=int, help="development seed (default 0)")
    t.add_argument("--held-out-seeds", type=int, nargs="+", metavar="SEED",
                   help="the held-out seeds of the verdict, for a reproducible run (default: "
                        "one drawn at random when the run starts; never shown to the agent)")
    t.add_argument("--optimise-rounds", type=int, help="optimisation rounds (default 1)")
    t.add_argument("--batch-sizes", type=int, nargs="+", help="batch sizes of the SPS table")
    t.add_argument("--bench-repeats", type=positive_int,
                   help="interleaved timings of the old and the new version per optimisation "
                        "round (default 5, at least 2): a change is kept only if the speedup's "
                        "confidence interval is above 1")
    t.add_argument("--transfer-check", help="L4 hook module:function(spec, seed)")


def cmd_translate(args: argparse.Namespace) -> int:
    from envport.agent.loop import TranslateConfig, TranslateError, translate

    sizes = {k: getattr(args, k) for k in ("examples", "states", "episodes", "samples")
             if getattr(args, k) is not None}
    tolerance = None
    if args.atol is not None or args.rtol is not None:
        tolerance = {"atol": args.atol or 0.0, "rtol": args.rtol or 0.0}
    overrides: dict[str, Any] = {
        "budget_usd": args.budget_usd, "max_iterations": args.max_iterations,
        "max_wall_s": None if args.max_wall_minutes is None else args.max_wall_minutes * 60,
        "patience": args.patience, "agent_timeout_s": args.agent_timeout,
        "verify_timeout_s": args.verify_timeout, "agent": args.agent,
        "base_url": args.base_url, "optimise_rounds": args.optimise_rounds,
        "agent_args": args.agent_arg, "price": args.price, "batch_sizes": args.batch_sizes,
        "bench_repeats": args.bench_repeats,
    }
    if args.bench_repeats is not None and args.bench_repeats < 2:
        err.print("[red]error:[/] --bench-repeats must be at least 2 (an interval needs two "
                  "paired timings)")
        return 2

    def log(message: str) -> None:
        err.print(f"[dim]{escape(message)}[/]" if message.startswith("  ") else escape(message))

    try:
        preflight = not args.no_agent_preflight
        if args.resume:
            summary = translate(resume=Path(args.resume), overrides=overrides, log=log,
                                preflight=preflight)
        else:
            if not args.reference or not args.agent:
                err.print("[red]error:[/] --reference module:Class and --agent are required "
                          "(or --resume DIR)")
                return 2
            name = args.name or args.reference.partition(":")[2].removesuffix(
                "Reference").lower()
            cfg = TranslateConfig(reference=args.reference, agent=args.agent,
                                  workdir=args.workdir or f"runs/{name}", target=args.target,
                                  name=args.name or "", like=args.like, sources=args.source,
                                  reference_kwargs=json.loads(args.reference_kwargs or "{}"),
                                  tolerance=tolerance,
                                  transfer_check=args.transfer_check,
                                  seed=args.seed if args.seed is not None else 0,
                                  held_out_seeds=list(args.held_out_seeds or []))
            if cfg.seed in cfg.held_out_seeds:
                err.print(f"[red]error:[/] --held-out-seeds {cfg.seed} is the development seed "
                          "(--seed): a held-out seed must be one the agent never saw")
                return 2
            if sizes:
                cfg.sizes = {**cfg.sizes, **sizes}
            for k, v in overrides.items():
                if v is not None:
                    setattr(cfg, k, v)
            summary = translate(cfg, log=log, preflight=preflight)
    except TranslateError as e:
        err.print(f"[red]error:[/] {escape(str(e))}")
        return 2
    if summary["status"] == "config_error":  # the agent answered "not logged in" and the like
        reason = escape(str(summary["reason"]))
        err.print(f"[red]error:[/] {reason} ({summary['iterations']} iterations; "
                  f"continue with `envport translate --resume {summary['run_dir']}`)")
        if args.json:
            Path(args.json).write_text(json.dumps(summary, indent=2))
        return 2
    if summary["status"] == "waiting":
        if args.json:
            Path(args.json).write_text(json.dumps(summary, indent=2))
        # plain text, unwrapped: the paths and the command are meant to be copied
        print(f"waiting for the agent after {summary['iterations']} iterations: edit "
              f"{summary['workspace']} as {summary['next_prompt']} asks, then run "
              f"`{summary['resume']}` (exit code 3; see {summary['run_dir']}/NEXT.md)",
              file=sys.stderr)
        return 3
    render_summary(summary)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
        console.print(f"wrote {args.json}")
    if summary["status"] == "interrupted":
        return 130
    return 0 if summary["status"] == "success" else 1


def render_summary(summary: dict[str, Any]) -> None:
    table = Table(title="envport translate")
    table.add_column("")
    table.add_column("")
    colour = "green" if summary["status"] == "success" else "yellow"
    reason = "" if summary["reason"] == summary["status"] else f": {summary['reason']}"
    table.add_row("status", f"[{colour}]{summary['status']}[/]{reason}")
    table.add_row("iterations", str(summary["iterations"]))
    table.add_row("verified (held-out seeds)", "yes" if summary["verified"] else "no")
    cost = f"{summary['cost_usd']:.3f} USD"
    if summary["unknown_cost_calls"]:
        cost += f" (+{summary['unknown_cost_calls']} calls of unknown cost)"
    table.add_row("cost", cost)
    tokens = summary["tokens"]
    table.add_row("tokens", f"{tokens['input']:,} in ({tokens['cached']:,} cached), "
                            f"{tokens['output']:,} out")
    table.add_row("wall time", f"{summary['agent_s']:.0f} s agent, {summary['verify_s']:.0f} s "
                               "verification")
    table.add_row("workspace", summary["workspace"])
    if summary.get("handoff"):
        table.add_row("hand-off note", summary["handoff"])
    console.print(table)
    console.print(f"continue: envport translate --resume {summary['run_dir']}; page: "
                  f"envport report {summary['run_dir']}")


# ---------------------------------------------------------------- mutate
def _mutate_parser(sub: Any) -> None:
    from envport.verify.mutation import OPERATORS

    m = sub.add_parser("mutate", help="mutation score: seed bugs into a translation, report "
                                      "which layer kills each")
    m.add_argument("env")
    m.add_argument("--json", help="write the result as JSON; each verdict is also written as "
                                  "it arrives to FILE's stem + .verdicts.jsonl beside it, and "
                                  "a rerun with the same arguments decides only the rest")
    m.add_argument("--journal", metavar="FILE",
                   help="the verdict journal (JSON lines; default: beside --json, none "
                        "without --json)")
    m.add_argument("--restart", action="store_true",
                   help="discard the journal's verdicts instead of resuming from them")
    m.add_argument("--max-mutants", type=int, default=120,
                   help="sample at most N mutants, evenly over operators (0: all)")
    m.add_argument("--workers", type=positive_int, default=2, help="parallel worker processes")
    m.add_argument("--ray", metavar="ADDRESS",
                   help="run each mutant as a task on this Ray cluster (auto: the one this "
                        "machine joined with `ray start`; HOST:PORT) instead of local workers; "
                        "needs pip install 'envport[scale]'")
    m.add_argument("--operators", nargs="+", choices=list(OPERATORS), default=list(OPERATORS))
    m.add_argument("--only", nargs="+", help="run these mutant ids only")
    m.add_argument("--list", action="store_true", help="list the mutants and exit")
    m.add_argument("--states", type=positive_int, default=1000, help="L2 states per mutant")
    m.add_argument("--episodes", type=positive_int, default=4, help="L3 episodes per mutant")
    m.add_argument("--examples", type=positive_int, default=4, help="L1 examples per property")
    m.add_argument("--samples", type=positive_int, default=10000, help="distribution samples")
    m.add_argument("--seed", type=seed_int, default=0)
    m.add_argument("--timeout", type=positive_float, default=300.0, help="seconds per mutant")
    m.add_argument("--eager", action=argparse.BooleanOptionalAction, default=None,
                   help="run the recorded L2 op by op (jax.disable_jit) or compiled; default: "
                        "the translation's mutation_plan (op by op pays off where a compilation "
                        "of the step takes minutes)")
    m.add_argument("--min-kill-rate", type=float, default=0.95,
                   help="exit 1 below this kill rate of non-equivalent mutants")


def cmd_mutate(args: argparse.Namespace) -> int:
    import signal

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from envport.core.registry import UnknownEnvironmentError
    from envport.core.registry import spec as get_spec
    from envport.verify import mutation as mutate
    from envport.verify.mutation.journal import journal_for

    try:
        spec = get_spec(args.env)
        check_output(args.json, "--json")
        check_output(args.journal, "--journal")
        if args.max_mutants < 0:
            raise ValueError(f"--max-mutants must be 0 (all) or more, got {args.max_mutants}")
        if args.restart and not (args.json or args.journal):
            raise ValueError("--restart discards a journal: name it with --json or --journal")
    except (UnknownEnvironmentError, ValueError) as e:
        err.print(f"[red]error:[/] {escape(str(e))}")
        return 2
    if args.list:
        # every module of the plan, with the ids `--only` takes (``engine:m001``...)
        modules = mutate.translation_modules(spec)
        for ms in mutate.generate_all(modules, tuple(args.operators)):
            m = ms.mutant
            console.print(escape(f"{m.id} line {m.line} {m.operator}: {m.description}: "
                                 f"`{m.original[:80]}`"))
        return 0
    with Progress(TextColumn("mutants"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("killed {task.fields[killed]}, survived {task.fields[alive]}"),
                  TimeElapsedColumn(), console=err, transient=False) as bar:
        task = bar.add_task("mutate", total=None, killed=0, alive=0)
        counts = {"killed": 0, "alive": 0}

        def progress(result: dict[str, Any], done: int, total: int) -> None:
            counts["killed" if result["killed_by"] else "alive"] += 0 if result[
                "equivalent"] else 1
            bar.update(task, completed=done, total=total, killed=counts["killed"],
                       alive=counts["alive"])

        journal = args.journal or (journal_for(args.json) if args.json else None)

        def stop(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt  # killed (timeout, kill): as Ctrl-C, keep what was finished

        previous = signal.signal(signal.SIGTERM, stop)
        try:
            report = mutate.run_mutation(
                args.env, max_mutants=args.max_mutants or None, workers=args.workers,
                operators=tuple(args.operators), seed=args.seed, states=args.states,
                episodes=args.episodes, examples=args.examples, samples=args.samples,
                timeout_s=args.timeout, progress=progress, only=args.only, ray=args.ray,
                journal=journal, restart=args.restart, eager=args.eager)
        except ValueError as e:  # a journal of another run, a component control that fails
            err.print(f"[red]error:[/] {escape(str(e))}")
            return 2
        finally:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
    mutate.render(report, console)
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=1))
        console.print(f"wrote {args.json}")
    if journal:
        console.print(f"verdicts: {journal}")
    if report.interrupted:
        return 130
    return 0 if report.kill_rate >= args.min_kill_rate else 1


# ---------------------------------------------------------------- report
def _report_parser(sub: Any) -> None:
    r = sub.add_parser("report", help="a translation run as a page: curve, costs, diffs")
    r.add_argument("run_dir")
    r.add_argument("--out", help="output folder (default: the run directory)")
    r.add_argument("--no-html", action="store_true", help="markdown only")


def cmd_report(args: argparse.Namespace) -> int:
    from envport.agent.loop import TranslateError
    from envport.agent.report import write_report

    try:
        paths = write_report(Path(args.run_dir), Path(args.out) if args.out else None,
                             with_html=not args.no_html)
    except (FileNotFoundError, TranslateError) as e:
        err.print(f"[red]error:[/] {escape(str(e))}")
        return 2
    for kind, path in paths.items():
        console.print(f"wrote {kind}: {path}")
    return 0


def register(subparsers: Any) -> dict[str, Handler]:
    """Add ``translate``, ``mutate`` and ``report`` to ``subparsers``; returns the handlers."""
    _translate_parser(subparsers)
    _mutate_parser(subparsers)
    _report_parser(subparsers)
    return {"translate": cmd_translate, "mutate": cmd_mutate, "report": cmd_report}


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (``python -m envport.agent.commands``) until the CLI wires these in."""
    parser = argparse.ArgumentParser(prog="envport")
    handlers = register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return handlers[args.command](args)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
