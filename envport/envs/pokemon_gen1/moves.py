"""Which Gen 1 moves the JAX engine plays (the single list), and per-move data the engine needs
beyond :mod:`tables`.

The engine grows by move family; a battle or team holding a move outside :data:`SUPPORTED_MOVES`
is rejected up front (:func:`check_supported`) with an error naming the move, instead of being
played wrong. Families (``data/mods/gen1/moves.ts`` / ``scripts.ts``):

* ``plain``: damaging moves whose whole effect is ``getDamage`` (formula, ``damage: 'level'``,
  fixed damage, Super Fang, Psywave) and at most one secondary (par/brn/frz/psn status, flinch,
  confusion, a stat drop), multi-hit included (2-5 and fixed 2);
* ``status``: a status on the foe (Sleep Clause Mod and sleep counters for sleep), confusion;
* ``stages``: the user's stat boosts and the foe's stat drops (with Gen 1's penalty re-apply);
* ``self``: Reflect, Light Screen, Focus Energy, Mist, Recover, Softboiled, Rest;
* ``recoil``, ``drain`` (Dream Eater), ``selfko`` (Self-Destruct, Explosion), ``crash`` (Jump
  Kick, High Jump Kick), ``recharge`` (Hyper Beam), ``counter``, ``substitute``, ``twoturn``
  (Sky Attack, Razor Wind, Skull Bash, Solar Beam, Dig, Fly);
* ``copy`` (Mimic, Mirror Move, Transform, Conversion), ``noeffect`` (Splash, Teleport, Roar,
  Whirlwind), ``residual`` (Toxic, Leech Seed, Haze), ``disable``, ``thrash`` (Thrash, Petal
  Dance), ``rage``, ``bide``; Struggle when no move has PP;
* ``trap`` (Wrap, Bind, Clamp, Fire Spin: ``partialtrappinglock`` on the user,
  ``partiallytrapped`` on the foe, ``fakepartiallytrapped`` on both when the lock runs out) and
  ``metronome`` (one ``sample`` of :data:`METRONOME_MOVES`, then that move's ``useMove``).

All 165 Gen 1 moves are played; :func:`check_supported` still refuses anything else by name.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

FAMILIES: dict[str, tuple[str, ...]] = {
    "plain": (
        # formula damage, no secondary
        "pound", "karatechop", "doubleslap", "cometpunch", "megapunch", "scratch", "visegrip",
        "cut", "gust", "wingattack", "slam", "vinewhip", "doublekick", "megakick", "hornattack",
        "furyattack", "tackle", "pinmissile", "watergun", "hydropump", "surf", "peck",
        "drillpeck", "strength", "razorleaf", "rockthrow", "earthquake", "quickattack",
        "eggbomb", "waterfall", "swift", "spikecannon", "barrage", "dizzypunch", "crabhammer",
        "furyswipes", "bonemerang", "rockslide", "triattack", "slash",
        # fixed damage (getDamage's early returns)
        "seismictoss", "nightshade", "dragonrage", "sonicboom", "superfang", "psywave",
        # one secondary
        "firepunch", "icepunch", "thunderpunch", "lowkick", "stomp", "rollingkick", "headbutt",
        "bodyslam", "poisonsting", "twineedle", "bite", "acid", "ember", "flamethrower",
        "icebeam", "blizzard", "psybeam", "bubblebeam", "aurorabeam", "thundershock",
        "thunderbolt", "thunder", "confusion", "psychic", "lick", "smog", "sludge", "boneclub",
        "fireblast", "constrict", "bubble", "hyperfang",
        # no more than damage in Gen 1 trainer battles (Pay Day's coins are a message)
        "payday",
        # OHKO: fail on a faster target, else 65535 (clamped to the target's HP)
        "fissure", "guillotine", "horndrill",
    ),
    # status moves: a status on the foe (Sleep Clause Mod for sleep), confusion
    "status": (
        "thunderwave", "stunspore", "glare", "sleeppowder", "spore", "hypnosis", "sing",
        "lovelykiss", "poisonpowder", "poisongas", "confuseray", "supersonic",
    ),
    # stat stages: the user's (boosts) or the foe's (drops), the foe's penalty re-applied
    "stages": (
        "swordsdance", "agility", "amnesia", "acidarmor", "meditate", "growth", "sharpen",
        "harden", "withdraw", "barrier", "doubleteam", "growl", "leer", "tailwhip",
        "stringshot", "screech", "sandattack", "smokescreen", "flash", "kinesis",
        # a boost, then a volatile without effect in Gen 1 (none when the boost fails)
        "minimize", "defensecurl",
    ),
    # the user's own volatiles and HP: screens, Focus Energy, Mist, Recover/Softboiled, Rest
    "self": (
        "reflect", "lightscreen", "focusenergy", "mist", "recover", "softboiled", "rest",
    ),
    # damage with a cost or a gain for the user (Struggle, used when no move has PP, is also
    # played: recoil 1/2)
    "recoil": ("doubleedge", "takedown", "submission"),
    "drain": ("absorb", "megadrain", "leechlife", "dreameater"),
    "selfko": ("explosion", "selfdestruct"),
    "crash": ("jumpkick", "highjumpkick"),
    "recharge": ("hyperbeam",),
    # Counter: getDamage's damageCallback (twice battle.lastDamage after a Normal/Fighting move)
    "counter": ("counter",),
    "substitute": ("substitute",),
    "twoturn": ("skyattack", "razorwind", "skullbash", "solarbeam", "dig", "fly"),
    # moves that copy the foe: Mimic (one of its moves into Mimic's slot), Mirror Move (its last
    # move, used as a second useMove), Transform (species, types, stats, stages, moves)
    "copy": ("mimic", "mirrormove", "transform", "conversion"),
    # nothing happens (Roar and Whirlwind do not force switches in Gen 1; Teleport does not
    # flee a trainer battle): the accuracy draw and the move's bookkeeping only
    "noeffect": ("splash", "teleport", "roar", "whirlwind"),
    # Toxic (its residualdmg counter, also Leech Seed's), Leech Seed, Haze
    "residual": ("toxic", "leechseed", "haze"),
    # Disable: a random slot with PP for random(1, 9) turns (checked in BeforeMove, by move id)
    "disable": ("disable",),
    # Thrash, Petal Dance: locked for random(2, 4) uses, then confused
    "thrash": ("thrash", "petaldance"),
    # Rage (locked, its accuracy stored; Attack +1 each time it is hit), Bide (stores
    # lastDamage for random(2, 4) turns, then hits for twice that)
    "rage": ("rage",),
    "bide": ("bide",),
    # partial trapping (mods/gen1/conditions.ts partialtrappinglock / partiallytrapped /
    # fakepartiallytrapped): 2-5 turns of the first hit's damage, the foe unable to move
    "trap": ("wrap", "bind", "clamp", "firespin"),
    # Metronome: any move of METRONOME_MOVES, through a further useMove
    "metronome": ("metronome",),
}

# The moves ``lockstep --teams moves`` concentrates on by default: those whose code is the most
# recent (the last five), so that every one of them meets the rest of the engine often.
FOCUS_DEFAULT: tuple[str, ...] = FAMILIES["trap"] + FAMILIES["metronome"]
# The focus of the 160-move engine (the 28 moves added after the first 131), for reruns.
FOCUS_160: tuple[str, ...] = (
    FAMILIES["copy"] + FAMILIES["noeffect"] + FAMILIES["residual"] + FAMILIES["twoturn"][1:]
    + FAMILIES["disable"] + FAMILIES["thrash"] + FAMILIES["rage"] + FAMILIES["bide"]) + (
    "payday", "fissure", "guillotine", "horndrill", "minimize", "defensecurl", "dreameater")

SUPPORTED_MOVES: tuple[str, ...] = tuple(m for ms in FAMILIES.values() for m in ms)
FAMILY_OF: dict[str, str] = {m: f for f, ms in FAMILIES.items() for m in ms}

for _m in SUPPORTED_MOVES:
    if _m not in T.MOVE_IDS:
        raise AssertionError(f"moves.FAMILIES names {_m!r}, not a Gen 1 move")

SUPPORTED = np.zeros(max(S.MOVE_NAME) + 1, np.bool_)  # indexed by state move ids
for _m in SUPPORTED_MOVES:
    SUPPORTED[T.MOVE_IDS[_m]] = True

# Stat changes of a secondary (``secondary.boosts``), in the state's boost order, and the order
# Showdown's ``boost()`` walks them (the object's key order).
SECONDARY_BOOSTS = np.zeros((T.N_MOVE_ROWS, 7), np.int8)
SECONDARY_BOOST_ORDER = np.full((T.N_MOVE_ROWS, 2), -1, np.int8)
# The secondary's status is a burn: Fire moves whose hit thaws a frozen target
# (``conditions.ts frz.onAfterMoveSecondary``: ``move.secondary.status === 'brn'``).
SECONDARY_IS_BURN = np.zeros(T.N_MOVE_ROWS, np.bool_)
for _name, _move in T.MOVES.items():
    _sec = (_move.get("secondaries") or [None])[0]
    if not _sec:
        continue
    if "boosts" in _sec:
        for _k, (_stat, _delta) in enumerate(_sec["boosts"].items()):
            SECONDARY_BOOSTS[_move["num"], T.BOOST_INDEX[_stat]] = _delta
            SECONDARY_BOOST_ORDER[_move["num"], _k] = T.BOOST_INDEX[_stat]
    if _sec.get("status") == "brn":
        SECONDARY_IS_BURN[_move["num"]] = True

# A status move's own stat changes (``move.boosts``), like the secondaries' above.
MOVE_BOOSTS = np.zeros((T.N_MOVE_ROWS, 7), np.int8)
MOVE_BOOST_ORDER = np.full((T.N_MOVE_ROWS, 2), -1, np.int8)
MOVE_VOLATILE = np.zeros(T.N_MOVE_ROWS, np.uint32)  # move.volatileStatus as a state.VOLATILE_BIT
for _name, _move in T.MOVES.items():
    for _k, (_stat, _delta) in enumerate((_move.get("boosts") or {}).items()):
        MOVE_BOOSTS[_move["num"], T.BOOST_INDEX[_stat]] = _delta
        MOVE_BOOST_ORDER[_move["num"], _k] = T.BOOST_INDEX[_stat]
    if _move.get("volatileStatus") in S.VOLATILE_BIT:
        MOVE_VOLATILE[_move["num"]] = S.VOLATILE_BIT[_move["volatileStatus"]]

# ``mods/gen1/moves.ts metronome.onHit``: ``dex.moves.all()`` filtered to the moves without
# ``isNonstandard`` (or 'Unobtainable') that have ``flags.metronome``, sorted by ``num``, then
# ``sample``: in Gen 1 every move but Metronome and Struggle, in number order (163; checked
# against Showdown's own list in the tests).
METRONOME_MOVES: tuple[str, ...] = tuple(
    m["id"] for m in sorted(T.MOVES.values(), key=lambda m: m["num"])
    if (m.get("flags") or {}).get("metronome"))
METRONOME_IDS = np.asarray([T.MOVE_IDS[m] for m in METRONOME_MOVES], np.uint8)

# ``mods/gen1/scripts.ts SKIP_LASTDAMAGE``: moves whose use leaves ``battle.lastDamage`` as it was
# (every other move sets it to 0 before its hit).
SKIP_LASTDAMAGE_IDS = (
    "confuseray", "conversion", "counter", "focusenergy", "glare", "haze", "leechseed",
    "lightscreen", "mimic", "mist", "poisongas", "poisonpowder", "recover", "reflect", "rest",
    "softboiled", "splash", "stunspore", "substitute", "supersonic", "teleport", "thunderwave",
    "toxic", "transform",
)
SKIP_LASTDAMAGE = np.zeros(T.N_MOVE_ROWS, np.bool_)
for _m in SKIP_LASTDAMAGE_IDS:
    SKIP_LASTDAMAGE[T.MOVE_IDS[_m]] = True

# Moves with their own ``onHit`` / ``onTryHit`` in the engine (ids, for ``jnp`` comparisons).
ID = {m: T.MOVE_IDS[m] for m in ("reflect", "lightscreen", "recover", "softboiled", "rest",
                                  "struggle", "jumpkick", "highjumpkick",
                                  "counter", "substitute", "mimic", "mirrormove",
                                  "transform", "conversion", "leechseed", "dreameater",
                                  "toxic", "haze", "swift", "disable", "rage", "bide",
                                  "metronome", "fissure")}
# scripts.ts TWO_TURN_MOVES (mods/gen1/moves.ts: the same onTryMove for all six)
TWO_TURN = np.zeros(T.N_MOVE_ROWS, np.bool_)
for _m in ("dig", "fly", "razorwind", "skullbash", "skyattack", "solarbeam"):
    TWO_TURN[T.MOVE_IDS[_m]] = True
# Dig and Fly's charge turn also adds ``invulnerability`` (conditions.ts: only Swift and Transform
# hit the Pokemon then)
INVULNERABLE_CHARGE = np.zeros(T.N_MOVE_ROWS, np.bool_)
for _m in ("dig", "fly"):
    INVULNERABLE_CHARGE[T.MOVE_IDS[_m]] = True
# move.self.volatileStatus === 'mustrecharge' (Hyper Beam)
SELF_RECHARGE = np.zeros(T.N_MOVE_ROWS, np.bool_)
for _name, _move in T.MOVES.items():
    SELF_RECHARGE[_move["num"]] = (_move.get("self") or {}).get("volatileStatus") == "mustrecharge"

# ``sim/battle.ts calculatePP(move, ppUps)`` for ppUps 3 (a set's own move slots) and 0 (Mimic or
# Transform into a slot the set has no move for): pp * (5 + ppUps) / 5, minus ppUps for a 40-PP
# move in gen <= 2; and Transform's ``min(5, move.pp)``
MAXPP_UPS3 = (T.MOVE_PP.astype(np.int32) * 8 // 5 - 3 * (T.MOVE_PP == 40)).astype(np.uint8)
MAXPP_UPS0 = T.MOVE_PP.astype(np.uint8)
TRANSFORM_PP = np.minimum(T.MOVE_PP, 5).astype(np.uint8)

# move.self.volatileStatus === 'lockedmove' (Thrash, Petal Dance)
LOCKS = np.zeros(T.N_MOVE_ROWS, np.bool_)
for _name, _move in T.MOVES.items():
    LOCKS[_move["num"]] = (_move.get("self") or {}).get("volatileStatus") == "lockedmove"

# Type-based status immunity in Gen 1 (``Dex.forGen(1).getImmunity(status, types)``): only
# Poison types resist poison; no type resists par/brn/frz/slp in Gen 1 (``mods/gen1/typechart``
# replaces Fire's and Ice's damageTaken). Checked against Showdown in the tests.
POISON_TYPE = T.TYPE_ID["Poison"]


def unsupported(move_ids: Iterable[str]) -> list[str]:
    """The moves of ``move_ids`` the engine does not play yet (sorted, unique)."""
    return sorted({m for m in move_ids if m and m not in FAMILY_OF})


def check_supported(move_ids: Iterable[str], what: str = "team") -> None:
    """Raise ValueError naming every move of ``move_ids`` the engine does not support."""
    bad = unsupported(move_ids)
    if bad:
        raise ValueError(f"{what}: move(s) not supported by the JAX engine yet: {', '.join(bad)} "
                         f"(supported families: {', '.join(FAMILIES)}; see moves.py)")


def packed_team_moves(packed: str) -> list[str]:
    """The move ids of a packed team (``Teams.pack``: ``name|species|item|ability|moves|...``,
    Pokemon separated by ``]``)."""
    out = []
    for entry in packed.split("]"):
        fields = entry.split("|")
        if len(fields) > 4:
            out += [m for m in fields[4].split(",") if m]
    return out
