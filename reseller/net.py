"""The client address, computed in one place for IP whitelists, rate limits and audit logs."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def _normalise(value: str) -> str | None:
    value = value.strip()
    if value.startswith("[") and "]" in value:  # "[::1]:443"
        value = value[1 : value.index("]")]
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def client_ip(request: HttpRequest) -> str:
    """REMOTE_ADDR; behind TRUSTED_PROXIES, the rightmost X-Forwarded-For entry not a proxy.

    X-Forwarded-For is read only when the direct peer is a trusted proxy, so a client cannot
    choose its own address by sending the header.
    """
    remote = _normalise(request.META.get("REMOTE_ADDR", "")) or "0.0.0.0"  # noqa: S104
    trusted = {_normalise(p) for p in settings.TRUSTED_PROXIES} - {None}
    if not trusted or remote not in trusted:
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    hops = [_normalise(part) for part in forwarded.split(",") if part.strip()]
    for hop in reversed(hops):
        if hop is None:
            return remote  # a garbled chain: trust nothing beyond the proxy we know
        if hop not in trusted:
            return hop
    return remote
