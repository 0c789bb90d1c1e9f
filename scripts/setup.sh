#!/usr/bin/env bash
# Creates .venv with Python >= 3.12 and installs the project's dependencies and dev tools from
# the lock (requirements/dev.txt: every version pinned, every file's hash checked). Idempotent:
# re-runs pip only when the lock changed since the last install. `make lock` regenerates it.
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
  local candidates=(python3 python3.13 python3.12)
  if command -v pyenv >/dev/null 2>&1; then
    candidates=("$(pyenv root)/versions/$(cat .python-version)/bin/python" "${candidates[@]}")
  fi
  candidates+=("$HOME/.pyenv/versions/$(cat .python-version)/bin/python")
  for py in "${candidates[@]}"; do
    if command -v "$py" >/dev/null 2>&1 &&
       "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  return 1
}

if [ ! -x .venv/bin/python ]; then
  PY=$(find_python) || { echo "Python 3.12+ is needed (pyenv 3.13.0 preferred)" >&2; exit 1; }
  echo "setup: creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi

stamp=.venv/.installed
lock=requirements/dev.txt
if [ ! -f "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
  echo "setup: installing dependencies from $lock"
  .venv/bin/python -m pip install --quiet --upgrade pip 2>&1 | grep -v "^WARNING: Location" || true
  # The project runs from this folder (manage.py, celery -A reseller); only its dependencies
  # are installed. --require-hashes: a file that differs from the one locked is refused.
  .venv/bin/python -m pip install --quiet --require-hashes -r "$lock" 2>&1 | grep -v "^WARNING: Location" || true
  .venv/bin/python -c "import django, rest_framework, celery, mypy" # fail loudly if pip failed
  touch "$stamp"
fi

# Browser tests (tests/browser) drive Debian's Chromium, never a downloaded browser build; the
# reverse-proxy drill (tests/test_fault_drills.py) starts Debian's nginx.
# `scripts/setup.sh --browser` (make test) installs what is missing with apt-get.
if [ "${1:-}" = "--browser" ] && ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing nginx (the reverse-proxy drill)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends nginx >/dev/null
  else
    echo "setup: nginx is missing; the reverse-proxy drill needs it (apt-get install nginx)" >&2
  fi
fi
# The several-hosts drill (tests/test_several_hosts.py) makes network namespaces with iproute2.
if [ "${1:-}" = "--browser" ] && ! command -v ip >/dev/null 2>&1 && [ ! -x /usr/sbin/ip ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing iproute2 (the several-hosts drill)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends iproute2 >/dev/null
  else
    echo "setup: iproute2 is missing; the several-hosts drill is skipped without it" >&2
  fi
fi
# The PgBouncer test (tests/test_operations.py) runs Debian's pgbouncer in transaction mode;
# it is skipped where the binary is missing. Installed without starting its service.
if [ "${1:-}" = "--browser" ] && ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing pgbouncer (the transaction-pooling test)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null || true
    # Debian's package starts its own service on 6432 where it can; the test starts its own.
    if command -v service >/dev/null 2>&1; then service pgbouncer stop >/dev/null 2>&1 || true; fi
  else
    echo "setup: pgbouncer is missing; its test is skipped (apt-get install pgbouncer)" >&2
  fi
fi
# tests/test_plural_forms.py runs gettext's `msgfmt --check` over every catalog (skipped without
# it); the site itself needs no gettext tools: the compiled .mo files are in the repository.
if [ "${1:-}" = "--browser" ] && ! command -v msgfmt >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing gettext (msgfmt checks the translations)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends gettext >/dev/null
  else
    echo "setup: msgfmt is missing; the catalogs' msgfmt check is skipped (apt-get install gettext)" >&2
  fi
fi
if [ "${1:-}" = "--browser" ] && [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing chromium and chromium-driver (browser tests)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
  else
    echo "setup: chromium is missing; the browser tests need it (apt-get install chromium chromium-driver)" >&2
  fi
fi
