#!/usr/bin/env bash
# Installs the reference of pokemon-gen1: the npm package pokemon-showdown at the exact version of
# reference/package-lock.json (integrity-checked by `npm ci`), into reference/node_modules/
# (git-ignored). Needs Node >= 18 and npm. Safe to run again: where node_modules already holds
# this lock file's install (a stamp of its SHA-256), npm is not run.
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

# npm ci deletes node_modules before installing: skipped where this lock is installed, so that
# running the set-up again (bash test.sh does) does not pull the package from a running worker
STAMP="$REF/node_modules/.envport-lock.sha256"
LOCK_SHA="$(node -e 'process.stdout.write(require("crypto").createHash("sha256")
    .update(require("fs").readFileSync(process.argv[1])).digest("hex"))' "$REF/package-lock.json")"
if [ -f "$REF/node_modules/pokemon-showdown/package.json" ] && [ -f "$STAMP" ] \
        && [ "$(cat "$STAMP")" = "$LOCK_SHA" ]; then
    echo "pokemon-showdown: node_modules already holds package-lock.json's install"
else
    (cd "$REF" && npm ci --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error)
    echo "$LOCK_SHA" > "$STAMP"
fi
VERSION="$(cd "$REF" && node -p "require('pokemon-showdown/package.json').version")"
echo "pokemon-showdown $VERSION installed in $REF/node_modules (Node $NODE_VERSION)"
