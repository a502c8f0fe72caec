"""Showdown in-process vs the JAX engine batched: turns/s and battles/s in one run.

    python -m envport.envs.pokemon_gen1.bench [--seconds 10] [--batch-sizes 1 16 256 1024 4096]
                                              [--devices N] [--no-reference]
                                              [--json out.json] [--plot out.png]

Both sides play the spec's baseline loop (section 6): random legal players, a uniformly random
usable move, a uniformly random switch only when forced (no voluntary switches), a new battle
with two new teams whenever one ends.

* **Showdown**: the worker's ``selfplay`` op, the loop inside one Node process (no Python, no
  JSON per turn), ``Teams.generate`` per battle (every team, also those with moves the engine does
  not play);
* **JAX**: ``B`` battles as one batched state; one jitted ``fori_loop`` of steps, each: both
  sides' ``engine.legal_mask``, the policy above from ``jax.random`` bits, ``engine.step`` under
  ``vmap``, and an ended battle replaced by a fresh one (``create.create`` of two pool teams and a
  new seed; ``batch / 8`` of them created per step, see :func:`make_loop`). Compilation excluded
  (a warm-up run), the best of ``--repeats`` timed runs. With ``--devices N`` (default: on CPU
  one per core, else every accelerator) the batch is split over N XLA devices (``shard_map``,
  each shard its own loop, keys and refills; a batch N does not divide runs on one device): the
  JAX side uses the machine's cores, Showdown one Node process, as the issue's ratio asks.
  ``--no-reference``: the JAX rows alone (a machine without Node, such as an accelerator's).

Turns: Showdown's ``selfplay`` adds each finished battle's final turn counter; the JAX side counts
the turn increments of every step in the timed window plus one per finished battle (the same
count in the long run, without waiting for a batch of battles to finish); battles are those
finished in the window; ``steps`` (requests answered) for the JAX side. Memory:
``state.nbytes`` of one battle (and of the env state with its ``seen`` mask).

``envport bench pokemon-gen1`` uses :func:`reference_throughput` for the reference row.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from envport.envs.pokemon_gen1 import create as C
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1 import state as S

BATCH_SIZES = (1, 16, 256, 1024, 4096)
_DEVICE_FLAG = "--xla_force_host_platform_device_count"


def _policy(key: jax.Array, mask: jax.Array) -> jax.Array:
    """One side: a uniformly random legal move if it has one, else a random legal choice (a
    forced switch, or NO_CHOICE while it waits)."""
    moves = mask & (jnp.arange(E.N_CHOICES) < 4)
    pick = jnp.where(moves.any(), moves, mask)
    g = jax.random.gumbel(key, (E.N_CHOICES,))
    return jnp.argmax(jnp.where(pick, g, -jnp.inf)).astype(jnp.int32)


def _fresh(pool: C.TeamPool, key: jax.Array) -> S.Battle:
    k1, k2 = jax.random.split(key)
    idx = jax.random.randint(k1, (2,), 0, len(pool))
    words = jax.random.randint(k2, (4,), 0, 1 << 16).astype(jnp.uint32)
    return C.create(pool.teams(idx[0], idx[1]), prng.seed_state(words))


REFILL_FRACTION = 8  # fresh battles created per step: batch / 8 (at least 1)


def refill_ended(battles: S.Battle, fresh: S.Battle) -> S.Battle:
    """The ended battles of a batch replaced by the ``m`` fresh ones, in batch order: the k-th
    ended battle gets ``fresh[k]`` for k < m; later ended ones stay as they are."""
    n = battles.ended.shape[0]
    m = fresh.ended.shape[0]
    ended = battles.ended
    rank = jnp.cumsum(ended.astype(jnp.int32)) - 1
    put = ended & (rank < m)
    src = jnp.clip(rank, 0, m - 1)
    return jax.tree_util.tree_map(
        lambda f, x: jnp.where(put.reshape((n,) + (1,) * (x.ndim - 1)), f[src], x),
        fresh, battles)


def make_loop(pool: C.TeamPool, refill: int | None = None, devices: int = 1) -> Any:
    """Jitted ``(battles, key, steps) -> (battles, finished, turns)`` over a batch (on
    ``devices`` devices: each steps its shard with its own keys, the counts summed).

    An ended battle is replaced by a fresh one (``create.create``); creating ``batch`` of them on
    every step for the ~2% that end would cost a fifth of the step, so each step creates
    ``refill`` (default ``batch // REFILL_FRACTION``, at least 1) and hands them to the ended
    battles in batch order; an ended battle left over waits for the next step (a step of an
    ended battle changes nothing and counts no turn)."""

    def one(b: S.Battle, key: jax.Array) -> tuple[S.Battle, jax.Array, jax.Array]:
        k1, k2 = jax.random.split(key)
        c1 = _policy(k1, E.legal_mask(b, 0))
        c2 = _policy(k2, E.legal_mask(b, 1))
        nb = E.step(b, c1, c2)
        done = nb.ended & ~b.ended
        # turns played in this step, and Showdown's count of a finished battle (its final
        # battle.turn) exceeds its increments by the first turn
        turns = (nb.turn - b.turn).astype(jnp.int32) + done.astype(jnp.int32)
        return nb, done, turns

    vone = jax.vmap(one)
    vfresh = jax.vmap(lambda k: _fresh(pool, k))

    def loop(battles: S.Battle, key: jax.Array, steps: jax.Array) -> tuple:
        n = battles.turn.shape[0]
        m = max(1, n // REFILL_FRACTION) if refill is None else refill

        def body(t: jax.Array, carry: tuple) -> tuple:
            b, finished, turns = carry
            kt = jax.random.fold_in(key, t)
            b, done, tr = vone(b, jax.random.split(kt, n))
            b = refill_ended(b, vfresh(jax.random.split(jax.random.fold_in(kt, 1), m)))
            return b, finished + done.sum(dtype=jnp.int32), turns + tr.sum(dtype=jnp.int32)

        zero = jnp.zeros((), jnp.int32)
        return jax.lax.fori_loop(0, steps, body, (battles, zero, zero))

    if devices == 1:
        return jax.jit(loop, donate_argnums=0)

    def shard(battles: S.Battle, key: jax.Array, steps: jax.Array) -> tuple:
        b, finished, turns = loop(battles, jax.random.fold_in(key, jax.lax.axis_index("d")),
                                  steps)
        return b, jax.lax.psum(finished, "d"), jax.lax.psum(turns, "d")

    mesh = Mesh(np.array(jax.devices()[:devices]), ("d",))
    batch, rep = PartitionSpec("d"), PartitionSpec()
    return jax.jit(jax.shard_map(shard, mesh=mesh, in_specs=(batch, rep, rep),
                                 out_specs=(batch, rep, rep), check_vma=False),
                   donate_argnums=0)


def jax_rows(batch_sizes: Sequence[int], seconds: float = 10.0, repeats: int = 2,
             seed: int = 0, progress: Any = None, devices: int = 1) -> list[dict[str, Any]]:
    pool = C.pool(True)
    loops: dict[int, Any] = {}
    rows = []
    for n in batch_sizes:
        d = devices if n % devices == 0 else 1
        if d not in loops:
            loops[d] = make_loop(pool, devices=d)
        loop = loops[d]
        key = jax.random.key(seed + n)
        battles = jax.jit(jax.vmap(lambda k: _fresh(pool, k)))(jax.random.split(key, n))
        t0 = time.perf_counter()
        out = loop(battles, key, jnp.int32(4))  # compile + warm-up
        jax.block_until_ready(out)
        compile_s = time.perf_counter() - t0
        # size the run: a probe of 16 steps, then about seconds / repeats per timed run
        t0 = time.perf_counter()
        # the loop donates its battles: each call continues from the previous one's
        state = jax.block_until_ready(loop(out[0], key, jnp.int32(16)))[0]
        per_step = (time.perf_counter() - t0) / 16
        steps = max(32, int(seconds / repeats / max(per_step, 1e-6)))
        best: dict[str, Any] | None = None
        for r in range(repeats):
            t0 = time.perf_counter()
            state, finished, turns = jax.block_until_ready(
                loop(state, jax.random.fold_in(key, r + 1), jnp.int32(steps)))
            dt = time.perf_counter() - t0
            row = {"backend": "jax", "batch_size": n, "steps": steps, "seconds": dt,
                   "battles": int(finished), "turns": int(turns),
                   "battles_per_s": int(finished) / dt, "turns_per_s": int(turns) / dt,
                   "steps_per_second": n * steps / dt, "compile_seconds": compile_s,
                   "devices": d,
                   "mode": f"jax {jax.default_backend()} x{d}, jit(vmap) fori_loop"}
            if best is None or row["turns_per_s"] > best["turns_per_s"]:
                best = row
        assert best is not None
        rows.append(best)
        if progress:
            progress(best)
    return rows


def showdown_row(seconds: float = 10.0) -> dict[str, Any]:
    from envport.envs.pokemon_gen1.reference import ShowdownWorker

    with ShowdownWorker(timeout=max(120.0, 3 * seconds)) as w:
        r = w.selfplay(seconds)
    return {"backend": "showdown", "batch_size": 1, "mode": "Node in-process selfplay, 1 core",
            **r}


def memory() -> dict[str, int]:
    """Bytes of one battle state and of one environment state (shapes only: nothing runs)."""
    from envport.envs.pokemon_gen1.env import PokemonGen1

    env = PokemonGen1()
    state, _ = jax.eval_shape(env.reset, jax.random.key(0))

    def size(tree: Any) -> int:
        return int(sum(np.prod(x.shape) * np.dtype(x.dtype).itemsize
                       for x in jax.tree_util.tree_leaves(tree)))

    return {"battle_bytes": size(state.battle), "env_state_bytes": size(state)}


def run(batch_sizes: Sequence[int] = BATCH_SIZES, seconds: float = 10.0, repeats: int = 2,
        progress: Any = None, devices: int = 1, reference: bool = True) -> dict[str, Any]:
    """Both sides in one run; ``reference=False``: the JAX rows alone (a machine without Node,
    such as an accelerator's), no ratios."""
    load_before = os.getloadavg()
    ref = showdown_row(seconds) if reference else None
    if progress and ref:
        progress(ref)
    rows = jax_rows(batch_sizes, seconds, repeats, progress=progress, devices=devices)
    best = max(rows, key=lambda r: r["turns_per_s"])
    ratios: dict[str, Any] = {"ratio_turns_best": None, "ratio_battles_best": None,
                              "ratio_turns_per_batch": None}
    if ref is not None:
        ratios = {"ratio_turns_best": best["turns_per_s"] / ref["turns_per_s"],
                  "ratio_battles_best": best["battles_per_s"] / ref["battles_per_s"],
                  "ratio_turns_per_batch": {str(r["batch_size"]):
                                            r["turns_per_s"] / ref["turns_per_s"] for r in rows}}
    return {"env": "pokemon-gen1", "showdown": ref, "jax": rows, **ratios,
            "memory": memory(),
            "machine": {"cores": os.cpu_count(), "jax_backend": jax.default_backend(),
                        "jax_devices": len(jax.devices()),
                        "jax_version": jax.__version__,
                        "load_average": {"before": load_before, "after": os.getloadavg()}}}


def plot(result: dict[str, Any], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["jax"]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog([r["batch_size"] for r in rows], [r["turns_per_s"] for r in rows], "o-",
              label="JAX engine, jit(vmap)")
    if result["showdown"] is not None:
        ax.axhline(result["showdown"]["turns_per_s"], color="k", ls="--",
                   label="Showdown in-process (Node, 1 core)")
    ax.set_xlabel("battles per batch")
    ax.set_ylabel("turns / s")
    ax.set_title("pokemon-gen1: random legal players")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def table(result: dict[str, Any]) -> str:
    ref = result["showdown"]
    lines = [f"{'backend':<10}{'batch':>7}{'battles/s':>12}{'turns/s':>12}{'steps/s':>12}"
             f"{'vs Showdown':>13}"]
    if ref is not None:
        lines.append(f"{'showdown':<10}{1:>7}{ref['battles_per_s']:>12,.1f}"
                     f"{ref['turns_per_s']:>12,.0f}{'':>12}{1:>12.2f}x")
    for r in result["jax"]:
        name = f"jax x{r.get('devices', 1)}"
        vs = f"{r['turns_per_s'] / ref['turns_per_s']:>12.2f}x" if ref is not None else ""
        lines.append(f"{name:<10}{r['batch_size']:>7}{r['battles_per_s']:>12,.1f}"
                     f"{r['turns_per_s']:>12,.0f}{r['steps_per_second']:>12,.0f}{vs}")
    m = result["memory"]
    best = (f"best ratio (turns/s): {result['ratio_turns_best']:.1f}x" if ref is not None
            else "Showdown not run (--no-reference): no ratio from this run")
    lines.append(f"{best}; battle state {m['battle_bytes']} bytes ({m['env_state_bytes']} with "
                 f"the env's seen mask); jax {result['machine']['jax_backend']}; load average "
                 f"{result['machine']['load_average']}")
    return "\n".join(lines)


# ---- envport bench's reference row ------------------------------------------------------------

def reference_throughput(batch_sizes: list[int], steps: int) -> list[dict[str, Any]]:
    """``Benchmark.reference_throughput``: Showdown's in-process selfplay (10 s), as env steps/s:
    its turns/s times the requests answered per turn, counted (not timed) over 40 Python-driven
    battles of the same random players (a turn, or the forced switches after a faint, is a step
    of the environment)."""
    import random

    from envport.envs.pokemon_gen1.bench_reference import _choose, _new_battle
    from envport.envs.pokemon_gen1.reference import ShowdownWorker

    row = showdown_row(10.0)
    rng = random.Random(0)
    n_steps = n_turns = 0
    with ShowdownWorker() as w:
        for i in range(40):
            last = _new_battle(w, rng, f"count-{i}")
            while not last["ended"]:
                last = w.choose(f"count-{i}", *_choose(rng, last["requests"]))
                n_steps += 1
            n_turns += last["turn"]
            w.destroy(f"count-{i}")
    per_turn = n_steps / n_turns
    return [{"backend": "reference", "batch_size": 1, "steps_per_second":
             row["turns_per_s"] * per_turn, "turns_per_s": row["turns_per_s"],
             "battles_per_s": row["battles_per_s"], "steps_per_turn": per_turn,
             "mode": "Showdown in-process selfplay (Node, 1 core), turns/s x steps per turn"}]


def default_devices(backend: str, n_devices: int) -> int:
    """``--devices`` when not given: one XLA CPU device per core on CPU (the command restarts
    itself with them), every device of an accelerator backend."""
    return (os.cpu_count() or 1) if backend == "cpu" else n_devices


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="per measurement")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=list(BATCH_SIZES))
    ap.add_argument("--devices", type=int,
                    help="devices the JAX batch is split over (default: on CPU one XLA device "
                         "per core, else every accelerator)")
    ap.add_argument("--no-reference", action="store_true",
                    help="JAX rows only, no Showdown row and no ratio (a machine without Node)")
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--plot", help="write the turns/s plot here (PNG)")
    args = ap.parse_args(argv)
    if args.devices is None:
        args.devices = default_devices(jax.default_backend(), len(jax.devices()))
    for flag, bad in (("--seconds", args.seconds <= 0), ("--repeats", args.repeats < 1),
                      ("--batch-sizes", min(args.batch_sizes) < 1),
                      ("--devices", args.devices < 1)):
        if bad:
            ap.error(f"{flag} must be positive")
    if args.devices > len(jax.devices()):
        if jax.default_backend() != "cpu" or _DEVICE_FLAG in os.environ.get("XLA_FLAGS", ""):
            ap.error(f"--devices {args.devices}: this process has {len(jax.devices())}")
        # the device count is fixed when JAX starts: the same command in a process that has them
        flags = f"{os.environ.get('XLA_FLAGS', '')} {_DEVICE_FLAG}={args.devices}".strip()
        os.execve(sys.executable, [sys.executable, "-m", __spec__.name, *sys.argv[1:]],
                  {**os.environ, "XLA_FLAGS": flags})
    result = run(args.batch_sizes, args.seconds, args.repeats, devices=args.devices,
                 reference=not args.no_reference,
                 progress=lambda r: print(f"  {r['backend']} batch {r['batch_size']}: "
                                          f"{r['turns_per_s']:,.0f} turns/s", flush=True))
    print(table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    if args.plot:
        plot(result, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
