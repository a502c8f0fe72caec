#!/usr/bin/env bash
# Installs the reference of pokemon-gen1: the npm package pokemon-showdown at the exact version of
# reference/package-lock.json (integrity-checked by `npm ci`), into reference/node_modules/
# (git-ignored). Needs Node >= 18 and npm. Safe to run again (npm ci replaces node_modules).
#
#     bash envport/envs/pokemon_gen1/install_reference.sh
#
# --omit=optional skips the Showdown server's database drivers; --ignore-scripts skips esbuild's
# postinstall (it downloads a native binary; the simulator runs from the shipped dist/ files).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REF="$HERE/reference"
MIN_NODE_MAJOR=18

if ! command -v node >/dev/null 2>&1; then
    echo "pokemon-gen1's reference (Pokemon Showdown) runs under Node.js >= $MIN_NODE_MAJOR, and" \
         "'node' is not on PATH. Install Node 20 LTS: 'apt-get install nodejs npm' (Debian/Ubuntu" \
         "with a recent release), 'brew install node@20' (macOS) or https://nodejs.org." >&2
    exit 1
fi
NODE_VERSION="$(node --version)"
NODE_MAJOR="${NODE_VERSION#v}"; NODE_MAJOR="${NODE_MAJOR%%.*}"
if ! [[ "$NODE_MAJOR" =~ ^[0-9]+$ ]] || [ "$NODE_MAJOR" -lt "$MIN_NODE_MAJOR" ]; then
    echo "pokemon-gen1 needs Node.js >= $MIN_NODE_MAJOR (found $NODE_VERSION at $(command -v node))." \
         "Install Node 20 LTS (https://nodejs.org, or your package manager's nodejs 20)." >&2
    exit 1
fi
if ! command -v npm >/dev/null 2>&1; then
    echo "npm is missing (Node $NODE_VERSION is installed without it): install npm," \
         "e.g. 'apt-get install npm'." >&2
    exit 1
fi

(cd "$REF" && npm ci --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error)
VERSION="$(cd "$REF" && node -p "require('pokemon-showdown/package.json').version")"
echo "pokemon-showdown $VERSION installed in $REF/node_modules (Node $NODE_VERSION)"
