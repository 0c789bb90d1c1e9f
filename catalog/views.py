"""The site's catalog pages: countries → operators → products, and the phone-number finder.

Public pages (no login): the catalog is what we sell. Same selectors as the API. The home page
and an operator's page also show a member's saved recipients: they are site pages
(site_pages.views), with this module's country list and region cookie.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from catalog import selectors
from catalog.detection import operators_detect
from catalog.errors import PhoneNumberError
from catalog.models import Country
from catalog.phone import phone_international, phone_parse


def countries_by_name() -> list[Country]:
    """The countries we sell in, by their name in the page's language."""
    return sorted(selectors.country_list(), key=lambda c: c.name_localized.casefold())


# The country last picked on the finder: the home page's picker starts with it
# (site_pages.views.home).
REGION_COOKIE = "topup_country"


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    promotions = [p for p in selectors.promotion_list(at=now)]
    return render(
        request,
        "catalog/index.html",
        {"countries": countries_by_name(), "promotions": promotions, "now": now},
    )


@require_GET
def find(request: HttpRequest) -> HttpResponse:
    """Number first: the number finds its country and operator. One detected operator goes
    straight to its amounts; otherwise (ported, shared or unknown range, or ``choose``) the
    operators of the country are offered, the detected ones first."""
    region = request.GET.get("country", "")
    raw = phone_international(request.GET.get("phone", ""), region=region)
    context: dict = {"phone": raw, "countries": countries_by_name(), "region": region.upper()}
    if raw.strip():
        try:
            phone = phone_parse(raw, field="phone")
        except PhoneNumberError as exc:
            context["error"] = exc.message
        else:
            operators = list(selectors.operators_with_product_counts(country=phone.country))
            detection = operators_detect(phone=phone, operators=operators)
            detected = detection.operators
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
                    "detected_by": detection.by,
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
