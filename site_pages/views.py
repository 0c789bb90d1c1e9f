"""The site's pages that show several apps at once (docs/architecture.md, "Layers"). They sit
on top, beside the back office, so that every app imports only the apps below it. A page keeps
the address and the URL name of the app it belongs to (site_pages/urls.py), and its template
stays with that app's; a page of one app stays in that app.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts import selectors as account_selectors
from accounts import services as account_services
from accounts.errors import ApiKeyNotEditable
from accounts.forms import ApiKeyWhitelistForm
from accounts.http import AuthenticatedRequest
from catalog import selectors as catalog_selectors
from catalog.errors import PhoneNumberError
from catalog.field_inputs import FIELD_INPUTS
from catalog.fields import fields_check
from catalog.models import Operator, Product, ProductType, PromotionStatus
from catalog.phone import PhoneNumber, phone_parse
from catalog.views import REGION_COOKIE, countries_by_name
from orders.amounts import (
    AMOUNT,
    AMOUNT_FOR,
    amount_presets,
    amount_price,
    prices_shown,
    visitor_account,
)
from orders.line_fields import FIELD_PREFIX, FIELDS_FOR, fields_kept
from orders.selectors import sandbox_recharges
from orders.statements import period_recharges
from recharges.sandbox import GUIDE as SANDBOX_GUIDE
from recharges.sandbox import sandbox_present
from recipients.selectors import recipient_names, recipients_of, top_up_url
from reseller.errors import ApplicationError, ValidationFailed
from reseller.money import quantize
from sandbox.balances import ADDITIONS_PER_HOUR as SANDBOX_PER_HOUR
from sandbox.balances import AMOUNTS as SANDBOX_AMOUNTS
from sandbox.balances import CAP as SANDBOX_CAP
from sandbox.balances import sandbox_balance, sandbox_balances, sandbox_topup
from site_pages.forms import RechargeFilters
from wallet import statements as wallet_statements
from wallet.services import wallet_get_or_create
from wallet.views import statement_period

# -- accounts' API key pages, with a test key's sandbox balance, top-ups and test recharges ----
# Keys of other accounts do not exist for these pages (404).


@login_required
@require_GET
def api_keys(request: AuthenticatedRequest) -> HttpResponse:
    keys = list(account_selectors.api_keys_of_account(account=request.user.account))
    balances = sandbox_balances(keys=[key for key in keys if not key.livemode])
    for key in keys:
        key.sandbox_balance = balances.get(key.pk)  # type: ignore[attr-defined]
    return render(request, "accounts/keys.html", {"keys": keys})


@login_required
@require_http_methods(["GET", "POST"])
def api_key_detail(request: AuthenticatedRequest, key_id: str) -> HttpResponse:
    key = account_selectors.api_key_of_account(account=request.user.account, public_id=key_id)
    form = ApiKeyWhitelistForm(
        request.POST if request.method == "POST" else None,
        initial={"ip_whitelist": key.ip_whitelist},
    )
    if request.method == "POST" and form.is_valid():
        try:
            account_services.api_key_set_whitelist(
                key=key, ip_whitelist=form.cleaned_data["ip_whitelist"]
            )
        except ApiKeyNotEditable as exc:
            messages.error(request, exc.detail)
        else:
            messages.success(request, _("The IP whitelist is saved."))
        return redirect("accounts:api-key", key_id=key.public_id)
    context = {"key": key, "form": form}
    if not key.livemode:
        context["sandbox_balance"] = sandbox_balance(key=key)[0]
        context["sandbox_amounts"] = [int(amount) for amount in SANDBOX_AMOUNTS]
        context["sandbox_cap"] = SANDBOX_CAP
        context["sandbox_per_hour"] = SANDBOX_PER_HOUR
        recharges = sandbox_recharges(api_key=key)
        sandbox_present(recharges, now=timezone.now())  # a read: shown as settled, not written
        context["sandbox_recharges"] = recharges
        context["sandbox_endings"] = SANDBOX_GUIDE
    return render(request, "accounts/keys_detail.html", context)


@login_required
@require_POST
def api_key_sandbox_topup(request: AuthenticatedRequest, key_id: str) -> HttpResponse:
    """The dashboard's sandbox buttons: the same service and rules as the CLI."""
    key = account_selectors.api_key_of_account(account=request.user.account, public_id=key_id)
    try:
        wallet = sandbox_topup(key=key, amount=request.POST.get("amount", ""), by=request.user)
    except ApplicationError as exc:
        messages.error(request, exc.fields[0]["message"] if exc.fields else exc.detail)
    else:
        messages.success(
            request,
            _("Added to the sandbox. Balance: %(balance)s %(currency)s.")
            % {"balance": wallet.balance, "currency": wallet.currency},
        )
    return redirect("accounts:api-key", key_id=key.public_id)


# -- the home page and catalog's operator page, with a member's saved recipients ---------------


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
    countries = countries_by_name()
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


def _number_for(raw: str, *, country: str) -> PhoneNumber | None:
    """The number the page tops up, when it is a valid one of the operator's country."""
    try:
        phone = phone_parse(raw, field="phone")
    except PhoneNumberError:
        return None
    return phone if phone.country == country else None


def _amount_attach(request: HttpRequest, product: Product) -> None:
    """A range product's amount field: its presets, and the amount a form posted without
    JavaScript that the cart refused (``orders.views._amount_refused``), with why."""
    product.amount_presets = amount_presets(product)  # type: ignore[attr-defined]
    if request.GET.get(AMOUNT_FOR) != product.public_id:
        return
    raw = request.GET.get(AMOUNT, "")[:20]
    product.amount_typed = raw  # type: ignore[attr-defined]
    try:
        product.amount_price = amount_price(  # type: ignore[attr-defined]
            product=product, raw=raw, account=visitor_account(request.user)
        )
    except ApplicationError as exc:
        product.amount_error = exc.detail  # type: ignore[attr-defined]


def _fields_attach(request: HttpRequest, product: Product) -> None:
    """The inputs of the extra fields a product needs (contract section 17), and, for a card
    the cart refused (``?fields_for=<id>``, ``orders.views._card_refused``), what was typed
    (kept in the session, never in the URL) with why each field was refused."""
    kept = None
    if request.GET.get(FIELDS_FOR) == product.public_id:
        kept = fields_kept(request.session, product_id=product.public_id)
    errors: dict[str, str] = {}
    if kept is not None:
        _clean, refused = fields_check(required=product.required_fields, given=kept)
        errors = {error.field: error.message for error in refused}
    product.field_inputs = [  # type: ignore[attr-defined]
        {
            "input": FIELD_INPUTS[name],
            "id": f"{FIELD_PREFIX}{name}-{product.public_id}",
            "value": (kept or {}).get(name, ""),
            "error": errors.get(name, ""),
        }
        for name in product.required_fields
        if name in FIELD_INPUTS
    ]


@require_GET
def operator(request: HttpRequest, code: str, slug: str) -> HttpResponse:
    found: Operator | None = (
        catalog_selectors.operator_list(country=code).filter(slug=slug).first()
        if code == code.upper()
        else None
    )
    if found is None:
        raise Http404
    now = timezone.now()
    products = list(catalog_selectors.product_list().filter(operator=found))
    catalog_selectors.products_attach_promotions(products=products, at=now)
    # Grouped as docs/catalog.md says: airtime, data bundles, bundles, then PINs.
    groups = [
        (kind, [p for p in products if p.product_type == kind])
        for kind in ProductType.values
        if any(p.product_type == kind for p in products)
    ]
    promotions = {p.promotion.pk: p.promotion for p in products if p.promotion}  # type: ignore[attr-defined]
    # The signed-in account's own prices (an agent's, a listed or discounted account's), as its
    # cart will charge them; a visitor's are the catalog's. Loaded for the page's products at
    # once, on this request's rows only: nothing shared is written.
    account_id = request.user.account_id if request.user.is_authenticated else None
    shown = prices_shown(account_id=account_id, products=products)
    for product in products:
        product.shown_price = shown.get(product.pk)  # type: ignore[attr-defined]
        if product.is_range:
            _amount_attach(request, product)
        if product.required_fields:
            _fields_attach(request, product)
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


# -- wallet's statement of a period, with the period's recharges -------------------------------

ENTRIES_SHOWN = 100  # the page's table; the downloads hold every entry of the period


@login_required
@require_GET
def statement(request: AuthenticatedRequest) -> HttpResponse:
    """The live wallet's statement of a period (UTC days, this month so far by default): its
    totals, its first entries, the downloads of all of them; and the period's recharges."""
    account = request.user.account
    live = wallet_get_or_create(account=account)
    filters = RechargeFilters(request.GET, account=account)
    filters.is_valid()
    context: dict[str, Any] = {
        "wallet": live,
        "filters": filters,
        "values": {
            "from": request.GET.get("from", ""),
            "to": request.GET.get("to", ""),
        },
        "errors": {},
        "filtered": any(filters.cleaned_data.get(name) for name in filters.fields),
        "shown": ENTRIES_SHOWN,
    }
    try:
        period = statement_period(request)
    except ValidationFailed as error:
        for problem in error.fields or []:
            context["errors"].setdefault(problem["field"], []).append(problem["message"])
        return render(request, "wallet/statement.html", context)
    query = urlencode({"from": period.start.isoformat(), "to": period.end.isoformat()})
    context["values"] = {"from": period.start.isoformat(), "to": period.end.isoformat()}
    context.update(
        period=period,
        summary={  # quantized: SQLite sums decimals as floats (PostgreSQL's are exact)
            name: quantize(value) if isinstance(value, Decimal) else value
            for name, value in wallet_statements.statement_summary(
                wallet=live, period=period
            ).items()
        },
        entries=list(
            wallet_statements.statement_entries(wallet=live, period=period)[:ENTRIES_SHOWN]
        ),
        csv_url=f"{reverse('wallet:statement-csv')}?{query}",
        xlsx_url=f"{reverse('wallet:statement-xlsx')}?{query}",
        recharges=period_recharges(
            account=account, since=period.since, until=period.until, **filters.selection()
        ),
    )
    return render(request, "wallet/statement.html", context)
