#!/usr/bin/env bash
# Installs envport with everything it needs, at the versions verified together
# (constraints.txt): the Python dependencies and extras (dev tools, performance peers, agent APIs,
# Ray), gymnax (without its stale gymnasium pin), the C reference of Pong (built at install time),
# the pinned pokemon-showdown npm package (Node >= 18), the Game Boy core (Rust, built with maturin;
# needs cargo) and its ROMs (assembled with Debian's sdcc, installed with apt-get when missing),
# then runs the main job: `envport run pong` (verify + bench + a report).
# Pass --no-run to install only; any other arguments go to `envport run`.
# ENVPORT_EXTRAS overrides the extras (default: dev,peers,agents,scale,gb,play).
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
EXTRAS=${ENVPORT_EXTRAS:-dev,peers,agents,scale,gb,play}
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
    echo "envport needs Python 3.11 (found: $("$PYTHON" --version 2>&1)). Set PYTHON=python3.11." >&2
    exit 1
fi
if ! command -v "${CC:-cc}" >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
    echo "envport builds the C reference of Pong at install time and needs a C compiler." >&2
    echo "Install one: 'apt-get install gcc' (Debian/Ubuntu), 'xcode-select --install' (macOS)." >&2
    exit 1
fi

pip_install() { "$PYTHON" -m pip install --quiet -c constraints.txt "$@"; }
"$PYTHON" -m pip install --quiet --upgrade "pip>=24" "setuptools>=69" wheel
pip_install -e ".[$EXTRAS]"
# gymnax 1.0.1 declares gymnasium<1.4 and runs with 1.4.0 (shared facts: its own metadata is
# stale), so it is installed without its dependencies, which the line above already provides.
case ",$EXTRAS," in *,peers,*) pip_install --no-deps gymnax==1.0.1 ;; esac
# poke-env 0.16.1 (envport play) pins gymnasium==1.3.0 / websockets==16.1.1 and runs with ours.
case ",$EXTRAS," in *,play,*) pip_install --no-deps poke-env==0.16.1 ;; esac
"$PYTHON" -c "import envport.envs.pong.reference as r; r._load()"  # the C build is importable
# Pokemon Showdown, the Gen 1 battles' reference: the pinned npm package, `npm ci` from its lock.
bash envport/envs/pokemon_gen1/install_reference.sh
# The Game Boy core and ROMs (extra `gb`: PyBoy, the reference, and maturin).
case ",$EXTRAS," in *,gb,*) PYTHON="$PYTHON" bash envport/envs/gameboy/install_core.sh ;; esac

if [ "${1:-}" = "--no-run" ]; then
    exit 0
fi
exec envport run pong "$@"
