"""Set-up errors of the pokemon-gen1 reference say what to install and what to run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from envport.envs.pokemon_gen1 import reference
from envport.envs.pokemon_gen1.reference import ReferenceUnavailable, check_installed, find_node

SCRIPT = Path(reference.__file__).parent / "install_reference.sh"


def fake_node(folder: Path, version: str) -> Path:
    node = folder / "node"
    node.write_text(f"#!/bin/sh\necho {version}\n")
    node.chmod(0o755)
    return node


def run_script(path_dirs: list[Path]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": os.pathsep.join(map(str, path_dirs))}
    return subprocess.run([shutil.which("bash") or "/bin/bash", str(SCRIPT)], env=env,
                          capture_output=True, text=True, timeout=60)


def tools_only(folder: Path) -> Path:
    """A PATH folder with the few tools the script needs before its Node check, and no node."""
    folder.mkdir()
    for tool in ("dirname",):
        (folder / tool).symlink_to(shutil.which(tool))
    return folder


def test_install_script_names_node_when_it_is_missing(tmp_path):
    out = run_script([tools_only(tmp_path / "bin")])
    assert out.returncode == 1
    assert "'node' is not on PATH" in out.stderr and "Install Node 20 LTS" in out.stderr


def test_install_script_rejects_an_old_node(tmp_path):
    bin_dir = tools_only(tmp_path / "bin")
    fake_node(bin_dir, "v16.20.0")
    out = run_script([bin_dir])
    assert out.returncode == 1
    assert "needs Node.js >= 18 (found v16.20.0" in out.stderr


def test_install_script_leaves_an_installed_lock_alone(tmp_path):
    """Run again where the set-up installed this lock (the suite's own set-up just did), the
    script does not call npm, whose `npm ci` would delete node_modules under a running worker:
    here an npm that fails if called."""
    bin_dir = tools_only(tmp_path / "bin")
    for tool in ("node", "cat"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    npm = bin_dir / "npm"
    npm.write_text("#!/bin/sh\necho 'npm was called' >&2\nexit 3\n")
    npm.chmod(0o755)
    out = run_script([bin_dir])
    assert out.returncode == 0, out.stderr
    assert "already holds package-lock.json's install" in out.stdout
    assert "npm was called" not in out.stderr


def test_python_side_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVPORT_NODE", str(fake_node(tmp_path, "v14.1.0")))
    with pytest.raises(ReferenceUnavailable, match=r"needs Node\.js >= 18.*install_reference\.sh"):
        find_node()
    with pytest.raises(ReferenceUnavailable, match=r"is missing\). Run `bash envport/envs/"
                                                   r"pokemon_gen1/install_reference.sh`"):
        check_installed(tmp_path)
    package = tmp_path / "node_modules" / "pokemon-showdown"
    package.mkdir(parents=True)
    (package / "package.json").write_text('{"version": "0.11.10"}')
    with pytest.raises(ReferenceUnavailable, match=r"0\.11\.10 is installed.*pins 0\.11\.11"):
        check_installed(tmp_path)


def test_seeds_are_checked_before_they_reach_showdown():
    assert reference.check_seed("1,2,3,4") == [1, 2, 3, 4]
    for bad in ([1, 2, 3], [1, 2, 3, 65536], [1, 2, 3, -1], [1.5, 2, 3, 4], [True, 2, 3, 4],
                "gen5,0001000200030004", 7):
        with pytest.raises(ValueError, match=r"4 integers in 0\.\.65535"):
            reference.check_seed(bad)
