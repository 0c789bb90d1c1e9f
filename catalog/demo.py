"""The demo data of ``manage.py seed_demo`` (docs/contract.md §8) and the code that loads it.

Real countries and their real operators, face values as sold by top-up providers, prices in
EUR computed from approximate exchange rates with a margin, two promotions (one active, one
scheduled inside the waitlist horizon, one ended), FX rates, a staff user and a B2B reseller.

Repeatable: every row is upserted by its natural key, so a second run changes nothing. The
promotions' windows are relative to the first run; a later run moves a window only when the
promotion no longer shows what it is there to show (e.g. the active one has ended).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation
from django.utils.formats import number_format

from accounts.models import User
from accounts.services import totp_device_ensure, user_create
from catalog import services
from catalog.benefits import benefit
from catalog.demo_data import (
    COUNTRIES,
    FX_RATES,
    MARGIN,
    MINIMUM_PRICE,
    OPERATORS,
    PRICING_RATES,
    PROMOTIONS,
    RESELLER_ACCOUNT,
    RESELLER_EMAIL,
    RESELLER_PASSWORD,
    STAFF_EMAIL,
    STAFF_PASSWORD,
    DemoOperator,
)
from catalog.models import Country, Operator, Product, Promotion, PromotionStatus
from reseller.money import quantize

__all__ = ["RESELLER_EMAIL", "RESELLER_PASSWORD", "STAFF_EMAIL", "STAFF_PASSWORD", "seed_demo"]


def demo_price(*, face_value: Decimal, currency: str) -> Decimal:
    """EUR retail price of a face value: converted, plus the margin, never below 0.10 (a
    floor any higher priced small top-ups alike: 100, 200 and 500 NGN at one price)."""
    price = quantize(face_value / PRICING_RATES[currency] * MARGIN)
    return max(price, MINIMUM_PRICE)


def _format_amount(value: int, language: str = "en") -> str:
    """1,000 in English, 1.000 in Spanish, 1 000 in French."""
    if language == "en":
        return f"{value:,}"
    with translation.override(language):
        return number_format(value, force_grouping=True)


# A data allowance ("1.5 GB", "2 GB/day") as each language writes it: its decimal comma, and
# French's "Go" (gigaoctet).
_ALLOWANCE_WORDS = {
    "es": {"GB": "GB", "/day": "/día"},
    "fr": {"GB": "Go", "/day": "/jour"},
}


def _allowance(allowance: str, language: str) -> str:
    number, _space, unit = allowance.partition(" ")
    if language == "en":
        return allowance
    with translation.override(language):
        number = number_format(Decimal(number))
    for english, word in _ALLOWANCE_WORDS[language].items():
        unit = unit.replace(english, word)
    return f"{number} {unit}"


# A bundle's words in each language ("5 GB, 100 min and 50 SMS for 30 days").
_BUNDLE_WORDS = {
    "en": ("and", "for {days} days"),
    "es": ("y", "durante {days} días"),
    "fr": ("et", "pendant {days} jours"),
}


def _bundle_words(given: tuple[tuple[str, str, str], ...], days: int, language: str) -> str:
    """What a demo bundle gives, written out in ``language``."""
    parts = [_allowance(f"{amount} {unit}", language) for _kind, amount, unit in given]
    conjunction, validity = _BUNDLE_WORDS[language]
    listed = f"{', '.join(parts[:-1])} {conjunction} {parts[-1]}" if len(parts) > 1 else parts[0]
    return f"{listed} {validity.format(days=days)}"


def demo_products(operator: DemoOperator) -> list[dict]:
    """The product rows of an operator, keyed by SKU (``DEMO-MX-TELCEL-AIR-100``)."""
    currency = operator.currency or next(c[5] for c in COUNTRIES if c[0] == operator.country)
    base = f"DEMO-{operator.country}-{operator.slug.upper()}"
    rows = []
    for value in operator.airtime:
        amount = _format_amount(value)
        rows.append(
            {
                "sku": f"{base}-AIR-{value}",
                "name": f"{operator.name} {amount} {currency}",
                "product_type": "airtime",
                "local_amount": Decimal(value),
                "local_currency": currency,
                "description": f"{amount} {currency} of airtime",
                "validity_days": None,
                "translations": {
                    "es": {"description": f"{_format_amount(value, 'es')} {currency} de saldo"},
                    "fr": {"description": f"{_format_amount(value, 'fr')} {currency} de crédit"},
                },
            }
        )
    for value, allowance, days in operator.data:
        es, fr = _allowance(allowance, "es"), _allowance(allowance, "fr")
        rows.append(
            {
                "sku": f"{base}-DATA-{value}",
                "name": f"{operator.name} {allowance} data, {days} days",
                "product_type": "data",
                "local_amount": Decimal(value),
                "local_currency": currency,
                "description": f"{allowance} of mobile data for {days} days",
                "validity_days": days,
                "translations": {
                    "es": {
                        "name": f"{operator.name} {es} de datos, {days} días",
                        "description": f"{es} de datos móviles durante {days} días",
                    },
                    "fr": {
                        "name": f"{operator.name} {fr} de données, {days} jours",
                        "description": f"{fr} de données mobiles pendant {days} jours",
                    },
                },
            }
        )
    for value, given, days in operator.bundles:
        benefits = [benefit(kind, amount, unit) for kind, amount, unit in given]
        rows.append(
            {
                "sku": f"{base}-BUNDLE-{value}",
                "name": f"{operator.name} bundle {_format_amount(value)} {currency}",
                "product_type": "bundle",
                "local_amount": Decimal(value),
                "local_currency": currency,
                "description": _bundle_words(given, days, "en"),
                "validity_days": days,
                "benefits": benefits,
                "translations": {
                    "es": {
                        "name": f"Paquete {operator.name} {_format_amount(value, 'es')} {currency}",
                        "description": _bundle_words(given, days, "es"),
                    },
                    "fr": {
                        "name": f"Forfait {operator.name} {_format_amount(value, 'fr')} {currency}",
                        "description": _bundle_words(given, days, "fr"),
                    },
                },
            }
        )
    for value in operator.pins:
        words = {language: _format_amount(value, language) for language in ("en", "es", "fr")}
        rows.append(
            {
                "sku": f"{base}-PIN-{value}",
                "name": f"{operator.name} PIN {words['en']} {currency}",
                "product_type": "pin",
                "local_amount": Decimal(value),
                "local_currency": currency,
                "description": f"A PIN worth {words['en']} {currency} of {operator.name} "
                "credit, entered on the phone",
                "validity_days": operator.pin_validity_days,
                "benefits": [benefit("credit", str(value), currency)],
                "translations": {
                    "es": {
                        "description": f"Un PIN de {words['es']} {currency} de saldo "
                        f"{operator.name}, para marcar en el teléfono",
                    },
                    "fr": {
                        "description": f"Un code PIN de {words['fr']} {currency} de crédit "
                        f"{operator.name}, à composer sur le téléphone",
                    },
                },
            }
        )
    for row in rows:
        row["retail_price"] = demo_price(face_value=row["local_amount"], currency=currency)  # type: ignore[arg-type]
    return rows


def _any_amount(demo: DemoOperator, operator: Operator) -> tuple[Product, services.UpsertResult]:
    """The operator's range product, priced as its fixed amounts are (``demo_price`` without
    its floor): A / (rate / margin), no fee."""
    assert demo.any_amount is not None
    low, high, step = demo.any_amount
    currency = demo.currency or operator.country.currency
    rate = (PRICING_RATES[currency] / MARGIN).quantize(Decimal("0.00000001"))
    return services.product_range_upsert(
        sku=f"DEMO-{demo.country}-{demo.slug.upper()}-AIR-ANY",
        operator=operator,
        name=f"{demo.name} any amount",
        description=f"Any amount from {_format_amount(low)} to {_format_amount(high)} {currency}",
        # The name shows under the amount on the operator's page, in the visitor's language.
        translations={
            "es": {
                "name": f"{demo.name}, cualquier importe",
                "description": f"Cualquier importe de {_format_amount(low, 'es')} a "
                f"{_format_amount(high, 'es')} {currency}",
            },
            "fr": {
                "name": f"{demo.name}, montant libre",
                "description": f"Tout montant de {_format_amount(low, 'fr')} à "
                f"{_format_amount(high, 'fr')} {currency}",
            },
        },
        local_currency=currency,
        range_min=Decimal(low),
        range_max=Decimal(high),
        range_step=Decimal(step),
        pricing=(rate, Decimal(0)),
    )


def promotion_window(kind: str, now: datetime) -> tuple[datetime, datetime]:
    """The window of a demo promotion as of ``now`` (the scheduled one starts in 24 h)."""
    if kind == "active":
        return now - timedelta(days=2), now + timedelta(days=12)
    if kind == "scheduled":
        start = now + timedelta(hours=min(24, max(1, settings.WAITLIST_HORIZON_HOURS // 2)))
        return start, start + timedelta(days=3)
    return now - timedelta(days=60), now - timedelta(days=30)


def _window_still_shows(promotion: Promotion, kind: str, now: datetime) -> bool:
    status = promotion.status_at(now)
    if kind == "scheduled":
        horizon = timedelta(hours=settings.WAITLIST_HORIZON_HOURS)
        return status == PromotionStatus.SCHEDULED and promotion.starts_at - now <= horizon
    return status == kind


@dataclass
class SeedReport:
    counts: dict[str, Counter] = field(default_factory=dict)
    users: list[tuple[str, str, str, bool]] = field(default_factory=list)  # role, email, pw, new
    # The demo admin's authenticator (otpauth:// URI), so the back office can be signed in to.
    staff_otpauth: str = ""

    def add(self, kind: str, outcome: str) -> None:
        self.counts.setdefault(kind, Counter())[outcome] += 1

    @property
    def changed(self) -> bool:
        return any(
            c[services.UpsertResult.CREATED] or c[services.UpsertResult.UPDATED]
            for c in self.counts.values()
        ) or any(new for *_rest, new in self.users)


@transaction.atomic
def seed_demo(*, now: datetime | None = None) -> SeedReport:
    now = now or timezone.now()
    report = SeedReport()
    countries: dict[str, Country] = {}
    for code, name, name_es, name_fr, calling, currency in COUNTRIES:
        country, outcome = services.country_upsert(
            code=code,
            name=name,
            calling_code=calling,
            currency=currency,
            translations={"es": {"name": name_es}, "fr": {"name": name_fr}},
        )
        countries[code] = country
        report.add("countries", outcome)
    operators: dict[tuple[str, str], Operator] = {}
    products: dict[str, Product] = {}
    for demo in OPERATORS:
        operator, outcome = services.operator_upsert(
            country=countries[demo.country],
            slug=demo.slug,
            name=demo.name,
            color=demo.color,
            carrier_names=demo.carrier_names,
            prefixes=demo.prefixes,
        )
        operators[(demo.country, demo.slug)] = operator
        report.add("operators", outcome)
        for row in demo_products(demo):
            product, outcome = services.product_upsert(operator=operator, **row)
            products[product.sku] = product
            report.add("products", outcome)
        if demo.any_amount is not None:
            product, outcome = _any_amount(demo, operator)
            products[product.sku] = product
            report.add("products", outcome)
    for demo in PROMOTIONS:  # type: ignore[assignment]
        existing = Promotion.objects.filter(code=demo.code).first()  # type: ignore[attr-defined]
        if existing is not None and _window_still_shows(existing, demo.kind, now):  # type: ignore[attr-defined]
            starts_at, ends_at = existing.starts_at, existing.ends_at
        else:
            starts_at, ends_at = promotion_window(demo.kind, now)  # type: ignore[attr-defined]
        _promotion, outcome = services.promotion_upsert(
            code=demo.code,  # type: ignore[attr-defined]
            operator=operators[(demo.country, demo.operator)],  # type: ignore[attr-defined]
            products=[products[sku] for sku in demo.skus],  # type: ignore[attr-defined]
            name=demo.name,
            description=demo.description,  # type: ignore[attr-defined]
            terms=demo.terms,  # type: ignore[attr-defined]
            starts_at=starts_at,
            ends_at=ends_at,
            translations=demo.translations,  # type: ignore[attr-defined]
        )
        report.add("promotions", outcome)
    for quote, rate in FX_RATES.items():
        _fx, outcome = services.fx_rate_set(base_currency="EUR", quote_currency=quote, rate=rate)
        report.add("fx rates", outcome)
    report.users.append(
        (
            "staff (back office)",
            STAFF_EMAIL,
            STAFF_PASSWORD,
            _ensure_user(
                email=STAFF_EMAIL,
                password=STAFF_PASSWORD,
                account_name="Reseller staff",
                is_staff=True,
                is_superuser=True,
            ),
        )
    )
    staff = User.objects.get(email__iexact=STAFF_EMAIL)
    if staff.is_staff:
        device, new = totp_device_ensure(user=staff)
        report.add(
            "staff authenticators",
            services.UpsertResult.CREATED if new else services.UpsertResult.UNCHANGED,
        )
        report.staff_otpauth = device.config_url
    report.users.append(
        (
            "B2B reseller",
            RESELLER_EMAIL,
            RESELLER_PASSWORD,
            _ensure_user(
                email=RESELLER_EMAIL,
                password=RESELLER_PASSWORD,
                account_name=RESELLER_ACCOUNT,
                is_b2b=True,
            ),
        )
    )
    return report


def _ensure_user(*, email: str, password: str, account_name: str, **flags: bool) -> bool:
    """Create the demo user unless it exists (an existing one is left as it is)."""
    if User.objects.filter(email__iexact=email).exists():
        return False
    user_create(email=email, password=password, account_name=account_name, **flags)  # type: ignore[arg-type]
    return True
