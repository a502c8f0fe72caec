"""CartPole: Gymnasium's CartPole-v1 (the reference) and its JAX translation."""

from __future__ import annotations

from typing import Any

import numpy as np

from envport.core.reference import RefState
from envport.core.registry import (
    Benchmark,
    EnvSpec,
    Tolerance,
    Training,
    Verification,
    lazy,
)
from envport.core.seeds import derive_key, derive_seed
from envport.train.config import PPOConfig

# One float32 step of ~20 dependent operations from float64-exact inputs: rounding error is a few
# float32 ulps (1.2e-7 relative each); 1e-5 relative leaves a 4x margin over 20 ulps.
STEP_TOLERANCE = Tolerance(atol=1e-6, rtol=1e-5)


_make = lazy("envport.envs.cartpole.jax_env:CartPole")
_make_reference = lazy("envport.envs.cartpole.reference:CartPoleReference")
_make_bridge = lazy("envport.envs.cartpole.bridge:CartPoleBridge")


def _make_perturbed_reference(copy: int = 0):
    return _make_reference(float32_noise=True, noise_seed=copy)


def scripted_policy(obs: np.ndarray, rng: np.random.Generator) -> int:
    """A balancing controller with 10% random actions: long episodes that reach truncation."""
    if rng.random() < 0.1:
        return int(rng.integers(2))
    x, x_dot, theta, theta_dot = obs
    return int(theta + 0.5 * theta_dot + 0.01 * x + 0.05 * x_dot > 0)


def sample_params(rng: np.random.Generator) -> dict[str, Any]:
    """One random non-default CartPole param set (domain randomisation): gravity and force
    U(5, 15), each mass and the pole length scaled by U(0.5, 2). Every key is a ``CartPoleParams``
    field, accepted alike by ``envport.make("cartpole", **p)`` and
    ``CartPoleReference(params=p)``."""
    return {
        "gravity": float(rng.uniform(5.0, 15.0)),
        "masscart": 1.0 * float(rng.uniform(0.5, 2.0)),
        "masspole": 0.1 * float(rng.uniform(0.5, 2.0)),
        "length": 0.5 * float(rng.uniform(0.5, 2.0)),
        "force_mag": float(rng.uniform(5.0, 15.0)),
    }


def random_action(rng: np.random.Generator) -> int:
    return int(rng.integers(2))


def perturb(state: RefState, rng: np.random.Generator) -> RefState:
    """Nudge a visited state, or (half the time) throw the cart and pole near the thresholds,
    which the policies rarely reach but where termination is decided."""
    out = dict(state)
    for k, scale in (("x", 0.2), ("x_dot", 0.3), ("theta", 0.03), ("theta_dot", 0.3)):
        out[k] = np.float64(state[k] + rng.normal(0, scale))
    if rng.random() < 0.5:
        out["x"] = np.float64(rng.uniform(-2.6, 2.6))
        out["theta"] = np.float64(rng.uniform(-0.25, 0.25))
    if rng.random() < 0.2:
        out["time"] = np.int32(499)  # one step from truncation
    return out


def state_bins(state: RefState) -> tuple:
    return (
        int(np.clip(np.floor(state["x"] / 0.5), -5, 5)),
        int(np.clip(np.floor(state["theta"] / 0.05), -5, 5)),
        int(np.clip(np.floor(state["theta_dot"] / 0.5), -5, 5)),
        int(state["time"] // 100),
    )


def reference_resets(n: int, seed: int) -> dict[str, np.ndarray]:
    ref = _make_reference()
    states = []
    for i in range(n):
        ref.reset(derive_seed(seed, i))
        s = ref.get_state()
        states.append([s[k] for k in ("x", "x_dot", "theta", "theta_dot")])
    arr = np.asarray(states)
    return {k: arr[:, j] for j, k in enumerate(("x", "x_dot", "theta", "theta_dot"))}


def translation_resets(n: int, seed: int) -> dict[str, np.ndarray]:
    import jax

    env = _make()
    states, _ = jax.vmap(env.reset)(jax.random.split(derive_key(seed), n))
    return {k: np.asarray(getattr(states, k)) for k in ("x", "x_dot", "theta", "theta_dot")}


def _throughput(batch_sizes: list[int], steps: int) -> list[dict[str, Any]]:
    from envport.envs.cartpole.reference import gymnasium_throughput

    return gymnasium_throughput(batch_sizes, steps)


# PureJaxRL's CartPole-v1 settings (the PPO paper's defaults with 4 x 128 batches).
PPO = PPOConfig(
    num_envs=4, num_steps=128, total_steps=500_000, lr=2.5e-4, anneal_lr=True,
    update_epochs=4, num_minibatches=4, ent_coef=0.01, hidden_sizes=(64, 64))

# The return is the episode length, capped at 500; PPO policies reach 475-500. 25 steps is 5% of
# the cap; a policy that fails 25 steps earlier on average is a different policy, a difference
# of a few steps is not (5 converged PPO seeds evaluated on the reference span ~12: 482.6 to
# 494.3 in one measured run).
MARGIN_NOTE = "25 steps, 5% of the 500-step cap (5 converged PPO seeds span ~12)"


def termination_cause(state: RefState) -> str:
    """Why a CartPole episode terminated: the cart left the track or the pole fell."""
    return "cart out of bounds" if abs(float(state["x"])) > 2.4 else "pole fell"


# The rollout-distribution layer (envport.verify.rollout_distribution.Settings): N episodes per
# side and policy over the whole 500-step horizon in 5 windows of 100 steps (300 reach the
# target effect d=0.5 at the ~200 tests' Holm threshold).
ROLLOUT_DISTRIBUTION = {
    "episodes": 300, "windows": 5, "effect": 0.5,
    "obs_names": ("x", "x_dot", "theta", "theta_dot"),
    "termination_cause": termination_cause,
}


SPEC = EnvSpec(
    name="cartpole",
    summary="Classic cart-pole balancing, the smallest complete example",
    reference="gymnasium 1.4.0 CartPole-v1 (Python, float64)",
    make=_make,
    make_reference=_make_reference,
    make_bridge=_make_bridge,
    verification=Verification(
        rollout_distribution=ROLLOUT_DISTRIBUTION,
        tolerance=STEP_TOLERANCE,
        tolerance_note=(
            "float32 translation vs float64 reference. One step: atol 1e-6 + rtol 1e-5 (a few "
            "float32 ulps over ~20 dependent operations, 4x margin). Rollouts: ten times the "
            "largest divergence of three copies of the reference jittered by 4 float32 ulps and "
            "rounded to float32 after every step (a calibrated envelope), never less than the "
            "one-step tolerance, compared up to the lockstep horizon where that envelope "
            "reaches 1e-3 (CartPole is unstable: errors grow about e^(3.8 t), so no float32 "
            "port stays in lockstep for a whole 500-step episode)."
        ),
        scripted_policy=scripted_policy,
        random_action=random_action,
        perturb=perturb,
        state_bins=state_bins,
        sample_params=sample_params,
        max_rollout_steps=500,
        make_perturbed_reference=_make_perturbed_reference,
        sample_reference_events=reference_resets,
        sample_translation_events=translation_resets,
        equivalent_mutants=lazy("envport.envs.cartpole.mutants:known_equivalent"),
    ),
    # Performance peers (speed only, never references): gymnax's JAX CartPole and EnvPool's
    # C++ one, from batch 1 to 65,536 (Gymnasium's vector env up to 4,096).
    benchmark=Benchmark(
        reference_throughput=_throughput,
        peers={"gymnax": lazy("envport.bench.peers:gymnax_cartpole"),
               "envpool": lazy("envport.bench.peers:envpool_cartpole")},
        batch_sizes=(1, 64, 1024, 4096, 16384, 65536)),
    training=Training(
        ppo=PPO, margin=25.0, margin_note=MARGIN_NOTE,
        make_vector_reference=lazy("envport.envs.cartpole.vector_reference:make"),
    ),
)
