"""Throughput under training: PPO steps/s per backend, and where an iteration's time goes.

:func:`ppo_benchmark` runs the SAME PPO (same config, same network, same compiled update) on
the JAX backend (rollout under ``jit``) and on the reference backend (the real reference
stepped on the host, ``host_rollout.py``) at three model sizes (hidden widths chosen for about
0.1M, 2M and 20M parameters), and reports per backend and size:

- ``sps``: PPO environment steps per second of the real training loop (``JaxTrainer.run`` /
  ``HostTrainer.run``, exactly what :func:`envport.train.train` runs), after a warm-up;
- ``phases``: seconds per iteration and shares, from the same trainers run again with a
  :class:`~envport.train.program.PhaseClock`, which waits (``block_until_ready``) at each
  phase boundary:

  ============  ==========================================  ====================================
  phase         JAX backend                                 reference backend
  ============  ==========================================  ====================================
  env           jitted rollout minus ``forward``             ``vec.step`` on the host
  forward       the rollout's policy calls alone (a jitted   the jitted policy call per step
                scan of ``num_steps`` forward+sample)        (observations go in with the call)
  update        the compiled PPO update                      the same compiled PPO update
  transfer      episode/loss statistics to the host          actions, log-probs and values to the
                                                             host per step; trajectory to the
                                                             device; statistics back
  other         (none: everything is on the device)          Python bookkeeping per step
  ============  ==========================================  ====================================

A host translation (``EnvSpec.backend == "host"``) has no jitted rollout: its "jax" row is its
batch (``Training.make_vector_translation``) on the host rollout, timed as the reference's.

The JAX backend's env/forward split is an estimate (the fused rollout cannot be cut in two
without changing it): ``forward`` is timed alone on the same shapes and ``env`` is the rest.
The sizes above 0.1M cap the samples per update (``MAX_SAMPLES``) so a 20M-parameter update
stays within seconds on a CPU; the config used is reported for every size.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import envport
from envport.core.spaces import Discrete
from envport.train.backends import translation_spaces
from envport.train.config import PPOConfig
from envport.train.host_rollout import HostTrainer
from envport.train.ppo import AXIS, make_policy
from envport.train.program import BAT, REP, JaxTrainer, PhaseClock, Program, program
from envport.train.run import default_config

MODEL_SIZES: dict[str, float] = {"0.1M": 1e5, "2M": 2e6, "20M": 2e7}
# Cap on samples per update (num_envs * num_steps) per model size: PPO's update costs about
# 6 * params * samples * epochs flops, 20M params x 8192 samples would take minutes on a CPU.
MAX_SAMPLES: dict[str, int] = {"0.1M": 8192, "2M": 2048, "20M": 256}
PHASES: tuple[str, ...] = ("env", "forward", "update", "transfer", "other")


def parse_size(size: str | float) -> float:
    """``"0.1M"``, ``"2M"``, ``"500k"`` or a number -> parameter count."""
    if isinstance(size, int | float):
        return float(size)
    s = size.strip().upper()
    scale = {"K": 1e3, "M": 1e6, "G": 1e9}.get(s[-1:], 1.0)
    try:
        return float(s[:-1] if scale != 1.0 else s) * scale
    except ValueError:
        raise ValueError(f"model size {size!r}: expected a number like 0.1M, 2M or 500k") from None


def param_count(cfg: PPOConfig, name: str, env_kwargs: dict[str, Any]) -> int:
    """Parameters of ``cfg``'s network on ``name`` (shapes only, nothing computed)."""
    policy = make_policy(cfg, *translation_spaces(name, **env_kwargs))
    shapes = jax.eval_shape(policy.init, jax.random.key(0))
    return int(sum(math.prod(x.shape) for x in jax.tree_util.tree_leaves(shapes)))


def hidden_for(target: float, cfg: PPOConfig, name: str, env_kwargs: dict[str, Any]
               ) -> tuple[int, ...]:
    """Hidden sizes (the config's depth, equal widths) whose network is closest to ``target``
    parameters."""
    depth = max(1, len(cfg.hidden_sizes))
    obs_space, space = translation_spaces(name, **env_kwargs)
    obs_dim = math.prod(obs_space.shape)
    act_dim = space.n if isinstance(space, Discrete) else math.prod(space.shape)

    def count(h: int) -> int:
        if cfg.network != "mlp":  # exact, from the network's shapes (slower)
            return param_count(dataclasses.replace(cfg, hidden_sizes=(h,) * depth), name,
                               env_kwargs)
        # Two towers (actor, critic) of Dense layers, then the policy head and the value head
        # (plus a log-std per action dimension for continuous actions).
        tower = obs_dim * h + h + (depth - 1) * (h * h + h)
        return 2 * tower + h * act_dim + act_dim + h + 1 + (
            0 if isinstance(space, Discrete) else act_dim)

    lo, hi = 1, 1
    while count(hi) < target:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if count(mid) < target else (lo, mid)
    best = min((lo, hi), key=lambda h: abs(count(h) - target))
    return (best,) * depth


def bench_config(name: str, size: str, iterations: int) -> tuple[PPOConfig, dict[str, Any]]:
    """The environment's PPO config with the model of ``size`` and at most ``MAX_SAMPLES``
    samples per update; ``total_steps`` covers the benchmark's iterations."""
    base, env_kwargs = default_config(name)
    hidden = hidden_for(parse_size(size), base, name, env_kwargs)
    cap = MAX_SAMPLES.get(size, min(MAX_SAMPLES.values()))
    m = base.num_minibatches
    num_steps = min(base.num_steps, max(1, cap // base.num_envs))
    if (base.num_envs * num_steps) % m:
        num_steps = max(m, num_steps // m * m)
    cfg = dataclasses.replace(base, hidden_sizes=hidden, num_steps=num_steps, seed=0)
    return dataclasses.replace(cfg, total_steps=cfg.batch_size * (iterations + 100)), env_kwargs


def _phase_row(seconds: dict[str, float], iterations: int) -> dict[str, Any]:
    per_iter = {k: seconds.get(k, 0.0) / iterations for k in PHASES}
    total = sum(per_iter.values())
    return {"seconds": per_iter, "total": total,
            "share": {k: v / total if total > 0 else math.nan for k, v in per_iter.items()}}


def _forward_only(prog: Program) -> Any:
    """Jitted: the rollout's ``num_steps`` policy calls (forward + sample + log-prob) on fixed
    observations, split over the devices like the rollout."""
    policy, steps = prog.policy, prog.cfg.num_steps

    def body(params: Any, obs: jax.Array, first: jax.Array, carry: jax.Array, key: jax.Array
             ) -> jax.Array:
        key = jax.random.fold_in(key, jax.lax.axis_index(AXIS))

        def step(c: tuple, _: None) -> tuple[tuple, None]:
            h, acc, key = c
            key, sub = jax.random.split(key)
            h, dist, value = policy.apply(params, h, obs[None], first[None])
            raw = dist.sample(sub)
            logp = dist.log_prob(raw)[0]
            # Everything feeds the carry so nothing is dead code.
            acc = acc + logp + value[0] + policy.env_action(raw[0]).reshape(
                obs.shape[0], -1).sum(-1).astype(jnp.float32)
            return (h, acc, key), None

        acc = jnp.zeros(obs.shape[0], jnp.float32)
        (_, acc, _), _ = jax.lax.scan(step, (carry, acc, key), None, length=steps)
        return acc

    return prog._shard_jit(body, (REP, BAT, BAT, BAT, REP), BAT)


def measure_jax(prog: Program, iterations: int, warmup: int) -> dict[str, Any]:
    trainer = JaxTrainer(prog)
    state = trainer.init(0)
    t = time.perf_counter()
    trainer.compile(state)
    compile_s = time.perf_counter() - t
    state, _ = trainer.run(state, warmup)
    t = time.perf_counter()
    state, _ = trainer.run(state, iterations)  # the real loop: async dispatch, one wait
    wall = time.perf_counter() - t
    # The same loop again, with a clock waiting at each phase boundary.
    clock = PhaseClock()
    state, _ = trainer.run(state, iterations, clock)
    forward = _forward_only(prog)
    fwd_args = (state.train.params, state.obs, state.first, state.carry, state.key)
    jax.block_until_ready(forward(*fwd_args))  # compile, untimed
    t = time.perf_counter()
    for _ in range(iterations):
        jax.block_until_ready(forward(*fwd_args))
    seconds = dict.fromkeys(PHASES, 0.0)
    seconds["forward"] = time.perf_counter() - t
    seconds["update"] = clock.seconds.get("update", 0.0)
    seconds["transfer"] = clock.seconds.get("transfer", 0.0)
    rollout_s = clock.seconds.get("rollout", 0.0)
    seconds["env"] = max(0.0, rollout_s - seconds["forward"])
    return {"sps": iterations * prog.cfg.batch_size / wall, "iteration_s": wall / iterations,
            "compile_s": compile_s, "rollout_s": rollout_s / iterations,
            "phases": _phase_row(seconds, iterations)}


def measure_reference(prog: Program, iterations: int, warmup: int, kind: str = "reference"
                      ) -> dict[str, Any]:
    """A host-stepped backend (``HostTrainer``): the reference, or (``kind="jax"``) a host
    translation's batch. A batch that takes the JAX rollout's keys is timed drawing its own:
    computing the JAX batch's draws (tcg-pocket's ``batch_draws``, ~7% of its step) serves
    L4's common random numbers, not the reference."""
    ht = HostTrainer(prog, kind, pass_keys=False)
    state = ht.init(0)
    t = time.perf_counter()
    ht.compile(state)
    compile_s = time.perf_counter() - t
    state, _ = ht.run(state, warmup)
    t = time.perf_counter()
    state, _ = ht.run(state, iterations)
    wall = time.perf_counter() - t
    clock = PhaseClock()  # the same loop again, timed at each phase boundary
    ht.run(state, iterations, clock)
    seconds = {k: clock.seconds.get(k, 0.0) for k in PHASES}
    return {"sps": iterations * prog.cfg.batch_size / wall, "iteration_s": wall / iterations,
            "compile_s": compile_s, "phases": _phase_row(seconds, iterations)}


def ppo_benchmark(name: str, model_sizes: Sequence[str] = ("0.1M", "2M", "20M"),
                  iterations: int = 2, warmup: int = 1,
                  backends: Sequence[str] = ("jax", "reference"),
                  progress: bool = False) -> dict[str, Any]:
    """PPO steps/s per backend and the time breakdown of an iteration, per model size.

    ``iterations`` timed PPO iterations (after ``warmup`` untimed ones, compilation excluded)
    for the steps/s, and as many instrumented ones for the breakdown. Returns ``{"env",
    "rows", "speedup", "speedup_bound", "machine", "model_sizes"}``: one row per (size,
    backend) with ``sps`` and ``phases``; ``speedup[size]`` is JAX steps/s over reference
    steps/s; ``speedup_bound[size]`` is Amdahl's limit on it, one over the update's share of a
    reference iteration (the update is identical on both backends).
    """
    host = envport.spec(name).host
    if iterations < 1 or warmup < 0:
        raise ValueError(f"iterations must be >= 1 and warmup >= 0, got {iterations}, {warmup}")
    for b in backends:
        if b not in ("jax", "reference"):
            raise ValueError(f"unknown backend {b!r}; choose jax or reference")
    rows: list[dict[str, Any]] = []
    sizes: dict[str, Any] = {}
    speedup: dict[str, float] = {}
    bound: dict[str, float] = {}
    for size in model_sizes:
        cfg, env_kwargs = bench_config(name, size, iterations + warmup)
        params = param_count(cfg, name, env_kwargs)
        sizes[size] = {"params": params, "hidden_sizes": list(cfg.hidden_sizes),
                       "num_envs": cfg.num_envs, "num_steps": cfg.num_steps,
                       "batch_size": cfg.batch_size, "update_epochs": cfg.update_epochs,
                       "num_minibatches": cfg.num_minibatches}
        prog = program(name, env_kwargs, cfg)
        sps: dict[str, float] = {}
        for backend in backends:
            if progress:
                print(f"  {name} {size} ({params:,} params) on {backend}...", flush=True)
            # A host translation's "jax" backend is a host batch: the host rollout, as the
            # reference's, with the same phases (env = its batch step).
            m = (measure_jax(prog, iterations, warmup) if backend == "jax" and not host
                 else measure_reference(prog, iterations, warmup, backend))
            sps[backend] = m["sps"]
            rows.append({"model_size": size, "params": params, "backend": backend, **m})
        speedup[size] = sps.get("jax", math.nan) / sps.get("reference", math.nan)
        ref = next((r for r in rows if r["model_size"] == size and r["backend"] == "reference"),
                   None)
        if ref is not None:
            # The update is the same compiled program on both backends, so even a JAX rollout
            # taking no time at all cannot beat the reference by more than this.
            upd = ref["phases"]["share"]["update"]
            bound[size] = 1.0 / upd if upd > 0 else math.inf
    return {
        "env": name, "rows": rows, "speedup": speedup, "speedup_bound": bound,
        "model_sizes": sizes,
        "sps": {size: {r["backend"]: r["sps"] for r in rows if r["model_size"] == size}
                for size in sizes},
        "iterations": iterations, "warmup": warmup, "host_translation": host,
        "machine": {"cores": os.cpu_count(), "jax_backend": jax.default_backend(),
                    "jax_version": jax.__version__, "devices": len(jax.devices())},
    }


def plot_ppo_benchmark(result: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Stacked bars: the share of an iteration per phase, per (model size, backend), with the
    steps/s written above each bar."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["rows"]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(rows) + 2), 4.5))
    try:
        xs = np.arange(len(rows))
        bottom = np.zeros(len(rows))
        for phase in PHASES:
            shares = np.array([r["phases"]["share"][phase] for r in rows], np.float64)
            shares = np.nan_to_num(shares)
            ax.bar(xs, shares, 0.6, bottom=bottom, label=phase)
            bottom += shares
        for x, r in zip(xs, rows, strict=True):
            ax.text(float(x), 1.02, f"{r['sps']:,.0f}\nsteps/s", ha="center", fontsize=7)
        ax.set_xticks(xs, [f"{r['model_size']}\n{r['backend']}" for r in rows], fontsize=8)
        ax.set_ylim(0, 1.2)
        ax.set_ylabel("share of a PPO iteration")
        machine = result.get("machine", {})
        speed = ", ".join(f"{k}: {v:.3g}x" for k, v in result["speedup"].items()
                          if isinstance(v, float) and math.isfinite(v))
        ax.set_title(f"{result['env']}: PPO time breakdown (JAX/reference {speed})\n"
                     f"{machine.get('cores', '?')} cores, jax {machine.get('jax_version', '?')}"
                     f" on {machine.get('jax_backend', '?')}", fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
