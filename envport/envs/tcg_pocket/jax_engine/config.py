"""The rules' flags (reference ``config.py``) that the JAX engine reads, as params: pytree
leaves, so a batch can hold games under other values. Only the flags that matter to the cards
the engine plays (the ``basic`` pool: plain Basic Pokémon) are here; the others keep their
defaults (``UNSUPPORTED`` lists which, and ``from_config`` rejects another value)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from envport.core.api import pytree_dataclass

NO_LIMIT = 127  # hand_limit None: a hand never reaches it (at most 19 cards)
UNSUPPORTED = {"opening_hand_method": "basic_first", "energy_roll": "uniform",
               "simultaneous_win": "draw", "confusion_tails": "nothing",
               "retreat_discard_choice": "player", "extra_energy_rule": "spec",
               "weakness_before_reduction": True, "supporter_on_turn_1": False,
               "hand_limit_applies_to_search": False, "allow_no_effect_plays": False,
               "fossil_ko_points": 1}


@pytree_dataclass
class Params:
    hand_limit: Any = 10  # int32
    turn_limit: Any = 30  # int32
    first_player_coin: Any = True  # False: "p1", player 0 starts
    promotion_current_first: Any = False  # promotion_order "current_first"


def default_params() -> Params:
    return Params(hand_limit=jnp.int32(10), turn_limit=jnp.int32(30),
                  first_player_coin=jnp.bool_(True), promotion_current_first=jnp.bool_(False))


def from_config(cfg: dict[str, Any]) -> Params:
    """Params from a ``RulesConfig.to_json()`` dict (ValueError for a flag this engine does not
    implement at another value than its default)."""
    for k, v in UNSUPPORTED.items():
        if k in cfg and cfg[k] != v:
            raise ValueError(f"flag {k}={cfg[k]!r}: the JAX engine implements {v!r} only")
    limit = cfg.get("hand_limit", 10)
    return Params(hand_limit=jnp.int32(NO_LIMIT if limit is None else limit),
                  turn_limit=jnp.int32(cfg.get("turn_limit", 30)),
                  first_player_coin=jnp.bool_(cfg.get("first_player", "coin") == "coin"),
                  promotion_current_first=jnp.bool_(
                      cfg.get("promotion_order", "non_current_first") == "current_first"))
