"""PPO training on both backends: tiny runs, exact resumption, matched hyperparameters, bad input.

Problem sizes are tiny (4 CartPole envs, 8-step rollouts, 4 updates) and every run shares one
configuration, so the compiled programs are built once per backend and reused (``program``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest

from envport.core.registry import UnknownEnvironmentError
from envport.train import assert_matched, evaluate, load_params, read_log, resume, train
from envport.train.run import CHECKPOINT_FILE, CONFIG_FILE, LOG_FIELDS, PLOT_FILE

TINY = {"num_steps": 8, "num_minibatches": 2, "update_epochs": 2}
UPDATES = 4
STEPS = 4 * 8 * UPDATES  # 4 envs (CartPole's default) x 8 steps x 4 updates
REPO = Path(__file__).resolve().parents[2]


def tiny_train(backend: str, out: Path, **kwargs):
    return train("cartpole", backend, steps=STEPS, seed=7, out=out, config_overrides=TINY,
                 progress=False, chunk_updates=2, **kwargs)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("runs")
    return {b: tiny_train(b, root / b) for b in ("jax", "reference")}


def same_params(a, b) -> bool:
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return len(la) == len(lb) and all(np.array_equal(x, y) for x, y in zip(la, lb, strict=True))


@pytest.mark.parametrize("backend", ["jax", "reference"])
def test_tiny_run_writes_log_checkpoint_and_plot(runs: dict, backend: str) -> None:
    result = runs[backend]
    run_dir = result.run_dir
    assert not result.interrupted
    assert (result.updates, result.env_steps) == (UPDATES, STEPS)
    rows = read_log(run_dir)
    assert [int(r["update"]) for r in rows] == list(range(1, UPDATES + 1))
    assert list(rows[0]) == list(LOG_FIELDS)
    assert all(np.isfinite(r["policy_loss"]) and r["sps"] > 0 for r in rows)
    assert sum(r["episodes"] for r in rows) > 0  # 128 random CartPole steps end some episodes
    assert (run_dir / CHECKPOINT_FILE).is_file() and (run_dir / PLOT_FILE).is_file()
    config = json.loads((run_dir / CONFIG_FILE).read_text())
    assert (config["env"], config["backend"], config["ppo"]["num_steps"]) == (
        "cartpole", backend, 8)
    _, params = load_params(run_dir)
    assert same_params(params, result.params)


@pytest.mark.parametrize("backend", ["jax", "reference"])
def test_resume_after_ctrl_c_continues_exactly(runs: dict, backend: str,
                                               tmp_path: Path) -> None:
    def ctrl_c_after_first_chunk(row: dict) -> None:
        if row["update"] == 2:
            os.kill(os.getpid(), signal.SIGINT)  # the real Ctrl-C path

    stopped = tiny_train(backend, tmp_path, on_chunk=ctrl_c_after_first_chunk)
    assert stopped.interrupted and stopped.updates == 2
    assert len(read_log(tmp_path)) == 2
    resumed = resume(tmp_path, progress=False)
    assert not resumed.interrupted and resumed.updates == UPDATES
    assert same_params(resumed.params, runs[backend].params)
    cols = ("mean_return", "episodes", "policy_loss", "value_loss", "entropy", "approx_kl")
    full, cont = read_log(runs[backend].run_dir), read_log(tmp_path)
    for col in cols:
        np.testing.assert_array_equal([r[col] for r in cont], [r[col] for r in full])


def test_matched_hyperparameters_are_enforced(runs: dict, tmp_path: Path) -> None:
    # Backends may differ (that is the comparison); hyperparameters may not.
    assert len(assert_matched(runs["jax"].run_dir, runs["reference"].run_dir)) == 2
    other = tmp_path / "other"
    shutil.copytree(runs["reference"].run_dir, other)
    config = json.loads((other / CONFIG_FILE).read_text())
    config["ppo"]["lr"] = 1e-3
    (other / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"hyperparameters differ.*ppo\.lr"):
        assert_matched(runs["jax"].run_dir, other)
    # Resuming with another hyperparameter is refused too.
    with pytest.raises(ValueError, match=r"matched hyperparameters are enforced.*ent_coef"):
        train("cartpole", "jax", steps=STEPS, seed=7, out=runs["jax"].run_dir,
              config_overrides={**TINY, "ent_coef": 0.0}, resume=True, progress=False)


def test_bad_inputs_raise_clear_errors(runs: dict, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown backend 'gpu'"):
        train("cartpole", "gpu", out=tmp_path / "a")
    with pytest.raises(ValueError, match="less than one batch"):
        train("cartpole", "jax", steps=31, out=tmp_path / "b", config_overrides=TINY)
    with pytest.raises(ValueError, match="unknown PPO hyperparameter 'learning_rate'"):
        train("cartpole", "jax", out=tmp_path / "c", config_overrides={"learning_rate": 1.0})
    with pytest.raises(UnknownEnvironmentError):
        train("nope", "jax", out=tmp_path / "d")
    with pytest.raises(ValueError, match="already holds a run"):
        tiny_train("jax", runs["jax"].run_dir)
    with pytest.raises(ValueError, match=r"no checkpoint|not a training run"):
        train("cartpole", "jax", out=tmp_path / "empty", resume=True)
    # A checkpoint from another environment.
    with pytest.raises(ValueError, match="holds a run of 'cartpole', not 'pong'"):
        train("pong", "jax", out=runs["jax"].run_dir, resume=True)
    with pytest.raises(ValueError, match="holds a policy for 'cartpole'"):
        evaluate("pong", "jax", runs["jax"].run_dir, episodes=1)
    with pytest.raises(ValueError, match="unknown backend"):
        evaluate("cartpole", "c++", runs["jax"].run_dir, episodes=1)


def test_evaluate_on_both_backends(runs: dict) -> None:
    for backend in ("jax", "reference"):
        returns = evaluate("cartpole", backend, runs["jax"].run_dir, episodes=4, seed=1)
        assert returns.shape == (4,) and np.all((returns >= 1) & (returns <= 500))
    again = evaluate("cartpole", "reference", runs["jax"].run_dir, episodes=4, seed=1)
    np.testing.assert_array_equal(again, returns)  # seeded: reproducible
    # Parameters instead of a run directory (the network from the environment's config).
    from_params = evaluate("cartpole", "reference", runs["jax"].params, episodes=4, seed=1)
    np.testing.assert_array_equal(from_params, returns)


TWO_DEVICES = textwrap.dedent("""
    import dataclasses, jax, numpy as np, optax
    from envport.train import train
    from envport.train import ppo
    from envport.train.config import PPOConfig
    from envport.train.program import program
    assert len(jax.devices()) == 2, jax.devices()
    tiny = {"num_steps": 8, "num_minibatches": 2, "update_epochs": 2}
    for backend in ("jax", "reference"):
        r = train("cartpole", backend, steps=128, out=f"{OUT}/{backend}", config_overrides=tiny,
                  progress=False)
        assert r.updates == 4 and np.isfinite(r.final_mean_return), r
    prog = program("cartpole", {}, dataclasses.replace(CARTPOLE_TINY, **tiny))
    runner = prog.init_runner(0)
    assert len(runner.obs.sharding.device_set) == 2  # the env batch is split over both
    # The same PPO update on 1 and on 2 devices (SGD, so a doubled gradient would show):
    # one minibatch and one epoch, so the shuffle only reorders a mean.
    cfg = dataclasses.replace(prog.cfg, num_minibatches=1, update_epochs=1)
    rng = np.random.default_rng(0)
    t, n = 8, 4
    f32 = np.float32
    traj = ppo.Transition(rng.normal(size=(t, n, 4)).astype(f32), rng.random((t, n)) < 0.1,
                          rng.integers(0, 2, (t, n)).astype(np.int32), np.full((t, n), -0.69, f32),
                          rng.normal(size=(t, n)).astype(f32), np.ones((t, n), f32),
                          rng.random((t, n)) < 0.1)
    zeros = np.zeros((n, 1), f32)
    last = (traj.obs[-1], traj.done[-1], zeros, zeros)
    P = jax.sharding.PartitionSpec
    out = []
    for devices in (jax.devices()[:1], jax.devices()):
        mesh = jax.sharding.Mesh(np.array(devices), ("batch",))
        learn = ppo.make_learn(prog.policy, cfg, optax.sgd(0.1))
        train_state = ppo.TrainState(runner.train.params, optax.sgd(0.1).init(runner.train.params))
        train_state = jax.device_get(train_state)
        fn = jax.jit(jax.shard_map(learn, mesh=mesh, check_vma=False,
            in_specs=(P(), P(None, "batch"), P("batch"), P("batch"), P("batch"), P("batch"), P()),
            out_specs=(P(), P())))
        new, stats = fn(train_state, traj, *last, jax.random.key(1))
        out.append(jax.device_get(new.params))
    for a, b in zip(jax.tree_util.tree_leaves(out[0]), jax.tree_util.tree_leaves(out[1])):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    print("OK")
""")


def test_two_devices_in_a_subprocess(tmp_path: Path) -> None:
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
           "JAX_PLATFORMS": "cpu"}
    script = f"OUT = {str(tmp_path)!r}\n" + TWO_DEVICES.replace(
        "CARTPOLE_TINY", "PPOConfig(total_steps=128)")
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "OK" in done.stdout, done.stderr[-3000:]


def test_pong_training_is_identical_on_both_backends(tmp_path: Path) -> None:
    """Pong's translation reproduces the C reference's draws, so with the reference batch's
    seeds (backends.seeded_reset) and the same key schedule (Program.host_keys), PPO on the
    JAX backend and PPO on the reference backend are the same computation: bit-identical
    parameters and logs after several updates. A translation that differed anywhere the
    policy's games reach would break this."""
    overrides = {"num_envs": 8, "num_steps": 32, "num_minibatches": 2, "update_epochs": 2}
    steps = 8 * 32 * 6
    for backend in ("jax", "reference"):
        train("pong", backend, steps=steps, seed=3, out=tmp_path / backend, progress=False,
              config_overrides=overrides)
    (_, a), (_, b) = load_params(tmp_path / "jax"), load_params(tmp_path / "reference")
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    log_a, log_b = read_log(tmp_path / "jax"), read_log(tmp_path / "reference")
    assert len(log_a) == 6
    for ra, rb in zip(log_a, log_b, strict=True):
        for k in ("policy_loss", "value_loss", "entropy", "approx_kl"):
            assert ra[k] == rb[k], (k, ra, rb)


def test_a_diverging_run_stops_with_its_last_finite_checkpoint(tmp_path: Path) -> None:
    """A NaN loss (here a NaN learning rate: the first minibatch step of update 1 makes the
    parameters NaN) stops the run with a clear error instead of training on NaN; the checkpoint
    is the last finite one (here the initial one, not the NaN state after update 1)."""
    from envport.train.run import TrainingDiverged, load_checkpoint

    with pytest.raises(TrainingDiverged, match="loss of update 1 is not finite"):
        train("cartpole", "jax", steps=STEPS, seed=7, out=tmp_path / "nan",
              config_overrides={**TINY, "lr": float("nan")}, progress=False, chunk_updates=1)
    assert load_checkpoint(tmp_path / "nan")["update"] == 0
