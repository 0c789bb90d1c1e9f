#!/usr/bin/env bash
# The embedded default: SQLite, tasks in-process, the built-in airtime simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
HOST=${1:-127.0.0.1}
PORT=${2:-8000}
PY=.venv/bin/python
$PY manage.py migrate --noinput -v0
if $PY manage.py help seed_demo >/dev/null 2>&1; then
  $PY manage.py seed_demo
fi
echo "reseller: http://$HOST:$PORT/  (API docs: http://$HOST:$PORT/api/v1/docs/)"
exec $PY manage.py runserver "$HOST:$PORT"
