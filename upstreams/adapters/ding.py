"""HTTP adapter for DingConnect's API V1 (docs/contract.md §14).

Where the reference is (public, read 2026-11-25):
- Ding's own swagger ("Ding API", V1) as Swagger Codegen 2.4.5 rendered it in the repository
  ``parenthesislab/dingconnect-api-php``: ``docs/Api/V1Api.md`` (operations and Ding's prose on
  processing states, fees, timeouts), ``docs/Model/*.md`` (fields) and ``src/Api/V1Api.php``
  (the HTTP statuses each operation documents). This is the closest copy of the first-party
  definition in the index.
- ``voxgig-sdk/dingconnect-sdk``: ``.sdk/model/entity/*.aontu`` were generated from Ding's
  swagger 2.0 (``source: swagger2``); the swagger file itself
  (``.sdk/def/dingconnect-v1-swagger-2.0.json``) is not among the stored files, and
  ``.sdk/def/dingconnect-openapi.json`` is an OpenAPI 3 that Voxgig re-authored from the public
  docs and a community client. Where it disagrees with Ding's swagger (it adds
  ``DistributorRefs``/``StartedAtUtc``/``EndedAtUtc`` filters and lists "Completed" only),
  Ding's swagger wins and those fields are not sent.
- ``vlab-research/go-dingconnect`` (``types.go``, ``errors.go``, ``client_test.go``): a community
  client with facts measured against the live API; used only where Ding's swagger is silent.

What this adapter relies on:
- Server ``https://api.dingconnect.com``, paths ``/api/V1/<Operation>``. A base URL that already
  ends in ``/api/V1`` (as Voxgig's server is written) is accepted too.
- Auth: the header ``api_key: <key>`` (not ``X-Api-Key``, not a bearer token). A wrong key
  answers 401 with ``{"ResultCode": ..., "ErrorCodes": [{"Code": "AuthenticationFailed"}]}``.
- Every answer carries ``ResultCode`` and ``ErrorCodes`` (``[{"Code", "Context"}]``): the body,
  not the HTTP status, says what happened. Ding's swagger documents 200, 400, 401, 500 and 503
  for SendTransfer, all but 401 with a ``SendTransferResponse`` body, and lists no error codes
  (``GetErrorCodeDescriptions`` serves them at run time). Codes this adapter branches on come
  from the community client: ``DuplicateTransactionPrevented``, ``RateLimited``,
  ``AuthenticationFailed``; ``ProviderTimedOut`` is in Ding's own prose.
- ``POST SendTransfer`` with ``SkuCode``, ``SendValue`` (two decimals), ``SendCurrencyIso`` (empty
  means the account's currency), ``AccountNumber``, ``DistributorRef`` (our recharge id) and
  ``ValidateOnly: false`` (always sent: the live API refuses a body without it). The answer is
  ``{"TransferRecord": {...}, "ResultCode", "ErrorCodes"}`` on failure as well as success.
- ``AccountNumber``: "international phone number format"; the live API refuses a leading ``+``
  (AccountNumberInvalid), so the E.164 number is sent as its digits, country code first.
- ``TransferRecord``: ``TransferId {TransferRef, DistributorRef}``, ``SkuCode``, ``Price``,
  ``CommissionApplied`` ("the actual commission that was earned"), ``StartedUtc``,
  ``CompletedUtc``, ``ProcessingState``, ``ReceiptText``, ``ReceiptParams``, ``AccountNumber``.
- PINs: ``ReceiptText`` is "provider specific receipt text … for the end customer" and
  ``ReceiptParams`` "name value pairs of data that is in the ReceiptText". The names are the
  provider's (Ding publishes none), so a PIN is read from the usual ones (``Pin``, ``PinCode``,
  ``VoucherCode``…; ``Serial``/``SerialNumber``; ``Expiry``/``ExpiryDate``/``ValidUntil``),
  case-insensitively; the receipt text is its instructions. Both are left out of ``raw`` and
  of the message when they carry a PIN (contract section 17).
- ``ProcessingState``: Submitted, Processing, Complete, Failed, Cancelled, Cancelling. Ding's own
  text spells success "Complete" in that list and "Completed" a few paragraphs earlier (Voxgig's
  file has only "Completed", the live API answers "Complete"): both mean delivered.
- A transfer that takes Ding more than 90 s answers ``ProviderTimedOut`` and "will be treated as
  a failed transaction and the balance will not be deducted". It is still settled by looking
  our reference up (``UpstreamTimeout``), never taken as a refusal on the spot.
- Balance: "SendValue + DistributorFee will be deducted from the agent balance", and the balance
  "will include any commission-on-sale increments". What one transfer costs us is therefore
  ``SendValue + DistributorFee - CommissionApplied`` in ``SendCurrencyIso`` (the contract's
  "send value less commission"; ``DistributorFee`` is 0 on most products).
- ``GET GetProducts`` (filters ``countryIsos``, ``providerCodes``, ``skuCodes``, ``benefits``,
  ``regionCodes``, ``accountNumber``; arrays repeat the key) is not paged. A product carries
  ``ProviderCode`` but no country or name, so ``GET GetProviders`` (same filters) gives
  ``Name`` and ``CountryIso`` (alpha-2; ``XG`` means "all countries"). A product is fixed-value
  when ``Minimum.SendValue == Maximum.SendValue``; otherwise it is a range: any SendValue
  between the two (out of it: ``ParameterOutOfRange`` on ``SendValue``). Its route takes a
  ReceiveValue between Minimum's and Maximum's, its SendValue on the line through the two
  ends (``Route.send_value_at``: Minimum's SendValue plus the amount over Minimum's
  ReceiveValue times the slope, rounded up to the cent); the recipient gets what Ding makes
  of that SendValue: the amount, or up to a cent of the SendValue's currency more, never
  less. The ReceiveValue Ding reports is what the recharge records as delivered
  (``ProviderResult.delivered_amount``). ``Benefits`` says what it gives (Mobile, Minutes,
  Data, LongDistance, Electricity, TV, ...). ``CommissionRate`` is "the rate of commission
  that will be applied": the reference gives no unit; it is read as a percent (5 = 5 %), the
  reading that can only overstate a cost, never make it negative.
- ``POST ListTransferRecords`` takes ``DistributorRef``, ``TransferRef``, ``AccountNumber``,
  ``Skip`` and ``Take`` (required; out of range fails with ParameterOutOfRange) and answers
  ``Items`` + ``ThereAreMoreItems``; each item is ``{"TransferRecord", "ResultCode",
  "ErrorCodes"}``. It has no date filter and keeps two months: a day's report reads every page
  and keeps the records whose ``StartedUtc`` falls on that UTC day.
- Kinds (contract section 17): ``Benefits`` names what a product gives (Mobile: credit on
  the line; Data; Minutes; SMS; LongDistance, Electricity, TV... are not ours) and
  ``RedemptionMechanism`` whether the customer must act: ``Immediate`` is credited on the
  line, ``ReadReceipt`` is redeemed from the receipt (a PIN or voucher in
  ``ReceiptParams``/``ReceiptText``): a ``pin`` product. Otherwise Mobile alone is
  ``airtime``, Data alone ``data``, anything else with Data, Minutes or SMS a ``bundle``.
  Ding gives no amounts per benefit: they are read from ``DefaultDisplayText`` ("3GB Data,
  30 Days"; ``upstreams.adapters.kinds``), a benefit it names without a number keeps the
  display text as its words, and Mobile in a bundle is the credit of ``ReceiveValue``. The
  validity is ``ValidityPeriodIso`` ("How long is the product valid for after purchase",
  ``P30D``), else what the display text says. Airtime carries neither.
- ``GET GetBalance`` answers ``Balance`` and ``CurrencyIso``.
- A product's ``SettingDefinitions`` (``Name``, ``Description``, ``IsMandatory``: "must be
  submitted during SendTransfer") are sent as SendTransfer's ``Settings: [{Name, Value}]``.
  Ding names them per product and publishes no list: a setting whose name reads as one of
  our fields (``SenderName``, ``SenderMobile``, ``RecipientEmail``, ``RecipientName``...,
  ``SETTING_FIELDS``) is that field, kept with the route under Ding's spelling
  (``field_names``); a product with any other mandatory setting is skipped with its name.

Surprises, and what the adapter does about them:
- Ding documents no reversal: ``Cancelled`` follows the agent's own ``CancelTransfers`` (which
  we never call), with the balance compensated. It is reported as ``failed``.
- The community client measured (2026-09-07) a second SendTransfer with the same
  ``DistributorRef`` being paid again, where the docs promise DuplicateTransactionPrevented.
  A duplicate refusal is still no refusal here (``UpstreamTimeout``), but the processor must
  look our reference up before sending it again, never rely on Ding to refuse the second one.
- The live API answers InsufficientBalance with HTTP 500: like every 5xx it is settled by a
  lookup, not taken as a refusal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
from typing import Any

from catalog.benefits import benefit
from reseller.money import quantize
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
from upstreams.adapters.kinds import iso_validity_days, text_benefits, text_validity_days

DEFAULT_BASE_URL = "https://api.dingconnect.com"
API = "/api/V1"

SUCCESS_STATES = frozenset({"Complete", "Completed"})  # Ding's text spells it both ways
PENDING_STATES = frozenset({"Submitted", "Processing", "Cancelling"})
FAILED_STATES = frozenset({"Failed", "Cancelled"})
PROVIDER_TIMED_OUT = "ProviderTimedOut"  # over 90 s at Ding: failed there, settled by lookup

DUPLICATE = "DuplicateTransactionPrevented"
RATE_LIMITED_CODE = "RateLimited"
AUTH_FAILED = "AuthenticationFailed"
RESULT_SUCCESS = 1

RATE_LIMITED = "upstream_rate_limited"  # the processor pauses every worker on this code

STATUS_TAKE = 10  # records asked for one DistributorRef (Ding may hold more than one)
_RANK = {ProviderResult.DELIVERED: 3, ProviderResult.PENDING: 2, ProviderResult.FAILED: 1}


class DingProvider:
    """One DingConnect account. Thread-safe: the processor's threads share one instance."""

    kind = "ding"
    page_size = 100  # ListTransferRecords' Take; Ding bounds it without publishing the bound

    def __init__(
        self, config: ProviderConfig, *, name: str, client: http.Client | None = None
    ) -> None:
        self.config = config
        self.name = name
        self.base_url = _server(config.base_url or DEFAULT_BASE_URL)
        self.timeout = config.timeout
        self.http = client or http.shared()

    # -- HTTP -----------------------------------------------------------------------------
    def _call(
        self,
        method: str,
        operation: str,
        *,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        sending: bool = False,
    ) -> http.Response:
        headers = {"api_key": self.config.api_key, "Accept": "application/json"}
        content = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            content = json.dumps(body, default=_json_number)
        try:
            return self.http.request(
                method,
                f"{self.base_url}{API}/{operation}",
                params=params,
                content=content,
                headers=headers,
                timeout=self.timeout,
            )
        except http.Unreachable as exc:
            # Nothing reached Ding: safe to retry, or to send elsewhere.
            raise TransientError(
                f"DingConnect unreachable: {exc!r}", code="upstream_unavailable"
            ) from exc
        except http.NoAnswer as exc:
            if sending:
                # The request may have reached Ding and may still be paid out.
                raise UpstreamTimeout(
                    f"no answer from DingConnect: {exc!r}", code="upstream_timeout"
                ) from exc
            raise TransientError(
                f"DingConnect did not answer: {exc!r}", code="upstream_timeout"
            ) from exc

    def _answer(self, response: http.Response, operation: str) -> dict[str, Any]:
        """The body of a read (everything but SendTransfer): any trouble is transient, since
        nothing was sent."""
        if response.status_code == 429:
            raise TransientError(
                f"{operation}: rate limited by DingConnect",
                code=RATE_LIMITED,
                retry_after=response.retry_after,
            )
        body = _plain(_body(response))
        codes = _codes(body)
        if response.status_code == 401 or AUTH_FAILED in codes:
            raise TransientError(
                f"{operation}: DingConnect refused the api_key",
                code="upstream_auth_failed",
                raw=body if body is not None else _text(response),
            )
        if RATE_LIMITED_CODE in codes:
            raise TransientError(f"{operation}: rate limited by DingConnect", code=RATE_LIMITED)
        if body is None or response.status_code >= 400 or body.get("ResultCode") != RESULT_SUCCESS:
            raise TransientError(
                f"{operation} failed (HTTP {response.status_code}{_describe(body)})",
                code="upstream_unavailable",
                raw=body if body is not None else _text(response),
            )
        return body

    # -- sending --------------------------------------------------------------------------
    def send(self, request: TopupRequest) -> ProviderResult:
        if not request.sku or request.send_value is None:
            raise PermanentError(
                "a Ding route needs its SkuCode and SendValue", code="upstream_request_invalid"
            )
        payload: dict[str, Any] = {
            "SkuCode": request.sku,
            "SendValue": quantize(request.send_value),
            "AccountNumber": account_number(request.recipient_number),
            "DistributorRef": request.reference,
            "ValidateOnly": False,
        }
        currency = request.send_currency or self.config.currency
        if currency:
            payload["SendCurrencyIso"] = currency
        settings = _settings_sent(request)
        if settings:
            payload["Settings"] = settings
        response = self._call("POST", "SendTransfer", body=payload, sending=True)
        return self._sent(response)

    def _sent(self, response: http.Response) -> ProviderResult:
        status = response.status_code
        if status == 429:
            raise TransientError(
                "rate limited by DingConnect", code=RATE_LIMITED, retry_after=response.retry_after
            )
        body = _plain(_body(response))
        codes = _codes(body)
        if status == 401 or AUTH_FAILED in codes:
            raise TransientError(
                "DingConnect refused the api_key",
                code="upstream_auth_failed",
                raw=body if body is not None else _text(response),
            )
        if body is None:
            raise UpstreamTimeout(
                f"unreadable answer from DingConnect (HTTP {status})",
                code="upstream_unreadable",
                raw=_text(response),
            )
        if DUPLICATE in codes:
            # Ding holds a transfer under our reference (or says so): its outcome is found by
            # looking the reference up, and it is never a refusal to fail over on.
            raise UpstreamTimeout(
                "DingConnect already holds a transfer with this DistributorRef",
                code="duplicate_reference",
                raw=body,
            )
        if status >= 500:
            raise UpstreamTimeout(
                f"DingConnect error {status}{_describe(body)}", code="upstream_error", raw=body
            )
        record = body.get("TransferRecord")
        record = record if isinstance(record, dict) else None
        state = str(record.get("ProcessingState") or "") if record else ""
        if PROVIDER_TIMED_OUT in codes or state == PROVIDER_TIMED_OUT:
            raise UpstreamTimeout(
                "DingConnect timed out on the operator (ProviderTimedOut)",
                code="upstream_timeout",
                raw=body,
            )
        if RATE_LIMITED_CODE in codes:
            raise TransientError("rate limited by DingConnect", code=RATE_LIMITED, raw=body)
        if record is not None and state in FAILED_STATES:
            raise PermanentError(
                f"DingConnect refused the transfer ({state}{_describe(body)})",
                code=_code(codes),
                raw=body,
            )
        if record is not None and status < 300 and state in SUCCESS_STATES | PENDING_STATES:
            return _result(record, body)
        if body.get("ResultCode") != RESULT_SUCCESS and codes:
            raise PermanentError(
                f"DingConnect refused the transfer{_describe(body)}", code=_code(codes), raw=body
            )
        raise UpstreamTimeout(
            f"unclear answer from DingConnect (HTTP {status}, state {state or 'none'})",
            code="upstream_unclear",
            raw=body,
        )

    # -- lookups --------------------------------------------------------------------------
    def status(self, reference: str) -> ProviderResult | None:
        response = self._call(
            "POST",
            "ListTransferRecords",
            body={"DistributorRef": reference, "Skip": 0, "Take": STATUS_TAKE},
        )
        body = self._answer(response, "ListTransferRecords")
        found = [
            _result(record, envelope)
            for record, envelope in _records(body)
            if _distributor_ref(record) == reference
        ]
        if not found:
            return None
        # Should Ding hold several transfers under one reference, a delivered one wins.
        return max(found, key=lambda result: _RANK.get(result.status, 0))

    def balance(self) -> tuple[Decimal, str]:
        body = self._answer(self._call("GET", "GetBalance"), "GetBalance")
        amount = _decimal(body.get("Balance"))
        if amount is None:
            raise TransientError("GetBalance answered no Balance", raw=body)
        return amount, str(body.get("CurrencyIso") or self.config.currency)

    def catalog(self, *, countries: Iterable[str] | None = None) -> list[UpstreamProduct]:
        return self.catalog_read(countries=countries).products

    def catalog_read(self, *, countries: Iterable[str] | None = None) -> UpstreamCatalog:
        wanted = None if countries is None else sorted({c.strip().upper() for c in countries})
        if wanted is not None and not wanted:
            return UpstreamCatalog(products=[])
        params = {"countryIsos": wanted} if wanted else None  # repeated keys, as Ding wants
        providers = {
            str(item.get("ProviderCode")): item for item in self._list("GetProviders", params)
        }
        products = self._list("GetProducts", params)  # one answer: the reference pages neither
        catalog: list[UpstreamProduct] = []
        skipped: list[SkippedProduct] = []
        for product in products:
            upstream, reason = _upstream_product(product, providers)
            if upstream is None:
                if reason:
                    skipped.append(_skipped(product, providers, reason))
                continue
            if wanted and upstream.operator.country not in wanted:
                continue
            catalog.append(upstream)
        return UpstreamCatalog(products=catalog, skipped=skipped)

    def _list(self, operation: str, params: dict[str, Any] | None) -> list[dict[str, Any]]:
        return _items(self._answer(self._call("GET", operation, params=params), operation))

    def transactions(self, *, day: date) -> list[UpstreamTransaction]:
        start = datetime.combine(day, time.min, tzinfo=UTC)
        end = start + timedelta(days=1)
        found: dict[str, UpstreamTransaction] = {}
        skip = 0
        while True:
            response = self._call(
                "POST", "ListTransferRecords", body={"Skip": skip, "Take": self.page_size}
            )
            body = self._answer(response, "ListTransferRecords")
            page = _items(body)
            for record, envelope in _records(body):
                started = parse_utc(record.get("StartedUtc"))
                if started is None or not start <= started < end:
                    continue
                line = _transaction(record, envelope, started)
                # Paging by Skip while new transfers arrive may show one twice.
                found[line.transaction_id or f"ref:{line.reference}"] = line
            if not body.get("ThereAreMoreItems") or not page:
                break
            skip += len(page)
        return sorted(found.values(), key=lambda t: (t.created_at or start, t.transaction_id))

    # -- number lookup (contract section 17) ----------------------------------------------
    def lookup(self, *, number: str, country: str, timeout: float) -> list[UpstreamOperator]:
        """``GET GetAccountLookup?accountNumber=`` (Ding's swagger: ``docs/Api/V1Api.md``,
        ``docs/Model/GetAccountLookupResponse.md`` and ``AccountLookup.md``): ``CountryIso``,
        ``AccountNumberNormalized`` and ``Items`` ("provider information associated to the
        account number"), each ``{ProviderCode, RegionCode}``; empty when Ding could not look
        the number up. The number goes as SendTransfer's ``AccountNumber`` does: its digits."""
        try:
            response = self.http.get(
                f"{self.base_url}{API}/GetAccountLookup",
                params={"accountNumber": account_number(number)},
                headers={"api_key": self.config.api_key, "Accept": "application/json"},
                timeout=timeout,
            )
        except http.ClientError as exc:
            raise TransientError(
                f"DingConnect GetAccountLookup: {exc!r}", code="upstream_unavailable"
            ) from exc
        if response.status_code == 400:  # AccountNumberInvalid and the like: not known
            return []
        body = self._answer(response, "GetAccountLookup")
        where = str(body.get("CountryIso") or country).upper()
        codes: list[str] = []
        for item in _items(body):
            code = str(item.get("ProviderCode") or "")
            if code and code not in codes:
                codes.append(code)
        return [UpstreamOperator(upstream_id=code, name=code, country=where) for code in codes]


# -- helpers -------------------------------------------------------------------------------
def _server(url: str) -> str:
    url = url.rstrip("/")
    if url.lower().endswith(API.lower()):
        url = url[: -len(API)]
    return url


def account_number(number: str) -> str:
    """Ding's AccountNumber for an E.164 number: its digits, country code first, no '+'."""
    return re.sub(r"\D", "", number)


def _json_number(value: Any) -> float:
    if isinstance(value, Decimal):
        return float(value)  # two decimals: the shortest repr is the exact amount
    raise TypeError(f"cannot send {type(value).__name__} as JSON")


def _body(response: http.Response) -> dict[str, Any] | None:
    try:
        body = response.json(parse_float=Decimal)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _text(response: http.Response) -> dict[str, Any]:
    return {"status": response.status_code, "text": response.text[:500]}


def _codes(body: dict[str, Any] | None) -> list[str]:
    errors = (body or {}).get("ErrorCodes") or []
    if not isinstance(errors, list):
        return []
    return [str(e.get("Code")) for e in errors if isinstance(e, dict) and e.get("Code")]


def _describe(body: dict[str, Any] | None) -> str:
    errors = (body or {}).get("ErrorCodes") or []
    parts = []
    for error in errors if isinstance(errors, list) else []:
        if isinstance(error, dict) and error.get("Code"):
            context = error.get("Context")
            parts.append(f"{error['Code']} ({context})" if context else str(error["Code"]))
    return f": {', '.join(parts)}" if parts else ""


def _code(codes: list[str]) -> str:
    """A stable code from Ding's first ErrorCode: ``AccountNumberInvalid`` ->
    ``account_number_invalid``."""
    if not codes:
        return "upstream_failed"
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", codes[0]).lower()


def _decimal(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None


_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_utc(value: Any) -> datetime | None:
    """A Ding date-time (``2026-11-25T10:00:00Z``, .NET's seven fraction digits, or no zone at
    all, which is UTC as the field names say) as an aware UTC datetime."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = _FRACTION.sub(r"\1", value.strip())
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _items(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("Items") or []
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _records(body: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """ListTransferRecords' items as (record, envelope): each item is documented as
    ``{"TransferRecord", "ResultCode", "ErrorCodes"}``; a bare record is accepted too."""
    for item in _items(body):
        record = item.get("TransferRecord")
        if isinstance(record, dict):
            yield record, item
        elif "ProcessingState" in item:
            yield item, item


def _distributor_ref(record: dict[str, Any]) -> str:
    ids = record.get("TransferId")
    return str(ids.get("DistributorRef") or "") if isinstance(ids, dict) else ""


def _transfer_ref(record: dict[str, Any]) -> str:
    ids = record.get("TransferId")
    return str(ids.get("TransferRef") or "") if isinstance(ids, dict) else ""


def _status(state: str) -> str:
    if state in SUCCESS_STATES:
        return ProviderResult.DELIVERED
    if state in FAILED_STATES or state == PROVIDER_TIMED_OUT:
        return ProviderResult.FAILED
    return ProviderResult.PENDING  # Submitted, Processing, Cancelling, or a state not yet known


def _price(record: dict[str, Any]) -> dict[str, Any]:
    price = record.get("Price")
    return price if isinstance(price, dict) else {}


def _cost(record: dict[str, Any]) -> Decimal | None:
    """What Ding debited for a completed transfer: SendValue + DistributorFee, less the
    commission it credited (CommissionApplied)."""
    price = _price(record)
    send = _decimal(price.get("SendValue"))
    if send is None:
        return None
    fee = _decimal(price.get("DistributorFee")) or Decimal(0)
    commission = _decimal(record.get("CommissionApplied")) or Decimal(0)
    return quantize(send + fee - commission)


_PIN_CODE_NAMES = ("pin", "pincode", "pinnumber", "vouchercode", "voucher", "code")
_PIN_SERIAL_NAMES = ("serial", "serialnumber", "pinserial", "voucherserial")
_PIN_VALID_NAMES = ("validuntil", "expirydate", "expiry", "expirationdate", "validity")


def _param(params: dict[str, str], names: tuple[str, ...]) -> str:
    by_name = {str(key).replace("_", "").lower(): value for key, value in params.items()}
    for name in names:
        value = by_name.get(name)
        if value not in (None, ""):
            return str(value).strip()
    return ""


def _pin(record: dict[str, Any]) -> Pin | None:
    """The PIN a transfer record's ``ReceiptParams`` carry, if any (see the module doc)."""
    params = record.get("ReceiptParams")
    if not isinstance(params, dict):
        return None
    code = _param(params, _PIN_CODE_NAMES)
    if not code:
        return None
    return Pin(
        code=code,
        serial=_param(params, _PIN_SERIAL_NAMES),
        instructions=str(record.get("ReceiptText") or "").strip(),
        valid_until=_param(params, _PIN_VALID_NAMES),
    )


def _without_pins(value: Any) -> Any:
    """A body with the receipt of every transfer record that carries a PIN left out."""
    if isinstance(value, list):
        return [_without_pins(item) for item in value]
    if not isinstance(value, dict):
        return value
    if _pin(value) is not None:
        value = {**value, "ReceiptText": PIN_REDACTED, "ReceiptParams": PIN_REDACTED}
    return {key: _without_pins(item) for key, item in value.items()}


def _result(record: dict[str, Any], envelope: dict[str, Any]) -> ProviderResult:
    pin = _pin(record)
    state = str(record.get("ProcessingState") or "")
    status = _status(state)
    delivered = status == ProviderResult.DELIVERED
    code = ""
    if status == ProviderResult.FAILED:
        code = _code(_codes(envelope))
        if code == "upstream_failed" and state == PROVIDER_TIMED_OUT:
            code = "provider_timed_out"
    receipt = "" if pin is not None else str(record.get("ReceiptText") or "")
    message = (receipt or state) if delivered else state
    return ProviderResult(
        status=status,
        transaction_id=_transfer_ref(record),
        code=code,
        message=message if delivered else f"{message}{_describe(envelope)}",
        raw=_without_pins(_plain(envelope)),
        cost=_cost(record) if delivered else None,
        cost_currency=str(_price(record).get("SendCurrencyIso") or "") if delivered else "",
        pin=pin,
        delivered_amount=_decimal(_price(record).get("ReceiveValue")) if delivered else None,
    )


def _transaction(
    record: dict[str, Any], envelope: dict[str, Any], started: datetime
) -> UpstreamTransaction:
    status = _status(str(record.get("ProcessingState") or ""))
    price = _price(record)
    delivered = status == ProviderResult.DELIVERED
    return UpstreamTransaction(
        reference=_distributor_ref(record),
        transaction_id=_transfer_ref(record),
        status=status,
        amount=_decimal(price.get("ReceiveValue")),
        currency=str(price.get("ReceiveCurrencyIso") or ""),
        cost=_cost(record) if delivered else None,
        cost_currency=str(price.get("SendCurrencyIso") or "") if delivered else "",
        created_at=started,
        raw=_without_pins(_plain(envelope)),
    )


# Ding's Benefits that are ours, as our benefit kinds (the rest are not sold here).
BENEFIT_KINDS = {"mobile": "credit", "data": "data", "minutes": "voice", "sms": "sms"}


def _product_type(benefits: Iterable[str], redemption: str) -> str | None:
    """Our kind of a product from its ``Benefits`` and ``RedemptionMechanism`` (the module
    docstring), or None when it gives nothing of ours."""
    names = {str(b).strip().lower() for b in benefits} & set(BENEFIT_KINDS)
    if not names:
        return None
    if redemption == "ReadReceipt":
        return "pin"
    if names == {"mobile"}:
        return "airtime"
    if names == {"data"}:
        return "data"
    return "bundle"


def _benefits(
    product: dict[str, Any], kind: str, price: dict[str, Any]
) -> tuple[tuple[dict[str, Any], ...], int | None]:
    """A data, bundle or PIN product's benefits and validity days (airtime: none)."""
    if kind == "airtime":
        return (), None
    text = str(product.get("DefaultDisplayText") or "").strip()
    read = text_benefits(text)
    found: list[dict[str, Any]] = []
    for name in product.get("Benefits") or []:
        ours = BENEFIT_KINDS.get(str(name).strip().lower())
        if ours is None:
            continue
        if ours == "credit":
            amount = _decimal(price.get("ReceiveValue"))
            currency = str(price.get("ReceiveCurrencyIso") or "")
            found.append(benefit("credit", amount, currency, ""))
            continue
        same = [item for item in read if item["kind"] == ours]
        found.extend(same or [benefit(ours, None, "", text[:200])])
    validity = iso_validity_days(product.get("ValidityPeriodIso")) or text_validity_days(text)
    return tuple(found), validity


def _operator(product: dict[str, Any], provider: dict[str, Any] | None) -> UpstreamOperator:
    provider = provider or {}
    country = str(provider.get("CountryIso") or "").upper()
    return UpstreamOperator(
        upstream_id=str(product.get("ProviderCode")),
        name=str(provider.get("Name") or provider.get("ShortName") or product.get("ProviderCode")),
        country=country if len(country) == 2 and country != "XG" else "",
    )


def _skipped(
    product: dict[str, Any], providers: dict[str, dict[str, Any]], reason: str
) -> SkippedProduct:
    return SkippedProduct(
        operator=_operator(product, providers.get(str(product.get("ProviderCode")))),
        product_id=str(product.get("SkuCode") or ""),
        name=str(product.get("DefaultDisplayText") or product.get("SkuCode") or ""),
        reason=reason,
    )


def _upstream_product(
    product: dict[str, Any], providers: dict[str, dict[str, Any]]
) -> tuple[UpstreamProduct | None, str]:
    """One GetProducts item as a route (fixed when ``Minimum.SendValue`` equals
    ``Maximum.SendValue``, else a range), or None and why not ("" when it is no product of a
    country of ours)."""
    low, high = product.get("Minimum"), product.get("Maximum")
    if not isinstance(low, dict) or not isinstance(high, dict):
        return None, "no Minimum or Maximum"
    send = _decimal(high.get("SendValue"))
    low_send = _decimal(low.get("SendValue"))
    if send is None or send <= 0 or low_send is None or low_send <= 0:
        return None, "no SendValue"
    benefits = product.get("Benefits") or []
    redemption = str(product.get("RedemptionMechanism") or "Immediate")
    product_type = _product_type(benefits if isinstance(benefits, list) else [], redemption)
    if product_type is None:
        return None, (
            f"benefits {', '.join(map(str, benefits)) or 'none'} are not airtime, data, "
            "minutes or SMS"
        )
    if redemption not in ("Immediate", "ReadReceipt"):
        return None, f"RedemptionMechanism {redemption}"
    required, field_names, reason = _settings(product.get("SettingDefinitions"))
    if reason:
        return None, reason
    provider = providers.get(str(product.get("ProviderCode")))
    operator = _operator(product, provider)
    if provider is None or not operator.country:
        return None, ""
    local = _decimal(high.get("ReceiveValue"))
    low_local = _decimal(low.get("ReceiveValue"))
    if local is None or low_local is None:
        return None, "no ReceiveValue"
    fee = _decimal(high.get("DistributorFee")) or Decimal(0)
    rate = _decimal(product.get("CommissionRate")) or Decimal(0)
    rate = min(max(rate, Decimal(0)), Decimal(100))
    send_currency = str(high.get("SendCurrencyIso") or "")
    kind_benefits, validity_days = _benefits(product, product_type, high)
    if low_send != send:  # a range: no single amount of credit
        kind_benefits = tuple(
            {**item, "amount": None} if item["kind"] == "credit" else item for item in kind_benefits
        )
    common: dict[str, Any] = {
        "operator": operator,
        "sku": str(product.get("SkuCode")),
        "product_type": product_type,
        "local_currency": str(high.get("ReceiveCurrencyIso") or ""),
        "cost_currency": send_currency,
        "send_currency": send_currency,
        "raw": _plain(product),
        "required_fields": required,
        "field_names": field_names,
        "benefits": kind_benefits,
        "validity_days": validity_days,
    }
    if low_send == send:
        return (
            UpstreamProduct(
                local_amount=local,
                cost=quantize(send + fee - send * rate / 100),
                send_value=send,
                **common,
            ),
            "",
        )
    # A range: any ReceiveValue from Minimum's to Maximum's, its SendValue on the line
    # between the two ends (Ding's own quote is EstimatePrices), less the commission.
    if local <= low_local or send <= low_send:
        return None, "Minimum and Maximum do not make a range"
    # The route sends Minimum's SendValue for Minimum's ReceiveValue and, for an amount A
    # above it, ``Route.send_value_at(A)``: the line's SendValue rounded up to the cent, so
    # the recipient gets at least A. Its slope is rounded down, so Maximum's ReceiveValue
    # still sends Maximum's SendValue: the range is Ding's own, end to end.
    per_unit = ((send - low_send) / (local - low_local)).quantize(
        Decimal("1e-10"), rounding=ROUND_FLOOR
    )
    intercept = low_send - low_local * per_unit  # the line's SendValue at 0, for the cost
    keep = 1 - rate / 100
    return (
        UpstreamProduct(
            local_amount=None,
            cost=(intercept * keep + fee).quantize(Decimal("0.0001")),
            send_value=low_send,
            denomination="range",
            min_amount=low_local,
            max_amount=local,
            step=Decimal("0.01"),
            cost_per_unit=(per_unit * keep).quantize(Decimal("1e-10")),
            send_per_unit=per_unit,
            **common,
        ),
        "",
    )


# Ding names a product's settings itself (``SettingDefinitions``: Name, Description,
# IsMandatory) and publishes no list of them: a setting is one of our fields when its name,
# lower-cased without punctuation, is one of these.
SETTING_FIELDS = {
    "sendername": "senderName",
    "senderfullname": "senderName",
    "senderphone": "senderPhone",
    "sendermobile": "senderPhone",
    "sendermobilenumber": "senderPhone",
    "senderphonenumber": "senderPhone",
    "sendernumber": "senderPhone",
    "recipientemail": "recipientEmail",
    "receiveremail": "recipientEmail",
    "beneficiaryemail": "recipientEmail",
    "recipientname": "recipientName",
    "recipientfullname": "recipientName",
    "receivername": "recipientName",
    "beneficiaryname": "recipientName",
}
FIELD_ORDER = ("senderName", "senderPhone", "recipientEmail", "recipientName")  # catalog.fields


def _settings(definitions: Any) -> tuple[tuple[str, ...], dict[str, str], str]:
    """A product's ``SettingDefinitions`` as (the fields it needs, Ding's name of each field
    it takes, why it cannot be sold or ""). A mandatory setting that is none of our fields
    cannot be sent."""
    if not definitions:
        return (), {}, ""
    if not isinstance(definitions, list):
        return (), {}, "SettingDefinitions unreadable"
    required: set[str] = set()
    names: dict[str, str] = {}
    unknown: list[str] = []
    for setting in definitions:
        if not isinstance(setting, dict):
            continue
        name = str(setting.get("Name") or "")
        ours = SETTING_FIELDS.get(re.sub(r"[^a-z]", "", name.lower()))
        if ours is None:
            if setting.get("IsMandatory"):
                unknown.append(name or "?")
            continue
        names.setdefault(ours, name)
        if setting.get("IsMandatory"):
            required.add(ours)
    if unknown:
        return (), {}, f"needs mandatory settings we cannot send: {', '.join(unknown)}"
    return tuple(f for f in FIELD_ORDER if f in required), names, ""


def _settings_sent(request: TopupRequest) -> list[dict[str, str]]:
    """A line's fields as SendTransfer's ``Settings`` (``[{Name, Value}]``), under the
    product's own setting names (the route's ``field_names``); what was not given, or that
    the product does not take, is left out."""
    return [
        {"Name": name, "Value": request.fields[ours]}
        for ours, name in request.field_names.items()
        if request.fields.get(ours) and name
    ]


def _plain(value: Any) -> Any:
    """A parsed body with its Decimals as strings, to store as JSON."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Decimal):
        return str(value)
    return value
