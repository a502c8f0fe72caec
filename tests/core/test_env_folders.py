"""The registry: options and modes, and an environment added by writing one folder.

The folder test copies envport's own CartPole folder out of the package into a temporary
directory under another name, as a newcomer would, and drives the real command line on it
with ``$ENVPORT_ENV_PATH`` naming that directory: it is listed, verified, benchmarked and
trained with no edit anywhere else."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import envport
from envport.core.registry import ENV_PATH_VARIABLE, Option
from envport.verify.layers import LAYERS

REPO = Path(__file__).resolve().parents[2]


def test_options_parse_and_reject_with_the_option_named() -> None:
    frameskip = Option(1, "sub-frames", kind="int", minimum=1)
    assert frameskip.parse("frameskip", "4") == 4
    for bad, why in (("abc", "an integer"), ("0", "a value >= 1"), ("2.5", "an integer")):
        with pytest.raises(ValueError, match=rf"frameskip='?{bad}'?: expected {why}"):
            frameskip.parse("frameskip", bad)
    flag = Option(False, "continuous actions", kind="bool")
    assert [flag.parse("c", v) for v in ("true", "1", "yes", "False", "off")] == [
        True, True, True, False, False]
    with pytest.raises(ValueError, match="expected true or false"):
        flag.parse("c", "maybe")
    dtype = Option("float32", "precision", choices=("float32", "float64"))
    assert dtype.parse("dtype", "FLOAT64") == "float64"
    with pytest.raises(ValueError, match="one of float32, float64"):
        dtype.parse("dtype", "float16")


def test_modes_are_declared_named_and_parsed() -> None:
    pong = envport.spec("pong")
    modes = pong.declared_modes()
    assert modes[0] == {} and {"frameskip": 8} in modes and {"continuous": True} in modes
    four = pong.with_options(frameskip="4")
    assert four.mode == {"frameskip": 4} and four.mode_name == "pong[frameskip=4]"
    assert four.make().default_params().frameskip == 4
    assert four.with_options(frameskip=1) is pong  # back to the default mode
    with pytest.raises(ValueError, match=r"pong has no option 'foo' \(its options: "):
        pong.with_options(foo=1)
    with pytest.raises(ValueError, match="cartpole has no option 'frameskip'"):
        envport.spec("cartpole").with_options(frameskip=4)
    with pytest.raises(ValueError, match="expected a value >= 1"):
        envport.make("pong", frameskip=0)


def copy_cartpole(root: Path, name: str) -> Path:
    """envport/envs/cartpole copied to ``root/name``, renamed throughout."""
    folder = root / name
    shutil.copytree(REPO / "envport" / "envs" / "cartpole", folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for path in folder.glob("*.py"):
        text = path.read_text().replace("envport.envs.cartpole", name)
        path.write_text(re.sub(r'name="cartpole"', f'name="{name}"', text))
    return folder


def envport_cli(*argv: str, env_path: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, ENV_PATH_VARIABLE: str(env_path),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "envport.cli", *argv], env=env, cwd=env_path,
                          capture_output=True, text=True, timeout=timeout)


def test_an_environment_in_a_folder_outside_the_package(tmp_path: Path) -> None:
    envs = tmp_path / "my-envs"
    envs.mkdir()
    copy_cartpole(envs, "mycartpole")
    listed = envport_cli("list", env_path=envs)
    assert listed.returncode == 0, listed.stderr
    assert "mycartpole" in listed.stdout and "cartpole" in listed.stdout

    verified = envport_cli("verify", "mycartpole", "--episodes", "3", "--states", "40",
                           "--examples", "2", "--json", str(tmp_path / "verify.json"),
                           env_path=envs)
    assert verified.returncode == 0, verified.stdout[-3000:] + verified.stderr[-3000:]
    report = json.loads((tmp_path / "verify.json").read_text())
    assert report["env"] == "mycartpole" and report["passed"]
    assert set(report["layers"]) == set(LAYERS)

    bench = envport_cli("bench", "mycartpole", "--batch-sizes", "4", "--steps", "20",
                        "--json", str(tmp_path / "bench.json"), env_path=envs)
    assert bench.returncode == 0, bench.stderr[-3000:]
    rows = json.loads((tmp_path / "bench.json").read_text())["results"]
    assert {r["backend"] for r in rows} >= {"jax", "reference"}

    for backend in ("jax", "reference"):
        trained = envport_cli("train", "mycartpole", "--backend", backend, "--steps", "512",
                              "--set", "num_steps=16", "--set", "update_epochs=1",
                              "--out", str(tmp_path / f"run-{backend}"), env_path=envs)
        assert trained.returncode == 0, trained.stderr[-3000:]
        config = json.loads((tmp_path / f"run-{backend}" / "config.json").read_text())
        assert config["env"] == "mycartpole" and config["backend"] == backend
    # Nothing of it was written into the folder the commands ran in, beside the env itself.
    assert sorted(p.name for p in envs.iterdir()) == ["mycartpole"]


def test_two_environments_with_one_name_are_refused(tmp_path: Path) -> None:
    copy_cartpole(tmp_path, "pong")  # its SPEC now says name="pong", as envport's Pong does
    listed = envport_cli("list", env_path=tmp_path)
    assert listed.returncode != 0
    assert "two environments are named 'pong'" in listed.stderr
