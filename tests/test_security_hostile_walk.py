"""Hostile input on every route: no 5xx anywhere (docs/security.md, "Limits").

Walks the whole URLconf (API, site, admin), fills every path parameter with junk (a NUL byte,
an over-long id, a traversal, junk numbers), and sends GET, POST, PATCH and DELETE with deep
JSON, an over-limit body and junk form numbers, as an anonymous caller, a staff session and a
B2B API key. Django's test client; no server.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from accounts.services import account_set_b2b
from tests.factories import UserFactory, make_key
from tests.helpers import assert_ledger_balanced, second_factor_login
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

JUNK_IDS = ["%00", "A" * 300, "..%2F..%2Fetc%2Fpasswd", "1e100", "-1", "%F0%9F%92%A9"]
JUNK_FORM = {
    name: value
    for name, value in [
        ("amount", "sNaN"),
        ("quantity", "1e100"),
        ("product", "\x00"),
        ("recipient_number", "+" + "9" * 40),
        ("email", "a@\x00"),
        ("password", "x" * 5000),
        ("name", "\x00" * 10),
        ("ip_whitelist", "999.1.1.1\n::g"),
        ("discount_percent", "1" * 29),
        ("next", "//evil.example"),
    ]
}
JUNK_QUERY = {
    "q": "\x00",
    "page": "1e100",
    "limit": "-1",
    "status": "\x00",
    "createdFrom": "not-a-date",
    "country": "Z" * 300,
}
SKIP = re.compile(r"logout")


def _routes(resolver=None, prefix: str = "") -> list[str]:
    """Every route of the URLconf as a template with ``{}`` where a path parameter goes."""
    resolver = resolver or get_resolver()
    found = []
    for entry in resolver.url_patterns:
        text = str(entry.pattern)
        if text.startswith("^"):  # a regular expression (the admin's app and model routes)
            text = re.sub(r"\(\?P<\w+>[^)]*\)", "{}", text.strip("^$")).replace("\\", "")
        else:
            text = re.sub(r"<[^>]+>", "{}", text)
        if isinstance(entry, URLResolver):
            found += _routes(entry, prefix + text)
        elif isinstance(entry, URLPattern):
            found.append(prefix + text)
    return sorted(set(found))


def _urls() -> list[str]:
    urls = []
    for route in _routes():
        if SKIP.search(route):
            continue
        if "{}" not in route:
            urls.append("/" + route)
        else:
            urls += ["/" + route.replace("{}", junk) for junk in JUNK_IDS]
    return urls


@pytest.fixture
def callers(product):
    staff = UserFactory(is_staff=True, is_superuser=True)
    session = Client(raise_request_exception=False)
    second_factor_login(session, staff)
    reseller = UserFactory()
    account_set_b2b(account=reseller.account, is_b2b=True)
    wallet_topup_manual(account=reseller.account, amount=Decimal("50.00"))
    _key, plaintext = make_key(reseller, mode="live")
    keyed = Client(raise_request_exception=False, HTTP_X_API_KEY=plaintext)
    return {"anonymous": Client(raise_request_exception=False), "staff": session, "key": keyed}


def test_no_route_answers_5xx_to_hostile_input(callers, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 20_000
    deep = "[" * 3000 + "]" * 3000
    huge = json.dumps({"items": ["x" * 100] * 400})  # over the lowered limit
    failures = []
    urls = _urls()
    assert len(urls) > 200  # the walk really covers the URLconf
    for url in urls:
        for who, client in callers.items():
            api = url.startswith("/api/")
            if who == "key" and not api:
                continue
            attempts = [("get", {}), ("get", {"data": JUNK_QUERY}), ("delete", {})]
            attempts += [
                ("post", {"data": deep, "content_type": "application/json"}),
                ("patch", {"data": huge, "content_type": "application/json"}),
            ]
            if not api:
                attempts.append(("post", {"data": JUNK_FORM}))
            for method, kwargs in attempts:
                response = getattr(client, method)(url, HTTP_IDEMPOTENCY_KEY="walk", **kwargs)
                if response.status_code >= 500:
                    failures.append(f"{who} {method.upper()} {url[:80]} -> {response.status_code}")
    assert failures == [], "\n".join(failures)
    assert_ledger_balanced()
