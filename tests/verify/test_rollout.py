"""L3 internals: copies replayed only to the lockstep horizon give the full replay's envelope."""

import numpy as np

from envport.core.registry import spec
from envport.verify import rollout
from envport.verify.policies import make_policy


def test_copies_cut_at_the_horizon_give_the_same_envelope():
    cartpole = spec("cartpole")
    ref = cartpole.make_reference()
    make_copy = cartpole.verification.make_perturbed_reference
    copies = [make_copy(copy=i) for i in range(rollout.PERTURBED_COPIES)]
    rng = np.random.default_rng(0)
    act = make_policy("scripted", cartpole, ref)
    cut_somewhere = False
    for seed in range(6):
        ep = rollout.reference_episode(ref, act, seed, "scripted", 500, rng)
        full = [rollout.replay(c, ep) for c in copies]
        short = rollout.replay_copies(copies, ep)
        b_full, h_full = rollout.envelope(cartpole, ep.steps, full)
        b_short, h_short = rollout.envelope(cartpole, ep.steps, short)
        assert h_short == h_full
        cut_somewhere |= any(len(s["reward"]) < len(ep) for s in short)
        for k, v in b_full.items():
            np.testing.assert_array_equal(b_short[k][: h_full + 1], v[: h_full + 1])
    assert cut_somewhere  # long balanced CartPole episodes leave lockstep


def test_step_error_uses_the_state_and_growth_reports_the_horizon():
    exp = {"state.x": np.array([[0.0], [1.0], [2.0]]), "obs": np.zeros((3, 1), np.float32),
           "reward": np.zeros(3, np.float32), "terminated": np.zeros(3, bool),
           "truncated": np.zeros(3, bool)}
    got = dict(exp, **{"state.x": np.array([[1e-5], [1.0 + 1e-4], [2.0 + 1e-2]]),
                       "obs": np.ones((3, 1), np.float32)})
    np.testing.assert_allclose(rollout.step_error(exp, got), [1e-5, 1e-4, 1e-2])
    assert rollout.Growth.first_at(rollout.step_error(exp, got), 1e-3) == 2


def test_normwise_tolerance_scales_with_the_largest_element_of_each_step():
    from envport.core.registry import Tolerance
    from envport.verify.compare import within

    tol = Tolerance(atol=1e-4, rtol=1e-4, normwise=True)
    big = np.array([20.0, 0.01])
    # 1e-3 on the small component: 10x its elementwise allowance, within 1e-4 + 1e-4 * 20.
    assert within(big, big + np.array([0.0, 1e-3]), tol)
    assert not within(big, big + np.array([0.0, 1e-3]), Tolerance(atol=1e-4, rtol=1e-4))
    assert not within(big, big + np.array([0.0, 3e-3]), tol)
    # Per step (rows): each step is scaled by its own largest element.
    steps = np.array([[20.0, 0.01], [0.5, 0.01]])
    got = steps + np.array([[0.0, 1e-3], [0.0, 1e-3]])
    np.testing.assert_array_equal(rollout.steps_within(steps, got, tol), [True, False])
