"""L3 lockstep battles: the JAX engine and the real Showdown, from matched seeds and teams.

Per battle: two teams (species from the ``gen1randombattle`` pool at their random-battle levels,
each with 2-4 moves drawn from the moves the engine supports; Showdown's own ``Teams.generate``
teams kept only when every move is supported; or ``moves`` teams concentrated on chosen moves),
a battle seed, and random legal players. The JAX side creates its battle from the same sets
and seed (``create.py``): its state and the start's draws (the lead switch-ins may already draw)
must equal Showdown's after ``create``; from there both run on their own. Every step:

1. the legal choices: the JAX ``legal_mask`` must equal what Showdown's requests allow;
2. both players choose at random among them (one ``random.Random`` per battle), the same integer
   choices go to the JAX step and, as ``move N`` / ``switch N`` strings, to Showdown;
3. ``comparable(jax_state)`` must equal ``comparable_from_showdown(export)`` (every field the
   bridge knows, the PRNG words included).

The first difference stops the battle and is reported with its turn, the differing field paths,
and the index of the first PRNG draw of that step where the two tapes differ (the JAX step
records the ``from``/``to`` of each draw, Showdown's worker its own tape).

``python -m envport.envs.pokemon_gen1.lockstep --battles 100 [--seed 0]
[--teams pool|showdown|moves] [--moves leechseed,toxic,copy,...] [--prng gen5|sodium]``:
``moves`` teams are any species with half their move slots drawn from the focused moves (ids or
family names; default ``moves.FOCUS_DEFAULT``); ``--prng sodium`` seeds every battle with
Showdown's default ChaCha20 generator (``"sodium,HEX"``), whose 8-word state the engine steps as
it steps the LCG's 2 words (``prng.next_u32``).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import random
import sys
import time
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from envport.envs.pokemon_gen1 import bridge as B
from envport.envs.pokemon_gen1 import create, prng
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import moves as MV
from envport.envs.pokemon_gen1 import tables as T
from envport.envs.pokemon_gen1.reference import (
    IllegalChoice,
    ShowdownError,
    ShowdownWorker,
    WorkerCrashed,
    gen1_set,
    legal_choices,
)


@dataclasses.dataclass
class Divergence:
    """Where a lockstep battle first differed from Showdown."""

    battle: int
    turn: int  # Showdown's turn number before the step
    step: int  # steps (requests answered) before this one
    what: str  # "state", "legal", "tape"; "showdown-error": Showdown itself raised
    fields: list[str]
    first_draw: int | None  # index of the first differing draw in this step (None: same tapes)
    jax_draws: list[tuple[int, int]]
    showdown_draws: list[tuple[int, int]]
    choices: tuple[str | None, str | None]
    seed: list[int] | str  # four Gen 5 words, or a "sodium,HEX" seed
    teams: tuple[str, str]
    log: list[str] = dataclasses.field(default_factory=list)  # Showdown's log of the last steps

    def describe(self) -> str:
        lines = [f"battle {self.battle}: first difference at turn {self.turn} (step {self.step}), "
                 f"{self.what}; choices {self.choices}",
                 *(f"  {f}" for f in self.fields[:12])]
        if self.first_draw is not None:
            lines.append(f"  tapes first differ at draw {self.first_draw}: JAX "
                         f"{self.jax_draws[self.first_draw:self.first_draw + 3]} vs Showdown "
                         f"{self.showdown_draws[self.first_draw:self.first_draw + 3]} "
                         f"(JAX {len(self.jax_draws)} draws, Showdown {len(self.showdown_draws)})")
        lines.append(f"  seed {self.seed}; teams {json.dumps(self.teams)}")
        if self.log:
            lines.append("  Showdown's log of the last two steps:")
            lines += [f"    {line}" for line in self.log]
        return "\n".join(lines)


@dataclasses.dataclass
class Summary:
    battles: int = 0
    identical: int = 0
    steps: int = 0
    turns: int = 0
    ended: int = 0
    divergences: list[Divergence] = dataclasses.field(default_factory=list)
    # moves used (Showdown's ``|move|`` log lines, Mirror Move's calls included): the coverage
    moves_used: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    @property
    def showdown_errors(self) -> int:
        """Battles stopped by an exception inside Showdown (identical up to it)."""
        return sum(d.what == "showdown-error" for d in self.divergences)

    @property
    def diverged(self) -> int:
        return len(self.divergences) - self.showdown_errors

    def describe(self) -> str:
        errors = (f"; {self.showdown_errors} stopped by an exception inside Showdown, identical "
                  f"until then" if self.showdown_errors else "")
        return (f"{self.identical} of {self.battles} battles identical to Showdown "
                f"({self.steps} steps, {self.turns} turns compared; {self.ended} ended{errors})")


# ---- teams ----------------------------------------------------------------------------------

def pool_team(rng: random.Random, worker: ShowdownWorker, size: int = 6,
              lead: str | None = None, n_moves: int | None = None) -> str:
    """A team of ``size`` distinct random-battle species at their random-battle levels, each with
    2-4 distinct supported moves (``n_moves`` each where given; Showdown plays the given team as
    is in this format), packed by Showdown; led by ``lead`` where given."""
    species = rng.sample(sorted(T.RANDOM_SETS), size)
    if lead is not None:
        species = [lead, *(sp for sp in species if sp != lead)][:size]
    team = []
    for sp in species:
        level = int(T.RANDOM_SETS[sp].get("level", 80))
        count = rng.choice([2, 3, 4, 4, 4]) if n_moves is None else n_moves
        moves = rng.sample(MV.SUPPORTED_MOVES, count)
        team.append(gen1_set(sp, moves, level=level))
    return worker.pack_team(team)


def focus_moves(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """The moves a ``moves`` team source concentrates on: move ids and family names of
    :data:`moves.FAMILIES` (comma-separated or a list); ``None``: :data:`moves.FOCUS_DEFAULT`."""
    if spec is None:
        return MV.FOCUS_DEFAULT
    items = [x.strip() for x in spec.split(",")] if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for x in items:
        if not x:
            continue
        if x in MV.FAMILIES:
            out += MV.FAMILIES[x]
        elif x in MV.FAMILY_OF:
            out.append(x)
        else:
            MV.check_supported([x], "--moves")
            raise ValueError(f"--moves: {x!r} is neither a move nor a family "
                             f"({', '.join(MV.FAMILIES)})")
    if not out:
        raise ValueError("--moves names no move")
    return tuple(dict.fromkeys(out))


def moves_team(rng: random.Random, worker: ShowdownWorker, focus: Sequence[str],
               size: int = 6, p_focus: float = 0.5) -> str:
    """A team of ``size`` distinct species drawn from all 151 (random-battle level where the
    species has one, else 50-100), each with 2-4 distinct moves: each slot one of ``focus`` with
    probability ``p_focus``, else any supported move, so that the focused moves meet each other
    and the rest of the engine often. Packed by Showdown (its Battle does not validate sets)."""
    species = rng.sample(sorted(T.SPECIES_IDS), size)
    team = []
    for sp in species:
        level = int(T.RANDOM_SETS.get(sp, {}).get("level", rng.randint(50, 100)))
        moves: list[str] = []
        for _ in range(rng.choice([2, 3, 4, 4])):
            pool = focus if rng.random() < p_focus else MV.SUPPORTED_MOVES
            m = rng.choice(pool)
            if m not in moves:
                moves.append(m)
        team.append(gen1_set(sp, moves, level=level))
    return worker.pack_team(team)


def showdown_teams(rng: random.Random, worker: ShowdownWorker,
                   tries: int = 2000) -> tuple[str, str]:
    """Two ``Teams.generate`` teams whose moves are all supported (seeds drawn until found)."""
    found: list[str] = []
    for _ in range(tries):
        packed = worker.generate_team([rng.randrange(65536) for _ in range(4)])
        if not MV.unsupported(MV.packed_team_moves(packed)):
            found.append(packed)
            if len(found) == 2:
                return found[0], found[1]
    raise ValueError(f"no two fully supported Teams.generate teams in {tries} seeds "
                     f"(supported families: {', '.join(MV.FAMILIES)}); use --teams pool")


# ---- one battle -----------------------------------------------------------------------------

def _mask_strings(mask: np.ndarray) -> set[str | None]:
    return {E.choice_string(int(i)) for i in np.flatnonzero(mask)}


def _showdown_legal(request: dict | None) -> set[str | None]:
    if not request or request.get("wait"):
        return {None}
    return set(legal_choices(request, voluntary_switches=True))


def _first_draw(mine: list[tuple[int, int]], theirs: list[tuple[int, int]]) -> int | None:
    for i in range(max(len(mine), len(theirs))):
        if i >= len(mine) or i >= len(theirs) or mine[i] != theirs[i]:
            return i
    return None


def jax_tape(info: dict[str, Any]) -> list[tuple[int, int]]:
    """The ``(from, to)`` of each draw of one engine step (``step_with_tape``'s info)."""
    n = min(int(info["draws"]), E.TAPE_SIZE)
    frm, to = np.asarray(info["tape_from"]), np.asarray(info["tape_to"])
    return [(int(frm[i]), int(to[i])) for i in range(n)]


def _showdown_tape(tape: list[dict]) -> list[tuple[int, int]]:
    return [(int(d["from"]) if d["from"] is not None else -1,
             int(d["to"]) if d["to"] is not None else -1) for d in tape]


def _count_moves(log: list[str], into: collections.Counter | None) -> None:
    if into is None:
        return
    for line in log:
        parts = line.split("|")
        if len(parts) > 3 and parts[1] == "move":
            into[B.to_id(parts[3])] += 1


PLAYERS = ("random", "heuristic")


def run_battle(worker: ShowdownWorker, index: int, seed: Sequence[int] | str,
               teams: tuple[str, str],
               rng: random.Random, max_steps: int = 2000, switch_p: float = 0.15,
               tamper: Any = None, moves_used: collections.Counter | None = None,
               script: Sequence[tuple[int, int]] = (), heuristic: Sequence[int] = ()
               ) -> tuple[Divergence | None, int, int, bool]:
    """One lockstep battle. Returns (divergence or None, steps, turns, ended). ``tamper``
    (tests only): a function applied to the JAX state after a chosen step, to show that a
    difference is caught. ``moves_used``: a Counter that gets the moves Showdown's log shows.
    ``script``: the first steps' choice pairs (engine integers; each must be legal on both
    sides), the random players after them. ``heuristic``: the sides (0 = p1, 1 = p2) played by
    ``agents.heuristic_showdown``, which decides from what Showdown gives that player (its
    request and the worker's state), the others by the random players."""
    from envport.envs.pokemon_gen1 import agents

    for packed in teams:
        MV.check_supported(MV.packed_team_moves(packed), "team")
    step = E.compiled(False)
    seed = seed if isinstance(seed, str) else list(seed)
    bid = f"lockstep-{index}-{seed if isinstance(seed, str) else '-'.join(map(str, seed))}"
    result = worker.create(bid, seed, teams[0], teams[1])
    try:
        # The JAX side creates its own battle from the same sets and seed (create.py): the
        # state after Showdown's start and the start's draws are the first comparison.
        export = worker.export(bid)
        sets = [[p["set"] for p in side["pokemon"]] for side in export["sides"]]
        state, start = create.compiled(False)(
            jax.tree_util.tree_map(jax.numpy.asarray, create.teams_from_sets(*sets)),
            jax.numpy.asarray(prng.state_of_seed(seed)))
        E.check_supported(state)
        diffs = B.differences(B.comparable(state), B.comparable_from_showdown(export))
        jt, st = jax_tape(start), _showdown_tape(result["tape"])
        first = _first_draw(jt, st)
        if diffs or first is not None:
            return Divergence(index, 0, 0, "create" if diffs else "create-tape", diffs, first,
                              jt, st, (None, None), seed, teams), 0, 0, False
        steps = 0
        recent: list[str] = []
        while True:
            turn = int(result["turn"])
            if result["ended"]:
                return None, steps, turn, True
            if steps >= max_steps:
                return None, steps, turn, False
            masks = [np.asarray(E.legal_mask(state, p)) for p in (0, 1)]
            choices: list[int] = []
            for p, side in enumerate(("p1", "p2")):
                mine = _mask_strings(masks[p])
                theirs = _showdown_legal(result["requests"][side])
                if mine != theirs:
                    return Divergence(index, turn, steps, "legal",
                                      [f"legal[{side}]: JAX {sorted(mine, key=str)} vs Showdown "
                                       f"{sorted(theirs, key=str)}"], None, [], [],
                                      (None, None), seed, teams), steps, turn, False
                options = list(np.flatnonzero(masks[p]))
                if steps < len(script):
                    if not masks[p][script[steps][p]]:
                        raise ValueError(f"script step {steps}: choice {script[steps][p]} of "
                                         f"{side} is not legal ({sorted(mine, key=str)})")
                    choices.append(int(script[steps][p]))
                    continue
                if p in heuristic:
                    pick = agents.heuristic_showdown(result["requests"][side], worker.state(bid),
                                                     p, bool(result["ended"]))
                    if not masks[p][pick]:
                        raise ValueError(f"the heuristic chose {pick} for {side}, not legal "
                                         f"({sorted(mine, key=str)})")
                    choices.append(int(pick))
                    continue
                moves_only = [c for c in options if c < E.SWITCH]
                if moves_only and rng.random() >= switch_p:
                    options = moves_only
                choices.append(int(rng.choice(options)))
            strings = (E.choice_string(choices[0]), E.choice_string(choices[1]))
            try:
                result = worker.choose(bid, strings[0], strings[1])
            except ShowdownError as e:
                if isinstance(e, (IllegalChoice, WorkerCrashed)):
                    raise
                # an exception inside Showdown itself (e.g. its "moveSlot is null which
                # shouldn't happen" in side.commitChoices): nothing to compare with from here
                return Divergence(index, turn, steps, "showdown-error",
                                  [str(e).splitlines()[0]], None, [], [], strings, seed,
                                  teams), steps, turn, False
            _count_moves(result.get("log", []), moves_used)
            recent = (recent + [f"-- step {steps}"] + [
                line for line in result.get("log", [])
                if line and not line.startswith(("|split", "|t:", "|j|"))])[-60:]
            state, info = step(state, np.int32(choices[0]), np.int32(choices[1]))
            if tamper is not None:
                state = tamper(steps, state)
            steps += 1
            mine_view = B.comparable(state)
            theirs_view = B.comparable_from_showdown(worker.export(bid))
            diffs = B.differences(mine_view, theirs_view)
            jt, st = jax_tape(info), _showdown_tape(result["tape"])
            first = _first_draw(jt, st)
            if diffs or first is not None:
                prev = [i for i, x in enumerate(recent) if x.startswith("-- step")][-2:]
                return Divergence(index, turn, steps - 1, "state" if diffs else "tape",
                                  diffs, first, jt, st, strings, seed, teams,
                                  recent[prev[0]:]), steps, turn, False
    finally:
        worker.destroy(bid)


TEAM_SOURCES = ("pool", "showdown", "moves")
PRNG_KINDS = ("gen5", "sodium")


def run(battles: int, seed: int = 0, teams: str = "pool", worker: ShowdownWorker | None = None,
        max_steps: int = 2000, stop_at_first: bool = False, verbose: bool = False,
        moves: str | Sequence[str] | None = None, players: str = "random",
        only: Sequence[int] | None = None, prng_kind: str = "gen5") -> Summary:
    """``battles`` lockstep battles; their seeds, teams and players all derive from ``seed``.
    ``moves`` (with ``teams='moves'``): the focused moves or families (:func:`focus_moves`).
    ``players``: ``random`` (both sides random legal players) or ``heuristic`` (the heuristic of
    ``agents.py`` as p1 in even battles and p2 in odd ones, against the random player).
    ``only``: run just these battle indices of the ``battles`` (the same teams, seeds and
    players as in the whole run). ``prng_kind``: the battles' generator, ``gen5`` (four seed
    words) or ``sodium`` (Showdown's default ChaCha20 generator, a 64-digit seed)."""
    if teams not in TEAM_SOURCES:
        raise ValueError(f"--teams must be one of {', '.join(TEAM_SOURCES)}, not {teams!r}")
    if players not in PLAYERS:
        raise ValueError(f"--players must be one of {', '.join(PLAYERS)}, not {players!r}")
    if only is not None and not all(0 <= i < battles for i in only):
        raise ValueError(f"--only: battle indices must be in 0..{battles - 1}")
    if moves is not None and teams != "moves":
        raise ValueError("--moves needs --teams moves")
    if prng_kind not in PRNG_KINDS:
        raise ValueError(f"--prng must be one of {', '.join(PRNG_KINDS)}, not {prng_kind!r}")
    focus = focus_moves(moves) if teams == "moves" else ()
    own = worker is None
    w = worker or ShowdownWorker()
    summary = Summary()
    try:
        for i in range(battles):
            if only is not None and i not in only:
                continue
            rng = random.Random(f"lockstep:{seed}:{i}")
            if teams == "pool":
                pair = (pool_team(rng, w), pool_team(rng, w))
            elif teams == "moves":
                pair = (moves_team(rng, w, focus), moves_team(rng, w, focus))
            else:
                pair = showdown_teams(rng, w)
            battle_seed: list[int] | str = [rng.randrange(65536) for _ in range(4)]
            if prng_kind == "sodium":
                battle_seed = prng.random_sodium_seed(rng)
            div, steps, turns, ended = run_battle(w, i, battle_seed, pair, rng,
                                                  max_steps=max_steps,
                                                  moves_used=summary.moves_used,
                                                  heuristic=(i % 2,) if players == "heuristic"
                                                  else ())
            summary.battles += 1
            summary.steps += steps
            summary.turns += turns
            summary.ended += ended
            if div is None:
                summary.identical += 1
            else:
                summary.divergences.append(div)
                if verbose:
                    print(div.describe(), flush=True)
                if stop_at_first:
                    break
    finally:
        if own:
            w.close()
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--battles", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--teams", default="pool", help="pool (supported moves on pool species), "
                    "showdown (Teams.generate teams whose moves are all supported) or moves "
                    "(any species, half the move slots from --moves)")
    ap.add_argument("--moves", default=None, help="with --teams moves: comma-separated moves "
                    "and/or families of moves.FAMILIES to focus on (default: moves.FOCUS_DEFAULT)")
    ap.add_argument("--players", default="random", help="random (both sides random legal "
                    "players) or heuristic (agents.py's heuristic as p1 in even battles, p2 in "
                    "odd ones, against the random player)")
    ap.add_argument("--only", default=None, help="comma-separated battle indices: run just "
                    "these of the --battles (same teams, seeds and players)")
    ap.add_argument("--prng", default="gen5", help="the battles' generator: gen5 (Showdown's "
                    "Gen 5 LCG, four seed words) or sodium (its default ChaCha20 generator)")
    ap.add_argument("--max-steps", type=int, default=2000)
    ap.add_argument("--stop-at-first", action="store_true")
    args = ap.parse_args(argv)
    if args.battles < 1:
        raise ValueError("--battles must be at least 1")
    try:
        only = None if args.only is None else [int(x) for x in args.only.split(",") if x]
    except ValueError:
        raise ValueError(f"--only must be comma-separated integers, not {args.only!r}") from None
    t0 = time.time()
    summary = run(args.battles, args.seed, args.teams, max_steps=args.max_steps,
                  stop_at_first=args.stop_at_first, verbose=True, moves=args.moves,
                  players=args.players, only=only, prng_kind=args.prng)
    print(summary.describe() + f" in {time.time() - t0:.1f} s (jax {jax.__version__})")
    if args.teams == "moves":
        focus = focus_moves(args.moves)
        print("focused moves used: " + ", ".join(f"{m} {summary.moves_used[m]}" for m in focus))
    return 0 if summary.diverged == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as e:  # bad input: a clear message, exit code 2 (as envport.cli does)
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
