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
POOL = "full"

_PRIVATE: dict[str, Any] = {}


class PoolReference(TcgPocketReference):
    """``TcgPocketReference`` dealing ``POOL`` (``full``) unless told otherwise.

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


# ---------------------------------------------------------------- L2 state sources
CONDITION_NAMES = ("poisoned", "burned", "asleep", "paralyzed", "confused")  # encode order
EXCLUSIVE = (2, 3, 4)  # Asleep, Paralyzed, Confused replace each other (spec 9.1)
S_MAIN = 1  # encode.STAGES.index("main")


def _hp() -> np.ndarray:
    """HP by card id (0: no card), from the reference's card table."""
    if "hp" not in _PRIVATE:
        from envport.envs.tcg_pocket.encode import _TABLE, CARD_NAMES

        _PRIVATE["hp"] = np.array([0] + [int(_TABLE[n].hp or 0) for n in CARD_NAMES])
    return _PRIVATE["hp"]


def _in_play(state: Mapping[str, np.ndarray]) -> list[tuple[int, int]]:
    return [(p, k) for p in range(2) for k in range(state["stack"].shape[1])
            if state["stack"][p, k, 0] > 0]


def _condition(s: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    p = int(rng.integers(2))
    if s["stack"][p, 0, 0] == 0:
        return
    c = int(rng.integers(len(CONDITION_NAMES)))
    if c in EXCLUSIVE:
        s["conditions"][p, 0, list(EXCLUSIVE)] = False
    s["conditions"][p, 0, c] = True


def _damage(s: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    slots = _in_play(s)
    p, k = slots[int(rng.integers(len(slots)))]
    top = int(s["stack"][p, k][s["stack"][p, k] > 0][-1])
    hp = int(_hp()[top])
    s["damage"][p, k] = 10 * int(rng.integers(max(hp // 10, 1)))  # below the HP: still in play


def _energy(s: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    slots = _in_play(s)
    p, k = slots[int(rng.integers(len(slots)))]
    types = s["energy_types"][p][s["energy_types"][p] >= 0]
    if len(types):
        s["energy"][p, k, int(rng.choice(types))] += int(rng.integers(1, 3))


def _points(s: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    s["points"][:] = np.maximum(s["points"], rng.integers(0, 3, 2))  # one Knock Out from a win


def _late_turn(s: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    """Near the turn limit (the default 30), keeping the turn's parity (who moves first)."""
    turn = int(s["turn"])
    if turn < 27:
        s["turn"] = np.asarray(turn + 2 * ((29 - turn) // 2 + int(rng.integers(0, 2))),
                               s["turn"].dtype)


def _move(src: np.ndarray, dst: np.ndarray, n: int) -> None:
    """The first ``n`` cards of zone ``src`` to the end of zone ``dst`` (zones: ids, then 0)."""
    cards, rest = src[src > 0], dst[dst > 0]
    n = min(n, len(cards), len(dst) - len(rest))
    moved = np.concatenate([rest, cards[:n]])
    left = cards[n:]
    src[:] = 0
    src[:len(left)] = left
    dst[:] = 0
    dst[:len(moved)] = moved


def _full_hand(s: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    """A hand at (or one below) the hand limit of 10: cards drawn from the deck's top."""
    p = int(rng.integers(2))
    _move(s["deck"][p], s["hand"][p], 10 - int(rng.integers(0, 2)) - int((s["hand"][p] > 0).sum()))


def _thin_deck(s: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    """A deck of 0 or 1 cards left: the rest discarded (the empty-deck draw)."""
    p = int(rng.integers(2))
    _move(s["deck"][p], s["discard"][p], int((s["deck"][p] > 0).sum()) - int(rng.integers(0, 2)))


def _attackers() -> list[tuple[np.ndarray, np.ndarray]]:
    """Each Pokémon of the pool with an attack effect: its evolution stack (card ids, bottom
    first) and the Energy per type that pays every one of its attacks."""
    if "attackers" not in _PRIVATE:
        from envport.envs.tcg_pocket.cards import ENERGY_INDEX
        from envport.envs.tcg_pocket.deck import pool_pokemon
        from envport.envs.tcg_pocket.encode import _TABLE, CARD_ID

        out = []
        for name in pool_pokemon(POOL, _TABLE):
            card = _TABLE[name]
            if not card.is_pokemon or all(a.effect is None and a.damage_mode == ""
                                          for a in card.attacks):
                continue
            chain = [name]
            while _TABLE[chain[0]].evolves_from in _TABLE:
                chain.insert(0, str(_TABLE[chain[0]].evolves_from))
            stack = np.zeros(3, np.int16)
            stack[:len(chain)] = [CARD_ID[n] for n in chain]
            energy = np.zeros(len(ENERGY_INDEX), np.int8)
            for a in card.attacks:
                need = np.zeros_like(energy)
                for symbol in a.cost:
                    # Colorless paid with the card's own type, so one type pays it all
                    need[ENERGY_INDEX.get(symbol, ENERGY_INDEX.get(str(card.type), 0))] += 1
                energy = np.maximum(energy, need)
            out.append((stack, energy))
        _PRIVATE["attackers"] = out
    return _PRIVATE["attackers"]


def _ready_attacker(s: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    """The player to move's Active replaced by a Pokémon of the pool with an attack effect (its
    whole evolution line), its Energy paying each of its attacks, its damage kept below its
    HP: every attack template of the pool from states random play seldom builds (a Stage 2
    with its Energy; a chosen attack with the defender's damage and conditions as they are)."""
    p = int(s["current"])
    stack, energy = _attackers()[int(rng.integers(len(_attackers())))]
    s["stack"][p, 0] = stack
    s["energy"][p, 0] = energy + (rng.random(energy.shape) < 0.1)  # sometimes a spare Energy
    s["damage"][p, 0] = 10 * int(rng.integers(max(int(_hp()[stack[stack > 0][-1]]) // 10, 1)))


def _trainer_in_hand(s: dict[str, np.ndarray], rng: np.random.Generator) -> None:
    """A Trainer of the pool in the player to move's hand (a hand card replaced, or added to
    an empty hand), and no Supporter played yet this turn: the Trainers' checks and effects
    from states random play reaches with other hands. Only for a pool with Trainers."""
    from envport.envs.tcg_pocket.deck import pool_trainer_cards
    from envport.envs.tcg_pocket.encode import CARD_ID

    names = pool_trainer_cards(POOL)
    if not names:
        return
    p = int(s["current"])
    n = int((s["hand"][p] > 0).sum())
    s["hand"][p, int(rng.integers(max(n, 1)))] = CARD_ID[names[int(rng.integers(len(names)))]]
    s["played_supporter"][p] = False


PERTURBATIONS = (_condition, _damage, _energy, _points, _late_turn, _full_hand, _thin_deck,
                 _ready_attacker, _ready_attacker, _trainer_in_hand, _trainer_in_hand)


def perturb(state: Mapping[str, np.ndarray], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A nearby state of a game in progress that random and heuristic play rarely reach: one
    to three of the player to move's Active replaced by an attack-ready Pokémon with an attack
    effect (twice as likely as each other change), a Special Condition on an Active (Burned
    and Confused included, which no A1 attack of the pool inflicts, so only this source
    reaches the Checkup's Burn and Confusion's coin), damage below an in-play Pokémon's HP,
    Energy of a declared type attached, points one Knock Out from a win, a turn near the turn
    limit, a hand at the hand limit, an (almost) empty deck. Only a state of the main stage
    with no decision pending is changed (elsewhere the fields constrain each other more than
    these rules know); every changed state is one the rules could reach with other decks."""
    s = {k: np.array(v, copy=True) for k, v in state.items()}
    if int(s["stage"]) != S_MAIN or (s["pending_kind"] >= 0).any() or not _in_play(s):
        return s
    for i in np.sort(rng.choice(len(PERTURBATIONS), size=int(rng.integers(1, 4)),
                                replace=False)):
        PERTURBATIONS[int(i)](s, rng)
    return s


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
    """The same events from the JAX engine: its own resets (``SPEC``'s ``make``, dealing
    decks of ``POOL``) and its generator (``jax_engine/rng.py``) seeded from JAX keys."""
    import jax
    import jax.numpy as jnp

    from envport.core.seeds import derive_key
    from envport.envs.tcg_pocket.dealt import DealtTcgPocket
    from envport.envs.tcg_pocket.jax_engine import rng as R

    env = DealtTcgPocket(pool=POOL)
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
