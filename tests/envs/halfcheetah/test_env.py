"""HalfCheetah: the reference adapter, the task, bad input, and L2 in float32 and float64."""

import warnings

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import envport
from envport.core.spaces import InvalidActionError
from envport.envs.halfcheetah import SPEC, model, variant
from envport.envs.halfcheetah.jax_env import HalfCheetah, HalfCheetahState, UnstableSimulationError
from envport.envs.halfcheetah.reference import HalfCheetahReference
from envport.verify import verify


@pytest.fixture(scope="module")
def ref():
    r = HalfCheetahReference()
    yield r
    r.close()


def test_reference_state_round_trip_and_tape(ref):
    obs = ref.reset(3)
    tape = ref.tape()
    assert np.all(np.abs(tape["qpos_noise"]) <= 0.1) and tape["qvel_noise"].shape == (9,)
    s = ref.get_state()
    a = np.full(6, 0.5, np.float32)
    out1 = ref.step(a)
    assert ref.tape() == {}  # a step draws nothing
    s1 = ref.get_state()
    ref.set_state(s)
    out2 = ref.step(a)
    np.testing.assert_array_equal(out1[0], out2[0])
    np.testing.assert_array_equal(ref.get_state()["qpos"], s1["qpos"])
    assert obs.shape == (17,) and int(s1["time"]) == 1


def test_rounded_mj_step_without_jitter_is_mj_step():
    """L3's perturbed copies run mj_step stage by stage; with no jitter and no rounding the stages
    must be MuJoCo's own step, bit for bit (so only the rounding differs)."""
    from envport.envs.halfcheetah.reference import rounded_mj_step

    a, b = HalfCheetahReference(), HalfCheetahReference()
    a.reset(7)
    b.reset(7)
    rng = np.random.default_rng(0)
    for _ in range(200):  # through contacts and limits
        ctrl = rng.uniform(-1, 1, 6)
        a.data.ctrl[:] = ctrl
        b.data.ctrl[:] = ctrl
        mujoco.mj_step(a.model, a.data)
        rounded_mj_step(b.model, b.data, rng, 0.0, False)
        np.testing.assert_array_equal(a.data.qpos, b.data.qpos)
        np.testing.assert_array_equal(a.data.qvel, b.data.qvel)
    a.close()
    b.close()


def test_float32_copy_rounds_every_step_and_differs_by_noise_seed():
    copies = [SPEC.verification.make_perturbed_reference(copy=i) for i in range(2)]
    for c in copies:
        c.reset(3)
    for _ in range(5):
        for c in copies:
            c.step(np.full(6, 0.5, np.float32))
    q = [c.get_state()["qvel"] for c in copies]
    for v in q:  # the state a float32 implementation holds
        np.testing.assert_array_equal(v, v.astype(np.float32).astype(np.float64))
    assert not np.array_equal(q[0], q[1])
    for c in copies:
        c.close()


def test_reference_rejects_malformed_actions(ref):
    ref.reset(0)
    for bad in (np.zeros(5, np.float32), np.zeros(6, np.int32), np.full(6, np.nan)):
        with pytest.raises(InvalidActionError):
            ref.step(bad)


def test_make_and_spaces():
    env = envport.make("halfcheetah")
    assert env.observation_space().shape == (17,) and env.action_space().shape == (6,)
    state, obs = jax.jit(env.reset)(jax.random.key(0))
    assert obs.dtype == jnp.float32 and state.qpos.shape == (9,)
    assert np.all(np.abs(np.asarray(state.qpos)) <= 0.1)


def test_float64_needs_x64():
    with pytest.raises(RuntimeError, match="x64"):
        HalfCheetah(dtype=jnp.float64)


def test_checked_mode_flags_and_raises_on_a_nan_state():
    env = HalfCheetah(checked=True)
    bad = HalfCheetahState(jnp.full(9, jnp.nan, jnp.float32), jnp.zeros(9, jnp.float32),
                           jnp.zeros((), jnp.int32))
    with pytest.raises(UnstableSimulationError, match="NaN or exploding"):
        env.transition(bad, jnp.zeros(6), ())
    res = jax.jit(lambda s: env.transition(s, jnp.zeros(6), ()))(bad)  # under jit: a flag
    assert bool(res.info["bad_state"])
    with pytest.raises(UnstableSimulationError):
        HalfCheetah.check(res)


def test_version_mismatch_warns_with_the_verified_versions(monkeypatch):
    import mujoco

    monkeypatch.setattr(mujoco, "__version__", "3.0.0")
    with pytest.warns(model.VersionWarning, match="verified against mujoco 4.0.0 and "
                                                 "gymnasium 1.4.0"):
        model.check_versions()


def test_model_assumptions_are_checked():
    import mujoco

    with model.mujoco_warnings_to_python(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = mujoco.MjModel.from_xml_path(model.xml_path())
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    with pytest.raises(model.UnsupportedModelError, match="Euler"):
        model.from_mjmodel(m)


def test_interaction_float32():
    report = verify("halfcheetah", ("interaction",), states=60)
    assert report.passed, report.to_prompt()


@pytest.mark.slow  # 25 s; test_interaction_float32 stays in the default suite
def test_interaction_float64():
    with jax.enable_x64(True):
        report = verify(variant(dtype="float64"), ("interaction",), states=40)
    assert report.passed, report.to_prompt()
    assert report.layers["interaction"].counts["states"] == 40


@pytest.mark.slow
def test_full_equivalence_float32():
    report = verify(SPEC, episodes=100, states=1000, examples=10)
    assert report.passed, report.to_prompt()


@pytest.mark.slow
def test_rollouts_float64():
    with jax.enable_x64(True):
        report = verify(variant(dtype="float64"), ("interaction", "rollout"), episodes=100,
                        states=1000)
    assert report.passed, report.to_prompt()


# Met while training PPO (L4): a flipped cheetah whose foot capsule, three MuJoCo steps into
# this env step, stands exactly along the floor normal in float32. The contact frame's tangent
# was 0/0 there (mju_normalize3 gives (1, 0, 0)), and the NaN row poisoned the whole solve.
VERTICAL_CAPSULE_STATE = {
    "qpos": [2.7948150634765625, -0.5325288772583008, 3.342841386795044, 0.05284534767270088,
             0.4203139841556549, -0.3759889602661133, -0.5044183731079102,
             -0.12001117318868637, -0.0911363884806633],
    "qvel": [0.7704798579216003, 1.4754220247268677, 1.3719993829727173, 9.390217781066895,
             15.569419860839844, 3.8080384731292725, -14.72455883026123, -16.722644805908203,
             -10.014274597167969],
    "action": [0.3454660475254059, 0.3141903281211853, 0.4656583368778229, -1.0,
               -0.2684250771999359, -1.0],
}


def test_a_capsule_along_the_floor_normal_steps_like_mujoco(ref):
    s = VERTICAL_CAPSULE_STATE
    ref.reset(0)
    ref.set_state({"qpos": np.array(s["qpos"]), "qvel": np.array(s["qvel"]), "time": 85})
    expected = ref.step(np.array(s["action"]))[0]
    env = HalfCheetah()
    state = HalfCheetahState(jnp.asarray(s["qpos"], jnp.float32),
                             jnp.asarray(s["qvel"], jnp.float32), jnp.int32(85))
    got = np.asarray(jax.jit(lambda st, a: env.transition(st, a, ()).obs)(
        state, jnp.asarray(s["action"], jnp.float32)))
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, expected, atol=1e-4 + 1e-4 * np.abs(expected).max())


def test_the_contact_frame_of_a_capsule_along_the_normal_is_mujocos_default():
    from envport.envs.halfcheetah import physics
    from envport.envs.halfcheetah.model import cheetah_model

    cm = cheetah_model()
    kin = physics.kinematics(cm, jnp.zeros(9, jnp.float32))
    normal = jnp.asarray(cm.floor_normal, jnp.float32)
    con = physics.contacts(cm, kin._replace(cap_axis=kin.cap_axis.at[2].set(normal)))
    np.testing.assert_array_equal(np.asarray(con.tangent[4:6]), [[1.0, 0.0], [1.0, 0.0]])
    assert np.isfinite(np.asarray(con.tangent)).all()


@pytest.mark.slow  # 24 s; two devices stay in tests/train and tests/scale
def test_the_step_runs_split_over_two_devices():
    """The bench (and PPO on several devices) runs the physics under shard_map: every loop
    carry must vary over the devices like the data (a constant-initialised one fails to trace
    there, not on one device). 514 environments: 257 per device, stepped as two chunks of 129
    (jax_env.CHUNK), the last padded."""
    import os
    import subprocess
    import sys

    code = ("import envport\n"
            "from envport.bench.throughput import jax_throughput\n"
            "rows = jax_throughput(envport.make('halfcheetah'), [514], steps=2, repeats=1, "
            "device_counts=(2,))\n"
            "print('devices', rows[0]['devices'], rows[0]['steps_per_second'] > 0)\n")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "devices 2 True" in out.stdout
