"""Training across processes with jax.distributed: two local processes, one CPU device each.

The mesh over ``jax.devices()`` then spans both processes, and a run is a function of its
config, seed and device count: the two-process run must give exactly the parameters and losses
of one process with two devices (XLA_FLAGS), on both processes, and only process 0 writes the
(shared) run folder.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np

from envport.train import read_log
from envport.train.run import CHECKPOINT_FILE, RESULT_FILE

SCRIPT = Path(__file__).with_name("distributed_train.py")
REPO = Path(__file__).resolve().parents[2]
LOSSES = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_frac", "episodes",
          "mean_return")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_train_as_one_process_with_two_devices(tmp_path: Path) -> None:
    base = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(REPO)}
    base.pop("XLA_FLAGS", None)
    coordinator = f"127.0.0.1:{free_port()}"
    shared = tmp_path / "two-processes"  # one folder for both: only process 0 may write it
    procs = [subprocess.Popen([sys.executable, str(SCRIPT), str(shared), str(tmp_path / f"p{i}"),
                               coordinator, "2", str(i)], env=base, cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
    single = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(tmp_path / "one-process"), str(tmp_path / "single")],
        env={**base, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for p in [*procs, single]:
        out, _ = p.communicate(timeout=400)
        assert p.returncode == 0, out[-3000:]
    results = [json.loads((tmp_path / n).read_text()) for n in ("p0", "p1", "single")]
    assert [(r["process"], r["processes"], r["devices"], r["local_devices"])
            for r in results] == [(0, 2, 2, 1), (1, 2, 2, 1), (0, 1, 2, 2)]
    assert all(r["updates"] == 4 for r in results)
    assert len({r["params_sha256"] for r in results}) == 1, results
    two, one = read_log(shared), read_log(tmp_path / "one-process")
    assert [int(r["update"]) for r in two] == [1, 2, 3, 4]  # written once, by process 0
    for a, b in zip(two, one, strict=True):
        np.testing.assert_equal({k: a[k] for k in LOSSES}, {k: b[k] for k in LOSSES})
    assert (shared / CHECKPOINT_FILE).is_file() and (shared / RESULT_FILE).is_file()
