"""Hosts of a test's own on this machine: Linux network namespaces joined by a bridge.

``HostNetwork`` makes a bridge in the machine's namespace with the first address of a /24 of
10.231.0.0/16 that no interface uses (the gateway), and one namespace per host, each with a
veth pair to the bridge, an address of that /24, loopback and a default route to the gateway.
A process started under ``host.prefix`` (``ip netns exec NAME``) has that host's network only:
it cannot reach 127.0.0.1 of the machine, where PostgreSQL and Redis listen. ``TcpForwarder``
is the way in: it listens on the gateway's address and forwards each connection to a loopback
service, as a database or broker host on the network would answer. Names carry a run id (many
runs may share the machine); ``down`` removes everything, and is safe to call twice.

Needs root and ``ip netns`` (iproute2); ``host_network_unavailable`` says why not, or None.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import subprocess
import threading
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

IP = shutil.which("ip") or "/usr/sbin/ip"
SUBNETS = "10.231"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([IP, *args], capture_output=True, text=True, check=check, timeout=20)


def host_network_unavailable() -> str | None:
    """Why this machine cannot make test hosts, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    if not os.path.exists(IP):
        return "iproute2's `ip` is not installed"
    probe = f"rsl-probe-{uuid.uuid4().hex[:6]}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` is not available here: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


@dataclass
class Host:
    name: str
    namespace: str
    address: str

    @property
    def prefix(self) -> list[str]:
        """The command that runs a program on this host."""
        return [IP, "netns", "exec", self.namespace]


class HostNetwork:
    def __init__(self) -> None:
        self.run = uuid.uuid4().hex[:6]
        self.bridge = f"rb{self.run}"
        self.hosts: list[Host] = []
        self._bridge_made = False
        used = _ip("-4", "-o", "addr", "show").stdout + _ip("-4", "route", "show").stdout
        free = [n for n in range(256) if f"{SUBNETS}.{n}." not in used]
        if not free:
            raise RuntimeError(f"every /24 of {SUBNETS}.0.0/16 is in use")
        self.subnet = f"{SUBNETS}.{random.choice(free)}"
        self.gateway = f"{self.subnet}.1"

    def up(self) -> HostNetwork:
        _ip("link", "add", self.bridge, "type", "bridge")
        self._bridge_made = True
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        return self

    def add_host(self, name: str) -> Host:
        """A namespace on the bridge, with the next address (.10, .11, ...)."""
        index = len(self.hosts)
        host = Host(name, f"rsl-{self.run}-{name}", f"{self.subnet}.{10 + index}")
        self.hosts.append(host)  # before it exists: ``down`` removes what was half made
        outside, inside = f"rv{self.run}{index}", f"rp{self.run}{index}"
        _ip("netns", "add", host.namespace)
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", host.namespace)
        _ip("link", "set", outside, "master", self.bridge, "up")
        inner = ["-n", host.namespace]
        _ip(*inner, "link", "set", inside, "name", "eth0")
        _ip(*inner, "addr", "add", f"{host.address}/24", "dev", "eth0")
        _ip(*inner, "link", "set", "eth0", "up")
        _ip(*inner, "link", "set", "lo", "up")
        _ip(*inner, "route", "add", "default", "via", self.gateway)
        return host

    def down(self) -> None:
        """Remove the namespaces (their veth pairs go with them) and the bridge."""
        for index, host in enumerate(self.hosts):
            _ip("netns", "del", host.namespace, check=False)
            _ip("link", "del", f"rv{self.run}{index}", check=False)  # if never moved
        self.hosts = []
        if self._bridge_made:
            _ip("link", "del", self.bridge, check=False)
            self._bridge_made = False

    def leftovers(self) -> list[str]:
        """Namespaces and links of this run still present (none after ``down``)."""
        names = _ip("netns", "list").stdout + _ip("-o", "link", "show").stdout
        return [word for word in names.split() if self.run in word]


def via(url: str, host: str, port: int | None = None) -> str:
    """``url`` with its host (and port) replaced: the same service reached another way."""
    parts = urlsplit(url)
    auth = parts.netloc.rpartition("@")[0]
    netloc = f"{host}:{port or parts.port}"
    return urlunsplit(parts._replace(netloc=f"{auth}@{netloc}" if auth else netloc))


class TcpForwarder:
    """Forwards every connection accepted on ``listen`` (host, port) to ``target`` (host,
    port), byte for byte, on an asyncio loop in a thread of its own. A client that dies (a
    SIGKILLed host) closes its side, and the forwarder closes the other."""

    def __init__(self, routes: list[tuple[tuple[str, int], tuple[str, int]]]) -> None:
        self.routes = routes
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.servers: list[asyncio.Server] = []
        self.connections: set[asyncio.Task] = set()
        self.accepted = 0

    def start(self) -> TcpForwarder:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._listen(), self.loop).result(timeout=10)
        return self

    async def _listen(self) -> None:
        for (host, port), target in self.routes:
            self.servers.append(
                await asyncio.start_server(
                    lambda r, w, target=target: self._serve(r, w, target), host, port
                )
            )

    async def _serve(self, reader, writer, target) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        self.accepted += 1
        upstream_writer = None
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*target)
            await asyncio.gather(
                self._pipe(reader, upstream_writer), self._pipe(upstream_reader, writer)
            )
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            for w in (writer, upstream_writer):
                if w is not None:
                    w.close()
            self.connections.discard(task)

    @staticmethod
    async def _pipe(reader, writer) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()  # one side ended: so does the other

    def stop(self) -> None:
        async def shut() -> None:
            for server in self.servers:
                server.close()
            tasks = list(self.connections)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # until each has ended

        if self.thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(shut(), self.loop).result(timeout=10)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
        self.loop.close()
