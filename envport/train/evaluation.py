"""Evaluate a trained policy on either backend: the episode returns, for L4's transfer tests.

Actions are SAMPLED from the trained stochastic policy by default (``deterministic=False``):
L4 asks whether the policy PPO produced behaves the same on both backends, and that policy is
the stochastic one (its entropy is part of what was trained); the greedy (argmax / mean) policy
is a different policy, available with ``deterministic=True``.

Episodes are unbiased: ``episodes`` environments run in parallel and each contributes its FIRST
episode (taking the first ``episodes`` episodes to finish from fewer environments would favour
short ones).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

import envport
from envport.train.backends import (
    OPPONENT,
    POOL_OPTIONS,
    check_backend,
    check_opponent,
    host_vector_env,
    is_self_play,
    translation,
)
from envport.train.config import PPOConfig
from envport.train.ppo import Params, Policy, make_policy
from envport.train.run import default_config, load_params

# What a self-play run (``opponent="pool"``) is evaluated against.
SELF_PLAY_EVALUATION_OPPONENT = "heuristic"


@functools.lru_cache(maxsize=16)
def _actor(policy: Policy, deterministic: bool) -> Any:
    def act(params: Params, carry: jax.Array, obs: jax.Array, first: jax.Array, key: jax.Array,
            *mask: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        # ``mask`` (a batch with ``action_masks``): the legal actions, as masked PPO trained
        key, sub = jax.random.split(key)
        carry, action = policy.act(params, carry, obs, first, mask[0] if mask else None, sub,
                                   deterministic)
        return carry, action, key

    return jax.jit(act)


def evaluate(name: str, backend: str, params_or_run_dir: Params | str | os.PathLike[str],
             episodes: int = 100, seed: int = 0, *, deterministic: bool = False,
             config: PPOConfig | None = None, env_kwargs: dict[str, Any] | None = None,
             max_steps: int = 1_000_000) -> np.ndarray:
    """Returns of ``episodes`` episodes of the policy on ``name``'s ``backend`` ("jax" or
    "reference"), as a float64 array in environment order.

    ``params_or_run_dir``: a run directory written by :func:`envport.train.train` (its network
    and environment options are read from config.json), or parameters, then with ``config``
    (default: the environment's ``SPEC.training``) and ``env_kwargs``. ``seed`` seeds the
    environments and the action sampling. Raises RuntimeError if an episode is still running
    after ``max_steps`` steps.
    """
    kind = check_backend(backend)
    envport.spec(name)
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    if isinstance(params_or_run_dir, str | os.PathLike):
        run, params = load_params(Path(params_or_run_dir))
        if run["env"] != name:
            raise ValueError(f"{params_or_run_dir} holds a policy for {run['env']!r}, not {name!r}")
        cfg = PPOConfig.from_dict(run["ppo"])
        env_kwargs = dict(run["env_kwargs"]) if env_kwargs is None else env_kwargs
        if env_kwargs != run["env_kwargs"]:
            raise ValueError(f"the policy was trained with env_kwargs={run['env_kwargs']}, "
                             f"not {env_kwargs}")
    else:
        default_cfg, default_kwargs = default_config(name)
        cfg = config or default_cfg
        env_kwargs = default_kwargs if env_kwargs is None else env_kwargs
        params = params_or_run_dir

    if is_self_play(env_kwargs):
        # A self-play run is measured against the fixed opponent it is meant to beat.
        env_kwargs = {**{k: v for k, v in env_kwargs.items() if k not in POOL_OPTIONS},
                      OPPONENT: SELF_PLAY_EVALUATION_OPPONENT}
    matched = envport.spec(name).training.make_matched_translation
    if OPPONENT in env_kwargs and kind == "jax" and matched is None:
        return play_vs_opponent(name, env_kwargs[OPPONENT], params, episodes, seed,
                                config=cfg, deterministic=deterministic,
                                max_steps=max_steps).returns
    # The JAX side through the host loop too where it can draw what the reference batch of the
    # same seed draws: both backends then play the same episodes with the same action keys.
    vec = (matched(episodes, seed, **env_kwargs) if kind == "jax" and matched is not None
           else host_vector_env(name, kind, episodes, seed, **env_kwargs))
    try:
        return _play(vec, cfg, params, episodes, seed, deterministic, max_steps)
    finally:
        # Batches that own emulators or worker processes release them here, not at exit.
        close = getattr(vec, "close", None)
        if close is not None:
            close()


def _play(vec: Any, cfg: PPOConfig, params: Params, episodes: int, seed: int,
          deterministic: bool, max_steps: int) -> np.ndarray:
    # The network does not depend on the seed: one compiled actor serves every seed.
    policy = make_policy(dataclasses.replace(cfg, seed=0), vec.observation_space,
                         vec.action_space)
    act = _actor(policy, deterministic)
    params = jax.device_put(params)
    key = jax.random.fold_in(jax.random.key(seed), 1)  # decorrelated from the env seeds
    carry = policy.initial_carry(episodes)
    obs, first = vec.reset(), np.ones(episodes, np.bool_)
    running = np.zeros(episodes, np.float64)
    returns = np.full(episodes, np.nan)
    masks = getattr(vec, "action_masks", None)
    # A batch that can stop stepping environments (HostVectorEnv.set_active) stops each one
    # once its first episode has ended; each still contributes its first episode.
    set_active = getattr(vec, "set_active", None)
    for _ in range(max_steps):
        # NumPy straight into the compiled call: an eager jnp.asarray per step costs more.
        legal = () if masks is None else (masks(),)
        carry, action, key = act(params, carry, obs, first, key, *legal)
        obs, reward, terminated, truncated = vec.step(np.asarray(action))
        running += reward
        first = terminated | truncated
        newly = first & np.isnan(returns)
        returns[newly] = running[newly]
        running[first] = 0.0
        if not np.isnan(returns).any():
            return returns
        if set_active is not None and newly.any():
            set_active(np.isnan(returns))
    raise RuntimeError(f"{int(np.isnan(returns).sum())} of {episodes} episodes still running "
                       f"after max_steps={max_steps} steps")



# ---- two-player games: the trained player 0 against a fixed opponent -----------------------------

@dataclasses.dataclass(frozen=True)
class Battles:
    """The outcome of ``battles`` games of a policy (player 0) against a fixed opponent."""

    opponent: str
    returns: np.ndarray  # float64 [battles]: +1 won, -1 lost, 0 tie, in battle order
    steps: int  # batched steps until every battle had ended
    seconds: float  # wall time, compilation included

    @property
    def battles(self) -> int:
        return len(self.returns)

    @property
    def wins(self) -> int:
        return int((self.returns > 0).sum())

    @property
    def losses(self) -> int:
        return int((self.returns < 0).sum())

    @property
    def win_rate(self) -> float:
        return self.wins / self.battles

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """Wilson score interval of the win rate (95 % by default)."""
        n, p = self.battles, self.win_rate
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return float(centre - half), float(centre + half)

    def describe(self) -> str:
        lo, hi = self.interval()
        return (f"vs {self.opponent}: {self.battles} battles, {self.wins} won, {self.losses} "
                f"lost, {self.battles - self.wins - self.losses} tied: win rate "
                f"{self.win_rate:.3f} (95% CI {lo:.3f}-{hi:.3f}; {self.steps} steps, "
                f"{self.seconds:.0f} s)")


def play_vs_opponent(name: str, opponent: str, params: Params, battles: int = 1000,
                     seed: int = 0, *, config: PPOConfig | None = None,
                     deterministic: bool = False, max_steps: int = 3000) -> Battles:
    """``battles`` games of the policy ``params`` as player 0 of ``name`` against the fixed
    JAX ``opponent``: :func:`play_vs_opponents` with one opponent."""
    return play_vs_opponents(name, params, {opponent: battles}, seed, config=config,
                             deterministic=deterministic, max_steps=max_steps)[opponent]


def play_vs_opponents(name: str, params: Params, battles: dict[str, int], seed: int = 0, *,
                      config: PPOConfig | None = None, deterministic: bool = False,
                      max_steps: int = 3000) -> dict[str, Battles]:
    """Games of the policy ``params`` (network ``config``, default ``SPEC.training``'s) as
    player 0 of ``name`` against fixed JAX opponents, ``battles[opponent]`` of each, all
    stepped as one batch by one compiled step (``VsOpponent.transition_against``), choosing
    among the legal actions as in training (sampled; ``deterministic``: the most likely). Each
    battle is played once to its end (no reset: every battle counts once, short or long).
    RuntimeError if one is still running after ``max_steps`` steps."""
    import time

    import jax.numpy as jnp

    from envport.pettingzoo import OPPONENTS
    from envport.train.backends import action_mask_of

    t0 = time.perf_counter()
    if not battles:
        raise ValueError("no opponent to play against")
    for opponent, n in battles.items():
        check_opponent(name, opponent, flag="opponent")
        if opponent not in OPPONENTS:  # the self-play pool: no fixed player to measure against
            raise ValueError(f"opponent {opponent!r}: evaluation plays the fixed opponents "
                             f"{', '.join(OPPONENTS)}")
        if n < 1:
            raise ValueError(f"battles against {opponent} must be at least 1, got {n}")
    # One environment serves every opponent (transition_against takes it per battle).
    env = translation(name, **{OPPONENT: next(iter(battles))})
    total = sum(battles.values())
    which = jnp.asarray(np.concatenate([np.full(n, OPPONENTS.index(o), np.int32)
                                        for o, n in battles.items()]))
    mask_of = action_mask_of(env)
    cfg = config or default_config(name)[0]
    env_params = env.default_params()
    policy = make_policy(dataclasses.replace(cfg, seed=0), env.observation_space(env_params),
                         env.action_space(env_params))

    @jax.jit
    def start(key: jax.Array) -> tuple[Any, jax.Array]:
        return jax.vmap(lambda k: env.reset(k, env_params))(jax.random.split(key, total))

    @jax.jit
    def step(params: Params, state: Any, obs: jax.Array, carry: jax.Array, first: jax.Array,
             done: jax.Array, ret: jax.Array, key: jax.Array) -> tuple[Any, ...]:
        key, k_act, k_env = jax.random.split(key, 3)
        mask = None if mask_of is None else jax.vmap(lambda s: mask_of(s, env_params))(state)
        carry, dist, _ = policy.apply(params, carry, obs[None], first[None],
                                      None if mask is None else mask[None])
        action = (dist.mode() if deterministic else dist.sample(k_act))[0]
        res = jax.vmap(lambda k, s, a, o: env.transition_against(s, a, k, o, env_params))(
            jax.random.split(k_env, total), state, policy.env_action(action), which)
        # An ended battle stays as it ended (and scores once).
        state = jax.tree_util.tree_map(
            lambda old, new: jnp.where(done.reshape(done.shape + (1,) * (new.ndim - 1)), old,
                                       new), state, res.state)
        ret = jnp.where(done, ret, ret + res.reward)
        done = done | res.terminated | res.truncated
        return state, res.obs, carry, jnp.zeros_like(first), done, ret, key

    params = jax.device_put(params)
    state, obs = start(jax.random.fold_in(jax.random.key(seed), 0))
    key = jax.random.fold_in(jax.random.key(seed), 1)
    carry = policy.initial_carry(total)
    first = jnp.ones(total, bool)
    done, ret = jnp.zeros(total, bool), jnp.zeros(total, jnp.float32)
    steps = 0
    while steps < max_steps:
        state, obs, carry, first, done, ret, key = step(params, state, obs, carry, first, done,
                                                        ret, key)
        steps += 1
        if steps % 16 == 0 and bool(done.all()):
            break
    if not bool(done.all()):
        raise RuntimeError(f"{int((~done).sum())} of {total} battles still running after "
                           f"max_steps={max_steps} steps")
    seconds = time.perf_counter() - t0
    returns = np.asarray(ret, np.float64)
    out, at = {}, 0
    for o, n in battles.items():
        out[o] = Battles(o, returns[at:at + n], steps, seconds)
        at += n
    return out


def evaluate_run(run_dir: str | os.PathLike[str], opponents: tuple[str, ...] = ("random",
                 "heuristic"), battles: int = 1000, seed: int = 12345,
                 deterministic: bool = False) -> dict[str, Battles]:
    """The trained policy of a fixed-opponent run against each of ``opponents``, ``battles``
    games each (one batch, one compiled step)."""
    run, params = load_params(Path(run_dir))
    if OPPONENT not in run["env_kwargs"]:
        raise ValueError(f"{run_dir} was not trained against an opponent (env_kwargs "
                         f"{run['env_kwargs']})")
    cfg = PPOConfig.from_dict(run["ppo"])
    return play_vs_opponents(run["env"], params, dict.fromkeys(opponents, battles), seed,
                             config=cfg, deterministic=deterministic)


def main(argv: list[str] | None = None) -> int:
    """``python -m envport.train.evaluation RUN_DIR [--battles N] [--seed S] [--greedy]``: the
    run's policy against the random and the heuristic player."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("run_dir")
    ap.add_argument("--battles", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--greedy", action="store_true", help="the most likely legal action")
    ap.add_argument("--opponents", nargs="+", default=["random", "heuristic"])
    args = ap.parse_args(argv)
    if args.battles < 1:
        ap.error(f"--battles must be at least 1, got {args.battles}")
    for result in evaluate_run(args.run_dir, tuple(args.opponents), args.battles, args.seed,
                               args.greedy).values():
        print(f"{args.run_dir} ({'greedy' if args.greedy else 'sampled'}) {result.describe()}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
