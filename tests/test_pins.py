"""PINs (contract section 17, issue 41): a delivered PIN reaches its buyer only (lookup,
webhook, receipt page and email, sandbox), is encrypted at rest under FIELD_ENCRYPTION_KEY, and
never appears in clear in the request log, the logs, the admin API, staff lists or any table."""

import json
import logging
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
from cryptography.fernet import Fernet
from django.core import mail
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings
from django.urls import reverse

from backoffice.models import StaffAction
from catalog.models import Product, ProductType
from catalog.services import fx_rate_set
from emails.models import Email
from orders.models import IdempotencyRecord
from recharges import processor
from recharges.models import RechargeAttempt
from recharges.pins import pin_body
from requestlog import redisqueue
from requestlog.buffer import buffer
from requestlog.models import ApiRequest
from requestlog.tasks import requestlog_drain_task
from reseller import crypto
from tests.factories import OperatorFactory, ProductFactory, UserFactory, make_key
from tests.fakes.ding import FakeDing
from tests.fakes.ding import kinds_products as ding_kinds
from tests.fakes.dtone import FakeDTOne
from tests.fakes.dtone import default_products as dtone_defaults
from tests.fakes.dtone import kinds_products as dtone_kinds
from tests.fakes.receiver import Receiver
from tests.fakes.reloadly import FakeReloadly
from tests.helpers import bearer, client_for, fund, place
from upstreams.models import Route
from upstreams.services import catalog_sync, provider_create
from webhooks.delivery import endpoint_drain
from webhooks.models import Event
from webhooks.services import endpoint_create
from webhooks.signature import verify_signature

pytestmark = pytest.mark.django_db


@pytest.fixture
def fake():
    server = FakeReloadly().start()
    server.pins = True  # every top-up of this fake is a PIN (pinDetail in its answer)
    yield server
    server.stop()


@pytest.fixture
def airtime_reloadly(settings, fake):
    settings.AIRTIME_PROVIDER = "reloadly"
    settings.RELOADLY_BASE_URL = settings.RELOADLY_AUTH_URL = fake.url
    settings.RELOADLY_CLIENT_ID, settings.RELOADLY_CLIENT_SECRET = "id", "secret"
    settings.RELOADLY_TIMEOUT_SECONDS = 2.0
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 2.0
    return settings


@pytest.fixture
def receiver():
    server = Receiver().start()
    yield server
    server.stop()


@pytest.fixture
def pin_product(product):
    product.product_type = ProductType.PIN
    product.save(update_fields=["product_type"])
    return product


@pytest.fixture(autouse=True)
def _request_log_empty():
    """The process-wide buffer and the Redis list hold what earlier tests' requests captured
    (their accounts rolled back long ago): start and end empty, as tests/test_request_log.py
    does, so this test's drain writes only its own requests."""
    buffer.clear()
    keys = redisqueue.pending_key(), redisqueue.processing_key()
    redisqueue.client().delete(*keys, f"{redisqueue.pending_key()}:lock")
    yield
    buffer.clear()
    redisqueue.client().delete(*keys, f"{redisqueue.pending_key()}:lock")


def _all_logs(caplog):
    """Every logger at DEBUG, SQL with its parameters included."""
    caplog.set_level(logging.DEBUG)
    for name in ("django", "django.db.backends"):
        logger = logging.getLogger(name)
        logger.addHandler(caplog.handler)
        logger.setLevel(logging.DEBUG)
    connection.force_debug_cursor = True


def _clear_text_columns_holding(code: str) -> list[str]:
    """Every text, varchar and json column of every table that holds ``code`` in clear."""
    found = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND data_type IN "
            "('text', 'character varying', 'json', 'jsonb')"
        )
        for table, column in cursor.fetchall():
            cursor.execute(
                f'SELECT count(*) FROM "{table}" WHERE "{column}"::text LIKE %s',
                [f"%{code}%"],
            )
            if cursor.fetchone()[0]:
                found.append(f"{table}.{column}")
    return found


def test_a_delivered_pin_reaches_its_buyer_and_no_one_else(
    fake, airtime_reloadly, receiver, pin_product, staff, caplog, django_capture_on_commit_callbacks
):
    buyer = UserFactory()
    from accounts.services import account_set_b2b

    account_set_b2b(account=buyer.account, is_b2b=True)
    endpoint = endpoint_create(account=buyer.account, url=receiver.url, livemode=True, events=[])
    receiver.echo = True  # it answers with what it got: the PIN, which we must not keep
    fund(buyer, "100.00")
    _all_logs(caplog)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            order = place(buyer, pin_product)
        (recharge,) = order.recharges.all()
        with django_capture_on_commit_callbacks(execute=True):
            assert processor.recharge_process(recharge_id=recharge.pk).status == "delivered"
        code = str(fake.topups[recharge.public_id]["pinDetail"]["code"])
        recharge.refresh_from_db()
        assert recharge.pin_last4 == code[-4:] and recharge.pin_encrypted
        assert code not in json.dumps(recharge.provider_response)

        # The buyer's lookup and list (its key), and the event its endpoint receives.
        _key, plaintext = make_key(buyer, mode="live")
        api = client_for(plaintext)
        looked_up = api.get(f"/api/v1/api-access/b2b/recharges/{recharge.public_id}").json()
        assert looked_up["pin"]["code"] == code
        assert looked_up["pin"]["serial"] and looked_up["pin"]["instructions"]
        # Reloadly's pinDetail.validity ("30 days") is a date from the day it was sold.
        sold_on = recharge.created_at.date()
        assert looked_up["pin"]["validUntil"] == (sold_on + timedelta(days=30)).isoformat()
        listed = api.get("/api/v1/api-access/b2b/recharges").json()
        assert listed["results"][0]["pin"]["code"] == code
        endpoint_drain(endpoint.pk)
        (request,) = [r for r in receiver.requests if r.json["type"].startswith("recharge.")]
        verify_signature(request.body, request.signature, endpoint.secret)
        assert request.json["type"] == "recharge.delivered"
        assert request.json["data"]["object"]["pin"]["code"] == code
        assert Event.objects.get(type="recharge.delivered").sealed

        # The receipt page and the PIN's receipt email.
        site = Client()
        site.force_login(buyer)
        page = site.get(reverse("orders:receipt", args=[recharge.payment.public_id]))
        assert code in page.content.decode() and page["Cache-Control"] == "no-store"
        # Sent after the delivery's commit (tasks run in process here); the row keeps no PIN.
        pin_email = Email.objects.get(kind=Email.Kind.PIN_RECEIPT)
        assert pin_email.sent_at and pin_email.secret_context == ""
        assert code not in json.dumps(pin_email.context)
        (sent,) = [m for m in mail.outbox if m.to == [buyer.email] and "PIN" in m.subject]
        assert code in sent.body and code in sent.alternatives[0][0]

        # Another account, test mode, staff: never the code.
        other = UserFactory()
        account_set_b2b(account=other.account, is_b2b=True)
        _k, other_key = make_key(other, mode="live")
        assert (
            client_for(other_key)
            .get(f"/api/v1/api-access/b2b/recharges/{recharge.public_id}")
            .status_code
            == 404
        )
        _k, test_key = make_key(buyer, mode="test")
        assert (
            client_for(test_key)
            .get(f"/api/v1/api-access/b2b/recharges/{recharge.public_id}")
            .status_code
            == 404
        )
        admin_api = Client().get("/api/v1/admin/recharges", **bearer(staff))
        assert admin_api.status_code == 200, admin_api.content
        assert code not in admin_api.content.decode()
        assert code[-4:] in admin_api.content.decode()
    finally:
        connection.force_debug_cursor = False
    logged = "\n".join(record.getMessage() for record in caplog.records)
    logged += "\n".join(str(record.args) for record in caplog.records)
    assert code not in logged

    # The request log keeps the lookup's body without the PIN.
    buffer.flush()
    requestlog_drain_task()
    bodies = " ".join(ApiRequest.objects.values_list("response_body", flat=True))
    assert '"pin":"[redacted]"' in bodies and code not in bodies

    assert _clear_text_columns_holding(code) == []


def test_staff_see_the_last_4_digits_and_showing_a_whole_pin_is_recorded(
    fake, airtime_reloadly, pin_product, staff
):
    buyer = UserFactory()
    fund(buyer, "100.00")
    (recharge,) = place(buyer, pin_product).recharges.all()
    processor.recharge_process(recharge_id=recharge.pk)
    recharge.refresh_from_db()
    code = pin_body(recharge)["code"]
    from tests.helpers import second_factor_login

    site = Client()
    second_factor_login(site, staff)
    listing = site.get("/admin/recharges/recharge/")
    assert listing.status_code == 200
    assert code[-4:] in listing.content.decode() and code not in listing.content.decode()
    shown = site.post(
        "/admin/recharges/recharge/",
        {"action": "show_pin", "_selected_action": [recharge.pk], "apply": "1", "reason": "t"},
    )
    page = shown.content.decode()
    assert code in page, page[page.find("content-main") : page.find("content-main") + 1500]
    assert shown["Cache-Control"].startswith("no-store")
    action = StaffAction.objects.get(action="recharge.pin_reveal")
    assert action.target_id == recharge.public_id and code not in json.dumps(action.detail)


def test_a_test_key_gets_a_simulated_pin_and_replays_keep_it_encrypted(pin_product):
    from accounts.services import account_set_b2b

    buyer = UserFactory()
    account_set_b2b(account=buyer.account, is_b2b=True)
    key, plaintext = make_key(buyer, mode="test")
    call_command("sandbox_topup", "--prefix", key.prefix, "--amount", "50", stdout=StringIO())
    api = client_for(plaintext)
    body = {
        "items": [
            {"productId": pin_product.public_id, "recipientNumber": "+525512345678", "quantity": 1}
        ],
        "baseCurrency": "EUR",
    }
    first = api.post(
        "/api/v1/api-access/b2b/recharges", body, format="json", HTTP_IDEMPOTENCY_KEY="k1"
    )
    assert first.status_code == 201, first.content
    (shown,) = first.json()["recharges"]
    assert shown["status"] == "success"
    code = shown["pin"]["code"]
    assert code.isdigit() and len(code) == 16
    (record,) = IdempotencyRecord.objects.all()
    assert code not in json.dumps(record.response_body)
    again = api.post(
        "/api/v1/api-access/b2b/recharges", body, format="json", HTTP_IDEMPOTENCY_KEY="k1"
    )
    assert again.json()["recharges"][0]["pin"]["code"] == code
    looked_up = api.get(f"/api/v1/api-access/b2b/recharges/{shown['id']}").json()
    assert looked_up["pin"]["code"] == code


def test_rotation_re_encrypts_old_pins_with_the_first_key(fake, airtime_reloadly, pin_product):
    key_a, key_b = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    buyer = UserFactory()
    fund(buyer, "100.00")
    with override_settings(FIELD_ENCRYPTION_KEY=[key_a]):
        (recharge,) = place(buyer, pin_product).recharges.all()
        processor.recharge_process(recharge_id=recharge.pk)
        recharge.refresh_from_db()
        code = pin_body(recharge)["code"]
    with override_settings(FIELD_ENCRYPTION_KEY=[key_b, key_a]):
        out = StringIO()
        call_command("rotate_field_encryption", stdout=out)
        assert "recharge PINs: 1" in out.getvalue()
    recharge.refresh_from_db()
    with override_settings(FIELD_ENCRYPTION_KEY=[key_b]):
        assert pin_body(recharge)["code"] == code
    with override_settings(FIELD_ENCRYPTION_KEY=[key_a]), pytest.raises(crypto.InvalidToken):
        pin_body(recharge)


def test_production_refuses_to_start_without_a_key_once_a_pin_product_exists(pin_product):
    from django.core.management.base import SystemCheckError

    with (
        override_settings(FIELD_ENCRYPTION_KEY=[], DEBUG=False),
        pytest.raises(SystemCheckError) as refused,
    ):
        call_command("check", tags=["field_encryption"], databases=["default"], stdout=StringIO())
    assert "FIELD_ENCRYPTION_KEY" in str(refused.value)
    with override_settings(DEBUG=False):
        call_command("check", tags=["field_encryption"], databases=["default"], stdout=StringIO())


# -- DT One and Ding: a PIN product's code, end to end through the processor ---------------


def _pin_provider(kind: str):
    """A fake of ``kind`` selling Telcel's PIN (besides its defaults), its provider row, and
    the catalog synced from it."""
    if kind == "dtone":
        fake = FakeDTOne(products=[*dtone_defaults(), *dtone_kinds()]).start()
        row = provider_create(
            name="dtone-pin",
            kind="dtone",
            base_url=fake.url,
            api_key=fake.api_key,
            api_secret=fake.api_secret,
            currency="USD",
        )
    else:
        fake = FakeDing().start()
        for item in ding_kinds():
            fake.add_product(item)
        row = provider_create(
            name="ding-pin", kind="ding", base_url=fake.url, api_key=fake.api_key, currency="USD"
        )
    catalog_sync(provider=row)
    return fake, row


@pytest.mark.parametrize("kind", ["dtone", "ding"])
def test_a_pin_from_dt_one_or_ding_reaches_its_buyer_and_no_attempt_or_answer_keeps_it(
    kind, django_capture_on_commit_callbacks
):
    fx_rate_set(base_currency="EUR", quote_currency="USD", rate=Decimal("1.10"))
    telcel = OperatorFactory(slug="telcel", name="Telcel")
    fake, row = _pin_provider(kind)
    try:
        pin_product = Product.objects.get(operator=telcel, product_type=ProductType.PIN)
        assert Route.objects.get(product=pin_product).provider == row
        buyer = UserFactory()
        from accounts.services import account_set_b2b

        account_set_b2b(account=buyer.account, is_b2b=True)
        fund(buyer, "100.00")
        with django_capture_on_commit_callbacks(execute=True):
            order = place(buyer, pin_product, number="+525512345678")
        (recharge,) = order.recharges.all()
        with django_capture_on_commit_callbacks(execute=True):
            assert processor.recharge_process(recharge_id=recharge.pk).status == "delivered"
        sent = fake.pins[recharge.public_id]
        code = sent["code"] if kind == "dtone" else sent["Pin"]
        recharge.refresh_from_db()
        assert recharge.provider == row.name and recharge.pin_last4 == code[-4:]

        # What the provider answered and what each attempt says: no code.
        assert code not in json.dumps(recharge.provider_response, default=str)
        attempts = list(RechargeAttempt.objects.filter(recharge=recharge))
        assert attempts and all(code not in attempt.message for attempt in attempts)

        # Its buyer sees it: the lookup (its key) and the receipt page.
        _key, plaintext = make_key(buyer, mode="live")
        shown = (
            client_for(plaintext)
            .get(f"/api/v1/api-access/b2b/recharges/{recharge.public_id}")
            .json()["pin"]
        )
        assert shown["code"] == code and shown["serial"]
        if kind == "dtone":
            assert shown["instructions"] == "Dial *133*<PIN># to top up"
            # The product's pin.validity {6 MONTH}: 180 days from the day it was sold.
            sold_on = recharge.created_at.date()
            assert shown["validUntil"] == (sold_on + timedelta(days=180)).isoformat()
        else:
            assert shown["validUntil"] == sent["ExpiryDate"] and "*133*" in shown["instructions"]
        site = Client()
        site.force_login(buyer)
        page = site.get(reverse("orders:receipt", args=[recharge.payment.public_id]))
        assert code in page.content.decode() and page["Cache-Control"] == "no-store"

        assert _clear_text_columns_holding(code) == []
    finally:
        fake.stop()


# -- the simulator (make run) --------------------------------------------------------------


def test_the_simulator_answers_a_simulated_pin_for_a_pin_product_and_remembers_it_sealed(
    settings, pin_product
):
    settings.AIRTIME_PROVIDER = "simulator"
    buyer = UserFactory()
    fund(buyer, "100.00")
    (recharge,) = place(buyer, pin_product).recharges.all()
    assert processor.recharge_process(recharge_id=recharge.pk).status == "delivered"
    recharge.refresh_from_db()
    pin = pin_body(recharge)
    assert pin is not None and pin["code"].isdigit() and len(pin["code"]) == 16
    assert pin["serial"] and "Simulated PIN" in pin["instructions"] and pin["valid_until"]
    assert recharge.provider_response["pin"] == "[pin]"
    assert pin["code"] not in json.dumps(recharge.provider_response)
    # Asked again (a lost answer), it answers the same PIN; its memory keeps it encrypted.
    from django.core.cache import cache

    from upstreams.adapters.simulator import SimulatorProvider

    again = SimulatorProvider().status(recharge.public_id)
    assert again is not None and again.pin is not None and again.pin.code == pin["code"]
    assert pin["code"] not in json.dumps(cache.get(f"airtime-sim:{recharge.public_id}"))
    assert _clear_text_columns_holding(pin["code"]) == []


def test_the_simulator_answers_no_pin_for_airtime(settings, product):
    settings.AIRTIME_PROVIDER = "simulator"
    buyer = UserFactory()
    fund(buyer, "100.00")
    (recharge,) = place(buyer, product).recharges.all()
    processor.recharge_process(recharge_id=recharge.pk)
    recharge.refresh_from_db()
    assert recharge.status == "delivered" and not recharge.pin_encrypted
    assert "pin" not in recharge.provider_response


def test_a_simulator_provider_row_sells_bundles_and_pins_as_they_are(pin_product):
    """As a provider row, the simulator offers each product with its benefits: a sync routes
    a bundle and a PIN to themselves, no new product (the sync tells plans apart by them)."""
    from catalog.benefits import benefit

    bundle = ProductFactory(
        operator=pin_product.operator,
        sku="SIM-BUNDLE",
        product_type=ProductType.BUNDLE,
        benefits=[benefit("data", "5", "GB"), benefit("sms", "50", "SMS")],
        validity_days=30,
    )
    pin_product.benefits = [benefit("credit", "100", "MXN")]
    pin_product.save(update_fields=["benefits"])
    before = Product.objects.count()
    row = provider_create(name="sim-1", kind="simulator")
    catalog_sync(provider=row)
    assert Product.objects.count() == before
    for product in (bundle, pin_product):
        assert Route.objects.get(provider=row, product=product).sku == product.sku


def test_an_agents_pin_and_fields_are_its_own_its_ancestors_read_neither(
    settings, pin_product, django_capture_on_commit_callbacks
):
    """Contract section 17: a PIN is shown "for the account that bought it and nobody else",
    and a line's extra fields to its buyer. An ancestor reading its agent's recharges and
    payments (section 18) sees the sale, without the PIN or the fields."""
    from accounts.services import account_set_b2b
    from network.agents import agent_create

    settings.AIRTIME_PROVIDER = "simulator"
    pin_product.required_fields = ["senderPhone"]
    pin_product.save(update_fields=["required_fields"])
    top = UserFactory(email="top@example.com")
    account_set_b2b(account=top.account, is_b2b=True)
    agent = agent_create(parent=top.account, by=top, name="Shop", owner_email="shop@example.com")
    shop = UserFactory(account=agent, role="owner")
    fund(shop, "100.00")
    _key, shop_key = make_key(shop, mode="live")
    with django_capture_on_commit_callbacks(execute=True):
        placed = client_for(shop_key).post(
            "/api/v1/api-access/b2b/recharges",
            {
                "items": [
                    {
                        "productId": pin_product.public_id,
                        "recipientNumber": "+525512345678",
                        "quantity": 1,
                        "fields": {"senderPhone": "+14155550123"},
                    }
                ],
                "baseCurrency": "EUR",
            },
            content_type="application/json",
            headers={"Idempotency-Key": "pin-of-an-agent"},
        )
    assert placed.status_code == 201, placed.content
    (recharge,) = placed.json()["recharges"]
    assert processor.recharge_process(recharge_id=_pk(recharge["id"])).status == "delivered"

    own = client_for(shop_key).get(f"/api/v1/api-access/b2b/recharges/{recharge['id']}").json()
    code = own["pin"]["code"]
    assert own["fields"] == {"senderPhone": "+14155550123"}

    _key, top_key = make_key(top, mode="live")
    parent = client_for(top_key)
    base = f"/api/v1/network/agents/{agent.public_id}"
    (seen,) = parent.get(f"{base}/recharges").json()["results"]
    assert seen["id"] == recharge["id"] and seen["status"] == "delivered"
    assert seen["pin"] is None and seen["fields"] == {}
    (payment,) = parent.get(f"{base}/payments").json()["results"]
    (in_payment,) = payment["recharges"]
    assert in_payment["pin"] is None and in_payment["fields"] == {}
    answers = parent.get(f"{base}/recharges").content + parent.get(f"{base}/payments").content
    assert code.encode() not in answers and b"4155550123" not in answers


def _pk(public_id: str) -> int:
    from recharges.models import Recharge

    return Recharge.objects.get(public_id=public_id).pk
