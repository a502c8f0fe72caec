#!/usr/bin/env bash
# The test command: installs (quick when already installed), checks the code (ruff, mypy), runs
# the Game Boy core's `cargo test`, then runs the default suite. The long equivalence runs are
# marked `slow`; run them with `python -m pytest -m slow` or with `envport verify ENV`.
set -uo pipefail
cd "$(dirname "$0")"
bash install.sh --no-run || exit 1
python3 -m ruff check . || exit 1
python3 -m mypy || exit 1
# The Game Boy core's Rust unit tests (opcodes, flags, timer); the crate without Python. Part of
# the default set-up (extra `gb`); skipped only when ENVPORT_EXTRAS leaves `gb` out.
case ",${ENVPORT_EXTRAS:-gb}," in
    *,gb,*) cargo test --quiet --manifest-path rust/envport-gb/Cargo.toml || exit 1 ;;
    *) echo "ENVPORT_EXTRAS has no 'gb': the Game Boy core's cargo test is not run" >&2 ;;
esac
# Two workers (pytest-xdist), each test file on one of them (its module fixtures and compiled
# functions stay shared; files that share one large compiled program together: ONE_WORKER in
# tests/conftest.py): the suite is mostly single-threaded compiles and Node/MuJoCo steps, so
# the second core was idle in a serial run. ENVPORT_TEST_WORKERS=0 runs it in one process.
python3 -m pytest -q -n "${ENVPORT_TEST_WORKERS:-2}" --dist loadfile "$@"
code=$?
if [ "$code" -eq 5 ]; then
    echo "no tests were collected" >&2
    exit 1
fi
exit "$code"
