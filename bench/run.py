#!/usr/bin/env python
"""`make bench`: the service run the production way, loaded from this process, one table.

1. Creates a fresh PostgreSQL database (``reseller_bench_main``), migrates it and seeds it
   (bench/seed.py): a catalog of 100 products, B2B accounts with live keys and funded wallets.
2. Starts gunicorn (production settings, DEBUG=false, a generated SECRET_KEY, Redis cache and
   rate limits, Celery broker on Redis) on 127.0.0.1 and the recharge worker as docker-compose
   deploys it (one process per core, threads, pooled connections).
3. Loads it with closed-loop keep-alive clients (bench/load.py), every run bounded in time and
   in requests: B2B recharges and the floor endpoint at 1/8/32 clients, one hot wallet against
   many, the catalog at 100 and 10,000 products, the balance at 100 and 1,000,000 entries,
   B2B with a webhook endpoint on every event against B2B without, B2B with the request log
   against a second gunicorn without it, the worker's recharge rate against a no-op task's,
   a burst of B2B orders placed through the API against that rate, and at 500 ms provider
   latency; last, routing between three fake providers at 500 ms (tests/fakes, served from
   this process), the cheapest one down for the middle third of a run, against the same run
   without the outage.
4. Profiles the B2B path in-process (pyinstrument), checks the ledger, stops everything, drops
   the database, prints the table and writes bench/results/latest.json and latest.png.

Only 127.0.0.1 is ever loaded. See docs/performance.md for what each figure means.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import load  # noqa: E402
from bench.fake_hosts import FakeHost  # noqa: E402

RESULTS = ROOT / "bench" / "results"
HOST = "127.0.0.1"
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").exists() else sys.executable
BIN = Path(PY).parent


FIGURES = (
    "http", "network", "webhooks", "requestlog", "metrics", "routed", "pgbouncer", "fair",
    "profile", "routing",
)  # fmt: skip
# The recharge worker as docker-compose.yml deploys it.
PROCESSOR_PROCESSES = 2  # one per core, as docker-compose.yml runs replicas of the worker
PROCESSOR_THREADS = 100
PROCESSOR_POOL = 10
# The burst placed through the API: B2B orders of this many units (the most one line takes).
BURST_QUANTITY = 20
# PostgreSQL (15 and later) publishes a backend's counters when it goes idle, at most once a
# second; what it counted within a second of its last report waits until it has been idle for
# 10 s (PGSTAT_IDLE_INTERVAL). A commit count read sooner misses the last second of work.
STATS_SETTLE_S = 10.5
# Servers the bench shares with the machine, counted by process name in the CPU log.
SHARED_SERVERS = {"postgres": "postgresql", "redis-server": "redis"}
# The routing figure: fakes of the three providers (tests/fakes) served by threads of this
# process, each answering every send after ROUTING_DELAY_S (the top-up made at once), each
# with a ceiling of calls in flight above the worker's 200 threads. The worker's circuit
# cool-down (PROVIDER_CIRCUIT_COOLDOWN_SECONDS, 30 s deployed) is cut to a run of seconds.
ROUTING_DELAY_S = 0.5
ROUTING_MAX_IN_FLIGHT = 1000
ROUTING_COOLDOWN_S = 3
# The metrics figure's scraper: every 5 s (Prometheus's default is 15 s; more often costs more).
METRICS_SCRAPE_S = 5.0
# The fairness figure (issue 31): a provider ceiling of 20 calls at 500 ms (40 recharges/s),
# B..E's idle time measured over FAIR_IDLE_S of one recharge a second each.
FAIR_MAX_IN_FLIGHT = 20
FAIR_IDLE_S = 20.0
FAIR_TIMEOUT_S = 900.0
# The products recharged, sold by all three (operator slug, MXN): Telcel 100 and 200, AT&T 100.
ROUTING_PRODUCTS = (("telcel", 100), ("telcel", 200), ("att", 100))
FINAL = ("delivered", "failed")
# The routed figures (issue 39): production sends every recharge to a provider row. One
# Reloadly fake in a process of its own, its ceiling above the load; the recharges are of
# Telcel 100 MXN, which it sells. ROUTED_RECHARGES are placed through the API in B2B orders
# of 20 while the worker consumes, the fake answering each top-up after ROUTED_DELAY_S.
ROUTED_PROVIDER = "reloadly-one"
ROUTED_DELAY_S = 0.5
ROUTED_RECHARGES = 1200
RANGE_AMOUNT = "150"  # MXN: the routed figure's range orders (issue 40)
# PgBouncer as docker-compose.yml runs it (transaction pooling), on this port.
PGBOUNCER_PORT = 18439
PGBOUNCER_POOL = 40  # DEFAULT_POOL_SIZE of docker-compose.yml's pgbouncer


def deployed_database_path() -> str:
    """How docker-compose.yml's web service reaches PostgreSQL: "pgbouncer" or "direct"."""
    import yaml

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    url = compose["services"]["web"]["environment"]["DATABASE_URL"]
    return "pgbouncer" if "@pgbouncer:" in url else "direct"


class Bench:
    def __init__(self, args):
        self.args = args
        self.db = args.database
        base = args.postgres.rstrip("/")
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "CELERY_"))},
            "DJANGO_SETTINGS_MODULE": "reseller.settings.production",
            "DATABASE_URL": f"{base}/{self.db}",
            "REDIS_URL": f"{args.redis}/{args.cache_db}",
            "CELERY_BROKER_URL": f"{args.redis}/{args.broker_db}",
            "CACHE_KEY_PREFIX": "bench",
            "REQUEST_LOG_REDIS_KEY": "bench:requestlog",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "DEBUG": "false",
            "SECURE_SSL_REDIRECT": "false",
            "ALLOWED_HOSTS": f"{HOST},localhost",
            "BENCH_ENDPOINTS": "true",
            # The per-key limit (600/min) would cut every run short: the bench measures cost.
            "API_KEY_RATE_LIMIT_PER_MINUTE": "100000000",
            "AIRTIME_PROVIDER": "simulator",
            "AIRTIME_SIMULATOR_LATENCY_MS": "0",
            "LOG_LEVEL": "WARNING",
            # The webhook figure's receiver listens on 127.0.0.1 (a private target).
            "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
            "PYTHONUNBUFFERED": "1",
            # As deployed: prometheus_client's multiprocess files (docker-compose.yml).
            "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="bench-prometheus-"),
        }
        # What the apps' processes (gunicorn, workers) get on top of ``env``: the database as
        # docker-compose.yml reaches it (``use_database_path``). Migrations and the seeding
        # go straight to PostgreSQL, as compose's migrate service does.
        self.app_env: dict[str, str] = {}
        self.pgbouncer: subprocess.Popen | None = None
        self.admin_url = f"{base}/postgres"
        self.procs: list[subprocess.Popen] = []
        self.names: dict[int, str] = {}
        self.logs = RESULTS / "logs"
        self.seed: dict = {}
        self.drainer: subprocess.Popen | None = None
        self.rows: list[dict] = []
        self.series: dict[str, list[dict]] = {}
        self.notes: list[str] = []
        self.routed_created = False  # ROUTED_PROVIDER exists (routed_setup)

    # -- processes -------------------------------------------------------------------------
    def manage(self, *argv: str, timeout: int = 600) -> str:
        return self.python("manage.py", *argv, timeout=timeout)

    def python(self, *argv: str, timeout: int = 600) -> str:
        result = subprocess.run(
            [PY, *argv],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def seed_cmd(self, *argv: str) -> dict:
        return json.loads(self.python("bench/seed.py", *argv).strip().splitlines()[-1])

    def psql(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql)

    def commits(self) -> int:
        """Transactions committed in the bench's database so far (PostgreSQL's statistics)."""
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            row = conn.execute(
                "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", [self.db]
            ).fetchone()
        return int(row[0]) if row else 0

    def start(
        self, name: str, argv: list[str], env: dict | None = None, log_name: str | None = None
    ) -> subprocess.Popen:
        """Start a process of the bench; ``env`` on top of the bench's (a None value unsets)."""
        self.logs.mkdir(parents=True, exist_ok=True)
        log = (self.logs / f"{log_name or name}.log").open("w")
        merged = {**self.env, **self.app_env, **(env or {})}
        proc = subprocess.Popen(
            argv, cwd=ROOT, env={k: v for k, v in merged.items() if v is not None}, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.procs.append(proc)
        self.names[proc.pid] = name
        return proc

    def cpu_seconds(self) -> dict[int, tuple[str, float]]:
        """CPU time used so far by each process of interest: (name, seconds) by pid."""
        tick = os.sysconf("SC_CLK_TCK")
        used: dict[int, tuple[str, float]] = {}
        for pid_dir in Path("/proc").iterdir():
            if not pid_dir.name.isdigit():
                continue
            try:
                stat = (pid_dir / "stat").read_text()
            except OSError:
                continue
            comm, rest = stat.split("(", 1)[1].rsplit(")", 1)
            fields = rest.split()
            group = int(fields[2])  # the process group: the started process's pid
            name = self.names.get(group) or SHARED_SERVERS.get(comm.split()[0], "")
            if name:
                used[int(pid_dir.name)] = (name, (int(fields[11]) + int(fields[12])) / tick)
        used[0] = ("bench client", sum(os.times()[:2]))
        return used

    @staticmethod
    def cpu_delta(before: dict, after: dict) -> dict[str, float]:
        """CPU seconds by name between two samples (processes that ended meanwhile, such as
        short-lived PostgreSQL backends, are not counted)."""
        spent: dict[str, float] = {}
        for pid, (name, seconds) in after.items():
            spent[name] = spent.get(name, 0.0) + seconds - before.get(pid, (name, 0.0))[1]
        return {name: round(seconds, 2) for name, seconds in spent.items()}

    def stop(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        self.procs.remove(proc)

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.procs.clear()

    # -- setup -----------------------------------------------------------------------------
    def prepare(self) -> None:
        import redis

        for db in (self.args.cache_db, self.args.broker_db):
            redis.Redis.from_url(f"{self.args.redis}/{db}").flushdb()
        self.psql(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
        self.psql(f'CREATE DATABASE "{self.db}"')
        self.manage("migrate", "--noinput", "-v0")
        self.seed = self.seed_cmd("init", "--clients", str(max(self.args.clients)))
        log(f"seeded: {self.seed['catalog']}, {len(self.seed['many_keys'])} B2B accounts")

    def start_pgbouncer(self) -> None:
        """PgBouncer as docker-compose.yml runs it: transaction pooling in front of the
        bench's database, on 127.0.0.1:PGBOUNCER_PORT (trust, as the local PostgreSQL)."""
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        if not Path(binary).exists():
            raise RuntimeError("pgbouncer is not installed: scripts/bench-deps.sh installs it")
        folder = Path(tempfile.mkdtemp(prefix="bench-pgbouncer-"))
        folder.chmod(0o755)  # read by the postgres user PgBouncer runs as
        target = self.args.postgres.rstrip("/").split("://", 1)[1]
        user, _, hostport = target.rpartition("@")
        host, _, port = hostport.partition(":")
        (folder / "users.txt").write_text(f'"{user or "postgres"}" ""\n')
        (folder / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"{self.db} = host={host} port={port or 5432} dbname={self.db}\n"
            "[pgbouncer]\n"
            f"listen_addr = {HOST}\nlisten_port = {PGBOUNCER_PORT}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {folder / 'users.txt'}\n"
            f"pool_mode = transaction\ndefault_pool_size = {PGBOUNCER_POOL}\n"
            "max_client_conn = 2000\nignore_startup_parameters = extra_float_digits,options\n"
        )  # its log: bench/results/logs/pgbouncer.log
        user_flag = ["-u", "postgres"] if os.geteuid() == 0 else []
        self.pgbouncer = self.start(
            "pgbouncer", [binary, *user_flag, str(folder / "pgbouncer.ini")]
        )
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError), socket.create_connection((HOST, PGBOUNCER_PORT), 1):
                return
            if time.monotonic() > deadline or self.pgbouncer.poll() is not None:
                raise RuntimeError("pgbouncer did not start: see bench/results/logs/")
            time.sleep(0.1)

    def use_database_path(self, via: str) -> None:
        """The apps' processes started from now on reach PostgreSQL ``via`` "pgbouncer"
        (transaction pooling, DATABASE_PGBOUNCER) or "direct" (their own connections: the web
        server's persistent ones, the worker's psycopg pool)."""
        if via == "pgbouncer":
            if self.pgbouncer is None:
                self.start_pgbouncer()
            user = self.args.postgres.rstrip("/").split("://", 1)[1].rpartition("@")[0]
            where = f"{HOST}:{PGBOUNCER_PORT}/{self.db}"
            self.app_env = {
                "DATABASE_URL": f"postgres://{user or 'postgres'}@{where}",
                "DATABASE_PGBOUNCER": "true",
            }
        else:
            self.app_env = {"DATABASE_PGBOUNCER": "false"}

    def start_webhooks_worker(self) -> None:
        """The webhooks worker as docker-compose.yml runs it (deliveries and email, at nice
        10), whose figure also consumes the events the recharges emit."""
        self.start(
            "celery-webhooks",
            [
                "nice", "-n", "10",  # as docker-compose.yml runs it
                str(BIN / "celery"), "-A", "reseller", "worker", "--pool", "threads",
                "--concurrency", "16", "-Q", "celery-webhooks", "--loglevel", "WARNING",
                "--hostname", "webhooks-bench@%h", "--without-gossip", "--without-mingle",
            ],
        )  # fmt: skip

    def serve(self) -> None:
        self.deployed = deployed_database_path()
        self.use_database_path(self.deployed)
        log(f"database path as docker-compose.yml deploys it: {self.deployed}")
        self.start_gunicorn("gunicorn", self.args.port)
        self.start_processor("celery", "bench")
        self.start_webhooks_worker()
        # The request log's drain, every second at nice 10 as the deployed webhooks worker
        # runs it (bench/drain.py): the figures pay for writing the log, as a deployment does.
        self.drainer = self.start("requestlog-drain", ["nice", "-n", "10", PY, "bench/drain.py"])
        self.wait_healthy(self.args.port)
        self.celery = celery_app(self.env["CELERY_BROKER_URL"])
        self.workers = self.wait_for_workers("bench-")
        # The HTTP figures measure the request path: the worker waits (its queue fills) and is
        # measured on its own afterwards, so both do not share the two cores at once.
        self.consume(False)

    def start_gunicorn(
        self, name: str, port: int, env: dict | None = None, log_name: str | None = None
    ) -> subprocess.Popen:
        """The web server as docker-compose.yml deploys it, on ``port``."""
        return self.start(
            name,
            [
                str(BIN / "gunicorn"), "reseller.wsgi:application",
                "--bind", f"{HOST}:{port}",
                "--workers", str(self.args.workers),
                "--worker-class", "gthread", "--threads", str(self.args.threads),
                "--keep-alive", "30", "--backlog", "256", "--log-level", "warning",
                "--access-logfile", "-",  # as docker-compose.yml: its cost is measured too
            ],
            env=env,
            log_name=log_name,
        )  # fmt: skip

    def wait_healthy(self, port: int) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://{HOST}:{port}/healthz", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                    raise RuntimeError("gunicorn did not start: see bench/results/logs/") from None
                time.sleep(0.3)

    def start_processor(self, name: str, prefix: str, env: dict | None = None) -> None:
        """The recharge worker as docker-compose.yml deploys it: one process per core (its
        replicas), each with threads sharing a few pooled connections. Hostnames
        ``{prefix}-1@…``, ``{prefix}-2@…``."""
        for n in range(1, PROCESSOR_PROCESSES + 1):
            self.start(
                name,
                [
                    str(BIN / "celery"), "-A", "reseller", "worker", "--pool", "threads",
                    "--concurrency", str(PROCESSOR_THREADS), "-Q", "celery",
                    "--loglevel", "WARNING", "--hostname", f"{prefix}-{n}@%h",
                    "--without-gossip", "--without-mingle",
                ],
                env={"DATABASE_POOL_SIZE": str(PROCESSOR_POOL), **(env or {})},
                log_name=f"{name}-{n}",
            )  # fmt: skip

    def consume(self, on: bool, workers: list[str] | None = None) -> None:
        """Resume or pause the workers' consumers, and make sure they did: a busy worker can
        miss the broadcast, and a figure measured with the processor paused means nothing."""
        control = self.celery.control
        command = control.add_consumer if on else control.cancel_consumer
        for name in workers or self.workers:
            for _attempt in range(10):
                replies = command("celery", destination=[name], reply=True, timeout=5)
                if any(name in reply for reply in replies or []):
                    break
                log(f"  {name} did not confirm {'add' if on else 'cancel'}_consumer; again")
            else:
                raise RuntimeError(f"{name} did not confirm {'add' if on else 'cancel'}_consumer")

    # -- HTTP load -------------------------------------------------------------------------
    def http(
        self, name: str, clients: int, factory, expected: int, duration=None, port=None
    ) -> dict:
        cpu_before = self.cpu_seconds()
        result = load.run(
            host=HOST,
            port=port or self.args.port,
            clients=clients,
            make_request=factory,
            duration=duration or self.args.duration,
            warmup=self.args.warmup,
            max_requests=self.args.max_requests,
            expected=expected,
        )
        summary = result.summary()
        self.series.setdefault(name, []).append(summary)
        log(
            f"{name:<14} c={clients:<3} {summary['rps']:>8.1f} req/s  p50 {summary['p50_ms']:>7.2f}"
            f"  p99 {summary['p99_ms']:>7.2f} ms  errors {summary['errors']} {summary['statuses']}"
        )
        cpu = self.cpu_delta(cpu_before, self.cpu_seconds())
        # The CPU was spent over the warm-up too: the answers of both, at the measured rate.
        seconds = (duration or self.args.duration) + self.args.warmup
        answered = max(1.0, summary["rps"] * seconds)
        per = {k: round(v * 1000 / answered, 2) for k, v in cpu.items() if v >= 0.05}
        log(f"  CPU ms per request: {per}")
        if summary["errors"]:
            self.notes.append(f"{name} with {clients} clients: statuses {summary['statuses']}")
        return summary

    def b2b(
        self,
        keys: list[str],
        quantity: int = 1,
        product: str | None = None,
        local_amount: str | None = None,
    ):
        """B2B orders of ``quantity`` units; ``local_amount``: a range product's amount."""
        item: dict[str, Any] = {
            "productId": product or self.seed["product_id"],
            "recipientNumber": self.seed["recipient"],
            "quantity": quantity,
        }
        if local_amount is not None:
            item["localAmount"] = local_amount
        body = json.dumps({"items": [item], "baseCurrency": "EUR"}).encode()

        def factory(client: int, _n: int):
            headers = {
                "x-api-key": keys[client % len(keys)],
                "Idempotency-Key": uuid.uuid4().hex,
                "Content-Type": "application/json",
            }
            return "POST", "/api/v1/api-access/b2b/recharges", headers, body

        return factory

    def me(self, keys: list[str]):
        """``GET /api/v1/auth/me`` with each client's own key: the authenticated read the
        issue compares B2B with (the same key, authentication, permission and throttles)."""

        def factory(client: int, _n: int):
            return "GET", "/api/v1/auth/me", {"x-api-key": keys[client % len(keys)]}, None

        return factory

    def get(self, path: str, key: str):
        headers = {"x-api-key": key}
        return lambda _c, _n: ("GET", path, headers, None)

    def run_network(self) -> None:
        """Issue 42: B2B at 8 clients by agents at level 3 (each level 5 % over its parent by
        a price list) against B2B of top accounts, same run, alternated ABBA: what an agent's
        price chain costs a request (the worker paused, as for the other HTTP figures)."""
        clients = 8 if 8 in self.args.clients else max(self.args.clients)
        seeded = self.seed_cmd("network", "--clients", str(clients))
        top = ("b2b-top", self.b2b(seeded["top_keys"]))
        deep = ("b2b-agent3", self.b2b(seeded["deep_keys"]))
        order = [top, deep] + [top, deep, deep, top] * max(1, self.args.rounds // 2)
        runs: dict[str, list[dict]] = {"b2b-top": [], "b2b-agent3": []}
        for n, (name, factory) in enumerate(order):
            summary = self.http(name, clients, factory, 201)
            if n >= 2:  # the first of each warms up
                runs[name].append(summary)
        means = {
            name: {
                key: round(sum(run[key] for run in found) / len(found), 2)
                for key in ("rps", "p50_ms", "p99_ms")
            }
            for name, found in runs.items()
        }
        self.row(
            f"B2B recharge, {clients} clients, agents at level 3 (price lists at each level)",
            means["b2b-agent3"], f"B2B recharge, {clients} clients, top accounts, same run",
            means["b2b-top"], aim=0.8, aim_text=">= 0.8 x top",
        )  # fmt: skip

    def run_http(self) -> None:
        many, hot = self.seed["many_keys"], self.seed["hot_keys"]
        me, b2b, b2b_hot = {}, {}, {}
        for clients in self.args.clients:
            me[clients] = self.http("auth-me", clients, self.me(many), 200)
            b2b[clients] = self.http("b2b", clients, self.b2b(many), 201)
            b2b_hot[clients] = self.http("b2b-hot", clients, self.b2b(hot), 201)
        for clients in self.args.clients:
            run = b2b[clients]
            self.row(
                f"B2B recharge, {clients} client(s), one wallet each",
                run, f"GET /auth/me, same keys, {clients} client(s)", me[clients],
                aim=0.5, aim_text=">= 0.5 x me, p99<=3xp50",
                also=run["p99_ms"] <= 3 * run["p50_ms"],
            )  # fmt: skip
        for clients in self.args.clients[1:]:
            self.row(
                f"B2B, {clients} clients on ONE hot wallet",
                b2b_hot[clients], f"B2B, {clients} clients on {clients} wallets", b2b[clients],
                aim=0.5, aim_text=">= 0.5 x many",
            )  # fmt: skip

        key = self.seed["balance_key"]
        catalog = self.get(
            f"/api/v1/catalog/recharge-products?country={self.seed['country']}&limit=50", key
        )
        small = self.http("catalog-100", 1, catalog, 200)
        grown = self.seed_cmd("catalog", "--total", str(self.args.products))
        log(f"catalog grown to {grown}")
        large = self.http(f"catalog-{grown['products']}", 1, catalog, 200)
        self.row(
            f"catalog: 50 of {grown['matching']} in {self.seed['country']}, "
            f"{grown['products']} products",
            large, f"same page, {self.seed['catalog']['products']} products", small,
            aim=0.8, aim_text="about equal (>= 0.8)",
        )  # fmt: skip

        balance = self.get("/api/v1/wallet/balance", key)
        small = self.http("balance-100", 1, balance, 200)
        log(f"inserting {self.args.entries} ledger entries")
        entries = self.seed_cmd("ledger", "--entries", str(self.args.entries))
        large = self.http(f"balance-{entries['entries']}", 1, balance, 200)
        self.row(
            f"balance read, {entries['entries']:,} ledger entries",
            large, f"balance read, {self.seed['balance_entries']} entries", small,
            aim=0.8, aim_text="about equal (>= 0.8)",
        )  # fmt: skip

    # -- webhooks --------------------------------------------------------------------------
    def run_webhooks(self) -> None:
        """B2B with a webhook endpoint on every event, the processor and the delivery worker
        running, beside B2B of accounts without one (before and after: the mean)."""
        receiver = BenchReceiver()
        clients = 8 if 8 in self.args.clients else max(self.args.clients)
        hooked = self.seed_cmd("webhooks", "--clients", str(clients), "--url", receiver.url)
        many = self.seed["many_keys"]
        runs: dict[str, list[dict]] = {"b2b-nohook": [], "b2b-hooked": []}
        # A first run settles the database after the seeding; then the two alternate in
        # ABBA order, ``--rounds`` times (4): drift of the machine's speed (a neighbour on the
        # host, autovacuum, a checkpoint) that goes one way over the figure falls on both
        # alike. With two rounds, two full runs minutes apart gave 0.78 and 0.93.
        nohook_run, hooked_run = ("b2b-nohook", many), ("b2b-hooked", hooked["keys"])
        order = [("warmup", many)] + [nohook_run, hooked_run, hooked_run, nohook_run] * max(
            1, self.args.rounds
        )
        # The processor consumes through all the runs: resuming a paused consumer again and
        # again is where Celery's remote control is least reliable (a run measured once with
        # the processor silently paused).
        self.consume(True)
        for name, keys in order:
            self.celery.control.purge()
            cpu_before = self.cpu_seconds()
            summary = self.http(name, clients, self.b2b(keys), 201)
            cpu = self.cpu_delta(cpu_before, self.cpu_seconds())
            log(f"  CPU seconds during {name}: {cpu}")
            if cpu.get("celery", 0) < 0.1 * cpu.get("gunicorn", 0):
                raise RuntimeError(f"the processor did not run during {name}: {cpu}")
            if name in runs:
                runs[name].append(summary)
        self.consume(False)
        self.celery.control.purge()
        plain, with_hooks = (
            {
                key: round(sum(run[key] for run in runs[name]) / len(runs[name]), 2)
                for key in ("rps", "p50_ms", "p99_ms")
            }
            for name in ("b2b-nohook", "b2b-hooked")
        )
        time.sleep(2)
        states = self.seed_cmd("deliveries")["deliveries"]
        log(f"webhooks: the receiver got {receiver.count} signed events; deliveries {states}")
        self.notes.append(
            f"webhook figure: {receiver.count} events received, deliveries by state 2 s after "
            f"the last run: {states}"
        )
        receiver.stop()
        self.row(
            f"B2B, {clients} clients, webhook endpoint on every event (deliveries running)",
            with_hooks, f"B2B, {clients} clients, no endpoint (same run, alternated)", plain,
            aim=0.9, aim_text=">= 0.9 x no endpoint",
        )  # fmt: skip

    # -- two servers side by side ---------------------------------------------------------
    def alternate(
        self,
        on: tuple[str, dict],
        off: tuple[str, dict],
        *,
        cpu_extra: tuple[str, ...] = (),
        during=None,
    ) -> tuple[dict[str, dict], dict[str, float], int]:
        """B2B at 8 clients on two fresh gunicorns of the same configuration, one with the
        ``on`` environment, one with ``off`` ((name, env) each), the worker not consuming (as
        for the HTTP figures). They alternate ABBA after a warm-up of each; then both restart
        with the roles, ports and start order swapped, and ABBA again. Measured with the same
        environment on both, the server in the B slot was 4-6 % slower than the other, more
        than some of the costs measured here: swapping cancels what belongs to the server.
        ``cpu_extra``: other processes whose CPU belongs to the ``on`` side (the request
        log's drain); ``during(port)``: a context manager around each ``on`` run (a scraper).

        Returns each side's mean (rps, p50, p99), its CPU ms per request (web server, the
        extras, PostgreSQL and Redis), and the requests the ``on`` server answered."""
        clients = 8 if 8 in self.args.clients else max(self.args.clients)
        many = self.seed["many_keys"]
        (on_name, on_env), (off_name, off_env) = on, off
        runs: dict[str, list[dict]] = {on_name: [], off_name: []}
        # CPU milliseconds per request of the web server and of PostgreSQL: less sensitive than
        # throughput to a neighbour taking a core for a while.
        cpu_ms: dict[str, list[float]] = {on_name: [], off_name: []}
        answered = 0
        ports = (self.args.port + 1, self.args.port + 2)
        for half, (on_port, off_port) in enumerate((ports, ports[::-1]), start=1):
            roles = [
                (f"gunicorn-{on_name}", on_port, on_env),
                (f"gunicorn-{off_name}", off_port, off_env),
            ]
            servers = [
                self.start_gunicorn(name, port, env=env, log_name=f"{name}-{half}")
                for name, port, env in (roles if half == 1 else roles[::-1])
            ]
            for port in ports:
                self.wait_healthy(port)
            on_run, off_run = (on_name, on_port), (off_name, off_port)
            order = [(f"warmup-{on_name}", on_port), (f"warmup-{off_name}", off_port)]
            order += [off_run, on_run, on_run, off_run] * max(1, self.args.rounds // 2)
            for name, port in order:
                self.celery.control.purge()
                cpu_before = self.cpu_seconds()
                around = during(port) if during and port == on_port else contextlib.nullcontext()
                with around:
                    summary = self.http(name, clients, self.b2b(many), 201, port=port)
                cpu = self.cpu_delta(cpu_before, self.cpu_seconds())
                log(f"  CPU seconds during {name}: {cpu}")
                if name in runs:
                    runs[name].append(summary)
                    # The CPU counts the warm-up too: scale the measured requests to it.
                    sent = summary["requests"] * (1 + self.args.warmup / self.args.duration)
                    web = cpu.get(f"gunicorn-{name}", 0)
                    if port == on_port:
                        web += sum(cpu.get(extra, 0) for extra in cpu_extra)
                    stores = cpu.get("postgresql", 0) + cpu.get("redis", 0)
                    cpu_ms[name].append(1000 * (web + stores) / max(sent, 1))
            self.celery.control.purge()
            for server in servers:  # a graceful stop: the workers push what they hold
                self.stop(server)
            with (self.logs / f"gunicorn-{on_name}-{half}.log").open() as access:
                answered += sum(1 for line in access if '"POST /api/v1/api-access/b2b' in line)
        means = {
            name: {
                key: round(sum(run[key] for run in runs[name]) / len(runs[name]), 2)
                for key in ("rps", "p50_ms", "p99_ms")
            }
            for name in runs
        }
        cpu_mean = {name: sum(v) / len(v) for name, v in cpu_ms.items()}
        return means, cpu_mean, answered

    # -- the request log -------------------------------------------------------------------
    def run_requestlog(self) -> None:
        """B2B with the request log on (the deployed default: every API-key request captured,
        pushed onto a Redis list by a thread of each gunicorn process and written by the drain
        every second, bench/drain.py) beside B2B with ``REQUEST_LOG_ENABLED=false``, on the
        same keys (``alternate``)."""
        self.wait_logged()  # what the other figures' requests left in Redis
        rows_before = self.count_logged()
        means, cpu_ms, answered = self.alternate(
            ("log", {"REQUEST_LOG_ENABLED": "true"}),
            ("nolog", {"REQUEST_LOG_ENABLED": "false"}),
            cpu_extra=("requestlog-drain",),  # the drain writes what the logging runs logged
        )
        self.wait_logged()
        written = self.count_logged() - rows_before
        log(f"request log: {written} rows written for {answered} requests answered")
        self.notes.append(
            f"request log figure: {written} rows written for the {answered} requests the logging "
            "servers answered (warm-ups included)"
        )
        on, off = cpu_ms["log"], cpu_ms["nolog"]
        self.notes.append(
            f"request log figure: gunicorn (+ the drain) + PostgreSQL + Redis CPU per B2B request "
            f"{on:.2f} ms with the log, {off:.2f} ms without ({off / on:.2f})"
        )
        self.row(
            "B2B, 8 clients, request log on (written in the background)",
            means["log"], "B2B, 8 clients, log off (same run, alternated)", means["nolog"],
            aim=0.95, aim_text=">= 0.95 x log off",
        )  # fmt: skip

    # -- the cost of metrics ---------------------------------------------------------------
    def run_metrics(self) -> None:
        """B2B with metrics as deployed (the counting middleware, prometheus_client's
        multiprocess files in a directory of the server's own, and ``GET /metrics`` scraped
        every METRICS_SCRAPE_S as Prometheus would, with its collector's database reads) beside
        B2B with ``METRICS_ENABLED=false`` and no multiprocess directory (``alternate``)."""
        directory = Path(tempfile.mkdtemp(prefix="bench-metrics-"))
        scrapes: list[int] = []

        @contextlib.contextmanager
        def scraping(port: int):
            stop = threading.Event()

            def scrape() -> None:
                while True:  # one at the start of every run, then every METRICS_SCRAPE_S
                    with urllib.request.urlopen(f"http://{HOST}:{port}/metrics", timeout=10) as r:
                        scrapes.append(len(r.read()))
                    if stop.wait(METRICS_SCRAPE_S):
                        return

            thread = threading.Thread(target=scrape, daemon=True)
            thread.start()
            try:
                yield
            finally:
                stop.set()
                thread.join(15)

        try:
            means, cpu_ms, _answered = self.alternate(
                (
                    "metrics",
                    {"METRICS_ENABLED": "true", "PROMETHEUS_MULTIPROC_DIR": str(directory)},
                ),
                ("nometrics", {"METRICS_ENABLED": "false", "PROMETHEUS_MULTIPROC_DIR": None}),
                during=scraping,
            )
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        on, off = cpu_ms["metrics"], cpu_ms["nometrics"]
        self.notes.append(
            f"metrics figure: {len(scrapes)} scrapes of /metrics during the metrics runs (about "
            f"{(sum(scrapes) // max(1, len(scrapes))) // 1024} KiB each); gunicorn + PostgreSQL + "
            f"Redis CPU per B2B request {on:.2f} ms with metrics, {off:.2f} ms without "
            f"({off / on:.2f})"
        )
        self.row(
            f"B2B, 8 clients, metrics on (multiprocess, scraped every {METRICS_SCRAPE_S:.0f} s)",
            means["metrics"], "B2B, 8 clients, METRICS_ENABLED=false (same run, alternated)",
            means["nometrics"], aim=0.95, aim_text=">= 0.95 x metrics off",
        )  # fmt: skip

    def wait_logged(self, timeout: float = 120.0) -> None:
        """Until the drain has written every capture waiting in Redis."""
        import redis

        store = redis.Redis.from_url(self.env["REDIS_URL"])
        key = self.env["REQUEST_LOG_REDIS_KEY"]
        deadline = time.monotonic() + timeout
        while store.llen(key) + store.llen(f"{key}:processing"):
            if time.monotonic() > deadline or not self.drainer or self.drainer.poll() is not None:
                raise RuntimeError("the request log's drain fell behind: see bench/results/logs/")
            time.sleep(0.2)

    def count_logged(self) -> int:
        import psycopg

        url = f"{self.args.postgres.rstrip('/')}/{self.db}"
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM requestlog_apirequest").fetchone()
        return int(row[0]) if row else 0

    # -- the worker ------------------------------------------------------------------------
    def drain_seconds(self, publish, workers: list[str] | None = None) -> float:
        """Publish with the consumer paused, resume it and time until the queue is empty."""
        import redis

        broker = redis.Redis.from_url(self.env["CELERY_BROKER_URL"])
        self.consume(False, workers)
        publish()
        started = time.perf_counter()
        self.consume(True, workers)
        deadline = started + self.args.worker_timeout
        while broker.llen("celery") or broker.hlen("unacked"):
            if time.perf_counter() > deadline:
                raise RuntimeError("the worker did not drain its queue in time")
            time.sleep(0.005)
        elapsed = time.perf_counter() - started
        self.consume(False, workers)
        return elapsed

    def process_queued(self, ids: list[int], workers: list[str] | None = None) -> dict:
        """Publish a task for each of these queued recharges with the consumer paused, resume
        it, time until the queue is empty; the CPU and PostgreSQL commits per recharge."""
        before = self.seed_cmd("status")["recharges"]
        cpu_before, commits_before = self.cpu_seconds(), self.commits()
        processed = self.drain_seconds(
            lambda: [
                self.celery.send_task("recharges.tasks.recharge_process_task", args=(pk,))
                for pk in ids
            ],
            workers,
        )
        cpu = self.cpu_delta(cpu_before, self.cpu_seconds())
        after = self.seed_cmd("status")["recharges"]
        delivered = after.get("delivered", 0) - before.get("delivered", 0)
        log(f"worker: {len(ids)} recharges in {processed:.2f} s ({delivered} delivered)")
        per = {name: round(seconds * 1000 / len(ids), 2) for name, seconds in cpu.items()}
        commits = (self.settled_commits() - commits_before) / len(ids)
        log(f"  CPU ms per recharge: {per}; PostgreSQL commits per recharge: {commits:.2f}")
        self.notes.append(
            f"routed at 0 ms: CPU ms per recharge {per}; {commits:.2f} PostgreSQL commits per "
            "recharge"
        )
        if delivered != len(ids):
            self.notes.append(f"routed at 0 ms: {delivered} of {len(ids)} recharges delivered")
        return {"rps": round(delivered / processed, 1), "requests": len(ids), "seconds": processed}

    def run_routed(self) -> None:
        """Issue 39's figures, on the path production runs: every recharge to a provider row.
        One Reloadly fake in a process of its own (bench/fake_hosts.py) sells Telcel 100 MXN,
        its ceiling above the load, as the provider ROUTED_PROVIDER (created and synced with
        the CLI). The worker, web server and database path are as deployed.

        1. Routed at 0 ms: ``--tasks`` queued recharges (placed through the API with the
           consumer paused), their tasks published, timed until done, beside the same
           workers' rate on a no-op task.
        2. Routed at 500 ms: ROUTED_RECHARGES placed through the API (B2B orders of 20, back
           to back from one client) while the worker consumes; recharges/s from the first
           request to the last delivery, and the calls in flight that makes (Little's law).
        3. B2B at 8 clients while the worker delivers (the fake at 500 ms): the whole box,
           beside ``GET /auth/me`` at 8 clients in the same run (alternated)."""
        fake = FakeHost("reloadly", balance="100000000.00", delay=0.0)
        self.names[fake.pid] = "provider fake"
        try:
            product = self.routed_setup(fake)
            self.celery.control.purge()
            count = self.args.tasks
            cpu_before = self.cpu_seconds()
            noop = self.drain_seconds(
                lambda: [self.celery.send_task("reseller.tasks.noop_task") for _ in range(count)]
            )
            cpu = self.cpu_delta(cpu_before, self.cpu_seconds())
            log(f"worker: {count} no-op tasks in {noop:.2f} s")
            log(f"  CPU ms per task: { {k: round(v * 1000 / count, 2) for k, v in cpu.items()} }")
            floor = {"rps": round(count / noop, 1), "requests": count, "seconds": noop}
            self.fill_queued(count, product)
            ids = self.seed_cmd("queued", "--limit", str(count), "--product", product)["ids"]
            rate = self.process_queued(ids)
            self.row(
                f"routed at 0 ms: recharges/s, {PROCESSOR_PROCESSES} x {PROCESSOR_THREADS} "
                "threads, provider fake in its own process",
                rate, "no-op Celery task/s, same workers", floor,
                aim=1 / 3, aim_text=">= 1/3 x no-op",
            )  # fmt: skip

            fake.delay(ROUTED_DELAY_S)
            # Half the orders on Telcel's range product at 150 MXN (issue 40: held).
            slow = self.routed_burst([product, self.routed_range()], ROUTED_RECHARGES)
            in_flight = round(slow["rps"] * ROUTED_DELAY_S, 1)
            self.series["routed"] = [{"noop": floor, "at_0ms": rate, "at_500ms": slow}]
            self.row(
                f"routed at 500 ms: calls in flight, {slow['requests']} recharges placed "
                "through the API, half at 150 MXN of a range product (req/s col: in flight)",
                {"rps": in_flight}, "the aim: 100 in flight (200 recharges/s)", {"rps": 100.0},
                aim=1.0, aim_text=">= 100 in flight",
            )  # fmt: skip
            me, b2b = self.b2b_while_delivering(product)
            self.row(
                "B2B recharge, 8 clients, while the worker delivers (routed, 500 ms)",
                b2b, "GET /auth/me, 8 clients, same run (alternated)", me,
                aim=0.3, aim_text=">= 0.3 x me",
            )  # fmt: skip
        finally:
            fake.stop()
            # Its routes would take Telcel from the routing figure's three providers.
            self.manage("set_provider", "--name", ROUTED_PROVIDER, "--enabled", "false")

    def routed_setup(self, fake: FakeHost) -> str:
        """The provider row of the routed figures at ``fake``, created and synced as staff
        would the first time (enabled and pointed at the fake after that): the public id of
        its Telcel 100 MXN product."""
        if self.routed_created:
            self.manage(
                "set_provider", "--name", ROUTED_PROVIDER, "--enabled", "true",
                "--base-url", fake.url, "--auth-url", fake.url,
            )  # fmt: skip
            return self.routed_product()
        self.seed_cmd("routing-operators")
        self.manage(
            "create_provider", "--name", ROUTED_PROVIDER, "--kind", "reloadly",
            "--base-url", fake.url, "--auth-url", fake.url,
            "--client-id", "bench", "--client-secret", "bench",
            "--max-in-flight", str(ROUTING_MAX_IN_FLIGHT),
        )  # fmt: skip
        line = self.manage(
            "sync_provider_catalog", "--provider", ROUTED_PROVIDER, "--country", "MX"
        )
        log(f"routed: {ROUTED_PROVIDER} synced: {line.strip()}")
        self.routed_created = True
        return self.routed_product()

    def routed_product(self) -> str:
        """The public id of the Telcel 100 MXN product that ROUTED_PROVIDER sells."""
        listed = self.seed_cmd("routes", "--providers", "1")["products"]
        for found in listed:
            if found["operator"] == "telcel" and float(found["local_amount"]) == 100:
                return found["id"]
        raise RuntimeError("routed: no Telcel 100 MXN product after the sync")

    def routed_range(self) -> str:
        """Telcel's range product that ROUTED_PROVIDER sells (its RANGE operator, issue 40),
        as ``id@150``: ordered at 150 MXN."""
        listed = self.seed_cmd("routes", "--providers", "1")["products"]
        for found in listed:
            if found["operator"] == "telcel" and found["denomination"] == "range":
                return f"{found['id']}@{RANGE_AMOUNT}"
        raise RuntimeError("routed: no Telcel range product after the sync")

    def routed_burst(self, products: list[str], total: int) -> dict:
        """``total`` recharges placed through the API in B2B orders of BURST_QUANTITY (of
        ``products`` in turn), back to back from one client, while the worker consumes:
        recharges/s from the first request until every one is delivered."""
        orders = -(-total // BURST_QUANTITY)
        key = self.seed["many_keys"][0]
        self.consume(True)
        cpu_before = self.cpu_seconds()
        started = time.perf_counter()
        order_ids, latencies = self.place_orders(key, orders, BURST_QUANTITY, products)
        placed = time.perf_counter() - started
        delivered = self.wait_delivered(order_ids, orders * BURST_QUANTITY, started)
        elapsed = time.perf_counter() - started
        cpu = self.cpu_delta(cpu_before, self.cpu_seconds())
        self.consume(False)
        total = orders * BURST_QUANTITY
        per = {name: round(seconds * 1000 / total, 2) for name, seconds in cpu.items()}
        latencies.sort()
        log(
            f"routed at {ROUTED_DELAY_S * 1000:.0f} ms: {orders} orders of {BURST_QUANTITY} placed "
            f"in {placed:.2f} s, {delivered} of {total} delivered {elapsed:.2f} s after the first "
            f"request; CPU ms per recharge: {per}"
        )
        self.notes.append(
            f"routed at {ROUTED_DELAY_S * 1000:.0f} ms: {delivered} of {total} delivered in "
            f"{elapsed:.2f} s ({delivered / elapsed:.1f}/s); orders placed in {placed:.2f} s "
            f"(p50 {latencies[len(latencies) // 2]:.1f} ms); CPU ms per recharge {per}"
        )
        return {"rps": round(delivered / elapsed, 1), "requests": total, "seconds": elapsed}

    def b2b_while_delivering(self, product: str, port: int | None = None) -> tuple[dict, dict]:
        """B2B at 8 clients (the routed product) and ``GET /auth/me`` at 8 clients, alternated
        ABBA ``--rounds`` // 2 times after a warm-up of each, with the worker consuming
        throughout: the B2B runs' recharges are delivered while they run. The mean of each."""
        clients = 8 if 8 in self.args.clients else max(self.args.clients)
        many = self.seed["many_keys"]
        me_run, b2b_run = (
            ("me-busy", self.me(many), 200),
            ("b2b-busy", self.b2b(many, 1, product), 201),
        )
        order = [me_run, b2b_run] + [me_run, b2b_run, b2b_run, me_run] * max(
            1, self.args.rounds // 2
        )
        runs: dict[str, list[dict]] = {"me-busy": [], "b2b-busy": []}
        self.consume(True)
        for n, (name, factory, expected) in enumerate(order):
            summary = self.http(name, clients, factory, expected, port=port)
            if n >= 2:
                runs[name].append(summary)
        self.consume(False)
        self.celery.control.purge()
        means = {
            name: {
                key: round(sum(run[key] for run in found) / len(found), 2)
                for key in ("rps", "p50_ms", "p99_ms")
            }
            for name, found in runs.items()
        }
        return means["me-busy"], means["b2b-busy"]

    # -- PgBouncer or the pool -------------------------------------------------------------
    def run_pgbouncer(self) -> None:
        """The database path docker-compose.yml should ship (issue 39), measured on this box:
        every app process through PgBouncer (transaction pooling) against every one straight
        to PostgreSQL (the web server's persistent connections, the worker's psycopg pool).
        For each path in turn (ABBA), a fresh web server and worker: B2B at 8 clients while the
        worker delivers (routed, 500 ms) and the routed burst of 600 recharges at 500 ms."""
        fake = FakeHost("reloadly", balance="100000000.00", delay=ROUTED_DELAY_S)
        self.names[fake.pid] = "provider fake"
        port = self.args.port + 5
        results: dict[str, dict[str, list[dict]]] = {
            via: {"b2b": [], "burst": []} for via in ("pgbouncer", "direct")
        }
        try:
            product_id = self.routed_setup(fake)  # after the routed figures, or alone
            deployed = self.app_env
            for via in ("pgbouncer", "direct", "direct", "pgbouncer"):
                self.use_database_path(via)
                server = self.start_gunicorn(f"gunicorn-{via}", port)
                self.wait_healthy(port)
                before = set(self.procs)
                self.start_processor(f"celery-{via}", f"bench-{via}")
                workers = self.wait_for_workers(f"bench-{via}-")
                saved, self.workers = self.workers, workers
                try:
                    _me, b2b = self.b2b_while_delivering(product_id, port=port)
                    results[via]["b2b"].append(b2b)
                    results[via]["burst"].append(self.routed_burst_at(product_id, 600, port))
                finally:
                    self.workers = saved
                    for proc in [p for p in self.procs if p not in before]:
                        self.stop(proc)
                    self.stop(server)
            self.app_env = deployed
        finally:
            fake.stop()
            self.manage("set_provider", "--name", ROUTED_PROVIDER, "--enabled", "false")

        def mean(runs: list[dict]) -> dict:
            return {"rps": round(sum(r["rps"] for r in runs) / len(runs), 1)}

        other = "direct" if self.deployed == "pgbouncer" else "pgbouncer"
        self.series["pgbouncer"] = [results]
        for what, title in (
            ("b2b", "B2B, 8 clients, while the worker delivers"),
            ("burst", "routed at 500 ms, 600 recharges via the API"),
        ):
            self.row(
                f"{title}: {self.deployed} (as deployed)",
                mean(results[self.deployed][what]), f"the same through {other}",
                mean(results[other][what]), aim=1.0, aim_text=">= 1: compose ships the faster",
            )  # fmt: skip

    def routed_burst_at(self, product: str, total: int, port: int) -> dict:
        """``routed_burst`` against the web server on ``port``."""
        saved = self.args.port
        self.args.port = port
        try:
            return self.routed_burst([product], total)
        finally:
            self.args.port = saved

    def place_orders(
        self,
        key: str,
        orders: int,
        quantity: int,
        products: list[str] | None = None,
        port: int | None = None,
    ) -> tuple[list[str], list[float]]:
        """``orders`` B2B orders of ``quantity`` units, back to back from one client on one
        keep-alive connection (of ``products`` in turn, else the seeded product; a product
        given as ``id@amount`` is a range product ordered at that local amount); each must be
        answered 201. Their ids and latencies (ms)."""
        factories = [
            self.b2b([key], quantity, *(product.split("@", 1) if "@" in product else [product]))
            if product is not None
            else self.b2b([key], quantity)
            for product in products or [None]
        ]
        conn = http.client.HTTPConnection(HOST, port or self.args.port, timeout=60)
        ids: list[str] = []
        latencies: list[float] = []
        try:
            for n in range(orders):
                method, path, headers, body = factories[n % len(factories)](0, n)
                sent = time.perf_counter()
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                answer = response.read()
                latencies.append((time.perf_counter() - sent) * 1000)
                if response.status != 201:
                    raise RuntimeError(
                        f"B2B order {n + 1} of {orders}: {response.status} {answer[:500]!r}"
                    )
                ids.append(json.loads(answer)["id"])
        finally:
            conn.close()
        return ids, latencies

    def wait_delivered(self, order_ids: list[str], total: int, started: float) -> int:
        """Recharges of these orders delivered, polled until all ``total`` are or the
        worker's timeout passes. The polls read in one READ COMMITTED transaction (each
        statement sees the latest commits) that is rolled back: they add no commit."""
        import psycopg

        url = f"{self.args.postgres.rstrip('/')}/{self.db}"
        deadline = started + self.args.worker_timeout
        delivered = 0
        with psycopg.connect(url) as conn:
            conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
            pks = [
                row[0]
                for row in conn.execute(
                    "SELECT id FROM orders_order WHERE public_id = ANY(%s)", [order_ids]
                )
            ]
            while time.perf_counter() < deadline:
                row = conn.execute(
                    "SELECT count(*) FROM orders_recharge"
                    " WHERE order_id = ANY(%s) AND status = 'delivered'",
                    [pks],
                ).fetchone()
                delivered = int(row[0]) if row else 0
                if delivered >= total:
                    break
                time.sleep(0.01)
            conn.rollback()
        return delivered

    def settled_commits(self) -> int:
        """The commit counter once every backend has published what it counted."""
        time.sleep(STATS_SETTLE_S)
        return self.commits()

    def fill_queued(self, count: int, product: str) -> None:
        """At least ``count`` queued recharges of ``product``, placed through the API in B2B
        orders with the processor paused; their tasks are purged (the figure publishes its
        own)."""
        have = self.seed_cmd("queued", "--limit", str(count), "--product", product)["ids"]
        missing = count - len(have)
        if missing > 0:
            orders = -(-missing // BURST_QUANTITY)
            self.consume(False)
            self.place_orders(self.seed["many_keys"][-1], orders, BURST_QUANTITY, [product])
            self.celery.control.purge()
            log(f"worker: {orders} orders of {BURST_QUANTITY} placed for queued recharges")

    def wait_for_workers(self, prefix: str) -> list[str]:
        """The names of the processor's processes whose hostnames start with ``prefix``."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            names = sorted(
                name
                for reply in self.celery.control.ping(timeout=1.0)
                for name in reply
                if name.startswith(prefix)
            )
            if len(names) == PROCESSOR_PROCESSES:
                return names
        raise RuntimeError(f"workers {prefix}* did not answer: see bench/results/logs/")

    # -- fair dispatch ---------------------------------------------------------------------
    def run_fair(self) -> None:
        """Issue 31's fairness figure: account A's batch of ``--fair-batch`` lines (10,000)
        with the simulator at 500 ms and PROVIDER_MAX_IN_FLIGHT=20 (40 recharges/s at most),
        while accounts B..E each place one B2B recharge a second; beside B..E's time to
        delivered with nothing else running (idle), and A's batch rate alone.

        Fresh accounts (``seed.py accounts``): the earlier figures leave queued recharges
        whose messages they purged. Time to delivered is the recharge's ``delivered_at`` less
        its ``created_at`` (one clock: the database's). The worker is the 500 ms figure's
        configuration with the ceiling set; nothing else consumes."""
        size = self.args.fair_batch
        accounts = self.seed_cmd("accounts", "--prefix", "fair", "--count", "6")["accounts"]
        alone, batcher, others = accounts[0], accounts[1], accounts[2:]
        self.celery.control.purge()
        # The ceiling is the deployment's: a web server of its own here (the lane's first
        # share is published by the request), as every process of a deployment shares it.
        env = {
            "AIRTIME_SIMULATOR_LATENCY_MS": "500",
            "PROVIDER_MAX_IN_FLIGHT": str(FAIR_MAX_IN_FLIGHT),
        }
        port = self.args.port + 3
        self.start_gunicorn("gunicorn-fair", port, env=env)
        self.wait_healthy(port)
        self.start_processor("celery-fair", "bench-fair", env=env)
        workers = self.wait_for_workers("bench-fair-")
        self.consume(True, workers)

        stop = threading.Event()
        stop.set()
        idle_ids = self.trickle(others, stop, port, seconds=FAIR_IDLE_S)
        self.wait_accounts_final([a["account"] for a in others], len(idle_ids))
        idle = self.times_to_delivered(idle_ids)

        started = time.perf_counter()
        self.place_batch(alone["key"], size, port)
        self.wait_accounts_final([alone["account"]], size)
        rate_alone = size / (time.perf_counter() - started)
        log(f"fair: A's batch of {size} alone at {rate_alone:.1f}/s")

        stop.clear()
        trickled: list[str] = []
        thread = threading.Thread(
            target=lambda: trickled.extend(self.trickle(others, stop, port)), daemon=True
        )
        started = time.perf_counter()
        thread.start()
        self.place_batch(batcher["key"], size, port)
        self.wait_accounts_final([batcher["account"]], size)
        rate_with = size / (time.perf_counter() - started)
        stop.set()
        thread.join(30)
        self.wait_accounts_final([a["account"] for a in others], len(idle_ids) + len(trickled))
        busy = self.times_to_delivered(trickled)
        self.consume(False, workers)
        log(
            f"fair: A's batch of {size} beside B..E at {rate_with:.1f}/s; B..E time to delivered "
            f"idle p50 {idle['p50_ms']:.0f} p99 {idle['p99_ms']:.0f} ms ({idle['count']}), "
            f"during A's batch p50 {busy['p50_ms']:.0f} p99 {busy['p99_ms']:.0f} ms "
            f"({busy['count']})"
        )
        self.series["fair"] = [{"idle": idle, "busy": busy, "alone": rate_alone, "with": rate_with}]
        within = busy["p99_ms"] <= 4 * idle["p99_ms"]
        self.row(
            "fair: B..E time to delivered during A's batch (req/s col: 1000/p50)",
            {**busy, "rps": 1000 / busy["p50_ms"]},
            "B..E, nothing else running (1000/p50)",
            {**idle, "rps": 1000 / idle["p50_ms"]},
            aim=0.5, aim_text="p50 <= 2x, p99 <= 4x", also=within,
        )  # fmt: skip
        self.row(
            f"fair: A's batch of {size}, B..E placing 4/s",
            {"rps": round(rate_with, 1)},
            f"A's batch of {size} alone", {"rps": round(rate_alone, 1)},
            aim=0.9, aim_text=">= 0.9 x alone",
        )  # fmt: skip

    def trickle(
        self, accounts: list[dict], stop: threading.Event, port: int, seconds: float = 0
    ) -> list[str]:
        """Each account places one B2B recharge a second, for ``seconds`` or until ``stop``:
        the orders' ids."""
        ids: list[str] = []
        lock = threading.Lock()

        def one(key: str) -> None:
            deadline = time.perf_counter() + seconds
            tick = time.perf_counter()
            while (seconds and time.perf_counter() < deadline) or not (seconds or stop.is_set()):
                placed, _ = self.place_orders(key, 1, 1, port=port)
                with lock:
                    ids.extend(placed)
                tick += 1.0
                time.sleep(max(0.0, tick - time.perf_counter()))

        threads = [threading.Thread(target=one, args=(a["key"],)) for a in accounts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return ids

    def place_batch(self, key: str, lines: int, port: int) -> str:
        """A B2B batch of ``lines`` one-unit lines of the seeded product (202): its id."""
        item = {"productId": self.seed["product_id"], "recipientNumber": self.seed["recipient"]}
        body = json.dumps({"items": [{**item, "quantity": 1}] * lines, "baseCurrency": "EUR"})
        headers = {
            "x-api-key": key,
            "Idempotency-Key": uuid.uuid4().hex,
            "Content-Type": "application/json",
        }
        conn = http.client.HTTPConnection(HOST, port, timeout=300)
        try:
            conn.request("POST", "/api/v1/api-access/b2b/batches", body=body, headers=headers)
            response = conn.getresponse()
            answer = response.read()
        finally:
            conn.close()
        if response.status != 202:
            raise RuntimeError(f"batch of {lines}: {response.status} {answer[:500]!r}")
        return json.loads(answer)["id"]

    def wait_accounts_final(self, accounts: list[int], total: int) -> None:
        """Until ``total`` recharges of these accounts are final (or the fairness timeout)."""
        import psycopg

        url = f"{self.args.postgres.rstrip('/')}/{self.db}"
        deadline = time.perf_counter() + max(self.args.worker_timeout, FAIR_TIMEOUT_S)
        with psycopg.connect(url) as conn:
            conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
            while time.perf_counter() < deadline:
                row = conn.execute(
                    "SELECT count(*) FROM orders_recharge"
                    " WHERE account_id = ANY(%s) AND status = ANY(%s)",
                    [accounts, list(FINAL)],
                ).fetchone()
                if row and int(row[0]) >= total:
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError(f"fair: {total} recharges of {accounts} not final in time")
            conn.rollback()

    def times_to_delivered(self, order_ids: list[str]) -> dict:
        """p50/p99 (ms) of delivered_at less created_at of these orders' recharges."""
        import psycopg

        url = f"{self.args.postgres.rstrip('/')}/{self.db}"
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT extract(epoch FROM r.delivered_at - r.created_at) * 1000"
                " FROM orders_recharge r JOIN orders_order o ON o.id = r.order_id"
                " WHERE o.public_id = ANY(%s) AND r.status = 'delivered' ORDER BY 1",
                [order_ids],
            ).fetchall()
        times = [float(row[0]) for row in rows]
        if not times:
            raise RuntimeError("fair: no recharge delivered")
        return {
            "count": len(times),
            "p50_ms": round(times[len(times) // 2], 1),
            "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))], 1),
        }

    # -- routing between providers ---------------------------------------------------------
    def run_routing(self) -> None:
        """The issue's routing figure: three fake providers at 500 ms, the cheapest refusing
        connections for the middle third of a run, beside the same run without the outage.

        Provider rows switch the processor to routing for every recharge (the group commit
        is off), so this figure runs after the others. Its recharges are B2B orders of three
        products every provider sells, placed through the API with the consumer paused; each
        run publishes its own recharges to a worker of the 500 ms figure's configuration,
        resumes it and times until every one is final (delivered or failed). A warm-up run
        (the providers' first connections, Reloadly's token) comes first, uncounted."""
        fakes = self.start_fakes()
        # DT One calls back the URL the worker gives it (SITE_URL/webhooks/providers/…): a
        # receiver answering 200, rather than whatever listens on the default SITE_URL.
        receiver = BenchReceiver()
        try:
            products, cheapest = self.routing_setup(fakes)
            down_name = cheapest[products[0]]
            count = self.args.routing_recharges
            warm = max(100, count // 10)
            key = self.seed["many_keys"][-1]
            ids: dict[str, list[int]] = {}
            for name, total in (("warm-up", warm), ("no outage", count), ("outage", count)):
                orders = -(-total // BURST_QUANTITY)
                order_ids, _ = self.place_orders(key, orders, BURST_QUANTITY, products)
                ids[name] = self.recharges_of(order_ids)
            self.celery.control.purge()  # the runs publish their own
            log(f"routing: {', '.join(f'{len(v)} {k}' for k, v in ids.items())} recharges placed")

            self.start_processor(
                "celery-routing",
                "bench-routing",
                env={
                    "PROVIDER_CIRCUIT_COOLDOWN_SECONDS": str(ROUTING_COOLDOWN_S),
                    "SITE_URL": receiver.url.removesuffix("/hooks"),
                },
            )
            workers = self.wait_for_workers("bench-routing-")
            self.consume(False, workers)
            self.routing_run("warm-up", ids["warm-up"], workers)
            base = self.routing_run("no outage", ids["no outage"], workers)
            hit = self.routing_run(
                "outage", ids["outage"], workers, outage=(fakes[down_name], base["seconds"])
            )
            self.routing_report(fakes, ids, cheapest, down_name, base, hit)
        finally:
            for fake in fakes.values():
                fake.stop()
            receiver.stop()

    def start_fakes(self) -> dict:
        """The three providers' fakes on 127.0.0.1, each in a process of its own
        (bench/fake_hosts.py), by the provider name they get here, with funds for every run
        and ROUTING_DELAY_S on every send."""
        funds = "10000000.00"
        fakes = {}
        for name in ("reloadly-bench", "dtone-bench", "ding-bench"):
            fake = FakeHost(name.removesuffix("-bench"), balance=funds, delay=ROUTING_DELAY_S)
            self.names[fake.pid] = "provider fakes"
            fakes[name] = fake
        return fakes

    def routing_setup(self, fakes: dict) -> tuple[list[str], dict[str, str]]:
        """The three providers added and synced with the CLI, as staff would (docs/providers.md):
        the chosen products' public ids, and each product's cheapest provider."""
        reloadly, dtone, ding = (fakes[n] for n in ("reloadly-bench", "dtone-bench", "ding-bench"))
        self.seed_cmd("routing-operators")
        self.manage("set_fx_rate", "--from", "EUR", "--to", "USD", "--rate", "1.10")
        ceiling = ["--max-in-flight", str(ROUTING_MAX_IN_FLIGHT)]
        self.manage(
            "create_provider", "--name", "reloadly-bench", "--kind", "reloadly",
            "--base-url", reloadly.url, "--auth-url", reloadly.url,
            "--client-id", "bench", "--client-secret", "bench", *ceiling,
        )  # fmt: skip
        self.manage(
            "create_provider", "--name", "dtone-bench", "--kind", "dtone",
            "--base-url", dtone.url, "--api-key", dtone.api_key, "--api-secret", dtone.api_secret,
            "--currency", "USD", *ceiling,
        )  # fmt: skip
        self.manage(
            "create_provider", "--name", "ding-bench", "--kind", "ding", "--base-url", ding.url,
            "--api-key", ding.api_key, "--currency", "USD", *ceiling,
        )  # fmt: skip
        for name in fakes:
            line = self.manage("sync_provider_catalog", "--provider", name, "--country", "MX")
            log(f"routing: {name} synced: {line.strip()}")
        listed = self.seed_cmd("routes")["products"]
        chosen = []
        for operator, amount in ROUTING_PRODUCTS:
            found = [
                p
                for p in listed
                if p["operator"] == operator
                and float(p["local_amount"]) == amount
                and {r["provider"] for r in p["routes"]} == set(fakes)
            ]
            if not found:
                raise RuntimeError(f"routing: no product {operator} {amount} with three routes")
            chosen.append(found[0])
        cheapest = {p["id"]: p["routes"][0]["provider"] for p in chosen}
        for p in chosen:
            routes = ", ".join(f"{r['provider']} {r['cost']} {r['currency']}" for r in p["routes"])
            log(f"routing: {p['name']} ({p['id']}): {routes}")
        if len(set(cheapest.values())) != 1:
            raise RuntimeError(f"routing: the products' cheapest providers differ: {cheapest}")
        return [p["id"] for p in chosen], cheapest

    def recharges_of(self, order_ids: list[str]) -> list[int]:
        import psycopg

        url = f"{self.args.postgres.rstrip('/')}/{self.db}"
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT r.id FROM orders_recharge r JOIN orders_order o ON o.id = r.order_id"
                " WHERE o.public_id = ANY(%s) ORDER BY r.id",
                [order_ids],
            ).fetchall()
        return [row[0] for row in rows]

    def routing_run(
        self, name: str, ids: list[int], workers: list[str], outage: tuple | None = None
    ) -> dict:
        """Publish ``ids`` with the consumer paused, resume it, time until every one is final.
        ``outage``: (a fake, the no-outage run's seconds): that fake refuses connections from
        one third to two thirds of those seconds after the resume."""
        self.consume(False, workers)
        for pk in ids:
            self.celery.send_task("recharges.tasks.recharge_process_task", args=(pk,))
        cpu_before = self.cpu_seconds()
        window: dict[str, float] = {}
        started, wall = time.perf_counter(), time.time()
        toggler = None
        if outage is not None:
            fake, seconds = outage

            def toggle() -> None:
                time.sleep(max(0.0, started + seconds / 3 - time.perf_counter()))
                window["start"] = time.time()  # from here no new connection gets through
                fake.outage(True)
                window["closed"] = time.time()
                time.sleep(max(0.0, started + 2 * seconds / 3 - time.perf_counter()))
                fake.outage(False)
                window["end"] = time.time()

            toggler = threading.Thread(target=toggle, daemon=True)
            toggler.start()
        self.consume(True, workers)
        final, delivered = self.wait_final(ids, started)
        elapsed = time.perf_counter() - started
        self.consume(False, workers)
        if toggler is not None:
            toggler.join(60)
        cpu = self.cpu_delta(cpu_before, self.cpu_seconds())
        per = {k: round(v * 1000 / len(ids), 2) for k, v in cpu.items() if v >= 0.05}
        log(
            f"routing, {name}: {delivered} of {len(ids)} delivered, {final} final, in "
            f"{elapsed:.2f} s ({delivered / elapsed:.1f}/s)"
            + (
                f"; outage {window['start'] - wall:.2f}-{window['end'] - wall:.2f} s"
                if "end" in window
                else ""
            )
        )
        log(f"  CPU ms per recharge: {per}")
        return {
            "rps": round(delivered / elapsed, 1),
            "requests": len(ids),
            "seconds": round(elapsed, 3),
            "delivered": delivered,
            "final": final,
            "wall_started": wall,
            "window": window,
        }

    def wait_final(self, ids: list[int], started: float) -> tuple[int, int]:
        """(final, delivered) among ``ids``, polled until all are final or the worker's
        timeout passes; read as ``wait_delivered`` reads (no commit added)."""
        import psycopg

        url = f"{self.args.postgres.rstrip('/')}/{self.db}"
        deadline = started + self.args.worker_timeout
        final = delivered = 0
        with psycopg.connect(url) as conn:
            conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED
            while time.perf_counter() < deadline:
                row = conn.execute(
                    "SELECT count(*) FILTER (WHERE status = ANY(%s)),"
                    " count(*) FILTER (WHERE status = 'delivered')"
                    " FROM orders_recharge WHERE id = ANY(%s)",
                    [list(FINAL), ids],
                ).fetchone()
                final, delivered = (int(row[0]), int(row[1])) if row else (0, 0)
                if final >= len(ids):
                    break
                time.sleep(0.01)
            conn.rollback()
        return final, delivered

    def routed(self, ids: list[int]) -> list[dict]:
        """Each recharge: its reference, status, provider, product, when it was delivered,
        when its last send to that provider started (the attempt's end less its duration), and
        when that send's route was chosen: the later of its dispatch (the ``dispatched`` event,
        written where the route is chosen, under the row lock) and the end of the attempt
        before that send (a failover chooses again when the previous provider answers)."""
        import psycopg
        from psycopg.rows import dict_row

        url = f"{self.args.postgres.rstrip('/')}/{self.db}"
        with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
            return conn.execute(
                """
                SELECT r.public_id AS reference, r.status, r.provider, p.public_id AS product,
                       extract(epoch FROM r.delivered_at)::float8 AS delivered_at,
                       extract(epoch FROM a.created_at)::float8 - a.duration_ms / 1000.0
                           AS sent_at,
                       extract(epoch FROM greatest(d.created_at, prev.created_at))::float8
                           AS chosen_at
                FROM orders_recharge r
                JOIN catalog_product p ON p.id = r.product_id
                LEFT JOIN LATERAL (
                    SELECT id, created_at, duration_ms FROM recharges_rechargeattempt a
                    WHERE a.recharge_id = r.id AND a.provider = r.provider AND a.action = 'send'
                    ORDER BY a.id DESC LIMIT 1
                ) a ON true
                LEFT JOIN LATERAL (
                    SELECT created_at FROM orders_rechargeevent e
                    WHERE e.recharge_id = r.id AND e.to_status = 'dispatched'
                    ORDER BY e.id DESC LIMIT 1
                ) d ON true
                LEFT JOIN LATERAL (
                    SELECT created_at FROM recharges_rechargeattempt b
                    WHERE b.recharge_id = r.id AND b.id < a.id
                    ORDER BY b.id DESC LIMIT 1
                ) prev ON true
                WHERE r.id = ANY(%s)
                """,
                [ids],
            ).fetchall()

    def attempts_of(self, ids: list[int]) -> dict[str, int]:
        """The calls made for ``ids``: count by "provider action outcome"."""
        import psycopg

        url = f"{self.args.postgres.rstrip('/')}/{self.db}"
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT provider, action, outcome, count(*) FROM recharges_rechargeattempt"
                " WHERE recharge_id = ANY(%s) GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
                [ids],
            ).fetchall()
        return {f"{p} {a} {o}": int(n) for p, a, o, n in rows}

    @staticmethod
    def fake_deliveries(fakes: dict) -> tuple[dict[str, set[str]], dict[str, int]]:
        """From the fakes' own records: the references each delivered, and how many
        references each was sent more than once."""
        delivered: dict[str, set[str]] = {}
        resent: dict[str, int] = {}
        for name, fake in fakes.items():
            delivered[name], resent[name] = fake.deliveries()
        return delivered, resent

    def routing_report(
        self,
        fakes: dict,
        ids: dict[str, list[int]],
        cheapest: dict[str, str],
        down: str,
        base: dict,
        hit: dict,
    ) -> None:
        """The figure's four rows and its notes (docs/performance.md, "routing")."""
        window = hit["window"]
        if "end" not in window:
            raise RuntimeError(f"routing: the outage did not run its course: {window}")
        t0, t1 = window["start"], window["end"]
        rows = self.routed(ids["outage"])
        done = [r for r in rows if r["status"] == "delivered"]
        # Outside the outage: routed before the port closed or after it listened again, by the
        # time the route was chosen (a recharge routed during it is delivered after it, 500 ms
        # later, by another route, and one routed during it may be sent a few ms after it);
        # the counts by send and by delivery time are a note.
        outside = [r for r in done if r["chosen_at"] is not None and not t0 <= r["chosen_at"] <= t1]
        on_cheapest = [r for r in outside if r["provider"] == cheapest[r["product"]]]
        astray = sorted(
            r["chosen_at"] - t1 for r in outside if r["provider"] != cheapest[r["product"]]
        )
        sent_outside = [
            r for r in done if r["sent_at"] is not None and not t0 <= r["sent_at"] <= t1
        ]
        sent_cheapest = sum(1 for r in sent_outside if r["provider"] == cheapest[r["product"]])
        completed_outside = [r for r in done if not t0 <= r["delivered_at"] <= t1]
        completed_cheapest = sum(
            1 for r in completed_outside if r["provider"] == cheapest[r["product"]]
        )
        baseline = [r for r in self.routed(ids["no outage"]) if r["status"] == "delivered"]
        base_cheapest = sum(1 for r in baseline if r["provider"] == cheapest[r["product"]])

        # Twice delivered, from the fakes' records: a reference more than one fake delivered
        # (a fake keeps one top-up per reference: a second send is refused as a duplicate).
        by_fake, resent = self.fake_deliveries(fakes)
        seen: dict[str, list[str]] = {}
        for name, refs in by_fake.items():
            for ref in refs:
                seen.setdefault(ref, []).append(name)
        twice = sorted(ref for ref, names in seen.items() if len(names) > 1)
        # And against the database: each delivered recharge at the fake it names, and no
        # fake's top-up for a recharge the database does not hold as delivered there.
        every = self.routed([pk for run in ids.values() for pk in run])
        recorded = {r["reference"]: r["provider"] for r in every if r["status"] == "delivered"}
        unknown = [ref for ref, provider in recorded.items() if ref not in by_fake[provider]]
        unrecorded = [
            ref for ref, names in seen.items() if any(recorded.get(ref) != n for n in names)
        ]

        # Deliveries per second of the outage run, by provider (the chart of the failover).
        timeline: dict[int, dict[str, int]] = {}
        for r in done:
            second = int(r["delivered_at"] - hit["wall_started"])
            slot = timeline.setdefault(second, {})
            slot[r["provider"]] = slot.get(r["provider"], 0) + 1
        seconds = [{"second": s, **timeline[s]} for s in sorted(timeline)]
        attempts = self.attempts_of(ids["outage"])
        log(f"routing: outage run deliveries by second and provider: {seconds}")
        log(f"routing: outage run calls: {attempts}")
        self.series["routing"] = [
            {
                "no_outage": {k: v for k, v in base.items() if k != "window"},
                "outage": {k: v for k, v in hit.items() if k != "window"},
                "outage_window_s": [
                    round(t0 - hit["wall_started"], 3),
                    round(t1 - hit["wall_started"], 3),
                ],
                "deliveries_by_second": seconds,
                "calls": attempts,
                "twice_delivered": twice[:20],
                "delivered_by_fake": {name: len(refs) for name, refs in by_fake.items()},
                "sent_more_than_once": resent,
            }
        ]

        placed = len(ids["outage"])
        shown = ", ".join(f"{s:.2f}" for s in astray[:5])
        self.notes.append(
            f"routing: {down} refused connections {t0 - hit['wall_started']:.2f}-"
            f"{t1 - hit['wall_started']:.2f} s into a {hit['seconds']:.2f} s run (the no-outage "
            f"run took {base['seconds']:.2f} s); circuit cool-down {ROUTING_COOLDOWN_S} s"
        )
        self.notes.append(
            f"routing: of {len(outside)} deliveries routed outside the outage, {len(astray)} "
            f"went by another route, chosen {shown or '-'}{' …' if len(astray) > 5 else ''} s "
            f"after it ended (by send time instead: {sent_cheapest} of {len(sent_outside)}; by "
            f"delivery time: {completed_cheapest} of "
            f"{len(completed_outside)} on the cheapest route); no outage: {base_cheapest} of "
            f"{len(baseline)}"
        )
        self.notes.append(
            f"routing: deliveries by fake {self.series['routing'][0]['delivered_by_fake']}; "
            f"references sent more than once to one fake {resent}; delivered in the database "
            f"but not at its provider: {len(unknown)}; delivered at a fake but not recorded so: "
            f"{len(unrecorded)}"
        )
        if hit["final"] < placed or base["final"] < base["requests"]:
            self.notes.append(
                f"routing: not final after {self.args.worker_timeout:.0f} s: "
                f"{placed - hit['final']} (outage), {base['requests'] - base['final']} (no outage)"
            )
        self.row(
            "routing: recharges/s, 3 fakes at 500 ms, the cheapest down the middle third",
            hit, "the same, no outage (same worker, same run)", base,
            aim=0.8, aim_text=">= 0.8 x no outage",
        )  # fmt: skip
        self.row(
            "routing, outage run: recharges delivered (count)",
            {"rps": hit["delivered"]}, "recharges placed (count)", {"rps": placed},
            aim=0.995, aim_text=">= 99.5% delivered",
        )  # fmt: skip
        self.row(
            "routing, outage run: routed outside it, by the cheapest route (count)",
            {"rps": len(on_cheapest)}, "deliveries routed outside the outage (count)",
            {"rps": len(outside)}, aim=0.99, aim_text=">= 99% cheapest",
        )  # fmt: skip
        total = sum(len(run) for run in ids.values())
        self.row(
            "routing, all runs: references delivered twice (count)",
            {"rps": len(twice)}, "recharges placed, all runs (count)", {"rps": total},
            aim=0.0, aim_text="0 twice", also=not twice,  # met only when none was
        )  # fmt: skip

    # -- profile, checks -------------------------------------------------------------------
    def profile(self) -> None:
        try:
            out = self.python(
                "bench/profile_b2b.py",
                "--key", self.seed["many_keys"][0],
                "--product", self.seed["product_id"],
                "--recipient", self.seed["recipient"],
                "--requests", str(self.args.profile_requests),
                "--output", str(RESULTS / "b2b-profile.txt"),
            )  # fmt: skip
            log(out.strip())
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            self.notes.append(f"profile skipped: {str(exc).splitlines()[0]}")

    def check(self) -> dict:
        status = self.seed_cmd("status")
        try:
            self.manage("check_ledger")
            status["check_ledger"] = "clean"
        except RuntimeError as exc:
            status["check_ledger"] = str(exc)[-500:]
            self.notes.append("check_ledger found mismatches")
        return status

    def row(self, name, measured, floor_name, floor, *, aim, aim_text, also=True) -> None:
        """One line of the table; ``aim=None`` for a figure measured but not gated."""
        ratio = measured["rps"] / floor["rps"] if floor["rps"] else 0.0
        self.rows.append(
            {
                "figure": name,
                "rps": measured["rps"],
                "p50_ms": measured.get("p50_ms"),
                "p99_ms": measured.get("p99_ms"),
                "floor": floor_name,
                "floor_rps": floor["rps"],
                "floor_p50_ms": floor.get("p50_ms"),
                "floor_p99_ms": floor.get("p99_ms"),
                "ratio": round(ratio, 2),
                "aim": aim_text,
                "met": None if aim is None else ratio >= aim and also,
            }
        )

    def teardown(self) -> None:
        self.stop_all()
        shutil.rmtree(self.env["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)
        if not self.args.keep_db:
            try:
                self.psql(f'DROP DATABASE IF EXISTS "{self.db}" WITH (FORCE)')
            except Exception as exc:  # report and go on
                log(f"could not drop {self.db}: {exc}")


class BenchReceiver:
    """A reseller's webhook receiver on 127.0.0.1: answers 200 and counts the signed events.

    It stands in for the reseller's server, which runs elsewhere, so it costs the measured
    machine as little as it can: an asyncio protocol answering keep-alive HTTP/1.1 requests by
    their ``Content-Length`` (``http.server``, a thread and a header parse per request, cost
    0.2 ms of CPU an event on the same two cores as the system measured)."""

    def __init__(self) -> None:
        import asyncio

        self.count = 0
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(
                self.loop.create_server(lambda: _Receiving(self), HOST, 0)
            )
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        started.wait(10)
        self.url = f"http://{HOST}:{self.server.sockets[0].getsockname()[1]}/hooks"

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class _Receiving:
    """One connection to the bench receiver (an ``asyncio.Protocol``)."""

    ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

    def __init__(self, receiver: BenchReceiver) -> None:
        self.receiver, self.buffer, self.transport = receiver, b"", None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:end].lower()
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return  # the rest of the body is on its way
            self.buffer = self.buffer[end + 4 + length :]
            if b"\r\nreseller-signature: t=" in head:
                self.receiver.count += 1
            if self.transport is not None:
                self.transport.write(self.ANSWER)

    def eof_received(self) -> None:
        return None


def celery_app(broker: str):
    from celery import Celery

    return Celery("bench-client", broker=broker, set_as_current=False)


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def met_text(met: bool | None) -> str:
    return "-" if met is None else "yes" if met else "NO"


def table(rows: list[dict]) -> str:
    header = (
        f"{'figure':<52} {'req/s':>8} {'p50':>7} {'p99':>7} | {'floor':<40} {'req/s':>8} "
        f"{'p50':>7} {'p99':>7} | {'ratio':>5}  {'aim':<22} met"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r['figure']:<52} {r['rps']:>8.1f} {fmt(r['p50_ms'], '7.2f'):>7} "
            f"{fmt(r['p99_ms'], '7.2f'):>7} | {r['floor']:<40} {r['floor_rps']:>8.1f} "
            f"{fmt(r['floor_p50_ms'], '7.2f'):>7} {fmt(r['floor_p99_ms'], '7.2f'):>7} | "
            f"{r['ratio']:>5.2f}  {r['aim']:<22} {met_text(r['met'])}"
        )
    lines.append(
        "(latencies in ms; throughput = successful requests or tasks per second; rows marked "
        "(count) give counts, not rates)"
    )
    return "\n".join(lines)


def chart(series: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is missing (pip install '.[bench]'): no chart")
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, label in (
        ("auth-me", "GET /auth/me"),
        ("b2b", "B2B, one wallet per client"),
        ("b2b-hot", "B2B, one hot wallet"),
    ):
        points = series.get(name, [])
        xs = [p["clients"] for p in points]
        left.plot(xs, [p["rps"] for p in points], marker="o", label=label)
        (line,) = right.plot(xs, [p["p50_ms"] for p in points], marker="o", label=f"{label} p50")
        right.plot(
            xs, [p["p99_ms"] for p in points], marker="x", linestyle="--",
            color=line.get_color(), label=f"{label} p99",
        )  # fmt: skip
    ticks = sorted({p["clients"] for points in series.values() for p in points if "clients" in p})
    for axis, title, unit in ((left, "Throughput", "requests/s"), (right, "Latency", "ms")):
        axis.set_xscale("log", base=2)
        axis.set_xticks(ticks, [str(t) for t in ticks])
        axis.set_xlabel("concurrent clients")
        axis.set_ylabel(unit)
        axis.set_title(title)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=7)
    right.set_yscale("log")
    fig.suptitle("reseller: B2B recharge vs GET /auth/me (gunicorn, PostgreSQL, Redis)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True)
        return out.stdout.decode().strip()
    except OSError:
        return ""


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts, for development")
    parser.add_argument("--port", type=int, default=18431)
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="reseller_bench_main")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379")
    parser.add_argument("--cache-db", type=int, default=7)
    parser.add_argument("--broker-db", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn processes (as deployed)")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn process")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--duration", type=float, default=6.0, help="seconds measured per run")
    parser.add_argument("--warmup", type=float, default=1.5, help="seconds not counted per run")
    parser.add_argument("--max-requests", type=int, default=20_000, help="cap per run")
    parser.add_argument("--products", type=int, default=10_000)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--tasks", type=int, default=1000, help="tasks per worker figure")
    parser.add_argument("--worker-timeout", type=float, default=120)
    parser.add_argument(
        "--routing-recharges", type=int, default=1500, help="recharges per routing figure run"
    )
    parser.add_argument(
        "--burst-orders", type=int, default=60, help="B2B orders of 20 units in the API burst"
    )
    parser.add_argument(
        "--fair-batch", type=int, default=10_000, help="lines of A's batch in the fairness figure"
    )
    parser.add_argument("--profile-requests", type=int, default=300)
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="ABBA blocks of the side-by-side figures (webhooks, request log)",
    )
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=FIGURES,
        default=list(FIGURES),
        help="measure only these groups of figures (development; the table needs all)",
    )
    parser.add_argument("--output", type=Path, default=RESULTS / "latest.json")
    args = parser.parse_args()
    if args.quick:
        args.duration, args.warmup, args.entries = 1.5, 0.5, 20_000
        args.products, args.tasks, args.profile_requests = 2_000, 200, 50
        args.burst_orders = 6
        args.routing_recharges = 400
        args.fair_batch = 1000
        args.rounds = 2
    args.clients = sorted({max(1, min(c, 64)) for c in args.clients})  # bounded
    args.max_requests = max(10, min(args.max_requests, 100_000))
    args.burst_orders = max(1, min(args.burst_orders, 1_000))
    args.duration = min(args.duration, 60.0)
    return args


def main() -> int:
    args = parse_args()
    if not shutil.which(str(BIN / "gunicorn")):
        print("gunicorn is not installed in .venv: run scripts/setup.sh", file=sys.stderr)
        return 2
    bench = Bench(args)
    started = time.monotonic()
    try:
        bench.prepare()
        bench.serve()
        if "http" in args.only:
            bench.run_http()
        if "network" in args.only:
            bench.run_network()
        if "webhooks" in args.only:
            bench.run_webhooks()
        if "requestlog" in args.only:
            bench.run_requestlog()
        if "metrics" in args.only:
            bench.run_metrics()
        if "routed" in args.only:
            bench.run_routed()
        if "pgbouncer" in args.only:
            bench.run_pgbouncer()
        if "fair" in args.only:
            bench.run_fair()
        if "profile" in args.only:
            bench.profile()
        if "routing" in args.only:  # last: provider rows switch the processor to routing
            bench.run_routing()
        status = bench.check()
    finally:
        bench.teardown()
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": git_commit(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "setup": {
            "server": f"gunicorn gthread, {args.workers} processes x {args.threads} threads, "
            "reseller.settings.production, DEBUG=false",
            "worker": "celery prefork, concurrency 1, broker Redis",
            "client": "closed loop, one keep-alive HTTP/1.1 connection per client thread",
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "quick": args.quick,
        },
        "rows": bench.rows,
        "series": bench.series,
        "status": status,
        "notes": bench.notes,
        "wall_seconds": round(time.monotonic() - started, 1),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    if "http" in args.only:  # the chart draws the HTTP figures
        chart(bench.series, args.output.with_suffix(".png"))
    print()
    print(table(bench.rows))
    print(f"\nledger: {status['check_ledger']}; recharges by status: {status['recharges']}")
    for note in bench.notes:
        print(f"note: {note}")
    print(f"written: {args.output} and {args.output.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
