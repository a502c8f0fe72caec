"""The bridge only converts: a reference state and its tape's generator position."""

import numpy as np
from translation.bridge import TcgPocketBridge
from translation.tests.refgames import reference


def test_round_trip_and_draws():
    ref = reference()
    ref.reset(9)
    ref.step(int(np.flatnonzero(ref.action_mask())[0]))
    b = TcgPocketBridge()
    st = ref.get_state()
    back = b.from_jax(b.to_jax(st))
    assert all(np.array_equal(back[k], st[k]) and back[k].dtype == st[k].dtype for k in st)
    assert np.array_equal(np.asarray(b.draws(ref.tape(), st)), ref.tape()["rng"])
