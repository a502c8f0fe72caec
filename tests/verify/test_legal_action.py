"""The verifier's random actions come from ``legal_action`` when an environment declares it."""

from dataclasses import replace

import numpy as np

from envport.core.registry import spec
from envport.verify.interaction import sample_cases
from envport.verify.policies import draw_action, make_policy, visit_states


def _only_left_when_moving_right(state, rng):
    # A "mask" that depends on the state: push left (0) whenever the cart moves right.
    return 0 if float(np.asarray(state["x_dot"])) > 0 else int(rng.integers(2))


def _masked_cartpole():
    base = spec("cartpole")
    return replace(base, verification=replace(base.verification,
                                              legal_action=_only_left_when_moving_right))


def test_random_policy_and_l2_cases_draw_legal_actions_from_the_state():
    masked = _masked_cartpole()
    ref = masked.make_reference()
    act = make_policy("random", masked, ref)
    rng = np.random.default_rng(0)
    states = visit_states(ref, act, seed=3, max_steps=60, rng=rng)
    ref.reset(3)
    for _ in states:
        action = act(None, rng)
        if float(np.asarray(ref.get_state()["x_dot"])) > 0:
            assert action == 0
        ref.step(action)
    cases = sample_cases(masked, masked.make_reference(), n=40, seed=1,
                         policies=("random",), perturb_fraction=0.5)
    moving_right = [c for c in cases if float(np.asarray(c.state["x_dot"])) > 0]
    assert moving_right, "no case where the mask forbids an action"
    assert all(c.action == 0 for c in moving_right)


def test_without_legal_action_the_unmasked_sampler_is_used():
    plain = spec("cartpole")
    ref = plain.make_reference()
    ref.reset(0)
    state = ref.get_state()
    drawn = {int(draw_action(plain, state, np.random.default_rng(i))) for i in range(40)}
    assert drawn == {0, 1}


def test_a_state_perturb_cannot_move_is_kept_as_visited():
    """A ``perturb`` that finds no nearby state the reference takes back (ValueError) leaves
    the visited state as the case, instead of ending the sampling."""
    base = spec("cartpole")
    tried = []

    def refuses(state, rng):
        tried.append(state)
        raise ValueError("perturb: no perturbation the reference accepts")

    refusing = replace(base, verification=replace(base.verification, perturb=refuses))
    cases = sample_cases(refusing, refusing.make_reference(), n=30, seed=2,
                         policies=("random",), perturb_fraction=0.5)
    assert len(cases) == 30 and tried
    assert all(c.origin == "random" for c in cases)
