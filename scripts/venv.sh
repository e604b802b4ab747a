#!/usr/bin/env bash
# Creates .venv with Python 3.11 and installs what runs Redline into it (idempotent).
#   scripts/venv.sh       -> requirements.txt, requirements-nodeps.txt (make demo, make serve)
#   scripts/venv.sh dev   -> the same, then requirements-dev.txt: tests and linters (make test, make lint)
set -euo pipefail
python=${PYTHON:-}
if [ -z "$python" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      python=$candidate; break
    fi
  done
fi
if [ -z "$python" ]; then
  echo "Redline needs Python 3.11 (python3.11 on PATH, or set PYTHON=...)." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "Creating .venv with $($python --version)"
  "$python" -m venv .venv || {
    echo "Could not create a virtual environment; on Debian: apt-get install python3-venv" >&2
    exit 1
  }
fi
stamp=.venv/.requirements.sha256
current=$(cat requirements.txt requirements-nodeps.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$current" ]; then
  echo "Installing Python packages (first run takes a few minutes)"
  .venv/bin/pip install -q -r requirements.txt
  .venv/bin/pip install -q --no-deps -r requirements-nodeps.txt
  echo "$current" > "$stamp"
fi
# A second stamp: the demo's installs never pull the tests' packages, and the tests' never
# reinstall the product's when only the dev list changed.
if [ "${1:-}" = "dev" ]; then
  dev_stamp=.venv/.requirements-dev.sha256
  dev_current=$(sha256sum requirements-dev.txt | cut -d' ' -f1)
  if [ "$(cat "$dev_stamp" 2>/dev/null)" != "$dev_current" ]; then
    echo "Installing the tests' and linters' Python packages"
    .venv/bin/pip install -q -r requirements-dev.txt
    echo "$dev_current" > "$dev_stamp"
  fi
fi
