"""The engine behind envport's Reference protocol: reset/step/get_state/set_state/tape, and
observations that hide the opponent's hand and both decks."""

from __future__ import annotations

import numpy as np
import pytest

from envport.core.reference import Reference
from envport.envs.tcg_pocket.encode import get_state, observation_arrays
from envport.envs.tcg_pocket.reference import MAX_TAPE, TcgPocketReference
from envport.envs.tcg_pocket.rng import Rng, mix32


def test_protocol_and_a_whole_game() -> None:
    ref = TcgPocketReference()
    assert isinstance(ref, Reference)
    obs = ref.reset(3)
    size = obs.shape
    rng = np.random.default_rng(0)
    done, steps, reward = False, 0, 0.0
    while not done:
        legal = np.flatnonzero(ref.action_mask())
        obs, reward, done, truncated, info = ref.step(int(rng.choice(legal)))
        assert obs.shape == size and not truncated
        tape = ref.tape()
        assert tape["kind"].shape == tape["n"].shape == tape["value"].shape == (MAX_TAPE,)
        used = slice(0, min(int(tape["count"]), MAX_TAPE))
        assert np.all((tape["value"][used] >= 0) & (tape["value"][used] < tape["n"][used]))
        assert np.all(tape["kind"][used] >= 0) and np.all(tape["kind"][used.stop:] == -1)
        steps += 1
    assert reward in (-1.0, 0.0, 1.0) and info["to_act"] is None and steps > 20


def test_set_state_then_step_matches() -> None:
    import copy

    a, b = TcgPocketReference(), TcgPocketReference()
    a.reset(5)
    b.reset(99)
    rng = np.random.default_rng(1)
    for _ in range(30):
        a.step(int(rng.choice(np.flatnonzero(a.action_mask()))))
    b.game.rng = copy.deepcopy(a.game.rng)  # the same generator position: the same draws
    b.set_state(a.get_state())
    for _ in range(40):
        if a.game.done:
            break
        assert np.array_equal(a.action_mask(), b.action_mask())
        action = int(rng.choice(np.flatnonzero(a.action_mask())))
        out_a, out_b = a.step(action), b.step(action)
        assert np.array_equal(out_a[0], out_b[0]) and out_a[1:4] == out_b[1:4]
        assert all(np.array_equal(a.tape()[k], b.tape()[k]) for k in ("kind", "n", "value"))
    assert all(np.array_equal(x, y) for x, y in zip(a.get_state().values(),
                                                    b.get_state().values(), strict=True))


def test_observation_hides_the_opponents_hand_and_the_decks() -> None:
    ref = TcgPocketReference()
    ref.reset(7)
    state = get_state(ref.game.state)
    obs0 = observation_arrays(state, 0)
    assert np.array_equal(obs0["hand"][0], state["hand"][0])  # one's own hand
    assert not obs0["hand"][1].any() and not obs0["deck"].any()
    assert list(obs0["hand_size"]) == [5, 5] and list(obs0["deck_size"]) == [15, 15]
    changed = {k: np.array(v) for k, v in state.items()}
    changed["hand"][1] = np.roll(changed["hand"][1], 1)  # the opponent's hand, reordered
    changed["deck"][0] = np.roll(changed["deck"][0], 3)  # one's own deck order: hidden too
    same = observation_arrays(changed, 0)
    assert all(np.array_equal(obs0[k], same[k]) for k in obs0)


def test_state_carries_the_generator_so_set_state_replays_the_draws() -> None:
    a, b = TcgPocketReference(pool="basic"), TcgPocketReference(pool="basic")
    a.reset(11)
    b.reset(12)
    rng = np.random.default_rng(2)
    for _ in range(25):
        a.step(int(rng.choice(np.flatnonzero(a.action_mask()))))
    start = a.get_state()
    b.set_state(start)  # no generator copied by hand: the state's `rng` field is enough
    for _ in range(60):
        if a.game.done:
            break
        action = int(rng.choice(np.flatnonzero(a.action_mask())))
        a.step(action)
        b.step(action)
        assert all(np.array_equal(a.tape()[k], b.tape()[k]) for k in a.tape())
    assert all(np.array_equal(a.get_state()[k], b.get_state()[k]) for k in start)


def test_basic_pool_decks_hold_plain_basics_only() -> None:
    from envport.envs.tcg_pocket.cards import load_table

    table = load_table()
    ref = TcgPocketReference(pool="basic")
    for seed in range(5):
        ref.reset(seed)
        for pl in ref.game.state.players:  # type: ignore[union-attr]
            for name in pl.deck + pl.hand:
                c = table[name]
                assert c.is_basic and all(x.effect is None for x in c.attacks)
    with pytest.raises(ValueError, match="pool"):
        TcgPocketReference(pool="nope")


def test_generator_words_are_the_documented_hash() -> None:
    # mix32 written out independently (lowbias32): x ^= x >> 16; x *= 0x7feb352d; ...
    def lowbias32(x: int) -> int:
        x ^= x >> 16
        x = (x * 0x7FEB352D) % 2**32
        x ^= x >> 15
        x = (x * 0x846CA68B) % 2**32
        return x ^ (x >> 16)

    assert mix32(0) == 0 and mix32(1) == lowbias32(1) and mix32(2**32 - 1) == lowbias32(
        2**32 - 1)
    r = Rng.at(np.asarray([12345, 7], np.uint32))
    assert r.randint(6) == lowbias32(12345 ^ lowbias32(7)) % 6
    assert list(r.state_array()) == [12345, 8]


def test_plain_pool_decks_hold_plain_lines_with_evolutions() -> None:
    from envport.envs.tcg_pocket.cards import load_table
    from envport.envs.tcg_pocket.deck import plain_pokemon

    table = load_table()
    plain = set(plain_pokemon(table))
    ref = TcgPocketReference(pool="plain")
    evolutions = 0
    for seed in range(6):
        ref.reset(seed)
        for pl in ref.game.state.players:  # type: ignore[union-attr]
            cards = pl.deck + pl.hand
            assert len(cards) == 20 and set(cards) <= plain
            for name in cards:  # every evolution's line is in the deck
                c = table[name]
                evolutions += c.stage > 0
                assert c.evolves_from is None or c.evolves_from in cards
    assert evolutions > 0


def test_status_pool_decks_hold_effect_lines() -> None:
    from envport.envs.tcg_pocket.cards import load_table
    from envport.envs.tcg_pocket.deck import STATUS_TEMPLATES, plain_pokemon, status_pokemon

    table = load_table()
    pool, plain = set(status_pokemon(table)), set(plain_pokemon(table))
    assert plain < pool
    for name in pool - plain:  # every extra card has an attack of a status template
        assert table[name].ability is None
        assert any(a.effect and a.effect["template"] in STATUS_TEMPLATES
                   for a in table[name].attacks)
    assert {"Venomoth", "Articuno", "Lickitung", "Raichu", "Golem"} <= pool - plain
    assert not {"Articuno ex", "Seadra", "Butterfree"} & pool  # bench damage, snipe, Ability
    ref = TcgPocketReference(pool="status")
    for seed in range(6):
        ref.reset(seed)
        for pl in ref.game.state.players:  # type: ignore[union-attr]
            cards = pl.deck + pl.hand
            assert len(cards) == 20 and set(cards) <= pool
            assert set(cards) - plain  # the effect lines are tried first
            for name in cards:
                c = table[name]
                assert c.evolves_from is None or c.evolves_from in cards
