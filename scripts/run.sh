#!/usr/bin/env bash
# The embedded default: SQLite, tasks in-process, the built-in airtime simulator, and, when no
# STRIPE_SECRET_KEY is set, a local fake Stripe (localstripe) so card payments work offline
# in test mode: no card is ever charged (docs/payments.md).
# PROVIDERS=fakes (make run PROVIDERS=fakes) also starts local fakes of Reloadly, DT One and
# DingConnect, adds them as provider rows and syncs their catalogs: recharges of the products
# they sell are then routed between them (docs/providers.md).
# Ports, each on 127.0.0.1 (README, "The two commands"):
#   LOCALSTRIPE_PORT=N   localstripe on N (unset: 8420, or a free port when 8420 is taken)
#   FAKES_PORTS=N        the fakes on N, N+1 and N+2 (Reloadly, DT One, Ding); or three ports,
#                        FAKES_PORTS=19000,19005,19010 (unset: 18610-18612, each a free port
#                        instead when taken)
# A port asked for that is taken stops the run before anything starts, saying which.
set -euo pipefail
cd "$(dirname "$0")/.."
HOST=${1:-127.0.0.1}
PORT=${2:-8000}
PY=.venv/bin/python
FAKES=(reloadly dtone ding)
# The site's address follows this run's port (a problem's type link, links in email), unless
# SITE_URL says otherwise; a server on every address is reached on 127.0.0.1.
case "$HOST" in
  0.0.0.0 | :: | "[::]") site_host=127.0.0.1 ;;
  *:*) site_host="[${HOST//[\[\]]/}]" ;;  # an IPv6 address goes in brackets in a URL
  *) site_host=$HOST ;;
esac
export SITE_URL="${SITE_URL:-http://$site_host:$PORT}"

port_free() {  # nothing listens on 127.0.0.1:$1
  $PY -c 'import socket, sys; socket.socket().bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null
}

fake_ports=()
if [ "${PROVIDERS:-}" = "fakes" ]; then
  IFS=', ' read -r -a fake_ports <<<"${FAKES_PORTS:-}"
  for port in "${fake_ports[@]}"; do
    if ! [[ "$port" =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65533 ]; then
      echo "run: FAKES_PORTS=$FAKES_PORTS: ports are numbers from 1 to 65533" >&2
      exit 1
    fi
  done
  case ${#fake_ports[@]} in
    0) ;;
    1) fake_ports=("${fake_ports[0]}" $((fake_ports[0] + 1)) $((fake_ports[0] + 2))) ;;
    3) ;;
    *)
      echo "run: FAKES_PORTS=$FAKES_PORTS: one port (the fakes take it and the next two) or" \
        "three, e.g. FAKES_PORTS=19000 or FAKES_PORTS=19000,19005,19010" >&2
      exit 1
      ;;
  esac
  for i in "${!fake_ports[@]}"; do
    if ! port_free "${fake_ports[$i]}"; then
      echo "run: port ${fake_ports[$i]} (the ${FAKES[$i]} fake) is taken on 127.0.0.1;" \
        "choose others, e.g. make run PROVIDERS=fakes FAKES_PORTS=19000" >&2
      exit 1
    fi
  done
fi
if [ -z "${STRIPE_SECRET_KEY:-}" ] && [ -n "${LOCALSTRIPE_PORT:-}" ] && ! port_free "$LOCALSTRIPE_PORT"; then
  echo "run: port $LOCALSTRIPE_PORT (LOCALSTRIPE_PORT) is taken on 127.0.0.1;" \
    "choose another, e.g. make run LOCALSTRIPE_PORT=8430" >&2
  exit 1
fi

# PINs are encrypted at rest with FIELD_ENCRYPTION_KEY (docs/security.md): a development key
# is made once and kept in var/ (never committed), so the PINs of earlier runs stay readable.
if [ -z "${FIELD_ENCRYPTION_KEY:-}" ]; then
  mkdir -p var
  if [ ! -s var/field-encryption-key ]; then
    $PY -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())' \
      >var/field-encryption-key
    chmod 600 var/field-encryption-key
  fi
  FIELD_ENCRYPTION_KEY=$(cat var/field-encryption-key)
  export FIELD_ENCRYPTION_KEY
fi

$PY manage.py migrate --noinput -v0
if $PY manage.py help seed_demo >/dev/null 2>&1; then
  $PY manage.py seed_demo --qr  # the demo users, and the staff user's authenticator (2FA)
fi

localstripe=false
pids=()
stop() {
  if [ ${#pids[@]} -gt 0 ]; then kill "${pids[@]}" 2>/dev/null || true; fi
  if $localstripe; then scripts/localstripe.sh stop "$PORT"; fi
}
trap stop EXIT
trap 'exit 130' INT TERM  # then the EXIT trap stops what was started

if [ -z "${STRIPE_SECRET_KEY:-}" ]; then
  stripe_env=$(scripts/localstripe.sh start "$HOST" "$PORT")
  localstripe=true
  eval "$stripe_env"
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
  mkdir -p var
  urls=()
  for i in "${!FAKES[@]}"; do
    fake=${FAKES[$i]}
    if [ ${#fake_ports[@]} -eq 3 ]; then
      port=${fake_ports[$i]}
    elif port_free $((18610 + i)); then
      port=$((18610 + i))
    else
      port=0  # the default is taken: any free port (the provider row follows it)
    fi
    out=var/fake-$fake-$PORT.url
    rm -f "$out"
    $PY -m "tests.fakes.$fake" --port "$port" >"$out" 2>"var/fake-$fake-$PORT.log" &
    pids+=("$!")
    for _ in $(seq 100); do  # until it prints its URL (it listens then)
      [ -s "$out" ] && break
      kill -0 "${pids[-1]}" 2>/dev/null || break
      sleep 0.1
    done
    url=$(head -n 1 "$out" 2>/dev/null || true)
    if [ -z "$url" ]; then
      echo "run: the $fake fake did not start (var/fake-$fake-$PORT.log)" >&2
      exit 1
    fi
    urls+=("$url")
  done
  $PY manage.py set_fx_rate --from EUR --to USD --rate 1.08 >/dev/null
  add() { $PY manage.py create_provider "$@" >/dev/null 2>&1 || true; }  # kept across runs
  add --name reloadly-fake --kind reloadly --base-url "${urls[0]}" \
    --auth-url "${urls[0]}" --client-id fake-client --client-secret fake-secret
  add --name dtone-fake --kind dtone --base-url "${urls[1]}" \
    --api-key dtone-key --api-secret dtone-secret --currency USD
  add --name ding-fake --kind ding --base-url "${urls[2]}" --api-key fake-ding-key
  add --name simulator --kind simulator --priority 200  # every other demo product
  # Rows kept from an earlier run follow the fakes to this run's ports.
  $PY manage.py set_provider --name reloadly-fake --enabled true \
    --base-url "${urls[0]}" --auth-url "${urls[0]}" >/dev/null
  $PY manage.py set_provider --name dtone-fake --enabled true --base-url "${urls[1]}" >/dev/null
  $PY manage.py set_provider --name ding-fake --enabled true --base-url "${urls[2]}" >/dev/null
  for i in "${!FAKES[@]}"; do
    echo "providers: the ${FAKES[$i]} fake at ${urls[$i]}"
  done
  # The simulator first: it sells the demo catalog as seeded (the range of "Telcel any
  # amount", 20 to 1,000 MXN), before a fake's narrower range joins it (a product spans its
  # routes: contract section 17).
  for name in simulator reloadly-fake dtone-fake ding-fake; do
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
