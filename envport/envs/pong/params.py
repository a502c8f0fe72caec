"""Pong's options and game constants, shared by the C reference, the JAX translation and the CLI.

No JAX here: listing environments imports this module. Two kinds of settings:

- **modes** (``frameskip``, ``continuous``, ``rules``): change the program's structure (a loop
  count, the action space, which rule book), so they are static in JAX;
- **game constants** (``width`` ... ``max_score``): plain numbers, pytree leaves of
  ``PongParams`` (a user may ``jax.vmap`` over them) and fields of the C struct.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from envport.core.registry import Option

# PufferLib's ocean Pong, by the commit of PufferAI/PufferLib whose ocean/pong/pong.h the rules
# follow (README.md lists the differences).
RULES_61F27B3 = "61f27b3"  # PufferLib 4.0 before the reward/observation change
RULES_8E3E754 = "8e3e754"  # newer: no +0.1 per return, fresh observation after a point
RULES = (RULES_61F27B3, RULES_8E3E754)
DEFAULT_RULES = RULES_61F27B3

MODE_DEFAULTS: dict[str, Any] = {"frameskip": 1, "continuous": False, "rules": DEFAULT_RULES}

# The original's defaults (PufferLib's config/pong.ini [env]); float32 in the game.
FLOAT_DEFAULTS: dict[str, float] = {
    "width": 500.0,
    "height": 640.0,
    "paddle_width": 20.0,
    "paddle_height": 70.0,
    "ball_width": 32.0,
    "ball_height": 32.0,
    "paddle_speed": 8.0,
    "ball_initial_speed_x": 10.0,
    "ball_initial_speed_y": 1.0,
    "ball_speed_y_increment": 3.0,
    "ball_max_speed_y": 13.0,
}
INT_DEFAULTS: dict[str, int] = {"max_score": 21}  # unsigned int in the game
PARAM_DEFAULTS: dict[str, float | int] = {**FLOAT_DEFAULTS, **INT_DEFAULTS}
# Sizes must be positive (the observation divides by width, height and their spans); speeds
# may be 0.
POSITIVE = ("width", "height", "paddle_width", "paddle_height", "ball_width", "ball_height")

KNOWN_OPTIONS = (*MODE_DEFAULTS, *PARAM_DEFAULTS)


def check_mode(frameskip: Any, continuous: Any, rules: Any) -> tuple[int, bool, str]:
    """Validated modes: ``frameskip`` an int >= 1, ``continuous`` a bool, ``rules`` known."""
    if isinstance(frameskip, bool | np.bool_) or not isinstance(frameskip, numbers.Integral):
        raise ValueError(f"frameskip must be an int >= 1, got {frameskip!r}")
    if frameskip < 1:
        raise ValueError(f"frameskip must be an int >= 1, got {frameskip!r}")
    if not isinstance(continuous, bool | np.bool_):
        raise ValueError(f"continuous must be True or False, got {continuous!r}")
    if rules not in RULES:
        raise ValueError(f"rules must be one of {', '.join(RULES)}, got {rules!r}")
    return int(frameskip), bool(continuous), str(rules)


def check_params(params: Mapping[str, Any]) -> dict[str, float | int]:
    """Concrete game constants, defaults filled in: each float finite (sizes > 0, speeds >= 0,
    as float32), ``max_score`` an int in [1, 2**32). Raises ValueError naming the field."""
    unknown = set(params) - set(PARAM_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown Pong param(s) {sorted(unknown)}; known: "
                         f"{', '.join(PARAM_DEFAULTS)}")
    out: dict[str, float | int] = dict(PARAM_DEFAULTS)
    for name, value in params.items():
        v = np.asarray(value)
        if v.shape != () or not (np.issubdtype(v.dtype, np.number) and not
                                 np.issubdtype(v.dtype, np.complexfloating)):
            raise ValueError(f"Pong param {name} must be a real number, got {value!r}")
        if name in INT_DEFAULTS:
            if not np.issubdtype(v.dtype, np.integer) or not 1 <= int(v) < 2**32:
                raise ValueError(f"Pong param {name} must be an int >= 1, got {value!r}")
            out[name] = int(v)
            continue
        f = float(np.float32(v))  # the value the game sees
        if not math.isfinite(f) or f < 0 or (name in POSITIVE and f <= 0):
            bound = "> 0" if name in POSITIVE else ">= 0"
            raise ValueError(f"Pong param {name} must be finite and {bound}, got {value!r}")
        out[name] = f
    return out


# Every option of ``-o KEY=VALUE`` / ``envport.make("pong", KEY=VALUE)``, parsed by the
# registry's Option (one parser for every environment); ``check_mode`` / ``check_params`` then
# apply the game's own limits.
OPTIONS: dict[str, Option] = {
    "frameskip": Option(1, "sub-frames per agent step (PufferLib's 8e3e754 config trains with 8)",
                        kind="int", minimum=1),
    "continuous": Option(False, "Box(-1, 1, (1,)) actions instead of Discrete(3)", kind="bool"),
    "rules": Option(DEFAULT_RULES, "the PufferLib commit whose pong.h the game follows",
                    choices=RULES),
    **{name: Option(value, "game constant (float32)" if name in FLOAT_DEFAULTS else
                    "game constant: points to win", kind="float" if name in FLOAT_DEFAULTS
                    else "int", minimum=0 if name in FLOAT_DEFAULTS else 1)
       for name, value in PARAM_DEFAULTS.items()},
}


def parse_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, float | int]]:
    """``-o name=value`` options (strings or values) -> (modes, game constants given), strictly:
    an unknown name or a value that does not parse raises ValueError naming the option."""
    unknown = [k for k in options if k not in KNOWN_OPTIONS]
    if unknown:
        raise ValueError(f"unknown Pong option(s) {', '.join(sorted(unknown))}; known: "
                         f"{', '.join(KNOWN_OPTIONS)}")
    typed = {k: OPTIONS[k].parse(k, v) for k, v in options.items()}
    frameskip, continuous, rules = check_mode(**{**MODE_DEFAULTS, **{
        k: v for k, v in typed.items() if k in MODE_DEFAULTS}})
    given = {k: typed[k] for k in PARAM_DEFAULTS if k in typed}
    full = check_params(given)
    return ({"frameskip": frameskip, "continuous": continuous, "rules": rules},
            {k: full[k] for k in given})


def sample_params(rng: np.random.Generator) -> dict[str, Any]:
    """One random valid set of game constants, every one away from its default.

    Floats are drawn off the integers (float32 values, so both sides see the same numbers) to
    exercise rounding: non-integer speeds make positions and divisions inexact. The ranges keep
    the game sensible: the ball fits the court, the serve cannot reach a goal in one sub-frame
    (width / 5 + speed_x + ball_width < width), paddles are taller than nothing and slower than
    the court.
    """
    ranges = {
        "width": (400.0, 640.0), "height": (480.0, 800.0), "paddle_width": (10.0, 30.0),
        "paddle_height": (40.0, 120.0), "ball_width": (16.0, 40.0),
        "ball_height": (16.0, 40.0), "paddle_speed": (4.0, 12.0),
        "ball_initial_speed_x": (6.0, 14.0), "ball_initial_speed_y": (0.5, 3.0),
        "ball_speed_y_increment": (1.0, 5.0), "ball_max_speed_y": (8.0, 20.0),
    }  # fmt: skip
    out: dict[str, Any] = {}
    for name, (lo, hi) in ranges.items():
        value = float(np.float32(rng.uniform(lo, hi)))
        while value == FLOAT_DEFAULTS[name]:
            value = float(np.float32(rng.uniform(lo, hi)))
        out[name] = value
    score = int(rng.integers(3, 22))
    out["max_score"] = score if score != INT_DEFAULTS["max_score"] else 20
    return out


def observation_bounds(params: Mapping[str, Any]) -> tuple[float, float]:
    """The range the game's observations really take, for ``params`` (every constant given):
    PufferLib declares Box(0, 1), but the original leaves the ball where a step found it: one
    sub-frame past the left edge after a left-paddle return (``ball_x`` down to ``-speed_x``)
    and past a wall after a bounce (``ball_y`` down to ``-|vy|``, up to ``height - ball_height
    + |vy|``); the other entries stay in [0, 1]. One scalar pair for the whole Box."""
    vy = max(float(params["ball_max_speed_y"]), float(params["ball_initial_speed_y"]),
             float(params["ball_speed_y_increment"]))
    low = -max(float(params["ball_initial_speed_x"]) / float(params["width"]),
               vy / float(params["height"]))
    high = 1.0 + vy / float(params["height"])
    return float(np.float32(low)), float(np.float32(high))

