"""``actions.decode`` against the reference's, over the whole space and outside it."""

import jax
import jax.numpy as jnp
import numpy as np
from translation import actions as A

from envport.envs.tcg_pocket import actions as ref


def test_sizes_match_the_reference():
    assert (A.N_ACTIONS, A.PLAY, A.CHOOSE, A.ENERGY) == (ref.N_ACTIONS, ref.PLAY, ref.CHOOSE,
                                                         ref.ENERGY)


def test_every_action_decodes_as_the_reference_does():
    kind, x, y = jax.jit(jax.vmap(A.decode))(jnp.arange(A.N_ACTIONS))
    for a in range(A.N_ACTIONS):
        want = ref.decode(a)
        assert A.KINDS[int(kind[a])] == want.kind and int(x[a]) == want.a, a
        assert int(y[a]) == (want.b if want.kind == "play" else 0), a
        assert ref.encode(want) == a
    plain = A.decode(jnp.int32(50))
    assert [int(v) for v in plain] == [int(kind[50]), int(x[50]), int(y[50])]


def test_outside_the_space_is_kind_minus_one():
    kind, _, _ = jax.vmap(A.decode)(jnp.asarray([-1, A.N_ACTIONS, 1000]))
    assert np.all(np.asarray(kind) == -1)
