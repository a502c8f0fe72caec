"""Behaviour cloning of a fixed player: the start a PPO run fine-tunes (``envport imitate``).

PPO from a random network against a strong fixed opponent spends millions of steps learning
what the opponent's own rules already know (``pokemon-gen1``: 0.376 against the heuristic after
14.5M steps). Cloning a player first is the usual remedy (AlphaStar's supervised start): the
actor learns that player's choices and the critic the value of its games, so PPO starts from a
policy about as good as the player it copies and only has to find where that player is wrong.

One iteration: the **expert** (a fixed player of the game, ``VsOpponent.fixed_player_action``)
plays player 0 of ``num_envs`` games for ``num_steps`` steps against the run's opponent; then
``update_epochs`` passes of ``num_minibatches`` steps minimise the masked cross-entropy of the
expert's choices plus ``vf_coef`` x the squared error of the critic against the lambda-returns
of the games (bootstrapped with the critic, GAE's targets with the run's gamma and lambda). The
network, minibatching and optimizer are PPO's (``ppo.py``), with the learning rate annealed
over the imitation's own iterations.

The result is a PPO run folder at update 0 whose network is the clone (config.json records
``imitation``; ``imitation.csv`` logs its iterations): ``envport train ENV --init DIR`` starts a
new run from it, ``envport train ENV --resume DIR`` trains it with PPO under the settings it
records (those ``envport imitate --set`` gave), and ``envport.train.evaluation`` plays it like
any run. Ctrl-C stops after the iteration in flight and writes the network so far.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import optax

import envport
from envport.core.wrappers import AutoReset
from envport.train.backends import action_mask_of
from envport.train.config import PPOConfig
from envport.train.ppo import Params, Policy, TrainState, gae, make_optimizer
from envport.train.program import JaxTrainer, program, restore_tree

IMITATION_LOG = "imitation.csv"
IMITATION_FIELDS = ("iteration", "env_steps", "wall_time", "sps", "held_out_accuracy",
                    "cross_entropy", "accuracy", "value_loss", "expert_return", "episodes",
                    "learning_rate")


@dataclasses.dataclass
class ImitationResult:
    run_dir: Path
    expert: str
    iterations: int
    env_steps: int
    wall_time: float  # seconds of iterations, compilation excluded
    compile_time: float
    # The last iteration's share of the expert's choices the network ranks first, on the games
    # it was fitted to (accuracy) and on the same games before the fit (held_out_accuracy:
    # decisions with more than one legal choice only).
    accuracy: float
    held_out_accuracy: float
    expert_return: float  # the expert's mean return over the episodes that ended
    interrupted: bool
    params: Params  # host (NumPy) pytree: the clone's network, the run folder's parameters


def expert_of(env: Any) -> Callable[[jax.Array, Any, str], jax.Array]:
    """The environment's ``fixed_player_action(key, state, player)`` (through an
    ``AutoReset``): player 0's choice by the fixed player named ``player``; ValueError for an
    environment without fixed players."""
    inner = env.env if isinstance(env, AutoReset) else env
    hook = getattr(inner, "fixed_player_action", None)
    if hook is None:
        raise ValueError(f"{getattr(inner, 'name', inner)!r} has no fixed players to imitate "
                         "(the two-player games trained against an --opponent have)")
    return hook


def check_expert(name: str, expert: str, flag: str = "--expert") -> None:
    """ValueError naming ``flag`` unless ``expert`` is a fixed player of ``name``."""
    from envport.pettingzoo import OPPONENTS, check_vs_opponent

    envport.spec(name)
    try:
        check_vs_opponent(name, OPPONENTS[0])
    except ValueError as e:
        raise ValueError(f"{flag}: {e}") from None
    if expert not in OPPONENTS:
        raise ValueError(f"{flag} {expert}: the fixed players are {', '.join(OPPONENTS)}")


def make_iteration(env: Any, policy: Policy, cfg: PPOConfig, tx: optax.GradientTransformation,
                   expert: str) -> Callable[..., tuple[Any, ...]]:
    """``iteration(train, env_state, obs, first, ep_return, key) -> (those after it, stats)``:
    one round of the expert's play and the network's fit to it (module doc)."""
    params0 = env.default_params()
    choose = expert_of(env)  # an environment with fixed players has their legal actions too
    mask_of = action_mask_of(env)
    assert mask_of is not None
    n, t, m = cfg.num_envs, cfg.num_steps, cfg.num_minibatches

    def play(c: tuple[Any, ...], _: None) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        state, obs, first, ep_ret, key = c
        key, k_expert, k_env = jax.random.split(key, 3)
        mask = jax.vmap(lambda s: mask_of(s, params0))(state)
        action = jax.vmap(lambda k, s: choose(k, s, expert))(jax.random.split(k_expert, n),
                                                             state)
        res = jax.vmap(lambda k, s, a: env.step(k, s, a, params0))(
            jax.random.split(k_env, n), state, action)
        done = res.terminated | res.truncated
        ep_ret = ep_ret + res.reward
        out = (obs.astype(jnp.float32), first, mask, action, res.reward.astype(jnp.float32),
               done, jnp.where(done, ep_ret, 0.0))
        return (res.state, res.obs, done, jnp.where(done, 0.0, ep_ret), key), out

    def loss_fn(params: Params, obs: jax.Array, first: jax.Array, mask: jax.Array,
                action: jax.Array, target: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
        carry = policy.initial_carry(obs.shape[1])
        _, dist, value = policy.apply(params, carry, obs, first, mask)
        ce = -jnp.mean(dist.log_prob(action))
        value_loss = 0.5 * jnp.mean(jnp.square(value - target))
        accuracy = jnp.mean((dist.mode() == action).astype(jnp.float32))
        return ce + cfg.vf_coef * value_loss, {"cross_entropy": ce, "value_loss": value_loss,
                                               "accuracy": accuracy}

    def fit(train: TrainState, batch: tuple[jax.Array, ...]) -> tuple[TrainState, Any]:
        grads, stats = jax.grad(loss_fn, has_aux=True)(train.params, *batch)
        updates, opt_state = tx.update(grads, train.opt_state, train.params)
        return TrainState(optax.apply_updates(train.params, updates), opt_state), stats

    def iteration(train: TrainState, state: Any, obs: jax.Array, first: jax.Array,
                  ep_ret: jax.Array, key: jax.Array) -> tuple[Any, ...]:
        key, k_play, k_shuffle = jax.random.split(key, 3)
        (state, last_obs, last_first, ep_ret, _), traj = jax.lax.scan(
            play, (state, obs, first, ep_ret, k_play), None, length=t)
        tobs, tfirst, tmask, taction, reward, done, finished = traj
        carry = policy.initial_carry(n)
        _, dist, value = policy.apply(train.params, carry, tobs, tfirst, tmask)
        # Before the fit, these games are new to the network: its agreement with the expert
        # on their decisions (more than one legal choice) is a held-out measure of the clone.
        decision = jnp.sum(tmask, -1) > 1
        agree = jnp.sum((dist.mode() == taction) & decision) / jnp.maximum(jnp.sum(decision), 1)
        _, _, last_value = policy.apply(train.params, carry, last_obs[None], last_first[None])
        _, target = gae(value, reward, done, last_value[0], cfg.gamma, cfg.gae_lambda)

        def epoch(c: tuple[TrainState, jax.Array], _: None) -> tuple[Any, Any]:
            train, key = c
            key, sub = jax.random.split(key)
            perm = jax.random.permutation(sub, t * n)

            def by_sample(x: jax.Array) -> jax.Array:
                x = jnp.take(x.reshape(t * n, *x.shape[2:]), perm, axis=0)
                return x.reshape(m, 1, t * n // m, *x.shape[1:])

            batches = tuple(by_sample(x) for x in (tobs, tfirst, tmask, taction, target))
            train, stats = jax.lax.scan(fit, train, batches)
            return (train, key), stats

        (train, _), stats = jax.lax.scan(epoch, (train, k_shuffle), None,
                                         length=cfg.update_epochs)
        stats = {k: jnp.mean(v[-1]) for k, v in stats.items()}  # the last epoch's fit
        stats["held_out_accuracy"] = agree
        stats["episodes"] = jnp.sum(done)
        stats["return_sum"] = jnp.sum(finished)
        return train, state, last_obs, last_first, ep_ret, key, stats

    return iteration


def imitate(name: str, expert: str = "heuristic", steps: int = 1_000_000,
            out: str | os.PathLike[str] = "runs/imitation", seed: int = 0, *,
            env_kwargs: dict[str, Any] | None = None,
            config_overrides: dict[str, Any] | None = None, overwrite: bool = False,
            progress: bool = True) -> ImitationResult:
    """Clone the fixed player ``expert`` of ``name`` for ``steps`` environment steps into a PPO
    run folder ``out`` (module doc). The network, batch and PPO settings are the environment's
    (``SPEC.training``) with ``config_overrides``; ``env_kwargs`` (default: the SPEC's) choose
    the opponent the expert plays."""
    from envport.train.run import (
        CHECKPOINT_FILE,
        CONFIG_FILE,
        LOG_FILE,
        RUN_FORMAT,
        _save_checkpoint,
        _write_log,
        default_config,
        resolve_config,
        run_config,
    )

    check_expert(name, expert)
    env_kwargs = dict(default_config(name)[1] if env_kwargs is None else env_kwargs)
    cfg, env_kwargs = resolve_config(name, "jax", None, seed, config_overrides, env_kwargs,
                                     None)
    cfg.check(len(jax.devices()))
    if len(jax.devices()) != 1:
        raise ValueError("envport imitate runs on one device")
    iterations = steps // cfg.batch_size
    if iterations < 1:
        raise ValueError(f"--steps {steps} is less than one batch ({cfg.num_envs} x "
                         f"{cfg.num_steps} = {cfg.batch_size})")
    run_dir = Path(out)
    if ((run_dir / CONFIG_FILE).is_file() or (run_dir / CHECKPOINT_FILE).is_file()) \
            and not overwrite:
        raise ValueError(f"--out {run_dir} already holds a run: choose another --out, or "
                         "--overwrite")

    prog = program(name, env_kwargs, cfg)
    env = prog.backend.env
    # The imitation's own schedule: annealed over its iterations, not the PPO run's updates.
    tx = make_optimizer(dataclasses.replace(cfg, total_steps=iterations * cfg.batch_size))
    trainer = JaxTrainer(prog)
    runner = trainer.init(cfg.seed)
    train = TrainState(runner.train.params, tx.init(runner.train.params))
    key = jax.random.fold_in(runner.key, 0x1417)  # its own stream, apart from PPO's
    state = (train, runner.env_state, runner.obs, runner.first, runner.ep_return, key)
    compile_start = time.perf_counter()
    step = jax.jit(make_iteration(env, prog.policy, cfg, tx, expert)).lower(*state).compile()
    compile_time = time.perf_counter() - compile_start

    run_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, float]] = []
    wall, interrupted = 0.0, False
    total_episodes, total_return = 0.0, 0.0
    from envport.train.run import _progress_bar, _StopFlag

    with _StopFlag() as stop, _progress_bar(progress, iterations * cfg.batch_size,
                                            f"imitate {expert}") as bar:
        task = bar.add_task(f"imitate {expert}", total=iterations * cfg.batch_size, sps=0.0,
                            ret=0.0)
        for i in range(iterations):
            if stop.requested:
                interrupted = True
                break
            started = time.perf_counter()
            *rest, stats = step(*state)
            state = tuple(rest)
            stats = {k: float(v) for k, v in jax.device_get(stats).items()}
            seconds = time.perf_counter() - started
            wall += seconds
            episodes = stats["episodes"]
            total_episodes += episodes
            total_return += stats["return_sum"]
            rows.append({
                "iteration": i + 1, "env_steps": (i + 1) * cfg.batch_size, "wall_time": wall,
                "sps": cfg.batch_size / max(seconds, 1e-9),
                "held_out_accuracy": stats["held_out_accuracy"],
                "cross_entropy": stats["cross_entropy"], "accuracy": stats["accuracy"],
                "value_loss": stats["value_loss"],
                "expert_return": stats["return_sum"] / episodes if episodes else math.nan,
                "episodes": int(episodes),
                "learning_rate": cfg.lr * (1.0 - i / iterations) if cfg.anneal_lr else cfg.lr})
            bar.update(task, advance=cfg.batch_size, sps=rows[-1]["sps"],
                       ret=0.0 if math.isnan(rows[-1]["expert_return"])
                       else rows[-1]["expert_return"])

    # A PPO run at update 0 whose network is the clone: fresh PPO optimizer, PPO's own keys.
    params = restore_tree(runner.train.params, jax.tree_util.tree_leaves(state[0].params))
    runner = runner._replace(train=runner.train._replace(params=params))
    config = run_config(name, "jax", cfg, env_kwargs)
    config["imitation"] = {"expert": expert, "steps": len(rows) * cfg.batch_size,
                           "iterations": len(rows), "seed": seed}
    (run_dir / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n")
    _write_log(run_dir / LOG_FILE, [], append=False)
    with (run_dir / IMITATION_LOG).open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=IMITATION_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    _save_checkpoint(run_dir / CHECKPOINT_FILE, {
        "format": RUN_FORMAT, "env": name, "backend": "jax", "update": 0, "env_steps": 0,
        "wall_time": 0.0, "state": trainer.save(runner)})
    last = rows[-1] if rows else {}
    return ImitationResult(run_dir, expert, len(rows), len(rows) * cfg.batch_size, wall,
                           compile_time, float(last.get("accuracy", math.nan)),
                           float(last.get("held_out_accuracy", math.nan)),
                           total_return / total_episodes if total_episodes else math.nan,
                           interrupted, jax.device_get(params))
