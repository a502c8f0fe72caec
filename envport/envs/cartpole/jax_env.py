"""CartPole-v1 in JAX: a line-by-line translation of Gymnasium's ``CartPoleEnv`` + ``TimeLimit``."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from envport.core.api import Array, Environment, StepResult, pytree_dataclass, static_field
from envport.core.spaces import Box, Discrete


@pytree_dataclass
class CartPoleParams:
    gravity: float = static_field(9.8)
    masscart: float = static_field(1.0)
    masspole: float = static_field(0.1)
    length: float = static_field(0.5)  # half the pole's length, as in Gymnasium
    force_mag: float = static_field(10.0)
    tau: float = static_field(0.02)
    theta_threshold: float = static_field(12 * 2 * math.pi / 360)
    x_threshold: float = static_field(2.4)
    max_steps: int = static_field(500)


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
        self._params = CartPoleParams(**params)

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
