#!/usr/bin/env bash
# Installs the command-line agents that `envport translate --agent claude|codex|gemini|aider`
# drives, at the versions envport's argv is written for, into a project-local prefix (never
# globally): the npm CLIs from envport/agent/clis/package-lock.json (`npm ci`), Aider in its own
# virtual environment (it is heavy and pins its own dependencies).
#
#     bash tests/agent/install_agent_clis.sh            # into .agent-clis/ (git-ignored)
#     bash tests/agent/install_agent_clis.sh DIR        # elsewhere; then export ENVPORT_AGENT_CLIS=DIR
#     python -m pytest -m agent_clis tests/agent        # the optional tests against them
#
# envport finds each CLI as $ENVPORT_CLAUDE / $ENVPORT_CODEX / $ENVPORT_GEMINI / $ENVPORT_AIDER
# (a path), else on PATH, else in this prefix ($ENVPORT_AGENT_CLIS, default .agent-clis).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PREFIX="${1:-${ENVPORT_AGENT_CLIS:-$ROOT/.agent-clis}}"
PYTHON=${PYTHON:-python3}

command -v npm >/dev/null 2>&1 || { echo "npm is needed (apt-get install nodejs npm)" >&2; exit 1; }
mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"
cp "$ROOT/envport/agent/clis/package.json" "$ROOT/envport/agent/clis/package-lock.json" "$PREFIX/"
# npm ci installs exactly the lock file (integrity-checked); no audit or funding requests.
(cd "$PREFIX" && npm ci --no-audit --no-fund --loglevel=error)

if [ ! -x "$PREFIX/aider-venv/bin/python" ]; then
    "$PYTHON" -m venv "$PREFIX/aider-venv"
fi
"$PREFIX/aider-venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r "$ROOT/envport/agent/clis/aider-requirements.txt"

for exe in "$PREFIX/node_modules/.bin/claude" "$PREFIX/node_modules/.bin/codex" \
           "$PREFIX/node_modules/.bin/gemini" "$PREFIX/aider-venv/bin/aider"; do
    # HOME in a temporary folder: --version must not read or write the user's agent settings.
    printf '%s: %s\n' "$(basename "$exe")" \
        "$(HOME="$(mktemp -d)" timeout 60 "$exe" --version </dev/null 2>/dev/null | tail -n 1)"
done
echo "installed in $PREFIX"
