"""The reference of pokemon-gen1: Pokemon Showdown (npm ``pokemon-showdown``, pinned) under Node.

:class:`ShowdownWorker` runs ``reference/worker.js`` (one Node process, many battles) and speaks its
JSON-lines protocol: requests with ids, answered in order, with a timeout. It keeps, per battle,
what made it (seed and packed teams, or an imported ``toJSON``) and every choice since, so that a
crashed or hung worker is killed, restarted and every battle re-created exactly (replaying the
choices reproduces Showdown's battles and PRNG streams; each re-created battle's PRNG state is
checked against the last one seen). The request that met the crash raises
:class:`WorkerCrashed` / :class:`WorkerHung` naming its battle, seed, teams and choices; its battle
is left as it was before that request.

:class:`ShowdownBattle` is one battle behind envport's :class:`~envport.core.reference.Reference`
protocol, as far as a two-player game allows (see "Where the protocol differs" in README.md).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import queue
import re
import shutil
import subprocess
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from envport.core.reference import RefState

HERE = Path(__file__).resolve().parent
REFERENCE_DIR = HERE / "reference"
WORKER_JS = REFERENCE_DIR / "worker.js"
INSTALL_COMMAND = "bash envport/envs/pokemon_gen1/install_reference.sh"
SHOWDOWN_VERSION = "0.11.11"
MIN_NODE_MAJOR = 18
FORMAT = "gen1randombattle"

Seed = Sequence[int] | str  # four Gen 5 words, or a "sodium,HEX" seed
Choice = str | None


class ReferenceUnavailable(RuntimeError):
    """Node.js or the pinned pokemon-showdown package is missing; the message says what to run."""


class ShowdownError(RuntimeError):
    """A request failed inside the worker; names the battle and how to reproduce it."""

    def __init__(self, message: str, battle_id: Any = None, record: BattleRecord | None = None,
                 detail: Mapping[str, Any] | None = None):
        self.battle_id = battle_id
        self.record = record
        self.detail = dict(detail or {})
        if record is not None:
            message = f"{message}\n{record.describe()}"
        super().__init__(message)


class IllegalChoice(ShowdownError, ValueError):
    """Showdown rejected a choice (disabled move, no PP, switch to a fainted/active Pokemon...)."""

    @property
    def side(self) -> str | None:
        return self.detail.get("side")

    @property
    def choice(self) -> str | None:
        return self.detail.get("choice")

    @property
    def showdown_message(self) -> str | None:
        return self.detail.get("showdown_message")


class WorkerCrashed(ShowdownError):
    """The Node process died during a request; it was restarted and its battles re-created."""


class WorkerHung(WorkerCrashed):
    """A request ran past its timeout; the worker was killed, restarted, battles re-created."""


def find_node() -> str:
    """The ``node`` executable ($ENVPORT_NODE, else PATH), checked to be Node >= 18."""
    node = os.environ.get("ENVPORT_NODE") or shutil.which("node")
    if not node:
        raise ReferenceUnavailable(
            f"pokemon-gen1's reference (Pokemon Showdown) runs under Node.js >= {MIN_NODE_MAJOR}, "
            "and `node` is not on PATH (nor set as $ENVPORT_NODE). Install Node 20 LTS, then run "
            f"`{INSTALL_COMMAND}`.")
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30,
                                 check=True).stdout.strip()
        major = int(version.lstrip("v").split(".")[0])
    except (OSError, subprocess.SubprocessError, ValueError) as e:
        raise ReferenceUnavailable(f"could not run `{node} --version`: {e}") from e
    if major < MIN_NODE_MAJOR:
        raise ReferenceUnavailable(
            f"pokemon-gen1 needs Node.js >= {MIN_NODE_MAJOR}; {node} is {version}. Install Node "
            f"20 LTS, then run `{INSTALL_COMMAND}`.")
    return node


def check_installed(reference_dir: Path = REFERENCE_DIR) -> None:
    """Raise :class:`ReferenceUnavailable` unless the pinned pokemon-showdown is installed."""
    package = reference_dir / "node_modules" / "pokemon-showdown" / "package.json"
    if not package.is_file():
        raise ReferenceUnavailable(
            f"pokemon-showdown is not installed ({package} is missing). Run `{INSTALL_COMMAND}`.")
    version = json.loads(package.read_text()).get("version")
    if version != SHOWDOWN_VERSION:
        raise ReferenceUnavailable(
            f"pokemon-showdown {version} is installed in {package.parent}, envport pins "
            f"{SHOWDOWN_VERSION}. Run `{INSTALL_COMMAND}`.")


def check_sodium_seed(seed: Any, what: str = "seed") -> str:
    """Showdown's ChaCha20 seed, ``"sodium,HEX"``: 1-64 lower-case hex digits."""
    if not (isinstance(seed, str) and re.fullmatch(r"sodium,[0-9a-f]{1,64}", seed)):
        raise ValueError(f"{what} must be 'sodium,' and 1-64 hex digits, got {seed!r}")
    return seed


def check_seed(seed: Any, what: str = "seed") -> list[int] | str:
    """A Showdown Gen 5 seed: four integers in 0..65535 (Showdown itself accepts any number).
    Also Showdown's default ChaCha20 seed, ``"sodium,HEX"`` (1-64 hex digits), returned as the
    string (``prng.sodium_seed_state`` reads it into the engine's 8-word state)."""
    if isinstance(seed, str) and seed.startswith("sodium,"):
        return check_sodium_seed(seed, what)
    if isinstance(seed, str):
        try:
            seed = [int(w) for w in seed.split(",")]
        except ValueError:
            raise ValueError(f"{what} must be 4 integers in 0..65535, got {seed!r}") from None
    words = list(seed) if isinstance(seed, Iterable) else None
    if (words is None or len(words) != 4
            or not all(isinstance(w, int | np.integer) and not isinstance(w, bool)
                       and 0 <= int(w) <= 0xFFFF for w in words)):
        raise ValueError(f"{what} must be 4 integers in 0..65535, got {seed!r}")
    return [int(w) for w in words]


def gen1_set(species: str, moves: Sequence[str], level: int = 100, **fields: Any) -> dict:
    """A hand-built Gen 1 set as random battles build them: no ability (Showdown would otherwise
    give the species its modern ability, e.g. Tauros' Intimidate), stat experience 255 and DV 15
    (EV 255, IV 30) in every stat, unless ``fields`` say otherwise."""
    stats = ("hp", "atk", "def", "spa", "spd", "spe")
    return {"species": species, "moves": list(moves), "level": level, "ability": "No Ability",
            "evs": dict.fromkeys(stats, 255), "ivs": dict.fromkeys(stats, 30), **fields}


def seed_words(seed: int, part: int) -> list[int]:
    """Four 16-bit seed words for ``part`` (0: the battle, 1/2: p1/p2's team) of envport seed."""
    from envport.core.seeds import derive_seed

    hi, lo = derive_seed(seed, part, 0), derive_seed(seed, part, 1)
    return [hi >> 16, hi & 0xFFFF, lo >> 16, lo & 0xFFFF]


@dataclasses.dataclass
class BattleRecord:
    """What re-creates a battle exactly: its origin and every choice since."""

    battle_id: Any
    format: str
    seed: list[int] | str | None = None  # the battle seed (for created battles; str: sodium)
    teams: tuple[str, str] | None = None  # packed teams (for created battles)
    origin_json: dict | None = None  # the toJSON it was imported from (for imported battles)
    choices: list[tuple[Choice, Choice]] = dataclasses.field(default_factory=list)
    reseeds: list[tuple[int, list[int]]] = dataclasses.field(default_factory=list)  # (before
    # choice number k, the seed given to resetRNG)
    prng: list[int] | None = None  # the PRNG state after the last request
    turn: int = 0

    def describe(self, pending: tuple[Choice, Choice] | None = None) -> str:
        if self.origin_json is not None:
            j = self.origin_json
            origin = (f"imported from toJSON (turn {j.get('turn')}, starting seed "
                      f"{j.get('prngSeed')}, PRNG then {j.get('prng')})")
        else:
            origin = f"seed {self.seed}, format {self.format}, teams {list(self.teams or ())}"
        text = (f"battle {self.battle_id!r}: {origin}; {len(self.choices)} choices since: "
                f"{[list(c) for c in self.choices]}")
        if self.reseeds:
            text += f"; resetRNG before choice k: {[[k, s] for k, s in self.reseeds]}"
        if pending is not None:
            text += f"; failing choices {list(pending)}"
        return text

    def requests(self) -> list[dict]:
        if self.origin_json is not None:
            first = {"op": "import", "battle_id": self.battle_id, "json": self.origin_json}
        else:
            assert self.seed is not None and self.teams is not None
            first = {"op": "create", "battle_id": self.battle_id, "seed": self.seed,
                     "team1": self.teams[0], "team2": self.teams[1], "format": self.format}
        steps = [first]
        reseeds = list(self.reseeds)
        for k in range(len(self.choices) + 1):
            while reseeds and reseeds[0][0] == k:
                steps.append({"op": "reseed", "battle_id": self.battle_id,
                              "seed": reseeds.pop(0)[1]})
            if k < len(self.choices):
                p1, p2 = self.choices[k]
                steps.append({"op": "choose", "battle_id": self.battle_id, "p1": p1, "p2": p2})
        return steps


class _Process:
    """One ``node worker.js``: its stdout lines in a queue, the tail of its stderr kept."""

    def __init__(self, node: str):
        self.proc = subprocess.Popen(
            [node, str(WORKER_JS)], cwd=str(REFERENCE_DIR), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=40)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace").rstrip())

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def receive(self, timeout: float) -> bytes | None:
        """The next reply line; None if the process ended; raises queue.Empty on timeout."""
        return self.lines.get(timeout=timeout)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.close()  # type: ignore[union-attr]

    def stderr_tail(self) -> str:
        return "\n".join(self.stderr)


class _Died(Exception):
    def __init__(self, hung: bool, why: str):
        super().__init__(why)
        self.hung = hung


class ShowdownWorker:
    """A persistent Node process running many Showdown battles; restarted if it dies or hangs.

    ``timeout`` (seconds) bounds every request unless a call passes its own. Use as a context
    manager or call :meth:`close`.
    """

    def __init__(self, timeout: float = 60.0, start_timeout: float = 60.0, node: str | None = None):
        check_installed()
        self.node = node or find_node()
        self.timeout = float(timeout)
        self.start_timeout = float(start_timeout)
        self.records: dict[Any, BattleRecord] = {}
        self.restarts = 0
        self._next_id = 0
        self._lock = threading.RLock()
        self._proc: _Process | None = None
        self._start()

    # -- process management ------------------------------------------------------------------

    def _start(self) -> None:
        self._proc = _Process(self.node)
        try:
            info = self._roundtrip([{"op": "ping"}], self.start_timeout)[0]
        except _Died as e:
            tail = self._proc.stderr_tail()
            self._proc.kill()
            self._proc = None
            if "not installed" in tail:
                raise ReferenceUnavailable(tail) from None
            raise ReferenceUnavailable(f"the Showdown worker did not start ({e}): {tail}") from None
        version = info["result"]["showdown_version"]
        if version != SHOWDOWN_VERSION:
            raise ReferenceUnavailable(
                f"the worker loaded pokemon-showdown {version}, envport pins {SHOWDOWN_VERSION}; "
                f"run `{INSTALL_COMMAND}`.")

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._proc.kill()
                self._proc = None

    def __enter__(self) -> ShowdownWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:  # noqa: SIM105 (at interpreter exit, contextlib itself may be gone)
            self.close()
        except Exception:
            pass

    def _roundtrip(self, requests: list[dict], timeout: float) -> list[dict]:
        """Send ``requests`` as one batch line; their replies, in order. Raises _Died."""
        proc = self._proc
        if proc is None:
            raise _Died(False, "the worker is closed")
        ids = []
        for request in requests:
            self._next_id += 1
            request["id"] = self._next_id
            ids.append(self._next_id)
        line = (json.dumps(requests, separators=(",", ":")) + "\n").encode()
        try:
            proc.send(line)
            reply = proc.receive(timeout)
        except queue.Empty:
            raise _Died(True, f"no reply within {timeout:g} s") from None
        except OSError as e:  # BrokenPipeError: the process is gone
            raise _Died(False, f"writing to the worker failed: {e}") from None
        if reply is None:
            code = proc.proc.wait()
            raise _Died(False, f"the Node process exited (code {code})")
        replies = json.loads(reply)
        if [r.get("id") for r in replies] != ids:
            got = [r.get("id") for r in replies]
            raise _Died(False, f"replies out of step: ids {got} != {ids}")
        return replies

    def _recover(self) -> None:
        """Kill the process, start a new one and re-create every recorded battle."""
        if self._proc is not None:
            self._proc.kill()
        self.restarts += 1
        self._start()
        for record in list(self.records.values()):
            requests = record.requests()
            try:
                replies = self._roundtrip(requests, self.timeout + 0.01 * len(requests))
            except _Died as e:
                raise ShowdownError(f"the restarted worker failed while re-creating battles: {e}",
                                    record.battle_id, record) from None
            bad = [r["error"] for r in replies if not r["ok"]]
            prng = replies[-1]["result"]["prng"] if not bad else None
            if bad or (record.prng is not None and prng != record.prng):
                why = bad[0] if bad else f"PRNG state {prng}, recorded {record.prng}"
                raise ShowdownError("re-creating a battle after a worker restart did not "
                                    f"reproduce it ({why})", record.battle_id, record)

    def request(self, requests: list[dict], timeout: float | None = None) -> list[dict]:
        """Send a batch of raw requests; their raw replies (``ok``/``result``/``error``).

        Battle bookkeeping (the records that survive a restart) is updated for every successful
        create/import/choose/destroy. If the worker dies or hangs, it is restarted, the battles
        re-created as they were before this batch, and WorkerCrashed/WorkerHung raised.
        """
        timeout = self.timeout if timeout is None else float(timeout)
        with self._lock:
            requests = [dict(r) for r in requests]
            try:
                replies = self._roundtrip(requests, timeout)
            except _Died as died:
                tail = self._proc.stderr_tail() if self._proc else ""
                self._recover()
                involved = [r for r in requests if r.get("battle_id") in self.records]
                record = self.records.get(involved[0]["battle_id"]) if involved else None
                pending = ((involved[0].get("p1"), involved[0].get("p2"))
                           if involved and involved[0].get("op") == "choose" else None)
                kind = WorkerHung if died.hung else WorkerCrashed
                what = ", ".join(f"{r.get('op')}({r.get('battle_id', '')!r})" for r in requests)
                message = (f"the Showdown worker {'hung' if died.hung else 'crashed'} on "
                           f"[{what}]: {died}; restarted (restart {self.restarts}), "
                           f"{len(self.records)} battles re-created as before the request.")
                if record is not None:
                    message += "\n" + record.describe(pending)
                    for other in involved[1:]:
                        message += "\n" + self.records[other["battle_id"]].describe()
                if tail:
                    message += f"\nworker stderr:\n{tail}"
                raise kind(message, record.battle_id if record else None, None,
                           {"requests": requests}) from None
            for request, reply in zip(requests, replies, strict=True):
                self._book(request, reply)
            return replies

    def _book(self, request: dict, reply: dict) -> None:
        op, battle_id = request.get("op"), request.get("battle_id")
        if not reply["ok"]:
            if reply["error"].get("battle_dropped") and battle_id in self.records:
                # Showdown threw mid-turn: rebuild the battle as it was before the request.
                record = self.records[battle_id]
                replies = self._roundtrip(record.requests(), self.timeout)
                if not all(r["ok"] for r in replies):
                    self.records.pop(battle_id)
            return
        result = reply["result"]
        if op == "create":
            self.records[battle_id] = BattleRecord(
                battle_id, request.get("format") or FORMAT,
                request["seed"] if isinstance(request["seed"], str) else list(request["seed"]),
                (request["team1"], request["team2"]), prng=result["prng"], turn=result["turn"])
        elif op == "import":
            origin = json.loads(json.dumps(request["json"]))  # the caller may change theirs
            self.records[battle_id] = BattleRecord(
                battle_id, origin.get("formatid", FORMAT), origin_json=origin,
                prng=result["prng"], turn=result["turn"])
        elif op == "choose":
            record = self.records[battle_id]
            record.choices.append((request.get("p1"), request.get("p2")))
            record.prng, record.turn = result["prng"], result["turn"]
        elif op == "reseed":
            record = self.records[battle_id]
            record.reseeds.append((len(record.choices), list(request["seed"])))
            record.prng = result["prng"]
        elif op == "destroy":
            self.records.pop(battle_id, None)

    def call(self, op: str, timeout: float | None = None, **args: Any) -> Any:
        """One request; its result, or the error raised as the matching exception."""
        return self.call_many([{"op": op, **args}], timeout)[0]

    def call_many(self, requests: Sequence[Mapping[str, Any]], timeout: float | None = None
                  ) -> list[Any]:
        """One batch of requests, all applied; their results, or the first error raised as in
        :meth:`call`."""
        batch = [dict(r) for r in requests]
        replies = self.request(batch, timeout)
        return [self._result(r, q) for r, q in zip(replies, batch, strict=True)]

    def _result(self, reply: dict, request: Mapping[str, Any]) -> Any:
        if reply["ok"]:
            return reply["result"]
        error = reply["error"]
        battle_id = request.get("battle_id")
        record = self.records.get(battle_id)
        if error["type"] == "IllegalChoice":
            raise IllegalChoice(error["message"], battle_id, record, error)
        if error["type"] == "BadRequest":
            raise ValueError(f"{request.get('op')}: {error['message']}")
        raise ShowdownError(f"Showdown raised in {request.get('op')}: {error['message']}\n"
                            f"{error.get('stack', '')}", battle_id, record, error)

    # -- operations --------------------------------------------------------------------------

    def ping(self) -> dict:
        return self.call("ping")

    def generate_team(self, seed: Seed, format: str = FORMAT) -> str:
        """``Teams.pack(Teams.generate(format, {seed}))``: a packed random team."""
        seed = check_seed(seed, "team seed")
        return self.call("generate_team", seed=seed, format=format)["packed"]

    def generate_teams(self, seeds: Sequence[Seed], format: str = FORMAT) -> list[str]:
        requests = [{"op": "generate_team", "seed": check_seed(s, "team seed"), "format": format}
                    for s in seeds]
        return [r["packed"] for r in self.call_many(requests)]

    def pack_team(self, team: Sequence[Mapping[str, Any]]) -> str:
        """``Teams.pack`` of a list of Showdown sets (see :func:`gen1_set`)."""
        return self.call("pack_team", team=[dict(s) for s in team])["packed"]

    def create(self, battle_id: Any, seed: Seed, team1: str, team2: str,
               format: str = FORMAT) -> dict:
        return self.call("create", battle_id=battle_id, seed=check_seed(seed, "battle seed"),
                         team1=team1, team2=team2, format=format)

    def choose(self, battle_id: Any, p1: Choice, p2: Choice, timeout: float | None = None) -> dict:
        return self.call("choose", timeout, battle_id=battle_id, p1=p1, p2=p2)

    def choose_many(self, choices: Sequence[tuple[Any, Choice, Choice]],
                    timeout: float | None = None) -> list[dict]:
        """One batch of ``(battle_id, p1, p2)``; all are applied, then the first error raised."""
        return self.call_many([{"op": "choose", "battle_id": b, "p1": p1, "p2": p2}
                               for b, p1, p2 in choices], timeout)

    def reseed(self, battle_id: Any, seed: Seed) -> dict:
        """``battle.resetRNG(seed)``: the battle goes on from PRNG state ``seed`` (taped)."""
        return self.call("reseed", battle_id=battle_id, seed=check_seed(seed, "reseed seed"))

    def export(self, battle_id: Any) -> dict:
        return self.call("export", battle_id=battle_id)

    def import_(self, battle_id: Any, state_json: Mapping[str, Any]) -> dict:
        return self.call("import", battle_id=battle_id, json=dict(state_json))

    def state(self, battle_id: Any) -> dict:
        return self.call("state", battle_id=battle_id)

    def destroy(self, battle_id: Any) -> None:
        self.call("destroy", battle_id=battle_id)

    def prng(self, seed: Seed, calls: Sequence[Sequence[Any]]) -> dict:
        """Showdown's own ``PRNG(seed)``: each call ``[api, *args]`` -> value and raw outputs."""
        return self.call("prng", seed=check_seed(seed, "prng seed"), calls=[list(c) for c in calls])

    def selfplay(self, seconds: float, warmup_battles: int = 50, seed: Seed = (1, 2, 3, 4),
                 pregenerate: bool = False, tape: bool = False) -> dict:
        """Showdown's in-process speed: random legal players inside Node (see README)."""
        return self.call("selfplay", timeout=seconds * 3 + 120, seconds=seconds,
                         warmup_battles=warmup_battles, seed=check_seed(seed),
                         pregenerate=pregenerate, tape=tape)


# ---- one battle behind the Reference protocol ----------------------------------------------

STATUS_CODES = {"": 0, "brn": 1, "frz": 2, "par": 3, "psn": 4, "tox": 5, "slp": 6, "fnt": 7}
BOOSTS = ("atk", "def", "spa", "spd", "spe", "accuracy", "evasion")
STATS = ("atk", "def", "spa", "spd", "spe")
WINNER_CODES = {None: 0, "p1": 1, "p2": 2, "tie": 3}
TEAM_SIZE = 6
TAPE_APIS = ("random", "randomChance", "sample", "shuffle", "next")


def _four(values: list, fill: Any) -> list:
    return values + [fill] * (4 - len(values))


def compact_arrays(state: Mapping[str, Any]) -> RefState:
    """The worker's ``state`` reply as flat arrays (teams in their original order, padded to 6)."""
    out: RefState = {
        "turn": np.int32(state["turn"]),
        "ended": np.bool_(state["ended"]),
        "winner": np.int8(WINNER_CODES[state["winner"]]),
        "prng": np.asarray(state["prng"], np.uint16),
        "last_damage": np.int32(state["last_damage"]),
    }
    for side in state["sides"]:
        n = len(side["pokemon"])
        if n > TEAM_SIZE:
            raise ValueError(f"{side['id']} has {n} Pokemon; at most {TEAM_SIZE}")
        pad = TEAM_SIZE - n
        mons = side["pokemon"]

        def col(f: Any, dtype: Any, fill: Any = 0, mons: list = mons, pad: int = pad) -> np.ndarray:
            return np.asarray([f(p) for p in mons] + [fill] * pad, dtype)

        s = side["id"]
        out[f"{s}.active"] = np.int8(side["active"])
        out[f"{s}.pokemon_left"] = np.int8(side["pokemon_left"])
        out[f"{s}.present"] = col(lambda p: True, np.bool_, False)
        out[f"{s}.species"] = col(lambda p: p["species"], np.str_, "")
        out[f"{s}.level"] = col(lambda p: p["level"], np.int16)
        out[f"{s}.hp"] = col(lambda p: p["hp"], np.int16)
        out[f"{s}.maxhp"] = col(lambda p: p["maxhp"], np.int16)
        out[f"{s}.fainted"] = col(lambda p: p["fainted"], np.bool_, False)
        out[f"{s}.status"] = col(lambda p: STATUS_CODES[p["status"]], np.int8)
        out[f"{s}.sleep_turns"] = col(lambda p: p["status_state"].get("time", 0)
                                      if p["status"] == "slp" else 0, np.int8)
        out[f"{s}.boosts"] = col(lambda p: [p["boosts"][b] for b in BOOSTS], np.int8,
                                 [0] * len(BOOSTS))
        out[f"{s}.stored_stats"] = col(lambda p: [p["stored_stats"][k] for k in STATS], np.int16,
                                       [0] * len(STATS))
        out[f"{s}.modified_stats"] = col(
            lambda p: [(p["modified_stats"] or p["stored_stats"])[k] for k in STATS], np.int16,
            [0] * len(STATS))
        out[f"{s}.moves"] = col(lambda p: _four([m["id"] for m in p["moves"]], ""), np.str_,
                                [""] * 4)
        out[f"{s}.pp"] = col(lambda p: _four([m["pp"] for m in p["moves"]], 0), np.int8, [0] * 4)
        out[f"{s}.volatiles"] = col(lambda p: json.dumps(p["volatiles"], sort_keys=True), np.str_,
                                    "{}")
    return out


def legal_choices(request: Mapping[str, Any] | None, voluntary_switches: bool = False) -> list[str]:
    """The choices a request allows: usable moves (``move N``) and, when forced or asked, switches.

    Switch numbers follow the request's ``side.pokemon`` order (Showdown's current order, the
    active Pokemon first), as Showdown reads ``switch N``. An empty list: nothing to choose.
    """
    if not request or request.get("wait"):
        return []
    bench = [f"switch {i + 1}" for i, p in enumerate(request["side"]["pokemon"])
             if not p["active"] and not p["condition"].endswith(" fnt")]
    if request.get("forceSwitch"):
        return bench
    active = request["active"][0]
    moves = [f"move {i + 1}" for i, m in enumerate(active["moves"])
             if not m.get("disabled") and m.get("pp", 1) != 0]
    if voluntary_switches and not active.get("trapped"):
        moves += bench
    return moves


class ShowdownBattle:
    """One Showdown battle behind envport's Reference protocol (two players; see README.md).

    ``reset(seed)`` with an envport integer seed derives the battle seed and both team seeds
    (:func:`seed_words` parts 0, 1, 2) and generates the teams with ``Teams.generate``; or pass
    ``battle_seed`` words and packed ``teams`` directly. ``step((p1_choice, p2_choice))`` takes
    Showdown choice strings (None for a side with nothing to choose) and returns
    ``(obs, reward, terminated, truncated, info)`` with obs the two players' requests and reward
    p1's (+1 win, -1 loss, 0 otherwise; p2's is its negation).
    """

    _count = 0

    def __init__(self, worker: ShowdownWorker | None = None, format: str = FORMAT,
                 battle_id: Any = None):
        self._own_worker = worker is None
        self.worker = worker if worker is not None else ShowdownWorker()
        self.format = format
        ShowdownBattle._count += 1
        self.battle_id = battle_id if battle_id is not None else (
            f"battle-{os.getpid()}-{id(self):x}-{ShowdownBattle._count}")
        self.last: dict | None = None
        self._tape: list[dict] = []
        self._live = False

    def close(self) -> None:
        if self._live:
            with contextlib.suppress(Exception):
                self.worker.destroy(self.battle_id)
            self._live = False
        if self._own_worker:
            self.worker.close()

    def __enter__(self) -> ShowdownBattle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def record(self) -> BattleRecord:
        return self.worker.records[self.battle_id]

    def _drop(self) -> None:
        if self._live:
            self.worker.destroy(self.battle_id)
            self._live = False

    def reset(self, seed: int | None = None, teams: tuple[str, str] | None = None,
              battle_seed: Seed | None = None) -> dict:
        if battle_seed is None:
            if seed is None:
                raise ValueError("reset needs an envport seed or battle_seed words")
            battle_seed = seed_words(seed, 0)
        if teams is None:
            if seed is None:
                raise ValueError("reset with battle_seed needs packed teams")
            t1, t2 = self.worker.generate_teams([seed_words(seed, 1), seed_words(seed, 2)],
                                                self.format)
            teams = (t1, t2)
        self._drop()
        self.last = self.worker.create(self.battle_id, battle_seed, teams[0], teams[1],
                                       self.format)
        self._live = True
        self._tape = self.last["tape"]
        return self.last["requests"]

    def step(self, action: tuple[Choice, Choice]) -> tuple[dict, float, bool, bool, dict]:
        if not self._live:
            raise RuntimeError("step before reset")
        p1, p2 = action
        self.last = self.worker.choose(self.battle_id, p1, p2)
        self._tape = self.last["tape"]
        winner = self.last["winner"]
        reward = {"p1": 1.0, "p2": -1.0}.get(winner, 0.0)
        return self.last["requests"], reward, bool(self.last["ended"]), False, self.last

    def legal_choices(self, side: str, voluntary_switches: bool = False) -> list[str]:
        assert self.last is not None
        return legal_choices(self.last["requests"][side], voluntary_switches)

    def state(self) -> dict:
        """The worker's compact nested state (see README.md, "state")."""
        return self.worker.state(self.battle_id)

    def export(self) -> dict:
        return self.worker.export(self.battle_id)

    def get_state(self) -> RefState:
        out = compact_arrays(self.state())
        out["showdown_json"] = np.str_(json.dumps(self.export(), separators=(",", ":")))
        return out

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore from ``state["showdown_json"]`` (Battle.fromJSON); the compact fields given
        must agree with it (building Showdown JSON from edited fields is the bridge's job)."""
        if "showdown_json" not in state:
            raise ValueError("set_state needs the field showdown_json (a Showdown toJSON string)")
        self._drop()
        self.last = self.worker.import_(self.battle_id, json.loads(str(state["showdown_json"])))
        self._live = True
        self._tape = []
        restored = compact_arrays(self.state())
        differ = [k for k in restored if k in state
                  and not np.array_equal(np.asarray(state[k]), restored[k])]
        if differ:
            raise ValueError(f"set_state: fields {differ} disagree with showdown_json; editing "
                             "compact fields is not supported (edit the JSON instead)")

    def tape_records(self) -> list[dict]:
        """The last step's draws as the worker reports them (i, turn, api, from, to, raw,
        result)."""
        return list(self._tape)

    def tape(self) -> dict[str, np.ndarray]:
        draws = self._tape
        return {
            "api": np.asarray([TAPE_APIS.index(d["api"]) for d in draws], np.int8),
            "from": np.asarray([-1 if d["from"] is None else d["from"] for d in draws], np.int64),
            "to": np.asarray([-1 if d["to"] is None else d["to"] for d in draws], np.int64),
            "raw": np.asarray([d["raw"] for d in draws], np.uint32),
            "result": np.asarray([np.nan if d["result"] is None else float(d["result"])
                                  for d in draws], np.float64),
        }
