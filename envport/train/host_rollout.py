"""The reference backend's rollout: the real reference stepped on the host (and a host
translation's batch, stepped the same way).

Everything but the environment is shared with the JAX backend (``ppo.py``, ``program.py``): the
same network and initial parameters (same seed, same key schedule), the same compiled PPO update
executable (:meth:`envport.train.program.Program.learn`), the same hyperparameters.
Per rollout step: the policy runs jitted on the batch of observations (split over the devices
like the JAX rollout), its actions go to NumPy, and the reference's batch
(:func:`envport.train.backends.vector_reference`) steps them with same-step autoreset. A batch
that ``takes_keys`` is also handed the keys the JAX rollout would step (and first reset) its
environments with, so it can draw what the JAX backend draws (``backends.HostVectorEnv``).

Masked PPO (a translation with an ``action_mask`` hook, ``Program.masked``: a two-player game
against a fixed opponent) needs the host batch's legal actions at each observation:
``vec.action_masks() -> bool[num_envs, A]`` (see ``backends.HostVectorEnv``). The policy then
samples among them as the JAX rollout does (``Program.host_act`` with a mask, the same key
splits), and the masks ride in the trajectory (``Transition.mask``) for the same update.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from envport.train.backends import HostVectorEnv, make_backend
from envport.train.ppo import AXIS, Array, Params, TrainState, Transition
from envport.train.program import (
    NO_CLOCK,
    PhaseClock,
    Program,
    host_tree,
    restore_tree,
)


class HostState(NamedTuple):
    """Everything a reference-backend run carries between updates, except the reference batch
    itself (saved through its ``get_state``)."""

    train: TrainState  # device, replicated (first field, as in the JAX Runner)
    carry: Array  # device, split over the batch
    key: Array  # device, replicated
    obs: np.ndarray
    first: np.ndarray
    ep_return: np.ndarray
    ep_length: np.ndarray


class HostTrainer:
    """A host-stepped backend behind the same interface as ``program.JaxTrainer``: the
    reference (``kind="reference"``), or a host translation's batch (``kind="jax"``, for an
    ``EnvSpec.backend == "host"`` environment, see ``backends.make_backend``)."""

    def __init__(self, prog: Program, kind: str = "reference", pass_keys: bool = True) -> None:
        self.prog = prog
        self.kind = kind
        self.pass_keys = pass_keys  # False: a batch that takes_keys draws its own anyway
        self.cfg = prog.cfg
        self.vec: HostVectorEnv | None = None
        self.last_traj: Transition | None = None
        mesh = prog.mesh
        self._rep = NamedSharding(mesh, PartitionSpec())
        self._bat = NamedSharding(mesh, PartitionSpec(AXIS))
        self._time_bat = NamedSharding(mesh, PartitionSpec(None, AXIS))

    def init(self, seed: int) -> HostState:
        prog, cfg = self.prog, self.cfg
        self.vec = make_backend(prog.name, self.kind, cfg.num_envs, seed,
                                **prog.env_kwargs).vec
        if prog.masked and not callable(getattr(self.vec, "action_masks", None)):
            raise ValueError(f"{prog.name}: masked PPO on the {self.kind!r} backend needs the "
                             "host batch's legal actions, and this batch has no "
                             "action_masks() -> bool[num_envs, A]")
        train, key = prog.init_train(seed)
        key, k_env = jax.random.split(key)  # the JAX backend's env-reset split
        assert self.vec is not None
        # A batch that takes_keys: the keys the JAX backend resets its environments with.
        drawn = ({"keys": np.asarray(jax.random.key_data(jax.random.split(k_env, cfg.num_envs)))}
                 if self._takes_keys() else {})
        obs = self.vec.reset(**drawn)
        n = cfg.num_envs
        return HostState(
            train, jax.device_put(np.zeros((n, prog.policy.carry_size), np.float32), self._bat),
            jax.device_put(key, self._rep),
            obs, np.ones(n, np.bool_), np.zeros(n, np.float32), np.zeros(n, np.int32))

    def _takes_keys(self) -> bool:
        return self.pass_keys and bool(getattr(self.vec, "takes_keys", False))

    def _put(self, obs: np.ndarray, first: np.ndarray) -> tuple[Array, Array]:
        return jax.device_put((obs, first), self._bat)

    def _masks(self) -> np.ndarray | None:
        if not self.prog.masked:
            return None
        assert self.vec is not None
        return np.asarray(self.vec.action_masks(), np.bool_)  # type: ignore[attr-defined]

    def _act(self, state: HostState, carry: Array, obs: np.ndarray, first: np.ndarray,
             mask: np.ndarray | None, k_roll: Array) -> Any:
        """The compiled policy step of this run (a lookup after the first call)."""
        return self.prog.host_act(state.train, carry, *self._put(obs, first), k_roll,
                                  None if mask is None else jax.device_put(mask, self._bat),
                                  env_keys=self._takes_keys())

    def compile(self, state: HostState) -> None:
        _, k_roll, _ = self.prog.host_keys(state.key)
        self._act(state, state.carry, state.obs, state.first, self._masks(), k_roll)
        self.prog.learn(state.train)

    def _update(self, state: HostState, clock: PhaseClock) -> tuple[HostState, dict[str, float]]:
        cfg, vec = self.cfg, self.vec
        assert vec is not None
        t_max, n = cfg.num_steps, cfg.num_envs
        obs_buf = np.empty((t_max, *state.obs.shape), np.float32)
        first_buf = np.empty((t_max, n), np.bool_)
        reward_buf = np.empty((t_max, n), np.float32)
        done_buf = np.empty((t_max, n), np.bool_)
        logp_buf = np.empty((t_max, n), np.float32)
        value_buf = np.empty((t_max, n), np.float32)
        actions: list[np.ndarray] = []
        masks: list[np.ndarray] = []
        obs, first, carry = state.obs, state.first, state.carry
        key, k_roll, k_learn = self.prog.host_keys(state.key)  # as the JAX rollout splits
        ep_return, ep_length = state.ep_return.copy(), state.ep_length.copy()
        episodes, return_sum, length_sum = 0, 0.0, 0
        act = None
        clock.start()
        for t in range(t_max):
            mask = self._masks()  # the legal actions at obs (None: an unmasked run)
            if act is None:  # compiled once per Program (cached): this is a lookup
                act = self._act(state, carry, obs, first, mask, k_roll)
            # NumPy in: the compiled call transfers it with the sharding it was compiled for,
            # faster than a device_put per array per step.
            extra = () if mask is None else (mask,)
            # env_keys: the JAX rollout's keys of this step, for a batch that takes_keys
            carry, raw, env_action, logp, value, k_roll, *env_keys = clock.lap("forward", act(
                state.train.params, carry, obs, first, *extra, k_roll))
            if mask is not None:
                masks.append(mask)
            env_action, raw = np.asarray(env_action), np.asarray(raw)
            logp_buf[t], value_buf[t] = np.asarray(logp), np.asarray(value)
            clock.lap("transfer")
            drawn = {"keys": np.asarray(env_keys[0])} if env_keys else {}
            next_obs, reward, terminated, truncated = vec.step(env_action, **drawn)
            clock.lap("env")
            done = terminated | truncated
            obs_buf[t], first_buf[t], reward_buf[t], done_buf[t] = obs, first, reward, done
            actions.append(raw)
            # Episode bookkeeping in float32/int32, as the JAX rollout does it.
            ep_return += reward.astype(np.float32)
            ep_length += 1
            episodes += int(done.sum())
            return_sum += float(ep_return[done].sum(dtype=np.float32))
            length_sum += int(ep_length[done].sum())
            ep_return[done], ep_length[done] = 0.0, 0
            obs, first = next_obs, done
            clock.lap("other")
        fields = [obs_buf, first_buf, np.stack(actions), logp_buf, value_buf, reward_buf,
                  done_buf] + ([np.stack(masks)] if masks else [])
        traj = Transition(*(jax.device_put(x, self._time_bat) for x in fields))
        self.last_traj = traj  # for inspection (tests): the trajectory of the last update
        obs_d, first_d = clock.lap("transfer", self._put(obs, first))
        clock.lap("transfer", traj)
        train, stats = clock.lap("update", self.prog.learn(state.train)(
            state.train, traj, obs_d, first_d, carry, state.carry, k_learn))
        row = {k: float(v) for k, v in jax.device_get(stats).items()}
        clock.lap("transfer")
        row.update(episodes=float(episodes), return_sum=return_sum, length_sum=float(length_sum))
        return HostState(train, carry, key, obs, first, ep_return, ep_length), row

    def run(self, state: HostState, n_updates: int, clock: PhaseClock | None = None
            ) -> tuple[HostState, list[dict[str, float]]]:
        rows = []
        for _ in range(n_updates):
            state, row = self._update(state, clock or NO_CLOCK)
            rows.append(row)
        return state, rows

    def params(self, state: HostState) -> Params:
        return jax.device_get(state.train.params)

    def save(self, state: HostState) -> dict[str, Any]:
        assert self.vec is not None
        return {
            "device": host_tree((state.train, state.carry, state.key)),
            "host": {k: np.array(getattr(state, k))
                     for k in ("obs", "first", "ep_return", "ep_length")},
            "vec": self.vec.get_state(),
        }

    def load(self, seed: int, saved: dict[str, Any]) -> HostState:
        fresh = self.init(seed)
        train, carry, key = restore_tree((fresh.train, fresh.carry, fresh.key), saved["device"])
        assert self.vec is not None
        self.vec.set_state(saved["vec"])
        host = saved["host"]
        return HostState(train, carry, key, host["obs"], host["first"], host["ep_return"],
                         host["ep_length"])
