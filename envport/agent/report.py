"""``envport report RUN_DIR``: a translation run as a page (markdown and a static HTML file).

Read from the run's files only (run.json, the ledger, the workspace's git history, the bench
results), so it can be rendered at any time, during a run or long after: the progress curve
(highest layer passed and tests passed per iteration), cumulative cost against the budget,
wall time split agent / verification, throughput before and after optimisation, every
iteration with its tokens, cost (and where the cost comes from), regressions, attempts to edit
frozen files, and what each iteration changed.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from envport.agent.ledger import Ledger
from envport.agent.loop import read_run_json
from envport.agent.workspace import Workspace
from envport.verify.layers import HIERARCHY, LAYER_TITLES

LEVELS = ["none", *(LAYER_TITLES[layer] for layer in HIERARCHY)]


def load(run_dir: Path) -> dict[str, Any]:
    run_dir = Path(run_dir)
    meta = read_run_json(run_dir)
    ledger = Ledger(run_dir / "ledger.jsonl")
    records = ledger.records()
    agents = {r["iteration"]: r for r in records if r.get("type") == "agent"}
    iterations = []
    for r in ledger.iterations():
        a = agents.get(r["iteration"], {})
        usage = r["agent"]["usage"]
        manual = (a.get("agent") or {}).get("status") == "waiting"  # edited outside envport
        iterations.append({**r, "agent_s": r.get("agent_wall_s", 0.0) if manual
                           else a.get("agent_s", r.get("agent_wall_s", 0.0)), "usage": usage,
                           "failed": _what_failed(run_dir, r)})
    stops = [r for r in records if r.get("type") == "stop"]
    bench = sorted((run_dir / "bench").glob("*.json")) if (run_dir / "bench").exists() else []
    return {"run_dir": run_dir, "meta": meta, "config": meta["config"], "records": records,
            "iterations": iterations, "infra": [r for r in records if r.get("type") == "infra"],
            "totals": ledger.totals(), "stop": stops[-1] if stops else None,
            "bench": [json.loads(p.read_text()) | {"file": p.name} for p in bench]}


def _what_failed(run_dir: Path, record: dict[str, Any]) -> str:
    """The lowest failure of an iteration's verification (its result file), "" if it passed
    or the file is gone."""
    from envport.agent.loop import failure_digest

    path = run_dir / str(record.get("result", ""))
    if not record.get("result") or not path.is_file():
        return ""
    try:
        result = json.loads(path.read_text())
        return "" if result["report"]["passed"] else failure_digest(result)
    except (json.JSONDecodeError, KeyError, TypeError):
        return ""


def plot(data: dict[str, Any], path: Path) -> Path | None:
    """Progress, cost and time per iteration in one PNG (None when there is nothing yet)."""
    its = data["iterations"]
    if not its:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["iteration"] for r in its]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    ax = axes[0]
    ax.step(x, [r["level"] for r in its], where="post", marker="o", label="highest layer")
    ax.set_yticks(range(len(LEVELS)), LEVELS)
    ax.set_ylim(-0.3, len(LEVELS) - 0.7)
    ax.set_xlabel("iteration")
    ax.set_title("highest layer passed")
    twin = ax.twinx()
    twin.plot(x, [r["tests_passed"] / max(1, r["tests_total"]) for r in its], "g--", alpha=0.6,
              label="tests passed (fraction)")
    twin.set_ylim(0, 1.05)
    twin.set_ylabel("tests passed (fraction)")
    ax = axes[1]
    cost, total = [], 0.0
    for r in its:
        total += r["usage"].get("cost_usd") or 0.0
        cost.append(total)
    ax.plot(x, cost, marker="o")
    budget = data["config"].get("budget_usd")
    if budget:
        ax.axhline(budget, color="r", linestyle=":", label=f"budget {budget:g} USD")
        ax.legend()
    ax.set_xlabel("iteration")
    ax.set_title("cumulative cost (USD)")
    ax = axes[2]
    agent = [r["agent_s"] for r in its]
    verify = [r["verify_s"] for r in its]
    ax.bar(x, agent, label="agent")
    ax.bar(x, verify, bottom=agent, label="verification")
    ax.set_xlabel("iteration")
    ax.set_title("wall time (s)")
    ax.legend()
    from matplotlib.ticker import MaxNLocator

    for a in axes:
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _cost(usage: dict[str, Any]) -> str:
    c = usage.get("cost_usd")
    return "unknown" if c is None else f"{c:.3f} ({usage.get('cost_source', '?')})"


def _status(data: dict[str, Any]) -> str:
    stop = data["stop"]
    if stop is None:
        return "running (or interrupted before recording a stop)"
    status = stop["summary"]["status"]
    return status if stop["reason"] == status else f"{status}: {stop['reason']}"


def _throughput(data: dict[str, Any]) -> list[tuple[int, float, float]]:
    if not data["bench"]:
        return []
    first, last = data["bench"][0], data["bench"][-1]

    def rows(b: dict[str, Any]) -> dict[int, float]:
        return {r["batch_size"]: r["steps_per_second"] for r in b.get("results", [])
                if r.get("backend") == "translation"}

    a, b = rows(first), rows(last)
    return [(k, a[k], b.get(k, a[k])) for k in sorted(a)]


def markdown(data: dict[str, Any], image: str | None) -> str:
    cfg, totals = data["config"], data["totals"]
    lines = [f"# envport translate: `{cfg['name']}`", "",
             f"Reference `{cfg['reference']}` -> {cfg['target'].upper()}, agent `{cfg['agent']}`."
             f" Status: **{_status(data)}**.", "",
             f"- Iterations: {totals['iterations']} (infrastructure errors, not counted: "
             f"{totals['infra_errors']})",
             f"- Cost: {totals['cost_usd']:.3f} USD"
             + (f" of a {cfg['budget_usd']:g} USD budget" if cfg.get("budget_usd") else "")
             + (f"; {totals['unknown_cost_calls']} agent calls of unknown cost"
                if totals["unknown_cost_calls"] else ""),
             f"- Tokens: {totals['tokens']['input']:,} in ({totals['tokens']['cached']:,} cached),"
             f" {totals['tokens']['output']:,} out",
             f"- Wall time: {totals['agent_s']:.0f} s agent, {totals['verify_s']:.0f} s "
             "verification"]
    stop = data["stop"]
    if stop:
        s = stop["summary"]
        lines.append(f"- Verified on held-out seeds: {'yes' if s.get('verified') else 'no'}"
                     + (f" (commit `{s['last_green'][:10]}`)" if s.get("last_green") else ""))
        if s.get("handoff"):
            lines.append(f"- Hand-off note: `{s['handoff']}`")
    if image:
        lines += ["", f"![progress, cost and time]({image})"]
    lines += ["", "## Iterations", "",
              "| # | prompt | agent | highest layer passed | tests | regressions | frozen edits"
              " | tokens in/out | cost USD | agent s | verify s | commit |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in data["iterations"]:
        u = r["usage"]
        lines.append(
            f"| {r['iteration']} | {r['kind']} | {r['agent_status']} | {r['highest_layer']} | "
            f"{r['tests_passed']}/{r['tests_total']} | {', '.join(r['regressions']) or '-'} | "
            f"{', '.join(r['frozen_edits']) or '-'} | {u.get('input_tokens', 0):,}/"
            f"{u.get('output_tokens', 0):,} | {_cost(u)} | {r['agent_s']:.1f} | "
            f"{r['verify_s']:.1f} | `{r['commit'][:8]}` |")
    failed = [(r["iteration"], r["kind"], r["failed"]) for r in data["iterations"]
              if r.get("failed")]
    if failed:
        lines += ["", "## What failed", ""]
        lines += [f"- iteration {i} ({k}): {w.splitlines()[0][:400]}" for i, k, w in failed]
    events = [(r["iteration"], e) for r in data["iterations"] for e in r.get("events", [])]
    if events:
        lines += ["", "## Events", ""] + [f"- iteration {i}: {e}" for i, e in events]
    speed = _throughput(data)
    if speed:
        lines += ["", "## Throughput (random actions, steps/s)", "",
                  "| batch | verified translation | after optimisation |", "|---|---|---|"]
        lines += [f"| {b} | {a:,.0f} | {c:,.0f} |" for b, a, c in speed]
    if data["infra"]:
        lines += ["", "## Infrastructure errors (retried, no iteration used)", ""]
        lines += [f"- before iteration {r['iteration']}: {r['agent']['status']}: "
                  f"{r['agent'].get('error', '')[:200]}" for r in data["infra"]]
    return "\n".join(lines) + "\n"


def html_page(data: dict[str, Any], image_path: Path | None) -> str:
    """The same content as a self-contained page (the plot embedded, the diffs folded)."""
    md = markdown(data, None)
    body = []
    in_table = False
    for line in md.splitlines():
        if line.startswith("|"):
            cells = [html.escape(c.strip()).replace("`", "") for c in line.strip("|").split("|")]
            if set("".join(cells)) <= set("-"):
                continue
            if not in_table:
                body.append("<table>")
                in_table = True
                body.append("<tr>" + "".join(f"<th>{c}</th>" for c in cells) + "</tr>")
            else:
                body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
            continue
        if in_table:
            body.append("</table>")
            in_table = False
        text = html.escape(line).replace("**", "")
        if line.startswith("# "):
            body.append(f"<h1>{text[2:]}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{text[3:]}</h2>")
        elif line.startswith("- "):
            body.append(f"<li>{text[2:]}</li>")
        elif line.strip():
            body.append(f"<p>{text}</p>")
    if in_table:
        body.append("</table>")
    if image_path is not None and image_path.exists():
        encoded = base64.b64encode(image_path.read_bytes()).decode()
        body.insert(2, f'<img alt="progress, cost and time" src="data:image/png;base64,'
                       f'{encoded}" style="max-width:100%">')
    ws = Workspace(data["run_dir"] / "workspace")
    if ws.exists and data["iterations"]:
        body.append("<h2>What each iteration changed</h2>")
        for r in data["iterations"]:
            diff = ws.diff(r["commit"])
            body.append(f"<details><summary>iteration {r['iteration']} ({html.escape(r['kind'])}"
                        f", {len(r.get('files', []))} files)</summary><pre>"
                        f"{html.escape(diff[:60_000])}</pre></details>")
    style = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}"
             "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;"
             "padding:2px 6px}pre{background:#f6f6f6;padding:8px;overflow-x:auto}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>envport translate "
            f"{html.escape(data['config']['name'])}</title><style>{style}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


def write_report(run_dir: Path, out: Path | None = None, with_html: bool = True
                 ) -> dict[str, Path]:
    data = load(run_dir)
    out = Path(out or run_dir)
    out.mkdir(parents=True, exist_ok=True)
    image = plot(data, out / "report.png")
    paths = {"markdown": out / "report.md"}
    paths["markdown"].write_text(markdown(data, image.name if image else None))
    if image:
        paths["plot"] = image
    if with_html:
        paths["html"] = out / "report.html"
        paths["html"].write_text(html_page(data, image))
    return paths
