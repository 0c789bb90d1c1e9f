#!/usr/bin/env bash
# Installs the `bench` optional dependencies of pyproject.toml (chart and profiler) into .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.bench-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  mapfile -t reqs < <(.venv/bin/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["bench"]))')
  .venv/bin/python -m pip install --quiet "${reqs[@]}" 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import matplotlib, pyinstrument"
  touch "$stamp"
fi
