"""L2's shrinker: a trial state the reference refuses leaves that field unshrunk (no crash)."""

import numpy as np

from envport.core.registry import spec
from envport.verify.interaction import Case, shrink, translation


def test_a_state_the_reference_refuses_is_not_a_shrink_step():
    cartpole = spec("cartpole")
    ref = cartpole.make_reference()
    ref.reset(1)
    baseline = ref.get_state()
    ref.reset(2)
    ref.step(1)
    state = ref.get_state()
    refused = []

    class Refusing(type(ref)):
        # A reference with a consistency rule across fields, as a game's has (an action legal
        # only in some states): a state mixing baseline x with this case's theta is refused.
        def set_state(self, s):
            if (np.array_equal(s["x"], baseline["x"])
                    and not np.array_equal(s["theta"], baseline["theta"])):
                refused.append(True)
                raise ValueError("inconsistent state")
            super().set_state(s)

    refusing = Refusing()
    refusing.reset(0)
    case = Case(state, 1, "random")
    best = shrink(cartpole, translation(cartpole), cartpole.make_bridge(), refusing, case,
                  baseline)
    assert refused, "the refusing trial was never tried"
    assert np.array_equal(best.state["x"], state["x"])  # the refused field stays as it was
