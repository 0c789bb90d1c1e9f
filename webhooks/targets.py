"""Where a webhook may be sent: no request forgery against our own network (SSRF).

A target must be ``https`` (plain ``http`` only when DEBUG or WEBHOOK_ALLOW_PRIVATE_TARGETS),
without credentials in it, and every address its host resolves to must be a public one:
loopback, private, link-local (cloud metadata at 169.254.169.254), shared, multicast and
reserved ranges are refused, IPv4-mapped IPv6 included. The check runs when an endpoint is
saved and again at each send, where the request then goes to the very address that was
checked (no second DNS answer, so no rebinding) and redirects are never followed.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class UnsafeTarget(Exception):
    """The URL may not receive webhooks; the message says why, in words for the dashboard."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]


def private_allowed() -> bool:
    return bool(settings.WEBHOOK_ALLOW_PRIVATE_TARGETS)


def is_public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


def parse(url: str) -> tuple[str, str, int]:
    """The scheme, host and port of an acceptable URL, or UnsafeTarget."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise UnsafeTarget("The URL is not valid.") from exc
    scheme = parts.scheme.lower()
    allowed = {"https", "http"} if (settings.DEBUG or private_allowed()) else {"https"}
    if scheme not in allowed:
        raise UnsafeTarget("The URL must start with https://.")
    if parts.username is not None or parts.password is not None:
        raise UnsafeTarget("The URL may not contain a user name or password.")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise UnsafeTarget("The URL has no host.")
    return scheme, host, port or (443 if scheme == "https" else 80)


def _addresses(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UnsafeTarget(f"The host {host} does not resolve.") from exc
    seen: dict[str, IPAddress] = {}
    for info in infos:
        raw = str(info[4][0]).split("%", 1)[0]
        seen.setdefault(raw, ipaddress.ip_address(raw))
    return list(seen.values())


def resolve(url: str) -> Target:
    """Check a URL for sending now: its host's addresses, every one of them public."""
    scheme, host, port = parse(url)
    addresses = _addresses(host, port)
    if not private_allowed():
        refused = [str(address) for address in addresses if not is_public(address)]
        if refused:
            raise UnsafeTarget(
                f"The host {host} resolves to a private or reserved address ({refused[0]})."
            )
    return Target(scheme, host, port, tuple(str(address) for address in addresses))


def check_url(url: str) -> None:
    """Check a URL when an endpoint is saved. A host that does not resolve yet is accepted
    (it is checked again at each send); one that resolves to a private address is not."""
    try:
        resolve(url)
    except UnsafeTarget as exc:
        if exc.__cause__ is not None and isinstance(exc.__cause__, OSError | UnicodeError):
            parse(url)
            return
        raise
