"""Django admin of the catalog: lists with search and filters, translations, promotions."""

import pytest
from django.urls import reverse

from catalog.models import Product, Promotion
from tests.factories import (
    FxRateFactory,
    OperatorFactory,
    ProductFactory,
    PromotionFactory,
    UserFactory,
)
from tests.helpers import second_factor_login

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    second_factor_login(client, UserFactory(is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def catalog():
    product = ProductFactory(name="Telcel 100")
    promotion = PromotionFactory(operator=product.operator, products=[product])
    fx = FxRateFactory()
    return {
        "country": product.country,
        "operator": product.operator,
        "product": product,
        "promotion": promotion,
        "fxrate": fx,
    }


@pytest.mark.parametrize("model", ["country", "operator", "product", "promotion", "fxrate"])
def test_every_catalog_model_has_list_add_and_change_pages(admin_client, catalog, model):
    obj = catalog[model]
    changelist = reverse(f"admin:catalog_{model}_changelist")
    assert admin_client.get(changelist).status_code == 200
    assert admin_client.get(changelist, {"q": "tel"}).status_code == 200
    assert admin_client.get(reverse(f"admin:catalog_{model}_add")).status_code == 200
    change = reverse(f"admin:catalog_{model}_change", args=[obj.pk])
    assert admin_client.get(change).status_code == 200


def test_translation_fields_are_labelled_in_the_staff_members_language(admin_client, catalog):
    """The per-language fields were labelled once, at import, in English and in lower case
    ("name (es)") among translated, capitalised labels."""
    change = reverse("admin:catalog_product_change", args=[catalog["product"].pk])
    english = admin_client.get(change, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert ">Name (es):</label>" in english and ">Description (fr):</label>" in english
    admin_client.cookies["django_language"] = "es"
    spanish = admin_client.get(change).content.decode()
    assert ">Nombre (es):</label>" in spanish and ">Descripción (fr):</label>" in spanish


def test_products_can_be_filtered_by_country_operator_and_active(admin_client, catalog):
    other = ProductFactory(name="Elsewhere")
    url = reverse("admin:catalog_product_changelist")
    html = admin_client.get(
        url, {"country__code__exact": "MX", "operator__id__exact": catalog["operator"].pk}
    ).content.decode()
    assert "Telcel 100" in html and "Elsewhere" not in html
    html = admin_client.get(url, {"active__exact": "1", "q": other.sku}).content.decode()
    assert "Elsewhere" in html and "Telcel 100" not in html


def test_promotions_can_be_filtered_by_status(admin_client, catalog):
    url = reverse("admin:catalog_promotion_changelist")
    assert catalog["promotion"].name in admin_client.get(url, {"status": "active"}).content.decode()
    assert (
        catalog["promotion"].name not in admin_client.get(url, {"status": "ended"}).content.decode()
    )


def promotion_form(operator, products, **changes):
    data = {
        "code": "new-promo",
        "operator": operator.pk,
        "products": [p.pk for p in products],
        "starts_at_0": "2026-12-01",
        "starts_at_1": "10:00:00",
        "ends_at_0": "2026-12-04",
        "ends_at_1": "10:00:00",
        "name": "Weekend double",
        "description": "Double airtime.",
        "terms": "Within the window.",
        "name_es": "Doble de fin de semana",
        "description_es": "Saldo doble.",
        "terms_es": "",
        "name_fr": "",
        "description_fr": "Crédit doublé.",
        "terms_fr": "Pendant la promotion.",
    }
    data.update(changes)
    return data


def test_admin_saves_promotion_translations_per_language(admin_client, catalog):
    operator = catalog["operator"]
    response = admin_client.post(
        reverse("admin:catalog_promotion_add"),
        promotion_form(operator, [catalog["product"]]),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    promotion = Promotion.objects.get(code="new-promo")
    assert promotion.public_id.startswith("prm_")
    assert promotion.translations == {
        "es": {"name": "Doble de fin de semana", "description": "Saldo doble."},
        "fr": {"description": "Crédit doublé.", "terms": "Pendant la promotion."},
    }
    assert list(promotion.products.all()) == [catalog["product"]]
    change = admin_client.get(reverse("admin:catalog_promotion_change", args=[promotion.pk]))
    assert "Doble de fin de semana" in change.content.decode()


def test_admin_refuses_a_promotion_with_products_of_another_operator(admin_client, catalog):
    stranger = ProductFactory(operator=OperatorFactory())
    response = admin_client.post(
        reverse("admin:catalog_promotion_add"), promotion_form(catalog["operator"], [stranger])
    )
    assert response.status_code == 200
    assert "belong to another operator" in response.content.decode()
    assert not Promotion.objects.filter(code="new-promo").exists()


def test_admin_refuses_a_promotion_ending_before_it_starts(admin_client, catalog):
    response = admin_client.post(
        reverse("admin:catalog_promotion_add"),
        promotion_form(catalog["operator"], [], ends_at_0="2026-11-30"),
    )
    assert response.status_code == 200
    assert not Promotion.objects.filter(code="new-promo").exists()


def test_admin_creates_a_product_with_its_derived_id_and_country(admin_client, catalog):
    operator = catalog["operator"]
    response = admin_client.post(
        reverse("admin:catalog_product_add"),
        {
            "sku": "ADMIN-1",
            "operator": operator.pk,
            "product_type": "data",
            "denomination": "fixed",
            "active": "on",
            "name": "Admin bundle",
            "description": "",
            "local_amount": "50",
            "local_currency": "MXN",
            "retail_price": "2.50",
            "retail_currency": "EUR",
            "validity_days": "7",
            "name_es": "Paquete",
            "name_fr": "",
            "description_es": "",
            "description_fr": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    product = Product.objects.get(sku="ADMIN-1")
    assert product.country_id == operator.country_id
    assert product.translations == {"es": {"name": "Paquete"}}


def test_admin_action_withdraws_and_reactivates_products(admin_client, catalog):
    product = catalog["product"]
    url = reverse("admin:catalog_product_changelist")
    admin_client.post(url, {"action": "deactivate", "_selected_action": [product.pk]})
    product.refresh_from_db()
    assert product.active is False
    admin_client.post(url, {"action": "activate", "_selected_action": [product.pk]})
    product.refresh_from_db()
    assert product.active is True


def test_catalog_admin_is_closed_to_non_staff(client, catalog):
    client.force_login(UserFactory())
    response = client.get(reverse("admin:catalog_product_changelist"))
    assert response.status_code == 302


RANGE_FORM = {
    "sku": "ADMIN-RANGE",
    "product_type": "airtime",
    "denomination": "range",
    "active": "on",
    "name": "Any amount",
    "description": "",
    "local_amount": "",
    "local_currency": "MXN",
    "retail_price": "",
    "retail_currency": "EUR",
    "range_min": "20",
    "range_max": "1000",
    "range_step": "10",
    "pricing_rate": "",
    "pricing_fee": "",
    "validity_days": "",
    "name_es": "",
    "name_fr": "",
    "description_es": "",
    "description_fr": "",
}


def test_admin_creates_a_range_product(admin_client, catalog):
    data = {**RANGE_FORM, "operator": catalog["operator"].pk}
    response = admin_client.post(reverse("admin:catalog_product_add"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    product = Product.objects.get(sku="ADMIN-RANGE")
    assert (product.denomination, product.local_amount, product.retail_price) == (
        "range",
        None,
        None,
    )
    assert (product.range_min, product.range_max, product.range_step) == (20, 1000, 10)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"range_min": ""}, "range_min"),
        ({"range_step": "0"}, "range_step"),
        ({"range_max": "10"}, "range_max"),  # under its smallest amount
        ({"local_amount": "100"}, "local_amount"),  # a range has no face value
        ({"denomination": "fixed"}, "local_amount"),  # a fixed product needs one
    ],
)
def test_admin_explains_a_range_product_it_cannot_save(admin_client, catalog, changes, field):
    data = {**RANGE_FORM, "operator": catalog["operator"].pk, **changes}
    response = admin_client.post(reverse("admin:catalog_product_add"), data)
    assert response.status_code == 200  # the form again, with the error beside the field
    assert field in response.context["adminform"].form.errors
    assert not Product.objects.filter(sku="ADMIN-RANGE").exists()
