"""Hostile input on every route: no 5xx anywhere (docs/security.md, "Limits").

Walks the whole URLconf (API, site, admin), fills every path parameter with junk (a NUL byte,
an over-long id, a traversal, junk numbers), and sends GET, POST, PATCH and DELETE with deep
JSON, an over-limit body and junk form numbers, as an anonymous caller, a staff session and a
B2B API key. Django's test client; no server.

A route without parameters gets every attempt from every caller. A route with parameters gets
every pair of the three (junk id and attempt, junk id and caller, caller and attempt) rather
than every triple: about 10,500 requests instead of 19,000, 35 s instead of 59 s. A fault
that shows only for one junk id, one caller and one attempt all at once could be missed.
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


def _routes_filled() -> list[tuple[str, list[str]]]:
    """Each route to walk, with the URLs it is walked at: itself, or one per junk id."""
    return [
        (route, ["/" + route] if "{}" not in route else
         ["/" + route.replace("{}", junk) for junk in JUNK_IDS])
        for route in _routes()
        if not SKIP.search(route)
    ]  # fmt: skip


def _attempts(api: bool, deep: str, huge: str) -> list[tuple[str, dict]]:
    attempts = [("get", {}), ("get", {"data": JUNK_QUERY}), ("delete", {})]
    attempts += [
        ("post", {"data": deep, "content_type": "application/json"}),
        ("patch", {"data": huge, "content_type": "application/json"}),
    ]
    if not api:
        attempts.append(("post", {"data": JUNK_FORM}))
    return attempts


def _plan(urls: list[str], who: list[str], attempts: list) -> list[tuple[str, str, int]]:
    """(url, caller, attempt index) to send. One URL: every caller makes every attempt. Several
    (one per junk id): the caller turns with the URL and the attempt, so that every pair of
    URL and attempt, URL and caller, and caller and attempt is sent at least once."""
    if len(urls) == 1:
        return [(urls[0], name, a) for name in who for a in range(len(attempts))]
    plan = [
        (url, who[(u + a) % len(who)], a)
        for u, url in enumerate(urls)
        for a in range(len(attempts))
    ]
    if len(urls) < len(who):  # too few URLs to meet every caller with every attempt
        plan += [(urls[0], name, a) for name in who for a in range(len(attempts))]
    return plan


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


def test_the_plan_sends_every_pair_of_junk_id_caller_and_attempt():
    urls = [f"/x/{junk}" for junk in JUNK_IDS]
    who = ["anonymous", "staff", "key"]
    plan = _plan(urls, who, list(range(6)))
    assert {(url, a) for url, _, a in plan} == {(url, a) for url in urls for a in range(6)}
    assert {(url, name) for url, name, _ in plan} == {(url, name) for url in urls for name in who}
    assert {(name, a) for _, name, a in plan} == {(name, a) for name in who for a in range(6)}
    assert len(plan) == 36  # not 108
    few = _plan(["/x/1", "/x/2"], who, list(range(5)))
    assert {(name, a) for _, name, a in few} == {(name, a) for name in who for a in range(5)}
    assert len(_plan(["/x/"], who, list(range(5)))) == 15


@pytest.mark.timeout(900)  # 10,500 requests: 35 s on a quiet machine, 147 s on a slow one
def test_no_route_answers_5xx_to_hostile_input(callers, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 20_000
    deep = "[" * 3000 + "]" * 3000
    huge = json.dumps({"items": ["x" * 100] * 400})  # over the lowered limit
    failures = []
    walk = _routes_filled()
    assert sum(len(urls) for _, urls in walk) > 200  # the walk really covers the URLconf
    sent = 0
    for route, urls in walk:
        api = route.startswith("api/")
        who = [name for name in callers if api or name != "key"]
        attempts = _attempts(api, deep, huge)
        for url, name, index in _plan(urls, who, attempts):
            method, kwargs = attempts[index]
            response = getattr(callers[name], method)(url, HTTP_IDEMPOTENCY_KEY="walk", **kwargs)
            sent += 1
            if response.status_code >= 500:
                failures.append(f"{name} {method.upper()} {url[:80]} -> {response.status_code}")
    assert failures == [], "\n".join(failures)
    print(f"hostile walk: {sent} requests")
    assert sent > 5000
    assert_ledger_balanced()
