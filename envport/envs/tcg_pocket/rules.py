"""The rules of Pokémon TCG Pocket (``shared/specs/tcg-pocket.md``), one rule per function.

Written for clarity, not speed: this is the reference a translation is verified against. The
section numbers in the docstrings are the specification's. Every random draw goes through the
game's :class:`~envport.envs.tcg_pocket.rng.Rng`, in the order the functions here make them.

Entry points: :func:`new_game` (shuffle, opening hands, first player; the game then waits for
both players' setup), :func:`problem` (why an action is illegal, or None), :func:`apply`
(perform a legal action and run the game on to the next decision).
"""

from __future__ import annotations

from dataclasses import dataclass

from envport.envs.tcg_pocket.actions import MAX_HAND, Action
from envport.envs.tcg_pocket.cards import ENERGY_INDEX, ENERGY_TYPES, FOSSIL_HP, Card, load_table
from envport.envs.tcg_pocket.config import RulesConfig
from envport.envs.tcg_pocket.deck import Deck
from envport.envs.tcg_pocket.rng import Rng
from envport.envs.tcg_pocket.state import (
    BENCH_SIZE,
    EXCLUSIVE,
    Decision,
    GameState,
    InPlay,
    Player,
)

OPENING_HAND = 5
POINTS_TO_WIN = 3
BLAINE_POKEMON = ("Ninetales", "Rapidash", "Magmar")
KOGA_POKEMON = ("Muk", "Weezing")
BROCK_POKEMON = ("Golem", "Onix")
SURGE_POKEMON = ("Raichu", "Electrode", "Electabuzz")
TABLE = load_table()


class IllegalAction(ValueError):
    """An action the rules do not allow now; the message says why."""


def card(name: str) -> Card:
    return TABLE[name]


# ---------------------------------------------------------------- a Pokémon's printed facts
def is_fossil(p: InPlay) -> bool:
    return card(p.name).kind == "fossil"


def hp(p: InPlay) -> int:
    return FOSSIL_HP if is_fossil(p) else card(p.name).hp


def pokemon_type(p: InPlay) -> str:
    return "Colorless" if is_fossil(p) else str(card(p.name).type)


def weakness(p: InPlay) -> str | None:
    return None if is_fossil(p) else card(p.name).weakness


def stage(p: InPlay) -> int:
    return 0 if is_fossil(p) else card(p.name).stage


def points_for(p: InPlay, config: RulesConfig) -> int:
    """9.2: 1 point, 2 for an ``ex``; a fossil: flag ``fossil_ko_points``."""
    if is_fossil(p):
        return config.fossil_ko_points
    return 2 if card(p.name).ex else 1


# ---------------------------------------------------------------- setup (3)
def new_game(decks: tuple[Deck, Deck], config: RulesConfig, rng: Rng) -> GameState:
    """Shuffle and deal both opening hands (player 0 then 1), then the first-player coin
    (heads: player 0). The game then waits for each player's setup decision."""
    players = [Player(deck=list(d.cards), energy_types=d.energy_types) for d in decks]
    state = GameState(config=config, players=players, rng=rng)
    for pl in players:
        deal_opening_hand(pl, config, rng)
    if config.first_player == "coin":
        state.first = 0 if rng.coin() else 1
    state.current = state.first
    state.pending = [Decision(0, "setup"), Decision(1, "setup")]
    return state


def deal_opening_hand(pl: Player, config: RulesConfig, rng: Rng) -> None:
    """3.1, flag ``opening_hand_method``: the hand holds at least one Basic Pokémon."""
    if config.opening_hand_method == "basic_first":
        basics = [i for i, n in enumerate(pl.deck) if card(n).is_basic]
        first = pl.deck.pop(basics[rng.pick(len(basics))])
        rng.shuffle(pl.deck)
        pl.hand = [first, *pl.deck[:OPENING_HAND - 1]]
        del pl.deck[:OPENING_HAND - 1]
        return
    while True:  # redraw_until_basic
        rng.shuffle(pl.deck)
        if any(card(n).is_basic for n in pl.deck[:OPENING_HAND]):
            pl.hand = pl.deck[:OPENING_HAND]
            del pl.deck[:OPENING_HAND]
            return


def finish_setup(state: GameState) -> None:
    """3.4: each Energy Zone rolls its next Energy (player 0 then 1); turn 1 begins."""
    for pl in state.players:
        pl.energy_next = roll_energy(pl, state.rng)
    state.stage = "next_turn"
    state.current = 1 - state.first  # start_turn passes the turn to the first player
    advance(state)


def roll_energy(pl: Player, rng: Rng) -> str:
    """Flag ``energy_roll`` (uniform): one of the deck's declared types."""
    return pl.energy_types[rng.energy(len(pl.energy_types))]


# ---------------------------------------------------------------- turn structure (4)
def start_turn(state: GameState) -> None:
    """4.1: the turn passes; draw 1; the Energy Zone rotates (the first player gets no Energy
    on turn 1)."""
    state.turn += 1
    state.current = 1 - state.current
    pl = state.players[state.current]
    for p in state.players:
        p.revealed = {}
    pl.attached_energy = pl.played_supporter = pl.retreated = False
    pl.giovanni = pl.blaine = False
    pl.x_speed = 0
    draw(pl, 1, state.config)
    if state.turn == 1:
        pl.energy_current = None
    else:
        pl.energy_current = pl.energy_next
        pl.energy_next = roll_energy(pl, state.rng)
    state.stage = "main"


def draw(pl: Player, n: int, config: RulesConfig) -> None:
    """Draw n cards one by one: none from an empty deck (not a loss); a draw with
    ``hand_limit`` cards in hand is skipped."""
    for _ in range(n):
        if not pl.deck:
            return
        if config.hand_limit is not None and len(pl.hand) >= config.hand_limit:
            return
        pl.hand.append(pl.deck.pop(0))


def end_turn(state: GameState) -> None:
    """Attacking or ending the turn: the Energy not attached is lost; then the Checkup."""
    state.players[state.current].energy_current = None
    state.stage = "checkup"


def advance(state: GameState) -> None:
    """Run the game on until someone must decide: Checkup, Knock Outs, the next turn."""
    while not state.over and not state.pending:
        if state.stage == "checkup":
            checkup(state)
            state.stage = "next_turn"
            process_knockouts(state)
        elif state.stage == "next_turn":
            if state.turn >= state.config.turn_limit:
                finish(state, -1, f"turn limit ({state.config.turn_limit})")
                return
            start_turn(state)
        else:
            return


def finish(state: GameState, winner: int, reason: str) -> None:
    state.winner, state.end_reason, state.stage = winner, reason, "over"
    state.pending = []


# ---------------------------------------------------------------- Checkup (9.1)
def checkup(state: GameState) -> None:
    """Both Active Pokémon, condition by condition (Poisoned, Burned, Asleep, Paralyzed); within
    one condition the current player's Active first."""
    order = (state.current, 1 - state.current)
    for condition, rule in (("poisoned", poison), ("burned", burn), ("asleep", sleep),
                            ("paralyzed", paralysis)):
        for p in order:
            active = state.players[p].active
            if active is not None and condition in active.conditions:
                rule(state, p, active)


def poison(state: GameState, owner: int, p: InPlay) -> None:
    p.damage += 10


def burn(state: GameState, owner: int, p: InPlay) -> None:
    p.damage += 20
    if state.rng.coin():
        p.conditions.discard("burned")


def sleep(state: GameState, owner: int, p: InPlay) -> None:
    if state.rng.coin():
        p.conditions.discard("asleep")


def paralysis(state: GameState, owner: int, p: InPlay) -> None:
    """Removed at the Checkup after its owner's turn: it costs the owner exactly one turn."""
    if owner == state.current:
        p.conditions.discard("paralyzed")


def add_condition(p: InPlay, condition: str) -> None:
    """Asleep, Paralyzed and Confused replace each other; Poisoned and Burned stack."""
    if condition in EXCLUSIVE:
        p.conditions.difference_update(EXCLUSIVE)
    p.conditions.add(condition)


# ---------------------------------------------------------------- Knock Outs, winning (9.2)
def process_knockouts(state: GameState) -> None:
    """Every Pokémon with damage >= HP is Knocked Out at once; then the game's end, or the
    promotions (flag ``promotion_order``)."""
    for owner, pl in enumerate(state.players):
        for slot, p in pl.in_play():
            if p.damage >= hp(p):
                knock_out(state, owner, slot, p)
    if check_game_over(state):
        return
    order = (1 - state.current, state.current)
    if state.config.promotion_order == "current_first":
        order = order[::-1]
    for who in order:
        pl = state.players[who]
        if pl.active is None and pl.benched():
            ask(state, Decision(who, "promote"))


def knock_out(state: GameState, owner: int, slot: int, p: InPlay) -> None:
    pl = state.players[owner]
    state.players[1 - owner].points += points_for(p, state.config)
    pl.discard.extend(p.stack)
    remove_from_play(pl, slot)
    state.log.append(f"p{owner}'s {p.name} is Knocked Out")


def remove_from_play(pl: Player, slot: int) -> None:
    if slot == 0:
        pl.active = None
    else:
        pl.bench[slot - 1] = None


def check_game_over(state: GameState) -> bool:
    """A player with >= 3 points wins, a player with no Pokémon in play loses; both players
    winning is a draw (flag ``simultaneous_win``)."""
    wins = [pl.points >= POINTS_TO_WIN or not state.players[1 - i].in_play()
            for i, pl in enumerate(state.players)]
    if all(wins):
        finish(state, -1, "both players won at once")
    elif any(wins):
        w = wins.index(True)
        why = ("points" if state.players[w].points >= POINTS_TO_WIN
               else "no Pokémon in play")
        finish(state, w, why)
    return state.over


def ask(state: GameState, decision: Decision) -> None:
    """Queue a decision; one with a single legal answer is taken at once, one with none is
    dropped (an effect with nothing to act on)."""
    options = decision_options(state, decision)
    if len(options) == 1:
        resolve_decision(state, decision, options[0])
    elif options:
        state.pending.append(decision)


# ---------------------------------------------------------------- decisions
def decision_options(state: GameState, d: Decision) -> list[int]:
    """The legal answers: slots of the deciding player's side (of the opponent's side for
    ``attack_target``), or Energy type indices for ``retreat_energy``."""
    pl = state.players[d.player]
    if "options" in d.data:
        return list(d.data["options"])
    if d.kind in ("promote", "new_active"):
        return [s for s, _ in pl.benched()]
    if d.kind == "retreat_energy":
        return [i for i, k in enumerate(pl.active.energy) if k > 0] if pl.active else []
    return []


def resolve_decision(state: GameState, d: Decision, choice: int) -> None:
    pl = state.players[d.player]
    if d.kind == "promote":
        promote(pl, choice)
    elif d.kind == "new_active":
        switch_active(pl, choice)
    elif d.kind == "retreat_energy":
        assert pl.active is not None
        pl.active.energy[choice] -= 1
        left = d.data["left"] - 1
        if left > 0:
            ask(state, Decision(d.player, "retreat_energy", {**d.data, "left": left}))
        else:
            switch_active(pl, d.data["bench"])
    elif d.kind == "attack_target":
        snipe_hit(state, choice, d.data["amount"])
    elif d.kind == "own_bench_damage":
        target = pl.slot(choice)
        assert target is not None
        target.damage += d.data["amount"]
    elif d.kind == "zone_attach":
        target = pl.slot(choice)
        assert target is not None
        target.energy[ENERGY_INDEX[d.data["energy"]]] += 1
        if d.data["left"] > 1:
            ask(state, Decision(d.player, "zone_attach", {**d.data, "left": d.data["left"] - 1}))


def promote(pl: Player, slot: int) -> None:
    pl.active, pl.bench[slot - 1] = pl.bench[slot - 1], None


def switch_active(pl: Player, slot: int) -> None:
    """The Active goes to Bench slot ``slot`` and the Pokémon there becomes Active; leaving the
    Active Spot removes all Special Conditions."""
    assert pl.active is not None
    outgoing = pl.active
    outgoing.conditions.clear()
    outgoing.effects.clear()
    pl.active, pl.bench[slot - 1] = pl.bench[slot - 1], outgoing


# ---------------------------------------------------------------- legality
def problem(state: GameState, player: int, action: Action) -> str | None:
    """Why ``player`` may not take ``action`` now, or None if they may."""
    if state.over:
        return "the game is over"
    if state.to_act() != player:
        return f"it is player {state.to_act()}'s decision, not player {player}'s"
    if state.pending:
        return decision_problem(state, state.pending[0], action)
    if action.kind == "end":
        return None
    if action.kind == "attack":
        return attack_problem(state, action.a)
    if action.kind == "retreat":
        return retreat_problem(state, action.a)
    if action.kind == "attach":
        return attach_problem(state, action.a)
    if action.kind == "discard":
        return discard_fossil_problem(state, action.a)
    if action.kind == "play":
        return play_problem(state, action.a, action.b)
    return "there is no pending choice"


def decision_problem(state: GameState, d: Decision, action: Action) -> str | None:
    pl = state.players[d.player]
    if d.kind == "setup":
        if action.kind == "end":
            return None if pl.active is not None else "setup: put a Basic Pokémon in the " \
                                                      "Active Spot first"
        if action.kind != "play":
            return "setup: only placing Basic Pokémon (play) or finishing (end)"
        if action.b != 0:
            return "setup: a Basic is placed with target 0"
        if action.a >= len(pl.hand):
            return f"setup: no card at hand index {action.a}"
        if not card(pl.hand[action.a]).is_basic:
            return f"setup: {pl.hand[action.a]} is not a Basic Pokémon"
        if pl.active is not None and not any(b is None for b in pl.bench):
            return "setup: the Bench is full"
        return None
    want = "energy" if d.kind == "retreat_energy" else "choose"
    if action.kind != want:
        return f"a {d.kind} choice is pending: answer it with `{want}`"
    if action.a not in decision_options(state, d):
        what = "an attached Energy type" if want == "energy" else "a Benched Pokémon"
        return f"{d.kind}: {action.a} is not {what}"
    return None


def own_first_turn(state: GameState) -> bool:
    return state.turn <= 2


def attack_cost_paid(energy: list[int], cost: tuple[str, ...]) -> bool:
    """7: each typed symbol needs that type; each Colorless symbol any Energy left over."""
    left = list(energy)
    for symbol in cost:
        if symbol == "Colorless":
            continue
        i = ENERGY_INDEX[symbol]
        if left[i] == 0:
            return False
        left[i] -= 1
    return sum(left) >= cost.count("Colorless")


def attack_problem(state: GameState, i: int) -> str | None:
    active = state.players[state.current].active
    if active is None:
        return "no Active Pokémon"
    attacks = () if is_fossil(active) else card(active.name).attacks
    if i >= len(attacks):
        return f"{active.name} has no attack {i}"
    if active.conditions & {"asleep", "paralyzed"}:
        return f"{active.name} is {'Asleep' if 'asleep' in active.conditions else 'Paralyzed'}"
    if effect_on(state, active, "cannot_attack") is not None:
        return f"{active.name} can't attack this turn (an attack's effect)"
    if not attack_cost_paid(active.energy, attacks[i].cost):
        return f"{attacks[i].name} needs {'+'.join(attacks[i].cost)}"
    return None


def retreat_cost(pl: Player) -> int:
    """6: the printed cost less X Speed, never below 0."""
    assert pl.active is not None
    return max(0, card(pl.active.name).retreat - pl.x_speed)


def retreat_problem(state: GameState, slot: int) -> str | None:
    pl = state.players[state.current]
    if pl.retreated:
        return "already retreated this turn"
    if pl.active is None:
        return "no Active Pokémon"
    if is_fossil(pl.active):
        return "a fossil cannot retreat"
    if pl.active.conditions & {"asleep", "paralyzed"}:
        return "an Asleep or Paralyzed Pokémon cannot retreat"
    if effect_on(state, pl.active, "cannot_retreat") is not None:
        return f"{pl.active.name} can't retreat this turn (an attack's effect)"
    if pl.bench[slot - 1] is None:
        return f"Bench slot {slot} is empty"
    if pl.active.energy_count < retreat_cost(pl):
        return f"retreating costs {retreat_cost(pl)} Energy"
    return None


def attach_problem(state: GameState, slot: int) -> str | None:
    pl = state.players[state.current]
    if pl.energy_current is None:
        return ("no Energy on the first player's turn 1" if state.turn == 1 else
                "the turn's Energy is already attached")
    if pl.slot(slot) is None:
        return f"slot {slot} is empty"
    return None


def discard_fossil_problem(state: GameState, slot: int) -> str | None:
    pl = state.players[state.current]
    p = pl.slot(slot)
    if p is None or not is_fossil(p):
        return f"no fossil at slot {slot}"
    if len(pl.in_play()) == 1:
        return "the fossil is the only Pokémon in play"  # this engine's choice: no suicide
    return None


def play_problem(state: GameState, h: int, t: int) -> str | None:
    pl = state.players[state.current]
    if h >= len(pl.hand):
        return f"no card at hand index {h}"
    c = card(pl.hand[h])
    if c.is_basic or c.kind == "fossil":
        if t != 0:
            return f"{c.name} goes to the Bench: target 0"
        return None if any(b is None for b in pl.bench) else "the Bench is full"
    if c.is_pokemon:
        return evolve_problem(state, c, t)
    return trainer_problem(state, c, t)


def evolve_problem(state: GameState, c: Card, t: int) -> str | None:
    """5: onto a Pokémon named ``evolves_from``, one stage lower; not on the player's first
    turn, not on a Pokémon that entered play or evolved this turn."""
    target = state.players[state.current].slot(t)
    if target is None:
        return f"slot {t} is empty"
    if c.evolves_from != target.name or stage(target) != c.stage - 1:
        return f"{c.name} does not evolve from {target.name}"
    if own_first_turn(state):
        return "no evolution on a player's first turn"
    if target.entered_turn == state.turn:
        return f"{target.name} entered play this turn"
    if target.evolved_turn == state.turn:
        return f"{target.name} evolved this turn"
    return None


# ---------------------------------------------------------------- Trainers (8)
def trainer_problem(state: GameState, c: Card, t: int) -> str | None:
    if c.kind == "supporter":
        pl = state.players[state.current]
        if pl.played_supporter:
            return "one Supporter per turn"
        if state.turn == 1 and not state.config.supporter_on_turn_1:
            return "no Supporter on the first player's turn 1 (flag supporter_on_turn_1)"
        if pl.supporters_blocked_until >= state.turn:
            return "no Supporters this turn (an attack's effect)"
    hard, soft = TRAINER_CHECKS[str(c.effect)](state, t)
    if hard:
        return f"{c.name}: {hard}"
    if soft and not state.config.allow_no_effect_plays:
        return f"{c.name} would do nothing: {soft} (flag allow_no_effect_plays)"
    return None


Check = tuple[str | None, str | None]  # (target problem, "it would do nothing" problem)


def _untargeted(t: int) -> str | None:
    return None if t == 0 else "takes no target: use target 0"


def _own_target(state: GameState, t: int, names: tuple[str, ...] | None = None,
                ptype: str | None = None) -> tuple[InPlay | None, str | None]:
    p = state.players[state.current].slot(t)
    if p is None:
        return None, f"slot {t} is empty"
    if names is not None and p.name not in names:
        return None, f"{p.name} is not {' or '.join(names)}"
    if ptype is not None and pokemon_type(p) != ptype:
        return None, f"{p.name} is not a {ptype} Pokémon"
    return p, None


def check_potion(state: GameState, t: int) -> Check:
    p, why = _own_target(state, t)
    return why, (None if p is None or p.damage else f"{p.name} has no damage")


def check_erika(state: GameState, t: int) -> Check:
    p, why = _own_target(state, t, ptype="Grass")
    return why, (None if p is None or p.damage else f"{p.name} has no damage")


def check_misty(state: GameState, t: int) -> Check:
    return _own_target(state, t, ptype="Water")[1], None


def check_brock(state: GameState, t: int) -> Check:
    return _own_target(state, t, names=BROCK_POKEMON)[1], None


def check_koga(state: GameState, t: int) -> Check:
    if t != 0:
        return "returns the Active: target 0", None
    return _own_target(state, 0, names=KOGA_POKEMON)[1], None


def check_sabrina(state: GameState, t: int) -> Check:
    opp = state.players[1 - state.current]
    return _untargeted(t), (None if opp.benched() else "the opponent has no Benched Pokémon")


def check_lt_surge(state: GameState, t: int) -> Check:
    if t != 0:
        return "moves Energy to the Active: target 0", None
    _, why = _own_target(state, 0, names=SURGE_POKEMON)
    pl = state.players[state.current]
    has = any(p.energy[ENERGY_INDEX["Lightning"]] for _, p in pl.benched())
    return why, (None if has else "no Lightning Energy on the Bench")


def check_always(state: GameState, t: int) -> Check:
    return _untargeted(t), None


def check_hand_scope(state: GameState, t: int) -> Check:
    opp = state.players[1 - state.current]
    return _untargeted(t), (None if opp.hand else "the opponent's hand is empty")


def check_own_deck(state: GameState, t: int) -> Check:
    pl = state.players[state.current]
    return _untargeted(t), (None if pl.deck else "the deck is empty")


def check_poke_ball(state: GameState, t: int) -> Check:
    """Playable with a non-empty deck: the rules cannot use what the player does not know (is
    there a Basic left?) to decide what they may play."""
    pl = state.players[state.current]
    limit = state.config.hand_limit
    if (state.config.hand_limit_applies_to_search and limit is not None
            and len(pl.hand) - 1 >= limit):
        return _untargeted(t), "the hand is at its limit"
    return _untargeted(t), (None if pl.deck else "the deck is empty")


def check_red_card(state: GameState, t: int) -> Check:
    opp = state.players[1 - state.current]
    return _untargeted(t), (None if opp.hand or opp.deck else "the opponent has no cards")


TRAINER_CHECKS = {
    "potion": check_potion, "erika": check_erika, "misty": check_misty, "brock": check_brock,
    "koga": check_koga, "sabrina": check_sabrina, "lt_surge": check_lt_surge,
    "giovanni": check_always, "blaine": check_always, "x_speed": check_always,
    "hand_scope": check_hand_scope, "pokedex": check_own_deck,
    "professors_research": check_own_deck, "poke_ball": check_poke_ball,
    "red_card": check_red_card,
}


def heal(p: InPlay, amount: int) -> None:
    p.damage = max(0, p.damage - amount)


def play_trainer(state: GameState, c: Card, t: int) -> None:
    pl = state.players[state.current]
    if c.kind == "supporter":
        pl.played_supporter = True
    TRAINER_EFFECTS[str(c.effect)](state, t)
    pl.discard.append(c.name)


def effect_potion(state: GameState, t: int) -> None:
    heal(_slot(state, t), 20)


def effect_erika(state: GameState, t: int) -> None:
    heal(_slot(state, t), 50)


def effect_misty(state: GameState, t: int) -> None:
    """Flip until tails; each heads attaches a Water Energy (not the turn's Energy)."""
    target = _slot(state, t)
    while state.rng.coin():
        target.energy[ENERGY_INDEX["Water"]] += 1


def effect_brock(state: GameState, t: int) -> None:
    _slot(state, t).energy[ENERGY_INDEX["Fighting"]] += 1


def effect_koga(state: GameState, t: int) -> None:
    """The Active Muk or Weezing returns to the hand with its evolution cards; its Energy leaves
    play; then a Benched Pokémon is promoted (an empty Bench: no Pokémon in play, a loss)."""
    pl = state.players[state.current]
    assert pl.active is not None
    pl.hand.extend(pl.active.stack)
    pl.active = None
    if not check_game_over(state):
        ask(state, Decision(state.current, "promote"))


def effect_sabrina(state: GameState, t: int) -> None:
    ask(state, Decision(1 - state.current, "new_active"))


def effect_lt_surge(state: GameState, t: int) -> None:
    pl = state.players[state.current]
    assert pl.active is not None
    i = ENERGY_INDEX["Lightning"]
    for _, p in pl.benched():
        pl.active.energy[i] += p.energy[i]
        p.energy[i] = 0


def effect_giovanni(state: GameState, t: int) -> None:
    state.players[state.current].giovanni = True


def effect_blaine(state: GameState, t: int) -> None:
    state.players[state.current].blaine = True


def effect_x_speed(state: GameState, t: int) -> None:
    state.players[state.current].x_speed += 1


def effect_hand_scope(state: GameState, t: int) -> None:
    pl = state.players[state.current]
    pl.revealed["opponent_hand"] = list(state.players[1 - state.current].hand)


def effect_pokedex(state: GameState, t: int) -> None:
    pl = state.players[state.current]
    pl.revealed["deck_top"] = pl.deck[:3]


def effect_poke_ball(state: GameState, t: int) -> None:
    """A uniformly random Basic Pokémon of the deck (a pick over the deck's Basics in deck
    order) goes to the hand; with none, nothing happens and nothing is drawn."""
    pl = state.players[state.current]
    basics = [i for i, n in enumerate(pl.deck) if card(n).is_basic]
    if basics:
        pl.hand.append(pl.deck.pop(basics[state.rng.pick(len(basics))]))


def effect_red_card(state: GameState, t: int) -> None:
    opp = state.players[1 - state.current]
    opp.deck.extend(opp.hand)
    opp.hand = []
    state.rng.shuffle(opp.deck)
    draw(opp, 3, state.config)


def effect_professors_research(state: GameState, t: int) -> None:
    draw(state.players[state.current], 2, state.config)


TRAINER_EFFECTS = {
    "potion": effect_potion, "erika": effect_erika, "misty": effect_misty,
    "brock": effect_brock, "koga": effect_koga, "sabrina": effect_sabrina,
    "lt_surge": effect_lt_surge, "giovanni": effect_giovanni, "blaine": effect_blaine,
    "x_speed": effect_x_speed, "hand_scope": effect_hand_scope, "pokedex": effect_pokedex,
    "poke_ball": effect_poke_ball, "red_card": effect_red_card,
    "professors_research": effect_professors_research,
}


def _slot(state: GameState, t: int) -> InPlay:
    p = state.players[state.current].slot(t)
    assert p is not None
    return p


# ---------------------------------------------------------------- attacks (7, 11)
@dataclass
class AttackContext:
    """One attack in progress: the base damage so far, and whether it does nothing."""

    damage: int
    nothing: bool = False
    recoil: int = 0  # self-damage a coin decided before the damage step
    dealt: int = 0  # the damage done to the opponent's Active


def extra_energy(p: InPlay, cost: tuple[str, ...], energy_type: str) -> int:
    """Flag ``extra_energy_rule``: attached Energy of the type, less that type's symbols in the
    cost, less the Colorless symbols other attached types cannot pay."""
    i = ENERGY_INDEX[energy_type]
    attached = p.energy[i]
    typed = cost.count(energy_type)
    others = p.energy_count - attached
    colorless_from_type = max(0, cost.count("Colorless") - others)
    return max(0, attached - typed - colorless_from_type)


def base_damage(state: GameState, attacker: InPlay, attack_index: int) -> AttackContext:
    """7 step 1: the printed damage and what the effect text adds (coins, counts)."""
    attack = card(attacker.name).attacks[attack_index]
    ctx = AttackContext(damage=0 if attack.damage_mode == "x" else attack.damage)
    effect = attack.effect
    if effect is not None and effect["template"] in DAMAGE_TEMPLATES:
        DAMAGE_TEMPLATES[effect["template"]](state, attacker, attack.cost, effect, ctx)
    return ctx


def t_multi_coin(state: GameState, me: InPlay, cost: tuple[str, ...], e: dict,
                 ctx: AttackContext) -> None:
    ctx.damage = e["per_heads"] * sum(state.rng.coin() for _ in range(e["coins"]))


def t_flip_until_tails(state: GameState, me: InPlay, cost: tuple[str, ...], e: dict,
                       ctx: AttackContext) -> None:
    heads = 0
    while state.rng.coin():
        heads += 1
    ctx.damage = e["per_heads"] * heads


def t_coin_bonus(state: GameState, me: InPlay, cost: tuple[str, ...], e: dict,
                 ctx: AttackContext) -> None:
    if state.rng.coin():
        ctx.damage += e["bonus"]


def t_all_heads_bonus(state: GameState, me: InPlay, cost: tuple[str, ...], e: dict,
                      ctx: AttackContext) -> None:
    flips = [state.rng.coin() for _ in range(e["coins"])]
    if all(flips):
        ctx.damage += e["bonus"]


def t_coin_bonus_or_recoil(state: GameState, me: InPlay, cost: tuple[str, ...], e: dict,
                           ctx: AttackContext) -> None:
    if state.rng.coin():
        ctx.damage += e["bonus"]
    else:
        ctx.recoil = e["recoil"]


def t_coin_fail(state: GameState, me: InPlay, cost: tuple[str, ...], e: dict,
                ctx: AttackContext) -> None:
    if not state.rng.coin():
        ctx.nothing = True


def t_per_count(state: GameState, me: InPlay, cost: tuple[str, ...], e: dict,
                ctx: AttackContext) -> None:
    if e["count"] == "opponent_active_energy":
        defender = state.players[1 - state.current].active
        n = defender.energy_count if defender is not None else 0
    else:
        bench = state.players[state.current].benched()
        n = sum(1 for _, p in bench if (e["energy"] is None or pokemon_type(p) == e["energy"])
                and (e["name"] is None or p.name == e["name"]))
    ctx.damage += e["per"] * n


def t_bonus_if(state: GameState, me: InPlay, cost: tuple[str, ...], e: dict,
               ctx: AttackContext) -> None:
    defender = state.players[1 - state.current].active
    holds = {
        "extra_energy": lambda: extra_energy(me, cost, e.get("energy") or "") >= e.get("count",
                                                                                       0),
        "self_damaged": lambda: me.damage > 0,
        "opponent_damaged": lambda: defender is not None and defender.damage > 0,
        "opponent_poisoned": lambda: defender is not None and "poisoned" in defender.conditions,
    }[e["predicate"]]()
    if holds:
        ctx.damage += e["bonus"]


DAMAGE_TEMPLATES = {
    "multi_coin": t_multi_coin, "flip_until_tails": t_flip_until_tails,
    "coin_bonus": t_coin_bonus, "all_heads_bonus": t_all_heads_bonus,
    "coin_bonus_or_recoil": t_coin_bonus_or_recoil, "coin_fail": t_coin_fail,
    "per_count": t_per_count, "bonus_if": t_bonus_if,
}


def damage_to_active(state: GameState, attacker: InPlay, defender: InPlay, base: int) -> int:
    """7 steps 2-4: attacker bonuses and +20 Weakness only on damage > 0, then reductions
    (flag ``weakness_before_reduction`` orders the two), floor 0."""
    me = state.players[state.current]
    damage = base
    if damage > 0:
        damage += 10 if me.giovanni else 0
        damage += 30 if me.blaine and attacker.name in BLAINE_POKEMON else 0
    if effect_on(state, defender, "prevent_all") is not None:
        return 0
    reduction = damage_reduction(state, attacker, defender)
    weak = weakness(defender) is not None and pokemon_type(attacker) == weakness(defender)
    if state.config.weakness_before_reduction:
        damage += 20 if weak and damage > 0 else 0
        return max(0, damage - reduction)
    damage = max(0, damage - reduction)
    return damage + (20 if weak and damage > 0 else 0)


def damage_reduction(state: GameState, attacker: InPlay, defender: InPlay) -> int:
    """What T13 effects take off: the attacker's "attacks do -20", the defender's "takes -20"
    (Abilities such as Hard Coat are not supported)."""
    return ((effect_on(state, attacker, "attack_minus") or 0)
            + (effect_on(state, defender, "takes_minus") or 0))


def effect_on(state: GameState, p: InPlay, name: str) -> int | None:
    """The amount of a T13 effect on ``p`` still in force this turn, or None."""
    until_amount = p.effects.get(name)
    if until_amount is None or until_amount[0] < state.turn:
        return None
    return until_amount[1]


def protected(state: GameState, p: InPlay | None) -> bool:
    """Dig's "prevent all damage from and effects of attacks"."""
    return p is not None and effect_on(state, p, "prevent_all") is not None


def use_attack(state: GameState, index: int) -> None:
    """7: Confusion's coin, the damage to the opponent's Active, then the effect text, then
    Knock Outs; attacking ends the turn."""
    me = state.players[state.current]
    attacker = me.active
    assert attacker is not None
    attack = card(attacker.name).attacks[index]
    state.log.append(f"p{state.current}'s {attacker.name} uses {attack.name}")
    end_turn(state)
    if "confused" in attacker.conditions and not state.rng.coin():
        if state.config.confusion_tails == "self_damage_30":
            attacker.damage += 30
        process_knockouts(state)
        return
    ctx = base_damage(state, attacker, index)
    if ctx.nothing:
        return
    defender = state.players[1 - state.current].active
    effect = attack.effect
    if defender is not None and not (effect and effect["template"] == "snipe"):
        ctx.dealt = damage_to_active(state, attacker, defender, ctx.damage)
        defender.damage += ctx.dealt
    state.attack_open = True
    if effect is not None and effect["template"] in AFTER_TEMPLATES:
        AFTER_TEMPLATES[effect["template"]](state, attacker, effect, ctx)
    if ctx.recoil:
        attacker.damage += ctx.recoil
    if not state.pending:
        finish_attack(state)


def finish_attack(state: GameState) -> None:
    """7: Knock Outs once the effect text (and any choice it asked for) has resolved."""
    state.attack_open = False
    process_knockouts(state)


def a_status(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    defender = state.players[1 - state.current].active
    if defender is not None and not protected(state, defender):
        add_condition(defender, e["condition"])


def a_coin_status(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    if state.rng.coin():
        a_status(state, me, e, ctx)


def a_heal_self(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    heal(me, e["amount"])


def a_discard_energy(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    if e["count"] == "all":
        me.energy = [0] * len(ENERGY_TYPES)
        return
    i = ENERGY_INDEX[e["energy"]]
    me.energy[i] = max(0, me.energy[i] - e["count"])


def a_recoil(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    ctx.recoil += e["amount"]


def a_bench_damage(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    """No Weakness and no attack bonuses on the Bench."""
    for _, p in state.players[1 - state.current].benched():
        p.damage += e["amount"]


def a_discard_opponent_energy(state: GameState, me: InPlay, e: dict,
                              ctx: AttackContext) -> None:
    """A uniformly random attached Energy (a pick over the units in ENERGY_TYPES order); the
    coin first where the text has one; no pick when nothing is attached."""
    defender = state.players[1 - state.current].active
    if e["coin"] and not state.rng.coin():
        return
    if defender is None or defender.energy_count == 0 or protected(state, defender):
        return
    units = [i for i, k in enumerate(defender.energy) for _ in range(k)]
    defender.energy[units[state.rng.pick(len(units))]] -= 1


def a_draw(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    draw(state.players[state.current], e["count"], state.config)


def a_reveal_hand(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    pl = state.players[state.current]
    pl.revealed["opponent_hand"] = list(state.players[1 - state.current].hand)


def a_snipe(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    """T12: the attacker chooses one of the opponent's Pokémon (the Bench only, if printed)."""
    opp = state.players[1 - state.current]
    options = [s for s, _ in (opp.benched() if e["bench_only"] else opp.in_play())]
    ask(state, Decision(state.current, "attack_target",
                        {"amount": e["amount"], "options": options}))


def snipe_hit(state: GameState, slot: int, amount: int) -> None:
    """On the Active the whole pipeline (bonuses, Weakness, reductions); on the Bench the
    printed amount only."""
    target = state.players[1 - state.current].slot(slot)
    attacker = state.players[state.current].active
    assert target is not None and attacker is not None
    target.damage += (damage_to_active(state, attacker, target, amount) if slot == 0
                      else amount)


def a_defending_effect(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    """T13 on the opponent's Active, until the end of the opponent's next turn."""
    defender = state.players[1 - state.current].active
    if e["coin"] and not state.rng.coin():
        return
    if defender is not None and not protected(state, defender):
        defender.effects[e["effect"]] = [state.turn + 1, e["amount"]]


def a_self_effect(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    """T13 on the attacker, until the end of the opponent's next turn."""
    if e["coin"] and not state.rng.coin():
        return
    me.effects[e["effect"]] = [state.turn + 1, e["amount"]]


def a_zone_attach(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    """T14: Energy from the Energy Zone (extra, not the turn's): to this Pokémon, or one at a
    time to a chosen Benched Pokémon of the printed type (per heads of ``coins`` coins)."""
    count = e["count"] or sum(state.rng.coin() for _ in range(e["coins"]))
    if e["target"] == "self":
        me.energy[ENERGY_INDEX[e["energy"]]] += count
        return
    pl = state.players[state.current]
    options = [s for s, p in pl.benched() if pokemon_type(p) == e["target_type"]]
    if count and options:
        ask(state, Decision(state.current, "zone_attach",
                            {"energy": e["energy"], "left": count, "options": options}))


def a_search_hand(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    """T16: a random Pokémon of the type from the deck to the hand (a pick over the matching
    cards in deck order; none: no draw)."""
    pl = state.players[state.current]
    limit = state.config.hand_limit
    if (state.config.hand_limit_applies_to_search and limit is not None
            and len(pl.hand) >= limit):
        return
    matches = [i for i, n in enumerate(pl.deck)
               if card(n).is_pokemon and card(n).type == e["type"]]
    if matches:
        pl.hand.append(pl.deck.pop(matches[state.rng.pick(len(matches))]))


def a_search_bench(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    """T16: a random card of the name from the deck onto the Bench (if there is room)."""
    pl = state.players[state.current]
    matches = [i for i, n in enumerate(pl.deck) if n == e["name"]]
    if matches and any(b is None for b in pl.bench):
        put_in_play(pl, pl.deck.pop(matches[state.rng.pick(len(matches))]), state.turn)


def a_switch_opponent(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    """T17: the opponent's Active to the Bench; the opponent chooses the new Active."""
    opp = state.players[1 - state.current]
    if opp.benched() and not protected(state, opp.active):
        ask(state, Decision(1 - state.current, "new_active"))


def a_switch_self(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    ask(state, Decision(state.current, "new_active"))


def a_block_supporters(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    state.players[1 - state.current].supporters_blocked_until = state.turn + 1


def a_discard_opponent_hand(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    opp = state.players[1 - state.current]
    if e["coin"] and not state.rng.coin():
        return
    if opp.hand:
        opp.discard.append(opp.hand.pop(state.rng.pick(len(opp.hand))))


def a_heal_dealt(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    heal(me, ctx.dealt)


def a_own_bench_damage(state: GameState, me: InPlay, e: dict, ctx: AttackContext) -> None:
    """Zapdos: the attacker chooses one of its own Benched Pokémon (no Weakness)."""
    options = [s for s, _ in state.players[state.current].benched()]
    ask(state, Decision(state.current, "own_bench_damage",
                        {"amount": e["amount"], "options": options}))


AFTER_TEMPLATES = {
    "status": a_status, "coin_status": a_coin_status, "heal_self": a_heal_self,
    "discard_energy": a_discard_energy, "recoil": a_recoil, "bench_damage": a_bench_damage,
    "discard_opponent_energy": a_discard_opponent_energy, "draw": a_draw,
    "reveal_hand": a_reveal_hand, "snipe": a_snipe, "defending_effect": a_defending_effect,
    "self_effect": a_self_effect, "zone_attach": a_zone_attach, "search_hand": a_search_hand,
    "search_bench": a_search_bench, "switch_opponent": a_switch_opponent,
    "switch_self": a_switch_self, "block_supporters": a_block_supporters,
    "discard_opponent_hand": a_discard_opponent_hand, "heal_dealt": a_heal_dealt,
    "own_bench_damage": a_own_bench_damage,
}


# ---------------------------------------------------------------- the main-phase actions
def put_in_play(pl: Player, name: str, turn: int) -> None:
    new = InPlay(stack=[name], entered_turn=turn)
    if pl.active is None:
        pl.active = new
    else:
        pl.bench[pl.bench.index(None)] = new


def evolve(state: GameState, name: str, t: int) -> None:
    """5: the card goes on top; damage and Energy stay; Special Conditions are removed."""
    target = _slot(state, t)
    target.stack.append(name)
    target.conditions.clear()
    target.effects.clear()
    target.evolved_turn = state.turn


def retreat(state: GameState, slot: int) -> None:
    """6: discard Energy equal to the cost (flag ``retreat_discard_choice``), then switch."""
    pl = state.players[state.current]
    assert pl.active is not None
    pl.retreated = True
    cost = retreat_cost(pl)
    if cost == 0:
        switch_active(pl, slot)
    elif state.config.retreat_discard_choice == "random":
        for _ in range(cost):
            units = [i for i, k in enumerate(pl.active.energy) for _ in range(k)]
            pl.active.energy[units[state.rng.pick(len(units))]] -= 1
        switch_active(pl, slot)
    elif pl.active.energy_count == cost:
        pl.active.energy = [0] * len(ENERGY_TYPES)
        switch_active(pl, slot)
    else:
        ask(state, Decision(state.current, "retreat_energy", {"bench": slot, "left": cost}))


def attach_energy(state: GameState, slot: int) -> None:
    pl = state.players[state.current]
    assert pl.energy_current is not None
    _slot(state, slot).energy[ENERGY_INDEX[pl.energy_current]] += 1
    pl.energy_current = None
    pl.attached_energy = True


def discard_fossil(state: GameState, slot: int) -> None:
    """8: no points for the opponent; an Active fossil leaves the Active Spot to be filled."""
    pl = state.players[state.current]
    p = pl.slot(slot)
    assert p is not None
    pl.discard.extend(p.stack)
    remove_from_play(pl, slot)
    if slot == 0:
        ask(state, Decision(state.current, "promote"))


def apply(state: GameState, player: int, action: Action) -> None:
    """Perform ``action`` for ``player`` (IllegalAction with the reason if it is not legal),
    then run the game on to the next decision."""
    why = problem(state, player, action)
    if why is not None:
        raise IllegalAction(f"player {player}: {action}: {why}")
    if state.pending:
        d = state.pending.pop(0)
        if d.kind == "setup":
            setup_action(state, d, action)
        else:
            resolve_decision(state, d, action.a)
        if state.attack_open and not state.pending:
            finish_attack(state)
        advance(state)
        return
    pl = state.players[state.current]
    if action.kind == "end":
        end_turn(state)
    elif action.kind == "attack":
        use_attack(state, action.a)
    elif action.kind == "retreat":
        retreat(state, action.a)
    elif action.kind == "attach":
        attach_energy(state, action.a)
    elif action.kind == "discard":
        discard_fossil(state, action.a)
    elif action.kind == "play":
        name = pl.hand.pop(action.a)
        c = card(name)
        if c.is_basic or c.kind == "fossil":
            put_in_play(pl, name, state.turn)
        elif c.is_pokemon:
            evolve(state, name, action.b)
        else:
            play_trainer(state, c, action.b)
    advance(state)


def setup_action(state: GameState, d: Decision, action: Action) -> None:
    """3.3: Basics from the hand to the Active Spot, then the Bench; `end` when done."""
    pl = state.players[d.player]
    if action.kind == "play":
        put_in_play(pl, pl.hand.pop(action.a), 0)
        state.pending.insert(0, d)
        return
    if not any(x.kind == "setup" for x in state.pending):
        finish_setup(state)


assert MAX_HAND >= 19 and BENCH_SIZE == 3  # the action encoding assumes both
