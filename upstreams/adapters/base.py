"""The upstream airtime provider interface (docs/contract.md §14; docs/providers.md).

Every adapter (``simulator``, ``reloadly``, ``dtone``, ``ding``) sends a top-up with our
recharge id as the provider's reference, asks a top-up's status by that reference, reads the
account's balance, lists the fixed amounts it sells (``catalog``) and a day's transactions
(``transactions``, for reconciliation).

When a top-up is sent, adapters raise one of three errors so the processor knows what to do:
- ``TransientError``: the provider definitely did not get or did not take the request
  (connection refused, connect timeout, 429): retry later, or send it to the next route.
- ``UpstreamTimeout``: the request may have reached the provider and may still deliver (a
  read timeout, a 5xx, an answer we cannot read, a refusal saying our reference is already
  used): settle it at that same provider by looking our reference up (``status``), never send
  it elsewhere meanwhile, so a recipient is never topped up twice.
- ``PermanentError``: a refusal the provider documents (it did not and will not deliver):
  send it to the next route, or fail and refund when there is none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Protocol


@dataclass(frozen=True)
class TopupRequest:
    reference: str  # our recharge id, sent as the provider's custom identifier
    recipient_number: str  # E.164
    country: str  # ISO 3166-1 alpha-2
    operator_id: str  # the provider's operator identifier
    product_id: str
    amount: Decimal  # face value in the local currency
    currency: str
    # From the route (``UpstreamProduct``) when one is used: the provider's own product
    # (DT One's product id, Ding's SkuCode), and what to send in its terms (Ding's SendValue
    # and SendCurrencyIso). Empty for the simulator's catalog and AIRTIME_PROVIDER's path.
    sku: str = ""
    send_value: Decimal | None = None
    send_currency: str = ""
    callback_url: str = ""  # where the provider may call back (DT One), or ""
    # The line's extra fields (catalog.fields: "senderPhone", "recipientEmail", …), clean;
    # each adapter sends them under its provider's names.
    fields: dict[str, str] = field(default_factory=dict)
    # The provider's own name of each field, where it names them per product (Ding's
    # settings), from the route (``UpstreamProduct.field_names``); empty otherwise.
    field_names: dict[str, str] = field(default_factory=dict)
    # Our product's kind (catalog.models.ProductType): the simulator answers a PIN for "pin".
    product_type: str = ""


@dataclass(frozen=True)
class Pin:
    """A code the customer enters (contract section 17, "PINs"), as the provider answered it:
    Reloadly's ``pinDetail``, DT One's transaction ``pin``, Ding's ``ReceiptParams``. Secret:
    the processor keeps it encrypted (``reseller.crypto``); nothing logs or stores it in clear,
    and the adapters strip it from the ``raw`` answer they hand over."""

    code: str
    serial: str = ""
    instructions: str = ""
    valid_until: str = ""  # as the provider says it (a date, or "" when it does not)

    def as_dict(self) -> dict[str, str | None]:
        """The wire shape's fields (snake_case), None where unknown."""
        return {
            "code": self.code,
            "serial": self.serial or None,
            "instructions": self.instructions or None,
            "valid_until": self.valid_until or None,
        }

    def __repr__(self) -> str:  # never the code, in a traceback or a log line
        return f"Pin(code=…{self.code[-4:]}, serial={self.serial!r})"


PIN_REDACTED = "[pin]"


@dataclass(frozen=True)
class ProviderResult:
    status: str  # "delivered", "pending", "failed" or "reversed"
    transaction_id: str = ""
    code: str = ""
    message: str = ""
    raw: dict[str, Any] = field(default_factory=dict)
    # What the provider reported debiting our account for this top-up, when it says so
    # (Reloadly's ``balanceInfo``/discount, DT One's wholesale price + fee, Ding's
    # ``CommissionApplied``), in the provider account's currency.
    cost: Decimal | None = None
    cost_currency: str = ""
    # A PIN product's code, when the provider delivered one (``raw`` then holds it no more).
    pin: Pin | None = field(default=None, repr=False)
    # What the recipient got, in the product's local currency, where the provider says so
    # and it may differ from the amount asked for (Ding's ReceiveValue for a SendValue).
    delivered_amount: Decimal | None = None

    DELIVERED = "delivered"
    PENDING = "pending"
    FAILED = "failed"
    REVERSED = "reversed"  # delivered, then taken back by the provider


@dataclass(frozen=True)
class ProviderConfig:
    """How to reach one provider account (a ``Provider`` row, or the settings' Reloadly)."""

    base_url: str = ""
    auth_url: str = ""  # Reloadly's OAuth2 server
    client_id: str = ""  # Reloadly
    client_secret: str = ""  # Reloadly
    api_key: str = ""  # DT One (Basic user), Ding (``api_key`` header)
    api_secret: str = ""  # DT One (Basic password)
    currency: str = ""  # the provider account's currency, when the provider does not say
    timeout: float = 30.0  # PROVIDER_TIMEOUT_SECONDS


@dataclass(frozen=True)
class UpstreamOperator:
    upstream_id: str  # the provider's operator id
    name: str
    country: str  # ISO 3166-1 alpha-2 (DT One's alpha-3 converted)


@dataclass(frozen=True)
class UpstreamProduct:
    """One fixed amount a provider sells: a route to a catalog product once its operator is
    mapped. ``cost`` is what the provider debits our account for one unit, computed as the
    provider documents it (Reloadly: the amount less its discount; DT One: wholesale price
    plus fee; Ding: send value less commission), in ``cost_currency``."""

    operator: UpstreamOperator
    sku: str  # what ``TopupRequest.sku`` carries to send it ("" when the operator id does)
    product_type: str  # "airtime", "data", "bundle" or "pin" (catalog.models.ProductType)
    local_amount: Decimal | None  # what the recipient gets (None: a range, or not said)
    local_currency: str
    cost: Decimal  # a range: the fixed part of its cost (0 when there is none)
    cost_currency: str
    send_value: Decimal | None = None  # what to send in the provider's terms (Ding)
    send_currency: str = ""
    raw: dict[str, Any] = field(default_factory=dict)
    # A range (contract section 17): any local amount min_amount, min_amount + step, … up to
    # max_amount, costing ``cost + amount * cost_per_unit``; where the provider wants its own
    # terms, sent as ``send_value`` (what min_amount sends) plus ``send_per_unit`` for each
    # unit above min_amount, rounded up to the cent (``Route.send_value_at``).
    denomination: str = "fixed"
    min_amount: Decimal | None = None
    max_amount: Decimal | None = None
    step: Decimal | None = None
    cost_per_unit: Decimal | None = None
    send_per_unit: Decimal | None = None
    # What the provider needs besides the number to sell it (catalog.fields.FIELD_NAMES),
    # and, where the provider names them per product (Ding's settings), its name of each
    # field it takes (``{"senderName": "SenderName"}``), sent back with the top-up.
    required_fields: tuple[str, ...] = ()
    field_names: dict[str, str] = field(default_factory=dict)
    # What a data, bundle or PIN product gives, as the provider describes it, in the
    # catalog's shape (catalog.benefits: {"kind", "amount", "unit", "text"}), and for how
    # many days (None: not said, or no expiry). Airtime carries none.
    benefits: tuple[dict[str, Any], ...] = ()
    validity_days: int | None = None


@dataclass(frozen=True)
class SkippedProduct:
    """An upstream product the platform cannot sell, and why (listed in the back office)."""

    operator: UpstreamOperator
    product_id: str  # the provider's product id or SKU ("" when the operator is the product)
    name: str
    reason: str


@dataclass(frozen=True)
class UpstreamCatalog:
    """A provider's whole catalog: what can be sold, and what was left out with its reason."""

    products: list[UpstreamProduct]
    skipped: list[SkippedProduct] = field(default_factory=list)


@dataclass(frozen=True)
class UpstreamTransaction:
    """One line of a provider's transaction report (reconciliation)."""

    reference: str  # our recharge id as the provider holds it ("" when it has none)
    transaction_id: str
    status: str  # a ``ProviderResult`` status
    amount: Decimal | None  # local amount delivered, when reported
    currency: str
    cost: Decimal | None
    cost_currency: str
    created_at: datetime | None  # UTC
    raw: dict[str, Any] = field(default_factory=dict)


class ProviderError(Exception):
    def __init__(
        self,
        message: str,
        *,
        code: str = "upstream_error",
        raw: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.raw = raw
        self.retry_after = retry_after


class TransientError(ProviderError):
    pass


class UpstreamTimeout(ProviderError):
    pass


class PermanentError(ProviderError):
    pass


# The providers as their own words and our adapters' name them (docs/providers.md).
_PROVIDER_NAMES = re.compile(r"\b(?:Reloadly|DT ?One|DingConnect|Ding)\b", re.IGNORECASE)


def provider_unnamed(message: str) -> str:
    """``message`` (a provider's refusal, an adapter's error) as a reseller may read it:
    resellers never see the provider (contract section 14), so every provider's name in it
    reads "the provider" ("DingConnect refused the transfer" -> "the provider refused the
    transfer"). Staff find the provider in the recharge's ``provider`` and its attempts."""
    return _PROVIDER_NAMES.sub("the provider", message)


def connection_refused(error: BaseException) -> bool:
    """Did the call fail because nothing listened at the provider (a refused TCP connection,
    anywhere in the chain of causes)?"""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class AirtimeProvider(Protocol):
    name: str

    def send(self, request: TopupRequest) -> ProviderResult: ...

    def status(self, reference: str) -> ProviderResult | None:
        """The outcome of the top-up sent with ``reference``, or None if it never arrived."""
        ...

    def balance(self) -> tuple[Decimal, str]: ...


class CatalogProvider(AirtimeProvider, Protocol):
    """What an upstream with a catalog and reports adds (every kind but the simulator's
    AIRTIME_PROVIDER path): its fixed amounts, and a day's transactions."""

    def catalog(self, *, countries: Iterable[str] | None = None) -> list[UpstreamProduct]:
        """Every product it sells (fixed amounts and ranges), all pages read (``countries``:
        alpha-2 codes to ask for, where the provider lists by country; None for all)."""
        ...

    def catalog_read(self, *, countries: Iterable[str] | None = None) -> UpstreamCatalog:
        """``catalog`` with the upstream products left out and why (the sync records them)."""
        ...

    def transactions(self, *, day: date) -> list[UpstreamTransaction]:
        """The provider's transactions of one UTC day, all pages read."""
        ...


class NumberLookupProvider(Protocol):
    """A provider that can say which operator a mobile number is with now (contract section
    17, "Number lookup"): Reloadly's auto-detect, DT One's mobile-number lookup, Ding's
    ``GetAccountLookup``. A ported number answers its new operator."""

    name: str

    def lookup(self, *, number: str, country: str, timeout: float) -> list[UpstreamOperator]:
        """The operator(s) the provider says ``number`` (E.164) of ``country`` (alpha-2) is
        with, usually one; empty when it does not know. One HTTP call of at most ``timeout``
        seconds; failures raise ``TransientError`` (nothing is sent, so nothing is unclear)."""
        ...
