#!/usr/bin/env bash
# Starts localstripe (the fake Stripe server of the embedded default) in the background on
# 127.0.0.1 and prints the environment that points the site at it:
#   eval "$(scripts/localstripe.sh start HOST PORT)"   # HOST/PORT: where the site will listen
#   scripts/localstripe.sh stop PORT
# LOCALSTRIPE_PORT=N: on port N, or not at all (exit 1) when N is taken. Unset: port 8420 if
# free, else any free port. Its pid and log live in var/, one pair per site port, so two sites
# (make run PORT=8000 and PORT=8001) each keep their own.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var
BIN=.venv/bin/localstripe

case "${1:-start}" in
  stop)
    PIDFILE=var/localstripe-${2:-8000}.pid
    if [ -f "$PIDFILE" ]; then
      kill "$(cat "$PIDFILE")" 2>/dev/null || true
      rm -f "$PIDFILE"
    fi
    ;;
  start)
    SITE_HOST=${2:-127.0.0.1}
    SITE_PORT=${3:-8000}
    PIDFILE=var/localstripe-$SITE_PORT.pid
    [ -x "$BIN" ] || { echo "localstripe is missing: run scripts/setup.sh" >&2; exit 1; }
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      kill "$(cat "$PIDFILE")" 2>/dev/null || true  # left by an earlier run of this site
    fi
    PORT=$(.venv/bin/python - "${LOCALSTRIPE_PORT:-}" <<'PY'
import socket, sys
wanted = sys.argv[1].strip()
if wanted and not (wanted.isdigit() and 0 < int(wanted) < 65536):
    sys.exit(f"localstripe: LOCALSTRIPE_PORT={wanted} is not a port number (1 to 65535)")
for port in ((int(wanted),) if wanted else (8420, 0)):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(s.getsockname()[1])
        break
else:
    sys.exit(
        f"localstripe: port {wanted} is taken on 127.0.0.1; "
        "choose another, e.g. make run LOCALSTRIPE_PORT=8430"
    )
PY
)
    "$BIN" --port "$PORT" --from-scratch >"var/localstripe-$SITE_PORT.log" 2>&1 &
    echo $! >"$PIDFILE"
    BASE="http://127.0.0.1:$PORT"
    SECRET=whsec_local_embedded_default
    # Wait for it, then send its webhooks to the site (kept in localstripe's memory only).
    .venv/bin/python - "$BASE" "http://$SITE_HOST:$SITE_PORT/webhooks/stripe" "$SECRET" <<'PY'
import json, sys, time, urllib.request
base, url, secret = sys.argv[1:]
for _ in range(100):
    try:
        urllib.request.urlopen(f"{base}/js.stripe.com/v3/", timeout=1)
        break
    except urllib.error.HTTPError:
        break  # it answers
    except OSError:
        time.sleep(0.1)
request = urllib.request.Request(
    f"{base}/_config/webhooks/reseller",
    data=json.dumps({"url": url, "secret": secret}).encode(),
    headers={"Content-Type": "application/json"},
    method="POST",
)
try:
    urllib.request.urlopen(request, timeout=5)
except OSError as exc:
    print(f"localstripe: could not register the webhook: {exc}", file=sys.stderr)
PY
    echo "export STRIPE_API_BASE=$BASE"
    echo "export STRIPE_SECRET_KEY=sk_test_local_embedded"
    echo "export STRIPE_PUBLISHABLE_KEY=pk_test_local_embedded"
    echo "export STRIPE_WEBHOOK_SECRET=$SECRET"
    ;;
  *)
    echo "usage: $0 start [SITE_HOST SITE_PORT] | stop [SITE_PORT]" >&2
    exit 2
    ;;
esac
