"""Random-play games to the end with the invariants checked after every action, under the
default flags and under each alternative; and the card table's transcription."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from envport.envs.tcg_pocket import rules
from envport.envs.tcg_pocket.actions import MAX_HAND, N_ACTIONS
from envport.envs.tcg_pocket.agents import heuristic_action, random_action
from envport.envs.tcg_pocket.cards import load_table
from envport.envs.tcg_pocket.config import RulesConfig
from envport.envs.tcg_pocket.deck import random_deck
from envport.envs.tcg_pocket.game import TcgPocketGame
from envport.envs.tcg_pocket.transcribe import find_source

TABLE = load_table()
ALTERNATIVES = [
    RulesConfig(opening_hand_method="redraw_until_basic"), RulesConfig(first_player="p1"),
    RulesConfig(supporter_on_turn_1=True), RulesConfig(hand_limit=None),
    RulesConfig(hand_limit_applies_to_search=True), RulesConfig(turn_limit=12),
    RulesConfig(promotion_order="current_first"), RulesConfig(fossil_ko_points=0),
    RulesConfig(weakness_before_reduction=False), RulesConfig(confusion_tails="self_damage_30"),
    RulesConfig(retreat_discard_choice="random"), RulesConfig(allow_no_effect_plays=True),
]


def cards_of(pl: rules.Player) -> Counter:
    c = Counter(pl.deck + pl.hand + pl.discard)
    for _, p in pl.in_play():
        c.update(p.stack)
    return c


def check_invariants(g: TcgPocketGame, decks: tuple, points_before: list[int]) -> None:
    s = g.state
    for i, pl in enumerate(s.players):
        assert cards_of(pl) == Counter(decks[i].cards), "a card was created or lost"
        assert pl.points >= points_before[i]
        assert len(pl.hand) < MAX_HAND and len(pl.bench) == 3
        for slot, p in pl.in_play():
            # an attack waiting for a choice (a target, a switch) has not checked its Knock
            # Outs yet (specification 7: the effect text resolves, then Knock Outs)
            assert p.damage < rules.hp(p) or s.attack_open, "a Knocked Out Pokémon in play"
            assert slot == 0 or not p.conditions, "a Benched Pokémon has a Special Condition"
        if s.stage != "setup" and not s.over:
            assert pl.active is not None or any(d.player == i for d in s.pending)
    ko_points = [0, 0]
    for line in s.log:
        m = re.fullmatch(r"p(\d)'s (.+) is Knocked Out", line)
        if m:
            c = TABLE[m[2]]
            value = s.config.fossil_ko_points if c.kind == "fossil" else 2 if c.ex else 1
            ko_points[1 - int(m[1])] += value
    assert [pl.points for pl in s.players] == ko_points
    if s.over:
        assert g.action_mask(0).sum() == 0 and g.action_mask(1).sum() == 0
        won = [pl.points >= 3 or not s.players[1 - i].in_play()
               for i, pl in enumerate(s.players)]
        expected = -1 if all(won) or not any(won) else won.index(True)
        assert s.winner == expected
        if not any(won):
            assert s.turn == s.config.turn_limit
    else:
        p = g.to_act()
        assert g.action_mask(p).any(), "the player to act has no legal action"
        assert not g.action_mask(1 - p).any()
        obs = g.observe(p)
        assert "hand" in obs["me"] and "hand" not in obs["opponent"]


def play_checked(seed: int, config: RulesConfig) -> TcgPocketGame:
    choices = np.random.default_rng(seed)
    decks = (random_deck(np.random.default_rng(seed)),
             random_deck(np.random.default_rng(seed + 10_000)))
    g = TcgPocketGame(config)
    g.reset(seed, decks)
    steps = 0
    while not g.done:
        p = g.to_act()
        mask = g.action_mask(p)
        illegal = np.flatnonzero(~mask)
        bad = int(choices.choice(illegal))
        with pytest.raises(rules.IllegalAction):
            g.step(p, bad)
        # mostly the heuristic (games get won), a quarter random (odd corners get reached)
        a = (heuristic_action(g, p, choices) if choices.random() < 0.75
             else random_action(g, p, choices))
        assert mask[a]
        before = [pl.points for pl in g.state.players]
        g.step(p, a)
        check_invariants(g, decks, before)
        steps += 1
        assert steps < 5000
    return g


def test_random_games_default_flags() -> None:
    ends = Counter()
    for seed in range(40):
        g = play_checked(seed, RulesConfig())
        ends[g.state.end_reason.split(" (")[0]] += 1
    assert ends["points"] + ends["no Pokémon in play"] >= 10, ends  # games are won, not only
    assert sum(ends.values()) == 40                                   # drawn at the limit


@pytest.mark.parametrize("config", ALTERNATIVES, ids=lambda c: next(
    f"{k}={v}" for k, v in c.to_json().items() if v != getattr(RulesConfig(), k)))
def test_random_games_alternative_flags(config: RulesConfig) -> None:
    for seed in range(4):
        play_checked(100 + seed, config)


def test_random_decks_are_legal_and_varied() -> None:
    decks = [random_deck(np.random.default_rng(s)) for s in range(30)]
    assert len({d.cards for d in decks}) == 30
    assert {t for d in decks for t in d.energy_types} >= {"Grass", "Fire", "Water"}


def test_action_space_size() -> None:
    assert N_ACTIONS == 106


# ---------------------------------------------------------------- the card table
SOURCE = find_source()


@pytest.mark.skipif(SOURCE is None, reason="the shared A1 data file (shared/data/tcg) is not on "
                    "this machine; set ENVPORT_TCG_DATA to run the transcription check")
def test_card_table_is_the_transcription_of_the_source() -> None:
    done = subprocess.run([sys.executable, "-m", "envport.envs.tcg_pocket.transcribe",
                           "--check", "--source", str(SOURCE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_card_table_counts_match_the_data_readme() -> None:
    # shared/data/tcg/README.md: 225 distinct names; the spec adds 7 Promo-A Trainers
    assert len(TABLE.cards) == 225 + 7
    printings = sum(len(c.ids) for c in TABLE.cards.values())
    assert printings == 286 + 7
    assert sum(len(c.ids) for c in TABLE.cards.values() if c.is_pokemon) == 267
    assert sum(1 for c in TABLE.cards.values() if c.is_pokemon and c.ex) == 15
    assert [TABLE.by_id[f"p-a-00{i}"] for i in range(1, 8)] == [
        "Potion", "X Speed", "Hand Scope", "Pokédex", "Poké Ball", "Red Card",
        "Professor's Research"]


def test_every_ability_card_is_unsupported_and_named() -> None:
    with_ability = [c for c in TABLE.cards.values() if c.ability]
    assert len({c.ability for c in with_ability}) == 13  # the data README: 13 abilities
    assert all(not c.supported and any("ability" in u for u in c.unsupported)
               for c in with_ability)


def test_text_board_hides_the_opponents_hand() -> None:
    from tcg_helpers import game, mon, side

    from envport.envs.tcg_pocket.render import render

    s = game(side(mon("Pikachu", energy={"Lightning": 2}, damage=20, conditions={"poisoned"}),
                  hand=["Potion"]),
             side(mon("Snorlax"), hand=["Misty", "Erika"]), turn=3)
    text = render(s, viewer=0)
    assert "Pikachu 40/60 HP [LL] (poisoned)" in text and "Potion" in text
    assert "Misty" not in text and "2 cards" in text
    assert "Misty, Erika" in render(s)
