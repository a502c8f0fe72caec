"""The JAX battle state and the bridge from Showdown's state, on real Showdown battles.

Random-policy battles run through the worker (random-battle teams, and teams of random Gen 1
moves of all 165, so that every volatile appears); after every turn the export (``toJSON``) goes
through :func:`bridge.from_showdown` and back to a comparable dict, which must equal the one read
directly from the JSON, and that one must agree with the worker's compact ``state`` (Showdown's
live objects). Skipped (saying so) only where Node or the pinned package is missing.
"""

from __future__ import annotations

import copy
import itertools
import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import bridge as B
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T
from envport.envs.pokemon_gen1.reference import (
    ShowdownWorker,
    gen1_set,
    legal_choices,
    seed_words,
)

_IDS = itertools.count()
ALL_MOVES = sorted(m for m in T.MOVES if m != "struggle")


def test_the_state_is_under_one_kib_and_has_its_dtypes():
    state = S.empty()
    S.check_dtypes(state)
    one = S.nbytes(state)
    assert 0 < one <= 1024  # the limit per battle
    batch = S.stack([state, state, state])
    S.check_dtypes(batch, (3,))
    assert S.nbytes(batch) == 3 * one


def test_the_state_is_a_pytree_jax_can_carry():
    state = S.to_jax(S.empty())
    out = jax.jit(lambda s: s)(state)
    assert jax.tree_util.tree_structure(out) == jax.tree_util.tree_structure(state)
    batch = S.to_jax(S.stack([S.empty(), S.empty()]))
    hp = jax.vmap(lambda s: s.team.hp.max())(batch)
    assert hp.shape == (2,) and hp.dtype == jnp.int16
    with pytest.raises(ValueError, match=r"team\.hp"):
        S.check_dtypes(S.Battle(**{**vars(S.empty()),
                                   "team": S.Team(**{**vars(S.empty().team),
                                                     "hp": np.zeros((2, 6), np.int32)})}))


def _random_team(w: ShowdownWorker, rng: random.Random) -> str:
    species = rng.sample(sorted(T.SPECIES_IDS), rng.randint(1, 6))
    return w.pack_team([gen1_set(s, rng.sample(ALL_MOVES, rng.randint(1, 4)),
                                 level=rng.randint(1, 100)) for s in species])


def _battles(w: ShowdownWorker, count: int, max_turns: int = 300):
    """Yields (battle, turn, export, compact state) after every turn of random battles."""
    for b in range(count):
        rng = random.Random(1000 + b)
        if b % 2:
            teams = (_random_team(w, rng), _random_team(w, rng))
        else:
            t1, t2 = w.generate_teams([seed_words(b, 1), seed_words(b, 2)])
            teams = (t1, t2)
        bid = f"bridge-{next(_IDS)}"
        r = w.create(bid, [rng.randint(0, 0xFFFF) for _ in range(4)], *teams)
        try:
            for turn in range(max_turns + 1):
                yield b, turn, w.export(bid), w.state(bid)
                if r["ended"]:
                    break
                action = tuple(rng.choice(c) if (c := legal_choices(r["requests"][s], True))
                               else None for s in ("p1", "p2"))
                r = w.choose(bid, *action)
        finally:
            w.destroy(bid)


def test_showdown_states_round_trip_exactly(worker):
    seen_volatiles: set[str] = set()
    states = 0
    for b, turn, export, compact in _battles(worker, 24):
        view = B.comparable_from_showdown(export)
        state = B.from_showdown(export)
        S.check_dtypes(state)
        diff = B.differences(B.comparable(state), view)
        assert not diff, f"battle {b} turn {turn}: JAX state != Showdown: {diff}"
        diff = B.compact_differences(view, compact)
        assert not diff, f"battle {b} turn {turn}: export reading != live state: {diff}"
        for side in view["sides"]:
            if side["active_pokemon"]:
                seen_volatiles |= set(side["active_pokemon"]["volatiles"])
        states += 1
    assert states > 1000
    # the battles reach most of the layout's volatiles (the rest are checked by the same code)
    assert len(seen_volatiles) >= 12, sorted(seen_volatiles)


def test_a_stacked_batch_of_real_states_decodes_per_battle(worker):
    exports = [e for _, turn, e, _ in _battles(worker, 2, max_turns=30) if turn % 10 == 5]
    batch = S.stack([B.from_showdown(e) for e in exports])
    for i, e in enumerate(exports):
        assert B.comparable(S.index(batch, i)) == B.comparable_from_showdown(e)


def _export_with(worker, predicate):
    for _, _, export, _ in _battles(worker, 40, max_turns=200):
        if predicate(export):
            return export
    pytest.fail("no battle reached the state this test needs")


def _active(export: dict, side: int = 0) -> dict:
    s = export["sides"][side]
    pos = B._pokemon_ref(s["active"][0])[1]
    return s["pokemon"][pos]


def test_a_changed_field_shows_in_the_comparison(worker):
    export = _export_with(worker, lambda e: e["turn"] >= 3)
    edited = copy.deepcopy(export)
    hp = _active(export)["hp"]
    _active(edited)["hp"] = hp - 1 if hp > 1 else hp + 1
    _active(edited)["boosts"]["spe"] = 3 if _active(export)["boosts"]["spe"] != 3 else 2
    diff = B.differences(B.comparable(B.from_showdown(edited)),
                         B.comparable_from_showdown(export))
    assert any(".hp:" in d for d in diff) and any("boosts.spe" in d for d in diff)


def test_what_the_layout_cannot_hold_raises(worker):
    export = _export_with(worker, lambda e: e["turn"] >= 2)
    unknown = copy.deepcopy(export)
    _active(unknown)["volatiles"]["foresight"] = {"id": "foresight"}
    with pytest.raises(ValueError, match="foresight"):
        B.from_showdown(unknown)
    big = copy.deepcopy(export)
    _active(big)["hp"] = 40000
    with pytest.raises(ValueError, match="does not fit int16"):
        B.from_showdown(big)
    extra = copy.deepcopy(export)
    _active(extra)["volatiles"]["confusion"] = {"id": "confusion", "time": 2, "turns": 1}
    with pytest.raises(ValueError, match="turns"):
        B.from_showdown(extra)
    bench = copy.deepcopy(export)
    side = bench["sides"][0]
    active_pos = B._pokemon_ref(side["active"][0])[1]
    others = [p for i, p in enumerate(side["pokemon"]) if i != active_pos]
    if others:
        others[0]["boosts"]["atk"] = 1
        with pytest.raises(ValueError, match="not active"):
            B.from_showdown(bench)
