"""The two-player step: rewards at the end, illegal actions as no-ops, whose turn."""

import jax
import jax.numpy as jnp
import numpy as np
from translation import config, game
from translation import state as S
from translation.tests.refgames import reference


def test_rewards_and_illegal_actions():
    ref = reference()
    ref.reset(5)
    rng = np.random.default_rng(5)
    s = S.from_arrays(ref.get_state())
    params = config.default_params()
    step = jax.jit(lambda s, a: game.step(s, a, params))
    mask_of = jax.jit(game.action_mask)
    illegal = int(np.flatnonzero(~ref.action_mask())[0])
    nxt, r, done, legal = step(s, jnp.int32(illegal))
    assert not bool(legal) and not bool(done) and np.all(np.asarray(r) == 0)
    assert all(np.array_equal(a, b) for a, b in zip(S.to_arrays(nxt).values(),
                                                    S.to_arrays(s).values(), strict=True))
    while True:
        assert int(game.to_act(s)) == ref.game.to_act()
        mask = ref.action_mask()
        assert np.array_equal(np.asarray(mask_of(s, ref.game.to_act())), mask)
        a = int(rng.choice(np.flatnonzero(mask)))
        _, reward, end, _, _ = ref.step(a)
        s, r, done, legal = step(s, jnp.int32(a))
        assert bool(legal) and bool(done) == end and float(r[0]) == reward == -float(r[1])
        if end:
            break
    assert int(game.to_act(s)) == -1
