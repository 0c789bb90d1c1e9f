#!/usr/bin/env bash
# Installs the `bench` extras (chart and profiler) into .venv from their lock,
# requirements/bench.txt (the dev lock plus matplotlib and pyinstrument, hashes checked).
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.bench-installed
if [ ! -f "$stamp" ] || [ requirements/bench.txt -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --require-hashes -r requirements/bench.txt 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import matplotlib, pyinstrument"
  touch "$stamp"
fi
