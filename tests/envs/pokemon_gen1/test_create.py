"""Battle creation in JAX (create.py) against Showdown's own ``create``, and the committed pool
of ``Teams.generate`` teams that ``reset(key)`` samples from."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import create as C
from envport.envs.pokemon_gen1 import prng
from envport.envs.pokemon_gen1.reference import SHOWDOWN_VERSION, gen1_set


def test_created_battles_equal_showdowns_after_create(worker):
    # Teams.generate teams, random battle seeds; every fifth a mirror lead (equal speeds: ties)
    assert C.check_creation(25, seed=3, worker=worker) == 25


def test_battles_created_on_sodium_seeds_equal_showdowns(worker):
    """Showdown's default generator: the same creation on an 8-word ChaCha20 state, the mirror
    starts' tie draws (every fifth battle) included."""
    assert C.check_creation(10, seed=4, worker=worker, prng_kind="sodium") == 10


def test_a_mirror_start_draws_the_four_ties_of_the_spec(worker):
    # spec 7.1: Tauros vs Tauros draws 4 ties before the first choice; none when speeds differ
    tauros = [gen1_set("Tauros", ["bodyslam", "hyperbeam"], level=80)]
    chansey = [gen1_set("Chansey", ["softboiled"], level=80)]
    fn = C.compiled(False)
    for team2, expected in ((tauros, 4), (chansey, 0)):
        teams = jax.tree_util.tree_map(jnp.asarray, C.teams_from_sets(tauros, team2))
        seed = [1, 2, 3, 4]
        b, tape = fn(teams, prng.seed_state(jnp.asarray(seed, jnp.uint32)))
        assert int(tape["draws"]) == expected
        created = worker.create(f"mirror-{expected}", seed, worker.pack_team(tauros),
                                worker.pack_team(team2))
        worker.destroy(f"mirror-{expected}")
        assert len(created["tape"]) == expected
        words = [int(w) for w in np.asarray(prng.state_seed(b.prng))]
        assert words == created["prng"]


def test_bad_sets_are_refused_naming_the_problem():
    good = gen1_set("Tauros", ["bodyslam"], level=80)
    with pytest.raises(ValueError, match="Missingno"):
        C.team_arrays([{**good, "species": "Missingno"}])
    with pytest.raises(ValueError, match="flamethrower2"):
        C.team_arrays([{**good, "moves": ["flamethrower2"]}])
    with pytest.raises(ValueError, match="1 to 6 sets"):
        C.team_arrays([good] * 7)


def test_the_pool_entries_round_trip_and_name_the_pinned_version():
    data = C.load_pool_file()
    assert data["showdown_version"] == SHOWDOWN_VERSION
    assert len(data["teams"]) == 1024
    for _, team in data["teams"]:
        assert ";".join(C.format_set(C.parse_set(x)) for x in team.split(";")) == team
    pool = C.pool(True)
    assert 0 < len(pool) <= pool.total == 1024
    assert pool.arrays["species"].shape == (len(pool), 6)


def test_pool_teams_are_showdowns_teams_of_their_seeds(worker):
    pool = C.pool(True)
    rng = np.random.default_rng(0)
    for i in rng.choice(len(pool), 12, replace=False):
        generated = worker.call("generate_team", seed=[int(x) for x in pool.seeds[i]])["team"]
        mine = C.team_arrays(pool.sets[i])
        theirs = C.team_arrays(generated)
        for k in mine:
            np.testing.assert_array_equal(mine[k], theirs[k], err_msg=f"pool team {i} {k}")
