"""Params from the reference's flags."""

import pytest
from translation import config

from envport.envs.tcg_pocket.config import RulesConfig


def test_defaults_and_flags():
    p = config.from_config(RulesConfig().to_json())
    d = config.default_params()
    assert (int(p.hand_limit), int(p.turn_limit), bool(p.first_player_coin)) == (
        int(d.hand_limit), int(d.turn_limit), bool(d.first_player_coin)) == (10, 30, True)
    q = config.from_config({"hand_limit": None, "turn_limit": 7, "first_player": "p1",
                            "promotion_order": "current_first"})
    assert (int(q.hand_limit), int(q.turn_limit)) == (config.NO_LIMIT, 7)
    assert not bool(q.first_player_coin) and bool(q.promotion_current_first)


def test_an_unsupported_value_is_rejected():
    with pytest.raises(ValueError, match="allow_no_effect_plays"):
        config.from_config({"allow_no_effect_plays": True})
