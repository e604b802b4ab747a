#!/usr/bin/env bash
# Installs the JavaScript checking tools (ESLint) into node_modules/ from package-lock.json
# with `npm ci` (idempotent: only when the lockfile changed). The pages themselves need no
# Node: this is for `make lint` / `make test`.
set -euo pipefail
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "The JavaScript checks need Node.js 20.19 or newer with npm (on Debian: apt-get install nodejs npm)." >&2
  exit 1
fi
if ! node -e 'const [major, minor] = process.versions.node.split(".").map(Number); process.exit(major > 20 || (major === 20 && minor >= 19) ? 0 : 1)'; then
  echo "The JavaScript checks need Node.js 20.19 or newer, not $(node --version)." >&2
  exit 1
fi
stamp=node_modules/.package-lock.sha256
current=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$current" ]; then
  echo "Installing the JavaScript checking tools (npm ci)"
  npm ci --silent
  echo "$current" > "$stamp"
fi
