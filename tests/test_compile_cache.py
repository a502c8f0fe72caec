"""The XLA compilation cache the ``envport`` commands keep between runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from envport import compile_cache
from envport.cli import main


def test_the_folder_is_the_variables_else_under_the_users_cache(tmp_path: Path) -> None:
    home = {"XDG_CACHE_HOME": str(tmp_path)}
    assert compile_cache.cache_folder(home) == tmp_path / "envport" / "xla"
    assert compile_cache.cache_folder({**home, "ENVPORT_XLA_CACHE": "/x/y"}) == Path("/x/y")
    # the caller's own JAX folder is left to JAX; an explicit ENVPORT_XLA_CACHE still wins
    assert compile_cache.cache_folder({**home, "JAX_COMPILATION_CACHE_DIR": "/j"}) is None
    assert compile_cache.cache_folder({"JAX_COMPILATION_CACHE_DIR": "/j",
                                       "ENVPORT_XLA_CACHE": "/e"}) == Path("/e")
    for off in ("off", "0", "OFF", "none"):
        assert compile_cache.cache_folder({**home, "ENVPORT_XLA_CACHE": off}) is None


def test_enable_points_child_processes_at_the_folder(tmp_path: Path) -> None:
    env = {"ENVPORT_XLA_CACHE": str(tmp_path / "a" / "b"),
           "JAX_COMPILATION_CACHE_MAX_SIZE": "123"}
    import jax

    before = jax.config.jax_compilation_cache_dir, jax.config.jax_compilation_cache_max_size
    try:
        assert compile_cache.enable(env) == tmp_path / "a" / "b"
        assert (tmp_path / "a" / "b").is_dir()
        assert env["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "a" / "b")
        assert env["JAX_COMPILATION_CACHE_MAX_SIZE"] == "123"  # the caller's cap is kept
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "a" / "b")
    finally:
        jax.config.update("jax_compilation_cache_dir", before[0])
        jax.config.update("jax_compilation_cache_max_size", before[1])
    assert compile_cache.enable({"ENVPORT_XLA_CACHE": "off"}) is None


def test_an_unusable_folder_is_refused_before_any_work(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    monkeypatch.setenv("ENVPORT_XLA_CACHE", str(not_a_folder))
    assert main(["verify", "cartpole", "--layer", "interaction", "--states", "1"]) == 2
    err = "".join(capsys.readouterr().err.split())  # unwrapped: rich wraps long paths
    assert f"ENVPORT_XLA_CACHE={not_a_folder}:" in err and "'off'" in err
    assert os.environ.get("JAX_COMPILATION_CACHE_DIR") != str(not_a_folder)
    # the default folder under a read-only cache home: the command runs without a cache
    monkeypatch.delenv("ENVPORT_XLA_CACHE")
    env = {"XDG_CACHE_HOME": str(not_a_folder)}
    assert compile_cache.enable(env) is None and "JAX_COMPILATION_CACHE_DIR" not in env


def test_a_second_command_reads_the_programs_the_first_compiled(tmp_path: Path) -> None:
    folder = tmp_path / "xla"
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    # every program cached, not only those over JAX's 1 s default: CartPole compiles fast
    env.update(ENVPORT_XLA_CACHE=str(folder), JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
    command = [sys.executable, "-m", "envport.cli", "verify", "cartpole", "--layer",
               "interaction", "--states", "5", "--modes", "default"]

    def entries() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in folder.iterdir() if p.name != ".lockfile"}

    subprocess.run(command, env=env, check=True, capture_output=True, timeout=300)
    first = entries()
    programs = {n for n in first if n.endswith("-cache")}
    assert programs  # the first run wrote its compiled programs
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=300)
    second = entries()
    assert {n for n in second if n.endswith("-cache")} == programs  # nothing compiled anew
    # each read stamps the entry's access time (JAX's least-recently-used eviction)
    reread = [n for n in second if n.endswith("-atime") and second[n] != first[n]]
    assert len(reread) == len(programs)
