"""The site's catalog pages: countries → operators → products, and the phone-number finder.

Public pages (no login): the catalog is what we sell. Same selectors as the API.
"""

from __future__ import annotations

from itertools import groupby

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET

from catalog import selectors
from catalog.errors import PhoneNumberError
from catalog.models import Operator, PromotionStatus
from catalog.phone import operator_detect, phone_parse


def _countries():
    return sorted(selectors.country_list(), key=lambda c: c.name_localized.casefold())


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    promotions = [p for p in selectors.promotion_list(at=now)]
    return render(
        request,
        "catalog/index.html",
        {"countries": _countries(), "promotions": promotions, "now": now},
    )


@require_GET
def find(request: HttpRequest) -> HttpResponse:
    """Find the operator of a number: the detected one(s), or all of its country."""
    raw = request.GET.get("phone", "")
    context: dict = {"phone": raw, "countries": _countries()}
    if raw.strip():
        try:
            phone = phone_parse(raw, field="phone")
        except PhoneNumberError as exc:
            context["error"] = exc.message
        else:
            operators = list(selectors.operators_with_product_counts(country=phone.country))
            detected = operator_detect(phone=phone, operators=operators)
            context.update(
                {
                    "number": phone,
                    "country": selectors.country_get(code=phone.country),
                    "detected": detected,
                    "others": [op for op in operators if op not in detected],
                }
            )
    return render(request, "catalog/find.html", context)


@require_GET
def country(request: HttpRequest, code: str) -> HttpResponse:
    if code != code.upper():
        return redirect("catalog:country", code=code.upper())
    found = selectors.country_get(code=code)
    if found is None:
        raise Http404
    operators = sorted(
        selectors.operators_with_product_counts(country=found.code),
        key=lambda op: op.name_localized.casefold(),
    )
    return render(request, "catalog/country.html", {"country": found, "operators": operators})


@require_GET
def operator(request: HttpRequest, code: str, slug: str) -> HttpResponse:
    found: Operator | None = (
        selectors.operator_list(country=code).filter(slug=slug).first()
        if code == code.upper()
        else None
    )
    if found is None:
        raise Http404
    now = timezone.now()
    products = list(selectors.product_list().filter(operator=found))
    selectors.products_attach_promotions(products=products, at=now)
    groups = [
        (kind, list(items)) for kind, items in groupby(products, key=lambda p: p.product_type)
    ]
    promotions = {p.promotion.pk: p.promotion for p in products if p.promotion}  # type: ignore[attr-defined]
    return render(
        request,
        "catalog/operator.html",
        {
            "operator": found,
            "country": found.country,
            "groups": groups,
            "promotions": sorted(promotions.values(), key=lambda p: p.starts_at),
            "now": now,
            "ACTIVE": PromotionStatus.ACTIVE,
        },
    )
