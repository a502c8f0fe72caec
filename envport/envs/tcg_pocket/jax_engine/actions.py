"""The flat action space (reference ``actions.py``): 106 integers, the same for both players.

Decoding is arithmetic on a traced int32, so it works under jit and vmap: ``decode(a)`` gives
``(kind, x, y)`` with ``kind`` an index into ``KINDS``."""

from __future__ import annotations

import jax.numpy as jnp

MAX_HAND = 20
SLOTS = 4
END = 0
ATTACK = 1
RETREAT = 3
ATTACH = 6
DISCARD = 10
PLAY = 14
CHOOSE = PLAY + MAX_HAND * SLOTS
ENERGY = CHOOSE + SLOTS
N_ACTIONS = ENERGY + 8
KINDS = ("end", "attack", "retreat", "attach", "discard", "play", "choose", "energy")
K_END, K_ATTACK, K_RETREAT, K_ATTACH, K_DISCARD, K_PLAY, K_CHOOSE, K_ENERGY = range(8)


def decode(action: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """(kind, a, b) of an action: the attack index, Bench slot (1..3), slot, hand index or
    Energy type index in ``a``; the PLAY target slot in ``b``. Outside 0..105: kind -1."""
    a = jnp.asarray(action, jnp.int32)
    starts = jnp.asarray([END, ATTACK, RETREAT, ATTACH, DISCARD, PLAY, CHOOSE, ENERGY], jnp.int32)
    kind = jnp.sum(a >= starts).astype(jnp.int32) - 1
    kind = jnp.where((a < 0) | (a >= N_ACTIONS), -1, kind)
    off = a - starts[jnp.clip(kind, 0, 7)]
    x = jnp.where(kind == K_RETREAT, off + 1, jnp.where(kind == K_PLAY, off // SLOTS, off))
    y = jnp.where(kind == K_PLAY, off % SLOTS, 0)
    return kind, x, y
