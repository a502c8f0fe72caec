"""How fast the reference runs: Showdown in-process vs through the worker from Python, one run.

    python -m envport.envs.pokemon_gen1.bench_reference [--seconds 10] [--batch 32]

Every measurement plays random legal players (a usable move, or a random switch when forced; no
voluntary switches) in ``gen1randombattle`` with two freshly generated teams per battle, the
loop of the spec's baseline (section 6). Turns are Showdown's turn counter.

- ``in-process``: the loop inside Node (worker op ``selfplay``), without and with the tape;
- ``python, 1 battle``: ShowdownWorker.choose per turn, the tape returned each turn;
- ``python, batch B``: B battles stepped together, one ``choose_many`` line per step.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from envport.envs.pokemon_gen1.reference import ShowdownWorker, legal_choices


def _choose(rng: random.Random, requests: dict) -> tuple:
    return tuple(rng.choice(c) if (c := legal_choices(requests[s])) else None
                 for s in ("p1", "p2"))


def _new_battle(worker: ShowdownWorker, rng: random.Random, battle_id: str) -> dict:
    seeds = [[rng.randrange(65536) for _ in range(4)] for _ in range(3)]
    teams = worker.generate_teams(seeds[1:])
    return worker.create(battle_id, seeds[0], *teams)


def python_loop(worker: ShowdownWorker, seconds: float, batch: int, seed: int = 0) -> dict:
    """Random-policy battles from Python, ``batch`` at a time; battles/s and turns/s."""
    rng = random.Random(seed)
    ids = [f"bench-{batch}-{i}" for i in range(batch)]
    last = {b: _new_battle(worker, rng, b) for b in ids}
    turns = battles = 0
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        actions = [(b, *_choose(rng, last[b]["requests"])) for b in ids]
        results = (worker.choose_many(actions) if batch > 1
                   else [worker.choose(*actions[0])])
        for (b, *_), result in zip(actions, results, strict=True):
            turns += result["turn"] - last[b]["turn"]
            last[b] = result
            if result["ended"]:
                battles += 1
                worker.destroy(b)
                last[b] = _new_battle(worker, rng, b)
    for b in ids:
        worker.destroy(b)
    return {"battles": battles, "turns": turns, "seconds": elapsed,
            "battles_per_s": battles / elapsed, "turns_per_s": turns / elapsed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per measurement")
    parser.add_argument("--batch", type=int, default=32, help="battles per choose_many line")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.batch < 1:
        raise ValueError("--seconds must be > 0 and --batch >= 1")
    with ShowdownWorker(timeout=max(60.0, 3 * args.seconds)) as worker:
        rows = [("in-process (Node)", worker.selfplay(args.seconds)),
                ("in-process, taped", worker.selfplay(args.seconds, tape=True))]
        python_loop(worker, min(2.0, args.seconds), 1)  # warm-up
        rows.append(("python, 1 battle", python_loop(worker, args.seconds, 1)))
        rows.append((f"python, batch {args.batch}", python_loop(worker, args.seconds, args.batch)))
    base = rows[0][1]["turns_per_s"]
    if args.json:
        print(json.dumps([{"run": name, **row} for name, row in rows], indent=1))
        return 0
    print(f"{'run':<22}{'battles/s':>11}{'turns/s':>10}{'vs in-process':>15}")
    for name, row in rows:
        print(f"{name:<22}{row['battles_per_s']:>11.1f}{row['turns_per_s']:>10.0f}"
              f"{row['turns_per_s'] / base:>14.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
