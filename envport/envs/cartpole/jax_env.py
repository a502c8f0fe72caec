"""CartPole-v1 in JAX: a line-by-line translation of Gymnasium's ``CartPoleEnv`` + ``TimeLimit``."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from envport.core.api import Array, Environment, StepResult, pytree_dataclass
from envport.core.spaces import Box, Discrete


@pytree_dataclass
class CartPoleParams:
    """Gymnasium ``CartPoleEnv``'s constants, as pytree leaves (gymnax style): ``jax.vmap`` over
    a batch of params (e.g. 64 gravities) runs in one compiled call. Nothing here changes an
    array shape, so nothing is static; under ``jit`` a leaf passed as an argument is traced,
    while a params object closed over (the default) is folded in as constants, as before."""

    gravity: float = 9.8
    masscart: float = 1.0
    masspole: float = 0.1
    length: float = 0.5  # half the pole's length, as in Gymnasium
    force_mag: float = 10.0
    tau: float = 0.02
    theta_threshold: float = 12 * 2 * math.pi / 360
    x_threshold: float = 2.4
    max_steps: int = 500  # TimeLimit's max_episode_steps: only compared, so a leaf too


@pytree_dataclass
class CartPoleState:
    x: Array
    x_dot: Array
    theta: Array
    theta_dot: Array
    time: Array  # steps taken in this episode (Gymnasium's TimeLimit._elapsed_steps)


class CartPole(Environment[CartPoleState, CartPoleParams]):
    name = "cartpole"

    def __init__(self, dtype: jnp.dtype = jnp.float32, **params: float):
        self.dtype = dtype
        unknown = sorted(set(params) - {f.name for f in dataclasses.fields(CartPoleParams)})
        if unknown:
            raise ValueError(f"CartPole has no option(s) {unknown}; its params are "
                             f"{[f.name for f in dataclasses.fields(CartPoleParams)]}")
        self._params = CartPoleParams(**params)  # type: ignore[arg-type]  # checked above

    def default_params(self) -> CartPoleParams:
        return self._params

    def observation(self, state: CartPoleState) -> Array:
        return jnp.stack([state.x, state.x_dot, state.theta, state.theta_dot]).astype(jnp.float32)

    def reset(self, key: Array, params: CartPoleParams | None = None
              ) -> tuple[CartPoleState, Array]:
        x = jax.random.uniform(key, (4,), self.dtype, -0.05, 0.05)
        state = CartPoleState(x[0], x[1], x[2], x[3], jnp.zeros((), jnp.int32))
        return state, self.observation(state)

    def sample_draws(self, key: Array, state: CartPoleState, params: CartPoleParams | None = None):
        return ()  # a CartPole step is deterministic

    def transition(self, state: CartPoleState, action: Array, draws: tuple = (),
                   params: CartPoleParams | None = None) -> StepResult:
        p = self._params if params is None else params
        total_mass = p.masspole + p.masscart
        polemass_length = p.masspole * p.length
        force = jnp.where(action == 1, p.force_mag, -p.force_mag).astype(self.dtype)
        costheta, sintheta = jnp.cos(state.theta), jnp.sin(state.theta)
        temp = (force + polemass_length * jnp.square(state.theta_dot) * sintheta) / total_mass
        thetaacc = (p.gravity * sintheta - costheta * temp) / (
            p.length * (4.0 / 3.0 - p.masspole * jnp.square(costheta) / total_mass)
        )
        xacc = temp - polemass_length * thetaacc * costheta / total_mass
        new = CartPoleState(
            x=state.x + p.tau * state.x_dot,
            x_dot=state.x_dot + p.tau * xacc,
            theta=state.theta + p.tau * state.theta_dot,
            theta_dot=state.theta_dot + p.tau * thetaacc,
            time=state.time + 1,
        )
        terminated = (
            (new.x < -p.x_threshold) | (new.x > p.x_threshold)
            | (new.theta < -p.theta_threshold) | (new.theta > p.theta_threshold)
        )
        # Gymnasium keeps paying 1.0 on the terminating step; stepping past it is undefined.
        reward = jnp.ones((), jnp.float32)
        truncated = new.time >= p.max_steps  # TimeLimit: independent of terminated
        return StepResult(new, self.observation(new), reward, terminated, truncated, {})

    def observation_space(self, params: CartPoleParams | None = None) -> Box:
        return Box(-math.inf, math.inf, (4,), jnp.dtype(jnp.float32))

    def action_space(self, params: CartPoleParams | None = None) -> Discrete:
        return Discrete(2)

    def gymnasium_spaces(self, params: CartPoleParams | None = None) -> tuple[Any, Any]:
        """The spaces Gymnasium's ``CartPoleEnv`` declares (``envport.gym`` uses them): float32
        observations bounded at twice the termination thresholds on x and theta, infinite on the
        velocities; ``Discrete(2)`` with Gymnasium's int64."""
        import gymnasium

        p = self._params if params is None else params
        high = np.array([p.x_threshold * 2, np.inf, p.theta_threshold * 2, np.inf], np.float32)
        return (gymnasium.spaces.Box(-high, high, dtype=np.float32),
                gymnasium.spaces.Discrete(2))
