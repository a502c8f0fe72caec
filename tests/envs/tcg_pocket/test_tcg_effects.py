"""Effect templates on the cards that print them (two cards per template where A1 has two), the
Trainers, and every plain-damage attack against a defender with and without Weakness.

Expected numbers are the printed card text (damage, amounts) and the specification's rules."""

from __future__ import annotations

import pytest
from tcg_helpers import act, coin, game, mon, roll, side, why

from envport.envs.tcg_pocket import rules
from envport.envs.tcg_pocket.cards import ENERGY_INDEX, ENERGY_TYPES, load_table
from envport.envs.tcg_pocket.config import RulesConfig
from envport.envs.tcg_pocket.state import GameState, InPlay

TABLE = load_table()
W, F, P, L, G = (ENERGY_INDEX[t] for t in ("Water", "Fire", "Psychic", "Lightning", "Grass"))


def full(name: str, **extra: int) -> dict[str, int]:
    """Energy that pays every attack of ``name`` (typed symbols, Colorless as the card's own
    type or Grass), plus ``extra``."""
    c = TABLE[name]
    need: dict[str, int] = {}
    for a in c.attacks:
        k: dict[str, int] = {}
        for sym in a.cost:
            t = sym if sym != "Colorless" else (c.type if c.type in ENERGY_TYPES else "Grass")
            k[t] = k.get(t, 0) + 1
        for t, n in k.items():
            need[t] = max(need.get(t, 0), n)
    for t, n in extra.items():
        need[t] = need.get(t, 0) + n
    return need


def hit(attacker: InPlay, defender: InPlay, draws: list | None = None, attack: int = 0,
        bench: list | None = None, opp_bench: list | None = None,
        config: RulesConfig | None = None, **me: object) -> GameState:
    s = game(side(attacker, bench=bench or [], **me),
             side(defender, bench=[mon("Snorlax")] if opp_bench is None else opp_bench),
             turn=3, config=config, draws=(draws or []) + [roll()])
    act(s, "attack", attack)
    assert s.rng.remaining == 0, "the attack drew fewer random numbers than the test scripted"
    return s


def dmg(s: GameState, player: int = 1) -> int:
    return s.players[player].active.damage


# ---------------------------------------------------------------- T01 status, T02 coin-status
@pytest.mark.parametrize("name, condition", [("Venomoth", "poisoned"), ("Grimer", "poisoned"),
                                             ("Frosmoth", "asleep"), ("Wigglytuff ex", "asleep")])
def test_status(name: str, condition: str) -> None:
    s = game(side(mon(name, energy=full(name))), side(mon("Snorlax")), turn=3,
             draws=[coin(False), roll()] if condition == "asleep" else [roll()])
    act(s, "attack", 0)
    # Asleep: the Checkup right after flips (tails: still Asleep); Poisoned: 10 at the Checkup
    d = s.players[1].active
    assert condition in d.conditions
    printed = TABLE[name].attacks[0].damage
    assert d.damage == printed + (10 if condition == "poisoned" else 0)


@pytest.mark.parametrize("name", ["Articuno", "Pincurchin"])
@pytest.mark.parametrize("heads", [True, False])
def test_coin_status(name: str, heads: bool) -> None:
    s = hit(mon(name, energy=full(name)), mon("Snorlax"), draws=[coin(heads)])
    assert ("paralyzed" in s.players[1].active.conditions) is heads
    assert dmg(s) == TABLE[name].attacks[0].damage


# ---------------------------------------------------------------- T03 heal, T05 recoil
@pytest.mark.parametrize("name, printed, amount", [("Venusaur", 80, 30), ("Tangela", 40, 10)])
def test_heal_self(name: str, printed: int, amount: int) -> None:
    s = hit(mon(name, energy=full(name), damage=20), mon("Snorlax"))
    assert s.players[0].active.damage == max(0, 20 - amount) and dmg(s) == printed


@pytest.mark.parametrize("name, printed, amount, defender", [
    ("Arcanine", 100, 20, "Snorlax"), ("Golem", 150, 50, "Venusaur ex")])
def test_recoil(name: str, printed: int, amount: int, defender: str) -> None:
    s = hit(mon(name, energy=full(name)), mon(defender))
    assert s.players[0].active.damage == amount and dmg(s) == printed


# ---------------------------------------------------------------- T04 discard energy
@pytest.mark.parametrize("name, energy, left", [
    ("Charmander", {"Fire": 2}, {"Fire": 1}), ("Mewtwo", {"Psychic": 3, "Grass": 2},
                                               {"Psychic": 1, "Grass": 2}),
    ("Raichu", {"Lightning": 3, "Water": 1}, {}),
])
def test_discard_energy(name: str, energy: dict, left: dict) -> None:
    s = hit(mon(name, energy=energy), mon("Snorlax"))
    assert s.players[0].active.energy == [left.get(t, 0) for t in ENERGY_TYPES]


# ---------------------------------------------------------------- T06 multi-coin, X01 until tails
@pytest.mark.parametrize("name, coins, per", [("Pinsir", 2, 50), ("Jolteon", 4, 40)])
@pytest.mark.parametrize("heads", [0, 1, 2])
def test_multi_coin(name: str, coins: int, per: int, heads: int) -> None:
    flips = [coin(i < heads) for i in range(coins)]
    s = hit(mon(name, energy=full(name)), mon("Snorlax"), draws=flips)
    assert dmg(s) == per * heads


@pytest.mark.parametrize("heads", [0, 1, 2])
def test_flip_until_tails(heads: int) -> None:
    s = hit(mon("Lickitung", energy=full("Lickitung")), mon("Venusaur ex"),
            draws=[coin(True)] * heads + [coin(False)])
    assert dmg(s) == 60 * heads


# ---------------------------------------------------------------- T07 coin bonus, T08 coin-fail
@pytest.mark.parametrize("name, base, bonus", [("Exeggutor", 30, 30), ("Heliolisk", 40, 40)])
@pytest.mark.parametrize("heads", [True, False])
def test_coin_bonus(name: str, base: int, bonus: int, heads: bool) -> None:
    s = hit(mon(name, energy=full(name)), mon("Snorlax"), draws=[coin(heads)])
    assert dmg(s) == base + (bonus if heads else 0)


@pytest.mark.parametrize("name, printed", [("Skiddo", 40), ("Moltres", 130)])
@pytest.mark.parametrize("heads", [True, False])
def test_coin_fail(name: str, printed: int, heads: bool) -> None:
    s = hit(mon(name, energy=full(name)), mon("Snorlax"), draws=[coin(heads)])
    assert dmg(s) == (printed if heads else 0)


def test_all_heads_bonus_kingler() -> None:
    for flips, expect in (([True, True], 160), ([True, False], 80), ([False, True], 80)):
        s = hit(mon("Kingler", energy=full("Kingler")), mon("Venusaur ex"),
                draws=[coin(f) for f in flips])
        assert dmg(s) == expect


def test_coin_bonus_or_recoil_electabuzz() -> None:
    s = hit(mon("Electabuzz", energy=full("Electabuzz")), mon("Snorlax"), draws=[coin(True)])
    assert dmg(s) == 80 and s.players[0].active.damage == 0
    s = hit(mon("Electabuzz", energy=full("Electabuzz")), mon("Snorlax"), draws=[coin(False)])
    assert dmg(s) == 40 and s.players[0].active.damage == 20


# ---------------------------------------------------------------- T09 bench damage
def test_bench_damage_articuno_ex_no_weakness_on_the_bench() -> None:
    bench = [mon("Pikachu"), mon("Squirtle")]  # Squirtle is weak to Lightning, not Water
    s = hit(mon("Articuno ex", energy={"Water": 3}), mon("Snorlax"), attack=1,
            opp_bench=bench)
    assert dmg(s) == 80 and [b.damage for b in bench] == [10, 10]
    bench = [mon("Charmander")]  # weak to Water: still only 10 on the Bench
    s = hit(mon("Articuno ex", energy={"Water": 3}), mon("Snorlax"), attack=1,
            opp_bench=bench)
    assert bench[0].damage == 10


# ---------------------------------------------------------------- T10 counts, T11 conditions
def test_per_count_opponent_energy() -> None:
    s = hit(mon("Jynx", energy=full("Jynx")), mon("Snorlax", energy={"Grass": 3}))
    assert dmg(s) == 30 + 20 * 3
    s = hit(mon("Alakazam", energy=full("Alakazam")), mon("Venusaur ex",
                                                          energy={"Grass": 1}))
    assert dmg(s) == 60 + 30 * 1


def test_per_count_own_bench() -> None:
    bench = [mon("Pikachu"), mon("Bulbasaur"), mon("Voltorb")]
    s = hit(mon("Pikachu ex", energy=full("Pikachu ex")), mon("Venusaur ex"), bench=bench)
    assert dmg(s) == 30 * 2  # Lightning only
    s = hit(mon("Cinccino", energy=full("Cinccino")), mon("Venusaur ex"), bench=bench)
    assert dmg(s) == 30 * 3
    s = hit(mon("Nidoqueen", energy=full("Nidoqueen")), mon("Venusaur ex"),
            bench=[mon("Nidoking"), mon("Pikachu")])
    assert dmg(s) == 80 + 50


@pytest.mark.parametrize("water, bonus", [(3, 0), (4, 0), (5, 60)])
def test_bonus_extra_energy_blastoise(water: int, bonus: int) -> None:
    # Hydro Pump costs Water, Water, Colorless: 5 Water attached leave 2 extra
    s = hit(mon("Blastoise", energy={"Water": water}), mon("Venusaur ex"))
    assert dmg(s) == 80 + bonus


def test_extra_energy_counts_colorless_paid_by_other_types() -> None:
    # Lapras: Hydro Pump costs one Water; 3 Water + 1 Fire: 2 extra Water -> no +70;
    # 4 Water: 3 extra -> +70
    s = hit(mon("Lapras", energy={"Water": 3, "Fire": 1}), mon("Venusaur ex"))
    assert dmg(s) == 20
    s = hit(mon("Lapras", energy={"Water": 4}), mon("Venusaur ex"))
    assert dmg(s) == 20 + 70
    p = mon("Blastoise", energy={"Water": 4, "Grass": 1})  # Grass pays the Colorless
    assert rules.extra_energy(p, ("Water", "Water", "Colorless"), "Water") == 2


def test_bonus_if_damage_and_poison() -> None:
    s = hit(mon("Primeape", energy=full("Primeape"), damage=10), mon("Venusaur ex"))
    assert dmg(s) == 40 + 60
    s = hit(mon("Primeape", energy=full("Primeape")), mon("Venusaur ex"))
    assert dmg(s) == 40
    s = hit(mon("Bruxish", energy=full("Bruxish")), mon("Venusaur ex", damage=10))
    assert dmg(s) == 10 + 10 + 60
    s = hit(mon("Muk", energy=full("Muk")), mon("Venusaur ex", conditions={"poisoned"}))
    assert dmg(s) == 70 + 50 + 10  # +10: the Checkup's poison


# ---------------------------------------------------------------- T15, T16, reveal
def test_discard_opponent_energy() -> None:
    s = hit(mon("Gyarados", energy=full("Gyarados")),
            mon("Venusaur ex", energy={"Grass": 1, "Fire": 1}), draws=[("pick", 2, 1)])
    assert s.players[1].active.energy[F] == 0 and s.players[1].active.energy[G] == 1
    s = hit(mon("Mawile", energy=full("Mawile")), mon("Snorlax", energy={"Grass": 2}),
            draws=[coin(True), ("pick", 2, 0)])
    assert s.players[1].active.energy[G] == 1
    s = hit(mon("Fearow", energy=full("Fearow")), mon("Snorlax", energy={"Grass": 2}),
            draws=[coin(False)])
    assert s.players[1].active.energy[G] == 2
    s = hit(mon("Fearow", energy=full("Fearow")), mon("Snorlax"), draws=[coin(True)])
    assert s.players[1].active.energy == [0] * 8  # nothing to pick: no draw


def test_draw_meowth_and_reveal_mew() -> None:
    s = hit(mon("Meowth", energy=full("Meowth")), mon("Snorlax"), deck=["Pikachu", "Potion"])
    assert s.players[0].hand == ["Pikachu"]
    s = game(side(mon("Mew", energy=full("Mew"))), side(mon("Snorlax"), hand=["Erika", "Misty"]),
             turn=3, draws=[roll()])
    act(s, "attack", 0)
    assert s.log and dmg(s) == 20
    # shown to the attacker during its turn, cleared when the next turn starts
    assert s.players[0].revealed == {}


def test_mew_reveal_is_in_the_attackers_observation() -> None:
    from envport.envs.tcg_pocket import rules as r

    s = game(side(mon("Mew", energy=full("Mew"))), side(mon("Snorlax"), hand=["Erika"]),
             turn=3)
    attacker = s.players[0].active
    r.a_reveal_hand(s, attacker, {}, r.AttackContext(0))
    assert s.players[0].revealed["opponent_hand"] == ["Erika"]


# ---------------------------------------------------------------- Trainers
def test_potion_and_erika() -> None:
    s = game(side(mon("Bulbasaur", damage=60), bench=[mon("Squirtle", damage=30)],
                  hand=["Potion", "Erika", "Erika"]), side(mon("Snorlax")), turn=3)
    assert "slot 2 is empty" in why(s, "play", 0, 2)
    act(s, "play", 0, 1)
    assert s.players[0].bench[0].damage == 10
    assert "not a Grass" in why(s, "play", 0, 1)
    act(s, "play", 0, 0)
    assert s.players[0].active.damage == 10
    assert s.players[0].discard == ["Potion", "Erika"]


@pytest.mark.parametrize("allow", [False, True])
def test_allow_no_effect_plays_flag(allow: bool) -> None:
    s = game(side(mon("Bulbasaur"), hand=["Potion"]), side(mon("Snorlax")), turn=3,
             config=RulesConfig(allow_no_effect_plays=allow))
    assert (why(s, "play", 0, 0) is None) is allow
    assert why(s, "play", 0, 3) is not None  # an empty slot is never a target


def test_misty_flips_until_tails() -> None:
    s = game(side(mon("Squirtle"), hand=["Misty"]), side(mon("Snorlax")), turn=3,
             draws=[coin(True), coin(True), coin(False)])
    act(s, "play", 0, 0)
    assert s.players[0].active.energy[W] == 2 and s.players[0].energy_current is None


def test_brock_lt_surge_koga_sabrina() -> None:
    s = game(side(mon("Onix"), hand=["Brock"]), side(mon("Snorlax")), turn=3)
    act(s, "play", 0, 0)
    assert s.players[0].active.energy[ENERGY_INDEX["Fighting"]] == 1
    s = game(side(mon("Raichu", below=["Pikachu"]),
                  bench=[mon("Pikachu", energy={"Lightning": 2, "Water": 1})],
                  hand=["Lt. Surge"]), side(mon("Snorlax")), turn=3)
    act(s, "play", 0)
    assert s.players[0].active.energy[L] == 2 and s.players[0].bench[0].energy[W] == 1
    s = game(side(mon("Muk", below=["Grimer"], energy={"Darkness": 2}),
                  bench=[mon("Koffing"), mon("Ekans")], hand=["Koga"]),
             side(mon("Snorlax")), turn=3)
    act(s, "play", 0)
    assert s.players[0].hand == ["Grimer", "Muk"] and s.pending[0].kind == "promote"
    act(s, "choose", 2)
    assert s.players[0].active.name == "Ekans" and s.players[0].discard == ["Koga"]
    s = game(side(mon("Bulbasaur"), hand=["Sabrina"]),
             side(mon("Snorlax", conditions={"asleep"}), bench=[mon("Pikachu"), mon("Ekans")]),
             turn=3)
    act(s, "play", 0)
    assert s.to_act() == 1
    act(s, "choose", 2, player=1)
    assert s.players[1].active.name == "Ekans" and s.players[1].bench[1].name == "Snorlax"
    assert s.players[1].bench[1].conditions == set()


def test_koga_with_an_empty_bench_loses() -> None:
    s = game(side(mon("Muk", below=["Grimer"]), hand=["Koga"]), side(mon("Snorlax")), turn=3)
    act(s, "play", 0)
    assert s.over and s.winner == 1


def test_search_and_draw_trainers() -> None:
    s = game(side(mon("Bulbasaur"), hand=["Poké Ball", "Pokédex"],
                  deck=["Potion", "Pikachu", "Erika", "Squirtle"]),
             side(mon("Snorlax"), hand=["Misty"], deck=["Potion"] * 4), turn=3,
             draws=[("pick", 2, 1)])
    act(s, "play", 0)  # the 2nd Basic in deck order: Squirtle
    assert s.players[0].hand == ["Pokédex", "Squirtle"]
    act(s, "play", 0)
    assert s.players[0].revealed["deck_top"] == ["Potion", "Pikachu", "Erika"]
    s = game(side(mon("Bulbasaur"), hand=["Red Card", "Hand Scope"]),
             side(mon("Snorlax"), hand=["Misty", "Erika"], deck=["Potion"] * 4), turn=3,
             draws=[("shuffle", i + 1, i) for i in range(5, 0, -1)])
    act(s, "play", 1)
    assert s.players[0].revealed["opponent_hand"] == ["Misty", "Erika"]
    act(s, "play", 0)
    assert len(s.players[1].hand) == 3 and len(s.players[1].deck) == 3


# ---------------------------------------------------------------- plain damage, every card
def _defenders(attacker_type: str) -> tuple[str, str | None]:
    """A supported defender not weak to the type, and the largest-HP one weak to it."""
    plain = "Snorlax" if attacker_type != "Fighting" else "Venusaur ex"
    weak = [c for c in TABLE.supported() if c.is_pokemon and c.weakness == attacker_type]
    best = max(weak, key=lambda c: c.hp).name if weak else None
    return plain, best


PLAIN = [(c.name, i) for c in TABLE.supported() if c.is_pokemon
         for i, a in enumerate(c.attacks) if a.effect is None and a.damage_mode == ""]


@pytest.mark.parametrize("name, index", PLAIN)
def test_plain_attack_with_and_without_weakness(name: str, index: int) -> None:
    printed = TABLE[name].attacks[index].damage
    plain, weak = _defenders(str(TABLE[name].type))
    for defender, bonus in ((plain, 0), (weak, 20)):
        if defender is None:
            continue
        s = hit(mon(name, energy=full(name)), mon(defender), attack=index)
        expect = printed + bonus
        if expect >= TABLE[defender].hp:
            assert s.players[0].points == (2 if TABLE[defender].ex else 1)
        else:
            assert dmg(s) == expect, (name, defender)


def test_plain_attacks_cover_most_supported_pokemon() -> None:
    assert len({n for n, _ in PLAIN}) >= 120


# ---------------------------------------------------------------- T12 snipe (a choice)
def _attack_then(s: GameState, *choices: tuple[int, int]) -> GameState:
    act(s, "attack", 0)
    for player, slot in choices:
        act(s, "choose", slot, player=player)
    return s


def test_snipe_bench_no_weakness_active_with_weakness() -> None:
    # Seadra (Water) 50 to any opponent's Pokémon; Charmander is weak to Water
    bench = [mon("Charmander"), mon("Pikachu")]
    s = game(side(mon("Seadra", energy={"Water": 3})), side(mon("Magmar"), bench=bench),
             turn=3, draws=[roll()])
    _attack_then(s, (0, 2))
    assert bench[1].damage == 50 and s.players[1].active.damage == 0
    s = game(side(mon("Seadra", energy={"Water": 3})),
             side(mon("Magmar"), bench=[mon("Pikachu")]), turn=3, draws=[roll()])
    _attack_then(s, (0, 0))
    assert s.players[1].active.damage == 50 + 20  # Magmar is weak to Water
    s = game(side(mon("Zebstrika", energy={"Lightning": 1})),
             side(mon("Snorlax"), bench=[mon("Squirtle", damage=40), mon("Pikachu")]), turn=3,
             draws=[roll()])
    _attack_then(s, (0, 1))  # 30 knocks out the damaged Squirtle: checked after the choice
    assert s.players[0].points == 1 and "Squirtle" in s.players[1].discard


def test_snipe_bench_only_hitmonlee() -> None:
    s = game(side(mon("Hitmonlee", energy={"Fighting": 1})),
             side(mon("Snorlax"), bench=[mon("Pikachu"), mon("Ekans")]), turn=3,
             draws=[roll()])
    act(s, "attack", 0)
    assert s.to_act() == 0 and why(s, "choose", 0) is not None  # not the Active
    act(s, "choose", 1)
    assert s.players[1].bench[0].damage == 30
    s = game(side(mon("Hitmonlee", energy={"Fighting": 1})), side(mon("Snorlax")), turn=3,
             draws=[roll()])
    act(s, "attack", 0)  # no Benched target: the attack does nothing
    assert s.players[1].active.damage == 0 and s.current == 1


# ---------------------------------------------------------------- T13 next-turn effects
def test_defending_cannot_attack_or_retreat_then_expires() -> None:
    s = game(side(mon("Omastar", energy={"Water": 3})),
             side(mon("Snorlax", energy={"Grass": 4}), bench=[mon("Pikachu")]), turn=3,
             draws=[roll(), roll(), roll()])
    act(s, "attack", 0)
    assert "can't attack" in why(s, "attack", 0)
    act(s, "end")  # the opponent's turn passes; on turn 5 the effect is over
    act(s, "end")
    assert s.turn == 6 and why(s, "attack", 0) is None
    s2 = game(side(mon("Arbok", energy={"Darkness": 2})),
              side(mon("Snorlax", energy={"Grass": 4}), bench=[mon("Pikachu")]), turn=3,
              draws=[roll()])
    act(s2, "attack", 0)
    assert "can't retreat" in why(s2, "retreat", 1) and why(s2, "attack", 0) is None


@pytest.mark.parametrize("heads", [True, False])
def test_vulpix_tail_whip_coin(heads: bool) -> None:
    s = hit(mon("Vulpix", energy={"Fire": 1}), mon("Snorlax", energy={"Grass": 4}),
            draws=[coin(heads)])
    assert (why(s, "attack", 0) is not None) is heads


def test_growl_lowers_the_defending_pokemons_attacks_next_turn() -> None:
    s = game(side(mon("Cubone", energy={"Fighting": 1})),
             side(mon("Bulbasaur", energy={"Grass": 2})), turn=3, draws=[roll(), roll()])
    act(s, "attack", 0)
    assert s.players[1].active.effects == {"attack_minus": [4, 20]}
    act(s, "attack", 0)  # Vine Whip 40 - 20 on Cubone (weak to Grass: + 20 first)
    assert s.players[0].active.damage == 40 + 20 - 20


@pytest.mark.parametrize("weakness_first, expect", [(True, 10), (False, 0)])
def test_weakness_before_reduction_flag(weakness_first: bool, expect: int) -> None:
    # the game-guide example: 10 + 20 Weakness - 20 = 10; the simulator's order: 10 - 20 -> 0,
    # and no Weakness on 0 damage. Petilil's Blot does 10; Geodude is weak to Grass.
    attacker = mon("Petilil", energy={"Grass": 1})
    attacker.effects = {"attack_minus": [3, 20]}  # a Growl from the opponent's last turn
    s = game(side(attacker), side(mon("Geodude")), turn=3, draws=[roll()],
             config=RulesConfig(weakness_before_reduction=weakness_first))
    act(s, "attack", 0)
    assert s.players[1].active.damage == expect


def test_mr_mime_takes_less_and_dugtrio_prevents_all() -> None:
    s = game(side(mon("Mr. Mime", energy={"Psychic": 2})),
             side(mon("Bulbasaur", energy={"Grass": 2})), turn=3, draws=[roll(), roll()])
    act(s, "attack", 0)
    act(s, "attack", 0)  # Vine Whip 40 - 20
    assert s.players[0].active.damage == 20
    s = game(side(mon("Dugtrio", energy={"Fighting": 1})),
             side(mon("Venomoth", energy={"Grass": 1})), turn=3,
             draws=[coin(True), roll(), roll()])
    act(s, "attack", 0)
    act(s, "attack", 0)  # Poison Powder: 30 and Poisoned, both prevented
    assert s.players[0].active.damage == 0 and s.players[0].active.conditions == set()


def test_effects_end_when_the_pokemon_leaves_the_active_spot() -> None:
    s = game(side(mon("Snorlax", energy={"Grass": 4}), bench=[mon("Pikachu")]),
             side(mon("Snorlax")), turn=4)
    s.players[0].active.effects = {"cannot_attack": [4, 0]}
    s.players[0].x_speed = 4
    act(s, "retreat", 1)
    assert s.players[0].bench[0].effects == {}


# ---------------------------------------------------------------- T14 Energy Zone attach
def test_meltan_attaches_to_itself_and_lilligant_to_a_benched_grass() -> None:
    s = hit(mon("Meltan", energy={"Metal": 1}), mon("Snorlax"))
    assert s.players[0].active.energy[ENERGY_INDEX["Metal"]] == 2
    bench = [mon("Squirtle"), mon("Bulbasaur"), mon("Oddish")]
    s = game(side(mon("Lilligant", energy={"Grass": 2}), bench=bench), side(mon("Snorlax")),
             turn=3, draws=[roll()])
    act(s, "attack", 0)
    assert why(s, "choose", 1) is not None  # Squirtle is not a Grass Pokémon
    act(s, "choose", 3)
    assert bench[2].energy[G] == 1 and bench[1].energy[G] == 0


def test_moltres_ex_splits_fire_energy_per_heads() -> None:
    bench = [mon("Vulpix"), mon("Squirtle"), mon("Ponyta")]
    s = game(side(mon("Moltres ex", energy={"Fire": 1}), bench=bench), side(mon("Snorlax")),
             turn=3, draws=[coin(True), coin(False), coin(True), roll()])
    act(s, "attack", 0)
    act(s, "choose", 3)
    act(s, "choose", 3)
    assert bench[2].energy[F] == 2 and bench[0].energy[F] == 0 and s.current == 1


# ---------------------------------------------------------------- T16, T17, second phase
def test_caterpie_and_nidoran_search() -> None:
    s = hit(mon("Caterpie", energy={"Grass": 1}), mon("Snorlax"),
            deck=["Potion", "Squirtle", "Bulbasaur", "Oddish"], draws=[("pick", 2, 1)])
    assert s.players[0].hand == ["Oddish"]
    s = hit(mon("Nidoran♀", energy={"Darkness": 1}), mon("Snorlax"),
            deck=["Nidoran♂", "Potion"], draws=[("pick", 1, 0)])
    assert s.players[0].bench[0].name == "Nidoran♂"


def test_knock_back_and_teleport_switch() -> None:
    s = game(side(mon("Grapploct", energy={"Fighting": 3})),
             side(mon("Snorlax"), bench=[mon("Pikachu"), mon("Ekans")]), turn=3, draws=[roll()])
    _attack_then(s, (1, 2))
    p1 = s.players[1]
    assert p1.active.name == "Ekans" and p1.bench[1].name == "Snorlax"
    assert p1.bench[1].damage == 70 + 20  # Snorlax is weak to Fighting
    s = game(side(mon("Abra", energy={"Psychic": 1}), bench=[mon("Pikachu")]),
             side(mon("Snorlax")), turn=3, draws=[roll()])
    act(s, "attack", 0)  # one Benched Pokémon: the switch is made without asking
    assert s.players[0].active.name == "Pikachu" and s.players[0].bench[0].name == "Abra"


def test_knock_back_knocks_out_after_the_switch() -> None:
    s = game(side(mon("Grapploct", energy={"Fighting": 3})),
             side(mon("Pikachu", damage=0), bench=[mon("Ekans"), mon("Rattata")]), turn=3,
             draws=[roll()])
    _attack_then(s, (1, 1))  # 70 knocks out Pikachu (60 HP) once it is on the Bench
    assert s.players[1].active.name == "Ekans" and s.players[0].points == 1
    assert "Pikachu" in s.players[1].discard


@pytest.mark.parametrize("name", ["Psyduck", "Gengar"])
def test_no_supporters_next_turn(name: str) -> None:
    s = game(side(mon(name, energy=full(name))),
             side(mon("Snorlax"), hand=["Professor's Research"]), turn=3,
             draws=[roll(), roll(), roll()])
    act(s, "attack", 0)
    assert "no Supporters" in why(s, "play", 0)
    act(s, "end")
    act(s, "end")
    assert s.turn == 6 and s.current == 1 and why(s, "play", 0) is None  # it has expired


def test_persian_discards_a_random_card_kabutops_heals_what_it_dealt() -> None:
    s = hit(mon("Persian", energy={"Grass": 2}), mon("Snorlax"), draws=[coin(True)])
    assert s.players[1].discard == []  # the opponent's hand was empty: no pick is drawn
    s = game(side(mon("Persian", energy={"Grass": 2})),
             side(mon("Snorlax"), hand=["Misty", "Erika"]), turn=3,
             draws=[coin(True), ("pick", 2, 1), roll()])
    act(s, "attack", 0)
    assert s.players[1].discard == ["Erika"]
    s = hit(mon("Kabutops", energy={"Fighting": 1}, damage=80, below=["Dome Fossil", "Kabuto"]),
            mon("Bulbasaur"))
    assert s.players[0].active.damage == 80 - 50
    s = hit(mon("Kabutops", energy={"Fighting": 1}, damage=80, below=["Dome Fossil", "Kabuto"]),
            mon("Snorlax"))
    assert s.players[0].active.damage == 80 - (50 + 20)  # Weakness counts in what it dealt


def test_zapdos_hits_one_of_its_own_benched() -> None:
    bench = [mon("Pikachu"), mon("Squirtle")]
    s = game(side(mon("Zapdos", energy={"Lightning": 3}), bench=bench), side(mon("Snorlax")),
             turn=3, draws=[roll()])
    _attack_then(s, (0, 2))
    assert bench[1].damage == 30 and bench[0].damage == 0 and s.players[1].active.damage == 100
