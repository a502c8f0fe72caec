"""Jittable action and observation spaces.

``sample`` and ``contains`` are pure JAX and can run under ``jit``/``vmap``. ``validate`` is for
the Python boundary (Gymnasium adapter, CLI): it raises a clear error instead of clipping.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

INT32 = np.dtype(np.int32)
FLOAT32 = np.dtype(np.float32)


class InvalidActionError(ValueError):
    """An action that does not belong to the environment's action space."""


class Space:
    shape: tuple[int, ...]
    dtype: np.dtype

    def sample(self, key: jax.Array) -> jax.Array:
        raise NotImplementedError

    def contains(self, x: jax.Array) -> jax.Array:
        raise NotImplementedError

    def validate(self, x: object, batch_shape: tuple[int, ...] = ()) -> np.ndarray:
        raise NotImplementedError


@dataclass(frozen=True)
class Discrete(Space):
    n: int
    dtype: np.dtype = INT32

    @property
    def shape(self) -> tuple[int, ...]:  # type: ignore[override]
        return ()

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (), 0, self.n, dtype=self.dtype)

    def contains(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != () or not jnp.issubdtype(x.dtype, jnp.integer):
            return jnp.asarray(False)
        return (x >= 0) & (x < self.n)

    def validate(self, x: object, batch_shape: tuple[int, ...] = ()) -> np.ndarray:
        arr = np.asarray(x)
        if arr.shape != batch_shape:
            raise InvalidActionError(
                f"action has shape {arr.shape}, expected {batch_shape} for Discrete({self.n})"
            )
        if not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
            raise InvalidActionError(
                f"action has dtype {arr.dtype}, expected an integer dtype for Discrete({self.n})"
            )
        bad = (arr < 0) | (arr >= self.n)
        if np.any(bad):
            raise InvalidActionError(
                f"action {arr[bad].ravel()[:5].tolist()} out of range: Discrete({self.n}) takes "
                f"0..{self.n - 1}"
            )
        return arr.astype(self.dtype)


@dataclass(frozen=True)
class Box(Space):
    low: float
    high: float
    shape: tuple[int, ...]
    dtype: np.dtype = FLOAT32

    def sample(self, key: jax.Array) -> jax.Array:
        lo = max(self.low, -1e6)
        hi = min(self.high, 1e6)
        return jax.random.uniform(key, self.shape, self.dtype, lo, hi)

    def contains(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.asarray(False)
        return jnp.all((x >= self.low) & (x <= self.high) & ~jnp.isnan(x))

    def validate(self, x: object, batch_shape: tuple[int, ...] = ()) -> np.ndarray:
        arr = np.asarray(x)
        want = batch_shape + self.shape
        if arr.shape != want:
            raise InvalidActionError(f"action has shape {arr.shape}, expected {want}")
        if not np.issubdtype(arr.dtype, np.floating):
            raise InvalidActionError(f"action has dtype {arr.dtype}, expected a float dtype")
        bad = ~((arr >= self.low) & (arr <= self.high))
        if np.any(bad):
            raise InvalidActionError(
                f"action {arr[bad].ravel()[:5].tolist()} outside [{self.low}, {self.high}]"
                " (envport never clips actions silently)"
            )
        return arr.astype(self.dtype)
