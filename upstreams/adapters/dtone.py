"""HTTP adapter for DT One's Digital Value Services (DVS) API (docs/contract.md §14).

The reference is DT One's public OpenAPI 3.0 description of DVS ("Digital Value Services
API" 1.23.0), e.g. repository ``voxgig-sdk/dtone-sdk``, file ``.sdk/def/dtone-dvs-openapi.json``;
the numeric ids of the status classes are on developers.dtone.com/reference/transactions-1 and
the callbacks on developers.dtone.com/reference/callbacks. What this adapter relies on:

- Servers end in ``/v1`` (``https://dvs-api.dtone.com/v1``, sandbox
  ``https://preprod-dvs-api.dtone.com/v1``); ``base_url`` is taken with or without it.
  HTTP Basic auth: the API key is the user, the API secret the password. A wrong pair is
  ``401`` with error ``1000401``.
- Errors are ``{"errors": [{"code": <int>, "message": <str>}]}`` with the HTTP status the
  reference's table gives each code (``1000400`` 400, ``1000401`` 401, ``1000429`` 429,
  ``1003001`` product not available 404, ``1005003`` credit party mobile number invalid 400,
  ``1006001`` insufficient balance 400, ``1007001`` external id already used 400, ``1008004``
  transaction not found 404, ``1009001`` 500, ``1009503`` 503, ...).
- ``POST /async/transactions`` takes ``external_id`` (ours; at most 40 characters),
  ``product_id`` (an integer), ``auto_confirm``, ``credit_party_identifier.mobile_number``
  (E.164) and ``callback_url``; it answers ``201`` with the transaction. A transaction has
  ``id``, ``external_id``, ``creation_date``, ``status {id, message, class {id, message}}``,
  ``product`` (with ``operator`` and ``type``), ``prices.wholesale {unit_type, unit, amount,
  fee}``, ``benefits``, ``requested_values``/``adjusted_values`` and the parties.
- Status *classes* are what to act on (the reference says so): CREATED 1, CONFIRMED 2,
  SUBMITTED 5 are in flight; COMPLETED 7 is delivered; REJECTED 3 (DT One's business rules),
  CANCELLED 4 (by us, before confirmation) and DECLINED 9 (the operator) did not deliver;
  REVERSED 8 is a manual reversal after delivery. The finer statuses (``DECLINED-INVALID-
  CREDIT-PARTY`` ...) are in ``status.message``; their numeric ids are not published.
- Balance movements: CREATED moves wholesale price + fee from available to holding,
  COMPLETED captures it, REJECTED/CANCELLED/DECLINED void it, REVERSED puts it back. So a
  transaction's cost is ``prices.wholesale.amount + prices.wholesale.fee`` in
  ``prices.wholesale.unit``; ``GET /balances`` lists ``{id, unit_type, unit, available,
  holding, credit_limit}`` and we report ``available``.
- Lists page with ``page`` and ``per_page`` (default 50, at most 100); the answer's headers
  ``X-Total-Pages`` (and ``X-Next-Page``) say how many pages there are.
- ``GET /products`` filters by ``type``, ``service_id`` (1 is Mobile; its subservices are 11
  Airtime, 12 Bundle, 13 Data) and ``country_iso_code``, an ISO 3166 **alpha-3** code plus
  DT One's own ``GXX`` (global) and ``EXX`` (Europe), which have no alpha-2 and are skipped.
  A FIXED_VALUE_RECHARGE product has ``destination {unit_type, unit, amount}`` (what the
  recipient gets) and ``prices.wholesale`` (what we pay). A RANGED_VALUE_RECHARGE product has
  ``destination.amount {min, max, increment}``, ``prices.wholesale.fee``, ``rates.wholesale``
  ("exchange rate between the wholesale price and the destination amount") and
  ``accepted_calculation_modes``; a transaction of it carries ``calculation_mode``
  (``DESTINATION_AMOUNT``) and ``destination {unit_type, unit, amount}``; an amount outside
  the range is ``1003002`` (400), another unit ``1003003``. Its route's sku is
  ``"<product id>:range"``, which tells ``send`` to add the amount; it costs ``amount /
  rates.wholesale + fee``.
- ``GET /transactions`` filters by ``external_id`` or by ``from_date``/``to_date``: full
  date-times, both inclusive, at most 24 hours apart (without either it lists the last 24
  hours). Its documented 404 is ``1008004`` "Transaction not found".
- Callbacks: when a ``callback_url`` was given, DT One POSTs the transaction object to it when
  the status becomes COMPLETED or DECLINED, and REVERSED after a manual reversal; it retries
  until answered 2XX. Anyone can POST there: the caller looks the transaction up before
  trusting a callback (``callback_result`` only reads it).

What may surprise:
- A transaction that DT One answers with a failed class (REJECTED/CANCELLED/DECLINED) did not
  and will not deliver: ``send`` raises ``PermanentError`` with the status as its code (e.g.
  ``declined_invalid_credit_party``) and the transaction as ``raw``, so the processor may try
  the next route; ``status`` and ``callback_result`` return it as a ``failed`` result.
- ``1007001`` (external id already used) means DT One holds a transaction under our reference:
  it is looked up at once and its outcome returned; when the lookup does not find it (yet),
  ``UpstreamTimeout`` (never a refusal). Only a 404 carrying ``1008004`` counts as "not
  there": any other 404 (a wrong base URL) is an error, never "it never arrived".
- A 4xx whose error code is not a documented refusal is treated as an unclear answer
  (``UpstreamTimeout``), and so is a 5xx: settled by looking our reference up.
- The API documents no ``Retry-After``; it is read on a 429 when present.
- A transaction object carries no ``destination`` (write-only in the schema): the local
  amount of a report line comes from ``adjusted_values``/``requested_values`` when present,
  else from the benefit counted in currency (``benefits[].amount.base``).
- The catalog keeps Mobile products (fixed and ranged) whose recipient is a mobile number.
  ``required_sender_fields`` / ``required_beneficiary_fields`` (lists of alternatives, each a
  list of fields wanted together) become the route's required fields: ``first_name`` and
  ``last_name`` are the sender's or recipient's name (``senderName``/``recipientName``,
  split on its last space; one word is sent as both), the sender's ``mobile_number`` is
  ``senderPhone``, the beneficiary's ``email`` is ``recipientEmail`` and its
  ``mobile_number`` the recipient's own. ``send`` sends them as the transaction's ``sender``
  and ``beneficiary`` objects, leaving out what was not given. A product wanting any other
  party field (middle name, nationality, address...) or debit-party, statement or additional
  fields is skipped with the reason. DVS publishes no error code of its own for a missing
  party field: the fake answers the generic ``1000400`` (400), a refusal here.
- Kinds (contract section 17): the catalog reads the ``product_types``
  FIXED_VALUE_RECHARGE, RANGED_VALUE_RECHARGE, FIXED_VALUE_PIN_PURCHASE and
  RANGED_VALUE_PIN_PURCHASE (RANGED_VALUE_PAYMENT is a bill, not ours). A PIN purchase is a
  ``pin`` product (its transaction carries the ``pin`` the customer enters; its product may
  need no credit party at all). Otherwise the subservice decides (Airtime ``airtime``, Data
  ``data``), then the ``benefits``: DATA alone is ``data``; TALKTIME or SMS, or several kinds
  (a Bundle) ``bundle``; CREDITS alone ``airtime``. A benefit (``type`` TALKTIME, DATA, SMS,
  PAYMENT, CREDITS; ``unit_type`` TIME, DATA, QUANTITY, CURRENCY; ``unit``; ``amount {base,
  promotion_bonus, total_excluding_tax, total_including_tax}``, ``base`` ``-1`` meaning
  unlimited) becomes ours (voice, data, sms, other, credit) with ``total_excluding_tax``
  (the base and any promotion bonus, before taxes), minutes for TIME. A ranged benefit
  (``min``/``max``) has no single amount. ``validity {quantity, unit}`` (HOUR, DAY, WEEK,
  MONTH; ``-1`` unlimited, null unknown) becomes days (a month is 30). Airtime carries no
  benefits.
- Money comes as JSON numbers (doubles); they are read as ``Decimal(str(number))``.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
from typing import Any

from django_countries.data import ALT_CODES

from catalog.benefits import benefit as make_benefit
from upstreams.adapters import client as http
from upstreams.adapters.base import (
    PIN_REDACTED,
    PermanentError,
    Pin,
    ProviderConfig,
    ProviderResult,
    SkippedProduct,
    TopupRequest,
    TransientError,
    UpstreamCatalog,
    UpstreamOperator,
    UpstreamProduct,
    UpstreamTimeout,
    UpstreamTransaction,
)
from upstreams.adapters.kinds import valid_until

logger = logging.getLogger(__name__)

RATE_LIMITED = "upstream_rate_limited"  # the processor pauses every worker on this code

# Status classes (by message, and by the class ids DT One publishes) → our result statuses.
STATUS_CLASSES = {
    "CREATED": ProviderResult.PENDING,
    "CONFIRMED": ProviderResult.PENDING,
    "SUBMITTED": ProviderResult.PENDING,
    "COMPLETED": ProviderResult.DELIVERED,
    "REJECTED": ProviderResult.FAILED,
    "CANCELLED": ProviderResult.FAILED,
    "DECLINED": ProviderResult.FAILED,
    "REVERSED": ProviderResult.REVERSED,
}
CLASS_IDS = {
    1: "CREATED",
    2: "CONFIRMED",
    3: "REJECTED",
    4: "CANCELLED",
    5: "SUBMITTED",
    7: "COMPLETED",
    8: "REVERSED",
    9: "DECLINED",
}

UNAUTHORIZED = 1000401
TOO_MANY_REQUESTS = 1000429
EXTERNAL_ID_USED = 1007001
TRANSACTION_NOT_FOUND = 1008004
# Documented refusals of a new transaction: DT One did not create it and will not deliver.
REFUSALS = {
    1000400: "bad_request",
    1000404: "resource_not_found",
    1003001: "product_not_available",
    1003002: "product_amount_out_of_range",
    1003003: "product_unit_invalid",
    1005003: "credit_party_mobile_number_invalid",
    1005004: "service_not_found",
    1005005: "country_not_found",
    1005006: "operator_not_found",
    1005503: "sender_mobile_number_invalid",
    1006001: "insufficient_balance",
    1006003: "debit_party_mobile_number_invalid",
    1006009: "account_balance_not_found",
    1006503: "beneficiary_mobile_number_invalid",
    1007500: "method_not_supported_by_operator",
}

MOBILE_SERVICE = 1
FIXED, RANGED = "FIXED_VALUE_RECHARGE", "RANGED_VALUE_RECHARGE"
FIXED_PIN, RANGED_PIN = "FIXED_VALUE_PIN_PURCHASE", "RANGED_VALUE_PIN_PURCHASE"
PRODUCT_TYPES = (FIXED, RANGED, FIXED_PIN, RANGED_PIN)
BENEFIT_KINDS = {
    "DATA": "data",
    "TALKTIME": "voice",
    "SMS": "sms",
    "CREDITS": "credit",
    "PAYMENT": "other",
}
VALIDITY_DAYS = {"DAY": 1, "WEEK": 7, "MONTH": 30}
RANGE_SKU = ":range"  # a route's sku "<product id>:range": sent with its destination amount
AIRTIME_SUBSERVICE, BUNDLE_SUBSERVICE, DATA_SUBSERVICE = 11, 12, 13
# Fields a product may require that a top-up request of ours cannot fill.
UNFILLABLE_FIELDS = (
    "required_debit_party_identifier_fields",
    "required_statement_identifier_fields",
    "required_additional_identifier_fields",
)
FIELD_ORDER = ("senderName", "senderPhone", "recipientEmail", "recipientName")  # catalog.fields
# The sender's and beneficiary's fields DVS names (the transaction's ``sender`` and
# ``beneficiary``) that a line's extra fields fill (catalog.fields), per party; "" is filled
# without one (the beneficiary's mobile number is the recipient's). Any other required field
# (middle_name, nationality, address, the sender's email...) cannot be sent.
PARTY_FIELDS = {
    "required_sender_fields": {
        "first_name": "senderName",
        "last_name": "senderName",
        "mobile_number": "senderPhone",
    },
    "required_beneficiary_fields": {
        "first_name": "recipientName",
        "last_name": "recipientName",
        "email": "recipientEmail",
        "mobile_number": "",
    },
}
MAX_PAGES = 10_000  # a guard against a server that never says it is done

ALPHA3 = {alpha2: codes[0] for alpha2, codes in ALT_CODES.items()}
ALPHA2 = {alpha3: alpha2 for alpha2, alpha3 in ALPHA3.items()}


class DTOneProvider:
    kind = "dtone"
    per_page = 100  # the reference's maximum page size

    def __init__(
        self, config: ProviderConfig, *, name: str, client: http.Client | None = None
    ) -> None:
        self.name = name
        self.config = config
        self.base_url = _api_root(config.base_url)
        self.currency = config.currency.upper()
        self.auth = (config.api_key, config.api_secret)
        self.timeout = config.timeout
        # The process's client (kept connections, thread-safe); each call sets its own timeout.
        self.http = client or http.shared()

    # -- HTTP ------------------------------------------------------------------------------
    def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json_body: dict[str, Any] | None = None,
        sending: bool = False,
    ) -> http.Response:
        """One call. Failures before the request left (refused, connect timeout, a URL or header
        that cannot be sent) are ``TransientError``; later ones are ``UpstreamTimeout`` when
        ``sending`` (the transaction may exist), else ``TransientError``."""
        try:
            return self.http.request(
                method,
                f"{self.base_url}{path}",
                params=params,
                json=json_body,
                auth=self.auth,
                timeout=self.timeout,
                headers={"Accept": "application/json"},
            )
        except http.Unreachable as exc:
            raise TransientError(f"DT One unreachable: {exc}", code="upstream_unavailable") from exc
        except http.NoAnswer as exc:
            if sending:
                raise UpstreamTimeout(
                    f"no answer from DT One: {exc!r}", code="upstream_timeout"
                ) from exc
            raise TransientError(
                f"DT One did not answer: {exc!r}", code="upstream_unavailable"
            ) from exc

    def _refused_call(self, response: http.Response, what: str) -> TransientError:
        """The error for a lookup (not a send) that did not answer 200."""
        body = _json(response)
        codes = _error_codes(body)
        if response.status_code == 429 or TOO_MANY_REQUESTS in codes:
            return TransientError(
                f"{what}: rate limited by DT One",
                code=RATE_LIMITED,
                raw=body,
                retry_after=response.retry_after,
            )
        if response.status_code == 401 or UNAUTHORIZED in codes:
            return TransientError(
                f"{what}: DT One refused our credentials (API key and secret)",
                code="upstream_auth_failed",
                raw=body,
            )
        return TransientError(
            f"{what} failed ({response.status_code}): {_error_message(body)}",
            code="upstream_unavailable",
            raw=body,
        )

    def _pages(
        self, path: str, params: dict[str, Any], *, what: str, not_found_is_empty: bool = False
    ) -> list[dict[str, Any]]:
        """Every item of a paged list (``page``/``per_page``, header ``X-Total-Pages``)."""
        items: list[dict[str, Any]] = []
        page = 1
        while True:
            response = self._request(
                "GET", path, params={**params, "page": page, "per_page": self.per_page}
            )
            if (
                not_found_is_empty
                and response.status_code == 404
                and TRANSACTION_NOT_FOUND in _error_codes(_json(response))
            ):
                return items
            if response.status_code != 200:
                raise self._refused_call(response, what)
            data = _json(response)
            if not isinstance(data, list):
                raise TransientError(
                    f"{what}: DT One's answer is not a list", code="upstream_unreadable"
                )
            items.extend(item for item in data if isinstance(item, dict))
            total = _int_header(response, "X-Total-Pages")
            next_page = _int_header(response, "X-Next-Page")
            more = page < total if total is not None else bool(next_page)
            if not more or not data:
                return items
            page += 1
            if page > MAX_PAGES:
                raise TransientError(f"{what}: more than {MAX_PAGES} pages", code="upstream_error")

    # -- sending ---------------------------------------------------------------------------
    def send(self, request: TopupRequest) -> ProviderResult:
        sku, ranged = request.sku, request.sku.endswith(RANGE_SKU)
        if ranged:
            sku = sku.removesuffix(RANGE_SKU)
        try:
            product_id = int(sku)
        except ValueError:
            raise PermanentError(
                f"no DT One product id on this route (sku {request.sku!r})",
                code="invalid_product",
            ) from None
        body: dict[str, Any] = {
            "external_id": request.reference,
            "product_id": product_id,
            "auto_confirm": True,
            "credit_party_identifier": {"mobile_number": request.recipient_number},
        }
        body.update(_parties(request))
        if ranged:
            # The reference: required for ranged products, the amount the recipient gets.
            body["calculation_mode"] = "DESTINATION_AMOUNT"
            body["destination"] = {
                "unit_type": "CURRENCY",
                "unit": request.currency,
                "amount": float(request.amount),
            }
        if request.callback_url:
            body["callback_url"] = request.callback_url
        response = self._request("POST", "/async/transactions", json_body=body, sending=True)
        answer = _json(response)
        if 200 <= response.status_code < 300:
            if not isinstance(answer, dict) or _status_class(answer) is None:
                raise UpstreamTimeout(
                    "DT One's answer could not be read",
                    code="upstream_unreadable",
                    raw=_raw(response, answer),
                )
            return _sent(answer)
        codes = _error_codes(answer)
        message = _error_message(answer)
        if response.status_code == 429 or TOO_MANY_REQUESTS in codes:
            raise TransientError(
                "rate limited by DT One",
                code=RATE_LIMITED,
                raw=answer,
                retry_after=response.retry_after,
            )
        if response.status_code == 401 or UNAUTHORIZED in codes:
            raise TransientError(
                "DT One refused our credentials (API key and secret)",
                code="upstream_auth_failed",
                raw=answer,
            )
        if response.status_code >= 500:
            raise UpstreamTimeout(
                f"DT One error {response.status_code}: {message}",
                code="upstream_error",
                raw=_raw(response, answer),
            )
        if EXTERNAL_ID_USED in codes:
            return self._already_used(request.reference, answer)
        refusal = next((REFUSALS[code] for code in codes if code in REFUSALS), None)
        if refusal is not None:
            raise PermanentError(message or refusal, code=refusal, raw=answer)
        raise UpstreamTimeout(
            f"DT One answered {response.status_code} without a documented refusal: {message}",
            code="upstream_unreadable",
            raw=_raw(response, answer),
        )

    def _already_used(self, reference: str, answer: Any) -> ProviderResult:
        """DT One holds a transaction under our reference (an earlier call of ours): its
        outcome is this call's. Not found (yet), or the lookup failed: unknown, to settle by
        looking it up later; never a refusal, which could refund a top-up being delivered."""
        try:
            found = self.status(reference)
        except (TransientError, UpstreamTimeout):
            found = None
        if found is None:
            raise UpstreamTimeout(
                f"DT One already holds external id {reference} but does not list it yet",
                code="external_id_already_used",
                raw=answer,
            )
        return _sent_result(found)

    # -- lookups ---------------------------------------------------------------------------
    def status(self, reference: str) -> ProviderResult | None:
        response = self._request("GET", "/transactions", params={"external_id": reference})
        body = _json(response)
        if response.status_code == 404 and TRANSACTION_NOT_FOUND in _error_codes(body):
            return None
        if response.status_code != 200:
            raise self._refused_call(response, "status lookup")
        if not isinstance(body, list):
            raise TransientError(
                "status lookup: DT One's answer is not a list", code="upstream_unreadable"
            )
        matching = [t for t in body if isinstance(t, dict) and t.get("external_id") == reference]
        return _result(matching[0]) if matching else None

    def balance(self) -> tuple[Decimal, str]:
        rows = self._pages("/balances", {}, what="balance lookup")
        if not rows:
            raise TransientError("DT One lists no balance", code="upstream_error")
        chosen = next(
            (row for row in rows if str(row.get("unit", "")).upper() == self.currency), rows[0]
        )
        amount = _decimal(chosen.get("available"))
        if amount is None:
            raise TransientError("DT One's balance could not be read", code="upstream_unreadable")
        return amount, str(chosen.get("unit") or self.currency)

    def catalog(self, *, countries: Iterable[str] | None = None) -> list[UpstreamProduct]:
        return self.catalog_read(countries=countries).products

    def catalog_read(self, *, countries: Iterable[str] | None = None) -> UpstreamCatalog:
        """Mobile products of every kind we sell (``PRODUCT_TYPES``), all pages read."""
        if countries is None:
            countries_asked: list[dict[str, Any]] = [{}]
        else:
            countries_asked = []
            for alpha2 in sorted({c.upper() for c in countries}):
                alpha3 = ALPHA3.get(alpha2)
                if alpha3 is None:
                    logger.warning("DT One catalog: no ISO alpha-3 code for %r", alpha2)
                    continue
                countries_asked.append({"country_iso_code": alpha3})
        products: list[UpstreamProduct] = []
        skipped: list[SkippedProduct] = []
        seen: set[str] = set()
        for kind in PRODUCT_TYPES:
            for country in countries_asked:
                params = {"type": kind, "service_id": MOBILE_SERVICE, **country}
                for item in self._pages("/products", params, what="catalog"):
                    if str(item.get("id")) in seen:
                        continue
                    seen.add(str(item.get("id")))
                    product, reason = _product(item)
                    if product is not None:
                        products.append(product)
                    elif reason:
                        skipped.append(_skipped(item, reason))
        return UpstreamCatalog(products=products, skipped=skipped)

    def transactions(self, *, day: date) -> list[UpstreamTransaction]:
        start = datetime.combine(day, time.min, tzinfo=UTC)
        end = start + timedelta(days=1) - timedelta(microseconds=1)  # both bounds inclusive
        items = self._pages(
            "/transactions",
            {"from_date": _timestamp(start), "to_date": _timestamp(end)},
            what="transaction report",
            not_found_is_empty=True,
        )
        lines: list[UpstreamTransaction] = []
        seen: set[str] = set()
        for item in items:
            line = _report_line(item)
            if line.transaction_id in seen:
                continue
            if line.created_at is not None and not start <= line.created_at <= end:
                continue
            seen.add(line.transaction_id)
            lines.append(line)
        return lines

    # -- number lookup (contract section 17) ----------------------------------------------
    def lookup(self, *, number: str, country: str, timeout: float) -> list[UpstreamOperator]:
        """``POST /lookup/mobile-number`` with ``{"mobile_number": <E.164>}`` (the
        reference's "Mobile Number" look-up): a list of operators ``{id, name, country
        {iso_code (alpha-3), ...}, regions, identified}``, where ``identified`` "indicates
        whether operator was identified as a direct match". Only those count: the others are
        the candidates of the number's country. Its first page is enough (one number has one
        operator)."""
        try:
            response = self.http.post(
                f"{self.base_url}/lookup/mobile-number",
                json={"mobile_number": number},
                auth=self.auth,
                timeout=timeout,
                headers={"Accept": "application/json"},
            )
        except http.ClientError as exc:
            raise TransientError(
                f"DT One mobile-number lookup: {exc!r}", code="upstream_unavailable"
            ) from exc
        if response.status_code in (400, 404):  # an invalid number, or none known
            return []
        if response.status_code != 200:
            raise self._refused_call(response, "mobile-number lookup")
        data = _json(response)
        found: list[UpstreamOperator] = []
        for item in data if isinstance(data, list) else []:
            if not isinstance(item, dict) or item.get("identified") is not True:
                continue
            where = _dict(item.get("country"))
            found.append(
                UpstreamOperator(
                    upstream_id=str(item.get("id")),
                    name=str(item.get("name") or ""),
                    country=ALPHA2.get(str(where.get("iso_code") or ""), country.upper()),
                )
            )
        return found

    def callback_result(self, payload: dict[str, Any]) -> tuple[str, ProviderResult] | None:
        """(our reference, the outcome) from a callback's body, a transaction object; None
        when it is not one. Anyone may POST to the callback URL: look it up before trusting."""
        if not isinstance(payload, dict):
            return None
        reference = payload.get("external_id")
        if not isinstance(reference, str) or not reference or _status_class(payload) is None:
            return None
        return reference, _result(payload)


# -- reading DT One's objects ----------------------------------------------------------------
def _api_root(base_url: str) -> str:
    root = base_url.strip().rstrip("/")
    return root if root.endswith("/v1") else f"{root}/v1"


def _json(response: http.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _raw(response: http.Response, body: Any) -> Any:
    return body if body is not None else {"text": response.text[:500]}


def _error_codes(body: Any) -> list[int]:
    errors = body.get("errors") if isinstance(body, dict) else None
    codes: list[int] = []
    for error in errors if isinstance(errors, list) else []:
        if isinstance(error, dict):
            try:
                codes.append(int(error.get("code")))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue
    return codes


def _error_message(body: Any) -> str:
    errors = body.get("errors") if isinstance(body, dict) else None
    if isinstance(errors, list):
        return "; ".join(
            str(error.get("message", "")) for error in errors if isinstance(error, dict)
        )
    return ""


def _int_header(response: http.Response, name: str) -> int | None:
    try:
        return int(response.headers.get(name, ""))
    except ValueError:
        return None


def _decimal(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _datetime(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _status_class(transaction: dict[str, Any]) -> str | None:
    """The status class, by its message, else its id, else the prefix of the status."""
    status = transaction.get("status")
    if not isinstance(status, dict):
        return None
    klass = status.get("class")
    if isinstance(klass, dict):
        if str(klass.get("message", "")).upper() in STATUS_CLASSES:
            return str(klass["message"]).upper()
        if klass.get("id") in CLASS_IDS:
            return CLASS_IDS[klass["id"]]
    prefix = str(status.get("message", "")).upper().split("-")[0]
    return prefix if prefix in STATUS_CLASSES else None


def _failure_code(transaction: dict[str, Any], klass: str) -> str:
    status = transaction.get("status") or {}
    message = str(status.get("message") or klass) if isinstance(status, dict) else klass
    return re.sub(r"[^a-z0-9]+", "_", message.lower()).strip("_") or "upstream_failed"


def _cost(transaction_or_product: dict[str, Any]) -> tuple[Decimal | None, str]:
    """Wholesale price + fee, in the wholesale price's unit (what DT One debits)."""
    prices = transaction_or_product.get("prices")
    wholesale = prices.get("wholesale") if isinstance(prices, dict) else None
    if not isinstance(wholesale, dict):
        return None, ""
    amount = _decimal(wholesale.get("amount"))
    fee = _decimal(wholesale.get("fee")) or Decimal(0)
    if amount is None:
        return None, ""
    return amount + fee, str(wholesale.get("unit") or "")


def _pin(transaction: dict[str, Any]) -> tuple[Pin | None, dict[str, Any]]:
    """A PIN product's transaction carries ``pin`` {``code``, ``serial``} (the reference's
    Transaction schema): a ``Pin`` (None without a code), and the transaction without it (the
    code never reaches ``raw``). Its product's ``pin`` may say how to use it
    (``usage_info``) and until when (``validity``), where it says so."""
    detail = transaction.get("pin")
    if not isinstance(detail, dict) or detail.get("code") in (None, ""):
        return None, transaction
    rest = {**transaction, "pin": PIN_REDACTED}
    product = transaction.get("product")
    about = product.get("pin") if isinstance(product, dict) else None
    about = about if isinstance(about, dict) else {}
    usage = about.get("usage_info") or detail.get("usage_info") or ""
    if isinstance(usage, list):
        usage = "\n".join(str(line) for line in usage if line)
    validity = detail.get("validity") or about.get("validity") or ""
    if isinstance(validity, dict):  # {quantity, unit}: valid to that date from the sale
        validity = valid_until(_validity_days({"validity": validity}))
    serial = detail.get("serial")
    pin = Pin(
        code=str(detail["code"]),
        serial="" if serial in (None, "") else str(serial),
        instructions=str(usage),
        valid_until=validity if isinstance(validity, str) else "",
    )
    return pin, rest


def _result(transaction: dict[str, Any]) -> ProviderResult:
    pin, transaction = _pin(transaction)
    klass = _status_class(transaction) or ""
    status = STATUS_CLASSES.get(klass, ProviderResult.PENDING)
    raw_status = transaction.get("status")
    message = str(raw_status.get("message", "")) if isinstance(raw_status, dict) else ""
    cost, cost_currency = _cost(transaction)
    return ProviderResult(
        status=status,
        transaction_id=str(transaction.get("id") or ""),
        code=_failure_code(transaction, klass) if status == ProviderResult.FAILED else "",
        message=message,
        raw=transaction,
        cost=cost,
        cost_currency=cost_currency,
        pin=pin,
    )


def _sent(transaction: dict[str, Any]) -> ProviderResult:
    """The answer to a send: a transaction that failed is a refusal (the next route may be
    tried); any other is its result."""
    return _sent_result(_result(transaction))


def _sent_result(result: ProviderResult) -> ProviderResult:
    if result.status == ProviderResult.FAILED:
        raise PermanentError(
            result.message or "DT One did not deliver the top-up",
            code=result.code,
            raw=result.raw,
        )
    return result


def _local_amount(transaction: dict[str, Any]) -> tuple[Decimal | None, str]:
    for key in ("adjusted_values", "requested_values"):
        values = transaction.get(key)
        destination = values.get("destination") if isinstance(values, dict) else None
        if isinstance(destination, dict) and destination.get("unit_type") == "CURRENCY":
            amount = _decimal(destination.get("amount"))
            if amount is not None:
                return amount, str(destination.get("unit") or "")
    for benefit in transaction.get("benefits") or []:
        if isinstance(benefit, dict) and benefit.get("unit_type") == "CURRENCY":
            amount_info = benefit.get("amount")
            if isinstance(amount_info, dict):
                amount = _decimal(amount_info.get("base"))
                if amount is not None:
                    return amount, str(benefit.get("unit") or "")
    return None, ""


def _report_line(transaction: dict[str, Any]) -> UpstreamTransaction:
    result = _result(transaction)
    amount, currency = _local_amount(transaction)
    return UpstreamTransaction(
        reference=str(transaction.get("external_id") or ""),
        transaction_id=result.transaction_id,
        status=result.status,
        amount=amount,
        currency=currency,
        cost=result.cost,
        cost_currency=result.cost_currency,
        created_at=_datetime(transaction.get("creation_date")),
        raw=result.raw,
    )


def _product_type(product: dict[str, Any]) -> str:
    """Our kind of a DT One product (see the module docstring)."""
    if product.get("type") in (FIXED_PIN, RANGED_PIN):
        return "pin"
    service = product.get("service") or {}
    subservice = service.get("subservice") if isinstance(service, dict) else None
    subservice_id = subservice.get("id") if isinstance(subservice, dict) else None
    if subservice_id == DATA_SUBSERVICE:
        return "data"
    if subservice_id == AIRTIME_SUBSERVICE:
        return "airtime"
    kinds = {b.get("type") for b in product.get("benefits") or [] if isinstance(b, dict)} - {
        "CREDITS"
    }
    if kinds == {"DATA"}:
        return "data"
    if kinds or subservice_id == BUNDLE_SUBSERVICE:
        return "bundle"
    return "airtime"


def _benefits(product: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """A product's ``benefits`` in our shape (the module docstring says how)."""
    found = []
    for item in product.get("benefits") or []:
        if not isinstance(item, dict):
            continue
        kind = BENEFIT_KINDS.get(str(item.get("type")), "other")
        amounts = _dict(item.get("amount"))
        base = amounts.get("base")
        total = amounts.get("total_excluding_tax", base)
        amount = None if isinstance(total, dict) or base == -1 else _decimal(total)
        unit = str(item.get("unit") or "")
        unit_type = item.get("unit_type")
        if unit_type == "TIME":
            upper = unit.upper()
            if amount is not None and upper.startswith("SEC"):
                amount = (amount / 60).quantize(Decimal("1"), rounding=ROUND_FLOOR)
            elif amount is not None and upper.startswith("HOUR"):
                amount *= 60
            unit = "min"
        elif unit_type == "QUANTITY" and kind == "sms":
            unit = "SMS"
        elif unit_type == "DATA":
            unit = unit.upper()
        if amount is not None and amount < 0:
            amount = None
        text = str(item.get("additional_information") or "")[:200]
        found.append(make_benefit(kind, amount, unit[:20], text))
    return tuple(found)


def _validity_days(product: dict[str, Any]) -> int | None:
    """``validity {quantity, unit}`` in days (a PIN purchase without one: its ``pin``'s);
    None when unknown or unlimited."""
    validity = _dict(product.get("validity")) or _dict(_dict(product.get("pin")).get("validity"))
    quantity, unit = validity.get("quantity"), str(validity.get("unit") or "")
    if not isinstance(quantity, int) or isinstance(quantity, bool) or quantity <= 0:
        return None
    if unit == "HOUR":
        return math.ceil(quantity / 24)
    return quantity * VALIDITY_DAYS[unit] if unit in VALIDITY_DAYS else None


def _kind_fields(product: dict[str, Any]) -> dict[str, Any]:
    """``product_type``, ``benefits`` and ``validity_days`` of an ``UpstreamProduct``."""
    kind = _product_type(product)
    if kind == "airtime":
        return {"product_type": kind}
    return {
        "product_type": kind,
        "benefits": _benefits(product),
        "validity_days": _validity_days(product),
    }


def _unsendable(product: dict[str, Any]) -> str:
    """Why a product cannot be sold with a mobile number and nothing else ("" when it can)."""
    service = product.get("service")
    if product.get("type") not in PRODUCT_TYPES:
        return f"product type {product.get('type')}"
    if not isinstance(service, dict) or service.get("id") != MOBILE_SERVICE:
        return "not a Mobile service product"
    needed = [field for field in UNFILLABLE_FIELDS if product.get(field)]
    if needed:
        return f"needs {', '.join(needed)}"
    credit_fields = product.get("required_credit_party_identifier_fields")
    if credit_fields and ["mobile_number"] not in credit_fields:
        return "the recipient is not identified by a mobile number"
    return _required_fields(product)[1]


def _required_fields(product: dict[str, Any]) -> tuple[tuple[str, ...], str]:
    """What a product needs besides the number (catalog.fields names), from its
    ``required_sender_fields`` and ``required_beneficiary_fields``, and why it cannot be sold
    ("" when it can). Each is a list of alternatives, each a list of fields DVS wants together
    (as ``required_credit_party_identifier_fields: [["mobile_number"]]``): the first
    alternative we can fill wholly is taken."""
    names: set[str] = set()
    for party, ours in PARTY_FIELDS.items():
        alternatives = product.get(party)
        if not alternatives:
            continue
        if not isinstance(alternatives, list):
            return (), f"{party} unreadable"
        for wanted in alternatives:
            fields = wanted if isinstance(wanted, list) else [wanted]
            if all(isinstance(f, str) and f in ours for f in fields):
                names.update(ours[f] for f in fields if ours[f])
                break
        else:
            shown = " or ".join(
                "+".join(map(str, a if isinstance(a, list) else [a])) for a in alternatives
            )
            return (), f"needs {party} we cannot send: {shown}"
    return tuple(name for name in FIELD_ORDER if name in names), ""


def split_name(name: str) -> tuple[str, str]:
    """(first_name, last_name) of one name, split on its last space; a single word is both
    (DVS wants each non-empty)."""
    first, _, last = name.strip().rpartition(" ")
    first, last = first.strip(), last.strip()
    return (first or last, last)


def _parties(request: TopupRequest) -> dict[str, Any]:
    """A line's fields as the transaction's ``sender`` and ``beneficiary`` (DVS's names);
    each party only when something of it was given. The beneficiary, when sent, carries the
    recipient's mobile number too."""
    fields = request.fields
    sender: dict[str, str] = {}
    if fields.get("senderName"):
        sender["first_name"], sender["last_name"] = split_name(fields["senderName"])
    if fields.get("senderPhone"):
        sender["mobile_number"] = fields["senderPhone"]
    beneficiary: dict[str, str] = {}
    if fields.get("recipientName"):
        beneficiary["first_name"], beneficiary["last_name"] = split_name(fields["recipientName"])
    if fields.get("recipientEmail"):
        beneficiary["email"] = fields["recipientEmail"]
    if beneficiary:
        beneficiary["mobile_number"] = request.recipient_number
    body: dict[str, Any] = {}
    if sender:
        body["sender"] = sender
    if beneficiary:
        body["beneficiary"] = beneficiary
    return body


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _skipped(item: dict[str, Any], reason: str) -> SkippedProduct:
    operator = _dict(item.get("operator"))
    country = _dict(operator.get("country"))
    return SkippedProduct(
        operator=UpstreamOperator(
            upstream_id=str(operator.get("id") or ""),
            name=str(operator.get("name") or ""),
            country=ALPHA2.get(str(country.get("iso_code") or ""), ""),
        ),
        product_id=str(item.get("id") or ""),
        name=str(item.get("name") or ""),
        reason=reason,
    )


def _product(item: dict[str, Any]) -> tuple[UpstreamProduct | None, str]:
    """One product as a route, or None and why not ("" for one of no country of ours)."""
    reason = _unsendable(item)
    if reason:
        return None, reason
    operator = item.get("operator")
    destination = item.get("destination")
    if not isinstance(operator, dict) or not isinstance(destination, dict):
        return None, "no operator or destination"
    country = operator.get("country")
    alpha3 = str(country.get("iso_code", "")) if isinstance(country, dict) else ""
    alpha2 = ALPHA2.get(alpha3)
    if alpha2 is None:  # GXX, EXX: regional products, no country of ours
        logger.info("DT One catalog: skipped product %s (no country)", item.get("id"))
        return None, ""
    if (
        destination.get("unit_type") != "CURRENCY"
        or item.get("id") is None
        or operator.get("id") is None
    ):
        return None, "its destination is not an amount of currency"
    upstream = UpstreamOperator(
        upstream_id=str(operator["id"]), name=str(operator.get("name", "")), country=alpha2
    )
    if item.get("type") in (RANGED, RANGED_PIN):
        return _ranged(item, upstream, destination)
    local_amount = _decimal(destination.get("amount"))
    cost, cost_currency = _cost(item)
    if local_amount is None or cost is None or not cost_currency:
        return None, "no destination amount or wholesale price"
    return (
        UpstreamProduct(
            operator=upstream,
            sku=str(item["id"]),
            **_kind_fields(item),
            local_amount=local_amount,
            local_currency=str(destination.get("unit", "")),
            cost=cost,
            cost_currency=cost_currency,
            raw=item,
            required_fields=_required_fields(item)[0],
        ),
        "",
    )


def _ranged(
    item: dict[str, Any], upstream: UpstreamOperator, destination: dict[str, Any]
) -> tuple[UpstreamProduct | None, str]:
    """A RANGED_VALUE_RECHARGE product: any ``destination.amount`` from ``min`` to ``max`` in
    steps of ``increment``, sent with ``calculation_mode: DESTINATION_AMOUNT``. The reference's
    ``rates.wholesale`` is the "exchange rate between the wholesale price and the destination
    amount", so an amount A costs ``A / rates.wholesale`` plus ``prices.wholesale.fee``."""
    modes = item.get("accepted_calculation_modes")
    if isinstance(modes, list) and "DESTINATION_AMOUNT" not in modes:
        return None, "takes no destination amount (accepted_calculation_modes)"
    bounds = destination.get("amount")
    bounds = bounds if isinstance(bounds, dict) else {}
    low, high = _decimal(bounds.get("min")), _decimal(bounds.get("max"))
    step = _decimal(bounds.get("increment")) or Decimal("0.01")
    rate = _decimal(_dict(item.get("rates")).get("wholesale"))
    wholesale = _dict(_dict(item.get("prices")).get("wholesale"))
    unit = str(wholesale.get("unit") or "")
    fee = _decimal(wholesale.get("fee")) or Decimal(0)
    if low is None or high is None or low <= 0 or high < low or step <= 0:
        return None, "no destination range"
    if rate is None or rate <= 0 or not unit:
        return None, "no wholesale rate"
    return (
        UpstreamProduct(
            operator=upstream,
            sku=f"{item['id']}{RANGE_SKU}",
            **_kind_fields(item),
            local_amount=None,
            local_currency=str(destination.get("unit", "")),
            cost=fee,
            cost_currency=unit,
            raw=item,
            denomination="range",
            min_amount=low,
            max_amount=high,
            step=step,
            cost_per_unit=(1 / rate).quantize(Decimal("1e-10")),
            required_fields=_required_fields(item)[0],
        ),
        "",
    )
