#!/usr/bin/env bash
# Installs envport with everything it needs (Python dependencies, the C reference of Pong built
# at install time), then runs the main job: `envport run pong` (verify + bench + a report).
# Pass --no-run to install only; any other arguments go to `envport run`.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-python3}
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

"$PYTHON" -m pip install --quiet --upgrade "pip>=24" "setuptools>=69" wheel
"$PYTHON" -m pip install --quiet -e ".[dev]"
"$PYTHON" -c "import envport.envs.pong.reference as r; r._load()"  # the C build is importable

if [ "${1:-}" = "--no-run" ]; then
    exit 0
fi
exec envport run pong "$@"
