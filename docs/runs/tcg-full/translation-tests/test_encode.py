"""Both players' observations against the reference's, Hand Scope and Pokédex included."""

import jax
import jax.numpy as jnp
import numpy as np
from translation import encode
from translation import state as S
from translation.tests.refgames import main_states, reference

from envport.envs.tcg_pocket.encode import observation_vector


def test_observations_match_the_reference():
    obs = jax.jit(encode.observation_vector)
    ref = reference()
    states = main_states(2, seed=31, every=2)
    for i, st in enumerate(states):
        s = {k: np.array(v, copy=True) for k, v in st.items()}
        if i % 2:  # what Hand Scope and Pokédex reveal, to the player to move only
            p = int(s["current"])
            s["revealed_hand"][p] = s["hand"][1 - p]
            s["revealed_top"][p] = s["deck"][p, :3]
            s["revealed_hand_shown"][p] = s["revealed_top_shown"][p] = True
        for q in (0, 1):
            want = observation_vector({k: v for k, v in s.items() if k != "rng"}, q)
            got = np.asarray(obs(S.from_arrays(s), jnp.int32(q)))
            assert got.shape == (encode.OBS_SIZE,) and np.array_equal(got, want)
    ref.reset(0)
    setup = ref.get_state()
    for q in (0, 1):
        want = observation_vector({k: v for k, v in setup.items() if k != "rng"}, q)
        assert np.array_equal(np.asarray(obs(S.from_arrays(setup), jnp.int32(q))), want)
    assert len(states) > 20
