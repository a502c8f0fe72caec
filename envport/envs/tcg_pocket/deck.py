"""Deck rules (specification section 1): a deck that breaks one is rejected naming the rule."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from envport.envs.tcg_pocket.cards import ENERGY_TYPES, CardTable, load_table
from envport.envs.tcg_pocket.config import RulesConfig

DECK_SIZE = 20
MAX_COPIES = 2


class DeckError(ValueError):
    """An illegal deck; ``rule`` names the rule it breaks."""

    def __init__(self, rule: str, message: str):
        super().__init__(f"illegal deck ({rule}): {message}")
        self.rule = rule


@dataclass(frozen=True)
class Deck:
    cards: tuple[str, ...]  # card names, in the order given (the game shuffles)
    energy_types: tuple[str, ...]


def validate_deck(cards: Sequence[str], energy_types: Sequence[str],
                  config: RulesConfig | None = None, table: CardTable | None = None) -> Deck:
    """A legal :class:`Deck` from card names or printing ids, or :class:`DeckError`."""
    config = config or RulesConfig()
    table = table or load_table()
    names = []
    for c in cards:
        name = table.resolve(c)
        if name is None:
            raise DeckError("card pool", f"{c!r} is not a card of the pool (A1 and Promo-A "
                            "Trainers)")
        names.append(name)
    for name in names:
        card = table[name]
        if not card.supported:
            raise DeckError("unsupported card", f"{name}: {'; '.join(card.unsupported)} is not "
                            "implemented by this engine")
    if len(names) != DECK_SIZE:
        raise DeckError("deck size", f"{len(names)} cards; a deck has exactly {DECK_SIZE}")
    over = sorted(n for n, k in Counter(names).items() if k > MAX_COPIES)
    if over:
        raise DeckError("copies per name", f"more than {MAX_COPIES} copies of "
                        f"{', '.join(over)}")
    if not any(table[n].is_basic for n in names):
        raise DeckError("basic pokemon", "the deck holds no Basic Pokémon")
    _check_energy_types(energy_types, config)
    return Deck(tuple(names), tuple(energy_types))


def _check_energy_types(energy_types: Sequence[str], config: RulesConfig) -> None:
    bad = [t for t in energy_types if t not in ENERGY_TYPES]
    if bad:
        raise DeckError("energy types", f"{', '.join(map(repr, bad))} cannot be a deck's Energy "
                        f"(one of {', '.join(ENERGY_TYPES)})")
    if len(set(energy_types)) != len(energy_types):
        raise DeckError("energy types", "an Energy type is declared twice")
    if not 1 <= len(energy_types) <= config.max_energy_types:
        raise DeckError("energy types", f"{len(energy_types)} Energy types declared; 1 to "
                        f"{config.max_energy_types} (flag max_energy_types)")


def random_deck(rng: np.random.Generator, table: CardTable | None = None,
                config: RulesConfig | None = None) -> Deck:
    """A legal random deck of supported cards: one or two Energy types, evolution lines whose
    attacks those types can pay, two copies of each card, Trainers to fill."""
    table = table or load_table()
    types = [str(t) for t in rng.choice(ENERGY_TYPES, size=int(rng.integers(1, 3)),
                                        replace=False)]

    def payable(name: str) -> bool:
        c = table[name]
        return c.supported and all(s in (*types, "Colorless") for a in c.attacks for s in a.cost)

    basics = [c.name for c in table.supported() if c.is_basic and payable(c.name)
              and c.type in (*types, "Colorless")]
    cards: list[str] = []
    for i in rng.permutation(len(basics)):
        line = [basics[i]]
        for _ in range(2):
            nxt = [c.name for c in table.supported() if c.evolves_from == line[-1]
                   and payable(c.name)]
            if not nxt:
                break
            line.append(nxt[int(rng.integers(len(nxt)))])
        if len(cards) + 2 * len(line) > 14:
            continue
        cards += [n for n in line for _ in range(2)]
    trainers = [c.name for c in table.supported() if not c.is_pokemon and c.kind != "fossil"]
    while len(cards) < DECK_SIZE:
        name = trainers[int(rng.integers(len(trainers)))]
        if cards.count(name) < MAX_COPIES:
            cards.append(name)
    return validate_deck(cards, types, config, table)


POOLS = ("all", "basic", "plain", "status", "trainers", "full")

# The attack effects of the ``status`` pool: Special Conditions, coins, self-heal, recoil and
# discarding own Energy (the templates whose effect touches only the two Actives).
STATUS_TEMPLATES = ("status", "coin_status", "heal_self", "discard_energy", "recoil",
                    "multi_coin", "coin_bonus", "coin_fail", "flip_until_tails",
                    "all_heads_bonus", "coin_bonus_or_recoil")


def plain_basics(table: CardTable | None = None) -> list[str]:
    """Basic Pokémon with no Ability whose attacks all do printed damage only (no effect text):
    the ``basic`` pool, the subset the JAX engine plays (``jax_engine.py``)."""
    table = table or load_table()
    return [c.name for c in table.supported() if c.is_basic and c.ability is None
            and all(a.effect is None and a.damage_mode == "" for a in c.attacks)]


def plain_pokemon(table: CardTable | None = None) -> list[str]:
    """Pokémon of any stage with no Ability whose attacks all do printed damage only: the
    ``plain`` pool (the ``basic`` pool and the evolutions of the same kind)."""
    table = table or load_table()
    return [c.name for c in table.supported() if c.is_pokemon and c.ability is None
            and all(a.effect is None and a.damage_mode == "" for a in c.attacks)]


def status_pokemon(table: CardTable | None = None) -> list[str]:
    """Pokémon of any stage with no Ability whose attacks do printed damage or use one of
    ``STATUS_TEMPLATES``: the ``status`` pool (the ``plain`` pool, plus Special Conditions,
    coins, self-heal, recoil and discarding own Energy)."""
    table = table or load_table()
    return [c.name for c in table.supported() if c.is_pokemon and c.ability is None
            and all(a.effect is None or a.effect["template"] in STATUS_TEMPLATES
                    for a in c.attacks)]


# The Trainers of the ``trainers`` pool: every Item and Supporter but Koga, whose Muk and
# Weezing are not in the ``status`` pool (it could never be played).
TRAINERS_EFFECTS = ("potion", "erika", "misty", "brock", "sabrina", "lt_surge", "giovanni",
                    "blaine", "x_speed", "hand_scope", "pokedex", "professors_research",
                    "poke_ball", "red_card")
TRAINERS_POKEMON_CARDS = 12  # a ``trainers`` deck: 12 Pokémon cards, 8 Trainers


def pool_trainers(table: CardTable | None = None) -> list[str]:
    """The Trainers of the ``trainers`` pool (``TRAINERS_EFFECTS``), in table order."""
    table = table or load_table()
    return [c.name for c in table.supported() if c.kind in ("item", "supporter")
            and c.effect in TRAINERS_EFFECTS]


def trainers_cards(table: CardTable | None = None) -> list[str]:
    """The ``trainers`` pool: the ``status`` Pokémon and :func:`pool_trainers`."""
    table = table or load_table()
    return status_pokemon(table) + pool_trainers(table)


def full_pokemon(table: CardTable | None = None) -> list[str]:
    """Every supported Pokémon (no Ability, every attack of a template the engine plays) and
    the fossils, which are played as Basic Pokémon: the Pokémon cards of the ``full`` pool."""
    table = table or load_table()
    return [c.name for c in table.supported() if c.kind == "fossil"
            or (c.is_pokemon and c.ability is None)]


def full_trainers(table: CardTable | None = None) -> list[str]:
    """Every supported Item and Supporter (Koga too), in table order."""
    table = table or load_table()
    return [c.name for c in table.supported() if c.kind in ("item", "supporter")]


def full_cards(table: CardTable | None = None) -> list[str]:
    """The ``full`` pool: every card a legal deck may hold (``full_pokemon``,
    ``full_trainers``)."""
    table = table or load_table()
    return full_pokemon(table) + full_trainers(table)


def pool_pokemon(pool: str, table: CardTable | None = None) -> list[str]:
    """The Pokémon cards (fossils included) of a pool with attack effects: ``status`` and
    ``trainers`` (:func:`status_pokemon`), ``full`` (:func:`full_pokemon`)."""
    if pool == "full":
        return full_pokemon(table)
    if pool in ("status", "trainers"):
        return status_pokemon(table)
    raise ValueError(f"pool {pool!r}: one of status, trainers, full")


def pool_trainer_cards(pool: str, table: CardTable | None = None) -> list[str]:
    """The Trainers (Items and Supporters) of a pool: none for ``status``,
    :func:`pool_trainers` for ``trainers``, :func:`full_trainers` for ``full``."""
    if pool == "full":
        return full_trainers(table)
    if pool == "trainers":
        return pool_trainers(table)
    if pool == "status":
        return []
    raise ValueError(f"pool {pool!r}: one of status, trainers, full")


def random_plain_deck(rng: np.random.Generator, table: CardTable | None = None,
                      config: RulesConfig | None = None) -> Deck:
    """A legal random deck of the ``plain`` pool: one or two Energy types, evolution lines of
    plain Pokémon (a plain Basic of those types or Colorless, then up to two plain evolutions)
    whose attacks the types can pay, two copies of each card, to exactly 20 cards."""
    table = table or load_table()
    return _random_line_deck(rng, set(plain_pokemon(table)), table, config)


def random_status_deck(rng: np.random.Generator, table: CardTable | None = None,
                       config: RulesConfig | None = None) -> Deck:
    """A legal random deck of the ``status`` pool, built as :func:`random_plain_deck` builds
    its own (evolution lines of the pool's Pokémon, two copies each, to 20 cards), the lines
    that can hold a Pokémon with an attack effect tried first (so that most decks play
    effects, not only printed damage)."""
    table = table or load_table()
    pool = set(status_pokemon(table))
    return _random_line_deck(rng, pool, table, config, prefer=pool - set(plain_pokemon(table)))


def random_trainers_deck(rng: np.random.Generator, table: CardTable | None = None,
                         config: RulesConfig | None = None) -> Deck:
    """A legal random deck of the ``trainers`` pool: :func:`random_status_deck`'s evolution
    lines to ``TRAINERS_POKEMON_CARDS`` Pokémon cards, then Trainers of :func:`pool_trainers`
    drawn without replacement from two copies of each, to 20 cards."""
    table = table or load_table()
    pool = set(status_pokemon(table))
    return _random_line_deck(rng, pool, table, config, prefer=pool - set(plain_pokemon(table)),
                             pokemon=TRAINERS_POKEMON_CARDS, trainers=pool_trainers(table))


def random_full_deck(rng: np.random.Generator, table: CardTable | None = None,
                     config: RulesConfig | None = None) -> Deck:
    """A legal random deck of the ``full`` pool, built as :func:`random_trainers_deck` builds
    its own (lines to ``TRAINERS_POKEMON_CARDS`` Pokémon cards, then Trainers from two copies
    of each of :func:`full_trainers`); a line may start at a fossil, and the lines that can hold
    a Pokémon with an effect outside the ``status`` pool's are tried first."""
    table = table or load_table()
    pool = set(full_pokemon(table))
    return _random_line_deck(rng, pool, table, config, prefer=pool - set(status_pokemon(table)),
                             pokemon=TRAINERS_POKEMON_CARDS, trainers=full_trainers(table))


def _line_names(table: CardTable, basic: str, pool: set[str]) -> set[str]:
    out, frontier = {basic}, [basic]
    while frontier:
        nxt = [c.name for c in table.supported() if c.evolves_from in frontier
               and c.name in pool]
        out.update(nxt)
        frontier = nxt
    return out


def _random_line_deck(rng: np.random.Generator, pool: set[str], table: CardTable,
                      config: RulesConfig | None, prefer: set[str] | None = None,
                      pokemon: int = DECK_SIZE, trainers: Sequence[str] = ()) -> Deck:
    """Lines to ``pokemon`` cards, then (if fewer than 20) ``trainers`` to fill."""
    while True:
        types = [str(t) for t in rng.choice(ENERGY_TYPES, size=int(rng.integers(1, 3)),
                                            replace=False)]

        def payable(name: str, types: list[str] = types) -> bool:
            return all(s in (*types, "Colorless") for a in table[name].attacks for s in a.cost)

        basics = [n for n in sorted(pool, key=list(table.cards).index)
                  if table[n].kind == "fossil" or (table[n].is_basic and payable(n)
                                                   and table[n].type in (*types, "Colorless"))]
        cards: list[str] = []
        order = list(rng.permutation(len(basics)))
        if prefer:  # a stable sort: the permutation's order within each group
            order.sort(key=lambda i: not (_line_names(table, basics[i], pool) & prefer))
        for i in order:
            line = [basics[i]]
            for _ in range(2):
                nxt = [c.name for c in table.supported() if c.evolves_from == line[-1]
                       and c.name in pool and payable(c.name)]
                if not nxt:
                    break
                line.append(nxt[int(rng.integers(len(nxt)))])
            while line and len(cards) + MAX_COPIES * len(line) > pokemon:
                line.pop()
            cards += [n for n in line for _ in range(MAX_COPIES)]
            if len(cards) == pokemon:
                if not any(table[n].is_basic for n in cards):
                    break  # fossil lines alone: no Basic to open with; deal again
                copies = [n for n in trainers for _ in range(MAX_COPIES)]
                cards += [copies[int(i)] for i in
                          rng.permutation(len(copies))[:DECK_SIZE - pokemon]]
                return validate_deck(cards, types, config, table)


def random_basic_deck(rng: np.random.Generator, table: CardTable | None = None,
                      config: RulesConfig | None = None) -> Deck:
    """A legal random deck of the ``basic`` pool: one or two Energy types, ten plain Basics of
    those types or Colorless whose attacks the types can pay, two copies of each."""
    table = table or load_table()
    pool = plain_basics(table)
    while True:
        types = [str(t) for t in rng.choice(ENERGY_TYPES, size=int(rng.integers(1, 3)),
                                            replace=False)]
        fits = [n for n in pool if table[n].type in (*types, "Colorless")
                and all(s in (*types, "Colorless") for a in table[n].attacks for s in a.cost)]
        if len(fits) >= DECK_SIZE // MAX_COPIES:
            break
    names = [fits[int(i)] for i in rng.permutation(len(fits))[:DECK_SIZE // MAX_COPIES]]
    return validate_deck([n for n in names for _ in range(MAX_COPIES)], types, config, table)
