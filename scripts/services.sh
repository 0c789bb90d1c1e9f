#!/usr/bin/env bash
# Makes sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) answer, starting (and, as a
# last resort, installing) them when they do not. Used by the test command.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_up; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    echo "services: installing PostgreSQL"
    as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  echo "services: starting PostgreSQL"
  for version in $(ls /etc/postgresql 2>/dev/null); do
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  done
  for _ in $(seq 30); do pg_up && break; sleep 1; done
  pg_up || { echo "services: PostgreSQL does not answer on 127.0.0.1:5432" >&2; exit 1; }
fi

if ! redis_up; then
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "services: installing Redis"
    as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  echo "services: starting Redis"
  mkdir -p /tmp/reseller-redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /tmp/reseller-redis --logfile /tmp/reseller-redis/redis.log
  for _ in $(seq 30); do redis_up && break; sleep 1; done
  redis_up || { echo "services: Redis does not answer on 127.0.0.1:6379" >&2; exit 1; }
fi
echo "services: PostgreSQL and Redis are up"
