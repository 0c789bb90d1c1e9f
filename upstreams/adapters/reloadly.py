"""HTTP adapter for Reloadly's Airtime API (https://developers.reloadly.com/).

What it relies on, from Reloadly's public reference: the OpenAPI of repository
``Reloadly/reloadly-api-documentation`` (``openapi/paths/access-token.yaml``,
``airtime-get-all-operators.yaml``, ``airtime-get-operator-by-iso.yaml``, ``airtime-top-ups.yaml``,
``airtime-get-all-transactions.yaml``, ``airtime-accounts-balance.yaml`` and their schemas under
``openapi/components/schemas/airtime/``), and repository ``Reloadly/reloadly-sdk-java``
(``java-sdk-airtime/.../enums/AirtimeTransactionStatus.java``,
``.../filter/TransactionHistoryFilter.java``, ``src/test/resources/operator/`` and
``src/test/resources/report/``) where the OpenAPI is silent:

- Auth: OAuth2 client credentials, ``POST {auth_url}/oauth/token`` with ``client_id``,
  ``client_secret``, ``grant_type=client_credentials`` and ``audience`` = the API base URL;
  ``access_token`` and ``expires_in`` (seconds) come back. The token is cached (shared cache),
  keyed by the provider account (name, client id, servers), until shortly before it expires,
  and fetched again once when the API answers 401. One refresh at a time per account and
  process: threads that need a token meanwhile wait for it and reuse it.
- One HTTP client per process (``upstreams.adapters.client``: kept connections, thread-safe),
  a timeout on every call: the processor's many threads share it.
- Top-up: ``POST {base_url}/topups`` with ``operatorId``, ``amount``, ``useLocalAmount`` (we send
  the local amount, ``true``, but for the sender-currency amounts below), ``customIdentifier`` (our
  recharge id; the reference says it can never be reused) and ``recipientPhone {countryCode,
  number}``. The answer carries ``transactionId``, ``status``, ``requestedAmount`` +
  ``requestedAmountCurrencyCode`` (what was asked of our account, in its currency), ``discount`` +
  ``discountCurrencyCode``, ``deliveredAmount`` + ``deliveredAmountCurrencyCode`` and ``balanceInfo
  {oldBalance, newBalance, currencyCode}``. Its cost to us is ``requestedAmount`` less ``discount``
  (the reference's example debits exactly that from ``balanceInfo``); ``balanceInfo`` has no cost
  field, so its balance difference is used only when the discount is in another currency.
- Statuses: PROCESSING, SUCCESSFUL, REFUNDED, FAILED (the Java SDK's enum; the OpenAPI names
  only SUCCESSFUL). REFUNDED is a top-up Reloadly took back: ``ProviderResult.REVERSED``.
- Refusals are 4xx bodies ``{timeStamp, message, path, errorCode, infoLink, details}``; one
  that names our custom identifier (a reused reference; no code is published for it) is
  settled by looking the reference up, like a 409. 401 bodies carry ``INVALID_TOKEN``.
- Lists are Spring pages: ``page`` (from 1) and ``size`` (default 200) in, ``content``,
  ``totalPages``, ``last`` out. ``GET /operators`` is paged (``includeBundles``, ``includeData``);
  ``GET /operators/countries/{iso}`` answers a plain list (404 ``COUNTRY_NOT_SUPPORTED``).
  An operator carries ``operatorId``, ``name``, ``bundle``, ``data``, ``pin``,
  ``supportsLocalAmounts``, ``denominationType`` (FIXED or RANGE), ``senderCurrencyCode``,
  ``destinationCurrencyCode``, ``internationalDiscount`` (percent), ``fx.rate``,
  ``fixedAmounts`` (sender currency) and ``localFixedAmounts`` (destination currency, in the
  same order), ``country.isoName``.
- Reports: ``GET {base_url}/topups/reports/transactions`` filtered by ``customIdentifier`` (our
  status lookup) or by ``startDate``/``endDate`` written ``yyyy-MM-dd HH:mm:ss`` (the Java SDK's
  pattern); ``transactionDate`` has the same form and no time zone: we treat it as UTC.
- Balance: ``GET {base_url}/accounts/balance`` → ``balance``, ``currencyCode``.
- PINs: the top-up answer (and its report line) of a PIN operator carries ``pinDetail``
  {``code`` (an integer in the reference), ``serial``, ``info`` (how to use it), ``value``,
  ``ivr`` (a number to call), ``validity`` ("30 days")} (``TopUpsResponse200.yaml``): read as
  ``ProviderResult.pin`` and left out of ``raw`` (contract section 17).

What the catalog makes of an operator (contract section 17):
- FIXED with local amounts (``localFixedAmounts``, or ``supportsLocalAmounts`` and ``fx.rate``):
  one fixed offer per amount, sent as the local amount (``useLocalAmount: true``); cost: the
  fixed amount less ``internationalDiscount`` percent.
- FIXED in the account's currency only (no local list, ``supportsLocalAmounts`` false): one
  fixed offer per amount with the sku ``"sender"``, sent as that amount (``useLocalAmount:
  false``); the recipient gets it at ``fx.rate`` ("the FX rate at which the top-up will be
  made"), and ``fixedAmountsDescriptions`` (keyed ``"5.00"``) says what it is.
- RANGE: one range offer, any local amount from ``localMinAmount`` to ``localMaxAmount`` (else
  ``minAmount``/``maxAmount`` times ``fx.rate``) to the cent (the reference publishes no
  step), sent as the local amount; a local unit costs ``1 / fx.rate`` less
  ``internationalDiscount`` percent. An amount outside is refused with 400
  ``INVALID_AMOUNT_FOR_OPERATOR`` ("the specified topup amounts is not valid for the given
  operator").
- Kinds (contract section 17): an operator flagged ``pin`` ("supports PIN transactions":
  its top-up answers a ``pinDetail``, a code for the customer to enter) sells ``pin``
  products; ``bundle`` ("has bundle plans") ``bundle``; ``data`` ("has data plans")
  ``data``; others airtime. Reloadly says what a plan gives only in words:
  ``localFixedAmountsDescriptions`` (keyed by the local amount, ``"100.00"``), else
  ``fixedAmountsDescriptions`` (keyed by the sender amount, ``"5.00"``); the data, minutes,
  SMS and validity they name become the product's benefits and validity
  (``upstreams.adapters.kinds``), a description naming none of them one benefit of kind
  ``other`` with its words. A PIN without words gives the credit of its local amount.
  The catalog asks for every kind (``includeBundles``, ``includeData``, ``includePin``).
- Left out, with the reason (``UpstreamCatalog.skipped``): RANGE operators that take no
  local amounts, and FIXED operators whose local list does not pair with the fixed one.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation
from typing import Any

import phonenumbers
from django.core.cache import cache

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
from upstreams.adapters.kinds import text_benefits, text_validity_days, valid_until

ACCEPT = "application/com.reloadly.topups-v1+json"
STATUS_MAP = {
    "SUCCESSFUL": ProviderResult.DELIVERED,
    "PENDING": ProviderResult.PENDING,
    "PROCESSING": ProviderResult.PENDING,
    "FAILED": ProviderResult.FAILED,
    "REFUNDED": ProviderResult.REVERSED,
}
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"  # report filters and times, no zone (read as UTC)


TOKEN_KEPT_SECONDS = 60.0
_token_locks: dict[str, threading.Lock] = {}
_token_locks_guard = threading.Lock()


def _token_lock(key: str) -> threading.Lock:
    with _token_locks_guard:
        return _token_locks.setdefault(key, threading.Lock())


class ReloadlyProvider:
    kind = "reloadly"
    page_size = 200  # the reference's default page size for operators and reports

    def __init__(
        self,
        *,
        client_id: str,
        client_secret: str,
        base_url: str,
        auth_url: str,
        timeout: float = 10.0,
        client: http.Client | None = None,
        name: str = "reloadly",
        currency: str = "",
    ) -> None:
        self.name = name
        self.client_id = client_id
        self.client_secret = client_secret
        self.base_url = base_url.rstrip("/")
        self.auth_url = auth_url.rstrip("/")
        self.timeout = timeout
        self.currency = currency  # the account's, when an answer does not say
        self.http = client or http.shared()
        account = "\0".join((name, client_id, self.auth_url, self.base_url))
        self._token_key = f"reloadly-token:{hashlib.sha256(account.encode()).hexdigest()[:32]}"
        self._kept: tuple[str, float] = ("", 0.0)  # the token and until when it is kept here

    @classmethod
    def from_config(
        cls, config: ProviderConfig, *, name: str, client: http.Client | None = None
    ) -> ReloadlyProvider:
        """The adapter for one provider account (a ``Provider`` row named ``name``)."""
        return cls(
            client_id=config.client_id,
            client_secret=config.client_secret,
            base_url=config.base_url,
            auth_url=config.auth_url,
            timeout=config.timeout,
            client=client,
            name=name,
            currency=config.currency,
        )

    # -- authentication -------------------------------------------------------------------
    def _token(self, *, refused: str = "") -> str:
        """The cached token; a new one when there is none or when ``refused`` (the token the
        API just answered 401 to) is still the cached one. One request at a time. The shared
        cache's token is kept in this process for up to a minute (no round trip per call)."""
        token, until = self._kept
        if token and token != refused and time.monotonic() < until:
            return token
        token = cache.get(self._token_key)
        if not token or token == refused:
            with _token_lock(self._token_key):
                token = cache.get(self._token_key)  # another thread may have fetched it
                if not token or token == refused:
                    token = self._token_fetch()
        self._kept = (token, time.monotonic() + TOKEN_KEPT_SECONDS)
        return token

    def _token_fetch(self) -> str:
        try:
            response = self.http.post(
                f"{self.auth_url}/oauth/token",
                json={
                    "client_id": self.client_id,
                    "client_secret": self.client_secret,
                    "grant_type": "client_credentials",
                    "audience": self.base_url,
                },
                timeout=self.timeout,
            )
        except http.ClientError as exc:
            raise TransientError(
                f"token request failed: {exc}", code="upstream_unavailable"
            ) from exc
        if response.status_code >= 500 or response.status_code == 429:
            raise TransientError("token endpoint unavailable", code="upstream_unavailable")
        body = _body(response)
        if response.status_code != 200 or not body or not body.get("access_token"):
            raise TransientError(
                "token refused: check the client id and secret",
                code="upstream_auth_failed",
                raw=_json(response),
            )
        token = body["access_token"]
        ttl = max(30, int(body.get("expires_in", 3600)) - 60)
        cache.set(self._token_key, token, ttl)
        return token

    def _call(
        self,
        method: str,
        path: str,
        *,
        json_body: dict | None = None,
        params: dict | None = None,
        sending: bool = False,
    ) -> http.Response:
        """One API call with the account's token (fetched again once on a 401). Errors before
        an answer: ``TransientError`` when the request cannot have reached Reloadly (no
        connection), else, while ``sending``, ``UpstreamTimeout`` (it may have been made)."""
        refused = ""
        for attempt in (1, 2):
            token = self._token(refused=refused)
            try:
                response = self.http.request(
                    method,
                    f"{self.base_url}{path}",
                    json=json_body,
                    params=params,
                    headers={"Authorization": f"Bearer {token}", "Accept": ACCEPT},
                    timeout=self.timeout,
                )
            except http.Unreachable as exc:
                raise TransientError(
                    f"Reloadly unreachable: {exc}", code="upstream_unavailable"
                ) from exc
            except http.NoAnswer as exc:
                if sending:
                    raise UpstreamTimeout(f"no answer from Reloadly: {exc}") from exc
                code = "upstream_timeout" if exc.timed_out else "upstream_unavailable"
                raise TransientError(f"Reloadly call failed: {exc}", code=code) from exc
            if response.status_code == 401 and attempt == 1:
                refused = token
                continue
            return response
        return response

    def _get(self, path: str, params: dict | None = None, *, missing_ok: bool = False) -> Any:
        """The JSON of a read (nothing is sent, so every failure is transient); None for a
        404 when ``missing_ok``."""
        response = self._call("GET", path, params=params)
        if response.status_code == 404 and missing_ok:
            return None
        if response.status_code == 429:
            raise TransientError(
                "rate limited by Reloadly",
                code="upstream_rate_limited",
                raw=_json(response),
                retry_after=response.retry_after,
            )
        if response.status_code != 200:
            raise TransientError(
                f"GET {path} failed ({response.status_code})",
                code="upstream_unavailable",
                raw=_json(response),
            )
        try:
            return response.json()
        except ValueError as exc:
            raise TransientError(
                f"GET {path}: unreadable answer", code="upstream_unavailable"
            ) from exc

    def _pages(self, path: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every ``content`` entry of a paged list, page 1 to ``totalPages``."""
        page = 1
        while True:
            body = self._get(path, {**params, "page": page, "size": self.page_size})
            content = body.get("content") if isinstance(body, dict) else None
            if not isinstance(content, list):
                raise TransientError(f"GET {path}: not a page", code="upstream_unavailable")
            yield from content
            total = body.get("totalPages")
            if not content or body.get("last") is True:
                return
            if isinstance(total, int) and page >= total:
                return
            page += 1

    # -- the interface --------------------------------------------------------------------
    def send(self, request: TopupRequest) -> ProviderResult:
        number = phonenumbers.parse(request.recipient_number, None)
        # A fixed amount Reloadly takes only in the account's currency is sent as that amount
        # (``useLocalAmount: false``); every other (fixed or range) as the local amount.
        in_sender = request.sku == SENDER_SKU and request.send_value is not None
        amount = request.send_value if in_sender else request.amount
        response = self._call(
            "POST",
            "/topups",
            sending=True,
            json_body={
                "operatorId": int(request.operator_id)
                if request.operator_id.isdigit()
                else request.operator_id,
                "amount": str(amount),
                "useLocalAmount": not in_sender,
                "customIdentifier": request.reference,
                "recipientPhone": {
                    "countryCode": request.country,
                    "number": phonenumbers.national_significant_number(number),
                },
                **_extra_fields(request.fields),
            },
        )
        body = _body(response)
        raw = body if body is not None else _json(response)
        if response.status_code == 429:
            raise TransientError(
                "rate limited by Reloadly",
                code="upstream_rate_limited",
                raw=raw,
                retry_after=response.retry_after,
            )
        if response.status_code == 401:  # refused our token twice: nothing was made
            raise TransientError("Reloadly refused the token", code="upstream_auth_failed", raw=raw)
        if response.status_code >= 500:
            # It may have been made before the error: settled by looking the reference up.
            raise UpstreamTimeout(f"Reloadly error {response.status_code}", raw=raw)
        error_code = str((body or {}).get("errorCode") or "")
        if response.status_code == 409 or "CUSTOM_IDENTIFIER" in error_code.upper():
            # Reloadly holds a top-up under our reference: the earlier call's outcome, or
            # pending while that call is still being worked on (not listed yet). Never a
            # refusal: failing would refund a top-up the recipient is about to receive.
            # A lookup that fails now is pending too: the top-up is Reloadly's either way.
            try:
                found = self.status(request.reference)
            except (TransientError, UpstreamTimeout):
                found = None
            return found or ProviderResult(status=ProviderResult.PENDING, raw=raw)
        if body is None:
            raise UpstreamTimeout(
                f"unreadable answer from Reloadly ({response.status_code})", raw=raw
            )
        if response.status_code >= 400:
            if not error_code:  # not a refusal the reference documents: unclear
                raise UpstreamTimeout(f"Reloadly answered {response.status_code}", raw=body)
            raise PermanentError(
                body.get("message") or f"refused ({response.status_code})",
                code=_code(error_code),
                raw=body,
            )
        if body.get("transactionId") is None:
            raise UpstreamTimeout("Reloadly's answer has no transaction id", raw=body)
        return self._result(body)

    def status(self, reference: str) -> ProviderResult | None:
        body = self._get(
            "/topups/reports/transactions",
            {"customIdentifier": reference, "size": 1},
            missing_ok=True,
        )
        if body is None:
            return None
        content = body.get("content") if isinstance(body, dict) else None
        if not isinstance(content, list):
            raise TransientError("status lookup: not a page", code="upstream_unavailable")
        matching = [t for t in content if t.get("customIdentifier") == reference]
        return self._result(matching[0]) if matching else None

    def balance(self) -> tuple[Decimal, str]:
        body = self._get("/accounts/balance")
        return Decimal(str(body["balance"])), body.get("currencyCode") or self.currency or "USD"

    def catalog(self, *, countries: Iterable[str] | None = None) -> list[UpstreamProduct]:
        return self.catalog_read(countries=countries).products

    def catalog_read(self, *, countries: Iterable[str] | None = None) -> UpstreamCatalog:
        """Every operator's offers, all pages read; per country through
        ``/operators/countries/{iso}`` (a plain list) when ``countries`` are given."""
        include = {"includeBundles": "true", "includeData": "true", "includePin": "true"}
        operators: Iterable[dict[str, Any]]
        if countries is None:
            operators = self._pages("/operators", include)
        else:
            operators = [
                operator
                for iso in countries
                for operator in (
                    self._get(
                        f"/operators/countries/{iso.upper()}",
                        include,
                        missing_ok=True,  # COUNTRY_NOT_SUPPORTED
                    )
                    or []
                )
            ]
        products: list[UpstreamProduct] = []
        skipped: list[SkippedProduct] = []
        for operator in operators:
            sold, left = _products(operator)
            products.extend(sold)
            skipped.extend(left)
        return UpstreamCatalog(products=products, skipped=skipped)

    def transactions(self, *, day: date) -> list[UpstreamTransaction]:
        """Reloadly's transactions of one UTC day, all pages read. Its report times carry no
        zone: they are read as UTC, and a line dated outside ``day`` is left out."""
        params = {
            "startDate": f"{day.isoformat()} 00:00:00",
            "endDate": f"{day.isoformat()} 23:59:59",
        }
        found = []
        for line in self._pages("/topups/reports/transactions", params):
            created = _time(line.get("transactionDate"))
            if created is not None and created.date() != day:
                continue
            result = self._result(line)
            found.append(
                UpstreamTransaction(
                    reference=str(line.get("customIdentifier") or ""),
                    transaction_id=result.transaction_id,
                    status=result.status,
                    amount=_decimal(line.get("deliveredAmount")),
                    currency=str(line.get("deliveredAmountCurrencyCode") or ""),
                    cost=result.cost,
                    cost_currency=result.cost_currency,
                    created_at=created,
                    raw=_pin(line)[1],
                )
            )
        return found

    # -- number lookup (contract section 17) ----------------------------------------------
    def lookup(self, *, number: str, country: str, timeout: float) -> list[UpstreamOperator]:
        """``GET /operators/auto-detect/phone/{phone}/countries/{countryisocode}``
        (``openapi/paths/airtime-auto-detect-an-operator.yaml``): the operator the number is
        with now, as ``GET /operators`` shows one (``operatorId``, ``name``,
        ``country.isoName``). ``phone`` is written as the reference's example writes it, the
        national number (``08147658721`` with ``NG``). A 404 is "not detected"."""
        phone = _lookup_phone(number)
        iso = country.upper()
        path = f"/operators/auto-detect/phone/{phone}/countries/{iso}"
        response = self._lookup_get(path, timeout=timeout)
        if response.status_code == 404:
            return []
        if response.status_code != 200:
            raise TransientError(
                f"auto-detect failed ({response.status_code})",
                code="upstream_unavailable",
                raw=_json(response),
            )
        body = _body(response) or {}
        operator_id = body.get("operatorId") or body.get("id")
        if not operator_id:
            return []
        found = str((body.get("country") or {}).get("isoName") or iso).upper()
        return [UpstreamOperator(str(operator_id), str(body.get("name") or ""), found)]

    def _lookup_get(self, path: str, *, timeout: float) -> http.Response:
        """A read within ``timeout`` seconds (the token fetched again once on a 401)."""
        refused = ""
        response = None
        for _attempt in (1, 2):
            token = self._token(refused=refused)
            try:
                response = self.http.get(
                    f"{self.base_url}{path}",
                    headers={"Authorization": f"Bearer {token}", "Accept": ACCEPT},
                    timeout=timeout,
                )
            except http.ClientError as exc:
                raise TransientError(
                    f"Reloadly auto-detect: {exc!r}", code="upstream_unavailable"
                ) from exc
            if response.status_code != 401:
                return response
            refused = token
        assert response is not None
        return response

    def _result(self, body: dict[str, Any]) -> ProviderResult:
        pin, body = _pin(body)
        status = STATUS_MAP.get(
            str(body.get("status") or "SUCCESSFUL").upper(), ProviderResult.PENDING
        )
        cost, cost_currency = _cost(body) if status in _DEBITED else (None, "")
        transaction_id = body.get("transactionId")
        return ProviderResult(
            status=status,
            transaction_id="" if transaction_id is None else str(transaction_id),
            code=_RESULT_CODES.get(status, ""),
            message=str(body.get("message") or ""),
            raw=body,
            cost=cost,
            cost_currency=(cost_currency or self.currency) if cost is not None else "",
            pin=pin,
        )


def _pin(body: dict[str, Any]) -> tuple[Pin | None, dict[str, Any]]:
    """``pinDetail`` as a ``Pin`` (None when the answer has no code), and the answer without
    it: the code never reaches ``raw``."""
    detail = body.get("pinDetail")
    if "pinDetail" not in body:
        return None, body
    rest = {key: value for key, value in body.items() if key != "pinDetail"}
    if not isinstance(detail, dict) or detail.get("code") in (None, ""):
        return None, rest
    rest["pinDetail"] = PIN_REDACTED
    texts = [
        str(detail[key]).strip() for key in ("info", "value") if detail.get(key) not in (None, "")
    ]
    if detail.get("ivr"):
        texts.append(f"IVR: {detail['ivr']}")
    if detail.get("validity"):
        texts.append(f"Valid: {detail['validity']}")
    serial = detail.get("serial")
    pin = Pin(
        code=str(detail["code"]),
        serial="" if serial in (None, "") else str(serial),
        instructions="\n".join(texts),
        # "30 days": valid to that date from the sale (unreadable: unknown, null).
        valid_until=valid_until(text_validity_days(str(detail.get("validity") or ""))),
    )
    return pin, rest


# Reloadly keeps what it debited only for a top-up made or being made; a failed one was not
# charged, and a refunded one was given back.
_DEBITED = {ProviderResult.DELIVERED, ProviderResult.PENDING}
_RESULT_CODES = {
    ProviderResult.FAILED: "upstream_failed",
    ProviderResult.REVERSED: "upstream_reversed",
}


def _cost(body: dict[str, Any]) -> tuple[Decimal | None, str]:
    """What the top-up cost our account: ``requestedAmount`` less ``discount``, in
    ``requestedAmountCurrencyCode``; else ``balanceInfo``'s old less new balance."""
    requested = _decimal(body.get("requestedAmount"))
    currency = str(body.get("requestedAmountCurrencyCode") or "")
    discount = _decimal(body.get("discount")) or Decimal(0)
    discount_currency = str(body.get("discountCurrencyCode") or currency)
    if requested is not None and discount_currency == currency:
        return quantize(requested - discount), currency
    info = body.get("balanceInfo") or {}
    old, new = _decimal(info.get("oldBalance")), _decimal(info.get("newBalance"))
    if old is not None and new is not None:
        return quantize(old - new), str(info.get("currencyCode") or currency)
    return None, ""


SENDER_SKU = "sender"  # a route whose amount is sent in the account's currency
CENT = Decimal("0.01")


def _products(operator: dict[str, Any]) -> tuple[list[UpstreamProduct], list[SkippedProduct]]:
    """What one operator sells (see the module docstring), and what it sells that we cannot,
    with why."""
    country = str((operator.get("country") or {}).get("isoName") or "").upper()
    upstream = UpstreamOperator(
        upstream_id=str(operator.get("operatorId") or operator.get("id")),
        name=str(operator.get("name") or ""),
        country=country,
    )
    denomination = str(operator.get("denominationType") or "").upper()

    def skipped(reason: str) -> tuple[list[UpstreamProduct], list[SkippedProduct]]:
        return [], [SkippedProduct(upstream, "", upstream.name, reason)]

    if denomination == "RANGE":
        return _range(operator, upstream, skipped)
    if denomination != "FIXED":
        return skipped(f"denominationType {denomination or 'missing'}")
    fixed = [_decimal(a) for a in operator.get("fixedAmounts") or []]
    local = [_decimal(a) for a in operator.get("localFixedAmounts") or []]
    rate = _decimal((operator.get("fx") or {}).get("rate"))
    sender_only = False
    if not local and operator.get("supportsLocalAmounts") and rate is not None:
        local = [quantize(a * rate) if a is not None else None for a in fixed]
    elif not local:
        # Taken only in the account's currency (``useLocalAmount: false``): the recipient
        # gets it at ``fx.rate``, "the FX rate at which the top-up will be made".
        sender_only = True
        local = [quantize(a * rate) if a is not None and rate else None for a in fixed]
    if len(local) != len(fixed):
        return skipped("localFixedAmounts do not pair with fixedAmounts")
    discount = _decimal(operator.get("internationalDiscount")) or Decimal(0)
    sender_currency = str(operator.get("senderCurrencyCode") or "")
    product_type = _kind(operator)
    descriptions = operator.get("fixedAmountsDescriptions") or {}
    local_descriptions = operator.get("localFixedAmountsDescriptions") or {}
    required = _required_fields(upstream)
    products = []
    for amount, local_amount in zip(fixed, local, strict=True):
        if amount is None or amount <= 0:
            continue
        if local_amount is None and not sender_only:
            continue
        description = _described(local_descriptions, local_amount) or _described(
            descriptions, amount
        )
        benefits, validity_days = _benefits(product_type, description, local_amount, operator)
        products.append(
            UpstreamProduct(
                operator=upstream,
                # sent by operatorId and local amount; SENDER_SKU: by the sender amount
                sku=SENDER_SKU if sender_only else "",
                product_type=product_type,
                local_amount=local_amount,
                local_currency=str(operator.get("destinationCurrencyCode") or ""),
                cost=quantize(amount * (100 - discount) / 100),
                cost_currency=sender_currency,
                send_value=amount,
                send_currency=sender_currency,
                required_fields=required,
                benefits=benefits,
                validity_days=validity_days,
                raw={
                    "operatorId": operator.get("operatorId"),
                    "fixedAmount": str(amount),
                    "localFixedAmount": None if local_amount is None else str(local_amount),
                    "useLocalAmount": not sender_only,
                    "internationalDiscount": str(discount),
                    "fxRate": None if rate is None else str(rate),
                    "description": description,
                },
            )
        )
    return products, []


def _range(
    operator: dict[str, Any], upstream: UpstreamOperator, skipped: Any
) -> tuple[list[UpstreamProduct], list[SkippedProduct]]:
    """A RANGE operator as one range route: any local amount from ``localMinAmount`` to
    ``localMaxAmount`` (else ``minAmount``/``maxAmount`` times ``fx.rate``), to the cent, sent
    as the local amount. One local unit costs ``1 / fx.rate`` of the account's currency less
    ``internationalDiscount`` percent (the FIXED amounts' rule, per unit)."""
    if not operator.get("supportsLocalAmounts"):
        return skipped("RANGE operator that takes no local amounts (supportsLocalAmounts false)")
    rate = _decimal((operator.get("fx") or {}).get("rate"))
    if rate is None or rate <= 0:
        return skipped("RANGE operator without fx.rate")
    low = _decimal(operator.get("localMinAmount"))
    high = _decimal(operator.get("localMaxAmount"))
    if low is None or high is None:
        sender_low = _decimal(operator.get("minAmount"))
        sender_high = _decimal(operator.get("maxAmount"))
        if sender_low is None or sender_high is None:
            return skipped("RANGE operator without minAmount/maxAmount")
        low, high = sender_low * rate, sender_high * rate
    low = low.quantize(CENT, rounding=ROUND_CEILING)
    high = high.quantize(CENT, rounding=ROUND_FLOOR)
    if low <= 0 or high < low:
        return skipped(f"RANGE operator with an empty range ({low} to {high})")
    discount = _decimal(operator.get("internationalDiscount")) or Decimal(0)
    sender_currency = str(operator.get("senderCurrencyCode") or "")
    product_type = _kind(operator)
    return [
        UpstreamProduct(
            operator=upstream,
            sku="",  # sent by operatorId and local amount
            product_type=product_type,
            local_amount=None,
            local_currency=str(operator.get("destinationCurrencyCode") or ""),
            cost=Decimal(0),
            cost_currency=sender_currency,
            denomination="range",
            min_amount=low,
            max_amount=high,
            step=CENT,
            cost_per_unit=((1 - discount / 100) / rate).quantize(Decimal("1e-10")),
            required_fields=_required_fields(upstream),
            raw={
                "operatorId": operator.get("operatorId"),
                "localMinAmount": str(low),
                "localMaxAmount": str(high),
                "internationalDiscount": str(discount),
                "fxRate": str(rate),
            },
        )
    ], []


def _kind(operator: dict[str, Any]) -> str:
    """The kind of product an operator sells (contract section 17, "Kinds"): a PIN operator's
    top-up is a code; a bundle operator's plans, data operator's data; else airtime."""
    if operator.get("pin"):
        return "pin"
    if operator.get("bundle"):
        return "bundle"
    if operator.get("data"):
        return "data"
    return "airtime"


def _described(descriptions: Any, amount: Decimal | None) -> str:
    """The words a descriptions map (keyed ``"5.00"``) gives one amount, or ""."""
    if not isinstance(descriptions, dict) or amount is None:
        return ""
    return str(descriptions.get(f"{amount:.2f}") or "").strip()


def _benefits(
    kind: str, description: str, local_amount: Decimal | None, operator: dict[str, Any]
) -> tuple[tuple[dict[str, Any], ...], int | None]:
    """What a data, bundle or PIN amount gives, read from its description (airtime: none)."""
    if kind == "airtime":
        return (), None
    benefits = text_benefits(description)
    if not benefits and description:
        benefits = [benefit("other", None, "", description[:200])]
    if not benefits and kind == "pin" and local_amount is not None:
        currency = str(operator.get("destinationCurrencyCode") or "")
        benefits = [benefit("credit", local_amount, currency, "")]
    return tuple(benefits), text_validity_days(description)


def _required_fields(operator: UpstreamOperator) -> tuple[str, ...]:
    """What an operator's top-ups need besides the number. The reference's ``recipientEmail``
    is "only applicable to Nauta Cuba top-ups": Cuba's Nauta operators need it. Reloadly's
    operator publishes no field saying a top-up needs ``senderPhone``, so none is asked for
    (it is sent whenever the buyer gave it)."""
    words = re.sub(r"[^a-z]+", " ", operator.name.lower()).split()
    if operator.country == "CU" and "nauta" in words:
        return ("recipientEmail",)
    return ()


def _extra_fields(fields: dict[str, str]) -> dict[str, Any]:
    """A line's fields under Reloadly's names (``POST /topups``): ``senderPhone {countryCode,
    number}`` (the number's own country, as ``recipientPhone`` is sent) and
    ``recipientEmail``; what was not given is left out."""
    body: dict[str, Any] = {}
    phone = fields.get("senderPhone")
    if phone:
        parsed = phonenumbers.parse(phone, None)
        body["senderPhone"] = {
            "countryCode": phonenumbers.region_code_for_number(parsed) or "",
            "number": phonenumbers.national_significant_number(parsed),
        }
    email = fields.get("recipientEmail")
    if email:
        body["recipientEmail"] = email
    return body


def _decimal(value: Any) -> Decimal | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _time(value: Any) -> datetime | None:
    try:
        return datetime.strptime(str(value), TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        return None


def _body(response: http.Response) -> dict[str, Any] | None:
    """The JSON object of an answer, or None when there is none to read."""
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _lookup_phone(number: str) -> str:
    """The national number's digits, trunk prefix included, as the auto-detect reference's
    example writes it (``08147658721`` for +234 814 765 8721)."""
    try:
        parsed = phonenumbers.parse(number, None)
    except phonenumbers.NumberParseException:
        return re.sub(r"\D", "", number)
    national = phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.NATIONAL)
    return re.sub(r"\D", "", national)


def _json(response: http.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {"text": response.text[:500]}
    return body if isinstance(body, dict) else {"body": body}


def _code(error_code: str | None) -> str:
    return (error_code or "upstream_rejected").lower()
