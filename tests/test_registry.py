import jax
import numpy as np
import pytest

import envport
from envport.core.registry import UnknownEnvironmentError
from envport.core.spaces import Box, Discrete, InvalidActionError


def test_list_has_the_builtin_environments():
    assert {"cartpole", "pong"} <= set(envport.list_envs())


def test_unknown_environment_names_the_known_ones():
    with pytest.raises(UnknownEnvironmentError) as info:
        envport.make("pongg")
    assert "pongg" in str(info.value)
    assert "cartpole" in str(info.value) and "pong" in str(info.value)


def test_make_overrides_default_params():
    env = envport.make("pong", frameskip=4)
    assert env.default_params().frameskip == 4
    assert envport.make("pong").default_params().frameskip == 1


def test_discrete_space_validates_at_the_boundary():
    space = Discrete(3)
    assert space.validate(np.array([0, 2], np.int64), (2,)).dtype == np.int32
    for bad, batch in ((np.array([3]), (1,)), (np.array([0.0]), (1,)), (np.array([0, 1]), (1,))):
        with pytest.raises(InvalidActionError):
            space.validate(bad, batch)


def test_box_space_never_clips():
    space = Box(-1.0, 1.0, (1,))
    with pytest.raises(InvalidActionError, match="never clips"):
        space.validate(np.array([1.5], np.float32))
    assert bool(space.contains(space.sample(jax.random.key(0))))
    assert not bool(space.contains(np.array([2.0], np.float32)))
