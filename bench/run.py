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
   latency.
4. Profiles the B2B path in-process (pyinstrument), checks the ledger, stops everything, drops
   the database, prints the table and writes bench/results/latest.json and latest.png.

Only 127.0.0.1 is ever loaded. See docs/performance.md for what each figure means.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import load  # noqa: E402

RESULTS = ROOT / "bench" / "results"
HOST = "127.0.0.1"
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").exists() else sys.executable
BIN = Path(PY).parent


FIGURES = ("http", "webhooks", "requestlog", "worker", "profile")
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
        }
        self.admin_url = f"{base}/postgres"
        self.procs: list[subprocess.Popen] = []
        self.names: dict[int, str] = {}
        self.logs = RESULTS / "logs"
        self.seed: dict = {}
        self.drainer: subprocess.Popen | None = None
        self.rows: list[dict] = []
        self.series: dict[str, list[dict]] = {}
        self.notes: list[str] = []

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
        self.logs.mkdir(parents=True, exist_ok=True)
        log = (self.logs / f"{log_name or name}.log").open("w")
        proc = subprocess.Popen(
            argv, cwd=ROOT, env={**self.env, **(env or {})}, stdout=log,
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

    def serve(self) -> None:
        self.start_gunicorn("gunicorn", self.args.port)
        self.start_processor("celery", "bench")
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

    def b2b(self, keys: list[str], quantity: int = 1):
        body = json.dumps(
            {
                "items": [
                    {
                        "productId": self.seed["product_id"],
                        "recipientNumber": self.seed["recipient"],
                        "quantity": quantity,
                    }
                ],
                "baseCurrency": "EUR",
            }
        ).encode()

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
        self.start(
            "celery-webhooks",
            [
                "nice", "-n", "10",  # as docker-compose.yml runs it
                str(BIN / "celery"), "-A", "reseller", "worker", "--pool", "threads",
                "--concurrency", "16", "-Q", "celery-webhooks", "--loglevel", "WARNING",
                "--hostname", "bench-webhooks@%h", "--without-gossip", "--without-mingle",
            ],
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while len(self.celery.control.ping(timeout=1.0)) < PROCESSOR_PROCESSES + 1:
            if time.monotonic() > deadline:
                raise RuntimeError("the webhooks worker did not answer: see bench/results/logs/")
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

    # -- the request log -------------------------------------------------------------------
    def run_requestlog(self) -> None:
        """B2B with the request log on (the deployed default: every API-key request captured,
        pushed onto a Redis list by a thread of each gunicorn process and written by the drain
        every second, bench/drain.py) beside B2B with
        ``REQUEST_LOG_ENABLED=false``, on the same keys, the worker not consuming (as for the
        HTTP figures). Two fresh gunicorns of the same configuration (the main one has served
        the other figures) alternate ABBA after a warm-up of each; then both restart with the
        roles, ports and start order swapped, and ABBA again. Measured with the log off on
        both, the server in the B slot was 4-6 % slower than the other, more than the log's
        cost: swapping cancels what belongs to the server rather than to the log."""
        clients = 8 if 8 in self.args.clients else max(self.args.clients)
        many = self.seed["many_keys"]
        runs: dict[str, list[dict]] = {"b2b-logged": [], "b2b-unlogged": []}
        # CPU milliseconds per request of the web server and of PostgreSQL: less sensitive than
        # throughput to a neighbour taking a core for a while.
        cpu_ms: dict[str, list[float]] = {"b2b-logged": [], "b2b-unlogged": []}
        self.wait_logged()  # what the other figures' requests left in Redis
        rows_before = self.count_logged()
        answered = 0
        ports = (self.args.port + 1, self.args.port + 2)
        for half, (on_port, off_port) in enumerate((ports, ports[::-1]), start=1):
            roles = [
                ("gunicorn-log", on_port, "true"),
                ("gunicorn-nolog", off_port, "false"),
            ]
            servers = [
                self.start_gunicorn(
                    name, port, env={"REQUEST_LOG_ENABLED": enabled}, log_name=f"{name}-{half}"
                )
                for name, port, enabled in (roles if half == 1 else roles[::-1])
            ]
            for port in ports:
                self.wait_healthy(port)
            logged_run, plain_run = ("b2b-logged", on_port), ("b2b-unlogged", off_port)
            order = [("warmup-logged", on_port), ("warmup-unlogged", off_port)]
            order += [plain_run, logged_run, logged_run, plain_run] * max(1, self.args.rounds // 2)
            for name, port in order:
                self.celery.control.purge()
                cpu_before = self.cpu_seconds()
                summary = self.http(name, clients, self.b2b(many), 201, port=port)
                cpu = self.cpu_delta(cpu_before, self.cpu_seconds())
                log(f"  CPU seconds during {name}: {cpu}")
                if name in runs:
                    runs[name].append(summary)
                    # The CPU counts the warm-up too: scale the measured requests to it.
                    sent = summary["requests"] * (1 + self.args.warmup / self.args.duration)
                    web = cpu.get("gunicorn-log" if port == on_port else "gunicorn-nolog", 0)
                    if port == on_port:  # the drain writes what this run logged
                        web += cpu.get("requestlog-drain", 0)
                    # Redis too: the log's list is there (the rate limits use it on both).
                    stores = cpu.get("postgresql", 0) + cpu.get("redis", 0)
                    cpu_ms[name].append(1000 * (web + stores) / max(sent, 1))
            self.celery.control.purge()
            for server in servers:  # a graceful stop: the workers push what they hold
                self.stop(server)
            # Every request the logging server answered is in its access log.
            with (self.logs / f"gunicorn-log-{half}.log").open() as access:
                answered += sum(1 for line in access if '"POST /api/v1/api-access/b2b' in line)
        self.wait_logged()
        written = self.count_logged() - rows_before
        log(f"request log: {written} rows written for {answered} requests answered")
        self.notes.append(
            f"request log figure: {written} rows written for the {answered} requests the logging "
            "servers answered (warm-ups included)"
        )
        on, off = (sum(cpu_ms[name]) / len(cpu_ms[name]) for name in ("b2b-logged", "b2b-unlogged"))
        self.notes.append(
            f"request log figure: gunicorn (+ the drain) + PostgreSQL + Redis CPU per B2B request "
            f"{on:.2f} ms with the "
            f"log, {off:.2f} ms without ({off / on:.2f})"
        )
        logged, plain = (
            {
                key: round(sum(run[key] for run in runs[name]) / len(runs[name]), 2)
                for key in ("rps", "p50_ms", "p99_ms")
            }
            for name in ("b2b-logged", "b2b-unlogged")
        )
        self.row(
            f"B2B, {clients} clients, request log on (written in the background)",
            logged, f"B2B, {clients} clients, log off (same run, alternated)", plain,
            aim=0.95, aim_text=">= 0.95 x log off",
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

    def process_queued(self, count: int, workers: list[str] | None = None) -> dict:
        """Send ``count`` queued recharges to the processor; time until all are done."""
        self.fill_queued(count)
        ids = self.seed_cmd("queued", "--limit", str(count))["ids"]
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
        time.sleep(0.6)  # PostgreSQL publishes its counters every 0.5 s
        commits = (self.commits() - commits_before) / len(ids)
        log(f"  CPU ms per recharge: {per}; PostgreSQL commits per recharge: {commits:.2f}")
        if delivered != len(ids):
            self.notes.append(f"processor: {delivered} of {len(ids)} recharges delivered")
        return {"rps": round(delivered / processed, 1), "requests": len(ids), "seconds": processed}

    def run_worker(self) -> None:
        self.celery.control.purge()  # the recharges the HTTP runs queued
        count = self.args.tasks
        cpu_before = self.cpu_seconds()
        noop = self.drain_seconds(
            lambda: [self.celery.send_task("reseller.tasks.noop_task") for _ in range(count)]
        )
        cpu = self.cpu_delta(cpu_before, self.cpu_seconds())
        log(f"worker: {count} no-op tasks in {noop:.2f} s")
        log(f"  CPU ms per task: { {k: round(v * 1000 / count, 2) for k, v in cpu.items()} }")
        rate = self.process_queued(count)
        floor = {"rps": round(count / noop, 1), "requests": count, "seconds": noop}
        self.row(
            f"processor: recharges/s, {PROCESSOR_PROCESSES} x {PROCESSOR_THREADS} threads, 0 ms",
            rate, "no-op Celery task/s, same worker", floor,
            aim=1 / 3, aim_text=">= 1/3 x no-op",
        )  # fmt: skip
        self.run_burst(rate)

        # The same worker configuration against a provider that answers in 500 ms.
        self.start_processor(
            "celery-500ms", "bench-500ms", env={"AIRTIME_SIMULATOR_LATENCY_MS": "500"}
        )
        slow = self.wait_for_workers("bench-500ms-")
        self.consume(False, slow)
        slow_rate = self.process_queued(count, slow)
        in_flight = round(slow_rate["rps"] * 0.5, 1)
        self.series["worker"] = [{"processor": rate, "noop": floor, "processor_500ms": slow_rate}]
        self.notes.append(f"processor at 500 ms: {in_flight} recharges in flight on average")
        self.row(
            "processor: recharges/s, same worker, provider at 500 ms",
            slow_rate, "the aim: 100 recharges/s (50 in flight)", {"rps": 100.0},
            aim=1.0, aim_text=">= 100/s",
        )  # fmt: skip

    def run_burst(self, published: dict) -> None:
        """A burst placed through the API: ``--burst-orders`` B2B orders of 20 units, back to
        back from one client, the processor consuming as deployed; recharges/s from the first
        request until every recharge of those orders is delivered, beside the rate of the same
        processor on tasks published straight to the broker (``published``), and the
        processor's PostgreSQL commits per recharge over the burst."""
        orders, quantity = self.args.burst_orders, BURST_QUANTITY
        total = orders * quantity
        key = self.seed["many_keys"][0]
        # PostgreSQL counts every commit of the database: the API's own (the key, the
        # idempotency record, the order, the request log) are measured first, the same orders
        # with the processor paused, and taken off the burst's count.
        self.consume(False)
        before = self.settled_commits()
        self.place_orders(key, orders, quantity)
        self.celery.control.purge()  # their recharges stay queued, for the next figure
        calibrated = self.settled_commits()
        api_per_order = (calibrated - before) / orders

        self.consume(True)
        cpu_before = self.cpu_seconds()
        started = time.perf_counter()
        order_ids, latencies = self.place_orders(key, orders, quantity)
        placed = time.perf_counter() - started
        delivered = self.wait_delivered(order_ids, total, started)
        elapsed = time.perf_counter() - started
        cpu = self.cpu_delta(cpu_before, self.cpu_seconds())
        self.consume(False)
        burst_commits = self.settled_commits() - calibrated
        processor_commits = (burst_commits - api_per_order * orders) / total
        log(
            f"burst via API: {orders} orders of {quantity} placed in {placed:.2f} s, "
            f"{delivered} of {total} recharges delivered {elapsed:.2f} s after the first request"
        )
        per = {name: round(seconds * 1000 / total, 2) for name, seconds in cpu.items()}
        log(
            f"  CPU ms per recharge: {per}; PostgreSQL commits: {burst_commits} over the burst, "
            f"{api_per_order:.2f} per order for the API alone, so {processor_commits:.3f} per "
            "recharge for the processor"
        )
        latencies.sort()
        rate = {
            "rps": round(delivered / elapsed, 1),
            "requests": total,
            "seconds": round(elapsed, 2),
        }
        self.series["burst"] = [
            {
                **rate,
                "orders": orders,
                "quantity": quantity,
                "delivered": delivered,
                "placed_seconds": round(placed, 2),
                "order_p50_ms": round(latencies[len(latencies) // 2], 2),
                "order_max_ms": round(latencies[-1], 2),
                "commits": burst_commits,
                "api_commits_per_order": round(api_per_order, 2),
                "processor_commits_per_recharge": round(processor_commits, 3),
            }
        ]
        if delivered != total:
            self.notes.append(
                f"burst via API: {delivered} of {total} recharges delivered within "
                f"{self.args.worker_timeout:.0f} s"
            )
        self.notes.append(
            f"burst via API: {processor_commits:.3f} processor commits per recharge (the house "
            f"issue wants <= 0.2): {burst_commits} commits over the burst less "
            f"{api_per_order:.2f} per order for the API path, measured with the processor paused"
        )
        self.notes.append(
            f"burst via API: {orders} orders placed in {placed:.2f} s (a request: p50 "
            f"{latencies[len(latencies) // 2]:.1f} ms, max {latencies[-1]:.1f} ms)"
        )
        self.row(
            f"burst via API: {orders} orders x {quantity}, 1 client",
            rate, "processor at 0 ms, tasks published", published,
            aim=None, aim_text="measured, not gated",
        )  # fmt: skip

    def place_orders(self, key: str, orders: int, quantity: int) -> tuple[list[str], list[float]]:
        """``orders`` B2B orders of ``quantity`` units, back to back from one client on one
        keep-alive connection; each must be answered 201. Their ids and latencies (ms)."""
        factory = self.b2b([key], quantity)
        conn = http.client.HTTPConnection(HOST, self.args.port, timeout=60)
        ids: list[str] = []
        latencies: list[float] = []
        try:
            for n in range(orders):
                method, path, headers, body = factory(0, n)
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

    def fill_queued(self, count: int) -> None:
        """At least ``count`` queued recharges for a worker figure: when the HTTP figures did
        not leave enough (``--only worker``), B2B orders placed through the API with the
        processor paused; their tasks are purged (the figure publishes its own)."""
        missing = count - len(self.seed_cmd("queued", "--limit", str(count))["ids"])
        if missing > 0:
            orders = -(-missing // BURST_QUANTITY)
            self.place_orders(self.seed["many_keys"][-1], orders, BURST_QUANTITY)
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
    lines.append("(latencies in ms; throughput = successful requests or tasks per second)")
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
        "--burst-orders", type=int, default=60, help="B2B orders of 20 units in the API burst"
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
        if "webhooks" in args.only:
            bench.run_webhooks()
        if "requestlog" in args.only:
            bench.run_requestlog()
        if "worker" in args.only:
            bench.run_worker()
        if "profile" in args.only:
            bench.profile()
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
