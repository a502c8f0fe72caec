"""Writes the Gen 1 tables in ``data/`` from the installed pokemon-showdown (never by hand).

    python -m envport.envs.pokemon_gen1.generate_data           # (re)write data/*.json
    python -m envport.envs.pokemon_gen1.generate_data --check   # exit 1 if they differ

``reference/dump_dex.js`` reads ``Dex.forGen(1)`` and the ``gen1randombattle`` sets; this script
adds the derived columns (type multipliers, the random-battle move pool) and writes one JSON file
per table, one entry per line (readable diffs), each naming the Showdown version it came from,
and Showdown's MIT licence notice (``LICENSE.showdown``), which covers the tables.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from envport.envs.pokemon_gen1.reference import (
    REFERENCE_DIR,
    SHOWDOWN_VERSION,
    check_installed,
    find_node,
)

DATA_DIR = Path(__file__).resolve().parent / "data"
DUMP_JS = REFERENCE_DIR / "dump_dex.js"
GENERATED_BY = "python -m envport.envs.pokemon_gen1.generate_data"
FILES = ("species.json", "moves.json", "typechart.json", "random_battle_sets.json",
         "team_pool.json", "LICENSE.showdown")
# The pool of Teams.generate teams that reset(key) samples from (create.TeamPool): team i is
# Teams.generate('gen1randombattle', {seed: seed_words(i, POOL_PART)}).
POOL_SIZE = 1024
POOL_PART = 3


def dump_dex() -> dict[str, Any]:
    """The raw dump of ``reference/dump_dex.js`` (runs Node)."""
    check_installed()
    out = subprocess.run([find_node(), str(DUMP_JS)], cwd=str(REFERENCE_DIR), capture_output=True,
                         text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"{DUMP_JS} failed ({out.returncode}): {out.stderr.strip()}")
    dump = json.loads(out.stdout)
    if dump["showdown_version"] != SHOWDOWN_VERSION:
        raise RuntimeError(f"installed pokemon-showdown is {dump['showdown_version']}, "
                           f"envport pins {SHOWDOWN_VERSION}")
    return dump


def pool_moves(sets: dict[str, Any]) -> list[str]:
    """Every move any gen1randombattle set can be given (all its move lists)."""
    keys = ("moves", "essentialMoves", "exclusiveMoves", "comboMoves")
    return sorted({m for entry in sets.values() for k in keys for m in entry.get(k, [])})


def tables(dump: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The contents of each file of ``data/``."""
    head = {"showdown_version": dump["showdown_version"], "generated_by": GENERATED_BY}
    chart = dump["typechart"]
    multiplier = [[0.0 if imm else 2.0 ** eff for eff, imm in zip(er, ir, strict=True)]
                  for er, ir in zip(chart["effectiveness"], chart["immune"], strict=True)]
    sets = dump["random_battle_sets"]
    return {
        "species.json": {**head, "source": dump["sources"]["species"],
                         "species": dump["species"]},
        "moves.json": {**head, "source": dump["sources"]["moves"], "moves": dump["moves"]},
        "typechart.json": {
            **head, "source": dump["sources"]["typechart"],
            "note": "rows: attacking type, columns: defending type, in the order of 'types'; "
                    "multiplier = 0 if immune else 2 ** effectiveness",
            "types": chart["types"], "effectiveness": chart["effectiveness"],
            "immune": chart["immune"], "multiplier": multiplier},
        "random_battle_sets.json": {
            **head, "source": dump["sources"]["random_battle_sets"],
            "pool_moves": pool_moves(sets), "sets": sets},
    }


def render(table: dict[str, Any]) -> str:
    """JSON with one entry of each list (or one key of each mapping) per line."""
    lines = ["{"]
    items = list(table.items())
    for n, (key, value) in enumerate(items):
        comma = "," if n < len(items) - 1 else ""
        head = f" {json.dumps(key)}: "
        if isinstance(value, list) and value and isinstance(value[0], dict | list):
            body = ",\n".join(f"  {json.dumps(v, sort_keys=True)}" for v in value)
            lines.append(f"{head}[\n{body}\n ]{comma}")
        elif isinstance(value, dict) and value:
            body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}"
                              for k, v in value.items())
            lines.append(f"{head}{{\n{body}\n }}{comma}")
        else:
            lines.append(f"{head}{json.dumps(value)}{comma}")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == table
    return text


def team_pool(size: int = POOL_SIZE) -> dict[str, Any]:
    """``size`` teams of Showdown's own ``Teams.generate`` (through the worker), each written
    compactly (``create.format_set``) beside its seed; every entry is checked to rebuild the
    generated team exactly (``Teams.pack`` of the parsed sets equals the generated packing)."""
    from envport.envs.pokemon_gen1.create import format_set, parse_set
    from envport.envs.pokemon_gen1.reference import ShowdownWorker, gen1_set, seed_words

    seeds = [seed_words(i, POOL_PART) for i in range(size)]
    with ShowdownWorker() as w:
        # In chunks: the worker's timeout is per request batch, and 1,024 generations at once
        # outlast it on a loaded machine.
        generated = [r for k in range(0, len(seeds), 128) for r in w.request(
            [{"op": "generate_team", "seed": s, "format": "gen1randombattle"}
             for s in seeds[k:k + 128]])]
        results = [w._result(r, {"op": "generate_team"}) for r in generated]
        texts = [";".join(format_set(s) for s in r["team"]) for r in results]
        rebuilt = [[gen1_set(x["species"], x["moves"], level=x["level"], ivs=x["ivs"],
                             evs=x["evs"]) for x in map(parse_set, t.split(";"))] for t in texts]
        packed = [r for k in range(0, len(rebuilt), 128) for r in w.request(
            [{"op": "pack_team", "team": t} for t in rebuilt[k:k + 128]])]
        for i, (r, p) in enumerate(zip(results, packed, strict=True)):
            mine = w._result(p, {"op": "pack_team"})["packed"]
            if mine != r["packed"]:
                raise RuntimeError(f"pool team {i} does not rebuild: {mine} != {r['packed']}")
    return {"showdown_version": SHOWDOWN_VERSION, "generated_by": GENERATED_BY,
            "source": "Teams.generate('gen1randombattle', {seed}) (sim/teams.ts, "
                      "data/random-battles/gen1/teams.ts)",
            "note": f"[seed words, team]: seed = reference.seed_words(i, {POOL_PART}); a team is "
                    "';'-separated sets species:level:moves[:ivs:evs] (absent: IV 30, EV 255)",
            "teams": [[",".join(map(str, s)), t] for s, t in zip(seeds, texts, strict=True)]}


def generate() -> dict[str, str]:
    """File name -> the text it should have, from the installed package (the tables are
    Showdown's data, MIT-licensed: its notice is written beside them)."""
    dump = dump_dex()
    files = {name: render(table) for name, table in tables(dump).items()}
    files["team_pool.json"] = render(team_pool())
    files["LICENSE.showdown"] = dump["license"]
    return files


def load(name: str) -> dict[str, Any]:
    """A committed table (``species``, ``moves``, ``typechart``, ``random_battle_sets``)."""
    return json.loads((DATA_DIR / f"{name}.json").read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed files instead of writing them")
    args = parser.parse_args(argv)
    files = generate()
    if args.check:
        stale = [n for n, text in files.items()
                 if not (DATA_DIR / n).is_file() or (DATA_DIR / n).read_text() != text]
        if stale:
            print(f"stale: {stale}; run `{GENERATED_BY}`", file=sys.stderr)
            return 1
        print(f"data/ matches pokemon-showdown {SHOWDOWN_VERSION}")
        return 0
    DATA_DIR.mkdir(exist_ok=True)
    for name, text in files.items():
        (DATA_DIR / name).write_text(text)
        print(f"wrote {DATA_DIR / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
