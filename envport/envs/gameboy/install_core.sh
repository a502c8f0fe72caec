#!/usr/bin/env bash
# Builds and installs the Game Boy core (rust/envport-gb, Python module envport_gb) with maturin,
# and assembles the project's ROMs (envport/envs/gameboy/roms/*.s) with sdcc. Run by install.sh;
# quick when already done: the wheel is rebuilt only when the crate's sources changed (a hash
# of them is kept in rust/envport-gb/target/envport-built), a ROM only when its source changed.
set -euo pipefail
cd "$(dirname "$0")/../../.."
PYTHON=${PYTHON:-python3}
CRATE=rust/envport-gb

if ! command -v sdasgb >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "Installing sdcc (the Game Boy ROMs' assembler) with apt-get ..." >&2
        apt-get update -qq && apt-get install -y -qq --no-install-recommends sdcc >/dev/null
    else
        echo "The Game Boy ROMs are assembled with sdcc's sdasgb, which is not on PATH. Install" \
             "Debian's sdcc package as root: 'apt-get install sdcc' (4.2.0 verified), then run" \
             "install.sh again." >&2
        exit 1
    fi
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "The Game Boy core is written in Rust and 'cargo' is not on PATH. Install a Rust" \
         "toolchain (1.83 or newer; 1.95 verified): https://rustup.rs ('curl --proto =https" \
         "--tlsv1.2 -sSf https://sh.rustup.rs | sh'), then run install.sh again." >&2
    exit 1
fi

hash=$(cat "$CRATE/Cargo.toml" "$CRATE/Cargo.lock" "$CRATE/pyproject.toml" "$CRATE"/src/*.rs \
       | sha256sum | cut -d' ' -f1)
stamp="$CRATE/target/envport-built"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ] \
   && "$PYTHON" -c "import envport_gb" 2>/dev/null; then
    :
else
    rm -rf "$CRATE/target/wheels"
    "$PYTHON" -m maturin build --release --quiet -m "$CRATE/Cargo.toml" -o "$CRATE/target/wheels"
    "$PYTHON" -m pip install --quiet --force-reinstall --no-deps "$CRATE"/target/wheels/*.whl
    echo "$hash" > "$stamp"
fi
"$PYTHON" -c "from envport.envs.gameboy.build_roms import main; raise SystemExit(main([]))" >/dev/null
