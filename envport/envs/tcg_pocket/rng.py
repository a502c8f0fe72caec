"""The one source of randomness of a game.

Every coin flip, shuffle, random pick and Energy roll goes through :class:`Rng.randint`, and each
draw is appended to ``tape`` as ``Draw(kind, n, value)``: a translation's draws can be compared
with the reference's draw by draw, and a recorded tape can be injected back
(:class:`ReplayRng`).

The generator is counter-based on 32-bit words so that a JAX engine can carry it in its state
and reproduce it exactly (uint32 arithmetic wraps the same way): the game's position is
``(key, counter)`` (``state_array``), draw ``c`` is the word ``mix32(key ^ mix32(c))`` and
``randint(n)`` is ``word % n`` (a bias below ``n / 2**32``, at most 5e-9 for the ranges a game
uses). ``mix32`` is the "lowbias32" integer finaliser. A state taken with ``state_array`` and
restored with ``Rng.at`` continues with the same draws.

Derived draws are built from ``randint`` only, in a documented way:

- ``coin()``: ``randint(2) == 1`` is heads;
- ``shuffle(xs)``: Fisher-Yates from the end, ``j = randint(i + 1)`` for ``i = len-1 .. 1``;
- ``pick(n)``: ``randint(n)`` (a random card, a random Energy, an Energy roll).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import numpy as np

T = TypeVar("T")


@dataclass(frozen=True)
class Draw:
    kind: str  # coin | shuffle | pick | energy
    n: int  # the draw is uniform on 0 .. n-1
    value: int


M32 = 0xFFFFFFFF


def mix32(x: int) -> int:
    """The "lowbias32" finaliser: a bijection of 32-bit words with good avalanche."""
    x &= M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & M32
    x ^= x >> 16
    return x


def word(key: int, counter: int) -> int:
    """The generator's draw number ``counter`` under ``key``."""
    return mix32((key & M32) ^ mix32(counter))


class Rng:
    """Uniform integers from a counter-based 32-bit generator, recorded on ``tape``."""

    def __init__(self, seed: int):
        self.key = mix32((seed & M32) ^ mix32((seed >> 32) & M32))
        self.counter = 0
        self.tape: list[Draw] = []

    @classmethod
    def at(cls, position: np.ndarray) -> Rng:
        """The generator at ``state_array()``'s position (an empty tape)."""
        rng = cls(0)
        rng.key, rng.counter = int(position[0]), int(position[1])
        return rng

    def state_array(self) -> np.ndarray:
        return np.asarray([self.key, self.counter], np.uint32)

    def _next(self, kind: str, n: int) -> int:
        w = word(self.key, self.counter)
        self.counter = (self.counter + 1) & M32
        return w % n

    def randint(self, n: int, kind: str = "pick") -> int:
        if n < 1:
            raise ValueError(f"randint({n}): nothing to draw from")
        value = self._next(kind, n)
        self.tape.append(Draw(kind, n, value))
        return value

    def coin(self) -> bool:
        return self.randint(2, "coin") == 1

    def shuffle(self, items: list[T]) -> None:
        for i in range(len(items) - 1, 0, -1):
            j = self.randint(i + 1, "shuffle")
            items[i], items[j] = items[j], items[i]

    def pick(self, n: int) -> int:
        return self.randint(n, "pick")

    def energy(self, n_types: int) -> int:
        return self.randint(n_types, "energy")


class ReplayRng(Rng):
    """Plays back a recorded (or hand-written) tape; a draw of another kind or range than the
    tape's next entry, or one past its end, raises ``ReplayMismatch`` naming the position."""

    def __init__(self, tape: list[Draw] | list[tuple[str, int, int]]):
        self._script = [d if isinstance(d, Draw) else Draw(*d) for d in tape]
        self._pos = 0
        self.tape = []
        self.key = self.counter = 0  # a replay has no generator position of its own

    def _next(self, kind: str, n: int) -> int:
        if self._pos >= len(self._script):
            raise ReplayMismatch(f"draw {self._pos}: the tape ended (wanted {kind} of {n})")
        d = self._script[self._pos]
        if (d.kind, d.n) != (kind, n) or not 0 <= d.value < n:
            raise ReplayMismatch(f"draw {self._pos}: tape has {d}, the game wanted {kind} of {n}")
        self._pos += 1
        return d.value

    @property
    def remaining(self) -> int:
        return len(self._script) - self._pos


class ReplayMismatch(RuntimeError):
    pass
