"""A local HTTP fake of DingConnect's API V1, for tests and for running the project locally.

It answers what Ding's swagger documents (see the docstring of ``upstreams.adapters.ding`` for
where that reference is): ``GET /api/V1/GetBalance``, ``GetProviders``, ``GetProducts``,
``POST /api/V1/SendTransfer`` and ``ListTransferRecords``, behind the ``api_key`` header (a
missing or wrong key answers 401 ``AuthenticationFailed``). Bodies are PascalCase with
``ResultCode`` and ``ErrorCodes``; a SendTransfer answer carries its ``TransferRecord`` on
failure as well as success; ListTransferRecords pages with ``Skip``/``Take`` and wraps each
record as ``{"TransferRecord", "ResultCode", "ErrorCodes"}``.

State: providers and products (a default seed of Mexican and Colombian operators, fixed
amounts sent in USD with a commission, plus one range product), transfers by DistributorRef,
a count of SendTransfer calls per reference (``calls``: tests prove nothing was sent twice),
and a balance that goes down by what each completed transfer costs (SendValue +
DistributorFee - commission). A second SendTransfer with a DistributorRef already held
answers ``DuplicateTransactionPrevented``, as Ding documents it.

Switches, all thread-safe:
- ``outage(True)`` closes the listening socket (connections are refused); ``outage(False)``
  listens again on the same port.
- ``refuse_next(n, code=...)`` / ``refuse_number(account, code=...)``: a documented refusal
  (a Failed transfer with that ErrorCode; ``code="ProviderTimedOut"`` is Ding's 90 s case).
- Extra fields: ``fields_product()`` (``add_product`` it) has a mandatory ``SenderName``
  setting; a SendTransfer without it in ``Settings`` answers 400 ``ParameterMissing`` with
  the setting's name as Context (the fake's reading: Ding publishes its codes only at run
  time). ``received`` keeps the last body per DistributorRef.
- Kinds: ``kinds_products()`` (``add_product`` each) are Telcel's data, bundle (Data +
  Minutes) and PIN (``RedemptionMechanism: ReadReceipt``) products, their amounts in
  ``DefaultDisplayText`` and validity in ``ValidityPeriodIso``; the default data product says
  "3GB Data, 30 Days".
- PINs (opt-in: a ``ReadReceipt`` product, e.g. ``kinds_products()``'s ``MX_TL_Pin_100``): a
  completed transfer's ``ReceiptParams`` ("name value pairs of data that is in the
  ReceiptText", TransferRecord) carry ``Pin``, ``SerialNumber`` and ``ExpiryDate`` (Ding
  publishes no names: these are the fake's, read by the adapter's usual ones), and its
  ``ReceiptText`` ("provider specific receipt text ... for the end customer") says them with
  how to redeem the PIN. Other products keep an empty receipt. ``pins`` keeps each receipt's
  params by DistributorRef.
- ``slow_next(seconds)``: the transfer is made at once, the answer comes after ``seconds``.
- ``delay``: seconds every transfer made takes to answer (made at once, answered after),
  unless ``slow_next`` says otherwise: many calls stay in flight together.
- ``pending_next(n)``: transfers stay ``Processing`` until ``complete(ref)`` (or
  ``complete(ref, state="Failed")``).
- ``cancel(ref)``: the transfer becomes ``Cancelled`` and its cost goes back to the balance.
  Ding documents no reversal state; Cancelled (after the agent's own CancelTransfers) is the
  nearest it has.
- ``success_state``: "Complete" (what the live API answers) or "Completed" (the other
  spelling in Ding's own text).
- ``answer_next(status, body, headers)``: the next SendTransfer gets exactly that answer
  (429, 503, a page of HTML, ...), and no transfer is made.
- ``seed_transfer(...)``: a transfer made earlier, for the transfer records report.
- Reconciliation: ``omit_from_reports(ref)`` leaves a transfer out of a listing not asked by
  DistributorRef (the look-up still finds it); ``misreport(ref, **fields)`` changes what the
  records say of it (``CommissionApplied=…``).

Number lookup, ``GET /api/V1/GetAccountLookup?accountNumber=`` (``GetAccountLookupResponse``:
``CountryIso``, ``AccountNumberNormalized`` (E.164 without the plus), ``Items`` of
``{ProviderCode, RegionCode}``): ``number_range(prefix, provider_code)`` gives a range of
numbers (E.164 digits) to a provider, ``port_number(number, provider_code)`` moves one number;
a number of neither answers no ``Items``, one that is not digits 400 ``AccountNumberInvalid``
(the live API's code, as the adapter's docstring says). ``lookup_delay`` (seconds before
answering), ``lookup_status`` (answer every lookup with that HTTP status and a failed
``ResultCode``) and ``lookups`` (count per number).

Run it on its own: ``python -m tests.fakes.ding --port 18612`` prints its URL and serves until
killed (api_key ``fake-ding-key`` unless ``--api-key`` says otherwise).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import secrets
import signal
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.fakes.server import KeptHandler, KeptServer

API = "/api/V1"
CENT = Decimal("0.01")
DEFAULT_API_KEY = "fake-ding-key"
DEFAULT_PORT = 18612
MAX_TAKE = 100


def _money(value: Decimal | str | int | float) -> Decimal:
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _error(code: str, context: str | None = None) -> dict[str, Any]:
    return {"Code": code, "Context": context}


def provider(
    code: str, country: str, name: str, *, short_name: str = "", regex: str = ""
) -> dict[str, Any]:
    """A GetProviders item."""
    return {
        "ProviderCode": code,
        "CountryIso": country,
        "Name": name,
        "ShortName": short_name or name,
        "ValidationRegex": regex or r"^[0-9]{8,15}$",
        "CustomerCareNumber": "",
        "RegionCodes": [country],
    }


def price(
    send: Decimal | str,
    receive: Decimal | str,
    receive_currency: str,
    *,
    send_currency: str = "USD",
    distributor_fee: Decimal | str = "0",
) -> dict[str, Any]:
    """A Price (the Minimum or Maximum of a product, or what a transfer was sold for)."""
    return {
        "CustomerFee": Decimal("0.00"),
        "DistributorFee": _money(distributor_fee),
        "ReceiveValue": Decimal(str(receive)),
        "ReceiveCurrencyIso": receive_currency,
        "ReceiveValueExcludingTax": Decimal(str(receive)),
        "TaxRate": Decimal("0"),
        "TaxName": "",
        "TaxCalculation": "",
        "SendValue": _money(send),
        "SendCurrencyIso": send_currency,
    }


def product(
    sku: str,
    provider_code: str,
    *,
    send: Decimal | str,
    receive: Decimal | str,
    receive_currency: str,
    commission_rate: Decimal | str = "5",
    benefits: Iterable[str] = ("Mobile",),
    send_currency: str = "USD",
    distributor_fee: Decimal | str = "0",
    max_send: Decimal | str | None = None,
    max_receive: Decimal | str | None = None,
    region: str = "",
    redemption: str = "Immediate",
    settings: Iterable[dict[str, Any]] = (),
    display_text: str = "",
    validity: str = "P30D",
) -> dict[str, Any]:
    """A GetProducts item: fixed-value unless ``max_send`` makes it a range."""
    low = price(
        send,
        receive,
        receive_currency,
        send_currency=send_currency,
        distributor_fee=distributor_fee,
    )
    high = price(
        max_send if max_send is not None else send,
        max_receive if max_receive is not None else receive,
        receive_currency,
        send_currency=send_currency,
        distributor_fee=distributor_fee,
    )
    return {
        "ProviderCode": provider_code,
        "SkuCode": sku,
        "LocalizationKey": sku,
        "SettingDefinitions": list(settings),
        "Maximum": high,
        "Minimum": low,
        "CommissionRate": Decimal(str(commission_rate)),
        "ProcessingMode": "Instant",
        "RedemptionMechanism": redemption,
        "Benefits": list(benefits),
        "ValidityPeriodIso": validity,
        "UatNumber": "",
        "AdditionalInformation": "",
        "DefaultDisplayText": display_text or f"{receive} {receive_currency}",
        "RegionCode": region or provider_code[-2:],
    }


def default_providers() -> list[dict[str, Any]]:
    return [
        provider("TLMX", "MX", "Telcel Mexico", short_name="Telcel", regex=r"^521?[0-9]{10}$"),
        provider("ATMX", "MX", "AT&T Mexico", short_name="AT&T", regex=r"^521?[0-9]{10}$"),
        provider("CLCO", "CO", "Claro Colombia", short_name="Claro", regex=r"^57[0-9]{10}$"),
        provider("MVCO", "CO", "Movistar Colombia", short_name="Movistar", regex=r"^57[0-9]{10}$"),
    ]


def default_products() -> list[dict[str, Any]]:
    return [
        product("MX_TL_TopUp_100", "TLMX", send="6.00", receive="100", receive_currency="MXN"),
        product("MX_TL_TopUp_200", "TLMX", send="11.50", receive="200", receive_currency="MXN"),
        product(
            "MX_TL_Data_3GB",
            "TLMX",
            send="8.40",
            receive="150",
            receive_currency="MXN",
            benefits=("Data",),
            display_text="3GB Data, 30 Days",
        ),
        product(  # a range product: any SendValue from 1.20 to 28.00
            "MX_TL_TopUp_Range",
            "TLMX",
            send="1.20",
            receive="20",
            receive_currency="MXN",
            max_send="28.00",
            max_receive="500",
        ),
        product(
            "MX_AT_TopUp_100",
            "ATMX",
            send="6.10",
            receive="100",
            receive_currency="MXN",
            commission_rate="4",
            distributor_fee="0.10",
        ),
        product("CO_CL_TopUp_10000", "CLCO", send="2.80", receive="10000", receive_currency="COP"),
        product(
            "CO_MV_TopUp_20000",
            "MVCO",
            send="5.50",
            receive="20000",
            receive_currency="COP",
            commission_rate="6",
        ),
    ]


def kinds_products() -> list[dict[str, Any]]:
    """Telcel's data, bundle and PIN products (contract section 17, "Kinds"), to
    ``add_product``: Ding names what a product gives in ``Benefits``, says the amounts only in
    ``DefaultDisplayText`` and the validity in ``ValidityPeriodIso``; a PIN is redeemed from
    the receipt (``RedemptionMechanism: ReadReceipt``)."""
    return [
        product(
            "MX_TL_Data_5GB",
            "TLMX",
            send="11.20",
            receive="200",
            receive_currency="MXN",
            benefits=("Data",),
            display_text="5GB Data, 15 Days",
            validity="P15D",
        ),
        product(
            "MX_TL_Bundle_250",
            "TLMX",
            send="13.90",
            receive="250",
            receive_currency="MXN",
            benefits=("Data", "Minutes"),
            display_text="6GB + 200 Minutes",
            validity="P1M",
        ),
        product(
            "MX_TL_Pin_100",
            "TLMX",
            send="5.90",
            receive="100",
            receive_currency="MXN",
            benefits=("Mobile",),
            redemption="ReadReceipt",
            display_text="Telcel PIN 100 MXN",
            validity="P180D",
        ),
    ]


def receipt_params(item: dict[str, Any], now: datetime) -> dict[str, str]:
    """A ReadReceipt product's receipt: a random PIN, its serial, and when it expires (the
    product's ``ValidityPeriodIso`` in days, else 30 days)."""
    days = re.fullmatch(r"P(\d+)D", str(item.get("ValidityPeriodIso") or ""))
    expiry = (now + timedelta(days=int(days.group(1)) if days else 30)).date()
    return {
        "Pin": "".join(secrets.choice("0123456789") for _ in range(16)),
        "SerialNumber": "".join(secrets.choice("0123456789") for _ in range(12)),
        "ExpiryDate": expiry.isoformat(),
    }


def setting(name: str, description: str = "", *, mandatory: bool = True) -> dict[str, Any]:
    """A SettingDefinition: a name to send back in SendTransfer's ``Settings``."""
    return {"Name": name, "Description": description or name, "IsMandatory": mandatory}


def fields_product() -> dict[str, Any]:
    """A Telcel 500 MXN top-up with a mandatory ``SenderName`` setting (and an optional
    ``RecipientEmail``)."""
    return product(
        "MX_TL_TopUp_500_Sender",
        "TLMX",
        send="27.50",
        receive="500",
        receive_currency="MXN",
        settings=[
            setting("SenderName", "The name of the person sending the top-up"),
            setting("RecipientEmail", "Where the receipt is sent", mandatory=False),
        ],
    )


class FakeDing:
    def __init__(
        self,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        api_key: str = DEFAULT_API_KEY,
        balance: Decimal | str = "1000.00",
        currency: str = "USD",
        seed: bool = True,
    ) -> None:
        self.lock = threading.RLock()
        self.host = host
        self.port = port
        self.api_key = api_key
        self.balance = _money(balance)
        self.currency = currency
        self.providers: dict[str, dict[str, Any]] = {}
        self.products: dict[str, dict[str, Any]] = {}
        self.transfers: dict[str, dict[str, Any]] = {}  # TransferRecord by DistributorRef
        self.transfer_errors: dict[str, list[dict[str, Any]]] = {}
        self.calls: Counter[str] = Counter()  # SendTransfer calls per DistributorRef
        self.received: dict[str, dict[str, Any]] = {}  # the last SendTransfer body per ref
        self.pins: dict[str, dict[str, str]] = {}  # a ReadReceipt transfer's params, by ref
        self.lookups: Counter[str] = Counter()  # ListTransferRecords calls by DistributorRef
        self.omitted: set[str] = set()  # left out of a listing not asked by DistributorRef
        self.success_state = "Complete"
        self.clock: Callable[[], datetime] = lambda: datetime.now(UTC)
        self._refusals: deque[tuple[str, int]] = deque()
        self._refuse_numbers: dict[str, tuple[str, int]] = {}
        self._slow: deque[float] = deque()
        self.delay = 0.0  # seconds every transfer made takes to answer
        self._pending = 0
        self._answers: deque[tuple[int, Any, dict[str, str]]] = deque()
        self.ranges: dict[str, str] = {}  # E.164 digit prefix -> ProviderCode
        self.ported: dict[str, str] = {}  # E.164 digits -> ProviderCode
        self.lookup_delay = 0.0
        self.lookup_status: int | None = None
        self.lookups: Counter[str] = Counter()
        self._refs = itertools.count(863000001)
        self._server: KeptServer | None = None
        self._life = threading.Lock()
        if seed:
            for item in default_providers():
                self.add_provider(item)
            for item in default_products():
                self.add_product(item)

    # -- life -----------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> FakeDing:
        with self._life:
            if self._server is None:
                self._listen()
        return self

    def stop(self) -> None:
        with self._life:
            if self._server is not None:
                self._close()

    def outage(self, on: bool = True) -> None:
        """Really stop listening (connections are refused), or listen again on the same port."""
        with self._life:
            if on and self._server is not None:
                self._close()
            elif not on and self._server is None:
                self._listen()

    def _listen(self) -> None:
        server = KeptServer((self.host, self.port), _handler(self))
        self.port = server.server_address[1]
        self._server = server
        threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-ding",
            daemon=True,
        ).start()

    def _close(self) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
        self._server = None

    # -- catalog --------------------------------------------------------------------------
    def number_range(self, prefix: str, provider_code: str) -> None:
        """Numbers starting with ``prefix`` (E.164 digits) were given to ``provider_code``."""
        self.ranges[prefix.lstrip("+")] = provider_code

    def port_number(self, number: str, provider_code: str) -> None:
        """``number`` (E.164) is with ``provider_code`` now, whatever its range."""
        self.ported[number.lstrip("+")] = provider_code

    def _account_lookup(self, query: dict[str, list[str]]) -> tuple[int, Any]:
        digits = (query.get("accountnumber") or [""])[0].strip().lstrip("+")
        if not re.fullmatch(r"[0-9]{6,15}", digits):
            return 400, {
                "ResultCode": 3,
                "ErrorCodes": [_error("AccountNumberInvalid", "accountNumber")],
                "Items": [],
            }
        with self.lock:
            self.lookups[f"+{digits}"] += 1
        if self.lookup_delay:
            time.sleep(self.lookup_delay)  # the provider's latency, simulated
        if self.lookup_status is not None:
            return self.lookup_status, {
                "ResultCode": 2,
                "ErrorCodes": [_error("ProviderError")],
                "Items": [],
            }
        with self.lock:
            code = self.ported.get(digits)
            if code is None:
                prefixes = [p for p in self.ranges if digits.startswith(p)]
                code = self.ranges[max(prefixes, key=len)] if prefixes else None
            provider = self.providers.get(code or "")
        if provider is None:
            return 200, {
                "CountryIso": "",
                "AccountNumberNormalized": digits,
                "Items": [],
                "ResultCode": 1,
                "ErrorCodes": [],
            }
        return 200, {
            "CountryIso": provider["CountryIso"],
            "AccountNumberNormalized": digits,
            "Items": [
                {"ProviderCode": provider["ProviderCode"], "RegionCode": provider["CountryIso"]}
            ],
            "ResultCode": 1,
            "ErrorCodes": [],
        }

    def add_provider(self, item: dict[str, Any]) -> None:
        with self.lock:
            self.providers[item["ProviderCode"]] = item

    def add_product(self, item: dict[str, Any]) -> None:
        with self.lock:
            self.products[item["SkuCode"]] = item

    def clear_catalog(self) -> None:
        with self.lock:
            self.providers.clear()
            self.products.clear()

    # -- switches -------------------------------------------------------------------------
    def refuse_next(self, n: int = 1, *, code: str = "ProviderError", status: int = 400) -> None:
        """The next ``n`` transfers fail at the operator: a Failed record with ``code``."""
        with self.lock:
            self._refusals.extend([(code, status)] * n)

    def refuse_number(
        self, account_number: str, *, code: str = "RechargeNotAllowed", status: int = 400
    ) -> None:
        """Every transfer to ``account_number`` (Ding's form: digits, no '+') fails."""
        with self.lock:
            self._refuse_numbers[account_number] = (code, status)

    def slow_next(self, seconds: float, n: int = 1) -> None:
        with self.lock:
            self._slow.extend([seconds] * n)

    def pending_next(self, n: int = 1) -> None:
        with self.lock:
            self._pending += n

    def answer_next(
        self, status: int, body: Any = None, headers: dict[str, str] | None = None
    ) -> None:
        """The next SendTransfer gets this answer verbatim and makes no transfer. ``body``:
        a dict (sent as JSON), a str (sent as is), or None (``{}``)."""
        with self.lock:
            self._answers.append((status, body if body is not None else {}, headers or {}))

    def complete(self, reference: str, *, state: str | None = None) -> None:
        """Settle a pending transfer: delivered (``success_state``) unless ``state`` says
        otherwise (e.g. "Failed")."""
        with self.lock:
            record = self.transfers[reference]
            state = state or self.success_state
            record["CompletedUtc"] = _utc(self.clock())
            if state in ("Complete", "Completed"):
                self._deliver(record)
            else:
                record["ProcessingState"] = state
                self.transfer_errors[reference] = [_error("ProviderError")]

    def cancel(self, reference: str) -> None:
        """The transfer is cancelled and what it cost goes back to the balance."""
        with self.lock:
            record = self.transfers[reference]
            if record["ProcessingState"] in ("Complete", "Completed"):
                self.balance += self._cost(record)
            record["ProcessingState"] = "Cancelled"

    def seed_transfer(
        self,
        reference: str,
        *,
        sku: str = "MX_TL_TopUp_100",
        account_number: str = "525512345678",
        started: datetime | None = None,
        state: str | None = None,
    ) -> dict[str, Any]:
        """A transfer made earlier (the balance is left as it is)."""
        with self.lock:
            item = self.products[sku]
            started = started or self.clock()
            record = self._record(
                reference, item, item["Maximum"]["SendValue"], account_number, started
            )
            record["ProcessingState"] = state or self.success_state
            record["CompletedUtc"] = _utc(started)
            if record["ProcessingState"] in ("Complete", "Completed"):
                record["CommissionApplied"] = self._commission(item, record)
            self.transfers[reference] = record
            return record

    def omit_from_reports(self, reference: str) -> None:
        with self.lock:
            self.omitted.add(reference)

    def misreport(self, reference: str, **fields: Any) -> None:
        with self.lock:
            self.transfers[reference].update(fields)

    # -- the transfer ---------------------------------------------------------------------
    def _commission(self, item: dict[str, Any], record: dict[str, Any]) -> Decimal:
        return _money(record["Price"]["SendValue"] * item["CommissionRate"] / 100)

    def _cost(self, record: dict[str, Any]) -> Decimal:
        sent = record["Price"]["SendValue"] + record["Price"]["DistributorFee"]
        return _money(sent - record["CommissionApplied"])

    def _deliver(self, record: dict[str, Any]) -> None:
        item = self.products[record["SkuCode"]]
        record["ProcessingState"] = self.success_state
        record["CommissionApplied"] = self._commission(item, record)
        self.balance -= self._cost(record)
        if item["RedemptionMechanism"] == "ReadReceipt" and not record["ReceiptParams"]:
            params = receipt_params(item, self.clock())
            record["ReceiptParams"] = self.pins[record["TransferId"]["DistributorRef"]] = params
            record["ReceiptText"] = (
                f"PIN: {params['Pin']}. Serial: {params['SerialNumber']}. "
                f"Valid until {params['ExpiryDate']}. Dial *133*{params['Pin']}# to top up."
            )

    def _record(
        self,
        reference: str,
        item: dict[str, Any],
        send: Decimal,
        account_number: str,
        started: datetime,
        *,
        transfer_ref: bool = True,
    ) -> dict[str, Any]:
        low, high = item["Minimum"], item["Maximum"]
        receive = low["ReceiveValue"]
        if high["SendValue"] != low["SendValue"]:
            span = (send - low["SendValue"]) / (high["SendValue"] - low["SendValue"])
            receive = _money(
                low["ReceiveValue"] + span * (high["ReceiveValue"] - low["ReceiveValue"])
            )
        sold = dict(high, SendValue=send, ReceiveValue=receive, ReceiveValueExcludingTax=receive)
        return {
            "TransferId": {
                "TransferRef": str(next(self._refs)) if transfer_ref else None,
                "DistributorRef": reference,
            },
            "SkuCode": item["SkuCode"],
            "Price": sold,
            "CommissionApplied": Decimal("0.00"),
            "StartedUtc": _utc(started),
            "CompletedUtc": None,
            "ProcessingState": "Submitted",
            "ReceiptText": "",
            "ReceiptParams": {},
            "AccountNumber": account_number,
        }

    def _send_transfer(self, body: Any) -> tuple[int, Any, dict[str, str], float]:
        """(status, body, headers, seconds to wait before answering)."""
        with self.lock:
            reference = str(body.get("DistributorRef") or "") if isinstance(body, dict) else ""
            if reference:
                self.calls[reference] += 1
                self.received[reference] = body
            if self._answers:
                status, answer, headers = self._answers.popleft()
                return status, answer, headers, 0.0
            if not isinstance(body, dict):
                return 400, _refused(4, _error("RequestInvalid")), {}, 0.0
            for field in (
                "SkuCode",
                "SendValue",
                "AccountNumber",
                "DistributorRef",
                "ValidateOnly",
            ):
                if body.get(field) in (None, ""):
                    return 400, _refused(4, _error("ParameterMissing", field)), {}, 0.0
            if reference in self.transfers:
                return 400, _refused(5, _error("DuplicateTransactionPrevented")), {}, 0.0
            item = self.products.get(str(body["SkuCode"]))
            if item is None:
                return 400, _refused(4, _error("ParameterInvalid", "SkuCode")), {}, 0.0
            given = body.get("Settings") or []
            if not isinstance(given, list) or not all(
                isinstance(g, dict) and isinstance(g.get("Name"), str) for g in given
            ):
                return 400, _refused(4, _error("ParameterInvalid", "Settings")), {}, 0.0
            values = {g["Name"]: g.get("Value") for g in given}
            for definition in item["SettingDefinitions"]:
                if definition["IsMandatory"] and not values.get(definition["Name"]):
                    error = _error("ParameterMissing", definition["Name"])
                    return 400, _refused(4, error), {}, 0.0
            try:
                send = _money(body["SendValue"])
            except ArithmeticError:
                return 400, _refused(4, _error("ParameterInvalid", "SendValue")), {}, 0.0
            if not item["Minimum"]["SendValue"] <= send <= item["Maximum"]["SendValue"]:
                return 400, _refused(4, _error("ParameterOutOfRange", "SendValue")), {}, 0.0
            currency = body.get("SendCurrencyIso") or self.currency
            if currency != item["Maximum"]["SendCurrencyIso"]:
                return 400, _refused(4, _error("ParameterInvalid", "SendCurrencyIso")), {}, 0.0
            account = str(body["AccountNumber"])
            regex = self.providers[item["ProviderCode"]]["ValidationRegex"]
            if not re.fullmatch(regex, account):
                error = _error("AccountNumberInvalid", "AccountNumberFailedRegex")
                return 400, _refused(4, error), {}, 0.0
            record = self._record(
                reference, item, send, account, self.clock(), transfer_ref=not body["ValidateOnly"]
            )
            if body["ValidateOnly"] is True:
                record["ProcessingState"] = self.success_state
                return 200, _sent(record), {}, 0.0
            cost = _money(send + item["Maximum"]["DistributorFee"] - self._commission(item, record))
            if cost > self.balance:
                # What the live API does: HTTP 500 for a refusal that is not transient.
                record["ProcessingState"] = "Failed"
                answer = _sent(record, 5, [_error("InsufficientBalance")])
                return 500, answer, {}, 0.0
            refusal = self._refuse_numbers.get(account)
            if refusal is None and self._refusals:
                refusal = self._refusals.popleft()
            if refusal is not None:
                code, status = refusal
                record["ProcessingState"] = "Failed"
                record["CompletedUtc"] = _utc(self.clock())
                self.transfers[reference] = record
                self.transfer_errors[reference] = [_error(code)]
                return status, _sent(record, 5, [_error(code)]), {}, 0.0
            self.transfers[reference] = record
            if self._pending:
                self._pending -= 1
                record["ProcessingState"] = "Processing"
            else:
                record["CompletedUtc"] = _utc(self.clock())
                self._deliver(record)
            wait = self._slow.popleft() if self._slow else self.delay
            return 200, _sent(record), {}, wait

    def _list_transfer_records(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict):
            return 400, _refused(4, _error("RequestInvalid"))
        take, skip = body.get("Take"), body.get("Skip") or 0
        if not isinstance(take, int) or not 1 <= take <= MAX_TAKE:
            return 400, _refused(4, _error("ParameterOutOfRange", "Take"))
        if not isinstance(skip, int) or skip < 0:
            return 400, _refused(4, _error("ParameterOutOfRange", "Skip"))
        with self.lock:
            wanted = {
                key: body[key]
                for key in ("DistributorRef", "TransferRef", "AccountNumber")
                if body.get(key)
            }
            if "DistributorRef" in wanted:
                self.lookups[wanted["DistributorRef"]] += 1
            held = {
                "DistributorRef": lambda r: r["TransferId"]["DistributorRef"],
                "TransferRef": lambda r: r["TransferId"]["TransferRef"],
                "AccountNumber": lambda r: r["AccountNumber"],
            }
            found = [
                (key, record)
                for key, record in self.transfers.items()
                if all(held[name](record) == value for name, value in wanted.items())
                and ("DistributorRef" in wanted or key not in self.omitted)
            ]
            found.sort(key=lambda pair: pair[1]["StartedUtc"], reverse=True)  # newest first
            page = found[skip : skip + take]
            items = []
            for ref, record in page:
                errors = list(self.transfer_errors.get(ref, []))
                failed = record["ProcessingState"] in ("Failed", "Cancelled")
                items.append(
                    {
                        "TransferRecord": json.loads(json.dumps(record, default=_json_default)),
                        "ResultCode": 5 if failed and errors else 1,
                        "ErrorCodes": errors,
                    }
                )
            return 200, {
                "ResultCode": 1,
                "ErrorCodes": [],
                "Items": items,
                "ThereAreMoreItems": skip + take < len(found),
            }

    def _get(self, operation: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        def wanted(name: str) -> set[str] | None:
            values = [v for value in query.get(name.lower(), []) for v in value.split(",") if v]
            return set(values) or None

        with self.lock:
            if operation == "GetBalance":
                return 200, {
                    "Balance": self.balance,
                    "CurrencyIso": self.currency,
                    "ResultCode": 1,
                    "ErrorCodes": [],
                }
            countries, codes = wanted("countryIsos"), wanted("providerCodes")
            providers = [
                p
                for p in self.providers.values()
                if (countries is None or p["CountryIso"] in countries)
                and (codes is None or p["ProviderCode"] in codes)
            ]
            if operation == "GetProviders":
                return 200, {"ResultCode": 1, "ErrorCodes": [], "Items": providers}
            if operation == "GetProducts":
                in_scope = {p["ProviderCode"] for p in providers}
                skus, benefits = wanted("skuCodes"), wanted("benefits")
                items = [
                    p
                    for p in self.products.values()
                    if p["ProviderCode"] in in_scope
                    and (skus is None or p["SkuCode"] in skus)
                    and (benefits is None or benefits & set(p["Benefits"]))
                ]
                return 200, {"ResultCode": 1, "ErrorCodes": [], "Items": items}
        return 404, {"Message": f"No HTTP resource was found for {operation}"}


def _sent(
    record: dict[str, Any], result_code: int = 1, errors: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"TransferRecord": record, "ResultCode": result_code, "ErrorCodes": errors or []}


def _refused(result_code: int, *errors: dict[str, Any]) -> dict[str, Any]:
    return {"TransferRecord": None, "ResultCode": result_code, "ErrorCodes": list(errors)}


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _handler(fake: FakeDing) -> type[KeptHandler]:
    class Handler(KeptHandler):
        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

        def _answer(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            if isinstance(body, str):
                data, kind = body.encode(), "text/html"
            else:
                data, kind = json.dumps(body, default=_json_default).encode(), "application/json"
            self.send_response(status)
            self.send_header("Content-Type", f"{kind}; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

        def _operation(self) -> tuple[str, dict[str, list[str]]] | None:
            url = urlparse(self.path)
            if not url.path.lower().startswith(API.lower() + "/"):
                return None
            query = {k.lower(): v for k, v in parse_qs(url.query).items()}
            return url.path[len(API) + 1 :], query

        def _authorised(self) -> bool:
            if self.headers.get("api_key") == fake.api_key:
                return True
            self._answer(401, {"ResultCode": 4, "ErrorCodes": [_error("AuthenticationFailed")]})
            return False

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length)
            if len(data) < length:
                return None  # cut short: Ding acts on no half a request
            try:
                return json.loads(data or b"null")
            except ValueError:
                return None

        def do_GET(self) -> None:
            found = self._operation()
            if found is None:
                return self._answer(404, {"Message": "not found"})
            if not self._authorised():
                return None
            operation, query = found
            if operation == "GetAccountLookup":
                status, body = fake._account_lookup(query)
                return self._answer(status, body)
            status, body = fake._get(operation, query)
            return self._answer(status, body)

        def do_POST(self) -> None:
            found = self._operation()
            if found is None:
                return self._answer(404, {"Message": "not found"})
            body = self._body()
            if not self._authorised():
                return None
            operation, _ = found
            if operation == "SendTransfer":
                status, answer, headers, wait = fake._send_transfer(body)
                if wait:
                    time.sleep(wait)  # the provider's latency, simulated: the point of the fake
                return self._answer(status, answer, headers)
            if operation == "ListTransferRecords":
                status, answer = fake._list_transfer_records(body)
                return self._answer(status, answer)
            return self._answer(404, {"Message": f"No HTTP resource was found for {operation}"})

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A local fake of DingConnect's API V1.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--api-key", default=DEFAULT_API_KEY)
    parser.add_argument("--balance", default="1000.00")
    args = parser.parse_args(argv)
    fake = FakeDing(host=args.host, port=args.port, api_key=args.api_key, balance=args.balance)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    fake.start()
    print(fake.url, flush=True)
    print(f"api_key: {fake.api_key}", file=sys.stderr, flush=True)
    try:
        while not stopping.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
