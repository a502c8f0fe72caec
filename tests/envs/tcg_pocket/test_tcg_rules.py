"""Rule tests written from the specification (shared/specs/tcg-pocket.md); expected values are
the specification's numbers and the printed card facts, never the engine's own output."""

from __future__ import annotations

import numpy as np
import pytest
from tcg_helpers import act, coin, game, mon, roll, side, why

from envport.envs.tcg_pocket import rules
from envport.envs.tcg_pocket.cards import ENERGY_INDEX
from envport.envs.tcg_pocket.config import RulesConfig
from envport.envs.tcg_pocket.deck import Deck, validate_deck
from envport.envs.tcg_pocket.game import TcgPocketGame
from envport.envs.tcg_pocket.rng import ReplayRng, Rng

G, W, F, L = (ENERGY_INDEX[t] for t in ("Grass", "Water", "Fire", "Lightning"))
BASIC_DECK = ["Bulbasaur", "Bulbasaur", "Ivysaur", "Ivysaur", "Venusaur", "Venusaur",
              "Exeggcute", "Exeggcute", "Tangela", "Tangela", "Potion", "Potion", "X Speed",
              "X Speed", "Poké Ball", "Poké Ball", "Professor's Research",
              "Professor's Research", "Erika", "Erika"]


def deck(cards: list[str] = BASIC_DECK, types: tuple[str, ...] = ("Grass",)) -> Deck:
    return validate_deck(cards, types)


# ---------------------------------------------------------------- 3. setup
@pytest.mark.parametrize("method", ["basic_first", "redraw_until_basic"])
def test_opening_hand_has_five_cards_and_a_basic(method: str) -> None:
    cards = ["Bulbasaur", "Potion", "Potion", "X Speed", "X Speed", "Poké Ball", "Poké Ball",
             "Red Card", "Red Card", "Hand Scope", "Hand Scope", "Pokédex", "Pokédex",
             "Professor's Research", "Professor's Research", "Erika", "Erika", "Misty", "Misty",
             "Giovanni"]
    for seed in range(20):  # one Basic among 20 cards: a plain draw would often miss it
        g = TcgPocketGame(RulesConfig(opening_hand_method=method))
        g.reset(seed, (deck(cards), deck(cards)))
        for pl in g.state.players:
            assert len(pl.hand) == 5 and "Bulbasaur" in pl.hand
            assert len(pl.deck) == 15


def test_basic_first_picks_the_basic_then_shuffles_the_rest() -> None:
    d = deck()
    basics = [i for i, n in enumerate(d.cards) if n in ("Bulbasaur", "Exeggcute", "Tangela")]
    # pick the 3rd Basic in deck order, shuffle 19 cards (18 swaps, all "j = i"), coin, ...
    tape = [("pick", len(basics), 2)] + [("shuffle", i + 1, i) for i in range(18, 0, -1)]
    tape += [("pick", len(basics), 0)] + [("shuffle", i + 1, i) for i in range(18, 0, -1)]
    tape += [coin(False)]
    g = TcgPocketGame()
    g.reset(0, (d, d), rng=ReplayRng(tape))
    rest = [n for i, n in enumerate(d.cards) if i != basics[2]]
    assert g.state.players[0].hand == [d.cards[basics[2]], *rest[:4]]
    assert g.state.first == 1  # tails: player 1 starts


def _setup_game(first_heads: bool = True) -> tuple[TcgPocketGame, list]:
    d = deck()
    g = TcgPocketGame()
    g.reset(3, (d, d))
    return g, list(g.rng.tape)


def test_setup_places_basics_only_and_hides_them_until_both_are_done() -> None:
    g, _ = _setup_game()
    p0 = g.state.players[0]
    assert g.to_act() == 0 and g.state.stage == "setup"
    assert g.why_illegal(0, 0) is not None  # end before an Active is placed
    non_basic = [i for i, n in enumerate(p0.hand) if n not in ("Bulbasaur", "Exeggcute",
                                                               "Tangela")]
    basic = [i for i, n in enumerate(p0.hand) if n in ("Bulbasaur", "Exeggcute", "Tangela")]
    if non_basic:
        assert "not a Basic" in g.why_illegal(0, 14 + non_basic[0] * 4)
    g.step(0, 14 + basic[0] * 4)
    assert g.observe(0)["me"]["active"] is not None
    assert g.observe(1)["opponent"]["active"] is None  # hidden during setup
    g.step(0, 0)
    assert g.to_act() == 1
    p1 = g.state.players[1]
    b1 = [i for i, n in enumerate(p1.hand) if n in ("Bulbasaur", "Exeggcute", "Tangela")]
    g.step(1, 14 + b1[0] * 4)
    g.step(1, 0)
    assert g.state.stage == "main" and g.state.turn == 1
    assert g.observe(1)["opponent"]["active"]["name"] == p0.active.name
    assert g.state.current == g.state.first
    assert g.observe(1)["opponent"].get("hand") is None  # the opponent's hand stays hidden
    assert g.observe(1)["opponent"]["hand_size"] == len(g.state.players[0].hand)


def test_first_player_coin_and_fixed_flag() -> None:
    firsts = set()
    for seed in range(12):
        g = TcgPocketGame()
        g.reset(seed, (deck(), deck()))
        firsts.add(g.state.first)
    assert firsts == {0, 1}
    for seed in range(4):
        g = TcgPocketGame(RulesConfig(first_player="p1"))
        g.reset(seed, (deck(), deck()))
        assert g.state.first == 0
        assert all(d.kind != "coin" for d in g.rng.tape)


# ---------------------------------------------------------------- 4. energy zone, first turn
def test_energy_zone_turn_one_and_rotation() -> None:
    s = game(side(mon("Bulbasaur"), nxt="Water", types=("Grass", "Water")),
             side(mon("Bulbasaur"), nxt="Grass", types=("Grass", "Water")),
             turn=0, current=1, draws=[roll(2, 0), roll(2, 1)])
    s.stage = "next_turn"
    rules.advance(s)
    p0, p1 = s.players
    assert s.turn == 1 and s.current == 0
    assert p0.energy_current is None and p0.energy_next == "Water"  # no Energy on turn 1
    assert why(s, "attach", 0) is not None
    act(s, "end")
    assert s.turn == 2
    assert p1.energy_current == "Grass" and p1.energy_next == "Grass"  # rolled value 0
    act(s, "attach", 0)
    assert p1.active.energy[G] == 1
    assert "already attached" in why(s, "attach", 0)
    act(s, "end")
    assert p0.energy_current == "Water" and p0.energy_next == "Water"  # rolled value 1


def test_unattached_energy_is_lost_at_the_end_of_the_turn() -> None:
    s = game(side(mon("Bulbasaur"), current="Grass"), side(mon("Bulbasaur")), turn=3,
             draws=[roll()])
    act(s, "end")
    assert s.players[0].energy_current is None


@pytest.mark.parametrize("allowed", [False, True])
def test_supporter_on_turn_one_flag(allowed: bool) -> None:
    s = game(side(mon("Bulbasaur"), hand=["Professor's Research"]), side(mon("Bulbasaur")),
             turn=1, config=RulesConfig(supporter_on_turn_1=allowed))
    assert (why(s, "play", 0) is None) is allowed
    s.turn = 2
    assert why(s, "play", 0) is None  # the second player's first turn: allowed


def test_one_supporter_per_turn_items_unlimited() -> None:
    s = game(side(mon("Bulbasaur", damage=50), hand=["Professor's Research", "Erika",
                                                      "Potion", "Potion"]),
             side(mon("Bulbasaur")), turn=3)
    act(s, "play", 0)
    assert "one Supporter" in why(s, "play", 0, 0)  # Erika is now at index 0
    act(s, "play", 1)
    act(s, "play", 1)
    assert s.players[0].active.damage == 10


# ---------------------------------------------------------------- 5. evolution
def test_no_evolution_on_a_players_first_turn() -> None:
    for turn in (1, 2):
        s = game(side(mon("Bulbasaur"), hand=["Ivysaur"]), side(mon("Bulbasaur")), turn=turn,
                 current=turn - 1)
        s.players[s.current].hand = ["Ivysaur"]
        s.players[s.current].active = mon("Bulbasaur")
        assert "first turn" in why(s, "play", 0, 0)


def test_evolution_timing_and_what_it_keeps() -> None:
    s = game(side(mon("Bulbasaur", energy={"Grass": 2}, damage=30,
                      conditions={"poisoned", "asleep"}),
                  bench=[mon("Bulbasaur", entered=3)], hand=["Ivysaur", "Ivysaur", "Venusaur"]),
             side(mon("Bulbasaur")), turn=3)
    assert "entered play this turn" in why(s, "play", 0, 1)
    act(s, "play", 0, 0)
    a = s.players[0].active
    assert a.stack == ["Bulbasaur", "Ivysaur"] and a.damage == 30 and a.energy[G] == 2
    assert a.conditions == set()
    assert "evolved this turn" in why(s, "play", 1, 0)  # Venusaur onto the new Ivysaur
    assert "does not evolve" in why(s, "play", 0, 0)  # Ivysaur onto Ivysaur


def test_stage_two_needs_the_stage_one() -> None:
    s = game(side(mon("Bulbasaur"), hand=["Venusaur"]), side(mon("Bulbasaur")), turn=5)
    assert "does not evolve" in why(s, "play", 0, 0)


def test_fossil_is_a_basic_on_the_bench_and_evolves() -> None:
    s = game(side(mon("Bulbasaur"), hand=["Helix Fossil", "Omanyte"]), side(mon("Bulbasaur")),
             turn=3, draws=[roll(), roll()])
    act(s, "play", 0)
    fossil = s.players[0].bench[0]
    assert fossil.name == "Helix Fossil" and rules.hp(fossil) == 40
    assert "entered play this turn" in why(s, "play", 0, 1)
    act(s, "end")
    act(s, "end")
    act(s, "play", 0, 1)
    assert s.players[0].bench[0].stack == ["Helix Fossil", "Omanyte"]


def test_discarding_a_fossil_gives_no_points() -> None:
    s = game(side(mon("Helix Fossil"), bench=[mon("Bulbasaur")]), side(mon("Bulbasaur")),
             turn=3)
    act(s, "discard", 0)
    assert s.players[0].active.name == "Bulbasaur"  # the only Benched Pokémon is promoted
    assert s.players[1].points == 0 and s.players[0].discard == ["Helix Fossil"]


# ---------------------------------------------------------------- 6. retreat
def test_retreat_pays_the_cost_moves_and_clears_conditions() -> None:
    s = game(side(mon("Ivysaur", energy={"Grass": 2, "Water": 1}, conditions={"poisoned"}),
                  bench=[mon("Bulbasaur")]), side(mon("Bulbasaur")), turn=3)
    act(s, "retreat", 1)
    assert s.pending and s.pending[0].kind == "retreat_energy"  # two types: the player chooses
    assert why(s, "energy", F) is not None
    act(s, "energy", W)  # the second Energy can only be a Grass: taken without asking
    p0 = s.players[0]
    assert p0.active.name == "Bulbasaur" and p0.bench[0].name == "Ivysaur"
    assert p0.bench[0].energy[G] == 1 and p0.bench[0].energy[W] == 0
    assert p0.bench[0].conditions == set()
    assert "already retreated" in why(s, "retreat", 1)


def test_retreat_random_discard_flag_draws_the_energy() -> None:
    s = game(side(mon("Bulbasaur", energy={"Grass": 1, "Water": 1}), bench=[mon("Squirtle")]),
             side(mon("Bulbasaur")), turn=3,
             config=RulesConfig(retreat_discard_choice="random"), draws=[("pick", 2, 1)])
    act(s, "retreat", 1)
    assert s.players[0].bench[0].energy[G] == 1 and s.players[0].bench[0].energy[W] == 0


@pytest.mark.parametrize("condition", ["asleep", "paralyzed"])
def test_asleep_or_paralyzed_cannot_retreat_or_attack(condition: str) -> None:
    s = game(side(mon("Bulbasaur", energy={"Grass": 2}, conditions={condition}),
                  bench=[mon("Bulbasaur")]), side(mon("Bulbasaur")), turn=3)
    assert "cannot retreat" in why(s, "retreat", 1)
    assert why(s, "attack", 0) is not None


def test_x_speed_lowers_the_cost_not_below_zero() -> None:
    s = game(side(mon("Bulbasaur"), bench=[mon("Squirtle")], hand=["X Speed", "X Speed"]),
             side(mon("Bulbasaur")), turn=3)
    assert "costs 1" in why(s, "retreat", 1)
    act(s, "play", 0)
    act(s, "play", 0)
    assert rules.retreat_cost(s.players[0]) == 0
    act(s, "retreat", 1)
    assert s.players[0].active.name == "Squirtle"


def test_fossil_cannot_retreat() -> None:
    s = game(side(mon("Old Amber"), bench=[mon("Bulbasaur")]), side(mon("Bulbasaur")), turn=3)
    assert "fossil" in why(s, "retreat", 1)


# ---------------------------------------------------------------- 7. damage and weakness
def _attack(attacker: object, defender: object, draws: list | None = None,
            config: RulesConfig | None = None, **me: object) -> object:
    s = game(side(attacker, **me), side(defender, bench=[mon("Rattata")]), turn=3,
             config=config, draws=(draws or []) + [roll()])
    act(s, "attack", 0)
    return s


def test_weakness_adds_twenty() -> None:
    s = _attack(mon("Charmander", energy={"Fire": 1}), mon("Bulbasaur"))  # Ember 30, Grass
    assert s.players[1].active.damage == 30 + 20
    s = _attack(mon("Bulbasaur", energy={"Grass": 2}), mon("Squirtle"))  # 40, no weakness
    assert s.players[1].active.damage == 40


def test_weakness_needs_damage_and_is_added_once_to_x_attacks() -> None:
    # Jolteon (Lightning): Pin Missile, 4 coins, 40 per heads
    s = _attack(mon("Jolteon", energy={"Lightning": 2}), mon("Snorlax"),
                draws=[coin(True), coin(True), coin(False), coin(False)])
    assert s.players[1].active.damage == 80  # Snorlax is weak to Fighting
    s = _attack(mon("Jolteon", energy={"Lightning": 2}), mon("Lapras"),
                draws=[coin(True), coin(False), coin(False), coin(False)])
    assert s.players[1].active.damage == 40 + 20  # Lapras is weak to Lightning: once
    s = _attack(mon("Jolteon", energy={"Lightning": 2}), mon("Lapras"),
                draws=[coin(False)] * 4)
    assert s.players[1].active.damage == 0  # no damage, no Weakness


def test_giovanni_and_blaine_bonuses() -> None:
    s = game(side(mon("Magmar", energy={"Fire": 2}), hand=["Giovanni"]),
             side(mon("Snorlax")), turn=3, draws=[roll()])
    act(s, "play", 0)
    act(s, "attack", 0)
    assert s.players[1].active.damage == 50 + 10
    s = game(side(mon("Magmar", energy={"Fire": 2}), hand=["Blaine"]),
             side(mon("Snorlax")), turn=3, draws=[roll()])
    act(s, "play", 0)
    act(s, "attack", 0)
    assert s.players[1].active.damage == 50 + 30
    s = game(side(mon("Ponyta", energy={"Fire": 1}), hand=["Blaine"]),
             side(mon("Snorlax")), turn=3, draws=[roll()])
    act(s, "play", 0)
    act(s, "attack", 0)
    assert s.players[1].active.damage == 20  # Blaine: Ninetales, Rapidash, Magmar only


def test_attack_cost_typed_and_colorless() -> None:
    s = game(side(mon("Bulbasaur", energy={"Water": 2})), side(mon("Squirtle")), turn=3)
    assert "needs" in why(s, "attack", 0)  # Vine Whip needs a Grass
    s.players[0].active.energy = [0] * 8
    s.players[0].active.energy[G] = 1
    assert "needs" in why(s, "attack", 0)  # ... and one more of any type
    s.players[0].active.energy[W] = 1
    assert why(s, "attack", 0) is None


# ---------------------------------------------------------------- 9.1 conditions and Checkup
def test_checkup_poison_and_burn_damage() -> None:
    s = game(side(mon("Snorlax", conditions={"poisoned", "burned"})), side(mon("Snorlax")),
             turn=3, draws=[coin(False), roll()])
    act(s, "end")
    assert s.players[0].active.damage == 10 + 20
    assert s.players[0].active.conditions == {"poisoned", "burned"}  # tails: still Burned


def test_checkup_order_poison_burn_sleep_paralysis() -> None:
    # both Actives: burn coins (current first), then sleep coins; heads removes each
    s = game(side(mon("Snorlax", conditions={"burned", "asleep"})),
             side(mon("Snorlax", conditions={"burned", "poisoned"})), turn=3,
             draws=[coin(True), coin(False), coin(True), roll()])
    act(s, "end")
    a0, a1 = s.players[0].active, s.players[1].active
    # by condition: p0's burn coin (heads), p1's burn coin (tails), p0's sleep coin (heads);
    # by player instead, the third coin would have been p1's burn coin
    assert a0.conditions == set()
    assert a1.conditions == {"burned", "poisoned"}
    assert a0.damage == 20 and a1.damage == 30
    kinds = [d.kind for d in s.rng.tape]
    assert kinds == ["coin", "coin", "coin", "energy"]


def test_sleep_coin_heads_wakes() -> None:
    s = game(side(mon("Snorlax", conditions={"asleep"})), side(mon("Snorlax")), turn=3,
             draws=[coin(True), roll()])
    act(s, "end")
    assert s.players[0].active.conditions == set()


def test_paralysis_lasts_exactly_the_owners_turn() -> None:
    s = game(side(mon("Pincurchin", energy={"Lightning": 2})), side(mon("Snorlax")), turn=3,
             draws=[coin(True), roll(), roll()])
    act(s, "attack", 0)  # heads: Paralyzed
    defender = s.players[1].active
    assert "paralyzed" in defender.conditions  # the Checkup after the attacker's turn keeps it
    assert s.current == 1 and why(s, "attack", 0) is not None
    act(s, "end")
    assert defender.conditions == set()


def test_asleep_paralyzed_confused_replace_each_other() -> None:
    p = mon("Snorlax", conditions={"poisoned", "asleep"})
    rules.add_condition(p, "paralyzed")
    assert p.conditions == {"poisoned", "paralyzed"}
    rules.add_condition(p, "confused")
    rules.add_condition(p, "burned")
    assert p.conditions == {"poisoned", "confused", "burned"}


@pytest.mark.parametrize("tails", ["nothing", "self_damage_30"])
def test_confusion_tails(tails: str) -> None:
    s = _attack(mon("Bulbasaur", energy={"Grass": 2}, conditions={"confused"}), mon("Snorlax"),
                draws=[coin(False)], config=RulesConfig(confusion_tails=tails))
    assert s.players[1].active.damage == 0
    assert s.players[0].active.damage == (30 if tails == "self_damage_30" else 0)
    assert s.current == 1  # the turn ended
    s = _attack(mon("Bulbasaur", energy={"Grass": 2}, conditions={"confused"}), mon("Snorlax"),
                draws=[coin(True)], config=RulesConfig(confusion_tails=tails))
    assert s.players[1].active.damage == 40


# ---------------------------------------------------------------- 9.2 Knock Outs and points
def test_knock_out_scores_one_or_two_for_ex_and_promotes() -> None:
    s = _attack(mon("Bulbasaur", energy={"Grass": 2}), mon("Rattata"))
    p1 = s.players[1]
    assert s.players[0].points == 1 and "Rattata" in p1.discard
    assert p1.active.name == "Rattata"  # the one Benched Pokémon, promoted
    s = _attack(mon("Mewtwo", energy={"Psychic": 4}), mon("Pikachu ex", damage=100))
    assert s.players[0].points == 2


@pytest.mark.parametrize("points", [1, 0])
def test_fossil_knock_out_points_flag(points: int) -> None:
    s = _attack(mon("Bulbasaur", energy={"Grass": 2}), mon("Dome Fossil"),
                config=RulesConfig(fossil_ko_points=points))
    assert s.players[0].points == points


def test_promotion_is_the_owners_choice() -> None:
    s = game(side(mon("Bulbasaur", energy={"Grass": 2})),
             side(mon("Rattata"), bench=[mon("Squirtle"), mon("Pikachu")]), turn=3,
             draws=[roll()])
    act(s, "attack", 0)
    assert s.to_act() == 1 and s.pending[0].kind == "promote"
    assert why(s, "choose", 3, player=1) is not None  # slot 3 is empty
    act(s, "choose", 2, player=1)
    assert s.players[1].active.name == "Pikachu" and s.current == 1 and s.turn == 4


def test_three_points_win() -> None:
    s = _attack(mon("Bulbasaur", energy={"Grass": 2}), mon("Rattata"), points=2)
    assert s.over and s.winner == 0 and s.end_reason == "points"


def test_no_pokemon_in_play_loses() -> None:
    s = game(side(mon("Bulbasaur", energy={"Grass": 2})), side(mon("Rattata")), turn=3,
             draws=[roll()])
    act(s, "attack", 0)
    assert s.over and s.winner == 0 and s.end_reason == "no Pokémon in play"


def test_both_win_at_once_is_a_draw() -> None:
    # Golem's 50 recoil knocks out both Actives, each player's last Pokémon
    s = game(side(mon("Golem", energy={"Fighting": 4}, damage=120), points=2),
             side(mon("Pikachu")), turn=5, draws=[roll()])
    act(s, "attack", 0)
    assert s.over and s.winner == -1


def test_checkup_knock_out_scores() -> None:
    s = game(side(mon("Rattata", damage=30, conditions={"poisoned"}), bench=[mon("Pikachu")]),
             side(mon("Snorlax")), turn=3, draws=[roll()])
    act(s, "end")
    assert s.players[1].points == 1 and s.players[0].active.name == "Pikachu"


# ---------------------------------------------------------------- 9.3 turn limit, hand limit
@pytest.mark.parametrize("limit", [3, 30])
def test_turn_limit_draw(limit: int) -> None:
    s = game(side(mon("Snorlax")), side(mon("Snorlax")), turn=limit - 1, current=1,
             config=RulesConfig(turn_limit=limit), draws=[roll()])
    act(s, "end")
    assert not s.over and s.turn == limit
    act(s, "end")
    assert s.over and s.winner == -1 and "turn limit" in s.end_reason


@pytest.mark.parametrize("limit", [10, None])
def test_hand_limit_skips_the_draw(limit: int | None) -> None:
    s = game(side(mon("Snorlax")), side(mon("Snorlax"), hand=["Potion"] * 10), turn=3,
             config=RulesConfig(hand_limit=limit), draws=[roll()])
    act(s, "end")
    assert len(s.players[1].hand) == (10 if limit == 10 else 11)


def test_poke_ball_may_exceed_the_hand_limit_by_default() -> None:
    hand = ["Poké Ball"] + ["Potion"] * 9
    for applies in (False, True):
        s = game(side(mon("Snorlax"), hand=hand, deck=["Pikachu"]), side(mon("Snorlax")),
                 turn=3, config=RulesConfig(hand_limit_applies_to_search=applies, hand_limit=9),
                 draws=[("pick", 1, 0)])
        assert (why(s, "play", 0) is None) is not applies


# ---------------------------------------------------------------- illegal actions, decks
def test_illegal_action_is_rejected_with_the_reason() -> None:
    s = game(side(mon("Bulbasaur")), side(mon("Bulbasaur")), turn=3)
    with pytest.raises(rules.IllegalAction, match="needs Grass"):
        act(s, "attack", 0)
    with pytest.raises(rules.IllegalAction, match="player 0's decision"):
        act(s, "end", player=1)
    g = TcgPocketGame()
    g.reset(0, (deck(), deck()))
    with pytest.raises(ValueError, match="outside"):
        g.step(0, 10_000)


@pytest.mark.parametrize("cards, types, rule", [
    (BASIC_DECK[:19], ("Grass",), "deck size"),
    ([*BASIC_DECK[:18], "Bulbasaur", "Bulbasaur"], ("Grass",), "copies per name"),
    (["Potion", "Potion", "X Speed", "X Speed", "Poké Ball", "Poké Ball", "Red Card",
      "Red Card", "Hand Scope", "Hand Scope", "Pokédex", "Pokédex", "Professor's Research",
      "Professor's Research", "Erika", "Erika", "Misty", "Misty", "Ivysaur", "Ivysaur"],
     ("Grass",), "basic pokemon"),
    ([*BASIC_DECK[:19], "Pikachu V"], ("Grass",), "card pool"),
    (BASIC_DECK, ("Grass", "Dragon"), "energy types"),
    (BASIC_DECK, ("Grass", "Colorless"), "energy types"),
    (BASIC_DECK, ("Grass", "Water", "Fire", "Metal"), "energy types"),
    (BASIC_DECK, (), "energy types"),
    ([*BASIC_DECK[:19], "Butterfree"], ("Grass",), "unsupported card"),
])
def test_illegal_deck_names_the_rule(cards: list[str], types: tuple[str, ...],
                                     rule: str) -> None:
    with pytest.raises(ValueError, match=rule) as e:
        validate_deck(cards, types)
    assert e.value.rule == rule  # type: ignore[attr-defined]


def test_unsupported_card_is_named() -> None:
    with pytest.raises(ValueError, match="Butterfree: ability Powder Heal"):
        validate_deck([*BASIC_DECK[:19], "Butterfree"], ("Grass",))


def test_deck_accepts_printing_ids() -> None:
    d = validate_deck(["a1-001", *BASIC_DECK[1:]], ("Grass",))
    assert d.cards[0] == "Bulbasaur"


def test_max_energy_types_flag() -> None:
    validate_deck(BASIC_DECK, ("Grass", "Water", "Fire", "Metal"),
                  RulesConfig(max_energy_types=4))


def test_config_rejects_unknown_values() -> None:
    with pytest.raises(ValueError, match="promotion_order"):
        RulesConfig(promotion_order="random")
    with pytest.raises(ValueError, match="unknown RulesConfig flag"):
        RulesConfig.from_json({"no_such_flag": 1})
    cfg = RulesConfig(hand_limit=None)
    assert RulesConfig.from_json(cfg.to_json()) == cfg


# ---------------------------------------------------------------- randomness
def test_same_seed_same_game_and_tape_replays() -> None:
    from tcg_play import play_random

    a = play_random(5, np.random.default_rng(1))
    b = play_random(5, np.random.default_rng(1))
    assert a.rng.tape == b.rng.tape and a.state.winner == b.state.winner
    c = play_random(5, np.random.default_rng(1), rng=ReplayRng(list(a.rng.tape)))
    assert c.state.players[0].discard == a.state.players[0].discard
    assert c.rng.remaining == 0  # type: ignore[attr-defined]


def test_rng_coin_is_fair_enough() -> None:
    r = Rng(0)
    heads = sum(r.coin() for _ in range(4000))
    assert 1850 < heads < 2150  # 4000 fair flips: mean 2000, sd 31.6; this is +-4.7 sd
