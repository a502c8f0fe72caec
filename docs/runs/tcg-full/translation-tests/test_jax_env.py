"""The environment against the reference on the ``full`` pool: whole games in lockstep with
its own ``sample_draws`` (observation, reward, end, mask, every field), its own resets, an
illegal action as a no-op."""

import jax
import jax.numpy as jnp
import numpy as np
from translation import state as S
from translation.jax_env import TcgPocket
from translation.tests.refgames import reference

ENV = TcgPocket()
STEP, MASK = jax.jit(ENV.step), jax.jit(ENV.action_mask)


def test_lockstep_games_with_the_envs_own_draws():
    step, mask = STEP, MASK
    ref = reference()
    for seed in (40, 41):
        obs = ref.reset(seed)
        s = S.from_arrays(ref.get_state())
        assert np.array_equal(np.asarray(ENV.observe(s)), obs)
        rng = np.random.default_rng(seed)
        for t in range(1000):
            m = ref.action_mask()
            assert np.array_equal(np.asarray(mask(s)), m)
            a = int(ref.scripted_action(rng) if seed % 2 else rng.choice(np.flatnonzero(m)))
            obs, reward, done, _, _ = ref.step(a)
            res = step(jax.random.key(t), s, jnp.int32(a))
            got = S.to_arrays(res.state)
            assert [k for k, v in ref.get_state().items() if not np.array_equal(got[k], v)] == []
            assert np.array_equal(np.asarray(res.obs), obs)
            assert float(res.reward) == reward and bool(res.terminated) == done
            s = res.state
            if done:
                break
        assert done


def test_reset_and_an_illegal_action():
    s, obs = jax.jit(ENV.reset)(jax.random.key(2))
    assert obs.shape == ENV.observation_space().shape
    m = np.asarray(MASK(s))
    bad = int(np.flatnonzero(~m)[0])
    res = STEP(jax.random.key(0), s, jnp.int32(bad))
    assert not bool(res.terminated) and float(res.reward) == 0.0
    assert all(np.array_equal(a, b) for a, b in zip(S.to_arrays(res.state).values(),
                                                    S.to_arrays(s).values(), strict=True))
