"""The request log per API key (issue 18, docs/request-log.md): what a key's requests leave
behind, redacted; the pages that show it to its own account only; pruning; the buffer and
the Redis list that keep the writing off the request, and the drain that writes it."""

from __future__ import annotations

import json
import re
import time
import urllib.request
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings as django_settings
from django.contrib import admin
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.services import account_set_b2b, api_key_revoke, api_key_set_whitelist
from requestlog import redact, redisqueue
from requestlog.buffer import RequestLogBuffer, buffer
from requestlog.models import BODY_LIMIT, ApiRequest
from requestlog.services import Capture, api_requests_prune, api_requests_record, capture_decode
from requestlog.tasks import requestlog_drain_task, requestlog_prune_task
from tests.factories import UserFactory, make_key
from tests.helpers import bearer, client_for, suite_redis_url
from tests.servers import gunicorn_serving
from tests.waiting import wait_until
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

B2B = "/api/v1/api-access/b2b/recharges"
CARD = "4242 4242 4242 4242"
PASSWORD = "correct horse battery staple 42"


def _forget_redis_list() -> None:
    """This run's own keys (REQUEST_LOG_REDIS_KEY carries the run's cache prefix)."""
    redisqueue.client().delete(
        redisqueue.pending_key(), redisqueue.processing_key(), f"{redisqueue.pending_key()}:lock"
    )


@pytest.fixture(autouse=True)
def _empty_buffer():
    """The process-wide buffer and the Redis list hold what earlier tests' requests captured:
    start empty."""
    buffer.clear()
    _forget_redis_list()
    yield
    buffer.clear()
    _forget_redis_list()


@pytest.fixture
def shop():
    user = UserFactory(password=PASSWORD)
    account_set_b2b(account=user.account, is_b2b=True)
    wallet_topup_manual(account=user.account, amount=Decimal("100.00"))
    key, plaintext = make_key(user, mode="live", name="Shop")
    return user, key, plaintext


def _order(product, number="+525512345678", **extra) -> dict:
    return {
        "items": [{"productId": product.public_id, "recipientNumber": number, "quantity": 1}],
        "baseCurrency": "EUR",
        **extra,
    }


def _flushed() -> list[ApiRequest]:
    """What the process captured pushed onto the Redis list, and the drain task run."""
    buffer.flush()
    requestlog_drain_task()
    return list(ApiRequest.objects.order_by("created_at", "id"))


def _entry(key, **fields) -> ApiRequest:
    values = {
        "account": key.account,
        "api_key": key,
        "livemode": key.livemode,
        "method": "GET",
        "path": "/api/v1/auth/me",
        "status": 200,
        "latency_ms": 3,
        "request_id": "req_entry",
        **fields,
    }
    return ApiRequest.objects.create(**values)


# -- what is logged -----------------------------------------------------------------------------


def test_a_b2b_keys_requests_are_logged_with_status_latency_request_id_idempotency_key_and_code(
    shop, product
):
    user, key, plaintext = shop
    api = client_for(plaintext)
    placed = api.post(
        B2B, _order(product), format="json",
        HTTP_IDEMPOTENCY_KEY="order-0001", HTTP_X_REQUEST_ID="req-mine-1",
    )  # fmt: skip
    assert placed.status_code == 201, placed.content
    refused = api.post(B2B, {"items": []}, format="json", HTTP_IDEMPOTENCY_KEY="order-0002")
    assert refused.status_code == 400
    looked_up = api.get(f"{B2B}?status=delivered")
    assert looked_up.status_code == 200

    first, second, third = _flushed()
    assert (first.method, first.path, first.status) == ("POST", B2B, 201)
    assert first.request_id == "req-mine-1" == placed["X-Request-Id"]
    assert first.idempotency_key == "order-0001" and first.error_code == ""
    assert first.account == user.account and first.api_key == key and first.livemode is True
    assert 0 <= first.latency_ms < 10_000
    assert json.loads(first.response_body)["id"] == placed.json()["id"]
    assert json.loads(first.request_body)["items"][0]["recipientNumber"] == "+525512345678"
    assert first.request_bytes == len(json.dumps(_order(product), separators=(",", ":")))
    assert (second.status, second.error_code) == (400, refused.json()["code"])
    assert second.request_id == refused["X-Request-Id"] and second.idempotency_key == "order-0002"
    assert (third.method, third.query, third.status) == ("GET", "status=delivered", 200)


def test_bodies_are_stored_without_key_plaintexts_card_numbers_or_passwords(shop, product):
    _user, _key, plaintext = shop
    body = _order(
        product,
        reference=f"paid with {plaintext}",
        card={"number": CARD, "cvc": "123", "expMonth": 12},
        password="hunter2-but-longer",
        clientSecret="pi_3Nabc_secret_xyz987",
        webhookSecret="whsec_abcdefABCDEF0123",
    )
    response = client_for(plaintext).post(
        B2B, body, format="json", HTTP_IDEMPOTENCY_KEY="order-secret"
    )
    assert response.status_code == 400  # unknown fields: refused, but logged
    (entry,) = _flushed()
    stored = entry.request_body + entry.response_body + entry.query
    for secret in (
        plaintext, plaintext[9:], CARD, "4242424242424242", "hunter2", "pi_3Nabc_secret",
        "xyz987", "whsec_abc", '"123"',
    ):  # fmt: skip
        assert secret not in stored, secret
    stored_request = json.loads(entry.request_body)
    assert stored_request["password"] == redact.REDACTED
    assert stored_request["card"]["number"] == redact.REDACTED  # Luhn
    assert stored_request["card"]["cvc"] == redact.REDACTED
    assert stored_request["reference"] == f"paid with {redact.REDACTED}"
    assert stored_request["items"][0]["recipientNumber"] == "+525512345678"  # not a card


def test_web_session_requests_are_not_logged(shop):
    user, _key, _plaintext = shop
    browser = Client()
    browser.force_login(user)
    jwt = Client(headers={"Authorization": bearer(user)["HTTP_AUTHORIZATION"]})
    assert jwt.get("/api/v1/auth/me").status_code == 200
    assert browser.get("/api/v1/auth/me").status_code == 200
    assert browser.get("/accounts/keys/").status_code == 200
    assert len(buffer) == 0
    assert _flushed() == []


def test_a_refused_key_is_not_logged_it_belongs_to_no_one(shop):
    _user, _key, plaintext = shop
    assert client_for(plaintext[:-2] + "xx").get("/api/v1/auth/me").status_code == 401
    assert _flushed() == []


def test_a_revoked_key_used_with_its_secret_shows_the_refusal_in_its_own_log(shop, product):
    """Its holder proved the secret: the 401 is that key's, and its owner should see it. What
    the holder sent is not kept (whoever holds a revoked key may not be its owner)."""
    user, key, plaintext = shop
    api_key_revoke(key=key, by=user)
    sent = client_for(plaintext).post(B2B, _order(product), format="json")
    assert sent.status_code == 401
    [entry] = _flushed()
    assert (entry.api_key_id, entry.account_id) == (key.pk, user.account_id)
    assert (entry.status, entry.error_code) == (401, "api_key_revoked")
    assert product.public_id not in entry.request_body and entry.request_bytes > 0


def test_a_key_used_from_outside_its_whitelist_shows_the_403_in_its_log(shop):
    _user, key, plaintext = shop
    api_key_set_whitelist(key=key, ip_whitelist=["203.0.113.7"])
    assert client_for(plaintext).get("/api/v1/auth/me").status_code == 403  # from 127.0.0.1
    [entry] = _flushed()
    assert (entry.api_key_id, entry.status, entry.error_code) == (key.pk, 403, "ip_not_allowed")


def test_refusals_of_one_key_fill_at_most_its_share_of_the_log_each_minute(shop):
    """Refusals use no rate-limit quota: a leaked revoked key must not flood its account's
    log (REFUSED_PER_MINUTE), while a working key of the same account is still logged."""
    from requestlog.middleware import REFUSED_PER_MINUTE

    user, key, plaintext = shop
    _other, other_plaintext = make_key(user, mode="live", name="Other")
    api_key_revoke(key=key, by=user)
    revoked = client_for(plaintext)
    for _ in range(REFUSED_PER_MINUTE + 5):
        assert revoked.get("/api/v1/auth/me").status_code == 401
    assert client_for(other_plaintext).get("/api/v1/auth/me").status_code == 200
    entries = _flushed()
    assert sum(entry.api_key_id == key.pk for entry in entries) == REFUSED_PER_MINUTE
    assert sum(entry.status == 200 for entry in entries) == 1


def test_nothing_is_captured_when_the_log_is_off(shop, settings):
    settings.REQUEST_LOG_ENABLED = False
    assert client_for(shop[2]).get("/api/v1/auth/me").status_code == 200
    assert len(buffer) == 0


def test_the_request_path_never_touches_postgresql_for_the_log_the_drain_writes_it(shop):
    """The request appends to the buffer; the web process's thread pushes onto Redis (no
    statement on the log's table either); only the drain task writes the row."""
    with CaptureQueriesContext(connection) as queries:
        assert client_for(shop[2]).get("/api/v1/auth/me").status_code == 200
        assert len(buffer) == 1
        assert buffer.flush() == 1
    assert not [q["sql"] for q in queries if ApiRequest._meta.db_table in q["sql"]]
    assert redisqueue.waiting() == 1 and not ApiRequest.objects.exists()
    assert requestlog_drain_task() == 1
    assert ApiRequest.objects.count() == 1 and redisqueue.waiting() == 0


# -- the buffer, the Redis list and the drain ---------------------------------------------------


def _capture(key, **fields) -> Capture:
    values = {
        "created": time.time(), "account_id": key.account_id, "api_key_id": key.pk,
        "livemode": key.livemode, "method": "GET", "path": "/api/v1/auth/me", "query": "",
        "status": 200, "latency_ms": 2, "request_id": "req_x", "idempotency_key": "",
        "request_head": b"", "request_bytes": 0, "request_type": "",
        "response_head": b'{"ok": true}', "response_bytes": 12,
        "response_type": "application/json",
    }  # fmt: skip
    return Capture(**{**values, **fields})


def _pushed(*captures: Capture) -> None:
    assert redisqueue.push(list(captures)) == len(captures)


def test_a_full_buffer_drops_and_counts_rather_than_blocks(shop):
    small = RequestLogBuffer(capacity=3, batch_size=2)
    started = time.perf_counter()
    kept = [small.add(_capture(shop[1])) for _ in range(5)]
    assert time.perf_counter() - started < 0.5
    assert kept == [True, True, True, False, False]
    assert (len(small), small.dropped) == (3, 2)
    assert small.flush() == 3 and redisqueue.waiting() == 3  # two pushes of 2 and 1
    assert requestlog_drain_task() == 3 and ApiRequest.objects.count() == 3


def test_a_full_buffer_never_fails_the_request(shop, monkeypatch):
    monkeypatch.setattr(buffer, "capacity", 0)
    dropped = buffer.dropped
    assert client_for(shop[2]).get("/api/v1/auth/me").status_code == 200
    assert buffer.dropped == dropped + 1 and len(buffer) == 0


def test_a_batch_redis_refuses_is_dropped_and_counted_not_retried(shop, settings):
    working = settings.REDIS_URL
    small = RequestLogBuffer()
    small.add(_capture(shop[1]))
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    assert small.flush() == 0
    assert (small.failed, len(small)) == (1, 0)
    settings.REDIS_URL = working
    small.add(_capture(shop[1]))
    assert small.flush() == 1 and requestlog_drain_task() == 1
    assert ApiRequest.objects.count() == 1


def test_without_redis_the_web_process_writes_the_log_itself(shop, settings):
    """The embedded default (``make run``: no REDIS_URL, SQLite): the buffer's thread writes
    the rows, and the drain task has nothing to do."""
    settings.REDIS_URL = ""
    small = RequestLogBuffer()
    small.add(_capture(shop[1], request_id="req_inprocess"))
    small.add(_capture(shop[1], request_head=b'{"password": "hunter2"}', request_bytes=23))
    assert small.flush() == 2 and requestlog_drain_task() == 0
    assert ApiRequest.objects.filter(request_id="req_inprocess").exists()
    assert ApiRequest.objects.filter(request_body='{"password":"[redacted]"}').exists()


def test_a_body_with_a_nul_byte_is_stored_not_lost_with_its_batch(shop):
    _pushed(_capture(shop[1], request_head=b"a\x00b", request_bytes=3), _capture(shop[1]))
    assert requestlog_drain_task() == 2
    assert ApiRequest.objects.filter(request_body="a\ufffdb").exists()


def test_bodies_and_paths_are_stored_exactly_whatever_characters_they_hold(shop):
    """Captures cross Redis as JSON and reach the table with COPY: its separators and escapes
    (tab, newline, backslash, \\N) and bytes that are not UTF-8 must come back as sent."""
    body = '{"note": "tab\there\\nnew\nline \\\\N back\\\\slash ñ € 😀", "n": "\\N"}'
    _pushed(
        _capture(
            shop[1],
            path="/api/v1/odd\tpath\\N",
            query="a=1\tb=\\N",
            request_head=body.encode(),
            request_bytes=len(body.encode()),
        ),
        _capture(shop[1], request_id="req_latin1", request_head=b"caf\xe9", request_bytes=4),
    )
    assert requestlog_drain_task() == 2
    row = ApiRequest.objects.exclude(request_id="req_latin1").get()
    assert (row.path, row.query, row.request_body) == ("/api/v1/odd\tpath\\N", "a=1\tb=\\N", body)
    assert ApiRequest.objects.get(request_id="req_latin1").request_body == "caf\ufffd"


def test_the_drain_writes_in_batches_until_the_list_is_empty(shop):
    _pushed(*(_capture(shop[1], request_id=f"req_{n:02}") for n in range(12)))
    assert redisqueue.drain(budget_seconds=0) == 0  # its time spent: the next one goes on
    assert redisqueue.waiting() == 12
    assert len(redisqueue.claim(5)) == 5  # a batch: 5 + 5 + 2
    assert redisqueue.drain(batch=5) == 12  # the claimed batch (left by "a drain") first
    assert redisqueue.waiting() == 0
    assert sorted(ApiRequest.objects.values_list("request_id", flat=True)) == [
        f"req_{n:02}" for n in range(12)
    ]


def test_one_drain_at_a_time_another_leaves_the_list_alone(shop):
    _pushed(_capture(shop[1]))
    held = redisqueue.lock()
    assert held.acquire(blocking=False)
    try:
        assert requestlog_drain_task() == 0 and redisqueue.waiting() == 1
    finally:
        held.release()
    assert requestlog_drain_task() == 1


def _interrupted_drain(count: int) -> list[bytes]:
    """What a drain killed between its pop and its write leaves behind: its lock (expiring
    in two seconds here: long enough to be seen held on a busy box) and the batch it took, on
    the processing list only."""
    held = redisqueue.lock(seconds=2)
    assert held.acquire(blocking=False)
    return redisqueue.claim(count)


def _lock_expired() -> None:
    wait_until(
        lambda: not redisqueue.client().exists(f"{redisqueue.pending_key()}:lock"),
        timeout=10,
        what="the interrupted drain's lock to expire",
    )


def test_a_drain_interrupted_between_pop_and_write_loses_nothing(shop):
    _pushed(*(_capture(shop[1], request_id=f"req_{n}") for n in range(5)))
    taken = _interrupted_drain(3)
    assert len(taken) == 3 and redisqueue.client().llen(redisqueue.pending_key()) == 2
    assert redisqueue.waiting() == 5 and not ApiRequest.objects.exists()
    assert requestlog_drain_task() == 0  # its lock is still held: nobody takes its batch yet
    _lock_expired()
    assert requestlog_drain_task() == 5  # the batch it left first, then the rest
    assert redisqueue.waiting() == 0
    assert sorted(ApiRequest.objects.values_list("request_id", flat=True)) == [
        f"req_{n}" for n in range(5)
    ]


def test_a_batch_written_before_its_drain_stopped_is_not_written_twice(shop):
    """Killed after its COPY but before it deleted the processing list: the next drain writes
    the batch again, and the rows (their public ids came with the captures) are not doubled."""
    _pushed(*(_capture(shop[1], request_id=f"req_{n}") for n in range(3)))
    taken = _interrupted_drain(2)
    assert api_requests_record(captures=[capture_decode(item) for item in taken]) == 2
    _lock_expired()
    requestlog_drain_task()
    assert redisqueue.waiting() == 0
    assert sorted(ApiRequest.objects.values_list("request_id", flat=True)) == [
        "req_0", "req_1", "req_2"
    ]  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_a_row_the_database_refuses_is_dropped_and_the_rest_of_its_batch_written():
    """A key deleted between its request and the drain: its row cannot be written (the
    foreign key), the others of the batch are, and the batch is not retried forever."""
    user = UserFactory()
    key, _plaintext = make_key(user, mode="test")
    gone, _ = make_key(user, mode="test", name="Gone")
    _pushed(
        _capture(key, request_id="req_before"),
        _capture(gone, request_id="req_gone"),
        _capture(key, request_id="req_after"),
    )
    gone.delete()
    assert requestlog_drain_task() == 2
    assert redisqueue.waiting() == 0 and requestlog_drain_task() == 0
    assert sorted(ApiRequest.objects.values_list("request_id", flat=True)) == [
        "req_after", "req_before"
    ]  # fmt: skip


def test_an_unreadable_entry_in_the_list_is_dropped_not_retried(shop):
    redisqueue.client().rpush(redisqueue.pending_key(), b"not json", b"[2, 1]")
    _pushed(_capture(shop[1]))
    assert requestlog_drain_task() == 1 and redisqueue.waiting() == 0


@pytest.mark.django_db(transaction=True)
def test_the_sending_thread_sends_in_the_background_and_stops_cleanly():
    user = UserFactory()
    key, _plaintext = make_key(user, mode="test")
    background = RequestLogBuffer(interval=0.05)
    try:
        background.add(_capture(key, request_id="req_bg"), background=True)
        thread = background._thread
        assert thread is not None and thread.daemon
        wait_until(
            lambda: redisqueue.waiting() >= 1, timeout=10, what="the thread to push the capture"
        )
    finally:
        background.stop()
    assert background.written == 1 and not thread.is_alive()
    assert requestlog_drain_task() == 1
    assert ApiRequest.objects.filter(request_id="req_bg").exists()


# -- redaction ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "rsl_live_AbCd1234EfGh5678IjKl9012MnOp3456",
        "rsl_test_zzzzzzzzZZZZZZZZ00000000",
        "whsec_3kT9-fQ_x+y/z=",
        "pi_3NxYz0123_secret_AbCdEf",
        "seti_1AbC_secret_XyZ",
        "4242424242424242",
        "4242 4242 4242 4242",
        "4000-0025-0000-3155",
        "378282246310005",  # Amex, 15 digits
        "6011111111111117",
        "4000000000000000006",  # 19 digits
        "eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyX2lkIjoxfQ.c2lnbmF0dXJl",
    ],
)
def test_the_redactor_removes_secrets_and_card_numbers_anywhere(text):
    for wrapped in (text, f"see {text}.", f'{{"note": "{text}"}}', f"a={text}&b=1"):
        redacted = redact.redact_text(wrapped)
        assert text not in redacted and redact.REDACTED in redacted, wrapped


@pytest.mark.parametrize(
    "text",
    [
        "+525512345678",  # a phone number
        "+4915123456789012",  # a long E.164 number: not a card even if Luhn agreed
        "4242424242424241",  # fails Luhn
        "123456789012",  # 12 digits
        "rch_4242424242424242",  # inside an id
        "2026-11-24T10:00:00Z",
        "order-0001",
    ],
)
def test_the_redactor_keeps_what_is_not_a_secret(text):
    body = f'{{"value": "{text}", "idempotencyKey": "k"}}'
    assert redact.redact_text(body) == body  # kept as it was sent
    assert redact.redact_text(f'{body[:-1]}, "password": 1}}') == (
        f'{{"value":"{text}","idempotencyKey":"k","password":"[redacted]"}}'
    )


def test_the_redactor_replaces_secret_fields_at_any_depth_and_keeps_the_others():
    body = {
        "password": "p", "newPassword": "p", "secret": {"a": 1}, "token": "t", "access": "a",
        "refresh": "r", "apiKey": "k", "api_key": "k", "key": 5, "cvc": "123", "cvv": 123,
        "clientSecret": "c", "nested": [{"refreshToken": "r", "name": "ok"}],
        "idempotencyKey": "order-1", "code": "insufficient_balance", "productId": "prd_1",
    }  # fmt: skip
    redacted = json.loads(redact.redact_text(json.dumps(body)))
    kept = {"nested", "idempotencyKey", "code", "productId"}
    assert all(redacted[name] == redact.REDACTED for name in body if name not in kept)
    assert redacted["nested"] == [{"refreshToken": redact.REDACTED, "name": "ok"}]
    assert {name: redacted[name] for name in kept - {"nested"}} == {
        "idempotencyKey": "order-1",
        "code": "insufficient_balance",
        "productId": "prd_1",
    }


def test_an_escaped_secret_name_is_still_found():
    assert redact.redact_text('{"pass\\u0077ord": "hunter2"}') == '{"password":"[redacted]"}'


def test_a_logged_requests_id_looks_like_our_other_ids():
    from requestlog.models import new_api_request_id

    ids = {new_api_request_id() for _ in range(100)}
    assert len(ids) == 100 and all(re.fullmatch(r"log_[A-Za-z0-9]{20}", i) for i in ids)


def test_the_redactor_handles_cut_json_and_form_bodies():
    cut = '{"name": "x", "password": "hunter2", "token": 12345, "items": [{"a": "rsl_test_Ab'
    redacted = redact.redact_text(cut)
    assert "hunter2" not in redacted and "12345" not in redacted and "rsl_test_Ab" not in redacted
    assert '"name": "x"' in redacted
    form = redact.redact_text("email=a%40b.c&password=hunter2&cvc=123&x-api-key=rsl_live_A1")
    assert form == "email=a%40b.c&password=[redacted]&cvc=[redacted]&x-api-key=[redacted]"


def test_a_body_is_redacted_before_it_is_cut_so_no_secret_head_survives_the_cut():
    padding = "x" * (BODY_LIMIT - 10)
    raw = json.dumps({"pad": padding, "note": CARD}).encode()
    stored = redact.redact_body(raw, total=len(raw), limit=BODY_LIMIT)
    assert len(stored) == BODY_LIMIT and "4242" not in stored


# -- the pages ----------------------------------------------------------------------------------


def _browser(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def test_the_key_page_links_to_its_request_log(shop):
    user, key, _plaintext = shop
    page = _browser(user).get(f"/accounts/keys/{key.public_id}/").content.decode()
    assert f'href="/accounts/keys/{key.public_id}/requests/"' in page


def test_the_request_log_lists_newest_first_searches_and_opens_a_redacted_request(shop, product):
    user, key, plaintext = shop
    api = client_for(plaintext)
    api.get("/api/v1/auth/me", HTTP_X_REQUEST_ID="req-first")
    api.post(
        B2B, _order(product, password="hunter2"), format="json",
        HTTP_IDEMPOTENCY_KEY="order-9", HTTP_X_REQUEST_ID="req-refused",
    )  # fmt: skip
    api.get("/api/v1/wallet/balance", HTTP_X_REQUEST_ID="req-last")
    _flushed()
    browser = _browser(user)
    url = f"/accounts/keys/{key.public_id}/requests/"

    page = browser.get(url).content.decode()
    assert page.index("req-last") < page.index("req-refused") < page.index("req-first")
    assert page.count('data-testid="request-row"') == 3
    assert "order-9" in page and "validation_error" in page

    by_id = browser.get(url, {"request_id": "req-refused"}).content.decode()
    assert by_id.count('data-testid="request-row"') == 1 and "req-refused" in by_id
    errors = browser.get(url, {"status": "4xx"}).content.decode()
    assert errors.count('data-testid="request-row"') == 1 and "req-refused" in errors
    assert browser.get(url, {"status": "200"}).content.decode().count("request-row") == 2
    assert browser.get(url, {"status": "5xx"}).content.decode().count("request-row") == 0
    invalid = browser.get(url, {"status": "abc"})
    assert invalid.status_code == 200 and invalid.content.decode().count("request-row") == 3

    entry = ApiRequest.objects.get(request_id="req-refused")
    detail = browser.get(f"{url}{entry.public_id}/")
    assert detail.status_code == 200
    text = detail.content.decode()
    assert "hunter2" not in text and plaintext not in text and redact.REDACTED in text
    assert "order-9" in text and "req-refused" in text and "validation_error" in text


def test_the_request_log_pages_by_fifty_and_keeps_the_search(shop):
    user, key, _plaintext = shop
    now = timezone.now()
    ApiRequest.objects.bulk_create(
        ApiRequest(
            account=key.account, api_key=key, livemode=True, method="GET", path="/api/v1/x",
            status=404, latency_ms=1, request_id=f"req_{n:03}",
            created_at=now - timedelta(seconds=n),
        )
        for n in range(60)
    )  # fmt: skip
    browser = _browser(user)
    url = f"/accounts/keys/{key.public_id}/requests/"
    first = browser.get(url, {"status": "404"}).content.decode()
    assert first.count("request-row") == 50 and "req_000" in first and "req_050" not in first
    assert "page=2" in first and "status=404" in first
    second = browser.get(url, {"status": "404", "page": "2"}).content.decode()
    assert second.count("request-row") == 10 and "req_059" in second


def test_the_request_log_shows_only_the_last_30_days(shop):
    user, key, _plaintext = shop
    _entry(key, request_id="req_recent", created_at=timezone.now() - timedelta(days=29))
    _entry(key, request_id="req_old", created_at=timezone.now() - timedelta(days=31))
    page = _browser(user).get(f"/accounts/keys/{key.public_id}/requests/").content.decode()
    assert "req_recent" in page and "req_old" not in page


def test_another_accounts_key_and_requests_are_404(shop):
    user, key, _plaintext = shop
    entry = _entry(key)
    other = UserFactory()
    other_key, _ = make_key(other, mode="live")
    stranger = _browser(other)
    assert stranger.get(f"/accounts/keys/{key.public_id}/requests/").status_code == 404
    assert (
        stranger.get(f"/accounts/keys/{key.public_id}/requests/{entry.public_id}/").status_code
        == 404
    )
    # Through the stranger's own key, the request of another key is unknown too.
    assert (
        stranger.get(
            f"/accounts/keys/{other_key.public_id}/requests/{entry.public_id}/"
        ).status_code
        == 404
    )
    search = stranger.get(
        f"/accounts/keys/{other_key.public_id}/requests/", {"request_id": "req_entry"}
    )
    assert search.status_code == 200 and "request-row" not in search.content.decode()
    # And a key of the same account sees only its own requests.
    second_key, _ = make_key(user, mode="test")
    own = _browser(user)
    assert (
        own.get(f"/accounts/keys/{second_key.public_id}/requests/{entry.public_id}/").status_code
        == 404
    )


def test_the_request_log_needs_a_login(shop):
    _user, key, _plaintext = shop
    response = Client().get(f"/accounts/keys/{key.public_id}/requests/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# -- pruning ------------------------------------------------------------------------------------


def test_pruning_deletes_requests_older_than_30_days_only(shop):
    _user, key, _plaintext = shop
    now = timezone.now()
    for days in (45, 31, 30.01):
        _entry(key, request_id=f"req_old_{days}", created_at=now - timedelta(days=days))
    for days in (29.99, 1, 0):
        _entry(key, request_id=f"req_new_{days}", created_at=now - timedelta(days=days))
    assert requestlog_prune_task() == 3
    assert sorted(ApiRequest.objects.values_list("request_id", flat=True)) == [
        "req_new_0",
        "req_new_1",
        "req_new_29.99",
    ]


def test_pruning_goes_in_bounded_batches_until_none_is_left(shop, django_assert_num_queries):
    _user, key, _plaintext = shop
    old = timezone.now() - timedelta(days=40)
    for n in range(5):
        _entry(key, request_id=f"req_{n}", created_at=old)
    with django_assert_num_queries(3):  # 2 + 2 + 1: one DELETE … LIMIT 2 per batch
        assert api_requests_prune(days=30, batch_size=2) == 5


def test_the_drain_and_prune_tasks_are_scheduled_and_the_model_is_in_the_admin(settings):
    schedule = {
        entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()
    }
    assert schedule["requestlog.tasks.requestlog_drain_task"] == 1.0
    assert "requestlog.tasks.requestlog_prune_task" in schedule
    assert admin.site.is_registered(ApiRequest)


def _me(port: int, plaintext: str) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/auth/me", headers={"x-api-key": plaintext}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status


GUNICORN_REDIS = suite_redis_url(django_settings.TEST_REDIS_DB_SERVERS)


@pytest.mark.django_db(transaction=True)
def test_requests_served_by_gunicorn_land_in_the_table_once_the_drain_task_runs(tmp_path):
    """A real gunicorn (gunicorn.conf.py read, as deployed, no process of its own for the
    log): its workers push every capture onto the Redis list, write nothing to the table,
    and push what they still hold at a graceful stop; the drain task writes them all."""
    user = UserFactory()
    key, plaintext = make_key(user)
    list_key = f"{django_settings.REQUEST_LOG_REDIS_KEY}:gunicorn-{uuid.uuid4().hex[:8]}"
    env = {"REDIS_URL": GUNICORN_REDIS, "REQUEST_LOG_REDIS_KEY": list_key}
    server = gunicorn_serving(env, tmp_path, "gunicorn-log", workers=2)
    port = next(server)
    with override_settings(REDIS_URL=GUNICORN_REDIS, REQUEST_LOG_REDIS_KEY=list_key):
        try:
            try:
                assert all(_me(port, plaintext) == 200 for _ in range(40))
                wait_until(
                    lambda: redisqueue.waiting() >= 40,
                    timeout=20,
                    what="the web processes to push 40 captures",
                    state=redisqueue.waiting,
                )
                assert not ApiRequest.objects.exists()  # the web processes wrote no row
                assert requestlog_drain_task() == 40
                assert ApiRequest.objects.filter(api_key=key).count() == 40
                assert all(_me(port, plaintext) == 200 for _ in range(10))
            finally:
                server.close()  # SIGTERM at once: the last ten are still in the workers
            assert redisqueue.waiting() == 10
            assert requestlog_drain_task() == 10
            assert ApiRequest.objects.filter(api_key=key, path="/api/v1/auth/me").count() == 50
        finally:
            _forget_redis_list()
