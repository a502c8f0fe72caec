"""pokemon-gen1's fixed players (``agents.py``): the JAX and Showdown versions choose the same
along real Showdown battles run in lockstep with the JAX engine (the PettingZoo adapter's host
step), and the heuristic's decisions on hand-built positions whose answers follow from the type
chart. The engine's compiled step is shared with the other pokemon-gen1 tests of the process."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import agents as A
from envport.envs.pokemon_gen1 import engine as E
from envport.envs.pokemon_gen1 import env as V
from envport.envs.pokemon_gen1 import matchup as M
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T
from envport.pettingzoo import two_player


@functools.cache
def _jitted() -> tuple:
    pick = jax.jit(lambda s, r: A.pick_legal(r, V.masks_of(s.battle), jnp))
    return jax.jit(A.heuristic_jax), pick, two_player("pokemon-gen1").host_functions()[1]


@pytest.mark.parametrize("players", ["heuristic-random", "random-heuristic",
                                     "heuristic-heuristic"])
def test_jax_and_showdown_versions_choose_identically_in_lockstep(worker, players):
    heuristic, pick, host_step = _jitted()
    ref = V.ShowdownReference(worker)
    bridge = V.PokemonBridge()
    kinds = players.split("-")
    seed = {"heuristic-random": 11, "random-heuristic": 12, "heuristic-heuristic": 13}[players]
    rng = np.random.default_rng(seed)
    switches = {"voluntary": 0, "forced": 0}
    ref.reset(seed)
    state = bridge.to_jax(ref.get_state())
    for step in range(400):
        last = ref.battle.last or {}
        requests = last.get("requests") or {}
        showdown_state = ref.battle.state()
        jax_h = np.asarray(heuristic(state))
        r = rng.integers(0, A.RANDOM_MODULUS, 2).astype(np.int32)
        jax_r = np.asarray(pick(state, jnp.asarray(r)))
        action = np.zeros(2, np.int32)
        for p, side in enumerate(("p1", "p2")):
            h = A.heuristic_showdown(requests.get(side), showdown_state, p)
            rand = A.random_showdown(requests.get(side), int(r[p]))
            assert (int(jax_h[p]), int(jax_r[p])) == (h, rand), (players, step, side)
            action[p] = h if kinds[p] == "heuristic" else rand
            if h > E.SWITCH and h != E.NO_CHOICE:  # either player's heuristic choice
                moves_legal = V.masks_of(state.battle)[p, :4].any()
                switches["voluntary" if bool(moves_legal) else "forced"] += 1
        obs, _, done, _, _ = ref.step(action)
        state, joint = host_step(jax.random.key(0), state, jnp.asarray(action))
        want = ref.get_state()
        got = bridge.from_jax(state)
        assert [k for k in want if not np.array_equal(got[k], want[k])] == [], (players, step)
        np.testing.assert_array_equal(np.asarray(joint.obs), obs)
        if done:
            break
    assert done, f"{players}: no end in 400 steps"
    # both branches of the heuristic's switching were compared along this battle
    assert switches["forced"] > 0 and switches["voluntary"] > 0, switches


def _view(active: tuple[str, int, list[str], list[int]],
          bench: list[tuple[str, int, list[str], list[int]]], opponent: tuple[str, int],
          mask: list[int]) -> A.View:
    """A View from (species, level, moves, stats atk/def/spa/spd/spe) per own Pokemon."""
    mons = [active, *bench]
    n = len(mons)
    moves = np.zeros((A.N_POS, 4), np.int32)
    stats = np.zeros((A.N_POS, 5), np.int32)
    for i, (_, _, ms, st) in enumerate(mons):
        moves[i, : len(ms)] = [T.MOVE_IDS[m] for m in ms]
        stats[i] = st
    pad = [0] * (A.N_POS - n)
    m = np.zeros(E.N_CHOICES, bool)
    m[mask] = True
    return A.View(
        present=np.array([True] * n + [False] * len(pad)),
        species=np.array([T.SPECIES_IDS[s] for s, *_ in mons] + pad, np.int32),
        level=np.array([lv for _, lv, *_ in mons] + pad, np.int32),
        hp=np.array([150] * n + pad, np.int32), status=np.zeros(A.N_POS, np.int32),
        moves=moves, stats=stats, spe_stage=np.int32(0), mask=m,
        opp_present=np.bool_(True), opp_species=np.int32(T.SPECIES_IDS[opponent[0]]),
        opp_level=np.int32(opponent[1]), opp_status=np.int32(T.STATUS_NONE),
        opp_spe_stage=np.int32(0))


@functools.cache
def _jit_decide():
    return jax.jit(functools.partial(A.decide, xp=jnp))


def _both(view: A.View) -> int:
    """The numpy and the jitted JAX decision, which must agree."""
    here = int(A.decide(view, np))
    there = int(_jit_decide()(view))
    assert here == there
    return here


def test_the_heuristic_prefers_effective_damage_over_raw_power():
    # vs Gyarados (Water/Flying) Electric is 4x: Thunder Shock 40 x 4 x STAB beats Body Slam 85
    stats = [100, 100, 100, 100, 200]
    v = _view(("pikachu", 50, ["bodyslam", "thundershock"], stats), [], ("gyarados", 50),
              [0, 1])
    assert _both(v) == 1
    # vs Gengar (Ghost/Poison) Normal moves do nothing: Body Slam is never picked over Ember
    v = _view(("charmander", 50, ["bodyslam", "ember"], stats), [], ("gengar", 50), [0, 1])
    assert _both(v) == 1
    # a disabled (masked) best move is not chosen
    v = _view(("pikachu", 50, ["bodyslam", "thundershock"], stats), [], ("gyarados", 50), [0])
    assert _both(v) == 0


def test_the_heuristic_switches_out_of_a_hopeless_matchup():
    # Charmander's Fire and Normal moves are both 0.5x on Geodude (Rock/Ground); Squirtle's
    # Water Gun is 4x, and slow Geodude (base Speed 20) outspeeds nobody: switch to position 1.
    fast = [100, 100, 100, 100, 200]
    charmander = ("charmander", 50, ["ember", "scratch"], fast)
    squirtle = ("squirtle", 50, ["watergun", "tackle"], fast)
    pidgey = ("pidgey", 50, ["gust"], fast)  # Flying: 0.5x on Rock, no better candidate
    v = _view(charmander, [pidgey, squirtle], ("geodude", 50), [0, 1, 5, 6])
    assert _both(v) == E.SWITCH + 2  # `switch 3`: Squirtle is at request position 2
    # no acceptable candidate legal: stay and use the better 0.5x move (Ember, STAB)
    v = _view(charmander, [pidgey, squirtle], ("geodude", 50), [0, 1, 5])
    assert _both(v) == 0
    # a forced switch (no move legal) takes the best candidate; nothing legal: no choice
    v = _view(charmander, [pidgey, squirtle], ("geodude", 50), [5, 6])
    assert _both(v) == E.SWITCH + 2
    v = _view(charmander, [pidgey, squirtle], ("geodude", 50), [])
    assert _both(v) == E.NO_CHOICE


def test_the_heuristic_switches_when_outsped_and_knocked_out():
    # Neutral matchup (Pidgey's Normal Tackle on Mewtwo), but Mewtwo L100 (base Speed 130,
    # Special 154) outspeeds a slow Pidgey with 30 HP and would KO it with a Psychic STAB.
    slow = [50, 50, 50, 50, 50]
    v = _view(("pidgey", 20, ["tackle"], slow), [("snorlax", 100, ["bodyslam"],
                                                  [300, 300, 300, 300, 100])],
              ("mewtwo", 100), [0, 5])
    v = dataclasses.replace(v, hp=np.array([30, 500, 0, 0, 0, 0], np.int32))
    assert _both(v) == E.SWITCH + 1
    # Psychic's estimate on Pidgey: ((42 x 80 x 406 / 50) / 50 + 2) x 1.5 = 820 damage; with
    # 900 HP it survives and attacks
    v = dataclasses.replace(v, hp=np.array([900, 500, 0, 0, 0, 0], np.int32))
    assert _both(v) == 0


def test_random_legal_is_exactly_uniform_over_the_legal_choices():
    mask = np.zeros(E.N_CHOICES, bool)
    mask[[0, 2, 7]] = True
    assert int(A.pick_legal(np.int32(4), mask)) == 2  # 4 mod 3 = 1: the second legal choice
    r = np.arange(A.RANDOM_MODULUS, dtype=np.int32)
    for n in range(1, E.N_CHOICES + 1):
        m = np.zeros(E.N_CHOICES, bool)
        m[np.random.default_rng(n).choice(E.N_CHOICES, n, replace=False)] = True
        picks = A.pick_legal(r, np.broadcast_to(m, (len(r), E.N_CHOICES)))
        counts = np.bincount(picks, minlength=E.N_CHOICES)
        assert set(np.flatnonzero(counts)) == set(np.flatnonzero(m))
        assert (counts[m] == A.RANDOM_MODULUS // n).all()
    assert int(A.pick_legal(np.int32(5), np.zeros(E.N_CHOICES, bool))) == E.NO_CHOICE


def test_the_special_types_are_gen_1s():
    special = {T.TYPES[i] for i in np.flatnonzero(M.SPECIAL_TYPE)}
    assert special == {"Fire", "Water", "Grass", "Electric", "Ice", "Psychic", "Dragon"}
    assert S.TEAM_SIZE == A.N_POS
