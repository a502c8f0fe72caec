"""The run's ledger: append-only JSONL, one record per event, flushed to disk as written.

Record types: ``start`` and ``resume`` (configuration overrides), ``iteration`` (one agent call
and its verification: highest layer passed, tests passed, regressions, tokens, cost, wall time
split agent / verification, the commit, the loop state to continue from), ``infra`` (an
infrastructure failure that did not consume an iteration), ``verify`` (a verification without
an agent call: the composition after the last module, a held-out check), ``stop``.
Resume reads the last iteration's ``next`` state; a torn last line (a crash mid-write) is
ignored.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


class Ledger:
    def __init__(self, path: Path):
        self.path = Path(path)

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        record = {"time": round(time.time(), 3), **record}
        line = json.dumps(record, default=str)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())  # the record survives a crash of envport right after
        return record

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a torn write at the end; everything before it is intact
        return out

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records() if r.get("type") == kind]

    def iterations(self) -> list[dict[str, Any]]:
        return self.of_type("iteration")

    def totals(self) -> dict[str, Any]:
        """Cost, tokens and time over every agent call (infrastructure failures included)."""
        cost, unknown = 0.0, 0
        tokens = {"input": 0, "output": 0, "cached": 0}
        agent_s = verify_s = 0.0
        # a manual agent's call is recorded as "waiting" (0 s); its time is the time from the
        # prompt to the `--resume`, on the iteration record (agent_wall_s)
        waiting = {r.get("iteration") for r in self.records() if r.get("type") == "agent"
                   and (r.get("agent") or {}).get("status") == "waiting"}
        for r in self.records():
            if r.get("type") == "iteration" and r.get("iteration") in waiting:
                agent_s += float(r.get("agent_wall_s", 0.0))
            # an agent call is counted once, on its own record (iterations only repeat it)
            agent = r.get("agent") if r.get("type") in ("agent", "infra") else None
            if agent:
                usage = agent.get("usage", {})
                if usage.get("cost_usd") is None:
                    unknown += 1
                else:
                    cost += float(usage["cost_usd"])
                tokens["input"] += int(usage.get("input_tokens", 0))
                tokens["output"] += int(usage.get("output_tokens", 0))
                tokens["cached"] += int(usage.get("cached_tokens", 0))
            agent_s += float(r.get("agent_s", 0.0))
            verify_s += float(r.get("verify_s", 0.0))
        return {"cost_usd": cost, "unknown_cost_calls": unknown, "tokens": tokens,
                "agent_s": agent_s, "verify_s": verify_s,
                "iterations": len(self.iterations()),
                "infra_errors": len(self.of_type("infra"))}
