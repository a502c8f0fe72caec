"""envport's JAX copy of Showdown's Gen 5 PRNG: the spec's vectors, then Showdown itself.

The vectors (../shared/specs/pokemon-gen1.md section 3) were computed by running Showdown's PRNG
and an independent Python implementation; the second half of this file runs Showdown's own
``PRNG`` class in the worker on many random seeds and arguments and compares every result.
"""

from __future__ import annotations

import random

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


# ---- against Showdown's own PRNG -----------------------------------------------------------

# One fixed sequence of API calls; every seed gets its own random arguments.
PATTERN = ["float", "int", "range", "chance", "sample", "shuffle", "int", "chance", "range",
           "float", "sample", "int", "shuffle", "chance", "int", "range"]
N_SEEDS = 400
SAMPLE_LEN = 8
SHUFFLE_LEN = 7


def _arguments(rng: random.Random) -> list[dict]:
    def span():  # Showdown's double arithmetic is exact up to 2**21 (see prng.py)
        return rng.choice([1, 2, 3, 6, 8, 39, 217, 255, 256, 65535, 65536, 2**21,
                           rng.randint(1, 2**21)])

    args = []
    for api in PATTERN:
        if api == "int":
            args.append({"n": span()})
        elif api == "range":
            m = rng.randint(0, 70000)
            args.append({"m": m, "n": m + span()})
        elif api == "chance":
            d = rng.choice([1, 2, 16, 256, 1000, rng.randint(1, 65536)])
            args.append({"k": rng.randint(0, d), "d": d})
        elif api == "sample":
            args.append({"items": [rng.randint(-1000, 1000) for _ in range(SAMPLE_LEN)],
                         "length": rng.randint(1, SAMPLE_LEN)})
        elif api == "shuffle":
            end = rng.randint(0, SHUFFLE_LEN)
            args.append({"start": rng.randint(0, max(end, 1)), "end": end})
        else:
            args.append({})
    return args


def _showdown_calls(args: list[dict]) -> list[list]:
    calls = []
    for api, a in zip(PATTERN, args, strict=True):
        if api == "float":
            calls.append(["random"])
        elif api == "int":
            calls.append(["random", a["n"]])
        elif api == "range":
            calls.append(["random", a["m"], a["n"]])
        elif api == "chance":
            calls.append(["randomChance", a["k"], a["d"]])
        elif api == "sample":
            calls.append(["sample", a["items"][:a["length"]]])
        else:
            calls.append(["shuffle", list(range(SHUFFLE_LEN)), a["start"], a["end"]])
    return calls


def _jax_program(state, args):
    out = []
    for api, a in zip(PATTERN, args, strict=True):
        raw = prng.next_u32(state)[1]
        if api == "float":
            state, v = prng.random(state)
        elif api == "int":
            state, v = prng.random(state, a["n"])
        elif api == "range":
            state, v = prng.random(state, a["m"], a["n"])
        elif api == "chance":
            state, v = prng.random_chance(state, a["k"], a["d"])
        elif api == "sample":
            state, v = prng.sample(state, a["items"], a["length"])
        else:
            state, v = prng.shuffle(state, jnp.arange(SHUFFLE_LEN), a["start"], a["end"])
        out.append((raw, v))
    return state, out


def _check_against_showdown(worker, seeds, start, end_seed, rng):
    """Showdown's own ``PRNG`` on each seed and the JAX program from ``start`` (the seeds'
    states): every raw output, value and final state equal."""
    args = [_arguments(rng) for _ in seeds]
    replies = worker.request([{"op": "prng", "seed": s, "calls": _showdown_calls(a)}
                              for s, a in zip(seeds, args, strict=True)])
    assert all(r["ok"] for r in replies), [r for r in replies if not r["ok"]][:1]

    stacked = jax.tree.map(lambda *xs: jnp.asarray(np.stack(xs)), *args)
    end, out = jax.jit(jax.vmap(_jax_program))(start, stacked)
    draws = 0
    for i, reply in enumerate(replies):
        result = reply["result"]
        assert end_seed(end[i]) == result["state"], f"seed {seeds[i]}: final state"
        for j, (api, (raw, value)) in enumerate(zip(PATTERN, out, strict=True)):
            showdown = result["results"][j]
            where = f"seed {seeds[i]}, call {j} {_showdown_calls(args[i])[j]}"
            draws += len(showdown["raw"])
            if showdown["raw"]:
                assert int(raw[i]) == showdown["raw"][0], where
            if api == "float":
                assert float(value[i]) == np.float32(showdown["value"]), where
            elif api == "shuffle":
                assert [int(x) for x in value[i]] == showdown["value"], where
            elif api == "chance":
                assert bool(value[i]) is showdown["value"], where
            else:
                assert int(value[i]) == showdown["value"], where
    assert draws > len(seeds) * (len(PATTERN) - 2)  # shuffles of 0 or 1 items make no draw


def test_matches_showdowns_prng_on_random_seeds_and_arguments(worker):
    rng = random.Random(2024)
    seeds = [[rng.randint(0, 65535) for _ in range(4)] for _ in range(N_SEEDS)]
    seeds[:3] = [[0, 0, 0, 0], [65535] * 4, [1, 2, 3, 4]]
    _check_against_showdown(worker, seeds, prng.seed_state(jnp.asarray(seeds)),
                            lambda s: [int(w) for w in prng.state_seed(s)], rng)


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


N_SODIUM_SEEDS = 100


def test_sodium_matches_showdowns_prng_on_random_seeds_and_arguments(worker):
    """The same program as for the Gen 5 seeds on ``"sodium,HEX"`` seeds: every API runs on a
    ``[8]`` state through :func:`prng.next_u32`."""
    rng = random.Random(2026)
    seeds = ["sodium," + "".join(rng.choice("0123456789abcdef")
                                  for _ in range(rng.choice([1, 16, 32, 63, 64])))
             for _ in range(N_SODIUM_SEEDS)]
    seeds[:2] = ["sodium,0", "sodium," + "f" * 64]
    start = jnp.asarray(np.stack([prng.sodium_seed_state(s) for s in seeds]))
    _check_against_showdown(worker, seeds, start, prng.sodium_state_seed, rng)
