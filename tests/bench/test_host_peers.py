"""Host peers (a simulator stepped from Python that times itself: EnvPool) and CartPole's peers.

The host-peer path is exercised with a small NumPy "pool" (a real loop of NumPy work, timed like
EnvPool). EnvPool and gymnax are optional (the ``peers`` extra and ``pip install --no-deps
gymnax==1.0.1``): their tests skip, with the reason, where those packages are not installed (the
optional set-up installs them).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envport
from envport.bench import peers as peers_mod
from envport.bench.benchmark import run_benchmark
from envport.bench.timing import time_host
from envport.core.registry import spec as real_spec


def numpy_pool() -> peers_mod.HostPeer:
    """A host peer: a batch of damped 4-vectors stepped with NumPy, one call per batch step."""

    def run(batch_sizes: Sequence[int], steps: int | None, seconds: float, repeats: int,
            thread_counts: Sequence[int]) -> Iterator[dict[str, Any]]:
        for n in batch_sizes:
            state = np.zeros((n, 4))
            actions = np.random.default_rng(0).integers(0, 2, (4, n, 1))

            def loop(k: int, state: np.ndarray = state, actions: np.ndarray = actions) -> None:
                for i in range(k):
                    state *= 0.99
                    state += actions[i % 4]

            timing = time_host(loop, steps, seconds, repeats)
            yield {"mode": "numpy, 1 thread(s)", "batch_size": n, "threads": 1,
                   "steps_per_second": n * timing["steps"] / timing["seconds"], **timing}

    return peers_mod.HostPeer(run)


def _peer_missing(why: str) -> NoReturn:
    """A peer of the `peers` extra is missing: skipped when ENVPORT_EXTRAS leaves the extra out,
    a broken install (a failure) with install.sh's default extras, which include it."""
    if "peers" not in os.environ.get("ENVPORT_EXTRAS", "peers").split(","):
        pytest.skip(f"ENVPORT_EXTRAS leaves out `peers`: {why}")
    pytest.fail(f"{why} (extra `peers`, installed by install.sh)")


def envpool_or_skip() -> Any:
    try:
        return peers_mod._import_envpool()
    except ImportError as e:
        _peer_missing(f"EnvPool is not importable: {e}")


def gymnax_or_skip() -> Any:
    try:
        return peers_mod._gymnax_cartpole_module()
    except ImportError as e:
        _peer_missing(f"gymnax is not importable: {e}")


def test_time_host_fixed_and_sized_by_time() -> None:
    calls: list[int] = []

    def loop(k: int) -> None:
        calls.append(k)
        for _ in range(k):
            np.sqrt(np.arange(64.0))

    fixed = time_host(loop, steps=7, repeats=2)
    assert fixed["steps"] == 7 and fixed["repeats"] == 2 and fixed["seconds"] > 0
    assert calls == [1, 7, 7]  # a warm-up step, then the timed runs
    sized = time_host(loop, steps=None, seconds=0.2, repeats=2)
    # Sized so each of the 2 runs takes ~0.1 s: far more steps than the probe's first run.
    assert sized["steps"] > 100 and sized["repeats"] == 2 and sized["seconds"] < 1.0


def test_host_peer_rows_and_ratios(monkeypatch: pytest.MonkeyPatch) -> None:
    base = real_spec("cartpole")
    patched = dataclasses.replace(base, benchmark=dataclasses.replace(
        base.benchmark, peers={"numpy": numpy_pool}))
    monkeypatch.setattr(envport, "spec",
                        lambda name: patched if name == "cartpole" else real_spec(name))
    lines: list[str] = []
    result = run_benchmark("cartpole", batch_sizes=[2, 8], steps=6, per_core=False,
                           reference=False, progress=lines.append)
    rows = [r for r in result["results"] if r["backend"] == "numpy"]
    assert [(r["batch_size"], r["threads"], r["steps"]) for r in rows] == [(2, 1, 6), (8, 1, 6)]
    assert all(r["steps_per_second"] > 0 for r in rows)
    assert result["ratios"]["numpy"]["per_batch"].keys() == {"2", "8"}
    assert result["peers"] == {"numpy": "measured"} and result["skipped"] == {}
    assert sum("numpy" in line for line in lines) == 2  # progress per row, as it is measured
    # Interleaved: each batch size on every backend before the next size.
    assert [(r["backend"], r["batch_size"]) for r in result["results"]] == [
        ("jax", 2), ("numpy", 2), ("jax", 8), ("numpy", 8)]


def test_peer_failing_part_way_keeps_its_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def breaks_at_8() -> peers_mod.HostPeer:
        inner = numpy_pool()

        def run(batch_sizes: Sequence[int], *args: Any) -> Iterator[dict[str, Any]]:
            asked.extend(batch_sizes)
            if 8 in batch_sizes:
                raise RuntimeError("out of memory at 8")
            yield from inner.run(batch_sizes, *args)

        return peers_mod.HostPeer(run)

    base = real_spec("cartpole")
    patched = dataclasses.replace(base, benchmark=dataclasses.replace(
        base.benchmark, peers={"fragile": breaks_at_8}))
    monkeypatch.setattr(envport, "spec",
                        lambda name: patched if name == "cartpole" else real_spec(name))
    result = run_benchmark("cartpole", batch_sizes=[2, 8, 16], steps=4, per_core=False,
                           reference=False)
    assert [r["batch_size"] for r in result["results"] if r["backend"] == "fragile"] == [2]
    assert "out of memory at 8" in result["incomplete"]["fragile"]
    assert asked == [2, 8]  # not timed at 16 after failing at 8
    assert [r["batch_size"] for r in result["results"] if r["backend"] == "jax"] == [2, 8, 16]


def test_envpool_cartpole_rows_in_the_child() -> None:
    """The real EnvPool CartPole at batch 4 in its own child process, on 1 thread and one per
    core (the child runs ``peers`` as ``__main__``: its HostPeer must still be recognised)."""
    envpool = envpool_or_skip()
    rows, rss = peers_mod.peers_throughput_per_core("cartpole", [4], ["envpool"], steps=20,
                                                    repeats=1)
    cores = os.cpu_count() or 1
    assert [r["threads"] for r in rows] == [t for t in sorted({1, cores}) if t <= 4]
    for r in rows:
        assert r["backend"] == "envpool" and r["batch_size"] == 4 and r["steps"] == 20
        assert r["steps_per_second"] > 0
        assert r["mode"].startswith(f"envpool {envpool.__version__} CartPole-v1")
        assert f"{r['threads']} thread(s)" in r["mode"]
    assert rss > 0


def test_envpool_import_with_missing_asset_folders(tmp_path: Path) -> None:
    """EnvPool lists Atari ROMs and ViZDoom maps at import; with an asset root that has neither
    folder (``ENVPOOL_ASSETS_PATH``, as an asset package installed without them) the import
    still works, CartPole steps, and nothing is written."""
    envpool_or_skip()
    code = ("import numpy as np; from envport.bench.peers import _import_envpool; "
            "e = _import_envpool().make('CartPole-v1', env_type='gymnasium', num_envs=4, "
            "batch_size=4, num_threads=1); e.reset(); "
            "print(e.step(np.zeros(4, np.int32))[1].tolist())")
    env = {**os.environ, "ENVPOOL_ASSETS_PATH": str(tmp_path)}
    bare = subprocess.run([sys.executable, "-c", "import envpool"], env=env,
                          capture_output=True, text=True)
    assert bare.returncode != 0 and "FileNotFoundError" in bare.stderr  # the failure handled
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [1.0, 1.0, 1.0, 1.0]
    assert list(tmp_path.iterdir()) == []


def test_envpool_cartpole_is_gymnasiums_cartpole() -> None:
    """From EnvPool's reset state, ten random steps match Gymnasium's CartPole-v1 (float32
    observations), with the same reward and termination: the same task."""
    import gymnasium

    envpool = envpool_or_skip()
    pool = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=1, batch_size=1,
                        num_threads=1, seed=3)
    obs, _ = pool.reset()
    ref = gymnasium.make("CartPole-v1").unwrapped
    ref.reset(seed=0)
    ref.state = obs[0].astype(np.float64)
    rng = np.random.default_rng(0)
    for _ in range(10):
        a = int(rng.integers(2))
        o, r, term, trunc, _ = pool.step(np.array([a], np.int32))
        ro, rr, rterm, rtrunc, _ = ref.step(a)
        np.testing.assert_allclose(o[0], ro, rtol=0, atol=1e-7)  # float32 observations
        assert (r[0], bool(term[0]), bool(trunc[0])) == (rr, rterm, rtrunc)
        if rterm:
            break
    assert pool.spec.config.max_episode_steps == 500
    pool.close()


def test_envpool_halfcheetah_is_gymnasiums_halfcheetah() -> None:
    """EnvPool's HalfCheetah-v5 (its own MuJoCo build) against Gymnasium's: the same config,
    and from the same state 20 random steps agree to ~1e-12 (the numbers in
    ``peers.envpool_halfcheetah``'s docstring come from this check)."""
    import gymnasium

    envpool = envpool_or_skip()
    pool = envpool.make("HalfCheetah-v5", env_type="gymnasium", num_envs=1, batch_size=1,
                        num_threads=1, seed=3)
    c = pool.spec.config
    assert (c.xml_file, c.frame_skip, c.max_episode_steps, c.forward_reward_weight,
            c.ctrl_cost_weight, c.reset_noise_scale,
            c.exclude_current_positions_from_observation) == (
        "half_cheetah.xml", 5, 1000, 1.0, 0.1, 0.1, True)
    assert pool.observation_space.shape == (17,) and pool.action_space.shape == (6,)
    ref = gymnasium.make("HalfCheetah-v5").unwrapped
    ref.reset(seed=0)
    obs, _ = pool.reset()
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (1, 6))
    o, r, _, _, info = pool.step(a)
    # The observation leaves out x; the floor is a plane, so x moves nothing else. Recover
    # EnvPool's starting x from its first step's info.
    x0 = info["x_position"][0] - ref.dt * info["x_velocity"][0]
    ref.set_state(np.concatenate([[x0], obs[0, :8]]), obs[0, 8:])
    worst_obs = worst_reward = 0.0
    for t in range(20):
        if t:
            a = rng.uniform(-1, 1, (1, 6))
            o, r, _, _, info = pool.step(a)
        ro, rr, _, _, rinfo = ref.step(a[0])
        worst_obs = max(worst_obs, float(np.abs(o[0] - ro).max()))
        worst_reward = max(worst_reward, abs(float(r[0]) - rr))
        np.testing.assert_allclose(info["reward_ctrl"][0], rinfo["reward_ctrl"], atol=1e-12)
    assert worst_obs < 1e-10  # float64 observations: rounding of two MuJoCo builds
    assert worst_reward < 1e-6  # EnvPool returns float32 rewards
    pool.close()


def test_gymnax_peer_row_and_same_steps_as_the_translation() -> None:
    """gymnax's CartPole peer timed at batch 4 in this process, and its step from the
    translation's states gives the translation's observations (the same task, float32)."""
    cartpole = gymnax_or_skip()
    if importlib.util.find_spec("seaborn") is None:  # loaded without gymnax's package inits:
        assert "gymnax" not in sys.modules  # sys.modules restored
    rows = peers_mod.peers_throughput("cartpole", [4], ["gymnax"], steps=5, repeats=1)
    assert [(r["backend"], r["batch_size"], r["devices"], r["steps"]) for r in rows] == [
        ("gymnax", 4, 1, 5)]
    assert rows[0]["steps_per_second"] > 0 and rows[0]["mode"].startswith("gymnax 1.0.1")

    env = envport.make("cartpole")
    state, _ = env.reset(jax.random.key(1))
    g = cartpole.CartPole()
    gstate = cartpole.EnvState(x=state.x, x_dot=state.x_dot, theta=state.theta,
                               theta_dot=state.theta_dot, time=state.time)
    for action in (1, 0, 0, 1, 1):
        res = env.step(jax.random.key(0), state, jnp.int32(action))
        gobs, gstate, greward, *_ = g.step_env(jax.random.key(0), gstate, action,
                                               g.default_params)
        np.testing.assert_allclose(np.asarray(gobs), np.asarray(res.obs), rtol=1e-6, atol=1e-7)
        assert float(greward) == float(res.reward) == 1.0
        state = res.state
