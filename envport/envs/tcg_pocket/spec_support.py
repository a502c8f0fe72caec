"""What ``SPEC`` needs beside the two engines: the verifier's legal and scripted actions (on a
private reference), the random events of the distribution test, and the benchmark's two
sides played with random legal actions (the reference stepped in Python, one process and one
per core; the JAX engine as a performance peer whose actions come from its mask).

Imported only when the verifier or the benchmark calls in (``SPEC`` names these through
``registry.lazy``: listing environments imports no engine).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from envport.core.seeds import derive_seed
from envport.envs.tcg_pocket.reference import TcgPocketReference

# The pool the JAX engine covers (jax_engine/__init__.py): the reference deals from it.
POOL = "status"

_PRIVATE: dict[str, Any] = {}


class PoolReference(TcgPocketReference):
    """``TcgPocketReference`` dealing ``POOL`` (``status``) unless told otherwise.

    A class of its own, not ``TcgPocketReference(pool=POOL)``: ``envport translate`` reuses
    a registered spec whose reference is exactly the class it translates (``agent/loop.py``,
    ``like``), and on that path it steps ``random_action`` unmasked, which this game's
    reference rejects (IllegalAction), and skips the mask notes; a run of
    ``TcgPocketReference`` keeps the masked path until the loop handles a masked ``like``.
    """

    def __init__(self, config: dict[str, Any] | None = None, decks: Any = None,
                 pool: str = POOL):
        super().__init__(config=config, decks=decks, pool=pool)


def make_reference(**kwargs: Any) -> PoolReference:
    """The reference ``SPEC`` verifies against: the rules engine dealing ``POOL``."""
    return PoolReference(**kwargs)


def _private() -> Any:
    """A reference nothing else steps: the verifier's own reference must not be moved when a
    policy looks at a state (as ``envport.agent.harness.masked_policies`` keeps one)."""
    if "ref" not in _PRIVATE:
        _PRIVATE["ref"] = make_reference()
    return _PRIVATE["ref"]


def legal_action(state: Mapping[str, np.ndarray], rng: np.random.Generator) -> int:
    """A uniformly random legal action of whoever must act in ``state``."""
    return int(_private().legal_action(state, rng))


def scripted_action(state: Mapping[str, np.ndarray], rng: np.random.Generator) -> int:
    """The greedy heuristic player's action (``agents.heuristic_action``) in ``state``."""
    ref = _private()
    ref.set_state(state)
    return int(ref.scripted_action(rng))


def random_action(rng: np.random.Generator) -> int:
    """Any action of the space (most are illegal: an illegal one is a no-op on both sides)."""
    from envport.envs.tcg_pocket.actions import N_ACTIONS

    return int(rng.integers(N_ACTIONS))


def scripted_policy(obs: np.ndarray, rng: np.random.Generator) -> int:
    """Unused where ``scripted_action`` is declared (a legal action needs the state)."""
    return random_action(rng)


def state_bins(state: Mapping[str, np.ndarray]) -> tuple:
    """Coarse bins for the novelty policy: stage, turn, points, pending decision, cards in
    hand and in play, damage on the Actives in steps of 30."""
    return (int(state["stage"]), min(int(state["turn"]), 20), tuple(state["points"].tolist()),
            int(state["pending_kind"][0]), tuple((state["hand"] > 0).sum(1).tolist()),
            tuple((state["stack"][:, :, 0] > 0).sum(1).tolist()),
            tuple((state["damage"][:, 0] // 30).tolist()))


# ---------------------------------------------------------------- distribution test
SHUFFLED = 20  # the zone size: a deck is shuffled over 20 cards


def reference_events(n: int, seed: int) -> dict[str, np.ndarray]:
    """The reference's random events, each from its own generator: the first player of a dealt
    game (its coin after the opening shuffles), and the generator's coin, Energy roll over 3
    types and the place card 0 lands after a 20-card shuffle."""
    from envport.envs.tcg_pocket.rng import Rng

    ref = make_reference()
    first, coin, energy, place = (np.zeros(n, np.int64) for _ in range(4))
    for i in range(n):
        ref.reset(derive_seed(seed, i))
        first[i] = int(ref.get_state()["first"])
        rng = Rng(derive_seed(seed, n + i))
        coin[i] = rng.coin()
        energy[i] = rng.energy(3)
        deck = list(range(SHUFFLED))
        rng.shuffle(deck)
        place[i] = deck.index(0)
    return {"first_player": first, "coin": coin, "energy_roll": energy, "shuffle_place": place}


def translation_events(n: int, seed: int) -> dict[str, np.ndarray]:
    """The same events from the JAX engine: its own resets (``TcgPocket.reset``) and its
    generator (``jax_engine/rng.py``) seeded from JAX keys."""
    import jax
    import jax.numpy as jnp

    from envport.core.seeds import derive_key
    from envport.envs.tcg_pocket.jax_engine import rng as R
    from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket

    env = TcgPocket()
    states, _ = jax.jit(jax.vmap(env.reset))(jax.random.split(derive_key(seed), n))

    def draws(seed_word: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        rng = jnp.stack([R.seed_key(seed_word), jnp.uint32(0)])
        heads, rng = R.coin(rng)
        energy, rng = R.randint(rng, 3)
        deck, _ = R.shuffle(rng, jnp.arange(SHUFFLED, dtype=jnp.int32), jnp.int32(SHUFFLED))
        return heads.astype(jnp.int32), energy, jnp.argmax(deck == 0)

    words = jax.random.bits(derive_key(seed, 1), (n,), jnp.uint32)
    coin, energy, place = jax.jit(jax.vmap(draws))(words)
    return {"first_player": np.asarray(states.first, np.int64),
            "coin": np.asarray(coin, np.int64), "energy_roll": np.asarray(energy, np.int64),
            "shuffle_place": np.asarray(place, np.int64)}


# ---------------------------------------------------------------- benchmark
MIN_TIMED_STEPS = 20_000  # ~1 s of the Python reference: fewer would time the noise


def _play(seed: int, n_envs: int, steps: int) -> tuple[int, float]:
    """``steps`` env-steps over ``n_envs`` references played with uniformly random legal
    actions from their masks (a game that ends is reset), round-robin as a vector env steps
    them; returns (steps, seconds)."""
    rng = np.random.default_rng(seed)
    refs = [make_reference() for _ in range(n_envs)]
    masks = []
    for i, r in enumerate(refs):
        r.reset(derive_seed(seed, i))
        masks.append(r.action_mask())
    games = n_envs
    t0 = time.perf_counter()
    for t in range(steps):
        i = t % n_envs
        legal = np.flatnonzero(masks[i])
        _, _, done, _, info = refs[i].step(int(legal[rng.integers(len(legal))]))
        if done:
            refs[i].reset(derive_seed(seed, games))
            games += 1
            masks[i] = refs[i].action_mask()
        else:
            masks[i] = info["action_mask"]
    return steps, time.perf_counter() - t0


def _play_child(args: tuple[int, int, int]) -> tuple[int, float]:
    return _play(*args)


def reference_throughput(batch_sizes: list[int], steps: int) -> list[dict[str, Any]]:
    """The reference's random-legal-action steps/s per batch size (environments stepped in
    turn): one process, and one process per core each stepping its share of the batch (steps/s
    summed over the processes' own timed loops, so the processes' start is not timed)."""
    cores = os.cpu_count() or 1
    total = max(steps, MIN_TIMED_STEPS)
    rows: list[dict[str, Any]] = []
    for n in batch_sizes:
        done, seconds = _play(0, n, total)
        rows.append({"backend": "reference", "mode": "Python loop, 1 process", "batch_size": n,
                     "steps_per_second": done / seconds, "steps": done, "seconds": seconds})
        if cores > 1 and n >= cores:
            jobs = [(derive_seed(1, p), n // cores + (p < n % cores), total // cores)
                    for p in range(cores)]
            with multiprocessing.get_context("spawn").Pool(cores) as pool:
                out = pool.map(_play_child, jobs)
            sps = sum(d / s for d, s in out)
            rows.append({"backend": "reference", "mode": f"Python loop, {cores} processes",
                         "batch_size": n, "steps_per_second": sps,
                         "steps": sum(d for d, _ in out),
                         "seconds": max(s for _, s in out)})
    return rows
