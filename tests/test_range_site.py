"""A range product on the site (issue 40, contract section 17): its card says the range and
the price at its smallest amount, offers an amount field with presets, and the price of the
amount typed comes from the server (``/products/<id>/price?amount=``) in the visitor's
currency less their discount, or a 4xx saying why in their language, never a 5xx. Without
JavaScript the form posts the amount: a refused one comes back under the field, a good one
reaches the cart, the checkout and the receipt."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core import mail
from django.core.management import call_command
from django.test import Client

from accounts.models import Account
from catalog.models import Product
from orders.amounts import amount_presets
from orders.models import CartItem
from recharges.models import Recharge
from tests.factories import PASSWORD, OperatorFactory, ProductFactory, UserFactory, make_country
from tests.helpers import fund
from upstreams.models import Provider, ProviderOperator, Route

pytestmark = pytest.mark.django_db

NUMBER = "+525512345678"
PAGE = "/catalog/MX/telcel/"


@pytest.fixture
def telcel():
    mexico = make_country("MX", "Mexico", "+52", "MXN", translations={"es": {"name": "México"}})
    return OperatorFactory(country=mexico, name="Telcel", slug="telcel", prefixes=["55"])


def range_product(operator, **overrides) -> Product:
    """10 to 1,000 MXN in steps of 1, priced A / 20 + 0.50 EUR: 150 MXN is 8.00 EUR."""
    values = {
        "operator": operator,
        "name": "Telcel any amount",
        "denomination": "range",
        "local_amount": None,
        "retail_price": None,
        "range_min": Decimal("10.00"),
        "range_max": Decimal("1000.00"),
        "range_step": Decimal("1.00"),
        "pricing_rate": Decimal("20"),
        "pricing_fee": Decimal("0.50"),
        "local_currency": "MXN",
    }
    values.update(overrides)
    return ProductFactory(**values)


@pytest.fixture
def anytime(telcel):
    return range_product(telcel)


def price(client, product, amount, language="en"):
    return client.get(
        f"/products/{product.public_id}/price",
        {"amount": amount},
        headers={"Accept-Language": language},
    )


def logged_in(user) -> Client:
    client = Client()
    assert client.login(username=user.email, password=PASSWORD)
    return client


def only_up_to(product: Product, high: str) -> None:
    """One provider row sells the product, up to ``high`` MXN only."""
    call_command("create_provider", "--name", "capped", "--kind", "simulator")
    row = Provider.objects.get(name="capped")
    upstream = ProviderOperator.objects.create(
        provider=row,
        upstream_id="capped-op",
        name="Telcel",
        country="MX",
        operator=product.operator,
    )
    Route.objects.create(
        provider=row,
        upstream_operator=upstream,
        product=product,
        cost=Decimal("0.00"),
        cost_per_unit=Decimal("0.01"),
        cost_currency="EUR",
        min_amount=product.range_min,
        max_amount=Decimal(high),
        step=product.range_step,
    )


# -- the price of an amount ------------------------------------------------------------------


def test_the_price_of_an_amount_is_the_servers_for_a_visitor(client, anytime):
    response = price(client, anytime, "150")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "amount": "150.00",
        "localCurrency": "MXN",
        "price": "8.00",
        "currency": "EUR",
        "message": "You pay 8.00 EUR",
    }


def test_the_price_of_an_amount_is_less_the_members_discount_in_their_language(anytime):
    user = UserFactory()
    Account.objects.filter(pk=user.account_id).update(discount_percent=Decimal("10"))
    response = price(logged_in(user), anytime, "150", language="es")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["price"], body["currency"]) == ("7.20", "EUR")
    assert body["message"] == "Pagas 7,20 EUR"


def test_an_amount_off_the_step_is_400_naming_the_range(client, anytime):
    response = price(client, anytime, "150.5")
    assert response.status_code == 400
    assert response.json() == {
        "code": "invalid_amount",
        "message": "Choose an amount from 10 to 1,000 MXN.",
    }
    stepped = range_product(anytime.operator, sku="STEP-5", range_step=Decimal("5.00"))
    response = price(client, stepped, "152", language="fr")
    assert response.status_code == 400
    message = response.json()["message"]
    assert "10" in message and "1" in message and "MXN" in message and "5" in message
    assert message.startswith("Choisissez"), message


@pytest.mark.parametrize("amount", ["5", "9.99", "1000.01", "5000", "0", "-150"])
def test_an_amount_out_of_the_range_is_400(client, anytime, amount):
    response = price(client, anytime, amount)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_amount"
    assert "10 to 1,000 MXN" in response.json()["message"]


@pytest.mark.parametrize(
    "amount",
    [
        "",
        " ",
        "abc",
        "NaN",
        "Infinity",
        "-Infinity",
        "1e999999",
        "1e-999999",
        "0x96",
        "1" * 40,
        "150;DROP",
        "\uff11\uff15\uff10",
        "\u0661\u0665\u0660",
    ],
)
def test_anything_else_is_a_clear_400_never_a_5xx(client, anytime, amount):
    response = price(client, anytime, amount)
    assert response.status_code == 400, (amount, response.content)
    body = response.json()
    assert body["code"] == "invalid_amount" and body["message"]


def test_an_amount_no_provider_sells_now_is_409_in_the_visitors_language(client, anytime):
    only_up_to(anytime, "100")
    assert price(client, anytime, "100").status_code == 200
    response = price(client, anytime, "150")
    assert response.status_code == 409
    assert response.json() == {
        "code": "product_unavailable",
        "message": "150 MXN cannot be sent at the moment: choose another amount.",
    }
    spanish = price(client, anytime, "150", language="es").json()["message"]
    assert spanish.startswith("150 MXN") and "cannot" not in spanish


def test_a_product_withdrawn_or_not_priced_yet_is_409(client, anytime):
    Product.objects.filter(pk=anytime.pk).update(pricing_rate=None, pricing_fee=None)
    assert price(client, anytime, "150").status_code == 409
    Product.objects.filter(pk=anytime.pk).update(offered=False, pricing_rate=Decimal("20"))
    assert price(client, anytime, "150").status_code == 409


def test_an_unknown_or_fixed_product_has_no_price_of_an_amount(client, telcel):
    fixed = ProductFactory(operator=telcel)
    for product_id in (fixed.public_id, "prd_nothing"):
        response = client.get(f"/products/{product_id}/price", {"amount": "100"})
        assert response.status_code == 404
        assert response.json()["code"] == "not_found"


def test_the_price_is_asked_with_get_only(client, anytime):
    response = client.post(f"/products/{anytime.public_id}/price", {"amount": "150"})
    assert response.status_code == 405


# -- the product page ------------------------------------------------------------------------


def test_a_range_products_card_has_its_range_price_from_and_amount_field(client, anytime):
    html = client.get(PAGE, {"phone": NUMBER}).content.decode()
    assert "Any amount from 10 to 1,000 MXN" in html
    assert "from 1.00 EUR" in html  # 10 MXN: 0.50 + 0.50
    field = re.search(r"<input id=\"amount-[^>]*>", html)
    assert field is not None
    tag = field.group(0)
    for attribute in (
        'type="number"',
        'name="local_amount"',
        'inputmode="decimal"',
        'min="10.00"',
        'max="1000.00"',
        'step="1.00"',
        "required",
    ):
        assert attribute in tag, (attribute, tag)
    assert f'<label class="small" for="amount-{anytime.public_id}">' in html
    assert f'aria-describedby="amount-{anytime.public_id}-price' in tag
    assert re.findall(r'data-amount="([\d.]+)"', html) == ["10", "50", "200", "1000"]
    assert 'aria-live="polite"' in html
    assert f"/products/{anytime.public_id}/price" in html


def test_the_card_speaks_spanish(client, anytime):
    html = client.get(PAGE, headers={"Accept-Language": "es"}).content.decode()
    assert "Cualquier importe de 10 a 1\u00a0000 MXN" in html  # es groups with a no-break space
    assert "desde 1,00 EUR" in html
    # Attributes stay machine numbers whatever the language.
    assert 'min="10.00"' in html and 'max="1000.00"' in html


def test_presets_are_round_amounts_on_the_step_spread_over_the_range(telcel):
    def presets(**range_) -> list[str]:
        product = range_product(telcel, sku=f"P-{len(Product.objects.all())}", **range_)
        return [str(amount) for amount in amount_presets(product)]

    assert presets() == ["10", "50", "200", "1000"]
    assert presets(range_min=Decimal("50"), range_max=Decimal("500")) == ["50", "100", "200", "500"]
    assert presets(range_min=Decimal("5"), range_max=Decimal("12")) == ["5", "8", "10", "12"]
    # Off the round numbers: the ends and the middle, on the step.
    assert presets(range_min=Decimal("7"), range_max=Decimal("997"), range_step=Decimal("10")) == [
        "7",
        "497",
        "997",
    ]
    assert presets(
        range_min=Decimal("0.50"), range_max=Decimal("3.00"), range_step=Decimal("0.25")
    ) == ["0.50", "1", "2"]


# -- the form without JavaScript ---------------------------------------------------------------


def post_amount(client, product, amount, **extra):
    data = {
        "product": product.public_id,
        "recipient_number": NUMBER,
        "quantity": "1",
        "local_amount": amount,
        "next": f"{PAGE}?phone=%2B525512345678",
        **extra,
    }
    return client.post("/cart/add/", data)


def test_a_refused_amount_comes_back_under_its_field_as_typed(anytime):
    client = logged_in(UserFactory())
    response = post_amount(client, anytime, "150.5")
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith(PAGE) and location.endswith(f"#{anytime.public_id}")
    assert "phone=%2B525512345678" in location and "amount=150.5" in location
    assert not CartItem.objects.exists()
    html = client.get(location.split("#")[0]).content.decode()
    tag = re.search(r"<input id=\"amount-[^>]*>", html).group(0)
    assert 'value="150.5"' in tag and 'aria-invalid="true"' in tag
    error = re.search(r'<p class="error small" id="amount-[^"]*-error"[^>]*>([^<]*)</p>', html)
    assert error is not None and error.group(1) == "Choose an amount from 10 to 1,000 MXN."


def test_an_amount_not_sold_now_comes_back_said_so_and_buy_now_too(anytime):
    only_up_to(anytime, "100")
    client = logged_in(UserFactory())
    response = post_amount(client, anytime, "150", then="checkout")
    assert response.status_code == 302 and "amount_for=" in response["Location"]
    html = client.get(response["Location"].split("#")[0]).content.decode()
    assert "150 MXN cannot be sent at the moment: choose another amount." in html
    assert not CartItem.objects.exists()
    # Logged out, the same: nothing kept for a guest checkout.
    visitor = Client()
    response = post_amount(visitor, anytime, "", then="checkout")
    assert response.status_code == 302 and "amount_for=" in response["Location"]
    html = visitor.get(response["Location"].split("#")[0]).content.decode()
    assert "Enter the amount to send, in MXN." in html


def test_a_posted_amount_reaches_the_cart_and_checkout_with_its_price(anytime):
    user = UserFactory()
    client = logged_in(user)
    response = post_amount(client, anytime, "150")
    assert response.status_code == 302 and response["Location"] == "/cart/"
    (item,) = CartItem.objects.all()
    assert item.local_amount == Decimal("150.00")
    cart = client.get("/cart/").content.decode()
    assert "150.00 MXN" in cart and "8.00 EUR" in cart
    fund(user, "20.00")
    checkout = client.get("/checkout/").content.decode()
    assert "150.00 MXN" in checkout


def test_a_logged_out_buy_now_keeps_the_amount_to_the_guest_checkout(client, anytime):
    response = post_amount(client, anytime, "150", then="checkout")
    assert response.status_code == 302 and response["Location"] == "/checkout/guest/"
    page = client.get("/checkout/guest/").content.decode()
    assert "150.00 MXN" in page
    assert re.search(r'data-testid="quote-total">8.00 EUR<', page)


def test_paid_from_the_wallet_the_receipt_shows_the_amount_and_the_price_charged(
    anytime, django_capture_on_commit_callbacks
):
    user = UserFactory()
    client = logged_in(user)
    fund(user, "20.00")
    post_amount(client, anytime, "150")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/checkout/wallet/", {"when_promotion_scheduled": "wait"})
    assert response.status_code == 302, response.content
    receipt = client.get(response["Location"]).content.decode()
    assert re.search(r'data-testid="recharge-amount">150.00 MXN<', receipt)
    (recharge,) = Recharge.objects.all()
    assert recharge.local_amount == Decimal("150.00") and recharge.amount == Decimal("8.00")
    (sent,) = [m for m in mail.outbox if m.to == [user.email]]
    assert "Telcel any amount" in sent.body and "8.00 EUR" in sent.body
