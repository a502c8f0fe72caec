"""The observation's matchup features (``matchup.features``) on hand-built views, with the
expected values worked out from the type chart and the move table by hand; the jitted
jax.numpy version gives the same bits as numpy. (Along real battles the features are part of
the rows the client, environment and hidden-information tests compare.)"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from envport.envs.pokemon_gen1 import matchup as M
from envport.envs.pokemon_gen1 import spec_support as SS
from envport.envs.pokemon_gen1 import state as S
from envport.envs.pokemon_gen1 import tables as T

PER_MEMBER = S.N_MOVE_SLOTS * M.MOVE_FEATURES + M.MEMBER_FEATURES


def _views(own: list[tuple[str, int, list[str], list[int], int]], foe: tuple[str, int] | None
           ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``own``: (species, level, moves, stats, hp) per member, the first active; ``foe``: the
    opposing active's (species, level) or None."""
    n = S.TEAM_SIZE
    mine = {"present": np.zeros(n, bool), "slot": np.int32(0), "moves": np.zeros((n, 4), np.int32),
            "types": np.zeros((n, 2), np.int32), "level": np.zeros(n, np.int32),
            "stats": np.zeros((n, 5), np.int32), "hp": np.zeros(n, np.int32),
            "maxhp": np.zeros(n, np.int32), "status": np.zeros(n, np.int32),
            "fainted": np.zeros(n, bool), "boosts": np.zeros(7, np.int8)}
    for i, (species, level, moves, stats, hp) in enumerate(own):
        sid = T.SPECIES_IDS[species]
        mine["present"][i] = True
        mine["types"][i] = T.SPECIES_TYPES[sid]
        mine["level"][i], mine["hp"][i], mine["maxhp"][i] = level, hp, hp
        mine["stats"][i] = stats
        mine["moves"][i, : len(moves)] = [T.MOVE_IDS[m] for m in moves]
    theirs = {"slot": np.int32(-1 if foe is None else 0), "fainted": np.zeros(n, bool),
              "species": np.zeros(n, np.int32), "level": np.zeros(n, np.int32),
              "types": np.zeros((n, 2), np.int32), "status": np.zeros(n, np.int32),
              "boosts": np.zeros(7, np.int8)}
    if foe is not None:
        sid = T.SPECIES_IDS[foe[0]]
        theirs["species"][0], theirs["level"][0] = sid, foe[1]
        theirs["types"][0] = T.SPECIES_TYPES[sid]
    return mine, theirs


@functools.cache
def _jit_features():  # type: ignore[no-untyped-def]
    return jax.jit(lambda m, t: M.features(m, t, jnp))


def _both(mine: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> np.ndarray:
    here = M.features(mine, theirs, np)
    there = np.asarray(_jit_features()(mine, theirs))
    np.testing.assert_array_equal(here, there)
    assert here.shape == (M.SIZE,) and here.dtype == np.float32
    return here.reshape(S.TEAM_SIZE, PER_MEMBER)


def test_move_slots_against_the_opposing_active() -> None:
    stats = [100, 100, 100, 100, 200]
    f = _both(*_views([("pikachu", 50, ["thundershock", "bodyslam", "thunderwave"], stats, 120),
                       ("charmander", 50, ["scratch"], stats, 120)], ("gyarados", 50)))
    shock, slam, wave = (f[0, k * M.MOVE_FEATURES:(k + 1) * M.MOVE_FEATURES] for k in range(3))
    # Electric on Water/Flying: 2 x 2 = 4x (x4 scale 16 of 16); STAB; power 40 of 250; 100%;
    # score 40 x 2 hits x 16 x 3 x 100 over 100 x 2 x 4 x 3 x 100
    unit = 100 * 2 * 4 * 3 * 100
    np.testing.assert_allclose(shock[:5], [1.0, 1.0, 40 / 250, 1.0, 40 * 2 * 16 * 3 * 100 / unit],
                               rtol=1e-6)
    # Normal on Gyarados: neutral, no STAB for Pikachu
    np.testing.assert_allclose(slam[:5], [0.25, 0.0, 85 / 250, 1.0, 85 * 2 * 4 * 2 * 100 / unit],
                               rtol=1e-6)
    assert wave[4] == 0 and wave[5] == 0  # a status move does no damage
    assert shock[5] > slam[5] > 0  # the estimated HP fraction follows the effectiveness
    assert not f[0, 3 * M.MOVE_FEATURES:4 * M.MOVE_FEATURES].any()  # an empty slot
    assert not f[2:].any()  # absent members
    # per member: Pikachu's best effectiveness is 4x; Gyarados' Water/Flying STAB on it: Water
    # 1x, Flying 0.5x on Electric -> 1x is its best (4 of 16)
    member = f[0, S.N_MOVE_SLOTS * M.MOVE_FEATURES:]
    np.testing.assert_allclose(member[:2], [1.0, 0.25])


def test_immunity_speed_and_knock_out() -> None:
    # Normal moves do nothing to Gengar; Mewtwo L100 (base Speed 130) outspeeds a slow Pidgey
    # with 30 HP and its estimated Psychic STAB (820, see the heuristic's test) knocks it out.
    slow = [50, 50, 50, 50, 50]
    f = _both(*_views([("pidgey", 20, ["tackle"], slow, 30)], ("gengar", 50)))
    assert f[0, 0] == 0 and f[0, 4] == 0 and f[0, 5] == 0
    f = _both(*_views([("pidgey", 20, ["tackle"], slow, 30),
                       ("snorlax", 100, ["bodyslam"], [300, 300, 300, 300, 100], 900)],
                      ("mewtwo", 100)))
    outsped, knocked_out = (S.N_MOVE_SLOTS * M.MOVE_FEATURES + k for k in (3, 4))
    assert f[0, outsped] == 1 and f[0, knocked_out] == 1
    assert f[1, outsped] == 1 and f[1, knocked_out] == 0  # Snorlax survives with 900 HP


def test_no_opposing_active_gives_zeros() -> None:
    f = _both(*_views([("pikachu", 50, ["thundershock"], [100] * 5, 120)], None))
    assert not f.any()


def test_the_features_sit_before_the_mask() -> None:
    assert SS.MATCHUP_OFFSET + M.SIZE == SS.MASK_OFFSET
