"""The full equivalence runs of the foundation issue (`envport verify ENV` with its defaults).

Marked slow: excluded from the default suite, run with `python -m pytest -m slow`.
"""

import pytest

from envport.verify import verify


@pytest.mark.slow
@pytest.mark.parametrize("env", ["cartpole", "pong"])
def test_full_equivalence(env):
    report = verify(env, episodes=100, states=1000, examples=25)
    assert report.passed, report.to_prompt()
    assert report.layers["rollout"].counts["episodes"] == 100
