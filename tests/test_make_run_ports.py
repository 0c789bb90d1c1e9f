"""``make run`` can move localstripe and the provider fakes off their ports (issue 43, item 13):
``LOCALSTRIPE_PORT`` and ``FAKES_PORTS``, a taken port refused before anything starts, and
provider rows kept from an earlier run that follow the fakes to their new ports."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
from contextlib import ExitStack
from io import StringIO
from pathlib import Path

import pytest
import requests
from django.core.management import CommandError, call_command

from tests.waiting import wait_until
from upstreams.models import Provider

ROOT = Path(__file__).resolve().parent.parent


def free_ports(count: int) -> list[int]:
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


def listening(port: int) -> socket.socket:
    """Something else on ``port``."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    sock.listen()
    return sock


def answers(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def run_env(database: Path, **options: str) -> dict[str, str]:
    """The environment of someone typing ``make run``: none of the suite's settings."""
    env = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    return {**env, "DATABASE_URL": f"sqlite:///{database}", **options}


@pytest.mark.django_db
def test_set_provider_moves_a_providers_api_and_refuses_what_is_no_url():
    call_command(
        "create_provider", "--name", "rl", "--kind", "reloadly", "--base-url",
        "http://127.0.0.1:18610", "--auth-url", "http://127.0.0.1:18610",
        "--client-id", "i", "--client-secret", "s", stdout=StringIO(),
    )  # fmt: skip
    call_command(
        "set_provider", "--name", "rl", "--base-url", "http://127.0.0.1:19000",
        "--auth-url", "http://127.0.0.1:19001", stdout=StringIO(),
    )  # fmt: skip
    provider = Provider.objects.get(name="rl")
    assert (provider.base_url, provider.auth_url) == (
        "http://127.0.0.1:19000",
        "http://127.0.0.1:19001",
    )
    with pytest.raises(CommandError, match="--base-url: not an http"):
        call_command("set_provider", "--name", "rl", "--base-url", "ftp://x", stdout=StringIO())
    assert Provider.objects.get(name="rl").base_url == "http://127.0.0.1:19000"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_run_hands_the_port_options_to_the_run_script():
    out = subprocess.run(
        ["make", "-n", "run", "PORT=8123", "LOCALSTRIPE_PORT=8431", "PROVIDERS=fakes",
         "FAKES_PORTS=19000,19005,19010"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    line = next(line for line in out.splitlines() if "scripts/run.sh" in line)
    assert 'LOCALSTRIPE_PORT="8431"' in line and 'FAKES_PORTS="19000,19005,19010"' in line
    assert 'PROVIDERS="fakes"' in line and line.endswith("scripts/run.sh 127.0.0.1 8123")


def test_localstripe_starts_on_the_port_asked_for_and_refuses_a_taken_one(tmp_path):
    site_port, port, taken = free_ports(3)
    env = {**run_env(tmp_path / "db.sqlite3"), "LOCALSTRIPE_PORT": str(port)}
    script = ["scripts/localstripe.sh", "start", "127.0.0.1", str(site_port)]
    out = subprocess.run(script, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    try:
        assert f"export STRIPE_API_BASE=http://127.0.0.1:{port}\n" in out.stdout
        assert requests.get(f"http://127.0.0.1:{port}/js.stripe.com/v3/", timeout=5).ok
    finally:
        stop = ["scripts/localstripe.sh", "stop", str(site_port)]
        subprocess.run(stop, cwd=ROOT, check=True)
        (ROOT / "var" / f"localstripe-{site_port}.log").unlink(missing_ok=True)
    wait_until(lambda: not answers(port), timeout=10, what="localstripe to stop listening")

    with listening(taken):
        refused = subprocess.run(
            script, cwd=ROOT, env={**env, "LOCALSTRIPE_PORT": str(taken)},
            capture_output=True, text=True,
        )  # fmt: skip
    assert refused.returncode == 1 and refused.stdout == ""
    assert f"port {taken} is taken" in refused.stderr and "LOCALSTRIPE_PORT=" in refused.stderr
    assert not (ROOT / "var" / f"localstripe-{site_port}.pid").exists()


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"PROVIDERS": "fakes", "FAKES_PORTS": "{first}"}, "port {third} (the ding fake) is taken"),
        ({"PROVIDERS": "fakes", "FAKES_PORTS": "{first},{third}"}, "one port"),
        ({"PROVIDERS": "fakes", "FAKES_PORTS": "x"}, "ports are numbers"),
        ({"LOCALSTRIPE_PORT": "{third}"}, "port {third} (LOCALSTRIPE_PORT) is taken"),
    ],
)
def test_make_run_refuses_a_taken_or_malformed_port_before_starting_anything(
    tmp_path, options, says
):
    """FAKES_PORTS=N takes N, N+1 and N+2: the third one taken is refused."""
    first = free_ports(1)[0]
    while not all(_free(first + i) for i in range(3)):
        first = free_ports(1)[0]
    ports = {"first": first, "third": first + 2}
    database = tmp_path / "db.sqlite3"
    env = run_env(database, **{k: v.format(**ports) for k, v in options.items()})
    with listening(first + 2):
        done = subprocess.run(
            ["scripts/run.sh", "127.0.0.1", str(free_ports(1)[0])],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert says.format(**ports) in done.stderr
    assert not database.exists()  # nothing was started: not even the migration


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.integration
@pytest.mark.timeout(900)  # a migration, the demo catalog and four catalog syncs on SQLite
def test_make_run_serves_with_localstripe_and_the_fakes_on_the_ports_asked_for(tmp_path):
    """The whole ``make run PROVIDERS=fakes`` on moved ports, with a provider row left by an
    earlier run on the default ports: the rows follow the fakes, the site's pages allow the
    moved localstripe, and stopping the run stops them all."""
    site_port, stripe_port, *fake_ports = free_ports(5)
    database = tmp_path / "db.sqlite3"
    env = run_env(
        database,
        PROVIDERS="fakes",
        LOCALSTRIPE_PORT=str(stripe_port),
        FAKES_PORTS=",".join(map(str, fake_ports)),
    )
    python = str(ROOT / ".venv" / "bin" / "python")
    for command in (  # an earlier run's row, on the default port, disabled by a plain run since
        ["migrate", "-v0"],
        ["create_provider", "--name", "ding-fake", "--kind", "ding", "--base-url",
         "http://127.0.0.1:18612", "--api-key", "fake-ding-key"],
        ["set_provider", "--name", "ding-fake", "--enabled", "false"],
    ):  # fmt: skip
        subprocess.run([python, "manage.py", *command], cwd=ROOT, env=env, check=True, timeout=240)
    log = (tmp_path / "run.log").open("w+")
    run = subprocess.Popen(
        ["scripts/run.sh", "127.0.0.1", str(site_port)],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:

        def serving() -> bool:
            assert run.poll() is None, (tmp_path / "run.log").read_text()[-3000:]
            return answers(site_port)

        wait_until(
            serving,
            timeout=600,
            what="make run to serve the site",
            state=lambda: (tmp_path / "run.log").read_text()[-3000:],
            every=0.5,
        )
        output = (tmp_path / "run.log").read_text()
        assert f"localstripe at http://127.0.0.1:{stripe_port} " in output
        for name, port in zip(("reloadly", "dtone", "ding"), fake_ports, strict=True):
            assert re.search(rf"providers: the {name} fake at http://127\.0\.0\.1:{port}\b", output)
            assert answers(port)
        with sqlite3.connect(database) as db:
            rows = dict(db.execute("SELECT name, base_url FROM upstreams_provider"))
            enabled = dict(db.execute("SELECT name, enabled FROM upstreams_provider"))
        assert rows["reloadly-fake"] == f"http://127.0.0.1:{fake_ports[0]}"
        assert rows["dtone-fake"] == f"http://127.0.0.1:{fake_ports[1]}/v1"
        assert rows["ding-fake"] == f"http://127.0.0.1:{fake_ports[2]}"  # moved from 18612
        assert enabled["ding-fake"] == 1
        page = requests.get(f"http://127.0.0.1:{site_port}/", timeout=30)
        assert page.ok and f"http://127.0.0.1:{stripe_port}" in page.headers.get(
            "Content-Security-Policy", ""
        )
        # SITE_URL follows the port: a problem's type links to this run's error pages.
        problem = requests.get(f"http://127.0.0.1:{site_port}/api/v1/auth/me", timeout=30).json()
        assert (
            problem["type"] == f"http://127.0.0.1:{site_port}/api/v1/docs/errors/not_authenticated"
        )
        assert requests.get(problem["type"], timeout=30).ok
    finally:
        os.killpg(run.pid, signal.SIGTERM)
        try:
            run.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
        log.close()
        for leftover in (ROOT / "var").glob(f"*-{site_port}.*"):
            leftover.unlink()
    wait_until(
        lambda: not any(answers(p) for p in (stripe_port, *fake_ports)),
        timeout=10,
        what="localstripe and the fakes to stop listening",
    )
