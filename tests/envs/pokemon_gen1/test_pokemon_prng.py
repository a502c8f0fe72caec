"""envport's JAX copies of Showdown's PRNGs: the Gen 5 LCG on the spec's vectors, ChaCha20 on RFC
7539's; both against Showdown's own ``PRNG`` class are the L1 ``prng`` component
(``components.check_prng``: random seeds and arguments, every result compared), which
``test_pokemon_mechanics.py`` runs with the other components.

The vectors (../shared/specs/pokemon-gen1.md section 3) were computed by running Showdown's PRNG
and an independent Python implementation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envport.envs.pokemon_gen1 import prng

VECTORS = [  # seed, raw u (first 5), random(256) x5, random(217, 256) x5, state after 5 steps
    ((0, 0, 0, 0), [0, 1904791564, 183838931, 176901684, 3359619440], [0, 113, 10, 10, 200],
     [217, 234, 218, 218, 247], (51263, 47472, 5434, 37415)),
    ((1, 2, 3, 4), [2030470262, 3793892072, 2851743046, 574702432, 3620926519],
     [121, 226, 169, 34, 215], [235, 251, 242, 222, 249], (55250, 62519, 52978, 42619)),
    ((4660, 22136, 39612, 57072), [3683702347, 3207779802, 4072565397, 793232274, 1233246869],
     [219, 191, 242, 47, 73], [250, 246, 253, 224, 228], (18817, 55957, 42735, 35799)),
    ((65535, 65535, 65535, 65535), [2728883354, 4284242996, 3630860173, 3576661958, 454285631],
     [162, 255, 216, 213, 27], [241, 255, 249, 249, 221], (6931, 55615, 23196, 19730)),
    ((5, 6, 7, 8), [4054878142, 2527403705, 310821800, 3276017396, 202535879],
     [241, 150, 18, 195, 12], [253, 239, 219, 246, 218], (3090, 29639, 52671, 47823)),
]


def _repeat(fn, state, count):
    out = []
    for _ in range(count):
        state, value = fn(state)
        out.append(int(value))
    return state, out


@pytest.mark.parametrize(("seed", "raw", "r256", "r217", "after"), VECTORS)
def test_spec_vectors(seed, raw, r256, r217, after):
    state = prng.seed_state(seed)
    end, values = prng.raw_sequence(state, 5)
    assert values.dtype == jnp.uint32 and [int(v) for v in values] == raw
    assert tuple(int(w) for w in prng.state_seed(end)) == after
    assert _repeat(lambda s: prng.random_int(s, 256), state, 5)[1] == r256
    assert _repeat(lambda s: prng.random(s, 256), state, 5)[1] == r256
    assert _repeat(lambda s: prng.random_range(s, 217, 256), state, 5)[1] == r217
    assert _repeat(lambda s: prng.random(s, 217, 256), state, 5)[1] == r217
    assert _repeat(lambda s: prng.random_range(s, 0, 256), state, 5)[1] == r256


@pytest.mark.parametrize(("seed", "order"), [((1, 2, 3, 4), [2, 5, 4, 3, 1, 0]),
                                             ((5, 6, 7, 8), [5, 3, 2, 0, 4, 1])])
def test_spec_shuffle(seed, order):
    state, items = prng.shuffle(prng.seed_state(seed), jnp.arange(6))
    assert [int(i) for i in items] == order
    # Five draws for six items (positions 0..4), one each also when j = i.
    assert np.array_equal(state, prng.raw_sequence(prng.seed_state(seed), 5)[0])


def test_jit_and_vmap_agree_with_single_calls():
    seeds = jnp.asarray([v[0] for v in VECTORS], jnp.uint32)
    states = prng.seed_state(seeds)
    batched = jax.jit(jax.vmap(lambda s: prng.random_chance(s, 63, 256)))(states)
    for i, s in enumerate(states):
        single = prng.random_chance(s, 63, 256)
        assert np.array_equal(batched[0][i], single[0]) and bool(batched[1][i]) == bool(single[1])
    assert [bool(b) for b in batched[1]] == [v[2][0] < 63 for v in VECTORS]


def test_mul_full_is_the_64_bit_product():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**32, 2000, dtype=np.uint64)
    b = rng.integers(0, 2**32, 2000, dtype=np.uint64)
    a[:4], b[:4] = [0, 2**32 - 1, 2**32 - 1, 65535], [0, 2**32 - 1, 1, 65537]
    hi, lo = jax.jit(prng.mul_full)(a.astype(np.uint32), b.astype(np.uint32))
    exact = [int(x) * int(y) for x, y in zip(a, b, strict=True)]
    assert [int(h) for h in hi] == [p >> 32 for p in exact]
    assert [int(v) for v in lo] == [p & 0xFFFFFFFF for p in exact]


def test_state_seed_round_trip():
    words = np.random.default_rng(1).integers(0, 65536, (50, 4))
    assert np.array_equal(prng.state_seed(prng.seed_state(words)), words)


# ---- SodiumRNG: ChaCha20 ---------------------------------------------------------------------

def test_chacha20_block_is_rfc_7539s():
    """RFC 7539 section 2.3.2: key 00..1f, block counter 1, nonce 000000090000004a00000000."""
    key = np.frombuffer(bytes(range(32)), "<u4")
    nonce = np.frombuffer(bytes.fromhex("000000090000004a00000000"), "<u4")
    block = prng.chacha20_block(key, 1, nonce)
    assert block.dtype == jnp.uint32
    assert [f"{int(w):08x}" for w in block] == [
        "e4e7f110", "15593bd1", "1fdd0f50", "c47120a3", "c7f4d1c7", "0368c033", "9aaa2204",
        "4e6cd4c3", "466482d2", "09aa9f07", "05d7c214", "a2028bd9", "d19c12b5", "b94e16de",
        "e883d0cb", "4e3c50a2"]


def test_sodium_seed_round_trip_and_refusals():
    seed = "sodium," + "".join(f"{i:02x}" for i in range(32))
    assert prng.sodium_state_seed(prng.sodium_seed_state(seed)) == seed
    # Showdown pads a short seed with zeros on the right (SodiumRNG.setSeed)
    assert prng.sodium_state_seed(prng.sodium_seed_state("sodium,abc")) == "sodium,abc" + "0" * 61
    for bad in ("sodium,", "sodium,xyz", "gen5,0001", "sodium," + "0" * 65):
        with pytest.raises(ValueError, match="sodium seed"):
            prng.sodium_seed_state(bad)


def test_a_wrong_chacha_output_is_caught_by_the_component_check(monkeypatch):
    """The L1 ``prng`` component (``components.check_prng``, run against Showdown in
    ``test_pokemon_mechanics.py`` for both generators) can fail: ChaCha20's output word read
    little-endian instead of big-endian is reported with the case and the field."""
    from envport.envs.pokemon_gen1 import components as C

    monkeypatch.setattr(prng, "_byteswap", lambda x: x)
    C._jax_prng.clear_cache()
    try:
        with pytest.raises(AssertionError, match=r"component 'prng': case 2 differs in call 0"):
            C.check_prng(4, 0)  # cases 0-1 are Gen 5 seeds, 2-3 sodium ones
    finally:
        C._jax_prng.clear_cache()
