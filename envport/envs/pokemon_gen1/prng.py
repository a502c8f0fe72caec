"""Pokemon Showdown's PRNGs (``sim/prng.ts``: ``Gen5RNG``, ``SodiumRNG``, ``PRNG``) in JAX, uint32
only.

Showdown's Gen 5 generator (seeds of four 16-bit words) is the 64-bit linear congruential
generator ``S <- S * 0x5D588B656C078965 + 0x269EC3 (mod 2**64)``, whose output is the high 32 bits
of the new state. Without ``jax_enable_x64`` JAX has no uint64, so the state is two uint32 words
``[..., 2] = (hi, lo)`` and 64-bit products are built from 16-bit halves. Every function takes the
state first and returns the new state first; all are jittable and vmappable, and broadcast over
leading axes of the state.

Mapping to Showdown (``PRNG`` methods, each exactly one generator step):

======================================  =====================================================
Showdown                                here
======================================  =====================================================
``rng.next()``                          ``next_u32(state) -> (state, u)``
``random()``                            ``random_float(state)`` (float32: u / 2**32 rounded)
``random(n)``                           ``random_int(state, n)`` = floor(u * n / 2**32)
``random(m, n)``                        ``random_range(state, m, n)`` = m + floor(u*(n-m)/2**32)
``randomChance(k, d)``                  ``random_chance(state, k, d)`` = random(d) < k
``sample(items)``                       ``sample(state, items, length=None)``
``shuffle(items, start, end)``          ``shuffle(state, items, start=0, end=None)``
======================================  =====================================================

Showdown's default generator since 0.11, ``SodiumRNG`` (``"sodium,HEX"`` seeds), is ChaCha20:
each ``next()`` is one block under the 32-byte key (counter 0, nonce "LibsodiumDRG"), whose first
32 bytes become the new key and whose next 4, big-endian, are ``u``. Its state is the key as
``[..., 8]`` uint32 words; :func:`next_u32` tells the two generators apart by that last axis, so
every function here and the engine built on them run either one (a draw costs one ChaCha20 block:
ten double rounds, a ``fori_loop``).

``random`` mirrors Showdown's overloaded ``random(from?, to?)``. Showdown computes
``floor(u * k / 2**32)`` in doubles, which is exact while ``u * k < 2**53``, i.e. ``k <= 2**21``;
here it is the exact high word of the 64-bit product, so the two agree for every range up to
2**21 (Showdown's battles use ranges of at most 65,536). Ranges must satisfy ``0 <= m < n``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

MUL_HI = np.uint32(0x5D588B65)
MUL_LO = np.uint32(0x6C078965)
INC = np.uint32(0x00269EC3)
_MASK16 = np.uint32(0xFFFF)


def _u32(x: Any) -> Array:
    return jnp.asarray(x).astype(jnp.uint32)


def mul_full(a: Any, b: Any) -> tuple[Array, Array]:
    """The 64-bit product of two uint32 values, as (high word, low word)."""
    a, b = _u32(a), _u32(b)
    a0, a1 = a & _MASK16, a >> 16
    b0, b1 = b & _MASK16, b >> 16
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> 16) + (p01 & _MASK16) + (p10 & _MASK16)
    lo = (p00 & _MASK16) | ((mid & _MASK16) << 16)
    hi = p11 + (p01 >> 16) + (p10 >> 16) + (mid >> 16)
    return hi, lo


def mul_hi(a: Any, b: Any) -> Array:
    """floor(a * b / 2**32) for uint32 a, b: the high word of the product."""
    return mul_full(a, b)[0]


def seed_state(seed: Sequence[int] | Any, xp: Any = jnp) -> Array:
    """Showdown's seed words ``[s0, s1, s2, s3]`` (16 bits each, most significant first) ->
    the state ``(hi, lo)``; accepts an array ``[..., 4]``; ``xp``: jax.numpy or numpy."""
    words = xp.asarray(seed).astype(xp.uint32)
    return xp.stack([(words[..., 0] << 16) | words[..., 1],
                     (words[..., 2] << 16) | words[..., 3]], axis=-1)


def state_seed(state: Any, xp: Any = jnp) -> Array:
    """The inverse of :func:`seed_state`: ``(hi, lo)`` -> four 16-bit words (``battle.prng``)."""
    state = xp.asarray(state).astype(xp.uint32)
    hi, lo = state[..., 0], state[..., 1]
    return xp.stack([hi >> 16, hi & _MASK16, lo >> 16, lo & _MASK16], axis=-1)


def next_u32(state: Any) -> tuple[Array, Array]:
    """One generator step: ``Gen5RNG.next`` on a ``[..., 2]`` state (the new state and its high
    word ``u``), ``SodiumRNG.next`` on a ``[..., 8]`` one (:func:`sodium_next_u32`)."""
    state = _u32(state)
    if state.shape[-1] == SODIUM_WORDS:
        return sodium_next_u32(state)
    hi, lo = state[..., 0], state[..., 1]
    ph, pl = mul_full(lo, MUL_LO)
    new_hi = ph + lo * MUL_HI + hi * MUL_LO  # wraps mod 2**32: the product mod 2**64
    new_lo = pl + INC
    new_hi = new_hi + (new_lo < pl).astype(jnp.uint32)  # carry of the low-word addition
    return jnp.stack([new_hi, new_lo], axis=-1), new_hi


# ---- SodiumRNG (Showdown's default since 0.11: ``sim/prng.ts SodiumRNG``) ----------------------

SODIUM_WORDS = 8  # the state: the 32-byte ChaCha20 key as little-endian uint32 words
_SIGMA = np.frombuffer(b"expand 32-byte k", "<u4")
# SodiumRNG.NONCE, libsodium's randombytes_buf_deterministic nonce
_SODIUM_NONCE = np.frombuffer(b"LibsodiumDRG", "<u4")


def _rotl(x: Array, n: int) -> Array:
    return (x << np.uint32(n)) | (x >> np.uint32(32 - n))


def chacha20_block(key: Any, counter: Any = 0, nonce: Any = _SODIUM_NONCE) -> Array:
    """The ChaCha20 block function (RFC 7539 section 2.3, as ``ts-chacha20``, which Showdown
    uses): key ``[..., 8]``, a 32-bit block counter and a 3-word nonce -> the 16 output words
    (the keystream block, little-endian words)."""
    key = _u32(key)
    lead = key.shape[:-1]
    init = [jnp.broadcast_to(jnp.uint32(w), lead) for w in _SIGMA]
    init += [key[..., i] for i in range(8)]
    init += [jnp.broadcast_to(_u32(counter), lead)]
    init += [jnp.broadcast_to(jnp.uint32(w), lead) for w in np.asarray(nonce, np.uint32)]

    def quarter(x: list, a: int, b: int, c: int, d: int) -> None:
        x[a] = x[a] + x[b]
        x[d] = _rotl(x[d] ^ x[a], 16)
        x[c] = x[c] + x[d]
        x[b] = _rotl(x[b] ^ x[c], 12)
        x[a] = x[a] + x[b]
        x[d] = _rotl(x[d] ^ x[a], 8)
        x[c] = x[c] + x[d]
        x[b] = _rotl(x[b] ^ x[c], 7)

    def double_round(_: Any, words: tuple) -> tuple:
        x = list(words)
        for a, b, c, d in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
                           (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
            quarter(x, a, b, c, d)
        return tuple(x)

    mixed = jax.lax.fori_loop(0, 10, double_round, tuple(init))
    return jnp.stack([m + i for m, i in zip(mixed, init, strict=True)], axis=-1)


def _byteswap(x: Array) -> Array:
    return ((x << np.uint32(24)) | ((x & np.uint32(0xFF00)) << np.uint32(8))
            | ((x >> np.uint32(8)) & np.uint32(0xFF00)) | (x >> np.uint32(24)))


def sodium_next_u32(state: Any) -> tuple[Array, Array]:
    """``SodiumRNG.next``: the first 36 bytes of ChaCha20's keystream under the key ``state``
    (counter 0, nonce "LibsodiumDRG"); bytes 0-31 become the new key, bytes 32-35 read
    big-endian are ``u``."""
    block = chacha20_block(state)
    return block[..., :SODIUM_WORDS], _byteswap(block[..., SODIUM_WORDS])


def sodium_seed_state(seed: str) -> np.ndarray:
    """Showdown's ``"sodium,HEX"`` seed (1-64 hex digits, padded with zeros on the right as
    ``SodiumRNG.setSeed`` does) -> the ``[8]`` uint32 state."""
    from envport.envs.pokemon_gen1.reference import check_sodium_seed

    digits = check_sodium_seed(seed, "a sodium seed").partition(",")[2]
    return np.frombuffer(bytes.fromhex(digits.ljust(64, "0")), "<u4").astype(np.uint32)


def sodium_state_seed(state: Any) -> str:
    """The inverse of :func:`sodium_seed_state`: ``SodiumRNG.getSeed()``."""
    return "sodium," + np.asarray(state, np.uint32).astype("<u4").tobytes().hex()


def random_sodium_seed(rng: Any) -> str:
    """A random ``"sodium,HEX"`` seed of 64 digits (the 256-bit key) drawn from ``rng``, a
    ``random.Random``."""
    return f"sodium,{rng.getrandbits(256):064x}"


def state_of_seed(seed: Any) -> np.ndarray:
    """A Showdown seed as envport passes it (four 16-bit words, or ``"sodium,HEX"``) -> the
    generator state: ``[2]`` (Gen 5 LCG) or ``[8]`` (SodiumRNG)."""
    if isinstance(seed, str) and seed.startswith("sodium"):
        return sodium_seed_state(seed)
    return np.asarray(seed_state(np.asarray(seed, np.uint32), np))


def seed_of_state(state: Any) -> list[int] | str:
    """The inverse of :func:`state_of_seed`, as the worker reports ``battle.prng``."""
    state = np.asarray(state, np.uint32)
    if state.shape[-1] == SODIUM_WORDS:
        return sodium_state_seed(state)
    return [int(w) for w in state_seed(state, np)]


def random_float(state: Any) -> tuple[Array, Array]:
    """``random()``: u / 2**32, as float32 (u rounded to 24 significant bits, then scaled)."""
    state, u = next_u32(state)
    return state, u.astype(jnp.float32) * jnp.float32(2.0**-32)


def random_int(state: Any, n: Any) -> tuple[Array, Array]:
    """``random(n)`` = floor(u * n / 2**32), in [0, n) (uint32)."""
    state, u = next_u32(state)
    return state, mul_hi(u, n)


def random_range(state: Any, m: Any, n: Any) -> tuple[Array, Array]:
    """``random(m, n)`` = m + floor(u * (n - m) / 2**32), in [m, n) (int32)."""
    m32 = jnp.asarray(m, jnp.int32)
    span = (jnp.asarray(n, jnp.int32) - m32).astype(jnp.uint32)
    state, r = random_int(state, span)
    return state, r.astype(jnp.int32) + m32


def random(state: Any, m: Any = None, n: Any = None) -> tuple[Array, Array]:
    """Showdown's ``random(from?, to?)``: no argument -> float, one -> ``random(n)``, two ->
    ``random(m, n)`` (Showdown also reads ``random(m, 0)`` as ``random(m)``; pass one argument)."""
    if m is None:
        return random_float(state)
    if n is None:
        state, r = random_int(state, m)
        return state, r.astype(jnp.int32)
    return random_range(state, m, n)


def random_chance(state: Any, numerator: Any, denominator: Any) -> tuple[Array, Array]:
    """``randomChance(k, d)`` = ``random(d) < k`` (bool)."""
    state, r = random_int(state, denominator)
    return state, r.astype(jnp.int32) < jnp.asarray(numerator, jnp.int32)


def sample(state: Any, items: Any, length: Any = None) -> tuple[Array, Array]:
    """``sample(items)`` = ``items[random(len)]``; ``length`` (traced allowed) samples the first
    ``length`` entries of a padded array."""
    items = jnp.asarray(items)
    length = items.shape[-1] if length is None else length
    state, i = random_int(state, length)
    return state, jnp.take_along_axis(items, i.astype(jnp.int32)[..., None], axis=-1)[..., 0]


def shuffle(state: Any, items: Any, start: Any = 0, end: Any = None) -> tuple[Array, Array]:
    """``shuffle(items, start, end)``: for i = start .. end-2, j = ``random(i, end)``, swap i, j.

    One draw per position (also when j = i), as Showdown's Fisher-Yates. ``start`` and ``end``
    may be traced: positions outside [start, end - 1) make no draw. Works on one state and a
    1-D ``items`` (vmap for batches).
    """
    items = jnp.asarray(items)
    size = items.shape[0]
    end = size if end is None else end
    start, end = jnp.asarray(start, jnp.int32), jnp.asarray(end, jnp.int32)

    def body(i: Array, carry: tuple[Array, Array]) -> tuple[Array, Array]:
        state, items = carry
        active = (i >= start) & (i < end - 1)
        new_state, j = random_range(state, i, end)
        j = jnp.where(active, j, i)
        a, b = items[i], items[j]
        items = items.at[i].set(b).at[j].set(a)
        return jnp.where(active, new_state, state), items

    return jax.lax.fori_loop(0, size, body, (_u32(state), items))


def raw_sequence(state: Any, count: int) -> tuple[Array, Array]:
    """``count`` successive raw outputs u (a scan of :func:`next_u32`)."""

    def body(state: Array, _: Any) -> tuple[Array, Array]:
        return next_u32(state)

    return jax.lax.scan(body, _u32(state), None, length=count)
