"""The site's catalog pages: countries → operators → products, and the phone-number finder.

Public pages (no login): the catalog is what we sell. Same selectors as the API.
"""

from __future__ import annotations

from itertools import groupby
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from catalog import selectors
from catalog.errors import PhoneNumberError
from catalog.models import Operator, PromotionStatus
from catalog.phone import PhoneNumber, operator_detect, phone_international, phone_parse
from recipients.selectors import recipient_names, recipients_of, top_up_url


def _countries():
    return sorted(selectors.country_list(), key=lambda c: c.name_localized.casefold())


REGION_COOKIE = "topup_country"


def _guess_region(request: HttpRequest, countries) -> str:
    """The country picker's first choice: the visitor's last one, else the one their browser's
    languages name (``es-MX`` → MX), when we sell there."""
    codes = {c.code for c in countries}
    languages = request.headers.get("Accept-Language", "").split(",")
    candidates = [request.COOKIES.get(REGION_COOKIE, "")]
    candidates += [lang.split(";")[0].strip().rpartition("-")[2] for lang in languages]
    return next((c.upper() for c in candidates if c.upper() in codes), "")


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """Number first: one phone field with a country picker leads the page; saved recipients
    are one click from their amounts."""
    countries = _countries()
    saved = []
    if request.user.is_authenticated:
        saved = list(recipients_of(account_id=request.user.account_id)[:6])
        for recipient in saved:
            operator = recipient.operator
            recipient.top_up_url = top_up_url(  # type: ignore[attr-defined]
                phone_number=recipient.phone_number,
                country=operator.country_id if operator else None,
                slug=operator.slug if operator else None,
            )
    return render(
        request,
        "home.html",
        {"countries": countries, "region": _guess_region(request, countries), "saved": saved},
    )


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
    """Number first: the number finds its country and operator. One detected operator goes
    straight to its amounts; otherwise (ported, shared or unknown range, or ``choose``) the
    operators of the country are offered, the detected ones first."""
    region = request.GET.get("country", "")
    raw = phone_international(request.GET.get("phone", ""), region=region)
    context: dict = {"phone": raw, "countries": _countries(), "region": region.upper()}
    if raw.strip():
        try:
            phone = phone_parse(raw, field="phone")
        except PhoneNumberError as exc:
            context["error"] = exc.message
        else:
            operators = list(selectors.operators_with_product_counts(country=phone.country))
            detected = operator_detect(phone=phone, operators=operators)
            if len(detected) == 1 and "choose" not in request.GET:
                found = detected[0]
                url = reverse("catalog:operator", args=[found.country_id, found.slug])
                response = redirect(f"{url}?{urlencode({'phone': phone.e164})}")
                response.set_cookie(
                    REGION_COOKIE, phone.country, max_age=365 * 86400, samesite="Lax"
                )
                return response
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


def _number_for(raw: str, *, country: str) -> PhoneNumber | None:
    """The number the page tops up, when it is a valid one of the operator's country."""
    try:
        phone = phone_parse(raw, field="phone")
    except PhoneNumberError:
        return None
    return phone if phone.country == country else None


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
    number = _number_for(request.GET.get("phone", ""), country=found.country_id)
    saved_name = ""
    if number is not None and request.user.is_authenticated:
        saved_name = recipient_names(account_id=request.user.account_id).get(number.e164, "")
    return render(
        request,
        "catalog/operator.html",
        {
            "number": number,
            "saved_name": saved_name,
            "operator": found,
            "country": found.country,
            "groups": groups,
            "promotions": sorted(promotions.values(), key=lambda p: p.starts_at),
            "now": now,
            "ACTIVE": PromotionStatus.ACTIVE,
        },
    )
