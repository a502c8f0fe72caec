"""Both players pick legal actions of the reference's mask, the heuristic the reference's
kind of action."""

import jax
import numpy as np
from translation import agents
from translation import state as S
from translation.tests.refgames import main_states, reference


def test_players_choose_legal_actions():
    ref = reference()
    rnd, heur = jax.jit(agents.random_action), jax.jit(agents.heuristic_action)
    for i, st in enumerate(main_states(2, seed=21, every=5)):
        ref.set_state(st)
        mask = ref.action_mask()
        s = S.from_arrays(st)
        assert mask[int(rnd(jax.random.key(i), s))]
        a = int(heur(jax.random.key(i), s))
        assert mask[a]
        plays = np.flatnonzero(mask[14:94])
        if len(plays):  # the reference's heuristic plays a card whenever it can
            assert 14 <= a < 94
