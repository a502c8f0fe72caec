"""Reference games of the ``full`` pool for the tests: states to start from (the reference
only; nothing of the translation)."""

from __future__ import annotations

import numpy as np

from envport.envs.tcg_pocket.deck import full_trainers
from envport.envs.tcg_pocket.encode import CARD_ID
from envport.envs.tcg_pocket.reference import TcgPocketReference

POOL = "full"
TRAINERS = full_trainers()
S_MAIN = 1


def reference() -> TcgPocketReference:
    return TcgPocketReference(pool=POOL)


def main_states(n_games: int, seed: int, every: int = 3) -> list[dict[str, np.ndarray]]:
    """States of the main stage with no decision pending, every ``every``-th action of random
    games (random legal actions)."""
    ref = reference()
    rng = np.random.default_rng(seed)
    out = []
    for g in range(n_games):
        ref.reset(seed * 1000 + g)
        for t in range(1000):
            s = ref.get_state()
            if t % every == 0 and int(s["stage"]) == S_MAIN and (s["pending_kind"] < 0).all():
                out.append(s)
            _, _, done, _, _ = ref.step(int(rng.choice(np.flatnonzero(ref.action_mask()))))
            if done:
                break
    return out


def with_card(state: dict[str, np.ndarray], name: str) -> dict[str, np.ndarray]:
    """``state`` with the player to move's first hand card replaced by ``name`` (a card added
    if the hand is empty)."""
    s = {k: np.array(v, copy=True) for k, v in state.items()}
    s["hand"][int(s["current"]), 0] = CARD_ID[name]
    return s


# The Pokémon a Trainer's check asks for (its target, or Lt. Surge's Active), bottom first
NEEDS = {"Erika": ["Bulbasaur"], "Misty": ["Squirtle"], "Brock": ["Onix"],
         "Lt. Surge": ["Pikachu", "Raichu"], "Potion": None, "Koga": ["Grimer", "Muk"]}


def ready_for(state: dict[str, np.ndarray], name: str, k: int) -> dict[str, np.ndarray]:
    """``state`` with ``name`` in hand (index 0) and a board its check accepts: a damaged
    target of the named kind on the Active and Bench slot 1, Lightning Energy on the Bench
    (Lt. Surge), one or two opposing Benched Pokémon (Sabrina); ``k`` varies the numbers."""
    s = with_card(state, name)
    p, o = int(s["current"]), 1 - int(s["current"])
    s["played_supporter"][p] = False
    if name in NEEDS:
        chain = NEEDS[name]
        if chain:
            ids = [CARD_ID[n] for n in chain] + [0] * (3 - len(chain))
            s["stack"][p, 0] = s["stack"][p, 1] = ids
            s["entered_turn"][p, 1] = 0
        s["damage"][p, :2] = [10 + 10 * (k % 3), 20]
    if name == "Lt. Surge":
        s["energy"][p, 1, 3] = 1 + k % 2  # Lightning
    if name == "Sabrina":
        s["stack"][o, 1] = s["stack"][o, 0]
        s["stack"][o, 2] = s["stack"][o, 0] if k % 2 else 0
        s["damage"][o, 1:3] = 0
    return s
