"""Policies that drive a reference to the states the verifier tests from.

Random and scripted policies reach the common states; the novelty-seeking policy tries every
candidate action from the current state (through ``set_state``) and takes the one whose next
state falls in the least-visited bin, so rare situations get visited too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from envport.core.reference import Reference, RefState
from envport.core.registry import EnvSpec

Policy = Callable[[np.ndarray, np.random.Generator], Any]
POLICIES = ("random", "scripted", "novelty")


def can_draw_actions(spec: EnvSpec) -> bool:
    v = spec.verification
    return v.legal_action is not None or v.random_action is not None


def draw_action(spec: EnvSpec, state: RefState, rng: np.random.Generator) -> Any:
    """A random action to take from the reference state ``state``: a legal one where the
    environment declares ``legal_action`` (games with action masks), else ``random_action``."""
    v = spec.verification
    if v.legal_action is not None:
        return v.legal_action(state, rng)
    if v.random_action is None:
        raise ValueError(f"{spec.name} declares neither legal_action nor random_action")
    return v.random_action(rng)


class UnrestorableState(Exception):
    """The reference refused to take back a state it was in (``set_state`` of its own
    ``get_state``; Showdown's ``fromJSON`` of its own ``toJSON`` of some transformed Pokemon)."""


class NoveltyPolicy:
    def __init__(self, spec: EnvSpec, ref: Reference, candidates: int = 3):
        if spec.verification.state_bins is None or not can_draw_actions(spec):
            raise ValueError(f"{spec.name}: the novelty policy needs state_bins and random_action "
                             "(or legal_action)")
        self.spec, self.ref, self.candidates = spec, ref, candidates
        self.visits: Counter[tuple] = Counter()

    def __call__(self, obs: np.ndarray, rng: np.random.Generator) -> Any:
        state_bins = self.spec.verification.state_bins
        assert state_bins is not None
        here = self.ref.get_state()
        best, best_count = None, None
        for _ in range(self.candidates):
            action = draw_action(self.spec, here, rng)
            self.ref.step(action)
            count = self.visits[state_bins(self.ref.get_state())]
            try:
                self.ref.set_state(here)
            except ValueError as e:
                raise UnrestorableState(str(e)) from e
            if best_count is None or count < best_count:
                best, best_count = action, count
        self.visits[state_bins(here)] += 1
        return best


def make_policy(kind: str, spec: EnvSpec, ref: Reference) -> Policy:
    if kind == "random":
        if spec.verification.legal_action is not None:
            return lambda obs, rng: draw_action(spec, ref.get_state(), rng)
        assert spec.verification.random_action is not None
        random_action = spec.verification.random_action
        return lambda obs, rng: random_action(rng)
    if kind == "scripted":
        scripted_action = spec.verification.scripted_action
        if scripted_action is not None:
            return lambda obs, rng: scripted_action(ref.get_state(), rng)
        assert spec.verification.scripted_policy is not None
        return spec.verification.scripted_policy
    if kind == "novelty":
        return NoveltyPolicy(spec, ref)
    raise ValueError(f"unknown policy {kind!r}; known: {', '.join(POLICIES)}")


def visit_states(ref: Reference, act: Policy, seed: int, max_steps: int,
                 rng: np.random.Generator) -> list[RefState]:
    """States the reference passes through in one episode under ``act`` (before each step).
    The episode ends before a state the novelty policy cannot branch from (the reference cannot
    take it back: :class:`UnrestorableState`); that state, which no injection reaches, is left
    out."""
    obs = ref.reset(seed)
    states = []
    for _ in range(max_steps):
        states.append(ref.get_state())
        try:
            action = act(obs, rng)
        except UnrestorableState:
            states.pop()
            break
        obs, _, terminated, truncated, _ = ref.step(action)
        if terminated or truncated:
            break
    return states
