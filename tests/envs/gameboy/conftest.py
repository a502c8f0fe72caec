"""The Game Boy tests need the `gb` set-up (install.sh's default): the Rust core (module
envport_gb, built by install.sh), PyBoy 2.8.1 and sdcc. Without it they are skipped, with the
reason shown."""

import shutil

import pytest

from envport.envs.gameboy.build_roms import missing_tools


@pytest.fixture(scope="session", autouse=True)
def gb_setup() -> None:
    pytest.importorskip("envport_gb", reason="the Game Boy core is not built: run install.sh")
    pytest.importorskip("pyboy", reason="PyBoy (extra `gb`) is not installed: run install.sh")
    if missing_tools() and shutil.which("sdasgb") is None:
        pytest.skip("sdcc is not installed (install.sh installs it): cannot assemble the ROMs")
