#!/usr/bin/env bash
# Installs the `bench` extras (chart and profiler) into .venv from their lock, and pgbouncer,
# requirements/bench.txt (the dev lock plus matplotlib and pyinstrument, hashes checked).
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.bench-installed
if [ ! -f "$stamp" ] || [ requirements/bench.txt -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --require-hashes -r requirements/bench.txt 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import matplotlib, pyinstrument"
  touch "$stamp"
fi
# The database-path figure (and a deployment through PgBouncer) runs Debian's pgbouncer.
if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bench: installing pgbouncer"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null
    if command -v service >/dev/null 2>&1; then service pgbouncer stop >/dev/null 2>&1 || true; fi
  else
    echo "bench: pgbouncer is missing (apt-get install pgbouncer)" >&2
    exit 1
  fi
fi
