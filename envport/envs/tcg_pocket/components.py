"""L1 component checks of the JAX engine against the reference, one per attack template of the
pool (``spec_support.POOL``), one per Special Condition at the Checkup, one per Trainer of a
pool with Trainers and, for the ``full`` pool, one per fossil rule
(``SPEC.verification.components``).

Each check builds its cases from games the reference deals and plays at random to the main
stage of turn 3 or later, with no decision pending: for a template, the player to move's
Active becomes each Pokémon of the pool whose attack uses it (its whole evolution line, Energy
paying the attack) and attacks, with the generator at 6 positions (so coins fall both ways),
at three of them against the pool's sturdiest Pokémon (``DEFENDER``);
for a condition, both Actives carry it and the player ends the turn (the Checkup), and for
Confusion the Active attacks too. The reference steps each case; the JAX transition (one
jitted, vmapped call over every case of every check, compiled once) must give the same state,
observation, reward and end, field by field. A check with no case in which the attack is
legal, or (for a coin template) in which the reference draws no coin, or (for a template whose
damage the coins decide) in which the defender takes damage and stays in play, fails: it would
check nothing (two coin outcomes that both Knock Out the defender look the same).

``reset:deal`` and ``reset:decks`` check the engine's own resets (``SPEC``'s ``make``,
``dealt.DealtTcgPocket``), which L2 and L3 never call: the game start after the deck choice
against the reference's ``rules.new_game`` on the same decks and generator, and the deck choice
itself (every deck of the dealt table is dealt).

``mask:legal`` compares the JAX engine's legal-action mask (``TcgPocket.action_mask``, i.e.
``rules.legal_mask``, the mask the step checks an action against) with the reference's
``action_mask()``, action by action, on every state of a few short reference games (setup
included), the states the checks above start from, edited setup states and Trainers at the
counts their rules read (see :func:`mask_states`): L2 and L3 draw their actions from the
reference's mask, so a JAX mask that offers more (or other) actions is seen nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from envport.core.seeds import derive_seed
from envport.envs.tcg_pocket.actions import ATTACH, ATTACK, END, RETREAT
from envport.envs.tcg_pocket.cards import ENERGY_INDEX
from envport.envs.tcg_pocket.deck import pool_pokemon, pool_trainer_cards
from envport.envs.tcg_pocket.encode import _TABLE, CARD_ID

CONDITIONS = ("poisoned", "burned", "asleep", "paralyzed", "confused")  # encode order
POSITIONS = 6  # generator positions per case
SEED = 20261201
BATCH = 2048  # cases are padded to this many: one compilation whatever the count


class ComponentMismatch(AssertionError):
    pass


def _base_states(n: int) -> list[dict[str, np.ndarray]]:
    """``n`` states of the main stage (turn >= 3, no decision pending) of reference games."""
    from envport.envs.tcg_pocket.spec_support import make_reference

    ref, game = make_reference(), 0
    out: list[dict[str, np.ndarray]] = []
    rng = np.random.default_rng(SEED)
    while len(out) < n:
        ref.reset(derive_seed(SEED, game))
        game += 1
        for _ in range(200):
            mask = ref.action_mask()
            if not mask.any():
                break
            s = ref.get_state()
            if (int(s["stage"]) == 1 and int(s["turn"]) >= 3 and not (s["pending_kind"] >= 0).any()
                    and rng.random() < 0.3):
                out.append(s)
                break
            ref.step(int(rng.choice(np.flatnonzero(mask))))
    return out


def _chain(name: str) -> np.ndarray:
    names = [name]
    while _TABLE[names[0]].evolves_from in _TABLE:
        names.insert(0, str(_TABLE[names[0]].evolves_from))
    stack = np.zeros(3, np.int16)
    stack[:len(names)] = [CARD_ID[n] for n in names]
    return stack


def _energy_for(card: Any, attack: Any) -> np.ndarray:
    from envport.envs.tcg_pocket.cards import ENERGY_INDEX

    energy = np.zeros(len(ENERGY_INDEX), np.int8)
    for symbol in attack.cost:
        energy[ENERGY_INDEX.get(symbol, ENERGY_INDEX.get(str(card.type), 0))] += 1
    return energy


def _at(state: dict[str, np.ndarray], position: int) -> dict[str, np.ndarray]:
    s = {k: np.array(v, copy=True) for k, v in state.items()}
    s["rng"] = np.array([s["rng"][0], np.uint32(s["rng"][1]) + np.uint32(97 * position)],
                        np.uint32)
    return s


DEFENDER = "Venusaur ex"  # the pool's most HP (190): the opposing Active of half the cases


def _attackers() -> list[tuple[str, int, Any]]:
    """(name, attack index, attack) of every attack with an effect of the pool's Pokémon."""
    from envport.envs.tcg_pocket.spec_support import POOL

    return [(name, i, a) for name in pool_pokemon(POOL, _TABLE) if _TABLE[name].is_pokemon
            for i, a in enumerate(_TABLE[name].attacks) if a.effect is not None]


def pool_templates() -> list[str]:
    """The attack templates of the pool, in the card table's order of first use."""
    return list(dict.fromkeys(str(a.effect["template"]) for _, _, a in _attackers()))


def template_cases() -> dict[str, list[tuple[dict[str, np.ndarray], int]]]:
    """template -> [(state, action)]: every card of the pool with an attack of that template,
    the opposing Active the base state's (generator positions 0-2) or ``DEFENDER`` (3-5, from
    a base state whose player to move is the other player, so that each attack is made by
    both players), free of Special Conditions (0, 3), Poisoned (1, 4) or Asleep (2, 5); the
    attacker is new to the Active Spot (no attack effect on it). A template that asks for a
    choice (a target, a Benched Pokémon, where the Energy goes, a new Active) also gets each
    legal answer to the decision the reference's attack leaves pending
    (:func:`_answers`)."""
    bases = _base_states(8)
    out: dict[str, list[tuple[dict[str, np.ndarray], int]]] = {t: [] for t in pool_templates()}
    for k, (name, i, attack) in enumerate(_attackers()):
        first = bases[k % len(bases)]
        other = next((b for b in bases[k % len(bases):] + bases
                      if int(b["current"]) != int(first["current"])), first)
        for pos in range(POSITIONS):
            base = first if pos < POSITIONS // 2 else other
            p = int(base["current"])
            s = _at(base, pos)
            s["stack"][p, 0] = _chain(name)
            s["energy"][p, 0] = _energy_for(_TABLE[name], attack)
            effect = attack.effect or {}
            if effect.get("predicate") == "extra_energy":
                # one below, at and one above the extra Energy the bonus asks for (the cost's
                # Colorless paid with the same type: ``extra_energy``'s own subtraction)
                s["energy"][p, 0, ENERGY_INDEX[effect["energy"]]] += (
                    effect["count"] - 1 + pos % 3)
            s["conditions"][p, 0] = False
            s["effect_until"][p, 0] = -1
            s["effect_amount"][p, 0] = 0
            s["damage"][p, 0] = 10 * (pos % 3)
            if pos >= POSITIONS // 2:
                # a defender that outlives the attack, so that a coin's damage (bonus or
                # none) shows in its damage, not in a Knock Out both outcomes share
                s["stack"][1 - p, 0] = _chain(DEFENDER)
            s["damage"][1 - p, 0] = 10 * (pos % 2)
            # the defender already Poisoned or Asleep at positions 1, 4 and 2, 5: an inflicted
            # condition stacks with Poison and replaces Sleep
            s["conditions"][1 - p, 0] = False
            if pos % 3:
                held = ("poisoned", "asleep")[pos % 3 - 1]
                s["conditions"][1 - p, 0, CONDITIONS.index(held)] = True
            if effect["template"] in ("search_hand", "search_bench"):
                _searchable(s, p, effect)
            group = out[str(effect["template"])]
            group.append((s, ATTACK + i))
            group += _answers(s, ATTACK + i)
    return out


def _searchable(s: dict[str, np.ndarray], p: int, effect: dict[str, Any]) -> None:
    """Cards a search finds, spread through player ``p``'s deck (at indices 1, 4 and 7 of a
    deck that long), so that which one the pick takes shows in the deck left behind; for a
    search to the Bench, room on it (slot 3 emptied)."""
    if effect["template"] == "search_bench":
        names = [str(effect["name"])] * 2
        for key in ("stack", "energy", "damage", "conditions", "effect_amount"):
            s[key][p, 3] = 0
        s["effect_until"][p, 3] = -1
    else:
        names = [c.name for c in _TABLE.supported() if c.is_basic and c.type == effect["type"]][:3]
    n = int((s["deck"][p] > 0).sum())
    for j, name in enumerate(names):
        if 1 + 3 * j < n:
            s["deck"][p, 1 + 3 * j] = CARD_ID[name]


CHOICES = ("attack_target", "own_bench_damage", "zone_attach", "new_active")


def _answers(state: dict[str, np.ndarray], action: int
             ) -> list[tuple[dict[str, np.ndarray], int]]:
    """(the state the reference's ``action`` leaves, each legal answer) when it leaves one of
    an attack's ``CHOICES`` pending: the choice's resolution (the target's damage, the Energy
    attached, the switch) and the Knock Outs after it."""
    from envport.envs.tcg_pocket.encode import DECISIONS
    from envport.envs.tcg_pocket.spec_support import make_reference

    ref = _PRIVATE_REF.setdefault("ref", make_reference())
    ref.set_state(state)
    if not ref.action_mask()[action]:
        return []
    ref.step(action)
    after = ref.get_state()
    kind = int(after["pending_kind"][0])
    if kind < 0 or DECISIONS[kind] not in CHOICES:
        return []
    return [(after, int(a)) for a in np.flatnonzero(ref.action_mask())]


_PRIVATE_REF: dict[str, Any] = {}


def condition_cases() -> dict[str, list[tuple[dict[str, np.ndarray], int]]]:
    """condition -> [(state, action)]: both Actives carry it; the turn ends (the Checkup), and
    for Confusion the Active also attacks (its coin)."""
    bases = _base_states(8)
    out: dict[str, list[tuple[dict[str, np.ndarray], int]]] = {}
    for c, name in enumerate(CONDITIONS):
        cases = []
        for j, base in enumerate(bases):
            for pos in range(POSITIONS // 2):
                s = _at(base, pos)
                s["conditions"][:, 0] = False
                s["conditions"][:, 0, c] = True
                s["damage"][:, 0] = 10 * (j % 3)
                cases.append((s, END))
                if name == "confused":
                    p = int(s["current"])
                    attack = next(a for a in _TABLE[_name(s["stack"][p, 0])].attacks)
                    s = dict(s, energy=s["energy"].copy())
                    s["energy"][p, 0] = np.maximum(s["energy"][p, 0],
                                                   _energy_for(_TABLE[_name(s["stack"][p, 0])],
                                                               attack))
                    cases.append((s, ATTACK))
        out[name] = cases
    return out


def game_end_cases() -> dict[str, list[tuple[dict[str, np.ndarray], int]]]:
    """``end:both_win``: both Actives Poisoned with 10 HP left and both players at 2 points;
    the turn ends and the Checkup knocks both out (both reach 3 points at once: a draw, spec
    9.2), with and without Benched Pokémon to promote."""
    bases = _base_states(8)
    cases = []
    for j, base in enumerate(bases):
        for pos in range(2):
            s = _at(base, pos)
            s["conditions"][:, 0] = False
            s["conditions"][:, 0, 0] = True
            for p in range(2):
                s["damage"][p, 0] = int(_hp_of(s["stack"][p, 0])) - 10
            s["points"][:] = 2
            if j % 2:
                s["stack"][:, 1:] = 0
            cases.append((s, END))
    return {"both_win": cases}


# The Active each Trainer's check asks for where it asks for one (its target; Lt. Surge's
# Active), and how many of the opponent's Bench Sabrina finds (1: switched at once; 2: the
# opponent's choice)
TRAINER_ACTIVE = {"erika": "Bulbasaur", "misty": "Squirtle", "brock": "Onix", "lt_surge": "Raichu",
                  "potion": None, "koga": "Muk"}


def trainer_cases() -> dict[str, list[tuple[dict[str, np.ndarray], int]]]:
    """effect -> [(state, action)]: each Trainer of the pool in the player to move's hand
    (index 0), no Supporter played yet, the board set so that its check passes (a damaged
    target, the named Pokémon, Lightning Energy on the Bench, one or two opposing Benched
    Pokémon), played on the Active (target 0) and, for a targeted card, on Bench slot 1; the
    generator at 3 positions (Misty's coins, Poké Ball's pick, Red Card's shuffle); for
    Giovanni and Blaine, whose bonus comes later in the turn, also an attack once played
    (:func:`_attack_after`); for Poké Ball also a deck with no Basic (:func:`_without_basics`)."""
    from envport.envs.tcg_pocket.actions import PLAY
    from envport.envs.tcg_pocket.cards import ENERGY_INDEX
    from envport.envs.tcg_pocket.spec_support import POOL

    bases = _base_states(8)
    out: dict[str, list[tuple[dict[str, np.ndarray], int]]] = {}
    for name in pool_trainer_cards(POOL, _TABLE):
        effect = str(_TABLE[name].effect)
        cases = []
        for j, base in enumerate(bases):
            for pos in range(POSITIONS // 2):
                s = _at(base, pos)
                p, o = int(s["current"]), 1 - int(s["current"])
                s["hand"][p, 0] = CARD_ID[name]
                s["played_supporter"][p] = False
                s["supporters_blocked_until"][p] = -1
                who = TRAINER_ACTIVE.get(effect, "")
                targets = [0]
                if effect in TRAINER_ACTIVE:
                    if who:
                        s["stack"][p, 0] = _chain(who)
                        s["stack"][p, 1] = _chain(who)
                        s["entered_turn"][p, 1] = 0
                    s["damage"][p, :2] = [10 * (1 + j % 3), 10 * (1 + pos)]
                    targets = [0, 1] if effect not in ("lt_surge", "koga") else [0]
                if effect == "lt_surge":
                    s["energy"][p, 1, ENERGY_INDEX["Lightning"]] = 1 + pos
                if effect == "sabrina":
                    s["stack"][o, 1] = s["stack"][o, 0]
                    s["stack"][o, 2] = s["stack"][o, 0] if j % 2 else 0
                    s["damage"][o, 1:3] = 0
                for t in targets:
                    cases.append((s, PLAY + t))
                if effect == "poke_ball":
                    cases.append((_without_basics(s, p, CARD_ID[name]), PLAY))
                if effect in ATTACK_BONUS_TRAINERS:
                    cases.append((_attack_after(s, effect, j, pos), ATTACK))
        out[effect] = cases
    return out


FOSSIL_CHECKS = ("play", "evolve", "discard")


def fossil_cases() -> dict[str, list[tuple[dict[str, np.ndarray], int]]]:
    """``fossil:play``: each fossil from the hand (index 0) to a Bench with room;
    ``fossil:evolve``: its supported evolution from the hand onto the fossil, Benched (slot 1)
    or Active, in play since an earlier turn; ``fossil:discard``: the fossil discarded from
    Bench slot 1, or from the Active Spot with one Benched Pokémon (promoted at once) or two
    (a promotion to choose). Random games of the pool seldom hold a fossil line."""
    from envport.envs.tcg_pocket.actions import DISCARD, PLAY

    bases = _base_states(8)
    fossils = [c.name for c in _TABLE.cards.values() if c.kind == "fossil"]
    out: dict[str, list[tuple[dict[str, np.ndarray], int]]] = {n: [] for n in FOSSIL_CHECKS}
    for j, base in enumerate(bases):
        for k, fossil in enumerate(fossils):
            s = _at(base, k)
            p = int(s["current"])
            for key in ("stack", "energy", "damage", "conditions", "effect_until",
                        "effect_amount"):
                s[key][p, 3] = -1 if key == "effect_until" else 0
            s["hand"][p, 0] = CARD_ID[fossil]
            out["play"].append((s, PLAY))
            evolutions = [c.name for c in _TABLE.supported() if c.evolves_from == fossil]
            for slot in (1, 0):
                e = {key: np.array(v, copy=True) for key, v in s.items()}
                e["stack"][p, slot] = [CARD_ID[fossil], 0, 0]
                e["energy"][p, slot] = 0
                e["damage"][p, slot] = 10 * (j % 3)
                e["conditions"][p, slot] = False
                e["entered_turn"][p, slot] = max(0, int(e["turn"]) - 2)
                e["evolved_turn"][p, slot] = -1
                for name in evolutions:
                    ev = {key: np.array(v, copy=True) for key, v in e.items()}
                    ev["hand"][p, 0] = CARD_ID[name]
                    out["evolve"].append((ev, PLAY + slot))
                if slot == 0:
                    e["stack"][p, 2] = e["stack"][p, 1] if j % 2 else 0
                    if not e["stack"][p, 1, 0]:
                        e["stack"][p, 1] = _chain(DEFENDER)
                out["discard"].append((e, DISCARD + slot))
    return out


def _without_basics(case: dict[str, np.ndarray], p: int, filler: int) -> dict[str, np.ndarray]:
    """``case`` with the Basics of player ``p``'s deck taken out (the rest kept in order; a
    deck of Basics only becomes one ``filler`` card): Poké Ball is playable on a non-empty
    deck whatever it holds, and with no Basic it draws nothing and takes no pick."""
    s = {k: np.array(v, copy=True) for k, v in case.items()}
    rest = [c for c in s["deck"][p] if c and not _TABLE[_card(c)].is_basic] or [filler]
    s["deck"][p] = 0
    s["deck"][p, :len(rest)] = rest
    return s


# The Supporters whose effect is a damage bonus later in the turn (Giovanni: +10 to every
# attack; Blaine: +30 for these Pokémon): their checks also attack with the bonus in force
ATTACK_BONUS_TRAINERS = ("giovanni", "blaine")
BLAINE_POKEMON = ("Ninetales", "Rapidash", "Magmar")


def _attack_after(case: dict[str, np.ndarray], effect: str, j: int, pos: int
                  ) -> dict[str, np.ndarray]:
    """``case`` once the Supporter was played this turn (its flag set, the card gone from the
    hand): the player to move's Active (a Blaine Pokémon but at position 2 for Blaine, the
    base state's Active there) attacks ``DEFENDER``, which outlives it, so the bonus shows."""
    s = {k: np.array(v, copy=True) for k, v in case.items()}
    p = int(s["current"])
    s["hand"][p] = np.concatenate([s["hand"][p][1:], [0]])
    s["played_supporter"][p] = True
    s[effect][p] = True
    if effect == "giovanni" or pos < 2:
        s["stack"][p, 0] = _chain(BLAINE_POKEMON[(j + pos) % len(BLAINE_POKEMON)])
    name = _name(s["stack"][p, 0])
    s["energy"][p, 0] = _energy_for(_TABLE[name], _TABLE[name].attacks[0])
    s["conditions"][p, 0] = False
    s["stack"][1 - p, 0] = _chain(DEFENDER)
    s["damage"][1 - p, 0] = 10 * pos
    return s


MASK_GAMES = 4  # games 0-1: random legal players; 2-3: the greedy heuristic on both sides
MASK_BATCH = 2048  # states are padded to this many: one compilation whatever the count


def _game_states() -> list[dict[str, np.ndarray]]:
    """Every state of ``MASK_GAMES`` reference games, from the deal (setup) to the end."""
    from envport.envs.tcg_pocket.spec_support import make_reference

    ref, out = make_reference(), []
    for g in range(MASK_GAMES):
        rng = np.random.default_rng(derive_seed(SEED, 1000 + g))
        ref.reset(derive_seed(SEED, 1000 + g))
        for _ in range(400):
            out.append(ref.get_state())
            mask = ref.action_mask()
            if not mask.any():
                break
            a = (ref.scripted_action(rng) if g >= 2 else int(rng.choice(np.flatnonzero(mask))))
            ref.step(a)
    return out


def _setup_edits(states: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """Setup states with the Active Spot of the player to act emptied and the Bench full (a
    board play never makes, the Active filling first, but one the reference accepts: a Basic
    may still go to the Active Spot) or emptied too."""
    out = []
    for s in states:
        p = int(s["pending_player"][0])
        if int(s["stage"]) != 0 or int(s["pending_kind"][0]) != 0 or p < 0:
            continue
        basics = [c for c in s["hand"][p] if c and _TABLE[_card(c)].is_basic]
        if not basics:
            continue
        for full in (True, False):
            e = {k: np.array(v, copy=True) for k, v in s.items()}
            e["stack"][p] = 0
            if full:
                e["stack"][p, 1:, 0] = basics[0]
            out.append(e)
    return out


def _trainer_edits() -> list[dict[str, np.ndarray]]:
    """Each Trainer of the pool in the hand of the player to move (its check's first case) with
    the counts its rule reads at their boundary: the opponent's hand empty and its deck cut to
    0 or 1 card (Hand Scope, Red Card), the player's own deck cut to 0 or 1 (Pokédex,
    Professor's Research, Poké Ball): late-game boards that random games seldom reach; and
    Lt. Surge's with a Bench but no Lightning Energy on it (the card would move nothing)."""
    from envport.envs.tcg_pocket.cards import ENERGY_INDEX
    from envport.envs.tcg_pocket.spec_support import POOL

    if not pool_trainer_cards(POOL):
        return []
    out = []
    for effect, cases in trainer_cases().items():
        base, _ = cases[0]
        p = int(base["current"])
        if effect == "lt_surge":
            e = {k: np.array(v, copy=True) for k, v in base.items()}
            e["energy"][p, 1:, ENERGY_INDEX["Lightning"]] = 0
            out.append(e)
        for side, keep in ((1 - p, 0), (1 - p, 1), (p, 0), (p, 1)):
            e = {k: np.array(v, copy=True) for k, v in base.items()}
            if side != p:
                e["hand"][side] = 0
            e["deck"][side, keep:] = 0
            out.append(e)
    return out


EFFECT_EDITS = 48  # at most this many "cannot attack / retreat" states (:func:`_effect_edits`)


def _effect_edits(states: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """Main-phase states whose player to move may both attack and retreat, with "cannot
    attack" or "cannot retreat" on its Active until the turn before, this turn and the next:
    the boundary of ``rules.effect_on``'s ``until >= turn``, which attacks seldom set on an
    Active that could do both (T13: Vulpix, Omastar, Arbok)."""
    from envport.envs.tcg_pocket.encode import EFFECTS
    from envport.envs.tcg_pocket.spec_support import make_reference

    ref, out = make_reference(), list[dict[str, np.ndarray]]()
    for s in states:
        if len(out) >= EFFECT_EDITS:
            break
        if int(s["stage"]) != 1:
            continue
        ref.set_state(s)
        mask = ref.action_mask()
        if not (mask[ATTACK:RETREAT].any() and mask[RETREAT:ATTACH].any()):
            continue
        p, turn = int(s["current"]), int(s["turn"])
        for name in ("cannot_attack", "cannot_retreat"):
            for until in (turn - 1, turn, turn + 1):
                e = {k: np.array(v, copy=True) for k, v in s.items()}
                e["effect_until"][p, 0, EFFECTS.index(name)] = until
                e["effect_amount"][p, 0, EFFECTS.index(name)] = 0
                out.append(e)
    return out


OPTION_EDITS = 12  # at most this many "choose among these slots" states (:func:`_option_edits`)


def _option_edits(states: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """Main-phase states whose opponent has a Bench, with the player to move asked to choose
    among a subset of the opponent's slots (an ``attack_target`` decision with its options):
    alone in the queue, and ahead of a second such decision with other options (T12's
    attacks ask one at a time; two queued are a state the mask must still read right)."""
    from envport.envs.tcg_pocket.encode import DECISIONS

    out = list[dict[str, np.ndarray]]()
    for s in states:
        if len(out) >= OPTION_EDITS:
            break
        p = int(s["current"])
        slots = np.flatnonzero(s["stack"][1 - p, :, 0])
        if int(s["stage"]) != 1 or int(s["pending_kind"][0]) >= 0 or len(slots) < 2:
            continue
        for queued in (1, 2):
            e = {k: np.array(v, copy=True) for k, v in s.items()}
            for i, options in enumerate([slots[1:], slots[:1]][:queued]):
                e["pending_kind"][i] = DECISIONS.index("attack_target")
                e["pending_player"][i] = p
                e["pending_amount"][i] = 20
                e["pending_options"][i] = False
                e["pending_options"][i, options] = True
                e["pending_has_options"][i] = True
            out.append(e)
    return out


def _card(card_id: int) -> str:
    from envport.envs.tcg_pocket.encode import CARD_NAMES

    return CARD_NAMES[int(card_id) - 1]


@cache
def mask_states() -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
    """(state, the reference's mask) for ``mask:legal``: every state of :func:`_game_states`,
    its setup edits, the states every other check starts from, :func:`_trainer_edits` and
    :func:`_effect_edits` and :func:`_option_edits`,
    each in the reference's own form (set, then read back), each board once."""
    from envport.envs.tcg_pocket.spec_support import make_reference

    games = _game_states()
    states = (games + _setup_edits(games) + [s for _, s, _, _ in _reference_side()]
              + _trainer_edits() + _effect_edits(games) + _option_edits(games))
    ref, out, seen = make_reference(), [], set()
    for s in states:
        ref.set_state(s)
        s = ref.get_state()
        # the checks' cases repeat a board at several generator positions: one is enough
        key = b"".join(np.ascontiguousarray(v).tobytes() for k, v in s.items() if k != "rng")
        if key not in seen:
            seen.add(key)
            out.append((s, ref.action_mask().copy()))
    if len(out) > MASK_BATCH:
        raise ComponentMismatch(f"{len(out)} mask states: raise MASK_BATCH ({MASK_BATCH})")
    return out


_JAX_MASKS: dict[tuple[int, ...], np.ndarray] = {}


def _check_mask() -> None:
    import jax
    import jax.numpy as jnp

    from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge
    from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket

    cases, version = mask_states(), _engine_version()
    if version not in _JAX_MASKS:
        bridge, env = TcgPocketBridge(), TcgPocket()
        states = [bridge.to_jax(s) for s, _ in cases]
        states += [states[0]] * (MASK_BATCH - len(states))
        batch = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)
        _JAX_MASKS.clear()
        _JAX_MASKS[version] = np.asarray(jax.jit(jax.vmap(env.action_mask))(batch))
    got = _JAX_MASKS[version]
    if not any(want.any() for _, want in cases) or not any(
            int(s["stage"]) == 0 for s, _ in cases):
        raise ComponentMismatch("mask:legal: no state with a legal action, or none of the setup")
    for i, (s, want) in enumerate(cases):
        if not np.array_equal(got[i], want):
            extra = np.flatnonzero(got[i] & ~want).tolist()
            missing = np.flatnonzero(want & ~got[i]).tolist()
            raise ComponentMismatch(f"mask:legal: state {i} of {len(cases)} (stage "
                                    f"{int(s['stage'])}, turn {int(s['turn'])}): the engine "
                                    f"offers {extra} beyond the reference's mask and lacks "
                                    f"{missing}")


RESETS = 8192  # the JAX engine's dealt resets of ``reset:decks`` (two decks each)
RESET_CASES = 96  # of them, compared with the reference's ``new_game`` by ``reset:deal``


def _deck_keys() -> dict[tuple[tuple[int, ...], tuple[int, ...]], int]:
    """(sorted card ids, Energy types) -> index of each deck of the dealt table (``dealt``'s
    ``pool_decks`` of ``POOL``, the reference's deck builder); every deck's key is distinct."""
    from envport.envs.tcg_pocket.dealt import pool_decks
    from envport.envs.tcg_pocket.spec_support import POOL

    cards, types = pool_decks(POOL)
    keys = {(tuple(sorted(c)), tuple(t)): i for i, (c, t) in
            enumerate(zip(cards.tolist(), types.tolist(), strict=True))}
    if len(keys) != len(cards):
        raise ComponentMismatch("reset: two decks of the dealt table hold the same cards: a "
                                "dealt deck cannot be told from its cards")
    return keys


def _dealt_index(s: dict[str, np.ndarray], p: int,
                 keys: dict[tuple[tuple[int, ...], tuple[int, ...]], int]) -> int:
    """The deck of the table player ``p`` was dealt in the reset state ``s`` (its cards are
    all in its deck and hand after a deal), or -1 if those cards are no deck of the table."""
    cards = [int(c) for c in np.concatenate([s["deck"][p], s["hand"][p]]) if c]
    return keys.get((tuple(sorted(cards)), tuple(int(t) for t in s["energy_types"][p])), -1)


_JAX_RESETS: dict[tuple[int, ...], Any] = {}


def _jax_resets() -> tuple[list[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """``RESETS`` resets of ``SPEC``'s engine (``dealt.DealtTcgPocket``: the class looked up
    in ``jax_env`` at call time, so a mutant's), one jitted, vmapped call per engine version:
    (the states in the reference's form, {"obs": the reset's observation, "obs0"/"obs1": each
    player's, "mask": ``action_mask``})."""
    import jax
    import jax.numpy as jnp

    from envport.envs.tcg_pocket.dealt import DealtTcgPocket
    from envport.envs.tcg_pocket.jax_engine import encode as E
    from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge

    version = _engine_version()
    if version not in _JAX_RESETS:
        env = DealtTcgPocket()

        def one(key: Any) -> Any:
            s, obs = env.reset(key)
            return s, {"obs": obs, "obs0": E.observation_vector(s, jnp.int32(0)),
                       "obs1": E.observation_vector(s, jnp.int32(1)), "mask": env.action_mask(s)}

        keys = jax.random.split(jax.random.key(SEED), RESETS)
        states, views = jax.tree_util.tree_map(np.asarray, jax.jit(jax.vmap(one))(keys))
        bridge = TcgPocketBridge()
        flat = [bridge.from_jax(jax.tree_util.tree_map(lambda x, i=i: x[i], states))
                for i in range(RESETS)]
        _JAX_RESETS.clear()
        _JAX_RESETS[version] = (flat, views)
    return _JAX_RESETS[version]


def _check_reset_deal() -> None:
    """``reset:deal``: the JAX engine's game start after its deck choice (``rules.new_game``:
    both shuffles and opening hands, the first-player coin, the two setup decisions) against
    the reference's ``rules.new_game`` on the same two decks (told from the dealt cards) and
    the same generator (the reset state's key, counter 0), on ``RESET_CASES`` resets: the
    state field by field, the mask of the player to act, the reset's observation and both
    players' observations. Fails if the cases do not see both first players."""
    from envport.envs.tcg_pocket import encode
    from envport.envs.tcg_pocket.cards import ENERGY_TYPES
    from envport.envs.tcg_pocket.dealt import pool_decks
    from envport.envs.tcg_pocket.deck import Deck
    from envport.envs.tcg_pocket.encode import CARD_NAMES
    from envport.envs.tcg_pocket.rng import Rng
    from envport.envs.tcg_pocket.spec_support import POOL, make_reference

    states, views = _jax_resets()
    keys, (cards, types) = _deck_keys(), pool_decks(POOL)
    ref, firsts = make_reference(), set()
    for i, s in enumerate(states[:RESET_CASES]):
        index = [_dealt_index(s, p, keys) for p in (0, 1)]
        if min(index) < 0:
            raise ComponentMismatch(f"reset:deal: reset {i}: the cards of player "
                                    f"{index.index(-1)}'s deck and hand are no deck of the "
                                    "dealt table (a deal keeps the deck's 20 cards)")
        decks = tuple(Deck(tuple(CARD_NAMES[c - 1] for c in cards[d] if c),
                           tuple(ENERGY_TYPES[t] for t in types[d] if t >= 0)) for d in index)
        ref.game.reset(0, (decks[0], decks[1]),
                       rng=Rng.at(np.asarray([s["rng"][0], 0], np.uint32)))
        want = ref.get_state()
        bad = [k for k in want if not np.array_equal(s[k], want[k])]
        if not np.array_equal(views["mask"][i], ref.action_mask()):
            bad.append("mask")
        to_act = ref.game.to_act()
        if not np.array_equal(views["obs"][i], encode.observation_vector(want, to_act or 0)):
            bad.append("obs")
        for p in (0, 1):
            if not np.array_equal(views[f"obs{p}"][i], encode.observation_vector(want, p)):
                bad.append(f"obs of player {p}")
        if bad:
            raise ComponentMismatch(f"reset:deal: reset {i} (decks {index}) differs from the "
                                    f"reference's new_game in {', '.join(bad)}")
        firsts.add(int(want["first"]))
    if firsts != {0, 1}:
        raise ComponentMismatch(f"reset:deal: the first player was {firsts} in every case")


def _check_reset_decks() -> None:
    """``reset:decks``: the JAX engine's resets deal each player a deck of the dealt table
    (``dealt.pool_decks``, built by the reference's deck builder), uniformly with replacement,
    so over ``RESETS`` resets (2 * 8192 = 16,384 deals of 512 decks) every deck of the table
    is dealt: by chance a given deck is missed with probability (511/512)**16384 < 1.3e-14,
    some deck with probability below 512 times that, < 6.3e-12. A reset whose cards are no
    deck of the table fails too."""
    from envport.envs.tcg_pocket.dealt import N_DECKS

    states, _ = _jax_resets()
    keys = _deck_keys()
    dealt = np.zeros(N_DECKS, np.int64)
    for i, s in enumerate(states):
        for p in (0, 1):
            d = _dealt_index(s, p, keys)
            if d < 0:
                raise ComponentMismatch(f"reset:decks: reset {i}: player {p}'s cards are no "
                                        "deck of the dealt table")
            dealt[d] += 1
    never = np.flatnonzero(dealt == 0)
    if len(never):
        raise ComponentMismatch(f"reset:decks: in {RESETS} resets, {len(never)} of the "
                                f"{N_DECKS} decks were never dealt (first: {never[:5].tolist()})")


def _hp_of(stack: np.ndarray) -> int:
    return int(_TABLE[_name(stack)].hp)


def _name(stack: np.ndarray) -> str:
    from envport.envs.tcg_pocket.encode import CARD_NAMES

    return CARD_NAMES[int(stack[stack > 0][-1]) - 1]


COIN_TEMPLATES = ("coin_status", "multi_coin", "coin_bonus", "coin_fail", "flip_until_tails",
                  "all_heads_bonus", "coin_bonus_or_recoil")
# the templates whose damage the coins decide: their check needs a case whose defender takes
# the damage and stays in play (two outcomes that both Knock Out look the same)
COIN_DAMAGE_TEMPLATES = ("multi_coin", "coin_bonus", "flip_until_tails", "all_heads_bonus",
                         "coin_bonus_or_recoil")
RANDOM_TRAINERS = ("misty", "poke_ball", "red_card")
ENGINE_MODULES = ("rules", "rng", "cards", "encode", "game", "jax_env", "state")


@cache
def _reference_side() -> list[tuple[str, dict[str, np.ndarray], int, Any]]:
    """(check, state, action, the reference's (state, obs, reward, done, draws) or None where
    the action is illegal) of every case: the reference does not change between calls."""
    from envport.envs.tcg_pocket.spec_support import make_reference

    groups = {f"template:{t}": c for t, c in template_cases().items()}
    groups |= {f"checkup:{n}": c for n, c in condition_cases().items()}
    groups |= {f"end:{n}": c for n, c in game_end_cases().items()}
    from envport.envs.tcg_pocket.spec_support import POOL

    if pool_trainer_cards(POOL):
        groups |= {f"trainer:{n}": c for n, c in trainer_cases().items()}
    if POOL == "full":
        groups |= {f"fossil:{n}": c for n, c in fossil_cases().items()}
    ref = make_reference()
    flat: list[tuple[str, dict[str, np.ndarray], int, Any]] = []
    for group, cases in groups.items():
        for edited, action in cases:
            # The reference's own form of the edited state (an emptied slot's Energy and
            # turns are dropped as set_state rebuilds the board): both sides start from it.
            ref.set_state(edited)
            s = ref.get_state()
            if not ref.action_mask()[action]:
                flat.append((group, s, action, None))
                continue
            obs, reward, done, _, _ = ref.step(action)
            flat.append((group, s, action, (ref.get_state(), obs, reward, done,
                                            int(ref.tape()["count"]))))
    if len(flat) > BATCH:
        raise ComponentMismatch(f"{len(flat)} cases: raise BATCH ({BATCH})")
    return flat


def _engine_version() -> tuple[int, ...]:
    """The identity of every object of the engine's modules: a mutant (``envport mutate``
    re-executes one statement in its module) is a new version, stepped anew."""
    import importlib

    return tuple(id(v) for m in ENGINE_MODULES for v in vars(importlib.import_module(
        f"envport.envs.tcg_pocket.jax_engine.{m}")).values())


_JAX_SIDE: dict[tuple[int, ...], Any] = {}


def _results() -> dict[str, Any]:
    """Every case of every check stepped by the reference and by the JAX engine (one jitted,
    vmapped call per engine version, shared by all the checks)."""
    import jax
    import jax.numpy as jnp

    from envport.envs.tcg_pocket.jax_engine.bridge import TcgPocketBridge
    from envport.envs.tcg_pocket.jax_engine.jax_env import TcgPocket

    flat, version, bridge = _reference_side(), _engine_version(), TcgPocketBridge()
    if version not in _JAX_SIDE:
        env = TcgPocket()
        states = [bridge.to_jax(s) for _, s, _, _ in flat]
        states += [states[0]] * (BATCH - len(states))
        actions = [a for _, _, a, _ in flat] + [END] * (BATCH - len(flat))
        batch = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *states)
        params = env.default_params()

        def one(s: Any, a: Any) -> Any:
            r = env.transition(s, a, env.sample_draws(jax.random.key(0), s, params), params)
            return r.state, r.obs, r.reward, r.terminated

        got = jax.jit(jax.vmap(one))(batch, jnp.asarray(actions, jnp.int32))
        _JAX_SIDE.clear()
        _JAX_SIDE[version] = jax.tree_util.tree_map(np.asarray, got)
    return {"flat": flat, "got": _JAX_SIDE[version], "bridge": bridge}


def _check(group: str) -> None:
    import jax

    res = _results()
    n_legal = draws = survived = attacks = 0
    for i, (g, before, action, want) in enumerate(res["flat"]):
        if g != group or want is None:
            continue
        n_legal += 1
        attacks += g.startswith("trainer:") and ATTACK <= action < RETREAT
        state, obs, reward, done, n_draws = want
        draws += n_draws
        o = 1 - int(before["current"])
        survived += bool(np.array_equal(state["stack"][o, 0], before["stack"][o, 0])
                         and state["damage"][o, 0] > before["damage"][o, 0])
        s_i = jax.tree_util.tree_map(lambda x, i=i: x[i], res["got"][0])
        mine = res["bridge"].from_jax(s_i)
        bad = [k for k in state if not np.array_equal(mine[k], state[k])]
        if not np.array_equal(res["got"][1][i], obs):
            bad.append("obs")
        if float(res["got"][2][i]) != reward or bool(res["got"][3][i]) != done:
            bad.append("reward/terminated")
        if bad:
            raise ComponentMismatch(f"{group}: case {i} (action {action}) differs from the "
                                    f"reference in {', '.join(bad)}")
    if n_legal == 0:
        raise ComponentMismatch(f"{group}: no case where the action is legal: nothing checked")
    if group.removeprefix("template:") in COIN_TEMPLATES and draws == 0:
        raise ComponentMismatch(f"{group}: the reference drew no coin in any case")
    if group.removeprefix("template:") in COIN_DAMAGE_TEMPLATES and survived == 0:
        raise ComponentMismatch(f"{group}: the defender was knocked out or undamaged in every "
                                "case: the coins' damage is not seen")
    if group.removeprefix("trainer:") in ATTACK_BONUS_TRAINERS and attacks == 0:
        raise ComponentMismatch(f"{group}: no legal attack with the bonus in force")
    if group.removeprefix("trainer:") in RANDOM_TRAINERS and draws == 0:
        raise ComponentMismatch(f"{group}: the reference drew nothing in any case")


def components() -> dict[str, Callable[[], None]]:
    """name -> check, for ``Verification.components``."""
    from envport.envs.tcg_pocket.spec_support import POOL

    names = ([f"template:{t}" for t in pool_templates()] + [f"checkup:{c}" for c in CONDITIONS]
             + ["end:both_win"])
    names += [f"trainer:{_TABLE[n].effect}" for n in pool_trainer_cards(POOL, _TABLE)]
    if POOL == "full":
        names += [f"fossil:{n}" for n in FOSSIL_CHECKS]

    def check(name: str) -> Callable[[], None]:
        return lambda: _check(name)

    # The mask first: it compiles in seconds, so a mask mutant is stopped before the
    # transition compiles.
    return {"mask:legal": _check_mask, "reset:deal": _check_reset_deal,
            "reset:decks": _check_reset_decks, **{n: check(n) for n in names}}
