"""``envport play pokemon-gen1``: a policy as a player of a real Showdown server, through poke-env.

* **The server** (:class:`LocalServer`): ``--showdown-server local`` starts the pinned
  ``pokemon-showdown`` package of ``reference/`` (``node pokemon-showdown start --skip-build
  --no-security PORT``: its shipped ``dist/server``, bound to 127.0.0.1 on a free port, no login
  server: guests need no password under ``--no-security``) and stops it at exit.
  ``--showdown-server ws://HOST:PORT/showdown/websocket`` uses another one (it must let guests
  battle without a login: ``--no-security`` as here). One that does not answer -> exit 2 before
  any battle, with the command that starts one.
* **The client** is poke-env (``pip install --no-deps poke-env==0.16.1``, see install.sh): its
  websocket, login, challenges and battle loop, and its own players as opponents
  (``RandomPlayer``, ``MaxBasePowerPlayer``, ``SimpleHeuristicsPlayer``). Our player
  (:class:`EnvportPlayer`) reads poke-env's raw messages, not its battle model: each battle's
  requests and protocol lines go to a :class:`client.ClientRecord`, whose observation is the
  engine's observation function on what the client knows (``client.py``).
* **The policy**: ``heuristic`` / ``random`` (``agents.py``'s players, from the same record) or
  ``RUN_DIR``, an ``envport train pokemon-gen1`` run (its network on the record's observation;
  its action, if illegal, played as the environment plays it: ``spec_support.resolve``).
* **The comparison**: the same policy inside envport, batched on the JAX engine, against
  envport's random and heuristic players (:func:`envport_match`).

Results are written as they come (``play.json`` in ``--out``): a battle that errors or stalls on
the server is recorded with its id and the run goes on; Ctrl-C keeps the finished battles.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import math
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from envport.envs.pokemon_gen1 import agents as A
from envport.envs.pokemon_gen1 import client as C
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import spec_support as SS
from envport.envs.pokemon_gen1 import tables as T

ENV_NAME = "pokemon-gen1"
FORMAT = "gen1randombattle"
PACKAGE = Path(__file__).parent / "reference" / "node_modules" / "pokemon-showdown"
INSTALL = "bash envport/envs/pokemon_gen1/install_reference.sh"
START_HINT = (f"start one with `cd {PACKAGE} && node pokemon-showdown start --skip-build "
              "--no-security 8000` (then --showdown-server "
              "ws://127.0.0.1:8000/showdown/websocket), or pass --showdown-server local")
OPPONENTS = ("random", "maxbp", "heuristic")
# Our config of the local server (written into the package's config/, git-ignored with it):
# loopback only, no child processes, no files written (logs, chat rooms).
SERVER_CONFIG = """// Written by envport play (envport/envs/pokemon_gen1/play.py): loopback only.
exports.bindaddress = '127.0.0.1';
exports.subprocesses = 0;
exports.repl = false;
exports.crashguard = true;
exports.watchconfig = false;
exports.nofswriting = true;
"""


# ---- the server ----------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _reachable(host: str, port: int, timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _http_ok(port: int) -> bool:
    """The server answers HTTP (it listens before it has loaded; a loaded machine shows it)."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
            return int(r.status) == 200
    except OSError:
        return False


def parse_server(url: str) -> tuple[str, int]:
    """``ws://HOST:PORT/showdown/websocket`` -> (host, port); ValueError naming the flag."""
    u = urllib.parse.urlparse(url)
    if u.scheme not in ("ws", "wss") or not u.hostname:
        raise ValueError(f"--showdown-server: expected 'local' or ws://HOST:PORT/showdown/"
                         f"websocket, got {url!r}")
    return u.hostname, u.port or (443 if u.scheme == "wss" else 80)


class LocalServer:
    """The pinned Showdown server on 127.0.0.1:``port``, for the lifetime of the context."""

    def __init__(self, port: int | None = None, start_timeout: float = 120.0) -> None:
        self.port = port or free_port()
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: Path | None = None

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/showdown/websocket"

    def __enter__(self) -> LocalServer:
        node = shutil.which("node")
        if node is None or not (PACKAGE / "dist" / "server" / "index.js").is_file():
            raise ValueError(f"--showdown-server local needs Node and the pinned pokemon-showdown "
                             f"package ({PACKAGE} is missing): run `{INSTALL}`")
        config = PACKAGE / "config" / "config.js"
        if not config.is_file() or config.read_text() != SERVER_CONFIG:
            config.write_text(SERVER_CONFIG)
        log = Path(os.environ.get("TMPDIR", "/tmp")) / f"envport-showdown-{self.port}.log"
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [node, "pokemon-showdown", "start", "--skip-build", "--no-security",
                 str(self.port)], cwd=PACKAGE, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if _reachable("127.0.0.1", self.port, 1.0) and _http_ok(self.port):
                return self
            time.sleep(0.3)
        tail = log.read_text(errors="replace")[-2000:]
        self.__exit__()
        raise ValueError(f"the local Showdown server did not start on port {self.port} within "
                         f"{self.start_timeout:.0f} s (its output: {tail.strip() or 'none'}); "
                         f"{START_HINT}")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@contextlib.contextmanager
def server(spec: str) -> Iterator[str]:
    """``local`` (started here) or a ws:// URL (checked reachable) -> the websocket URL."""
    if spec == "local":
        with LocalServer() as s:
            yield s.url
        return
    host, port = parse_server(spec)
    if not _reachable(host, port):
        raise ValueError(f"--showdown-server {spec}: nothing answers at {host}:{port}; "
                         f"{START_HINT}")
    yield spec


# ---- policies ------------------------------------------------------------------------------------

Decide = Callable[[C.ClientRecord], int]


def _showdown_state(rec: C.ClientRecord) -> dict[str, Any]:
    """The fields of the worker's ``state`` reply that ``agents.view_showdown`` reads, from what
    the client knows (its own active's Speed stage; the opponent's active as revealed)."""
    sides: list[dict[str, Any]] = [{"active": -1, "pokemon": []}, {"active": -1, "pokemon": []}]
    me, op = rec.me, 1 - rec.me
    sides[me] = {"active": 0, "pokemon": [{"boosts": {"spe": int(rec.boosts[me, 4])}}]}
    name = rec.active_ident[op]
    mon = rec.opp.get(name) if name is not None else None
    if mon is not None:
        species = rec.current_species[op] or mon["species"]
        sides[op] = {"active": 0, "pokemon": [{
            "species": T.SPECIES_NAMES[species], "level": mon["level"],
            "status": T.STATUS_NAMES.get(int(mon["status"]), "") if not mon["fainted"] else "",
            "fainted": bool(mon["fainted"]), "boosts": {"spe": int(rec.boosts[op, 4])}}]}
    return {"sides": sides}


def heuristic_policy() -> Decide:
    def decide(rec: C.ClientRecord) -> int:
        return A.heuristic_showdown(rec.last_request, _showdown_state(rec), rec.me, rec.ended)
    return decide


def random_policy(seed: int) -> Decide:
    rng = np.random.default_rng(seed)

    def decide(rec: C.ClientRecord) -> int:
        return A.random_showdown(rec.last_request, int(rng.integers(0, A.RANDOM_MODULUS)),
                                 rec.ended)
    return decide


@dataclass
class RunPolicy:
    """An ``envport train pokemon-gen1`` run's network, acting on one observation row."""

    run_dir: Path
    seed: int = 0
    deterministic: bool = False
    config: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import jax

        from envport.train.config import PPOConfig
        from envport.train.run import load_params, load_run_config

        if not self.run_dir.is_dir():
            raise ValueError(f"--policy {self.run_dir}: not heuristic, random or a run folder")
        config = load_run_config(self.run_dir)  # ValueError for another format
        if config["env"] != ENV_NAME:
            raise ValueError(f"--policy {self.run_dir} holds a policy for {config['env']!r}, "
                             f"not {ENV_NAME!r}")
        from envport.train.program import program

        self.config, params = load_params(self.run_dir)
        cfg = PPOConfig.from_dict(config["ppo"])
        policy = program(config["env"], config["env_kwargs"], cfg).policy
        self._params = params
        self._policy = policy
        self._act = jax.jit(functools.partial(policy.act, deterministic=self.deterministic))
        self._key = jax.random.key(self.seed)
        self._carry: dict[str, Any] = {}

    def decide_for(self, tag: str) -> Decide:
        import jax
        import jax.numpy as jnp

        def decide(rec: C.ClientRecord) -> int:
            first = tag not in self._carry
            carry = self._carry.get(tag)
            if carry is None:
                carry = self._policy.initial_carry(1)
            self._key, sub = jax.random.split(self._key)
            mask = rec.mask()
            carry, action = self._act(self._params, carry, jnp.asarray(rec.observe())[None],
                                      jnp.asarray(first)[None], jnp.asarray(mask, bool)[None],
                                      sub)
            self._carry[tag] = carry
            return int(SS.resolve(np.asarray(action).reshape(()), mask, np))
        return decide


def make_policy(spec: str, seed: int) -> Callable[[str], Decide]:
    """``--policy`` -> a factory of per-battle decision functions (ValueError if bad)."""
    if spec == "heuristic":
        h = heuristic_policy()
        return lambda tag: h
    if spec == "random":
        r = random_policy(seed)
        return lambda tag: r
    run = RunPolicy(Path(spec), seed)
    return run.decide_for


# ---- the poke-env players ------------------------------------------------------------------------

def _poke_env() -> Any:
    try:
        import poke_env
        import poke_env.player
    except ImportError as e:
        raise ValueError(f"envport play needs poke-env ({e}): pip install 'envport[play]' && "
                         "pip install --no-deps poke-env==0.16.1 (install.sh does both)") from None
    return poke_env


def _players(url: str, policy: Callable[[str], Decide], opponent: str, tag: str
             ) -> tuple[Any, Any]:
    pe = _poke_env()
    from poke_env.player import MaxBasePowerPlayer, Player, RandomPlayer, SimpleHeuristicsPlayer
    from poke_env.player.battle_order import BattleOrder

    class Choice(BattleOrder):
        def __init__(self, text: str) -> None:
            self.text = text

        @property
        def message(self) -> str:
            return f"/choose {self.text}"

    class EnvportPlayer(Player):
        """Chooses from a ClientRecord fed with poke-env's raw messages of each battle."""

        def __init__(self, **kw: Any) -> None:
            super().__init__(**kw)
            self.records: dict[str, C.ClientRecord] = {}
            self.pending: dict[str, list[str]] = {}
            self.deciders: dict[str, Decide] = {}

        async def _handle_battle_message(self, split_messages: list[list[str]]) -> None:
            tag = split_messages[0][0].lstrip(">")
            for parts in split_messages[1:]:
                if len(parts) < 2:
                    continue
                if parts[1] == "request" and len(parts) > 2 and parts[2]:
                    req = json.loads("|".join(parts[2:]))
                    side = req.get("side", {}).get("id")
                    if tag not in self.records and side in C.SIDES:
                        rec = C.ClientRecord(side)
                        self.records[tag] = rec
                        rec.lines(self.pending.pop(tag, []))
                    if tag in self.records:
                        self.records[tag].request(req)
                    continue
                line = "|".join(parts)
                if tag in self.records:
                    self.records[tag].line(line)
                else:
                    self.pending.setdefault(tag, []).append(line)
            await super()._handle_battle_message(split_messages)

        def choose_move(self, battle: Any) -> Any:
            rec = self.records.get(battle.battle_tag)
            if rec is None:
                return self.choose_default_move()
            decide = self.deciders.setdefault(battle.battle_tag, policy(battle.battle_tag))
            text = C.choice_string(decide(rec))
            return self.choose_default_move() if text is None else Choice(text)

    cfg = pe.ServerConfiguration(url, "https://play.pokemonshowdown.com/action.php?")
    # a loaded machine: a slow handshake is not a dead server, and no keepalive pings
    # (poke-env logs the server's closing of the socket at the end as an error: kept quiet)
    slack: dict[str, Any] = {"open_timeout": 120.0, "ping_interval": None, "ping_timeout": None,
             "log_level": 50}
    me = EnvportPlayer(battle_format=FORMAT, server_configuration=cfg,
                       account_configuration=pe.AccountConfiguration(f"envport{tag}", None),
                       max_concurrent_battles=1, start_timer_on_battle_start=False, **slack)
    cls: Any = {"random": RandomPlayer, "maxbp": MaxBasePowerPlayer,
           "heuristic": SimpleHeuristicsPlayer}[opponent]
    opp = cls(battle_format=FORMAT, server_configuration=cfg,
              account_configuration=pe.AccountConfiguration(f"{opponent[:5]}{tag}", None),
              max_concurrent_battles=1, **slack)
    return me, opp


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - h), min(1.0, c + h))


def tally(battles: list[dict[str, Any]]) -> dict[str, Any]:
    done = [b for b in battles if b["result"] in ("win", "loss", "tie")]
    won = sum(b["result"] == "win" for b in done)
    lo, hi = wilson(won, len(done))
    return {"finished": len(done), "won": won,
            "lost": sum(b["result"] == "loss" for b in done),
            "tied": sum(b["result"] == "tie" for b in done),
            "errors": [b for b in battles if b["result"] == "error"],
            "win_rate": won / len(done) if done else math.nan, "ci95": [lo, hi]}


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=float))
    os.replace(tmp, path)  # atomic: Ctrl-C never leaves half a file


async def _series(url: str, policy: Callable[[str], Decide], opponent: str, n: int,
                  timeout: float, on_battle: Callable[[dict[str, Any]], None]) -> None:
    tag = secrets.token_hex(3)
    me, opp = _players(url, policy, opponent, tag)
    seen: set[str] = set()
    for _ in range(n):
        t0 = time.perf_counter()
        with contextlib.suppress(TimeoutError):  # recorded below as an unfinished battle
            await asyncio.wait_for(me.battle_against(opp, n_battles=1), timeout)
        for btag, battle in list(me.battles.items()):
            if btag in seen:
                continue
            rec = me.records.get(btag)
            errors = list(rec.errors) if rec is not None else []
            if battle.finished:
                result = "win" if battle.won else "loss" if battle.lost else "tie"
            else:
                result = "error"
                errors.append(f"unfinished after {timeout:.0f} s")
                with contextlib.suppress(Exception):
                    await me.ps_client.send_message("/forfeit", btag)
            seen.add(btag)
            on_battle({"id": btag, "opponent": opponent, "result": result,
                       "turns": int(battle.turn), "seconds": time.perf_counter() - t0,
                       "errors": errors})


# ---- the same policy inside envport (JAX engine) -------------------------------------------------

def envport_match(policy: str, opponent: str, battles: int, seed: int = 0,
                  max_steps: int = 3000) -> dict[str, Any]:
    """``battles`` JAX battles (the env's pool teams and seeds), ``policy`` as p1 in even
    battles and p2 in odd ones, ``opponent`` (random / heuristic) on the other side."""
    import jax
    import jax.numpy as jnp

    from envport.core.seeds import derive_key
    from envport.envs.pokemon_gen1.env import PokemonGen1

    env = PokemonGen1()
    t0 = time.perf_counter()
    keys = jax.random.split(derive_key(seed, 0), battles)
    state = jax.jit(jax.vmap(env.reset))(keys)[0]
    side = jnp.asarray(np.arange(battles) % 2)

    def fixed(name: str) -> Callable[[Any, Any], Any]:
        if name == "heuristic":
            return lambda key, s: jax.vmap(A.heuristic_jax)(s)
        if name == "random":
            return lambda key, s: jax.vmap(A.random_jax)(jax.random.split(key, battles), s)
        run = RunPolicy(Path(name), seed)

        def ppo(key: Any, s: Any) -> Any:
            obs = jax.vmap(lambda b, seen: SS.observe(
                SS.flat_state(b, seen, jnp), jnp.stack([E.legal_mask(b, p) for p in (0, 1)]),
                jnp))(s.battle, s.seen)  # [B, 2, OBS]
            masks = obs[..., SS.MASK_OFFSET:SS.MASK_OFFSET + E.N_CHOICES] > 0
            _, raw = run._policy.act(run._params, run._policy.initial_carry(battles * 2),
                                     obs.reshape(battles * 2, -1), jnp.ones(battles * 2, bool),
                                     masks.reshape(battles * 2, -1), key)
            return SS.resolve(raw.reshape(battles, 2), masks, jnp)
        return ppo

    mine, theirs = fixed(policy), fixed(opponent)

    @jax.jit
    def choose(key: Any, s: Any) -> Any:
        k1, k2 = jax.random.split(key)
        a, b = mine(k1, s), theirs(k2, s)
        p1 = jnp.where(side == 0, a[:, 0], b[:, 0])
        p2 = jnp.where(side == 0, b[:, 1], a[:, 1])
        return jnp.stack([p1, p2], -1)

    winners, steps = A.play_out(choose, state, seed, max_steps)
    sides = np.arange(battles) % 2
    won = winners == np.where(sides == 0, 1, 2)
    lost = winners == np.where(sides == 0, 2, 1)
    lo, hi = wilson(int(won.sum()), battles)
    return {"opponent": opponent, "battles": battles, "won": int(won.sum()),
            "lost": int(lost.sum()), "tied": int((winners == 3).sum()),
            "unfinished": int((winners == 0).sum()), "win_rate": float(won.mean()),
            "ci95": [lo, hi], "steps": steps, "seconds": time.perf_counter() - t0}


# ---- the command ---------------------------------------------------------------------------------

def add_parser(sub: Any) -> None:
    p = sub.add_parser("play", help="a policy as a player on a real Showdown server (poke-env), "
                                    "its win rate beside the same policy's inside envport")
    p.add_argument("env", help="pokemon-gen1")
    p.add_argument("--policy", required=True,
                   help="heuristic | random | RUN_DIR (an `envport train pokemon-gen1` run)")
    p.add_argument("--showdown-server", default="local",
                   help="local (default: start the pinned server on 127.0.0.1, a free port) or "
                        "ws://HOST:PORT/showdown/websocket of a running one (--no-security)")
    p.add_argument("--battles", type=int, default=100, help="battles per poke-env opponent")
    p.add_argument("--opponents", nargs="+", choices=OPPONENTS, default=list(OPPONENTS),
                   help="poke-env's RandomPlayer, MaxBasePowerPlayer, SimpleHeuristicsPlayer")
    p.add_argument("--envport-battles", type=int, default=None,
                   help="battles per envport opponent on the JAX engine (default: --battles, "
                        "at least 200; 0 skips)")
    p.add_argument("--battle-timeout", type=float, default=600.0,
                   help="seconds before an unfinished battle is recorded as an error")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/play-pokemon-gen1", help="folder for play.json")


def cmd_play(args: argparse.Namespace) -> int:
    if args.env != ENV_NAME:
        raise ValueError(f"envport play serves {ENV_NAME} only, not {args.env!r}")
    if args.battles < 0 or (args.envport_battles or 0) < 0:
        raise ValueError("--battles and --envport-battles must be >= 0")
    policy = make_policy(args.policy, args.seed)  # a bad policy fails before any server
    if args.battles:
        _poke_env()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "play.json"
    data: dict[str, Any] = {"env": ENV_NAME, "format": FORMAT, "policy": args.policy,
                            "server": args.showdown_server, "battles_per_opponent": args.battles,
                            "seed": args.seed, "load_before": os.getloadavg()[0],
                            "showdown": {}, "envport": {}, "battles": []}
    t0 = time.perf_counter()

    def on_battle(b: dict[str, Any]) -> None:
        data["battles"].append(b)
        mine = [x for x in data["battles"] if x["opponent"] == b["opponent"]]
        data["showdown"][b["opponent"]] = tally(mine)
        data["wall_s"] = time.perf_counter() - t0
        _write(path, data)
        flag = f" ({'; '.join(b['errors'])})" if b["errors"] else ""
        print(f"  {b['opponent']:9s} {b['id']}: {b['result']} in {b['turns']} turns{flag}",
              flush=True)

    _write(path, data)
    interrupted = False
    try:
        if args.battles:
            with server(args.showdown_server) as url:
                print(f"server {url}; {args.battles} battles per opponent, policy "
                      f"{args.policy}", flush=True)
                for opp in args.opponents:
                    asyncio.run(_series(url, policy, opp, args.battles, args.battle_timeout,
                                        on_battle))
        data["showdown_wall_s"] = time.perf_counter() - t0
        n_env = args.envport_battles if args.envport_battles is not None else max(
            args.battles, 200)
        if n_env:
            for opp in ("random", "heuristic"):
                data["envport"][opp] = envport_match(args.policy, opp, n_env, args.seed)
                _write(path, data)
    except KeyboardInterrupt:
        interrupted = True
    data["wall_s"] = time.perf_counter() - t0
    data["load_after"] = os.getloadavg()[0]
    _write(path, data)
    print(summary(data))
    print(f"written: {path}")
    return 130 if interrupted else 0


PAIRS = {"random": "random", "heuristic": "heuristic", "maxbp": None}


def summary(data: dict[str, Any]) -> str:
    lines = [f"policy {data['policy']} on {data['format']}:",
             "  opponent (poke-env)     battles  win rate [95% CI]      | envport opponent "
             "(JAX)  battles  win rate [95% CI]   diff"]
    for opp in OPPONENTS:
        s = data["showdown"].get(opp)
        e = data["envport"].get(PAIRS[opp] or "")
        if s is None and e is None:
            continue
        left = (f"{s['win_rate']:.3f} [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}]"
                if s and s["finished"] else "n/a")
        right = (f"{e['win_rate']:.3f} [{e['ci95'][0]:.3f}, {e['ci95'][1]:.3f}]" if e else "n/a")
        diff = (f"{s['win_rate'] - e['win_rate']:+.3f}" if s and e and s["finished"] else "")
        n_err = len(s["errors"]) if s else 0
        lines.append(f"  {opp:22s} {s['finished'] if s else 0:8d}  {left:22s} | "
                     f"{(PAIRS[opp] or '-'):22s} {e['battles'] if e else 0:8d}  {right:19s} "
                     f"{diff}" + (f"  ({n_err} errors)" if n_err else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m envport.envs.pokemon_gen1.play")
    sub = ap.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = ap.parse_args(["play", *(argv if argv is not None else sys.argv[1:])])
    try:
        return cmd_play(args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
