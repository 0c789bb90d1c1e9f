"""The client address, computed in one place for IP whitelists, rate limits and audit logs."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme


def normalise_ip(value: str) -> str | None:
    """The canonical text of one IPv4/IPv6 address, or None if ``value`` is not one.

    ``[::1]:443`` becomes ``::1``, ``2001:DB8::0001`` becomes ``2001:db8::1``, and an
    IPv4-mapped IPv6 address (``::ffff:203.0.113.7``, as dual-stack servers report IPv4
    peers) becomes the IPv4 address, so one client always has one spelling.
    """
    value = value.strip()
    if value.startswith("[") and "]" in value:  # "[::1]:443"
        value = value[1 : value.index("]")]
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address)


def client_ip(request: HttpRequest) -> str:
    """REMOTE_ADDR; behind TRUSTED_PROXIES, the rightmost X-Forwarded-For entry not a proxy.

    X-Forwarded-For is read only when the direct peer is a trusted proxy, so a client cannot
    choose its own address by sending the header.
    """
    remote = normalise_ip(request.META.get("REMOTE_ADDR", "")) or "0.0.0.0"  # noqa: S104
    trusted = {normalise_ip(p) for p in settings.TRUSTED_PROXIES} - {None}
    if not trusted or remote not in trusted:
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    hops = [normalise_ip(part) for part in forwarded.split(",") if part.strip()]
    for hop in reversed(hops):
        if hop is None:
            return remote  # a garbled chain: trust nothing beyond the proxy we know
        if hop not in trusted:
            return hop
    return remote


def local_url(request: HttpRequest, target: str) -> str:
    """``target`` when it is an address of this site ("/wallet/", or this host's full URL),
    else "". Where a page goes back to a posted ``next`` or the Referer: Django's check alone
    lets a bare word ("NaN") through, and ``redirect()`` reads that as the name of a view,
    whose reverse raised NoReverseMatch (a 500)."""
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return ""
    parts = urlsplit(target)
    return target if parts.netloc or target.startswith("/") else ""
