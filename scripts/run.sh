#!/usr/bin/env bash
# The embedded default: SQLite, tasks in-process, the built-in airtime simulator, and, when no
# STRIPE_SECRET_KEY is set, a local fake Stripe (localstripe) so card payments work offline
# in test mode: no card is ever charged (docs/payments.md).
# PROVIDERS=fakes (make run PROVIDERS=fakes) also starts local fakes of Reloadly, DT One and
# DingConnect, adds them as provider rows and syncs their catalogs: recharges of the products
# they sell are then routed between them (docs/providers.md).
set -euo pipefail
cd "$(dirname "$0")/.."
HOST=${1:-127.0.0.1}
PORT=${2:-8000}
PY=.venv/bin/python
$PY manage.py migrate --noinput -v0
if $PY manage.py help seed_demo >/dev/null 2>&1; then
  $PY manage.py seed_demo --qr  # the demo users, and the staff user's authenticator (2FA)
fi
if [ -z "${STRIPE_SECRET_KEY:-}" ]; then
  eval "$(scripts/localstripe.sh start "$HOST" "$PORT")"
  trap 'scripts/localstripe.sh stop' EXIT INT TERM
  echo "payments: test mode with localstripe at $STRIPE_API_BASE (no card is charged; cards 4242 4242 4242 4242, 5555 5555 5555 4444 …, listed on the checkout page)"
  # A demo pays many times from this one machine with a few test cards: the card fraud limits
  # are raised (docs/fraud.md). make run CARD_LIMITS_DEMO=false keeps production's.
  export CARD_LIMITS_DEMO="${CARD_LIMITS_DEMO:-true}"
  case "$CARD_LIMITS_DEMO" in true|True|TRUE|1|yes|on)
      echo "card limits: raised for this demo (CARD_LIMITS_DEMO=true; production keeps its own; make run CARD_LIMITS_DEMO=false keeps them here too)" ;;
    *) echo "card limits: as production has them unless CARD_LIMIT_* says otherwise (docs/fraud.md)" ;;
  esac
fi
if [ "${PROVIDERS:-}" = "fakes" ]; then
  pids=()
  for fake in "reloadly 18610" "dtone 18611" "ding 18612"; do
    set -- $fake
    $PY -m "tests.fakes.$1" --port "$2" >/dev/null 2>&1 &
    pids+=("$!")
  done
  trap 'kill "${pids[@]}" 2>/dev/null; [ -z "${STRIPE_SECRET_KEY:-}" ] && scripts/localstripe.sh stop' EXIT INT TERM
  for port in 18610 18611 18612; do  # until each fake answers
    for _ in $(seq 50); do
      (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
      sleep 0.1
    done
  done
  $PY manage.py set_fx_rate --from EUR --to USD --rate 1.08 >/dev/null
  add() { $PY manage.py create_provider "$@" >/dev/null 2>&1 || true; }  # kept across runs
  for name in reloadly-fake dtone-fake ding-fake; do
    $PY manage.py set_provider --name "$name" --enabled true >/dev/null 2>&1 || true
  done
  add --name reloadly-fake --kind reloadly --base-url http://127.0.0.1:18610 \
    --auth-url http://127.0.0.1:18610 --client-id fake-client --client-secret fake-secret
  add --name dtone-fake --kind dtone --base-url http://127.0.0.1:18611/v1 \
    --api-key dtone-key --api-secret dtone-secret --currency USD
  add --name ding-fake --kind ding --base-url http://127.0.0.1:18612 --api-key fake-ding-key
  add --name simulator --kind simulator --priority 200  # every other demo product
  for name in reloadly-fake dtone-fake ding-fake simulator; do
    echo "providers: $name $($PY manage.py sync_provider_catalog --provider "$name")"
  done
  echo "providers: routes and health at http://$HOST:$PORT/admin/upstreams/provider/"
else
  # The fakes of an earlier PROVIDERS=fakes run are not running now: not routed to.
  for name in reloadly-fake dtone-fake ding-fake; do
    $PY manage.py set_provider --name "$name" --enabled false >/dev/null 2>&1 || true
  done
fi
case "${WEBHOOK_ALLOW_PRIVATE_TARGETS:-}" in true|True|TRUE|1|yes|on)
    echo "webhooks: private and http:// targets allowed (WEBHOOK_ALLOW_PRIVATE_TARGETS; never in production)" ;;
esac
echo "reseller: http://$HOST:$PORT/  (API docs: http://$HOST:$PORT/api/v1/docs/)"
echo "back office: http://$HOST:$PORT/admin/  (the staff user above, with a code from the authenticator of its otpauth:// line)"
$PY manage.py runserver "$HOST:$PORT"
