"""``--ray`` without Ray installed, or with a malformed address: exit 2 with a message naming
the flag (and the extra to install), before any work. Runs whether or not Ray is installed
(the child process hides it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WITHOUT_RAY = """
import sys
sys.modules["ray"] = None  # `import ray` now raises ImportError, as where it is not installed
from envport.cli import main
sys.exit(main(sys.argv[1:]))
"""


def envport_without_ray(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WITHOUT_RAY, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin",
                               "COLUMNS": "200", "ENVPORT_XLA_CACHE": "off"})


@pytest.mark.parametrize("command", [
    ["verify", "cartpole", "--layer", "rollout", "--episodes", "2"],
    ["mutate", "cartpole", "--max-mutants", "1"],
    ["transfer", "cartpole", "--seeds", "2"],
])
def test_ray_flag_without_ray_exits_2_naming_the_extra(command: list[str],
                                                       tmp_path: Path) -> None:
    out = tmp_path / "out"
    extra = ["--out", str(out)] if command[0] == "transfer" else ["--json", str(out)]
    done = envport_without_ray(*command, *extra, "--ray", "auto")
    assert done.returncode == 2, done.stdout + done.stderr
    message = " ".join((done.stdout + done.stderr).split())
    assert "--ray needs Ray" in message and "pip install 'envport[scale]'" in message
    assert not out.exists()  # nothing ran: no transfer folder, no report


def test_a_malformed_address_exits_2() -> None:
    done = envport_without_ray("verify", "cartpole", "--layer", "rollout", "--ray", "not an "
                               "address")
    assert done.returncode == 2
    assert "--ray takes 'auto' or a cluster address" in " ".join(done.stderr.split())
