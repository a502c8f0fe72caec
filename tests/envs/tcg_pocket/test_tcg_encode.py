"""The fixed-size state arrays: a state taken to arrays and back continues exactly as the
original, through whole games (so nothing that matters is lost in the encoding)."""

from __future__ import annotations

import copy

import numpy as np

from envport.envs.tcg_pocket import rules
from envport.envs.tcg_pocket.actions import decode
from envport.envs.tcg_pocket.agents import heuristic_action, random_action
from envport.envs.tcg_pocket.config import RulesConfig
from envport.envs.tcg_pocket.deck import random_deck
from envport.envs.tcg_pocket.encode import CARD_NAMES, get_state, set_state
from envport.envs.tcg_pocket.game import TcgPocketGame


def same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]) for k in a)


def test_round_trip_continues_like_the_original() -> None:
    kinds = set()
    for seed in range(12):
        g = TcgPocketGame(RulesConfig(retreat_discard_choice="player"))
        g.reset(seed, (random_deck(np.random.default_rng(seed)),
                       random_deck(np.random.default_rng(seed + 50))))
        choices = np.random.default_rng(seed)
        while not g.done:
            s = g.state
            arrays = get_state(s)
            twin = set_state(arrays, s.config, copy.deepcopy(s.rng))
            assert same(get_state(twin), arrays)
            kinds.update(d.kind for d in s.pending)
            p = s.to_act()
            a = (heuristic_action(g, p, choices) if choices.random() < 0.8
                 else random_action(g, p, choices))
            rules.apply(s, p, decode(a))
            rules.apply(twin, p, decode(a))
            assert same(get_state(twin), get_state(s)), (seed, s.turn, decode(a))
            assert twin.rng.tape == s.rng.tape
    assert {"setup", "promote"} <= kinds  # the queue was exercised, not only empty


def test_fixed_shapes_and_no_card_padding() -> None:
    g = TcgPocketGame()
    g.reset(0, (random_deck(np.random.default_rng(0)), random_deck(np.random.default_rng(1))))
    arrays = get_state(g.state)
    assert arrays["deck"].shape == (2, 20) and arrays["stack"].shape == (2, 4, 3)
    assert (arrays["hand"][0] > 0).sum() == 5 and (arrays["deck"][0] > 0).sum() == 15
    assert len(CARD_NAMES) == 232
    names = [CARD_NAMES[i - 1] for i in arrays["hand"][0] if i]
    assert names == g.state.players[0].hand


def test_round_trip_of_every_pending_choice() -> None:
    from tcg_helpers import act, coin, game, mon, roll, side

    cases = [  # (attacker, its energy, bench, opponent's bench, draws, kind)
        ("Seadra", {"Water": 3}, [], [mon("Pikachu"), mon("Ekans")], [roll()], "attack_target"),
        ("Moltres ex", {"Fire": 1}, [mon("Vulpix"), mon("Ponyta")], [],
         [coin(True), coin(True), coin(False), roll()], "zone_attach"),
        ("Zapdos", {"Lightning": 3}, [mon("Pikachu"), mon("Voltorb")], [], [roll()],
         "own_bench_damage"),
        ("Grapploct", {"Fighting": 3}, [], [mon("Pikachu"), mon("Ekans")], [roll()],
         "new_active"),
    ]
    for name, energy, bench, opp_bench, draws, kind in cases:
        s = game(side(mon(name, energy=energy), bench=bench),
                 side(mon("Snorlax"), bench=opp_bench), turn=3, draws=draws)
        act(s, "attack", 0)
        assert s.pending and s.pending[0].kind == kind
        twin = set_state(get_state(s), s.config, copy.deepcopy(s.rng))
        assert twin.pending == s.pending and twin.attack_open
        player = s.pending[0].player
        options = rules.decision_options(s, s.pending[0])
        act(s, "choose", options[-1], player=player)
        act(twin, "choose", options[-1], player=player)
        assert same(get_state(twin), get_state(s)), name
    s = game(side(mon("Ivysaur", energy={"Grass": 2, "Water": 1}), bench=[mon("Squirtle")]),
             side(mon("Snorlax")), turn=3)
    act(s, "retreat", 1)
    twin = set_state(get_state(s), s.config, copy.deepcopy(s.rng))
    assert twin.pending == s.pending and s.pending[0].data == {"bench": 1, "left": 2}
