#!/usr/bin/env bash
# The embedded default: SQLite, tasks in-process, the built-in airtime simulator, and, when no
# STRIPE_SECRET_KEY is set, a local fake Stripe (localstripe) so card payments work offline
# in test mode: no card is ever charged (docs/payments.md).
set -euo pipefail
cd "$(dirname "$0")/.."
HOST=${1:-127.0.0.1}
PORT=${2:-8000}
PY=.venv/bin/python
$PY manage.py migrate --noinput -v0
if $PY manage.py help seed_demo >/dev/null 2>&1; then
  $PY manage.py seed_demo
fi
if [ -z "${STRIPE_SECRET_KEY:-}" ]; then
  eval "$(scripts/localstripe.sh start "$HOST" "$PORT")"
  trap 'scripts/localstripe.sh stop' EXIT INT TERM
  echo "payments: test mode with localstripe at $STRIPE_API_BASE (no card is charged; card 4242 4242 4242 4242)"
fi
echo "reseller: http://$HOST:$PORT/  (API docs: http://$HOST:$PORT/api/v1/docs/)"
$PY manage.py runserver "$HOST:$PORT"
