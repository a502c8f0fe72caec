"""HalfCheetah: Gymnasium's HalfCheetah-v5 on C MuJoCo (the reference) and its JAX translation.

The physics (``physics.py``) is MuJoCo's pipeline specialised to this planar model, read from
Gymnasium's own XML at start-up (``model.py``); ``checks.py`` compares it stage by stage with
MuJoCo (``SPEC.verification.components``). ``variant(dtype="float64")`` is the float64 mode used
to verify the physics at MuJoCo's own precision (run it with JAX's x64 mode on).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from envport.core.reference import RefState
from envport.core.registry import (
    Benchmark,
    EnvSpec,
    Option,
    Tolerance,
    Training,
    Verification,
    lazy,
)
from envport.core.seeds import derive_key, derive_seed
from envport.train.config import PPOConfig

FLOAT32_EPS = float(np.finfo(np.float32).eps)
FLOAT64_EPS = float(np.finfo(np.float64).eps)

# One env step is 5 MuJoCo steps, each a Newton solve of a stiff contact problem. Measured over
# 1,000 L2 states (random, scripted, novelty-seeking, a quarter perturbed into hard contact and
# limit states), the float32 translation's qvel error is 3e-6 median, 1.5e-5 at the 90th
# percentile, 1.1e-4 at the 99th, 3.7e-4 at worst (a flipped cheetah bouncing on its back): on
# the states where it is largest the velocities are large too, and relative to the largest
# velocity of the step it is at most 5.4e-5. A float32 pipeline that rounds only its stage
# outputs and state to float32 (everything else in float64) reaches 3.1e-4 on those states: the
# floor is the conditioning of the contact solve, which couples every velocity to the largest.
# So positions are held to 1e-4 + 1e-4 relative, elementwise; velocities (and the obs and
# reward, which contain them) to 1e-4 + 1e-4 relative to the largest element of the step
# (normwise). In float64 the pipeline lands within ~2e-12 of MuJoCo.
FLOAT32_TOLERANCE = Tolerance(atol=1e-4, rtol=1e-4)
FLOAT32_VELOCITY_TOLERANCE = Tolerance(atol=1e-4, rtol=1e-4, normwise=True)
FLOAT32_FIELDS = {k: FLOAT32_VELOCITY_TOLERANCE for k in ("state.qvel", "obs", "reward")}
FLOAT64_TOLERANCE = Tolerance(atol=1e-8, rtol=1e-8)
# Observations and rewards are compared after a cast to float32 (envport's step_fields): in
# float64 mode they can differ by one float32 rounding, 6e-8 relative.
FLOAT64_CAST_TOLERANCE = Tolerance(atol=1e-8, rtol=2 * FLOAT32_EPS)


_make = lazy("envport.envs.halfcheetah.jax_env:HalfCheetah")
_make_reference = lazy("envport.envs.halfcheetah.reference:HalfCheetahReference")
_make_bridge = lazy("envport.envs.halfcheetah.bridge:HalfCheetahBridge")


# L3's perturbed copies of MuJoCo carry rounding where an implementation at the translation's
# precision incurs it: every stage of every MuJoCo step (kinematics, mass matrix, constraint rows,
# bias/passive/actuator forces, the solver's qacc, the constraint force with its cancellation,
# the state) is jittered and, for float32, rounded to float32 (``reference.rounded_mj_step``).
# Calibration, on the 3,000 states of 100 episodes' first 30 steps (seed 0), one env step from
# the reference's state: the float32 translation errs 3.4e-6 median, 3.7e-5 at the 90th
# percentile, 2.3e-4 at the 99th; a copy jittered by 2 float32 ulps per stage then rounded errs
# 1.0e-5 / 6.2e-5 / 3.2e-4, and the largest of three copies is within 5.6x of the translation's
# error on EVERY state (1 ulp: 16x on one state; 4 ulps: also 5.6x, but twice the divergence,
# so a shorter horizon). Jittering only the state after each env step (the earlier model) left
# the translation's error up to 125x above a copy's on contact states: the constraint force
# -D (J qacc - aref) cancels, and its rounding is relative to the terms, not the result.
FLOAT32_STAGE_ULPS = 2


def _perturbed_float32(copy: int = 0, params: dict[str, Any] | None = None):
    """MuJoCo carrying float32 rounding where a float32 implementation incurs it (above)."""
    return _make_reference(noise=FLOAT32_STAGE_ULPS * FLOAT32_EPS, round_float32=True,
                           noise_seed=copy, stages=True, params=params)


def _perturbed_float64(copy: int = 0, params: dict[str, Any] | None = None):
    """MuJoCo carrying float64 rounding error at the level of a float64 re-implementation: every
    stage jittered by 4 float64 ulps (``reference.rounded_mj_step``, no float32 rounding)."""
    return _make_reference(noise=4 * FLOAT64_EPS, round_float32=False, noise_seed=copy,
                           stages=True, params=params)


def sample_params(rng: np.random.Generator) -> dict[str, Any]:
    """One random non-default param set, by the names of ``HalfCheetahParams`` (the keys the
    reference's ``params=`` takes): every body mass and principal moment x U(0.8, 1.2), every
    geom's friction x U(0.5, 1.5), joint damping, armature and stiffness x U(0.5, 1.5) per dof,
    motor gears x U(0.8, 1.2), gravity x U(0.9, 1.1), the reward weights and reset noise drawn
    around Gymnasium's defaults. Values are float32 numbers (as float64 arrays), so a float32
    translation and the float64 reference are given the same params.

    JAX side: ``dataclasses.replace(env.default_params(), **sample_params(rng))``; reference:
    ``HalfCheetahReference(params=sample_params(rng))``."""
    from envport.envs.halfcheetah.model import cheetah_model

    cm = cheetah_model()

    def f32(x: Any) -> Any:
        a = np.asarray(x, np.float64).astype(np.float32).astype(np.float64)
        return float(a) if a.ndim == 0 else a

    return {
        "body_mass": f32(cm.body_mass * rng.uniform(0.8, 1.2, cm.nbody)),
        "body_inertia": f32(cm.body_inertia * rng.uniform(0.8, 1.2, (cm.nbody, 3))),
        "geom_friction": f32(cm.geom_friction * rng.uniform(0.5, 1.5, (cm.ngeom, 1))),
        "dof_damping": f32(cm.dof_damping * rng.uniform(0.5, 1.5, cm.nv)),
        "dof_armature": f32(cm.dof_armature * rng.uniform(0.5, 1.5, cm.nv)),
        "jnt_stiffness": f32(cm.dof_stiffness * rng.uniform(0.5, 1.5, cm.nv)),
        "actuator_gear": f32(cm.act_gear * rng.uniform(0.8, 1.2, cm.nu)),
        "gravity": f32(cm.gravity3 * rng.uniform(0.9, 1.1)),
        "forward_reward_weight": f32(rng.uniform(0.5, 2.0)),
        "ctrl_cost_weight": f32(rng.uniform(0.05, 0.2)),
        "reset_noise_scale": f32(rng.uniform(0.05, 0.15)),
    }


def random_action(rng: np.random.Generator) -> np.ndarray:
    # float32 values, so the reference (float64) and the translation get the same numbers.
    return rng.uniform(-1.0, 1.0, 6).astype(np.float32)


def scripted_policy(obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Pump energy into the legs (push each joint the way it already moves) with 30% noise:
    joints slam into their limits, the body bounces and sometimes flips over."""
    joint_vel = obs[11:17]  # qvel of the six leg joints
    a = np.sign(joint_vel) + 0.3 * rng.normal(size=6)
    return np.clip(a, -1.0, 1.0).astype(np.float32)


def perturb(state: RefState, rng: np.random.Generator) -> RefState:
    """Nudge a visited state; sometimes press it into the floor, flip it, drive joints past
    their limits, spin it fast, or put it one step from truncation."""
    qpos = np.array(state["qpos"], np.float64)
    qvel = np.array(state["qvel"], np.float64) + rng.normal(0, 0.5, 9)
    qpos[1:] += rng.normal(0, 0.05, 8)
    kind = rng.integers(5)
    if kind == 0:
        qpos[1] -= rng.uniform(0.0, 0.3)
    elif kind == 1:
        qpos[2] = rng.uniform(-np.pi, np.pi)
        qpos[1] = rng.uniform(-0.5, 0.1)
    elif kind == 2:
        lo = np.array([-0.52, -0.785, -0.4, -1.0, -1.2, -0.5])
        hi = np.array([1.05, 0.785, 0.785, 0.7, 0.87, 0.5])
        side = rng.integers(2, size=6)
        qpos[3:] = np.where(side == 0, lo - rng.uniform(0, 0.1, 6), hi + rng.uniform(0, 0.1, 6))
    elif kind == 3:
        qvel += rng.normal(0, 4, 9)
    out = {"qpos": qpos, "qvel": qvel, "time": np.int32(state["time"])}
    if rng.random() < 0.2:
        out["time"] = np.int32(999)
    return out


def state_bins(state: RefState) -> tuple:
    qpos, qvel = state["qpos"], state["qvel"]
    return (int(np.clip(np.floor(qpos[1] / 0.1), -6, 6)),
            int(np.floor(((qpos[2] + np.pi) % (2 * np.pi)) / (np.pi / 4))),
            int(np.clip(np.floor(qvel[0] / 2), -5, 5)),
            int(np.sum(np.abs(qvel[3:]) > 10)),
            int(state["time"] // 250))


def reference_resets(n: int, seed: int) -> dict[str, np.ndarray]:
    ref = _make_reference()
    qpos, qvel = [], []
    for i in range(n):
        ref.reset(derive_seed(seed, i))
        s = ref.get_state()
        qpos.append(s["qpos"])
        qvel.append(s["qvel"])
    ref.close()
    q, v = np.asarray(qpos), np.asarray(qvel)
    out = {f"qpos[{j}]": q[:, j] for j in range(q.shape[1])}
    out.update({f"qvel[{j}]": v[:, j] for j in range(v.shape[1])})
    return out


def translation_resets(n: int, seed: int) -> dict[str, np.ndarray]:
    import jax

    env = _make()
    states, _ = jax.jit(jax.vmap(env.reset))(jax.random.split(derive_key(seed), n))
    q, v = np.asarray(states.qpos), np.asarray(states.qvel)
    out = {f"qpos[{j}]": q[:, j] for j in range(q.shape[1])}
    out.update({f"qvel[{j}]": v[:, j] for j in range(v.shape[1])})
    return out


def _throughput(batch_sizes: list[int], steps: int) -> list[dict[str, Any]]:
    """Gymnasium's HalfCheetah-v5 at each batch size up to 1,024: one process looping over the
    environments, and an AsyncVectorEnv with one worker per core (vector_reference.py); each row
    ``steps`` env-steps or 2 s, whichever ends first."""
    from envport.envs.halfcheetah.vector_reference import gymnasium_throughput

    return gymnasium_throughput(batch_sizes, steps, seconds=2.0, max_batch=1024)


# Performance peers for ``envport bench halfcheetah`` (speed only, never references).
_PEERS = {"mjx": lazy("envport.bench.peers:mjx_env"), "brax": lazy("envport.bench.peers:brax_env"),
          "envpool": lazy("envport.bench.peers:envpool_halfcheetah")}


# L1 component checks, one per pipeline stage (checks.STAGES), imported when they run.
STAGES = ("kinematics", "mass_matrix", "bias_forces", "passive_forces", "actuation", "contacts",
          "constraints", "solver")


def _stage_check(stage: str):
    def run() -> None:
        from envport.envs.halfcheetah.checks import check_stage

        check_stage(stage)

    return run


FLOAT32_NOTE = (
    "float32 translation vs MuJoCo's float64. L1: every physics stage (kinematics, mass matrix, "
    "bias, passive, actuator forces, contacts, constraint rows, solver) matches MuJoCo within "
    "1e-5 relative in float64 mode (checks.py). One step (5 MuJoCo steps): positions within "
    "1e-4 + 1e-4 relative; velocities, obs and reward within 1e-4 + 1e-4 relative to the "
    "step's largest element (normwise; measured: 3e-6 median, 3.7e-4 worst absolute, 5.4e-5 "
    "worst normwise over 1,000 hard states; a float32 state alone costs up to 3e-4 there). "
    "Rollouts: ten times the largest divergence "
    "of three copies of MuJoCo carrying float32 rounding at every stage of every MuJoCo step "
    "(2 float32 ulps of jitter, then rounded to float32; the constraint force's rounding "
    "relative to its cancelling terms), never less than the one-step tolerance, up to the "
    "lockstep horizon where that envelope reaches 1e-3: HalfCheetah is chaotic (errors grow "
    "about x1.6 per env step), so no float32 implementation, MuJoCo's own included, stays in "
    "lockstep for long: the horizon is 0-15 steps, and the translation itself stays within "
    "1e-3 of MuJoCo for 17-18 steps (median).")

FLOAT64_NOTE = (
    "float64 translation (JAX x64) vs MuJoCo's float64. One step: atol 1e-8 + rtol 1e-8 (the "
    "pipeline lands ~1e-12 from MuJoCo; MuJoCo's solver stops at a scaled gradient of 1e-8); "
    "obs and reward are compared after a float32 cast (one float32 rounding). Rollouts: ten "
    "times the divergence of MuJoCo copies jittered by 4 float64 ulps at every stage of every "
    "MuJoCo step, never less than the one-step tolerance, up to the horizon where it reaches "
    "1e-3 (44-114 steps).")


def variant(dtype: str = "float32", checked: bool = False) -> EnvSpec:
    """The spec of another mode: ``dtype="float64"`` (needs JAX x64) or ``checked=True``."""
    import jax.numpy as jnp

    dt = jnp.dtype(dtype)
    spec = SPEC
    if dt == jnp.float64:
        cast = {"obs": FLOAT64_CAST_TOLERANCE, "reward": FLOAT64_CAST_TOLERANCE}
        spec = dataclasses.replace(
            SPEC, make_bridge=lambda **kw: _make_bridge(dtype=dt, **kw),
            verification=dataclasses.replace(
                SPEC.verification, tolerance=FLOAT64_TOLERANCE, field_tolerance=cast,
                tolerance_note=FLOAT64_NOTE, make_perturbed_reference=_perturbed_float64))

    def make(**kw: Any):
        return _make(dtype=dt, checked=bool(checked), **kw)

    return dataclasses.replace(spec, make=make)


# CleanRL's MuJoCo PPO (ppo_continuous_action.py: lr 3e-4, 10 epochs of 32 minibatches, gamma
# 0.99, GAE 0.95, clip 0.2, no entropy bonus, 64x64 tanh MLPs, state-independent log std)
# batched PureJaxRL-style for 2 CPU cores: 32 envs x 128 steps = 4,096 steps per update
# (minibatches of 128), ~244 updates in 1M steps. Brax/PureJaxRL's 2,048 envs x 10 steps suit an
# accelerator; on 2 cores a 20k-step batch per update would make updates rare, and the reference
# steps its envs in a Python loop whatever their number. Measured on the shared 2-core machine
# (load ~6): 100k steps take ~23 s of training on either backend (+18 s compile reference, +130
# s JAX). envport's PPO normalises neither observations nor rewards (CleanRL and Brax do both
# for MuJoCo), so learning is slower than their curves; both backends share that, which is what
# L4 compares.
PPO = PPOConfig(
    num_envs=32, num_steps=128, total_steps=1_000_000, lr=3e-4, anneal_lr=True,
    update_epochs=10, num_minibatches=32, ent_coef=0.0, hidden_sizes=(64, 64))

# The rollout-distribution layer (envport.verify.rollout_distribution.Settings): N episodes per
# side and policy over the whole 1,000-step episode in 2 windows of 500 steps. The observation
# leaves out the x position; the layer adds it (state.qpos[0]).
# Besides the random and scripted policies, an open-loop gait (``gait_policy``): the random and
# scripted episodes are chaotic, their summaries spread widely, and the feet slide too little for
# a 2% change of the friction coefficient to move any of them past that spread (docs/
# rollout_distribution.md).
GAIT_PHASES = np.array([0.0, 1.0, 2.0, np.pi, np.pi + 1.0, np.pi + 2.0])
GAIT_PERIOD = 20  # steps (1 s)
GAIT_AMPLITUDE = 0.7
GAIT_NOISE = 0.05


def gait_policy(obs: np.ndarray, rng: np.random.Generator, t: int) -> np.ndarray:
    """An open-loop trot for the rollout-distribution layer: every joint driven by a 1 Hz sine
    of amplitude 0.7, the three joints of a leg 1 rad apart in phase and the legs in antiphase,
    plus 5% Gaussian noise (each side's own draws). Within the first few hundred steps the
    cheetah rolls over and settles on its back, resting on its soft contacts while its legs
    wave: a nearly fixed posture whose height (qpos[1]) varies by about 2e-6 between episodes.
    The contacts' pyramidal friction cones (edges n +- mu t) set how deep the body rests, so
    that height moves with the friction coefficient, about 1.4e-5 per 1% of it (measured on
    the reference, 16 episodes per side)."""
    a = GAIT_AMPLITUDE * np.sin(2 * np.pi * t / GAIT_PERIOD + GAIT_PHASES)
    return np.clip(a + GAIT_NOISE * rng.normal(size=6), -1.0, 1.0).astype(np.float32)


ROLLOUT_DISTRIBUTION = {
    "episodes": 100, "windows": 2, "effect": 0.8,
    "obs_names": (*(f"qpos[{j}]" for j in range(1, 9)), *(f"qvel[{j}]" for j in range(9))),
    "policies": ("random", "scripted", "gait"),
    "named": {"gait": gait_policy},
}


SPEC = EnvSpec(
    name="halfcheetah",
    summary="MuJoCo HalfCheetah-v5: planar rigid bodies, soft contacts, Newton solver, in JAX",
    # L1 stages, L2 and L3 (float32 and float64, 100 episodes on seeds 0 and 1) pass; L4 shows
    # sim-to-sim equivalence, not train-backend equivalence at 5 seeds (README.md, L4).
    status="L1, L2, L3 (float32 and float64) pass; L4 sim-to-sim equivalent, train-backend "
           "not shown (5 seeds)",
    reference="gymnasium 1.4.0 HalfCheetah-v5 on mujoco 4.0.0 (C, float64)",
    make=_make,
    make_reference=_make_reference,
    make_bridge=_make_bridge,
    verification=Verification(
        tolerance=FLOAT32_TOLERANCE,
        field_tolerance=FLOAT32_FIELDS,
        tolerance_note=FLOAT32_NOTE,
        scripted_policy=scripted_policy,
        random_action=random_action,
        perturb=perturb,
        state_bins=state_bins,
        sample_params=sample_params,
        max_rollout_steps=1000,
        make_perturbed_reference=_perturbed_float32,
        sample_reference_events=reference_resets,
        sample_translation_events=translation_resets,
        components={stage: _stage_check(stage) for stage in STAGES},
        rollout_distribution=ROLLOUT_DISTRIBUTION,
    ),
    benchmark=Benchmark(reference_throughput=_throughput, peers=_PEERS,
                        batch_sizes=(1, 8, 64, 512, 1024, 4096, 8192)),
    training=Training(
        ppo=PPO, margin=100.0,
        margin_note="the paper's margin; trained returns on 2 CPU cores are in the thousands",
        make_vector_reference=lazy("envport.envs.halfcheetah.vector_reference:make"),
    ),
    options={
        "dtype": Option("float32", "float64 verifies the physics at MuJoCo's own precision "
                                   "(run with JAX_ENABLE_X64=1)", choices=("float32", "float64")),
        "checked": Option(False, "flag and raise on non-finite states", kind="bool"),
    },
    variant=variant,
)
