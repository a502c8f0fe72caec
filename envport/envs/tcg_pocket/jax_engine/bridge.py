"""Reference state <-> translation state: the same field names and dtypes on both sides, so
this only converts; the draws of a step are the generator position the tape records
(``tape["rng"]``, equal to the state's ``rng`` before the step)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from envport.envs.tcg_pocket.jax_engine.state import FIELDS, State


class TcgPocketBridge:
    def to_jax(self, ref_state: dict[str, np.ndarray]) -> State:
        return State(**{k: jnp.asarray(np.asarray(ref_state[k]), FIELDS[k][1]) for k in FIELDS})

    def from_jax(self, state: State) -> dict[str, np.ndarray]:
        return {k: np.asarray(getattr(state, k)).astype(FIELDS[k][1]) for k in FIELDS}

    def draws(self, tape: dict[str, np.ndarray], ref_state: dict[str, np.ndarray]) -> Any:
        rng = tape.get("rng", ref_state["rng"])
        return jnp.asarray(np.asarray(rng), jnp.uint32)
