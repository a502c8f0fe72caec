"""The reference's generator (``rng.py``) in uint32 arithmetic: a counter-based hash, so a
state carries its generator as ``(key, counter)`` and JAX reproduces every draw exactly.

``randint(rng, n)`` returns ``(value, rng')``; ``shuffle`` is Fisher-Yates from the end over
the first ``length`` entries of an array, the reference's ``j = randint(i + 1)`` for
``i = length-1 .. 1``."""

from __future__ import annotations

import jax
import jax.numpy as jnp

U32 = jnp.uint32


def mix32(x: jax.Array) -> jax.Array:
    x = jnp.asarray(x, U32)
    x = x ^ (x >> 16)
    x = x * U32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * U32(0x846CA68B)
    return x ^ (x >> 16)


def word(key: jax.Array, counter: jax.Array) -> jax.Array:
    return mix32(jnp.asarray(key, U32) ^ mix32(counter))


def randint(rng: jax.Array, n: jax.Array | int) -> tuple[jax.Array, jax.Array]:
    """Uniform on 0..n-1 (``n >= 1``) from ``rng`` = uint32[2] (key, counter)."""
    w = word(rng[0], rng[1])
    value = (w % jnp.maximum(jnp.asarray(n, U32), U32(1))).astype(jnp.int32)
    return value, rng.at[1].add(U32(1))


def coin(rng: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Heads (True) is ``randint(2) == 1``."""
    v, rng = randint(rng, 2)
    return v == 1, rng


def shuffle(rng: jax.Array, items: jax.Array, length: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Fisher-Yates of ``items[:length]`` (the rest untouched), as the reference draws it."""
    size = items.shape[0]

    def body(k: jax.Array, carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        xs, r = carry
        i = size - 1 - k  # i runs size-1 .. 1; only i < length draws and swaps
        active = i < length
        j, r2 = randint(r, i + 1)
        xi, xj = xs[i], xs[j]
        swapped = xs.at[i].set(xj).at[j].set(xi)
        return jnp.where(active, swapped, xs), jnp.where(active, r2, r)

    out, rng = jax.lax.fori_loop(0, size - 1, body, (items, rng))
    return out, rng


def seed_key(seed: jax.Array) -> jax.Array:
    """The reference's ``Rng(seed)`` key for a seed below 2**32."""
    return mix32(jnp.asarray(seed, U32) ^ mix32(U32(0)))


def _zero(rng: jax.Array) -> jax.Array:
    """int32 0 computed from ``rng``: a loop's initial counter must vary with the state as its
    output does, or ``shard_map`` (the benchmark's one device per core) rejects the loop (hand
    fix after the loop, found by ``envport bench``; a constant 0 under ``vmap`` is the same)."""
    return (rng[0] & U32(0)).astype(jnp.int32)


def heads(rng: jax.Array, n: jax.Array, most: int) -> tuple[jax.Array, jax.Array]:
    """The number of heads in ``n`` coins (``n <= most``, a static bound): the reference's
    ``sum(rng.coin() for _ in range(n))``, drawing exactly ``n`` words."""

    def body(k: int, carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        count, r = carry
        h, r2 = coin(r)
        on = k < n
        return count + jnp.where(on & h, 1, 0), jnp.where(on, r2, r)

    return jax.lax.fori_loop(0, most, body, (_zero(rng), rng))


def heads_until_tails(rng: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Coins until the first tails: (the number of heads, rng past the tails)."""

    def cond(carry: tuple[jax.Array, jax.Array, jax.Array]) -> jax.Array:
        return carry[2]

    def body(carry: tuple[jax.Array, jax.Array, jax.Array]
             ) -> tuple[jax.Array, jax.Array, jax.Array]:
        count, r, _ = carry
        h, r = coin(r)
        return count + jnp.where(h, 1, 0), r, h

    zero = _zero(rng)
    count, rng, _ = jax.lax.while_loop(cond, body, (zero, rng, zero == 0))
    return count, rng
