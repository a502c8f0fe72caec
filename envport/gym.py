"""Gymnasium vector-API adapter: ``make_vec(name, num_envs)`` for code written against Gymnasium.

The batch is stepped by one jitted, vmapped step and follows Gymnasium 1.x's vector conventions
exactly as its own ``SyncVectorEnv`` reports them (checked against it in the tests):

* **Autoreset modes** (``autoreset_mode=``, as ``gymnasium.make_vec`` takes it in
  ``vector_kwargs``; ``env.metadata["autoreset_mode"]`` says which):

  - ``NEXT_STEP`` (the default, Gymnasium's; needed by its ``NormalizeObservation``): the step
    that ends an episode returns the observation it ended on; the *next* ``step`` call resets
    that environment instead, ignoring its action, and returns the first observation of the new
    episode with reward 0, ``terminated = truncated = False`` and the reset's info.
  - ``SAME_STEP``: the step that ends an episode resets it too, returning the new episode's first
    observation; the observation it ended on is in ``infos["final_obs"]`` (an object array,
    ``None`` where no episode ended), the step's info in ``infos["final_info"]``, each with its
    ``_final_obs`` / ``_final_info`` mask. Every other top-level key is the reset's info for the
    environments that reset, and the step's info for the others (masks ``_key``).
  - ``DISABLED``: nothing resets by itself; ``reset(options={"reset_mask": mask})`` resets the
    environments ``mask`` selects, and stepping an environment whose episode ended without
    resetting it raises ``RuntimeError``.

  ``reset(options={"reset_mask": mask})`` works in every mode, as in ``SyncVectorEnv``.
* **Infos**: each key ``k`` of a step's (or reset's) info comes with a boolean mask ``_k`` of the
  environments that reported it; values where the mask is False are zero; a key no environment
  reported is absent. Values keep the translation's dtype (float32 where Gymnasium's Python
  floats make float64 arrays).
* **Spaces** are the ones the reference declares: CartPole's observation Box is bounded at twice
  the termination thresholds on x and theta (``CartPoleEnv``'s own bounds), HalfCheetah-v5's
  observation is float64 (the float32 translation's values, cast), discrete actions are
  ``Discrete(n)`` with Gymnasium's int64. Rewards are float64 arrays, as ``SyncVectorEnv``
  returns them.

What each environment puts in ``final_obs`` / ``final_info`` (SAME_STEP) and returns at the step
that ends an episode (NEXT_STEP):

* ``cartpole``: the state the pole fell or the cart left in (or the 500th step's, truncated);
  ``final_info`` is ``{}``, as Gymnasium's CartPole returns no info. Reset info is ``{}``.
* ``halfcheetah``: the 1000th step's observation (HalfCheetah only truncates); ``final_info`` has
  Gymnasium's ``x_position``, ``x_velocity``, ``reward_forward``, ``reward_ctrl`` (and
  ``bad_state`` with ``checked=True``). Reset info is ``{"x_position": qpos[0]}``, as
  HalfCheetah-v5's ``reset`` returns it.
* ``pong``: Pong resets itself inside its step when a score reaches 21, as PufferLib's Pong does,
  so the observation the game-ending step returns is already the next game's first serve (scores
  back to 0): in SAME_STEP ``final_obs`` holds that serve observation (equal to the returned
  one: the finished game's last frame is never observed), ``final_info`` is ``{}``. In NEXT_STEP
  that step returns the serve observation with ``terminated=True``, and the following reset step
  keeps the game Pong already started (no new seed: PufferLib's stream of games is unchanged)
  and returns the same observation with reward 0. ``DISABLED`` cannot be honoured for Pong (it
  resets itself), so it is refused.

Key schedule (documented because tests and users may reproduce it): ``reset(seed)`` sets
``key = jax.random.key(seed)`` (one int seeds the batch; Gymnasium's per-environment seed lists
are refused); every ``reset`` and ``step`` then does ``key, sub = jax.random.split(key)`` and
gives environment ``i`` the key ``k = jax.random.split(sub, num_envs)[i]``. A step derives its
step and reset keys from ``k`` as :class:`~envport.core.wrappers.AutoReset` does
(``fold_in(k, 0)`` and ``fold_in(k, 1)``, or ``k`` itself for the reset of an environment whose
step draws nothing, such as CartPole; Pong's step uses ``k``); a reset uses ``k`` itself.

An environment declares its Gymnasium spaces with a method ``gymnasium_spaces(params) ->
(observation_space, action_space)`` and its reset info with ``reset_info(state, params) -> dict``
(jittable; default none); :data:`REFERENCE_CONVENTIONS` holds them for environments whose folder
does not (yet). Without either, the spaces are converted from the translation's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

import envport
from envport.core.api import Array, Environment
from envport.core.spaces import Box, Discrete, Space
from envport.core.wrappers import AutoReset

__all__ = ["REFERENCE_CONVENTIONS", "EnvportVectorEnv", "gymnasium_spaces", "make_vec",
           "to_gymnasium_space"]


def to_gymnasium_space(space: Space) -> gymnasium.Space:
    """The Gymnasium equivalent of an envport space (same shape and dtype)."""
    if isinstance(space, Discrete):
        return gymnasium.spaces.Discrete(space.n, dtype=space.dtype)
    if isinstance(space, Box):
        dtype = np.dtype(space.dtype)
        low, high = float(space.low), float(space.high)
        if np.issubdtype(dtype, np.integer):
            # Gymnasium rejects infinite bounds on integer boxes: use the dtype's own range.
            info = np.iinfo(dtype)
            low, high = max(low, info.min), min(high, info.max)
            return gymnasium.spaces.Box(int(low), int(high), space.shape, dtype)
        return gymnasium.spaces.Box(low, high, space.shape, dtype)
    raise TypeError(f"no Gymnasium equivalent for {type(space).__name__}")


def _pong_spaces(env: Environment, params: Any) -> tuple[gymnasium.Space, gymnasium.Space]:
    # PufferLib's Pong: Box(0, 1, (8,), float32) observations; Discrete(3) (Gymnasium's int64)
    # or, continuous, Box(-1, 1, (1,), float32) actions.
    action = (gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32) if params.continuous
              else gymnasium.spaces.Discrete(3))
    return gymnasium.spaces.Box(0.0, 1.0, (8,), np.float32), action


def _halfcheetah_spaces(env: Environment, params: Any
                        ) -> tuple[gymnasium.Space, gymnasium.Space]:
    # HalfCheetah-v5: Box(-inf, inf, (17,) or (18,), float64); actions the ctrlrange, float32.
    shape = env.observation_space(params).shape
    action = env.action_space(params)
    assert isinstance(action, Box)
    return (gymnasium.spaces.Box(-np.inf, np.inf, shape, np.float64),
            gymnasium.spaces.Box(action.low, action.high, action.shape, np.float32))


def _halfcheetah_reset_info(state: Any, params: Any) -> dict[str, Array]:
    return {"x_position": state.qpos[0]}  # HalfCheetahEnv._get_reset_info


# Gymnasium conventions of environments whose folder does not declare them itself (by name):
# "spaces": (env, params) -> (observation_space, action_space); "reset_info": (state, params).
REFERENCE_CONVENTIONS: dict[str, dict[str, Callable[..., Any]]] = {
    "pong": {"spaces": _pong_spaces},
    "halfcheetah": {"spaces": _halfcheetah_spaces, "reset_info": _halfcheetah_reset_info},
}


def gymnasium_spaces(env: Environment, params: Any = None
                     ) -> tuple[gymnasium.Space, gymnasium.Space]:
    """(observation space, action space) as ``env``'s reference declares them."""
    params = env.default_params() if params is None else params
    if hasattr(env, "gymnasium_spaces"):
        return env.gymnasium_spaces(params)
    known = REFERENCE_CONVENTIONS.get(env.name, {})
    if "spaces" in known:
        return known["spaces"](env, params)
    return (to_gymnasium_space(env.observation_space(params)),
            to_gymnasium_space(env.action_space(params)))


def _reset_info_fn(env: Environment) -> Callable[[Any, Any], dict[str, Array]]:
    if hasattr(env, "reset_info"):
        return env.reset_info
    return REFERENCE_CONVENTIONS.get(env.name, {}).get("reset_info", lambda state, params: {})


def _autoreset_mode(mode: str | AutoresetMode) -> AutoresetMode:
    if isinstance(mode, AutoresetMode):
        return mode
    try:
        return AutoresetMode(mode)
    except ValueError:
        names = [m.value for m in AutoresetMode] + [m.name for m in AutoresetMode]
        raise ValueError(f"autoreset_mode must be one of {names}, got {mode!r}") from None


def _masked(values: dict[str, np.ndarray], mask: np.ndarray, out: dict[str, Any]) -> None:
    """Add ``values`` (one row per environment) where ``mask`` holds, in Gymnasium's layout:
    the value array (zero elsewhere) and its ``_key`` mask, merged with what ``out`` has."""
    if not mask.any():
        return
    for k, v in values.items():
        rows = mask.reshape(mask.shape + (1,) * (v.ndim - 1))
        if k in out:
            had = out[f"_{k}"]
            out[k] = np.where(rows, v, out[k])
            out[f"_{k}"] = had | mask
        else:
            out[k] = np.where(rows, v, np.zeros_like(v))
            out[f"_{k}"] = mask.copy()


class EnvportVectorEnv(VectorEnv):
    """A batch of ``num_envs`` copies of an envport environment behind Gymnasium's vector API."""

    def __init__(self, env: Environment, num_envs: int, seed: int = 0,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP):
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        mode = _autoreset_mode(autoreset_mode)
        if mode == AutoresetMode.DISABLED and env.autoresets:
            raise ValueError(
                f"{env.name} resets itself inside its step, so autoreset_mode DISABLED cannot be "
                "honoured: use NEXT_STEP or SAME_STEP")
        self.env = env
        self.num_envs = num_envs
        self.autoreset_mode = mode
        self.metadata = {"autoreset_mode": mode, "render_modes": []}
        self.render_mode = None
        params = env.default_params()
        self._envport_action_space = env.action_space(params)
        self.single_observation_space, self.single_action_space = gymnasium_spaces(env, params)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._obs_dtype = self.single_observation_space.dtype

        wrapped = AutoReset(env)
        reset_info = _reset_info_fn(env)

        def reset_one(k: Array) -> tuple[Any, Array, dict[str, Array]]:
            state, obs = env.reset(k, params)
            return state, obs, reset_info(state, params)

        def same_step_one(k: Array, s: Any, a: Array) -> tuple[Any, ...]:
            res = wrapped.step(k, s, a, params)
            info = dict(res.info)
            final_obs = info.pop("final_observation")
            return res, info, final_obs, reset_info(res.state, params)

        def next_step_one(k: Array, s: Any, last_obs: Array, resetting: Array,
                          a: Array) -> tuple[Any, ...]:
            step_draws, reset_key = wrapped.sample_draws(k, s, params)
            res = env.transition(s, a, step_draws, params)
            if env.autoresets:  # it already started its next episode: keep it, as it stands
                r_state, r_obs = s, last_obs
            else:
                r_state, r_obs = env.reset(reset_key, params)
            state = jax.tree_util.tree_map(lambda r, t: jnp.where(resetting, r, t),
                                           r_state, res.state)
            obs = jnp.where(resetting, r_obs, res.obs)
            reward = jnp.where(resetting, jnp.zeros_like(res.reward), res.reward)
            res = res._replace(state=state, obs=obs, reward=reward,
                               terminated=res.terminated & ~resetting,
                               truncated=res.truncated & ~resetting)
            return res, res.info, reset_info(r_state, params)

        def disabled_one(k: Array, s: Any, a: Array) -> tuple[Any, ...]:
            res = env.transition(s, a, wrapped.sample_draws(k, s, params)[0], params)
            return res, res.info

        def keyed(fn: Callable[..., Any]) -> Callable[..., Any]:
            batched = jax.vmap(fn)
            # The key splits run inside the compiled call: split eagerly, they cost more than
            # the step itself on a small batch (two dispatches per step).
            return jax.jit(lambda key, *args: (lambda k: (k[0], batched(k[1], *args)))(
                self._env_keys(key)))

        self._reset_fn = keyed(reset_one)
        steps: dict[AutoresetMode, Callable[..., Any]] = {
            AutoresetMode.SAME_STEP: same_step_one, AutoresetMode.NEXT_STEP: next_step_one,
            AutoresetMode.DISABLED: disabled_one}
        self._step_fn = keyed(steps[mode])
        self._select = jax.jit(lambda mask, new, old: jax.tree_util.tree_map(
            lambda n, o: jnp.where(mask.reshape(mask.shape + (1,) * (n.ndim - 1)), n, o),
            new, old))
        self._key = jax.random.key(seed)
        self._state: Any = None
        self._obs: Any = None  # the last observation returned, per environment (device)
        # Environments whose last step ended their episode (NEXT_STEP: reset by the next step).
        self._ended = np.zeros(num_envs, np.bool_)

    def _env_keys(self, key: Array) -> tuple[Array, Array]:
        """The schedule in the module docstring: (next key, one key per environment)."""
        key, sub = jax.random.split(key)
        return key, jax.random.split(sub, self.num_envs)

    def _host_obs(self, obs: Any) -> np.ndarray:
        return np.array(obs, dtype=self._obs_dtype)  # a writable copy: callers may keep it

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError(f"envport seeds the whole batch with one int (the key schedule in "
                             f"envport.gym's docstring), got seed={seed!r}")
        super().reset(seed=seed)  # seeds Gymnasium's np_random, as other vector envs do
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"envport environments take no reset options but reset_mask, "
                             f"got {sorted(options)}")
        if seed is not None:
            self._key = jax.random.key(int(seed))
        if mask is not None:
            mask = self._check_reset_mask(mask)
        if mask is None or self._state is None:
            mask = np.ones(self.num_envs, np.bool_)
        self._key, (state, obs, rinfo) = self._reset_fn(self._key)
        if self._state is None or mask.all():
            self._state, self._obs = state, obs
        else:
            self._state, self._obs = self._select(mask, (state, obs), (self._state, self._obs))
        self._ended[mask] = False
        infos: dict[str, Any] = {}
        _masked({k: np.asarray(v) for k, v in rinfo.items()}, mask, infos)
        return self._host_obs(self._obs), infos

    def _check_reset_mask(self, mask: Any) -> np.ndarray:
        # SyncVectorEnv's checks and messages.
        if not isinstance(mask, np.ndarray):
            raise TypeError(f"`options['reset_mask']` must be a numpy array, got {type(mask)}")
        if mask.shape != (self.num_envs,):
            raise ValueError(f"`options['reset_mask']` must have shape `({self.num_envs},)`, "
                             f"got {mask.shape}")
        if mask.dtype != np.bool_:
            raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, "
                            f"got {mask.dtype}")
        if not mask.any():
            raise ValueError("`options['reset_mask']` must contain a boolean array with at least "
                             f"one True value, got reset_mask={mask}")
        return mask

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        # Reject rather than clip or cast: a wrong action is a bug in the caller.
        actions = self._envport_action_space.validate(actions, batch_shape=(self.num_envs,))
        mode = self.autoreset_mode
        infos: dict[str, Any] = {}
        if mode == AutoresetMode.DISABLED:
            if self._ended.any():
                raise RuntimeError(
                    f"autoreset_mode DISABLED: environments {np.flatnonzero(self._ended).tolist()}"
                    " ended their episode; reset them first with "
                    "reset(options={'reset_mask': mask})")
            self._key, (res, info) = self._step_fn(self._key, self._state, actions)
        elif mode == AutoresetMode.NEXT_STEP:
            resetting = self._ended.copy()
            self._key, (res, info, rinfo) = self._step_fn(
                self._key, self._state, self._obs, resetting, actions)
        else:
            self._key, (res, info, final_obs, rinfo) = self._step_fn(
                self._key, self._state, actions)
        self._state, self._obs = res.state, res.obs
        obs = self._host_obs(res.obs)
        rewards = np.asarray(res.reward, np.float64)
        terminations = np.asarray(res.terminated, dtype=np.bool_)
        truncations = np.asarray(res.truncated, dtype=np.bool_)
        done = terminations | truncations
        info = {k: np.asarray(v) for k, v in info.items()}

        if mode == AutoresetMode.NEXT_STEP:
            _masked(info, ~resetting, infos)
            _masked({k: np.asarray(v) for k, v in rinfo.items()}, resetting, infos)
        elif mode == AutoresetMode.SAME_STEP:
            _masked(info, ~done, infos)
            if done.any():
                final = self._host_obs(final_obs)
                infos["final_obs"] = np.full(self.num_envs, None, dtype=object)
                for i in np.flatnonzero(done):
                    infos["final_obs"][i] = final[i]
                infos["_final_obs"] = done.copy()
                infos["final_info"] = {}
                _masked(info, done, infos["final_info"])
                infos["_final_info"] = done.copy()
            _masked({k: np.asarray(v) for k, v in rinfo.items()}, done, infos)
        else:
            _masked(info, np.ones(self.num_envs, np.bool_), infos)
        self._ended = done
        return obs, rewards, terminations, truncations, infos


def make_vec(name: str, num_envs: int, seed: int = 0,
             autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
             **env_kwargs: Any) -> EnvportVectorEnv:
    """Gymnasium ``VectorEnv`` over ``num_envs`` copies of ``envport.make(name, **env_kwargs)``.

    ``autoreset_mode``: ``AutoresetMode.NEXT_STEP`` (default, as ``gymnasium.make_vec``),
    ``SAME_STEP`` or ``DISABLED``, or their values (``"NextStep"``...); see the module docstring.
    """
    return EnvportVectorEnv(envport.make(name, **env_kwargs), num_envs, seed, autoreset_mode)
