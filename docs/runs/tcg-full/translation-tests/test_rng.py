"""The generator against the reference's ``Rng``: words, coins, shuffles, coins until tails."""

import jax
import jax.numpy as jnp
import numpy as np
from translation import rng as R

from envport.envs.tcg_pocket.rng import Rng


def pos(r: Rng) -> jnp.ndarray:
    return jnp.asarray(r.state_array(), jnp.uint32)


def test_randint_coin_and_seed():
    for seed in (0, 1, 12345, 2**32 - 1):
        r = Rng(seed)
        assert int(R.seed_key(jnp.uint32(seed))) == int(r.state_array()[0])
        state = pos(r)
        for n in (1, 2, 3, 7, 20):
            v, state = jax.jit(R.randint)(state, n)
            assert int(v) == r.randint(n)
        h, state = R.coin(state)
        assert bool(h) == r.coin()
        assert np.array_equal(np.asarray(state), r.state_array())


def test_shuffle_and_coins_until_tails():
    for seed in range(6):
        r = Rng(seed)
        state = pos(r)
        n = seed * 3 + 1
        items = list(range(1, n + 1))
        got, state = jax.jit(R.shuffle)(state, jnp.asarray(items + [0] * (20 - n)), n)
        r.shuffle(items)
        assert list(np.asarray(got)[:n]) == items
        h, state = jax.jit(R.heads_until_tails)(state)
        heads = 0
        while r.coin():
            heads += 1
        assert int(h) == heads
        k, state = R.heads(state, jnp.int32(3), 4)
        assert int(k) == sum(r.coin() for _ in range(3))
        assert np.array_equal(np.asarray(state), r.state_array())
