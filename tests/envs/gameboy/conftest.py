"""The Game Boy tests need the `gb` set-up (install.sh's default): the Rust core (module
envport_gb, built by install.sh), PyBoy 2.8.1 and sdcc. They are skipped, with the reason, only
when ENVPORT_EXTRAS leaves `gb` out (as test.sh does for cargo test); with the default set-up a
missing piece is a broken install and fails them."""

import importlib.util
import os
import shutil

import pytest

from envport.envs.gameboy.build_roms import missing_tools


@pytest.fixture(scope="session", autouse=True)
def gb_setup() -> None:
    missing = [why for absent, why in (
        (importlib.util.find_spec("envport_gb") is None,
         "the Game Boy core is not built: run install.sh"),
        (importlib.util.find_spec("pyboy") is None,
         "PyBoy (extra `gb`) is not installed: run install.sh"),
        (bool(missing_tools()) and shutil.which("sdasgb") is None,
         "sdcc is not installed (install.sh installs it): cannot assemble the ROMs"),
    ) if absent]
    if not missing:
        return
    if "gb" not in os.environ.get("ENVPORT_EXTRAS", "gb").split(","):
        pytest.skip(f"ENVPORT_EXTRAS leaves out `gb`: {missing[0]}")
    pytest.fail("; ".join(missing))
