"""A gymnax view of envport environments: ``env, params = envport.gymnax.make(name)``.

The view is a subclass of gymnax 1.0.1's own ``gymnax.environments.environment.Environment``, so
its ``reset`` and ``step`` *are* gymnax's (inherited, not re-implemented), and PureJaxRL-style
code and gymnax's wrappers (``LogWrapper``, ``FlattenObservationWrapper``,
``StickyActionWrapper``, ``LegacyStepAPIWrapper``, ``GymnaxToGymWrapper``,
``GymnaxToVectorGymWrapper``, ``GymnaxToDmEnvWrapper``) run on envport environments unchanged:

* ``env.reset(key, params) -> (obs, state)``;
* ``env.step(key, state, action, params) -> (obs, state, reward, terminated, truncated, info)``
  (gymnax 1.0's six values; ``gymnax.wrappers.LegacyStepAPIWrapper`` gives the older five,
  ``(obs, state, reward, done, info)`` with ``done = terminated | truncated``). As gymnax's
  ``Environment.step`` does, it splits ``key`` into a step key and a reset key, and when the
  episode ends returns the *reset's* observation and state; the observation the episode ended on
  is ``info["final_observation"]``. ``info`` also holds ``terminated``, ``truncated`` and
  ``discount`` (0 where the episode terminated, 1 otherwise, truncation included, as gymnax's
  CartPole reports it), besides the environment's own info;
* ``env.step_env`` / ``env.reset_env``: one step without the auto-reset, and the reset (gymnax's
  hooks); ``env.observation_space(params)``, ``env.action_space(params)`` (gymnax space
  objects, which its wrappers require: discrete actions are ``Discrete(n)`` int32 as gymnax's),
  ``env.num_actions``, ``env.default_params``, ``env.name``.

``params`` are the envport environment's own params: where they are pytree leaves (CartPole's
physical constants) ``jax.vmap`` over a batch of them runs in one compiled call, as with gymnax.

The state is a :class:`ViewState`: the envport state, gymnax's ``time`` (steps in this episode),
and the step's ``terminated`` / ``truncated`` flags, which gymnax's ``step`` reads back through
``is_truncated`` (the translation decides truncation inside its step).

The view steps exactly as ``AutoReset(envport.make(name))`` does given the key it resets from
(gymnax's ``split(key)[1]``; AutoReset's own schedule derives it otherwise). Pong resets itself
inside its step when a game ends (PufferLib's convention); gymnax's ``step`` then resets it
again from its reset key, as it does for every environment: the returned observation starts a
fresh game, and
``info["final_observation"]`` is the serve of the game Pong had started itself.

Needs gymnax (an optional extra: ``pip install --no-deps gymnax==1.0.1``, whose package imports
``seaborn`` at import time).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

try:
    from flax import struct
    from gymnax.environments import environment as gymnax_environment
    from gymnax.environments import spaces as gymnax_spaces
except ImportError as e:  # pragma: no cover - depends on the optional set-up
    raise ImportError(
        "envport.gymnax needs gymnax 1.0.1 and what it imports (flax, seaborn): "
        f"pip install --no-deps gymnax==1.0.1 && pip install seaborn ({e})") from e

import envport
from envport.core.api import Array, Environment
from envport.core.spaces import Box, Discrete, Space

__all__ = ["GymnaxEnvironment", "ViewState", "make", "to_gymnax_space", "view"]


@struct.dataclass
class ViewState(gymnax_environment.EnvState):
    """gymnax's ``EnvState`` (its ``time`` field) around an envport state."""

    env_state: Any
    terminated: Array
    truncated: Array


def to_gymnax_space(space: Space, declared: Any = None) -> gymnax_spaces.Space:
    """The gymnax space of an envport space; a Box takes the per-dimension bounds of
    ``declared`` (the Gymnasium space the reference declares) where its shape matches, and keeps
    the translation's dtype."""
    if isinstance(space, Discrete):
        return gymnax_spaces.Discrete(space.n, dtype=space.dtype)
    if isinstance(space, Box):
        low: Any = space.low
        high: Any = space.high
        if declared is not None and getattr(declared, "shape", None) == space.shape:
            low, high = np.asarray(declared.low), np.asarray(declared.high)
        return gymnax_spaces.Box(low, high, space.shape, space.dtype)
    raise TypeError(f"no gymnax equivalent for {type(space).__name__}")


class GymnaxEnvironment(gymnax_environment.Environment):
    """An envport environment as a gymnax ``Environment`` (see the module docstring)."""

    def __init__(self, env: Environment) -> None:
        super().__init__()
        self.env = env
        self._params = env.default_params()

    @property
    def default_params(self) -> Any:
        return self._params

    @property
    def name(self) -> str:
        return self.env.name

    def reset_env(self, key: Array, params: Any) -> tuple[Array, ViewState]:
        env_state, obs = self.env.reset(key, params)
        no = jnp.zeros((), jnp.bool_)
        return obs, ViewState(time=jnp.zeros((), jnp.int32), env_state=env_state,
                              terminated=no, truncated=no)

    def step_env(self, key: Array, state: ViewState, action: Any, params: Any
                 ) -> tuple[Array, ViewState, Array, Array, dict[str, Any]]:
        res = self.env.step(key, state.env_state, action, params)
        new = ViewState(time=state.time + 1, env_state=res.state,
                        terminated=jnp.asarray(res.terminated, jnp.bool_),
                        truncated=jnp.asarray(res.truncated, jnp.bool_))
        info = {**res.info, "discount": self.discount(new, params)}
        return res.obs, new, res.reward, new.terminated, info

    def is_terminated(self, state: ViewState, params: Any) -> Array:
        return state.terminated

    def is_truncated(self, state: ViewState, params: Any) -> Array:
        return state.truncated

    def observation_space(self, params: Any = None) -> gymnax_spaces.Space:
        from envport.gym import gymnasium_spaces

        params = self._params if params is None else params
        declared = gymnasium_spaces(self.env, params)[0]
        return to_gymnax_space(self.env.observation_space(params), declared)

    def action_space(self, params: Any = None) -> gymnax_spaces.Space:
        from envport.gym import gymnasium_spaces

        params = self._params if params is None else params
        declared = gymnasium_spaces(self.env, params)[1]
        return to_gymnax_space(self.env.action_space(params), declared)

    @property
    def num_actions(self) -> int:
        space = self.env.action_space(self._params)
        if isinstance(space, Discrete):
            return space.n
        return int(np.prod(space.shape))

    def __repr__(self) -> str:
        return f"envport.gymnax.GymnaxEnvironment({self.env!r})"


def view(env: Environment) -> GymnaxEnvironment:
    """The gymnax view of an envport environment already made."""
    return GymnaxEnvironment(env)


def make(name: str, **options: Any) -> tuple[GymnaxEnvironment, Any]:
    """``(env, params)`` as ``gymnax.make`` returns them, for ``envport.make(name, **options)``."""
    env = GymnaxEnvironment(envport.make(name, **options))
    return env, env.default_params
