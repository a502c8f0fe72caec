"""``envport bench`` with performance peers: wiring, run sizing, ratios, JSON shape, plot, CLI.

The fast tests give CartPole a toy peer (``EnvSpec.peers``) and run everything in-process
(``per_core=False``); the real HalfCheetah peers (MJX, Brax) compile for a while and are slow.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import envport
from envport.bench import peers as peers_mod
from envport.bench.benchmark import ratios, run_benchmark
from envport.bench.plots import plot_throughput
from envport.bench.throughput import make_rollout
from envport.bench.timing import time_rollout
from envport.cli import main
from envport.core.registry import spec as real_spec

BACKENDS = {"reference", "mjx", "brax", "envpool", "jax"}


def toy_peer():
    """A 'peer' of CartPole: a damped 4-vector pushed by the action."""

    def init(batch: int, key: jax.Array) -> jax.Array:
        return jax.random.uniform(key, (batch, 4))

    def step(state: jax.Array, action: jax.Array) -> jax.Array:
        return 0.99 * state + action.astype(jnp.float32)

    return init, step, "toy"


def missing_peer():
    return peers_mod._require("envport_no_such_module_for_tests")


@pytest.fixture
def cartpole_with_peers(monkeypatch: pytest.MonkeyPatch) -> None:
    base = real_spec("cartpole")
    patched = dataclasses.replace(base, benchmark=dataclasses.replace(
        base.benchmark, peers={"toy": toy_peer, "missing": missing_peer}))
    monkeypatch.setattr(envport, "spec",
                        lambda name: patched if name == "cartpole" else real_spec(name))


def test_time_rollout_fixed_and_sized_by_time() -> None:
    env = envport.make("cartpole")
    rollout = make_rollout(env, 4)
    state, obs = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), 4))
    fixed = time_rollout(rollout, (state, obs), steps=5, repeats=2)
    assert fixed["steps"] == 5 and fixed["repeats"] == 2 and fixed["seconds"] > 0
    sized = time_rollout(rollout, (state, obs), steps=None, seconds=0.2, repeats=2)
    # Sized so each of the 2 runs takes ~0.1 s: far more than a handful of CartPole steps.
    assert sized["steps"] > 100 and sized["repeats"] == 2
    assert sized["seconds"] < 1.0


def test_ratios_per_batch_and_best() -> None:
    rows = [{"backend": "jax", "batch_size": 1, "steps_per_second": 10.0},
            {"backend": "jax", "batch_size": 8, "steps_per_second": 80.0},
            {"backend": "jax", "batch_size": 8, "steps_per_second": 60.0},
            {"backend": "reference", "batch_size": 1, "steps_per_second": 20.0},
            {"backend": "mjx", "batch_size": 8, "steps_per_second": 4.0},
            {"backend": "mjx", "batch_size": 64, "steps_per_second": 8.0},
            {"backend": "brax", "batch_size": 8, "steps_per_second": math.nan}]
    by_batch, summary = ratios(rows)
    assert [x["batch_size"] for x in by_batch] == [1, 8, 64]
    assert by_batch[0]["jax_ratio"] == {"reference": 0.5}
    assert by_batch[1]["steps_per_second"] == {"jax": 80.0, "mjx": 4.0}  # best mode; NaN out
    assert by_batch[1]["jax_ratio"] == {"mjx": 20.0}
    assert by_batch[2]["jax_ratio"] == {}  # no JAX row at 64: no ratio
    assert summary["mjx"] == {"per_batch": {"8": 20.0}, "best": 10.0}
    assert summary["reference"]["best"] == 4.0


@pytest.mark.usefixtures("cartpole_with_peers")
def test_run_benchmark_with_peers_json_shape_and_plot(tmp_path: Path) -> None:
    lines: list[str] = []
    result = run_benchmark("cartpole", batch_sizes=[2, 4], steps=8, per_core=False,
                           progress=lines.append)
    backends = {r["backend"] for r in result["results"]}
    assert backends == {"reference", "jax", "toy"}
    toy = [r for r in result["results"] if r["backend"] == "toy"]
    assert [r["batch_size"] for r in toy] == [2, 4]  # matched to the JAX batch sizes
    assert all(r["steps"] == 8 and r["steps_per_second"] > 0 for r in toy)
    assert result["skipped"].keys() == {"missing"}
    assert "not installed" in result["skipped"]["missing"]
    assert result["peers"]["toy"] == "measured"
    assert result["ratios"]["toy"]["per_batch"].keys() == {"2", "4"}
    assert result["ratios"]["toy"]["best"] > 0
    assert [x["batch_size"] for x in result["by_batch"]] == sorted(
        {r["batch_size"] for r in result["results"]})
    assert len(lines) == len(result["results"])
    json.loads(json.dumps(result, allow_nan=False))  # strict JSON: no NaN from a skipped peer

    only_toy = run_benchmark("cartpole", batch_sizes=[2], steps=4, per_core=False,
                             peers=["toy"], reference=False)
    assert {r["backend"] for r in only_toy["results"]} == {"jax", "toy"}
    assert only_toy["skipped"] == {}
    with pytest.raises(ValueError, match="no peer"):
        run_benchmark("cartpole", batch_sizes=[2], steps=4, per_core=False, peers=["mjx"])

    path = tmp_path / "peers.png"
    plot_throughput(result, path)
    assert path.read_bytes().startswith(b"\x89PNG")


def test_environments_name_their_peers() -> None:
    assert list(real_spec("halfcheetah").benchmark.peers) == ["mjx", "brax", "envpool"]
    assert list(real_spec("cartpole").benchmark.peers) == ["gymnax", "envpool"]


def test_cli_bench_no_peers_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "bench.json"
    plot = tmp_path / "bench.png"
    assert main(["bench", "cartpole", "--batch-sizes", "2", "--steps", "4", "--json", str(out),
                 "--plot", str(plot), "--no-peers"]) == 0
    result = json.loads(out.read_text())
    assert {r["backend"] for r in result["results"]} == {"reference", "jax"}
    assert result["ratios"]["reference"]["best"] > 0
    text = capsys.readouterr().out
    assert "side by side" in text and "jax/reference" in text
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert main(["bench", "cartpole", "--peers", "mjx", "--steps", "4"]) == 2  # not its peer
    assert main(["bench", "cartpole", "--seconds", "0"]) == 2


@pytest.mark.slow
def test_halfcheetah_bench_with_mjx_and_brax(tmp_path: Path) -> None:
    """The real thing at a tiny size: reference rows (loop and async), JAX on 1 and 2 devices,
    MJX and Brax in their child process (minutes: MJX and HalfCheetah compile slowly)."""
    out = tmp_path / "hc.json"
    assert main(["bench", "halfcheetah", "--batch-sizes", "2", "--steps", "2",
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    backends = {r["backend"] for r in result["results"]}
    installed = BACKENDS - set(result["skipped"])
    assert backends == installed and {"reference", "jax"} <= backends
    modes = {r["mode"].split(",")[0] for r in result["results"] if r["backend"] == "reference"}
    assert modes == {"gymnasium loop", "gymnasium async vector env"}
    for peer in installed - {"reference", "jax"}:
        assert result["ratios"][peer]["per_batch"].keys() == {"2"}


def test_stalled_child_is_killed_keeping_its_rows(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from envport.bench.timing import ChildFailed, run_child

    (tmp_path / "stalling_child.py").write_text(
        "import time\n"
        "print('ROW {\"backend\": \"x\", \"batch_size\": 1}', flush=True)\n"
        "time.sleep(120)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    t = time.perf_counter()
    with pytest.raises(ChildFailed, match="stalled") as caught:
        run_child("stalling_child", {}, stall_seconds=2.0)
    assert caught.value.rows == [{"backend": "x", "batch_size": 1}]
    assert time.perf_counter() - t < 60


def test_chunked_vmap_is_vmap_in_sequential_chunks() -> None:
    """A peer too slow to compile at a large vmap width (MJX) steps the batch in chunks: the
    same per-environment results, each chunk interleaved across the batch."""
    def step(state: jax.Array, action: jax.Array) -> jax.Array:
        return 0.5 * state + action

    state = jnp.arange(24.0).reshape(12, 2)
    action = jnp.ones((12, 2))
    whole = jax.vmap(step)(state, action)
    chunked = jax.jit(peers_mod.chunked_vmap(step, 12, 4))(state, action)
    assert (chunked == whole).all()
    jaxpr = str(jax.make_jaxpr(peers_mod.chunked_vmap(step, 12, 4))(state, action))
    assert "scan" in jaxpr and "length=3" in jaxpr  # 3 sequential vmaps of 4
    with pytest.raises(ValueError, match="multiple of the peer's chunk"):
        peers_mod.chunked_vmap(step, 10, 4)
