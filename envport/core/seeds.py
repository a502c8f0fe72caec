"""Seeds for the parts of a run: one episode, one sample, one stream, from the run's seed.

A run takes any non-negative integer seed (``envport verify --seed 5000``, ``--seed 2**40``).
References take 32-bit seeds (Pong's C ``rand_r`` state is a ``uint32``) and ``jax.random.key``
keeps only the low 32 bits of a large one, so arithmetic such as ``seed * 1_000_003 + i``
overflows or makes two runs collide. Every derived seed is instead a hash of the run's seed
and the part's index (NumPy's ``SeedSequence``): valid for every reference, independent across
parts, and different for different run seeds.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

MAX_SEED = 2**63 - 1  # what the command line and the Python API accept


def check_seed(seed: int, what: str = "seed") -> int:
    """``seed`` as an int, or ValueError naming ``what`` (e.g. ``--seed``)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"{what} must be an integer, got {seed!r}")
    if not 0 <= int(seed) <= MAX_SEED:
        raise ValueError(f"{what} must be between 0 and 2**63 - 1, got {seed}")
    return int(seed)


def _sequence(seed: int, path: tuple[int, ...]) -> np.random.SeedSequence:
    # Every number as two 32-bit words, after a count: SeedSequence reads a large int as its
    # 32-bit words, so [2**32 + 5, 0] and [5, 1] would otherwise be the same entropy.
    numbers = [check_seed(seed), *(check_seed(int(i), "a seed path index") for i in path)]
    return np.random.SeedSequence([len(numbers), *(w for x in numbers
                                                    for w in (x & 0xFFFFFFFF, x >> 32))])


def derive_seed(seed: int, *path: int) -> int:
    """A 32-bit seed (``0 <= s < 2**32``) for the part ``path`` (indices) of run ``seed``."""
    return int(_sequence(seed, path).generate_state(1)[0])


def derive_key(seed: int, *path: int) -> jax.Array:
    """A JAX PRNG key for the part ``path`` of run ``seed``, from 64 bits of the hash."""
    words = _sequence(seed, path).generate_state(2)
    return jax.random.wrap_key_data(jnp.asarray(words, jnp.uint32), impl="threefry2x32")
