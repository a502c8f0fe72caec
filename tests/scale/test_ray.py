"""Scale-out on a local Ray cluster that this module starts (2 CPUs, loopback only): L3's
reference side, mutation scoring and transfer's training runs give on Ray exactly what they
give locally, and the executor reports timeouts, crashed workers and errors.

Ray is an optional extra (``pip install 'envport[scale]'``): without it this module is skipped
(with that reason); tests/scale/test_scale_cli.py checks the error ``--ray`` gives then."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

# Before Ray is imported: its nodes then bind the loopback address, not the machine's.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install "
                                        "'envport[scale]' (these tests need it)")

from envport.core.registry import spec  # noqa: E402
from envport.envs.cartpole.jax_env import CartPole  # noqa: E402
from envport.scale import RayExecutor  # noqa: E402
from envport.verify import mutation as mutate  # noqa: E402
from envport.verify import rollout  # noqa: E402
from envport.verify.policies import make_policy  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(ray_cluster: str) -> str:
    """The session's local Ray cluster (``tests/conftest.py``)."""
    return ray_cluster


def cli(*args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    """``envport ARGS`` in a child process: a driver of its own that joins the cluster."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "envport.cli", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def same_trajectory(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_l3_reference_side_on_ray_is_the_local_one(cluster: str) -> None:
    cartpole = spec("cartpole")
    ref = cartpole.make_reference()
    policies = {k: make_policy(k, cartpole, ref) for k in ("random", "scripted")}
    copies = rollout.make_copies(cartpole)
    local = [rollout.reference_side(cartpole, ref, copies, policies, 5, i) for i in range(6)]
    remote = list(rollout.reference_tasks(RayExecutor(cluster), cartpole, 5, 6))
    assert len(remote) == 6
    for (ep, cps), (ep_r, cps_r) in zip(local, remote, strict=True):
        assert (ep.seed, ep.policy, ep.actions) == (ep_r.seed, ep_r.policy, ep_r.actions)
        same_trajectory(ep.state0, ep_r.state0)
        same_trajectory(ep.steps, ep_r.steps)
        assert len(cps) == len(cps_r) == rollout.PERTURBED_COPIES
        for c, c_r in zip(cps, cps_r, strict=True):
            same_trajectory(c, c_r)
    assert {ep.policy for ep, _ in local} == {"random", "scripted"}
    # A wrong translation: the same failures (step, fields, counterexample) either way.
    wrong = CartPole(gravity=9.81)
    here = rollout.check_rollout(cartpole, 6, seed=5, env=wrong).to_json()
    there = rollout.check_rollout(cartpole, 6, seed=5, env=wrong,
                                  executor=RayExecutor(cluster)).to_json()
    assert not here["passed"] and here["failures"]
    here.pop("seconds"), there.pop("seconds")
    assert json.dumps(here, sort_keys=True) == json.dumps(there, sort_keys=True)


@pytest.mark.slow
def test_verify_with_ray_gives_the_local_report(cluster: str, tmp_path: Path) -> None:
    args = ("verify", "cartpole", "--layer", "rollout", "--episodes", "6", "--seed", "3",
            "--modes", "default")
    on_ray, local = tmp_path / "ray.json", tmp_path / "local.json"
    done = cli(*args, "--ray", cluster, "--json", str(on_ray))
    assert done.returncode == 0, done.stderr[-3000:]
    from envport.cli import main

    assert main([*args, "--json", str(local)]) == 0
    a, b = (json.loads(p.read_text())["layers"]["rollout"] for p in (on_ray, local))
    a.pop("seconds"), b.pop("seconds")
    assert a == b and a["episodes"] == 6
    assert any("lockstep horizon" in n for n in a["notes"])  # the copies' envelope ran too


def crash(_: object) -> None:
    os._exit(3)


def sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def fail(_: object) -> None:
    raise ArithmeticError("a bug in the task")


def test_executor_reports_timeouts_crashes_and_errors(cluster: str) -> None:
    from ray import cloudpickle  # Ray's own copy pickles the tasks

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # not importable by workers
    ex = RayExecutor(cluster)
    hang = {o.index: o for o in ex.outcomes(sleep, [0.0, 60.0], timeout_s=3.0)}
    assert (hang[0].failure, hang[0].value) == (None, 0.0), hang[0].detail
    assert hang[1].failure == "timeout"
    died = list(ex.outcomes(crash, [None], max_retries=0))
    assert [o.failure for o in died] == ["crash"]
    raised = list(ex.outcomes(fail, [None], max_retries=0))
    assert raised[0].failure == "error" and "a bug in the task" in raised[0].detail
    with pytest.raises(RuntimeError, match="a bug in the task"):
        list(ex.imap(fail, [None]))
    assert list(ex.imap(sleep, [0.2, 0.0, 0.1])) == [0.2, 0.0, 0.1]  # in order


def find(mutants: list[mutate.MutantSource], text: str, description: str) -> str:
    hits = [m for m in mutants if text in m.mutant.source_line
            and m.mutant.description == description]
    assert len(hits) == 1
    return hits[0].mutant.id


@pytest.mark.slow
def test_mutate_with_ray_gives_the_local_verdicts(cluster: str, tmp_path: Path) -> None:
    mutants = mutate.generate(mutate.translation_module(spec("cartpole")))
    ids = [find(mutants, "gravity: float = 9.8", "9.8 -> 10.780000000000001"),
           find(mutants, "CartPoleState(x[0], x[1], x[2], x[3]", "3 -> 4")]
    sizes = {"states": 200, "samples": 1000, "examples": 2, "episodes": 2}
    out = tmp_path / "ray.json"
    done = cli("mutate", "cartpole", "--only", *ids, "--ray", cluster, "--json", str(out),
               *(x for k, v in sizes.items() for x in (f"--{k}", str(v))))
    assert done.returncode == 0, done.stderr[-3000:]
    on_ray = json.loads(out.read_text())
    local = mutate.run_mutation("cartpole", only=ids, max_mutants=120, **sizes).to_json()
    assert on_ray["settings"].pop("ray") == cluster

    def verdicts(report: dict) -> list[dict]:
        return [{k: v for k, v in r.items() if k != "seconds"} for r in report["results"]]

    assert verdicts(on_ray) == verdicts(local)
    assert [r["killed_by"] for r in on_ray["results"]] == ["interaction", None]
    assert on_ray["equivalent"] == 1 and on_ray["settings"] == local["settings"]


@pytest.mark.slow
def test_transfer_with_ray_trains_the_same_parameters(cluster: str, tmp_path: Path) -> None:
    from envport.train.run import RESULT_FILE
    from envport.train.transfer import transfer

    kwargs = {"seeds": 2, "margin": 25.0, "steps": 4 * 8 * 4, "episodes": 4, "progress": False,
              "config_overrides": {"num_steps": 8, "num_minibatches": 2, "update_epochs": 2}}
    on_ray = transfer("cartpole", out=tmp_path / "ray", ray=cluster, **kwargs)
    local = transfer("cartpole", out=tmp_path / "local", **kwargs)

    def runs(result: dict) -> list[tuple]:
        return [(r["backend"], r["seed"], r["params_sha256"], r["env_steps"], r["eval"])
                for r in result["runs"]]

    assert runs(on_ray) == runs(local)
    assert len({r["params_sha256"] for r in on_ray["runs"]}) == 4  # four different policies
    assert on_ray["table"] == local["table"] and on_ray["tost"] == local["tost"]
    assert [r["status"] for r in on_ray["runs"]] == ["trained"] * 4
    result = json.loads((tmp_path / "ray" / "jax-seed1" / RESULT_FILE).read_text())
    assert result["run_dir"] == str(tmp_path / "ray" / "jax-seed1")  # the driver's folder
    # An unfinished run is resumed on Ray from the checkpoint it sends; the rest are reused.
    (tmp_path / "ray" / "reference-seed1" / RESULT_FILE).unlink()
    again = transfer("cartpole", out=tmp_path / "ray", ray=cluster, **kwargs)
    assert [r["status"] for r in again["runs"]] == ["reused"] * 3 + ["resumed"]
    assert runs(again) == runs(local)
