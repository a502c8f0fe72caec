"""pokemon-gen1's reference backend for PPO training: battles of the real Showdown, batched over
persistent Node workers, as player 0 against a fixed opponent played on the host.

:class:`PokemonVectorReference` is the :class:`envport.train.backends.HostVectorEnv` that
``envport train pokemon-gen1 --backend reference --opponent heuristic|random`` steps (and
``envport bench pokemon-gen1 --ppo`` times against the JAX engine), the reference counterpart of
``envport.pettingzoo.VsOpponent``:

* **Battles**: ``num_envs`` Showdown battles spread over ``workers`` Node processes
  (``reference.ShowdownWorker``; default one per core, at most one per battle), battle ``i`` on
  worker ``i mod workers``. Each step sends every worker one line holding, per battle, the
  ``choose`` of both sides and an ``export`` (Showdown's ``toJSON``); the workers run at once
  (one host thread each waits for its worker's reply and bridges its battles).
* **Observation and mask**: the same functions as the JAX environment's, on the bridge's flat
  state of the export (``bridge.from_showdown``, ``spec_support.flat_state`` with ``seen``):
  player 0's row of ``spec_support.observe`` (``observe_player``), and player 0's legal choices
  from Showdown's own request (``spec_support.mask_from_request``), in :meth:`action_masks`.
* **The opponent** (player 1) chooses on the host from that same flat state: the heuristic is
  ``agents.decide`` on the :class:`agents.View` ``agents.view_jax`` builds from the JAX state
  (here from the flat state, in numpy: :func:`view_of`), with Showdown's mask; the random player
  picks uniformly among player 1's legal choices (``agents.pick_legal`` of a uniform integer
  from this batch's generator, or, under training, the integer the JAX batch draws from the
  same key: keyed draws below).
* **Resets**: both teams drawn uniformly from the same committed pool as the JAX ``reset``
  (``create.pool()``, packed by Showdown's ``Teams.pack``) and the battle's four seed words,
  from ``numpy.random.default_rng(seed)``; a battle that ends is replaced in the same step
  (same-step autoreset, as ``AutoReset``), which returns the new battle's first observation.
  Reward: player 0's, +1 / -1 at a win / loss, 0 otherwise; never truncated (Showdown's
  Endless Battle Clause ends a battle at turn 1000 as a tie).
* **Keyed draws** (``takes_keys``; ``backends.HostVectorEnv``): given the keys the JAX
  backend's rollout resets and steps its battles with (``reset(keys=...)``, ``step(actions,
  keys=...)``), the teams, seed words and the random player's integers are instead those the
  JAX batch draws from the same keys (:class:`KeyedDraws`), so that Showdown plays the battles
  the JAX engine plays: the two backends' trainings of a seed meet common random numbers.
  Evaluation batches, given no keys, draw from the generator.
* **Stopping battles** (:meth:`set_active`, ``backends.HostVectorEnv``): the evaluation stops
  each battle once its first one has ended; a stopped battle is sent nothing, and the random
  player's integers are still drawn for every battle, so the active ones' draws do not depend
  on which are stopped.
* **State** (:meth:`get_state`): every battle's last ``toJSON``, ``seen``, and the generator;
  :meth:`set_state` imports the battles again (``Battle.fromJSON``) and checks that Showdown
  holds the same flat states.
"""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jax
import numpy as np

from envport.core.spaces import Box, Discrete, Space
from envport.envs.pokemon_gen1 import agents as A
from envport.envs.pokemon_gen1 import bridge as B
from envport.envs.pokemon_gen1 import create as C
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import spec_support as SS
from envport.envs.pokemon_gen1 import state as S

OPPONENTS = ("heuristic", "random")  # envport.pettingzoo.OPPONENTS (checked equal in the tests)
SIDES = ("p1", "p2")


def default_workers(num_envs: int) -> int:
    """One Node worker per core, at most one per battle."""
    return max(1, min(num_envs, os.cpu_count() or 1))


def check_batch(num_envs: int, opponent: str) -> None:
    if num_envs < 1:
        raise ValueError(f"num_envs must be at least 1, got {num_envs}")
    if opponent not in OPPONENTS:
        raise ValueError(f"opponent must be one of {', '.join(OPPONENTS)}, got {opponent!r}")


def opponent_of(env_kwargs: dict[str, Any]) -> str:
    """The batch's opponent from the training's options (default: the SPEC's)."""
    from envport.envs.pokemon_gen1.training import ENV_KWARGS

    unknown = set(env_kwargs) - {"opponent"}
    if unknown:
        raise ValueError(f"pokemon-gen1's host batches take only opponent, got "
                         f"{sorted(unknown)}")
    return str(env_kwargs.get("opponent", ENV_KWARGS["opponent"]))


def draw_battles(rng: np.random.Generator, indices: list[int], n_teams: int
                 ) -> dict[int, tuple[int, int, list[int]]]:
    """Battle ``i``'s two pool teams and four LCG seed words for each of ``indices``, drawn in
    that order: what a batch consumes of its generator at a (re)start. Shared with
    ``vector_engine.PokemonVectorEngine``, which then plays the same battles in JAX."""
    draws: dict[int, tuple[int, int, list[int]]] = {}
    for i in indices:
        pair = rng.integers(0, n_teams, 2)
        seed = rng.integers(0, 1 << 16, 4)
        draws[i] = (int(pair[0]), int(pair[1]), [int(x) for x in seed])
    return draws


def draw_random_choices(rng: np.random.Generator, n: int) -> np.ndarray:
    """The random opponent's integers for ``n`` battles (``agents.pick_legal`` of each)."""
    return rng.integers(0, A.RANDOM_MODULUS, n)


class KeyedDraws:
    """What the JAX training batch draws from its per-battle keys (``uint32[n, 2]`` key data,
    ``ppo.make_rollout``'s), computed by the JAX functions that draw them: a reset's teams and
    seed words (``env.reset_draws``), and at each step the random player's integer
    (``agents.random_draws``) and the next battle's draws. The splits are those of the JAX
    batch's step, ``AutoReset(VsOpponent)``: the step's draws from ``fold_in(key, 0)`` (which
    ``VsOpponent.sample_draws`` passes on whole and its ``transition`` splits into the
    opponent's key and the game's), the reset's from ``fold_in(key, 1)``.
    ``tests/envs/pokemon_gen1/test_pokemon_keyed_draws.py`` plays both batches on the same keys."""

    def __init__(self, n_teams: int) -> None:
        self.reset_of, self.step_of = _keyed_programs(n_teams)

    @staticmethod
    def _as_battles(idx: Any, words: Any) -> dict[int, tuple[int, int, list[int]]]:
        idx, words = np.asarray(idx), np.asarray(words)
        return {i: (int(idx[i, 0]), int(idx[i, 1]), [int(w) for w in words[i]])
                for i in range(len(idx))}

    def reset(self, keys: np.ndarray) -> dict[int, tuple[int, int, list[int]]]:
        """Every battle's teams and seed words, from the reset keys."""
        return self._as_battles(*self.reset_of(keys))

    def step(self, keys: np.ndarray) -> tuple[np.ndarray, dict[int, tuple[int, int, list[int]]]]:
        """The random player's integers ``int[n]`` and the draws of each battle's restart (used
        where it ends), from the step keys."""
        r, idx, words = self.step_of(keys)
        return np.asarray(r), self._as_battles(idx, words)


@functools.cache
def _keyed_programs(n_teams: int) -> tuple[Any, Any]:
    from envport.envs.pokemon_gen1.env import reset_draws

    def reset(data: jax.Array) -> tuple[jax.Array, jax.Array]:
        return jax.vmap(lambda k: reset_draws(k, n_teams))(jax.random.wrap_key_data(data))

    def one_step(key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        k_opponent, _ = jax.random.split(jax.random.fold_in(key, 0))
        idx, words = reset_draws(jax.random.fold_in(key, 1), n_teams)
        return A.random_draws(k_opponent)[1], idx, words

    def step(data: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        return jax.vmap(one_step)(jax.random.wrap_key_data(data))

    return jax.jit(reset), jax.jit(step)


def view_of(flat: dict[str, np.ndarray], player: int) -> A.View:
    """Player ``player``'s :class:`agents.View` of a flat state (numpy), as ``agents.view_jax``
    builds it from the JAX state, with the mask of ``flat["mask"]`` (Showdown's requests)."""
    p, o = player, 1 - player
    present = np.asarray(flat["team.present"][p], bool)
    pos = np.asarray(flat["team.position"][p]).astype(np.int32)
    at = (pos[None, :] == np.arange(A.N_POS)[:, None]) & present[None, :]  # [position, member]
    order = np.argmax(at, axis=1)
    slot_o = max(int(flat["active.slot"][o]), 0)
    team = {k: np.asarray(flat[f"team.{k}"][p])[order]
            for k in ("species", "level", "hp", "status", "moves", "stats")}
    return A.View(
        present=at.any(1), **team, spe_stage=flat["active.boosts"][p, A.SPE],
        mask=np.asarray(flat["mask"][p], bool),
        opp_present=np.bool_(int(flat["active.slot"][o]) >= 0
                             and not bool(flat["team.fainted"][o, slot_o])),
        opp_species=flat["active.species"][o], opp_level=flat["team.level"][o, slot_o],
        opp_status=flat["team.status"][o, slot_o], opp_spe_stage=flat["active.boosts"][o, A.SPE])


def flat_of(export: dict[str, Any], turn: dict[str, Any], seen: np.ndarray) -> dict[str, Any]:
    """The flat state of a battle from its ``toJSON`` and the worker's turn result (its
    requests), as ``env.ShowdownReference`` builds it: ``seen`` plus the actives, and ``mask``."""
    b = B.from_showdown(export)
    seen = SS.seen_after(b, seen, np)
    flat = {k: np.asarray(v) for k, v in SS.flat_state(b, seen, np).items()}
    ended = bool(turn.get("ended"))
    requests = turn.get("requests") or {}
    flat["mask"] = np.stack([SS.mask_from_request(requests.get(p), ended) for p in SIDES])
    return flat


def _reward(turn: dict[str, Any]) -> float:
    if not turn.get("ended"):
        return 0.0
    return {"p1": 1.0, "p2": -1.0}.get(str(turn.get("winner")), 0.0)


class PokemonVectorReference:
    """``num_envs`` Showdown battles, player 0 of each against ``opponent`` (module doc)."""

    def __init__(self, num_envs: int, seed: int = 0, opponent: str = "heuristic",
                 workers: int | None = None) -> None:
        from envport.envs.pokemon_gen1.reference import ShowdownWorker

        check_batch(num_envs, opponent)
        self.num_envs, self.seed, self.opponent = num_envs, int(seed), opponent
        self.observation_space: Space = Box(SS.OBS_LOW, SS.OBS_HIGH, (SS.OBS_SIZE,))
        self.action_space: Space = Discrete(E.N_CHOICES)
        n_workers = default_workers(num_envs) if workers is None else int(workers)
        if not 1 <= n_workers <= num_envs:
            raise ValueError(f"workers must be in 1..num_envs ({num_envs}), got {workers}")
        self._workers = [ShowdownWorker(timeout=120) for _ in range(n_workers)]
        self._threads = ThreadPoolExecutor(n_workers) if n_workers > 1 else None
        self._pool = C.pool(True)
        self._packed: dict[int, str] = {}
        self._rng = np.random.default_rng(self.seed)
        self._keyed = KeyedDraws(len(self._pool))
        self._next_id = 0
        self._ids: list[str | None] = [None] * num_envs
        self._json: list[dict[str, Any] | None] = [None] * num_envs
        self._flat: list[dict[str, Any] | None] = [None] * num_envs
        self._obs: list[np.ndarray | None] = [None] * num_envs  # player 0's row of each flat
        self._active = np.ones(num_envs, bool)
        # each battle's last requests (Showdown's, both sides): for agents working from them
        self.requests: list[dict[str, Any]] = [{} for _ in range(num_envs)]

    # ---- plumbing ------------------------------------------------------------------------------
    def worker_of(self, i: int) -> tuple[Any, str]:
        """Battle ``i``'s worker and battle id (its Showdown battle, for inspection)."""
        bid = self._ids[i]
        assert bid is not None
        return self._workers[i % len(self._workers)], bid

    def _on_workers(self, jobs: dict[int, list[tuple[int, list[dict]]]]) -> dict[int, list]:
        """Each worker's batch ``[(battle index, its requests), ...]`` sent as one line, all
        workers at once; per battle index, its replies' results (errors raised)."""
        def run(w: int) -> list[tuple[int, list]]:
            worker = self._workers[w]
            flat = [r for _, reqs in jobs[w] for r in reqs]
            replies = iter(worker.request(flat))
            out = []
            for i, reqs in jobs[w]:
                out.append((i, [worker._result(next(replies), q) for q in reqs]))
            return out

        busy = [w for w in jobs if jobs[w]]
        if self._threads is None or len(busy) < 2:
            results = [run(w) for w in busy]
        else:
            results = list(self._threads.map(run, busy))
        return {i: res for part in results for i, res in part}

    def _pack(self, indices: set[int]) -> None:
        """Showdown's packing of the pool teams ``indices`` not packed yet (one batch)."""
        from envport.envs.pokemon_gen1.reference import gen1_set

        todo = sorted(i for i in indices if i not in self._packed)
        if not todo:
            return
        requests = [{"op": "pack_team", "team": [
            gen1_set(s["species"], s["moves"], level=s["level"], ivs=s["ivs"], evs=s["evs"])
            for s in self._pool.sets[i]]} for i in todo]
        worker = self._workers[0]
        for i, reply, q in zip(todo, worker.request(requests), requests, strict=True):
            self._packed[i] = worker._result(reply, q)["packed"]

    def _new_battles(self, indices: list[int],
                     keyed: dict[int, tuple[int, int, list[int]]] | None = None
                     ) -> dict[int, list[dict]]:
        """Requests creating a fresh battle for each of ``indices`` (destroying the old one):
        two pool teams and four seed words each, drawn here in index order (or those of
        ``keyed``, the draws of the JAX batch's keys)."""
        draws = (draw_battles(self._rng, indices, len(self._pool)) if keyed is None
                 else {i: keyed[i] for i in indices})
        self._pack({t for a, b, _ in draws.values() for t in (a, b)})
        out: dict[int, list[dict[str, Any]]] = {}
        for i, (a, b, words) in draws.items():
            old, bid = self._ids[i], f"train-{self._next_id}"
            self._next_id += 1
            self._ids[i] = bid
            reqs: list[dict[str, Any]] = (
                [{"op": "destroy", "battle_id": old}] if old is not None else [])
            out[i] = [*reqs,
                      {"op": "create", "battle_id": bid, "seed": words, "team1": self._packed[a],
                       "team2": self._packed[b], "format": "gen1randombattle"},
                      {"op": "export", "battle_id": bid}]
        return out

    def _by_worker(self, requests: dict[int, list[dict]]) -> dict[int, list]:
        jobs: dict[int, list[tuple[int, list[dict]]]] = {w: [] for w in range(len(self._workers))}
        for i in sorted(requests):
            jobs[i % len(self._workers)].append((i, requests[i]))
        return jobs

    def _start(self, indices: list[int],
               keyed: dict[int, tuple[int, int, list[int]]] | None = None) -> None:
        results = self._on_workers(self._by_worker(self._new_battles(indices, keyed)))
        for i in indices:
            self._hold(i, results[i][-2], results[i][-1], np.zeros((2, S.TEAM_SIZE), bool))

    def _hold(self, i: int, turn: dict[str, Any], export: dict[str, Any], seen: np.ndarray
              ) -> dict[str, Any]:
        """Battle ``i`` as Showdown now has it (its turn result and export): its flat state
        and player 0's observation of it."""
        self._json[i], self.requests[i] = export, turn.get("requests") or {}
        flat = self._flat[i] = flat_of(export, turn, seen)
        self._obs[i] = SS.observe_player(flat, flat["mask"], 0, np)
        return flat

    def _observations(self) -> np.ndarray:
        return np.stack([o for o in self._obs if o is not None])

    # ---- HostVectorEnv -------------------------------------------------------------------------
    takes_keys = True

    def reset(self, keys: np.ndarray | None = None) -> np.ndarray:
        """``keys``: the JAX batch's reset keys (``uint32[num_envs, 2]``), or None (module
        doc, keyed draws)."""
        self._rng = np.random.default_rng(self.seed)
        self._active = np.ones(self.num_envs, bool)
        keyed = None if keys is None else self._keyed.reset(self._check_keys(keys))
        self._start(list(range(self.num_envs)), keyed)
        return self._observations()

    def set_active(self, active: np.ndarray) -> None:
        """Step only the battles where ``active`` (``bool[num_envs]``) is True until the next
        :meth:`reset` (``backends.HostVectorEnv``; module doc)."""
        active = np.asarray(active)
        if active.shape != (self.num_envs,) or active.dtype != np.bool_:
            raise ValueError(f"active must be bool of shape ({self.num_envs},), got "
                             f"{active.dtype} {active.shape}")
        self._active = active.copy()

    def _check_keys(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys)
        if keys.shape != (self.num_envs, 2) or keys.dtype != np.uint32:
            raise ValueError(f"keys must be uint32 key data of shape ({self.num_envs}, 2), one "
                             f"row per battle, got {keys.dtype} {keys.shape}")
        return keys

    def action_masks(self) -> np.ndarray:
        """``bool[num_envs, 11]``: player 0's legal choices at the current observations."""
        self._require_reset()
        return np.stack([np.asarray(f["mask"][0], bool) for f in self._flat if f is not None])

    def opponent_choices(self, r: np.ndarray | None = None) -> np.ndarray:
        """``int32[num_envs]``: the opponent's choice in each active battle now (the random
        player's from the integers ``r``, else drawn from the batch's generator for every
        battle); 0 in a stopped one."""
        self._require_reset()
        flats = [f for f in self._flat if f is not None]
        out = np.zeros(self.num_envs, np.int32)
        active = [int(i) for i in np.flatnonzero(self._active)]
        if self.opponent == "heuristic":
            for i in active:
                out[i] = A.decide(view_of(flats[i], 1), np)
            return out
        if r is None:
            r = draw_random_choices(self._rng, len(flats))
        for i in active:
            out[i] = A.pick_legal(np.int32(r[i]), flats[i]["mask"][1], np)
        return out

    def _require_reset(self) -> None:
        if any(f is None for f in self._flat):
            raise RuntimeError("call reset() before step()")

    def step(self, actions: Any, keys: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Player 0 plays ``actions`` (``int[num_envs]``, engine choices; an illegal one plays
        the legal choice ``c mod n``, the environment's rule), the opponent its own choice.
        ``keys``: the JAX batch's step keys (``uint32[num_envs, 2]``), or None (module doc)."""
        self._require_reset()
        actions = self.action_space.validate(actions, batch_shape=(self.num_envs,))
        r, restarts = (None, None) if keys is None else self._keyed.step(self._check_keys(keys))
        theirs = self.opponent_choices(r)
        masks = np.stack([f["mask"] for f in self._flat if f is not None])
        joint = SS.resolve(np.stack([actions.astype(np.int32), theirs], axis=1), masks, np)
        requests = {}
        for i in map(int, np.flatnonzero(self._active)):
            bid = self._ids[i]
            requests[i] = [{"op": "choose", "battle_id": bid,
                            "p1": E.choice_string(int(joint[i, 0])),
                            "p2": E.choice_string(int(joint[i, 1]))},
                           {"op": "export", "battle_id": bid}]
        results = self._on_workers(self._by_worker(requests))
        reward = np.zeros(self.num_envs, np.float32)
        terminated = np.zeros(self.num_envs, bool)
        for i in requests:
            turn, export = results[i]
            flat = self._flat[i]
            assert flat is not None
            reward[i] = _reward(turn)
            terminated[i] = bool(turn.get("ended"))
            self._hold(i, turn, export, flat["seen"])
        ended = [i for i in range(self.num_envs) if terminated[i]]
        if ended:
            self._start(ended, restarts)
        return self._observations(), reward, terminated, np.zeros(self.num_envs, bool)

    def flat_states(self) -> list[dict[str, np.ndarray]]:
        """The battles' current flat states (``spec_support.flat_state`` plus ``mask``)."""
        self._require_reset()
        return [{k: np.copy(v) for k, v in f.items()} for f in self._flat if f is not None]

    def get_state(self) -> dict[str, Any]:
        self._require_reset()
        return {"json": list(self._json), "seen": [f["seen"].copy() for f in self.flat_states()],
                "flat": self.flat_states(), "rng": self._rng.bit_generator.state,
                "next_id": self._next_id, "opponent": self.opponent,
                "active": self._active.copy()}

    def set_state(self, state: dict[str, Any]) -> None:
        if len(state["json"]) != self.num_envs or state.get("opponent") != self.opponent:
            raise ValueError(f"state of {len(state['json'])} battles against "
                             f"{state.get('opponent')!r}; this batch has {self.num_envs} "
                             f"against {self.opponent!r}")
        self._next_id = int(state["next_id"])
        requests = {}
        for i in range(self.num_envs):
            old, bid = self._ids[i], f"train-{self._next_id}"
            self._next_id += 1
            self._ids[i] = bid
            reqs = [{"op": "destroy", "battle_id": old}] if old is not None else []
            requests[i] = [*reqs, {"op": "import", "battle_id": bid, "json": state["json"][i]},
                           {"op": "export", "battle_id": bid}]
        results = self._on_workers(self._by_worker(requests))
        for i in range(self.num_envs):
            got = self._hold(i, results[i][-2], results[i][-1],
                             np.asarray(state["seen"][i], bool))
            want = state["flat"][i]
            differ = [k for k in want if not np.array_equal(want[k], got[k])]
            if differ:
                raise ValueError(f"set_state: Showdown restored battle {i} differently "
                                 f"({differ[:5]})")
        self._rng = np.random.default_rng()
        self._rng.bit_generator.state = state["rng"]
        # states saved before set_active existed hold every battle active
        self._active = np.asarray(state.get("active", np.ones(self.num_envs, bool)), bool).copy()

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=False)
        for w in self._workers:
            w.close()


def make(num_envs: int, seed: int = 0, **env_kwargs: Any) -> PokemonVectorReference:
    """``SPEC.training.make_vector_reference``: ``env_kwargs`` are the training's options
    (``opponent``: heuristic or random; default the SPEC's)."""
    return PokemonVectorReference(num_envs, seed, opponent_of(env_kwargs))
