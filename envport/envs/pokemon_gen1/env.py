"""``pokemon-gen1``: the Gen 1 battle engine as an envport Environment, with its Showdown side.

* :class:`PokemonGen1` (JAX): the state is the battle (:class:`state.Battle`, Showdown's LCG
  included) plus ``seen`` (which Pokemon each side has shown); the action is ``int32[2]``, both
  players' choices (``engine``: 0-3 moves, 5-9 switch to request position 1-5, 10 none); a choice c
  the request does not allow plays the side's legal choice number ``c mod n`` of its n legal ones
  (``spec_support.resolve``; Showdown would refuse it), on both sides. ``reset(key)`` samples both
  teams uniformly from the committed pool of Showdown's own ``Teams.generate`` teams
  (``create.TeamPool``) and the four LCG seed words from the key, then builds Showdown's start
  (``create.create``). The step is deterministic given the state: the randomness is Showdown's LCG
  inside it, so ``sample_draws`` is empty. Reward: player 1's (+1 win, -1 loss, 0 tie or
  unfinished; player 2's is its negation), ``terminated`` at the battle's end.
  ``info["action_mask"]``: ``bool[2, 11]``, the legal choices after the step (also the last columns
  of each observation row).
* :class:`ShowdownReference`: one battle of the real Showdown (``reference.ShowdownBattle``).
  ``reset(seed)``: teams from ``Teams.generate`` with seeds derived from ``seed`` (the next
  derived seed while a team holds a move the engine does not play), battle seed derived from it.
  Its state is :func:`spec_support.flat_state` of Showdown's export, plus ``mask`` from Showdown's
  own requests; ``set_state`` accepts the states the references of this process produced (kept
  by digest with their ``toJSON``), L2's perturbed states included (``spec_support.perturb``
  writes them over the visited state's JSON with ``export.to_showdown``).
* :class:`PokemonBridge`: the flat state <-> :class:`EnvState`; ``from_jax`` adds the JAX
  ``legal_mask``, so L2/L3 compare the legal choices too.
"""

from __future__ import annotations

import atexit
import collections
import functools
import hashlib
import json
import weakref
import zlib
from collections.abc import Mapping
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.api import Environment, StepResult, pytree_dataclass
from envport.core.reference import RefState
from envport.core.seeds import derive_seed
from envport.core.spaces import Box, InvalidActionError, Space
from envport.envs.pokemon_gen1 import bridge as B
from envport.envs.pokemon_gen1 import create as C
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import moves as MV
from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1 import spec_support as SS
from envport.envs.pokemon_gen1 import state as S

Array = jax.Array
TAPE_PAD = E.TAPE_SIZE


@pytree_dataclass
class EnvState:
    battle: S.Battle
    seen: Array  # bool [2, 6]: side s's team member j has been active (shown to the opponent)


@pytree_dataclass
class PokemonParams:
    """No parameters: the format (gen1randombattle rules) is fixed."""


class JointChoice(Space):
    """Both players' choices: ``int32[2]``, each in 0..10 (``engine`` choice integers)."""

    shape = (2,)
    dtype = np.dtype(np.int32)

    def __repr__(self) -> str:
        # what it holds, not where: envport mutate compares the spaces of the original and a
        # surviving mutant as text before it looks for an equivalence
        return f"JointChoice(players=2, choices={E.N_CHOICES}, dtype={self.dtype})"

    def sample(self, key: Array) -> Array:
        return jax.random.randint(key, self.shape, 0, E.N_CHOICES, dtype=self.dtype)

    def from_bits(self, bits: Array) -> Array:
        """``envport bench``'s random actions: one uint32 word per env -> ``int32[n, 2]``."""
        both = jnp.stack([bits & 0xFFFF, bits >> 16], axis=-1)
        return (both % jnp.uint32(E.N_CHOICES)).astype(self.dtype)

    def contains(self, x: Any) -> Array:
        x = jnp.asarray(x)
        if x.shape != self.shape or not jnp.issubdtype(x.dtype, jnp.integer):
            return jnp.asarray(False)
        return jnp.all((x >= 0) & (x < E.N_CHOICES))

    def validate(self, x: object, batch_shape: tuple[int, ...] = ()) -> np.ndarray:
        arr = np.asarray(x)
        want = batch_shape + self.shape
        if arr.shape != want:
            raise InvalidActionError(f"action has shape {arr.shape}, expected {want} (p1, p2)")
        if not np.issubdtype(arr.dtype, np.integer):
            raise InvalidActionError(f"action has dtype {arr.dtype}, expected integers")
        if np.any((arr < 0) | (arr >= E.N_CHOICES)):
            raise InvalidActionError(f"choices {arr.ravel()[:6].tolist()} outside 0..10")
        return arr.astype(self.dtype)


def masks_of(b: S.Battle) -> Array:
    return jnp.stack([E.legal_mask(b, 0), E.legal_mask(b, 1)])


def p1_reward(before_ended: Any, b: Any, xp: Any = jnp) -> Any:
    winner = xp.asarray(b.winner)
    r = xp.where(winner == S.WINNER_P1, 1.0, xp.where(winner == S.WINNER_P2, -1.0, 0.0))
    return xp.where(xp.asarray(b.ended) & ~xp.asarray(before_ended), r, 0.0).astype(np.float32)


def reset_draws(key: Array, n_teams: int) -> tuple[Array, Array]:
    """What a reset draws from its key: the two players' pool teams ``int32[2]`` and the four
    LCG seed words ``uint32[4]`` (also what ``vector_reference`` computes from the JAX
    rollout's keys, so that Showdown starts the same battles)."""
    k_teams, k_seed = jax.random.split(key)
    idx = jax.random.randint(k_teams, (2,), 0, n_teams)
    words = jax.random.randint(k_seed, (4,), 0, 1 << 16).astype(jnp.uint32)
    return idx, words


class PokemonGen1(Environment[EnvState, PokemonParams]):
    name = "pokemon-gen1"
    # ``envport mutate``: the engine's modules are mutated (this one only wraps them); each
    # mutant runs L2 against Showdown steps recorded once per run (stepping Showdown again per
    # mutant would cost more than the mutant), then, if it survives, L3 lockstep battles with
    # the live Showdown; op by op (one XLA compilation of the step takes 3-5 minutes on two
    # loaded cores, the recorded L2 run op by op ~1 minute once the primitives are cached). L1
    # is not run per mutant: its five compilations of the step would cost far more.
    mutation_plan: ClassVar[dict[str, Any]] = {
        "modules": ["envport.envs.pokemon_gen1.engine", "envport.envs.pokemon_gen1.mechanics",
                    "envport.envs.pokemon_gen1.moves", "envport.envs.pokemon_gen1.prng"],
        "layers": ("interaction", "rollout"),
        "recorded_interaction": True,
        "eager": True,
        # L2 cases also from teams with any supported move (the rare paths: mutation_states.py)
        "interaction_sources": ("envport.envs.pokemon_gen1.mutation_states:any_move_reference",),
        # and L3 battles of teams with every supported move, the partial-trapping moves too,
        # whose states L2 cannot inject
        "rollout_sources": ("envport.envs.pokemon_gen1.mutation_states:any_move_battles",),
        # L1's component checks (components.py: mechanics against Showdown's own functions,
        # battle creation) alone, before L2
        "components": True,
    }

    def __init__(self) -> None:
        self.pool = C.pool(True)

    def default_params(self) -> PokemonParams:
        return PokemonParams()

    def observation_space(self, params: PokemonParams | None = None) -> Space:
        return Box(SS.OBS_LOW, SS.OBS_HIGH, (2, SS.OBS_SIZE))

    def action_space(self, params: PokemonParams | None = None) -> Space:
        return JointChoice()

    def start(self, teams: C.Teams, seed_state: Array) -> tuple[EnvState, Array]:
        """The first state and observation of a battle of ``teams`` from LCG ``seed_state``."""
        b = C.create(teams, seed_state)
        seen = SS.seen_after(b, jnp.zeros((2, S.TEAM_SIZE), bool), jnp)
        state = EnvState(battle=b, seen=seen)
        return state, self.observe(state)

    def reset(self, key: Array, params: PokemonParams | None = None) -> tuple[EnvState, Array]:
        idx, words = reset_draws(key, len(self.pool))
        return self.start(self.pool.teams(idx[0], idx[1]), prng.seed_state(words))

    def observe(self, state: EnvState) -> Array:
        return SS.observe(SS.flat_state(state.battle, state.seen, jnp), masks_of(state.battle),
                          jnp)

    def sample_draws(self, key: Array, state: EnvState, params: PokemonParams | None = None
                     ) -> tuple[()]:
        return ()

    def transition(self, state: EnvState, action: Array, draws: Any,
                   params: PokemonParams | None = None) -> StepResult:
        b = state.battle
        choices = SS.resolve(action, masks_of(b), jnp)
        nb = E.step(b, choices[0], choices[1])
        seen = SS.seen_after(nb, state.seen, jnp)
        new = EnvState(battle=nb, seen=seen)
        masks = masks_of(nb)
        obs = SS.observe(SS.flat_state(nb, seen, jnp), masks, jnp)
        return StepResult(new, obs, p1_reward(b.ended, nb), jnp.asarray(nb.ended, bool),
                          jnp.asarray(False), {"action_mask": masks, "choices": choices})


# ---- the Showdown side ---------------------------------------------------------------------------

def supported_team(worker: Any, seed: int, part: int, tries: int = 200) -> str:
    """``Teams.generate`` from ``seed_words(derive_seed(seed, k), part)`` for the first k whose
    team the engine plays entirely (packed)."""
    from envport.envs.pokemon_gen1.reference import seed_words

    for k in range(tries):
        packed = worker.generate_team(seed_words(derive_seed(seed, k), part))
        if not MV.unsupported(MV.packed_team_moves(packed)):
            return packed
    raise ValueError(f"no supported Teams.generate team in {tries} seeds from {seed}")


def _digest(state: Mapping[str, Any]) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for k in SS.field_names():
        a = np.ascontiguousarray(np.asarray(state[k]))
        h.update(k.encode())
        h.update(str(a.dtype).encode())
        h.update(a.tobytes())
    return h.digest()


# Showdown's toJSON of every state a reference produced or was given (compressed, by the flat
# state's digest), shared by the references of this process: L2's ``perturb`` hook
# (``spec_support.perturb``) writes a perturbed state's JSON here, through its own reference,
# for the verifier's reference to inject.
_CACHE = 50_000  # states (~5 KB each)
_JSON: collections.OrderedDict[bytes, bytes] = collections.OrderedDict()


def _store(state: Mapping[str, Any], export: Mapping[str, Any]) -> None:
    key = _digest(state)
    _JSON[key] = zlib.compress(json.dumps(export, separators=(",", ":")).encode(), 1)
    _JSON.move_to_end(key)
    while len(_JSON) > _CACHE:
        _JSON.popitem(last=False)


def stored_json(state: Mapping[str, Any]) -> dict | None:
    """The Showdown JSON of a state some reference of this process produced (or None)."""
    blob = _JSON.get(_digest(state))
    return None if blob is None else json.loads(zlib.decompress(blob))


_LIVE: weakref.WeakSet[ShowdownReference] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    # The verifier never closes references; a worker left to interpreter finalization is killed
    # from __del__ while its reader threads hold stdout's lock, and Python aborts.
    for ref in list(_LIVE):
        ref.close()


class ShowdownReference:
    """One Showdown battle behind the Reference protocol (see the module docstring)."""

    def __init__(self, worker: Any = None) -> None:
        from envport.envs.pokemon_gen1.reference import ShowdownBattle

        self.battle = ShowdownBattle(worker)
        _LIVE.add(self)
        self._state: RefState = {}
        self._tape: list[dict] = []

    def close(self) -> None:
        self.battle.close()

    def _refresh(self, seen: Any) -> None:
        export = self.battle.export()
        b = B.from_showdown(export)
        seen = SS.seen_after(b, seen, np)
        flat = {k: np.asarray(v) for k, v in SS.flat_state(b, seen, np).items()}
        last = self.battle.last or {}
        ended = bool(last.get("ended"))
        requests = last.get("requests") or {}
        flat["mask"] = np.stack([SS.mask_from_request(requests.get(p), ended)
                                 for p in ("p1", "p2")])
        self._state = flat
        _store(flat, export)

    def _obs(self) -> np.ndarray:
        return SS.observe(self._state, self._state["mask"], np)

    def reset(self, seed: int) -> np.ndarray:
        return self.reset_with_teams(seed, (supported_team(self.battle.worker, seed, 1),
                                            supported_team(self.battle.worker, seed, 2)))

    def reset_with_teams(self, seed: int, teams: tuple[str, str]) -> np.ndarray:
        """A battle of two packed ``teams`` from ``seed``'s LCG seed."""
        from envport.envs.pokemon_gen1.reference import seed_words

        self.battle.reset(teams=teams, battle_seed=seed_words(seed, 0))
        self._tape = list(self.battle.tape_records())
        self._refresh(np.zeros((2, S.TEAM_SIZE), bool))
        return self._obs()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        choices = SS.resolve(np.asarray(action), self._state["mask"], np)
        strings = (E.choice_string(int(choices[0])), E.choice_string(int(choices[1])))
        ended_before = bool(self._state["battle.ended"])
        if ended_before:  # nothing to answer: the battle stays as it is
            self._tape = []
            return self._obs(), 0.0, True, False, {"choices": strings}
        _, reward, terminated, truncated, info = self.battle.step(strings)
        self._tape = list(self.battle.tape_records())
        self._refresh(self._state["seen"])
        return self._obs(), float(reward), bool(terminated), bool(truncated), {
            "choices": strings, "log": info.get("log")}

    def get_state(self) -> RefState:
        return {k: np.copy(v) for k, v in self._state.items()}

    def load_json(self, export: Mapping[str, Any], seen: Any) -> RefState:
        """Inject a Showdown JSON (``Battle.fromJSON``, requests rebuilt); its flat state."""
        self.battle.set_state({"showdown_json": json.dumps(export)})
        self._tape = []
        self._refresh(np.asarray(seen, bool))
        return self.get_state()

    def set_state(self, state: Mapping[str, Any]) -> None:
        """A state the references of this process produced (their toJSON; the perturb hook's
        states included). Any other is refused, as a mix of fields the shrinker of L2 tries
        should be: writing it over a template (``export.to_showdown``) would let Showdown hold
        inconsistent states (a bench Pokemon's types from another battle...)."""
        export = stored_json(state)
        if export is None:
            raise ValueError("set_state: this state was not produced by this reference nor "
                             "by spec_support.perturb (their Showdown toJSON is kept per "
                             "state)")
        self.load_json(export, state["seen"])
        differ = [k for k in self._state if not np.array_equal(self._state[k], state[k])]
        if differ:
            raise ValueError(f"set_state: Showdown restored a different state ({differ})")

    def tape(self) -> dict[str, np.ndarray]:
        """The last step's draws (``from``/``to``, -1 for none), padded to 64, and their
        count (fixed shapes: the verifier stacks tapes step by step)."""
        d = self._tape[:TAPE_PAD]
        frm = np.full(TAPE_PAD, -1, np.int64)
        to = np.full(TAPE_PAD, -1, np.int64)
        frm[: len(d)] = [-1 if x["from"] is None else x["from"] for x in d]
        to[: len(d)] = [-1 if x["to"] is None else x["to"] for x in d]
        return {"count": np.asarray(len(self._tape), np.int64), "from": frm, "to": to}


@functools.cache
def _batched_masks() -> Any:
    return jax.jit(jax.vmap(masks_of))


class PokemonBridge:
    def to_jax(self, state: Mapping[str, Any]) -> EnvState:
        return EnvState(battle=SS.battle_of(state, jnp), seen=jnp.asarray(state["seen"], bool))

    def from_jax(self, state: EnvState) -> RefState:
        battle = jax.tree_util.tree_map(np.asarray, state.battle)
        seen = np.asarray(state.seen)
        out = {k: np.asarray(v) for k, v in SS.flat_state(battle, seen, np).items()}
        lead = seen.shape[:-2]
        flat = jax.tree_util.tree_map(lambda x: x.reshape((-1, *x.shape[len(lead):])), battle)
        if lead:
            masks = np.asarray(_batched_masks()(flat)).reshape((*lead, 2, E.N_CHOICES))
        else:
            masks = np.asarray(masks_of(battle))
        out["mask"] = masks
        return out

    def draws(self, tape: Mapping[str, Any], state: Mapping[str, Any]) -> tuple[()]:
        return ()


def engine_step(state: Mapping[str, Any], action: Any) -> tuple[RefState, dict[str, Any]]:
    """One step of the engine's compiled one-battle step (``engine.compiled``) from a reference
    state, with its joint ``action`` resolved against the state's masks as the environment
    does: the flat state after it (the reference's form) and the step's info (its tape)."""
    c = SS.resolve(action, state["mask"])
    nb, info = E.compiled(False)(SS.battle_of(state, jnp), np.int32(c[0]), np.int32(c[1]))
    seen = SS.seen_after(nb, state["seen"], np)
    return PokemonBridge().from_jax(EnvState(battle=nb, seen=seen)), info


# ---- verifier hooks --------------------------------------------------------------------------

def legal_action(state: Mapping[str, Any], rng: np.random.Generator) -> np.ndarray:
    """A uniformly random legal joint action of a reference state (its Showdown ``mask``)."""
    out = np.full(2, E.NO_CHOICE, np.int32)
    for p in (0, 1):
        legal = np.flatnonzero(np.asarray(state["mask"])[p])
        if legal.size:
            out[p] = rng.choice(legal)
    return out


def scripted_policy(obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each player: 25 % a random legal choice, else its active's legal move of the highest base
    power (a forced switch: the first legal Pokemon)."""
    from envport.envs.pokemon_gen1 import tables as T

    out = np.full(2, E.NO_CHOICE, np.int32)
    for p in (0, 1):
        mask = np.asarray(obs[p, SS.MASK_OFFSET: SS.MASK_OFFSET + E.N_CHOICES]) > 0.5
        legal = np.flatnonzero(mask)
        if not legal.size:
            continue
        moves = [c for c in legal if c < 4]
        if not moves or rng.random() < 0.25:
            out[p] = rng.choice(legal)
            continue
        team = obs[p, : S.TEAM_SIZE * SS.OWN_MON].reshape(S.TEAM_SIZE, SS.OWN_MON)
        active = int(np.argmax(team[:, 1]))
        ids = np.rint(team[active, 6 + SS.N_STATUS: 10 + SS.N_STATUS] * T.N_MOVES).astype(int)
        power = [int(T.MOVE_BASE_POWER[ids[c]]) for c in moves]
        out[p] = moves[int(np.argmax(power))]
    return out


def state_bins(state: Mapping[str, Any]) -> tuple:
    """Coarse bins for the novelty policy: turn, Pokemon left, the actives' HP quarters and
    statuses."""
    slot = np.asarray(state["active.slot"]).astype(int)
    hp = np.asarray(state["team.hp"]).astype(float)
    maxhp = np.maximum(np.asarray(state["team.maxhp"]).astype(float), 1)
    status = np.asarray(state["team.status"])
    quarters = tuple(int(4 * hp[s, slot[s]] / maxhp[s, slot[s]]) if slot[s] >= 0 else -1
                     for s in (0, 1))
    statuses = tuple(int(status[s, slot[s]]) if slot[s] >= 0 else -1 for s in (0, 1))
    left = tuple(int(x) for x in np.asarray(state["side.pokemon_left"]))
    return (min(int(state["battle.turn"]) // 10, 10), left, quarters, statuses)
