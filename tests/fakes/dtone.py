"""A local HTTP fake of DT One's Digital Value Services (DVS) API, on 127.0.0.1.

It follows DT One's public OpenAPI description of DVS (repository ``voxgig-sdk/dtone-sdk``,
file ``.sdk/def/dtone-dvs-openapi.json``) for what the adapter uses, under ``/v1``:
``GET /products`` (and ``/products/{id}``), ``POST /async/transactions``, ``GET
/transactions`` (and ``/transactions/{id}``) and ``GET /balances``. HTTP Basic auth (a wrong
pair is 401 with error ``1000401``); errors as ``{"errors": [{"code", "message"}]}`` with the
reference's codes and HTTP statuses; lists paged by ``page``/``per_page`` with the ``X-Total``,
``X-Total-Pages``, ``X-Per-Page``, ``X-Page``, ``X-Next-Page`` and ``X-Prev-Page`` headers;
transactions with ``status {id, message, class {id, message}}`` (the class ids DT One
publishes; the fake numbers the finer statuses itself, DT One does not publish theirs).

It keeps what DT One keeps: products (``products``, seedable; ``default_products()`` sells a
few fixed amounts of Telcel and AT&T Mexico in MXN and of Claro and Movistar Colombia in COP,
priced wholesale in USD plus a fee), transactions by external id, a count of POSTs per
external id (``calls``: tests prove nothing was sent twice), and balances that move as DT One
documents (CREATED holds wholesale + fee, COMPLETED captures it, DECLINED/REJECTED void it,
REVERSED gives it back).

By default a transaction is created, confirmed and COMPLETED within the POST (the answer says
COMPLETED). Switches:
- ``outage(True)`` closes the listening socket (connections are refused); ``outage(False)``
  listens again on the same port.
- ``refuse(count, number=..., status=...)``: the next ``count`` sends (or every send to
  ``number``) make a transaction that is refused at once (default
  ``DECLINED-INVALID-CREDIT-PARTY``; a ``REJECTED-...`` status works too).
- ``error_next(code, count, after_creating=False)``: the next sends answer one of the
  reference's error codes (``1005003``, ``1006001``, ``1000429``, ``1009503``...);
  ``after_creating`` makes (and completes) the transaction first, as a server that failed
  while answering. ``fail_lookups(count, code)`` does the same to ``GET /transactions``.
- Extra fields: ``fields_product()`` (add it to ``products``) wants the sender's first and
  last name and mobile number and the beneficiary's names; a send without them is 400
  ``1000400`` (the reference has no finer code), a malformed sender or beneficiary mobile
  number ``1005503`` / ``1006503``. A transaction keeps the ``sender`` and ``beneficiary``
  it was sent; ``bodies`` has every body.
- Kinds: ``kinds_products()`` (add them to ``products``) are Telcel's Data and Bundle
  products with ``benefits`` (a promotion bonus, minutes, unlimited SMS) and ``validity``,
  and a FIXED_VALUE_PIN_PURCHASE with its ``pin``; ``benefit(...)`` shapes one benefit.
- PINs (opt-in: a ``FIXED_VALUE_PIN_PURCHASE`` or ``RANGED_VALUE_PIN_PURCHASE`` product):
  its transaction, once COMPLETED, carries ``pin`` ``{"code", "serial"}`` (the reference's
  Transaction schema: two non-empty strings; null before completion and for other products),
  and its ``product`` the product's ``pin`` (``usage_info``, ``validity``, ``terms``), as the
  reference's sandbox answers "COMPLETED (PIN-based)". ``pins`` keeps each code by external id.
- ``slow_next(seconds)``: the next send creates and completes its transaction, then answers
  after ``seconds`` (a client with a shorter timeout gives up).
- ``delay``: seconds every send that makes a transaction takes to answer (after making it),
  unless ``slow_next`` says otherwise: many calls stay in flight together.
- ``async_completion(True, delay=None)``: transactions stay SUBMITTED until ``complete(id)``
  (or ``complete(id, "DECLINED-...")``), or until ``delay`` seconds have passed.
- ``reverse(external_id)``: a COMPLETED transaction becomes REVERSED.
When a transaction reaches COMPLETED, DECLINED or REVERSED and has a ``callback_url``, the fake
POSTs the transaction object there (retrying a few times until answered 2XX), as DT One does.
Reconciliation: ``omit_from_reports(external_id)`` leaves a transaction out of the date-window
report (the look-up by external id still finds it); ``misreport(external_id, **fields)``
replaces fields of what the report shows (``prices=…``).
``add_transaction(...)`` seeds past transactions (for the report, ``GET /transactions`` with
``from_date``/``to_date``: full date-times, both inclusive, at most 24 hours apart).

Number lookup, ``POST /lookup/mobile-number`` with ``{"mobile_number": <E.164>}`` (the
reference's "Mobile Number" look-up): a list of operators ``{id, name, country, regions,
identified}``: the number's operator with ``identified: true``, then the other operators of
its country with ``identified: false``. ``number_range(prefix, operator_id)`` gives a range of
E.164 numbers (digits) to an operator, ``port_number(number, operator_id)`` moves one number;
a number of neither answers ``[]``, one that is not E.164 400 ``1005003``. ``lookup_delay``
(seconds before answering), ``lookup_error`` (answer every lookup with that error code) and
``lookups`` (count per number).

Choices the reference leaves open: ``GET /transactions?external_id=`` of an unknown id answers
404 ``1008004`` (the reference lists that 404 for the list), a date window with nothing in it
answers ``[]``; a send beyond the available balance answers 400 ``1006001``.

Standalone: ``python -m tests.fakes.dtone --port 18611`` prints its URL (ending in ``/v1``) and
serves until killed; API key ``dtone-key``, secret ``dtone-secret`` unless told otherwise.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import itertools
import json
import math
import re
import secrets
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, urlparse

from tests.fakes.server import KeptHandler, KeptServer

API_KEY = "dtone-key"
API_SECRET = "dtone-secret"

CLASS_IDS = {
    "CREATED": 1,
    "CONFIRMED": 2,
    "REJECTED": 3,
    "CANCELLED": 4,
    "SUBMITTED": 5,
    "COMPLETED": 7,
    "REVERSED": 8,
    "DECLINED": 9,
}
# Every status the reference lists, by class (the fake's numbering: class id * 10000 + n).
STATUSES = {
    "REJECTED": [
        "REJECTED",
        "REJECTED-INVALID-CREDIT-PARTY",
        "REJECTED-BARRED-CREDIT-PARTY",
        "REJECTED-INELIGIBLE-CREDIT-PARTY",
        "REJECTED-INVALID-DEBIT-PARTY",
        "REJECTED-BARRED-DEBIT-PARTY",
        "REJECTED-LIMITATIONS-ON-CREDIT-PARTY-AMOUNT",
        "REJECTED-LIMITATIONS-ON-CREDIT-PARTY-QUANTITY",
        "REJECTED-OPERATOR-CURRENTLY-UNAVAILABLE",
        "REJECTED-INSUFFICIENT-BALANCE",
    ],
    "DECLINED": [
        "DECLINED",
        "DECLINED-INVALID-CREDIT-PARTY",
        "DECLINED-BARRED-CREDIT-PARTY",
        "DECLINED-INELIGIBLE-CREDIT-PARTY",
        "DECLINED-INVALID-DEBIT-PARTY",
        "DECLINED-BARRED-DEBIT-PARTY",
        "DECLINED-LIMITATIONS-ON-OPERATOR-AMOUNT",
        "DECLINED-LIMITATIONS-ON-CREDIT-PARTY-AMOUNT",
        "DECLINED-LIMITATIONS-ON-CUSTOMER-AMOUNT",
        "DECLINED-LIMITATIONS-ON-OPERATOR-QUANTITY",
        "DECLINED-LIMITATIONS-ON-CREDIT-PARTY-QUANTITY",
        "DECLINED-LIMITATIONS-ON-CUSTOMER-QUANTITY",
        "DECLINED-DUPLICATED-TRANSACTION",
        "DECLINED-OPERATOR-CURRENTLY-UNAVAILABLE",
    ],
}
FAILED_CLASSES = {"REJECTED", "CANCELLED", "DECLINED"}
# The reference's error codes: HTTP status and message.
ERRORS = {
    1000400: (400, "Bad Request"),
    1000401: (401, "Unauthorized"),
    1000404: (404, "Resource not found"),
    1000429: (429, "Too many requests"),
    1003001: (404, "Product is not available in your account"),
    1003002: (400, "Requested product amount is out of range"),
    1003003: (400, "Requested product unit is invalid"),
    1005003: (400, "Credit party mobile number is invalid"),
    1005004: (404, "Service not found"),
    1005005: (404, "Country not found"),
    1005006: (404, "Operator not found"),
    1006001: (400, "Insufficient balance"),
    1006009: (404, "Account balance not found"),
    1007001: (400, "Transaction external ID has already been used"),
    1007500: (400, "Method not supported by operator"),
    1008004: (404, "Transaction not found"),
    1009001: (500, "Unexpected error, please contact our support team"),
    1009503: (503, "Service unavailable, please retry later"),
}
E164 = re.compile(r"^\+[1-9][0-9]{6,14}$")
ALPHA3 = re.compile(r"^[A-Z]{3}$")


def status_object(message: str) -> dict[str, Any]:
    klass = message.split("-")[0]
    in_class = STATUSES.get(klass, [klass])
    number = in_class.index(message) if message in in_class else 0
    return {
        "id": CLASS_IDS[klass] * 10000 + number,
        "message": message,
        "class": {"id": CLASS_IDS[klass], "message": klass},
    }


def timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def fixed_product(
    *,
    id: int,
    operator_id: int,
    operator_name: str,
    country_iso: str,
    country_name: str,
    amount: float,
    unit: str,
    wholesale: float,
    fee: float,
    wholesale_unit: str = "USD",
    subservice: tuple[int, str] = (11, "Airtime"),
    data_gb: float | None = None,
    service: tuple[int, str] = (1, "Mobile"),
    **extra: Any,
) -> dict[str, Any]:
    """A FIXED_VALUE_RECHARGE product as the reference's schema shapes it."""
    if data_gb is None:
        benefit = {
            "type": "CREDITS",
            "unit_type": "CURRENCY",
            "unit": unit,
            "amount": {
                "base": amount,
                "promotion_bonus": 0,
                "total_excluding_tax": amount,
                "total_including_tax": amount,
            },
            "additional_information": None,
        }
        name = f"{operator_name} {amount:g} {unit}"
    else:
        benefit = {
            "type": "DATA",
            "unit_type": "DATA",
            "unit": "GB",
            "amount": {
                "base": data_gb,
                "promotion_bonus": 0,
                "total_excluding_tax": data_gb,
                "total_including_tax": data_gb,
            },
            "additional_information": None,
        }
        name = f"{operator_name} {data_gb:g} GB"
    country = {"name": country_name, "iso_code": country_iso, "regions": None}
    product: dict[str, Any] = {
        "id": id,
        "name": name,
        "description": name,
        "tags": None,
        "service": {
            "id": service[0],
            "name": service[1],
            "subservice": {"id": subservice[0], "name": subservice[1]},
        },
        "operator": {"id": operator_id, "name": operator_name, "country": country, "regions": None},
        "regions": None,
        "type": "FIXED_VALUE_RECHARGE",
        "validity": None,
        "required_debit_party_identifier_fields": None,
        "required_credit_party_identifier_fields": [["mobile_number"]],
        "required_sender_fields": None,
        "required_beneficiary_fields": None,
        "required_statement_identifier_fields": None,
        "required_additional_identifier_fields": None,
        "availability_zones": ["INTERNATIONAL"],
        "source": {"unit_type": "CURRENCY", "unit": wholesale_unit, "amount": wholesale},
        "destination": {"unit_type": "CURRENCY", "unit": unit, "amount": amount},
        "prices": {
            "wholesale": {
                "unit_type": "CURRENCY",
                "unit": wholesale_unit,
                "amount": wholesale,
                "fee": fee,
            },
            "retail": None,
        },
        "rates": {
            "base": round(amount / wholesale, 6),
            "wholesale": round(amount / wholesale, 6),
            "retail": None,
        },
        "benefits": [benefit],
        "promotions": None,
    }
    product.update(extra)
    return product


def ranged_product(
    *,
    id: int,
    operator_id: int,
    operator_name: str,
    country_iso: str,
    country_name: str,
    unit: str,
    minimum: float,
    maximum: float,
    rate: float,
    fee: float,
    increment: float = 0.01,
    wholesale_unit: str = "USD",
    **extra: Any,
) -> dict[str, Any]:
    """A RANGED_VALUE_RECHARGE product as the reference's schema shapes it: the recipient gets
    any ``destination.amount`` from ``min`` to ``max`` in steps of ``increment``; it costs that
    amount over ``rates.wholesale`` plus ``prices.wholesale.fee``."""
    base = fixed_product(
        id=id,
        operator_id=operator_id,
        operator_name=operator_name,
        country_iso=country_iso,
        country_name=country_name,
        amount=minimum,
        unit=unit,
        wholesale=round(minimum / rate, 2),
        fee=fee,
        wholesale_unit=wholesale_unit,
    )
    low, high = round(minimum / rate, 2), round(maximum / rate, 2)
    span = {"min": minimum, "max": maximum}
    base.update(
        {
            "name": f"{operator_name} {minimum:g}-{maximum:g} {unit}",
            "type": "RANGED_VALUE_RECHARGE",
            "accepted_calculation_modes": ["SOURCE_AMOUNT", "DESTINATION_AMOUNT"],
            "source": {
                "unit_type": "CURRENCY",
                "unit": wholesale_unit,
                "amount": {"min": low, "max": high},
            },
            "destination": {
                "unit_type": "CURRENCY",
                "unit": unit,
                "amount": {**span, "increment": increment},
            },
            "prices": {
                "wholesale": {
                    "unit_type": "CURRENCY",
                    "unit": wholesale_unit,
                    "amount": {"min": low, "max": high},
                    "fee": fee,
                },
                "retail": None,
            },
            "rates": {"base": rate, "wholesale": rate, "retail": None},
            "benefits": [
                {
                    "type": "CREDITS",
                    "unit_type": "CURRENCY",
                    "unit": unit,
                    "amount": {
                        "base": span,
                        "promotion_bonus": {"min": 0, "max": 0},
                        "total_excluding_tax": span,
                        "total_including_tax": span,
                    },
                    "additional_information": None,
                }
            ],
        }
    )
    base.update(extra)
    return base


def ranged_price(product: dict[str, Any], body: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """What a transaction of a ranged product asks for: its wholesale price (amount over the
    wholesale rate, to the cent, and the fee) and requested values, or a documented error
    code (``1000400`` no calculation mode or amount, ``1003003`` another unit, ``1003002``
    out of range or off its increment)."""
    mode = body.get("calculation_mode")
    destination = body.get("destination")
    if mode != "DESTINATION_AMOUNT" or not isinstance(destination, dict):
        return {}, 1000400  # this fake takes the destination amount only
    bounds = product["destination"]["amount"]
    if destination.get("unit") != product["destination"]["unit"]:
        return {}, 1003003
    try:
        amount = Decimal(str(destination.get("amount")))
    except ArithmeticError:
        return {}, 1000400
    low, high = Decimal(str(bounds["min"])), Decimal(str(bounds["max"]))
    step = Decimal(str(bounds.get("increment") or "0.01"))
    if not low <= amount <= high or (amount - low) % step:
        return {}, 1003002
    rate = Decimal(str(product["rates"]["wholesale"]))
    wholesale = (amount / rate).quantize(Decimal("0.01"))
    unit = product["prices"]["wholesale"]["unit"]
    return {
        "prices": {
            "wholesale": {
                "unit_type": "CURRENCY",
                "unit": unit,
                "amount": float(wholesale),
                "fee": product["prices"]["wholesale"]["fee"],
            },
            "retail": None,
        },
        "requested_values": {
            "source": {"unit_type": "CURRENCY", "unit": unit, "amount": float(wholesale)},
            "destination": {
                "unit_type": "CURRENCY",
                "unit": destination["unit"],
                "amount": float(amount),
            },
        },
    }, 0


def default_products() -> list[dict[str, Any]]:
    mx = {"country_iso": "MEX", "country_name": "Mexico", "unit": "MXN"}
    co = {"country_iso": "COL", "country_name": "Colombia", "unit": "COP"}
    telcel = {"operator_id": 1450, "operator_name": "Telcel", **mx}
    att = {"operator_id": 1451, "operator_name": "AT&T Mexico", **mx}
    claro = {"operator_id": 1620, "operator_name": "Claro Colombia", **co}
    movistar = {"operator_id": 1621, "operator_name": "Movistar Colombia", **co}
    return [
        fixed_product(id=30001, amount=50, wholesale=2.70, fee=0.10, **telcel),
        fixed_product(id=30002, amount=100, wholesale=5.40, fee=0.10, **telcel),
        fixed_product(id=30003, amount=200, wholesale=10.80, fee=0.15, **telcel),
        fixed_product(
            id=30004,
            amount=150,
            wholesale=8.10,
            fee=0.10,
            subservice=(13, "Data"),
            data_gb=3,
            **telcel,
        ),
        fixed_product(id=30011, amount=100, wholesale=5.35, fee=0.10, **att),
        fixed_product(id=30012, amount=200, wholesale=10.70, fee=0.15, **att),
        fixed_product(id=30021, amount=10000, wholesale=2.55, fee=0.05, **claro),
        fixed_product(id=30022, amount=20000, wholesale=5.10, fee=0.05, **claro),
        fixed_product(id=30031, amount=10000, wholesale=2.50, fee=0.05, **movistar),
    ]


def benefit(
    kind: str, unit_type: str, unit: str, base: float, *, bonus: float = 0
) -> dict[str, Any]:
    """A fixed product's benefit as the reference's ``fixed_benefit`` shapes it: ``type``
    (TALKTIME, DATA, SMS, PAYMENT, CREDITS), ``unit_type`` (TIME, DATA, QUANTITY, CURRENCY),
    ``unit`` and ``amount {base, promotion_bonus, total_excluding_tax, total_including_tax}``
    (``base`` -1: unlimited)."""
    total = base if base == -1 else base + bonus
    return {
        "type": kind,
        "unit_type": unit_type,
        "unit": unit,
        "amount": {
            "base": base,
            "promotion_bonus": bonus,
            "total_excluding_tax": total,
            "total_including_tax": total,
        },
        "additional_information": None,
    }


PIN_TYPES = ("FIXED_VALUE_PIN_PURCHASE", "RANGED_VALUE_PIN_PURCHASE")


def pin_detail() -> dict[str, str]:
    """A transaction's ``pin`` as the reference's schema shapes it: ``code`` and ``serial``,
    non-empty strings (random digits here)."""
    return {
        "code": "".join(secrets.choice("0123456789") for _ in range(14)),
        "serial": "SN" + "".join(secrets.choice("0123456789") for _ in range(10)),
    }


def kinds_products() -> list[dict[str, Any]]:
    """Telcel's data, bundle and PIN products (contract section 17, "Kinds"), to add to
    ``products``: a Data product (2 GB + 1 GB of promotion, a week), a Bundle (5 GB, 100
    minutes, unlimited SMS, 30 days) and a FIXED_VALUE_PIN_PURCHASE of 100 MXN (its ``pin``
    with usage info and validity; no credit party: the customer enters the code)."""
    telcel = {
        "operator_id": 1450,
        "operator_name": "Telcel",
        "country_iso": "MEX",
        "country_name": "Mexico",
        "unit": "MXN",
    }
    data = fixed_product(
        id=30101,
        amount=120,
        wholesale=6.40,
        fee=0.10,
        subservice=(13, "Data"),
        benefits=[benefit("DATA", "DATA", "GB", 2, bonus=1)],
        validity={"unit": "WEEK", "quantity": 1},
        **telcel,
    )
    bundle = fixed_product(
        id=30102,
        amount=150,
        wholesale=8.20,
        fee=0.10,
        subservice=(12, "Bundle"),
        benefits=[
            benefit("DATA", "DATA", "GB", 5),
            benefit("TALKTIME", "TIME", "MINUTES", 100),
            benefit("SMS", "QUANTITY", "SMS", -1),
        ],
        validity={"unit": "DAY", "quantity": 30},
        **telcel,
    )
    bundle["name"] = bundle["description"] = "Telcel 5GB + 100 min + SMS ilimitados"
    pin = fixed_product(
        id=30103,
        amount=100,
        wholesale=5.30,
        fee=0.10,
        type="FIXED_VALUE_PIN_PURCHASE",
        required_credit_party_identifier_fields=None,
        pin={
            "usage_info": ["Dial *133*<PIN># to top up"],
            "validity": {"unit": "MONTH", "quantity": 6},
            "terms": None,
        },
        **telcel,
    )
    pin["name"] = pin["description"] = "Telcel PIN 100 MXN"
    return [data, bundle, pin]


def fields_product() -> dict[str, Any]:
    """A Telcel 500 MXN top-up that wants the sender's name and number and the beneficiary's
    name (``required_sender_fields`` / ``required_beneficiary_fields``, as the reference's
    schema shapes them: alternatives, each a list of fields wanted together)."""
    return fixed_product(
        id=30090,
        operator_id=1450,
        operator_name="Telcel",
        country_iso="MEX",
        country_name="Mexico",
        unit="MXN",
        amount=500,
        wholesale=27.00,
        fee=0.20,
        required_sender_fields=[["first_name", "last_name", "mobile_number"]],
        required_beneficiary_fields=[["first_name", "last_name"]],
    )


def parties_missing(product: dict[str, Any], body: dict[str, Any]) -> list[str]:
    """The party fields a product requires that ``body`` lacks (none when one alternative of
    each party is wholly given): ``["sender.first_name", ...]``."""
    missing: list[str] = []
    for party, required in (
        ("sender", product.get("required_sender_fields")),
        ("beneficiary", product.get("required_beneficiary_fields")),
    ):
        if not required:
            continue
        given = body.get(party) if isinstance(body.get(party), dict) else {}
        lacking = [
            [f for f in alternative if not (isinstance(given.get(f), str) and given[f].strip())]
            for alternative in required
        ]
        if all(lacking):
            missing.extend(f"{party}.{f}" for f in min(lacking, key=len))
    return missing


@dataclass
class _Refusal:
    status: str
    number: str | None


class FakeDTOne:
    def __init__(
        self,
        *,
        port: int = 0,
        api_key: str = API_KEY,
        api_secret: str = API_SECRET,
        products: list[dict[str, Any]] | None = None,
        balance: Decimal | str = "10000.00",
        currency: str = "USD",
    ) -> None:
        self.lock = threading.RLock()
        self.api_key, self.api_secret = api_key, api_secret
        self.products = default_products() if products is None else list(products)
        self.currency = currency
        # unit -> {"id", "available", "holding"}; transactions draw on ``currency``'s.
        self.balances: dict[str, dict[str, Any]] = {}
        self.add_balance(currency, balance)
        self.transactions: dict[str, dict[str, Any]] = {}  # by external id
        self.costs: dict[str, Decimal] = {}  # wholesale + fee held or taken, by external id
        self.callback_urls: dict[str, str] = {}
        self.calls: Counter[str] = Counter()  # POST /async/transactions per external id
        self.bodies: list[dict[str, Any]] = []  # every POSTed transaction body, in order
        self.pins: dict[str, dict[str, str]] = {}  # a PIN purchase's pin, by external id
        self.hits: Counter[str] = Counter()  # requests per "METHOD /path"
        self.queries: list[tuple[str, dict[str, str]]] = []  # (path, query) of every GET
        self.callbacks: list[dict[str, Any]] = []  # callbacks sent: url, body, answer
        self.max_per_page = 100  # lower it to make more pages
        self.omitted: set[str] = set()  # left out of the date-window report
        self.misreported: dict[str, dict[str, Any]] = {}  # fields the report shows instead
        self.async_mode = False
        self.async_delay: float | None = None
        self._refusals: list[_Refusal] = []  # next sends, in order
        self._refused_numbers: dict[str, _Refusal] = {}
        self._errors: list[tuple[int, bool]] = []  # next sends: (code, after_creating)
        self._lookup_errors: list[int] = []
        self._slow: list[float] = []
        self.ranges: dict[str, int] = {}  # E.164 digit prefix -> operator id
        self.ported: dict[str, int] = {}  # E.164 digits -> operator id
        self.lookup_delay = 0.0
        self.lookup_error: int | None = None
        self.lookups: Counter[str] = Counter()
        self.delay = 0.0  # seconds every send that makes a transaction takes to answer
        self._timers: list[threading.Timer] = []
        self._ids = itertools.count(2_000_000_001)
        self._port = port
        self._server: KeptServer | None = None
        self._thread: threading.Thread | None = None
        self._server_lock = threading.Lock()

    # -- life --------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        """The API server as DT One's reference names it (ending in ``/v1``)."""
        return f"http://127.0.0.1:{self._port}/v1"

    def start(self) -> FakeDTOne:
        with self._server_lock:
            self._listen()
        return self

    def stop(self) -> None:
        with self.lock:
            timers, self._timers = self._timers, []
        for timer in timers:
            timer.cancel()
        with self._server_lock:
            self._close()

    def _listen(self) -> None:
        server = KeptServer(("127.0.0.1", self._port), self._handler())
        self._port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def _close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # -- switches ----------------------------------------------------------------------------
    def outage(self, down: bool = True) -> None:
        """Down: the port refuses connections. Up again: the same port listens."""
        with self._server_lock:
            if down:
                self._close()
            elif self._server is None:
                self._listen()

    def refuse(
        self,
        count: int = 1,
        *,
        number: str | None = None,
        status: str = "DECLINED-INVALID-CREDIT-PARTY",
    ) -> None:
        """The next ``count`` sends (or every send to ``number``) are refused with ``status``
        (a REJECTED-... or DECLINED-... status of the reference)."""
        assert status.split("-")[0] in ("REJECTED", "DECLINED"), status
        with self.lock:
            if number is not None:
                self._refused_numbers[number] = _Refusal(status, number)
            else:
                self._refusals.extend(_Refusal(status, None) for _ in range(count))

    def error_next(self, code: int, count: int = 1, *, after_creating: bool = False) -> None:
        assert code in ERRORS, code
        with self.lock:
            self._errors.extend((code, after_creating) for _ in range(count))

    def fail_lookups(self, count: int = 1, code: int = 1009503) -> None:
        """The next ``count`` ``GET /transactions`` answer error ``code``."""
        with self.lock:
            self._lookup_errors.extend([code] * count)

    def slow_next(self, seconds: float, count: int = 1) -> None:
        with self.lock:
            self._slow.extend([seconds] * count)

    def async_completion(self, enabled: bool = True, *, delay: float | None = None) -> None:
        with self.lock:
            self.async_mode, self.async_delay = enabled, delay

    def number_range(self, prefix: str, operator_id: int) -> None:
        """Numbers starting with ``prefix`` (E.164 digits) were given to ``operator_id``."""
        self.ranges[prefix.lstrip("+")] = operator_id

    def port_number(self, number: str, operator_id: int) -> None:
        """``number`` (E.164) is with ``operator_id`` now, whatever its range."""
        self.ported[number.lstrip("+")] = operator_id

    def _lookup(self, number: str) -> list[dict[str, Any]]:
        digits = number.lstrip("+")
        with self.lock:
            found = self.ported.get(digits)
            if found is None:
                prefixes = [p for p in self.ranges if digits.startswith(p)]
                found = self.ranges[max(prefixes, key=len)] if prefixes else None
            operators: dict[int, dict[str, Any]] = {}
            for product in self.products:
                operators.setdefault(product["operator"]["id"], product["operator"])
        if found is None or found not in operators:
            return []
        country = operators[found]["country"]["iso_code"]
        return [
            {**operators[found], "identified": True},
            *(
                {**op, "identified": False}
                for op_id, op in sorted(operators.items())
                if op_id != found and op["country"]["iso_code"] == country
            ),
        ]

    def add_balance(self, unit: str, available: Decimal | str | float) -> None:
        with self.lock:
            self.balances[unit] = {
                "id": len(self.balances) + 1,
                "available": Decimal(str(available)),
                "holding": Decimal(0),
            }

    @property
    def available(self) -> Decimal:
        with self.lock:
            return self.balances[self.currency]["available"]

    @property
    def holding(self) -> Decimal:
        with self.lock:
            return self.balances[self.currency]["holding"]

    def complete(self, external_id: str, status: str = "COMPLETED") -> dict[str, Any]:
        """An in-flight transaction reaches ``status`` (COMPLETED, or DECLINED-...)."""
        with self.lock:
            transaction = self.transactions[external_id]
            klass = transaction["status"]["class"]["message"]
            if klass not in ("CREATED", "CONFIRMED", "SUBMITTED"):
                return transaction
            self._move(external_id, status)
            view = self._view(external_id)
        self._call_back(external_id, view)
        return view

    def reverse(self, external_id: str) -> dict[str, Any]:
        with self.lock:
            transaction = self.transactions[external_id]
            assert transaction["status"]["class"]["message"] == "COMPLETED", transaction["status"]
            self._move(external_id, "REVERSED")
            view = self._view(external_id)
        self._call_back(external_id, view)
        return view

    def add_transaction(
        self,
        external_id: str,
        *,
        product_id: int = 30002,
        number: str = "+5215512345678",
        status: str = "COMPLETED",
        created_at: datetime | None = None,
    ) -> dict[str, Any]:
        """A transaction from the past, as the report will list it (no balance moves)."""
        with self.lock:
            product = self._product(product_id)
            assert product is not None, product_id
            self._create(external_id, product, number, "", created_at=created_at)
            self.transactions[external_id]["status"] = status_object(status)
            return self._view(external_id)

    def omit_from_reports(self, external_id: str) -> None:
        with self.lock:
            self.omitted.add(external_id)

    def misreport(self, external_id: str, **fields: Any) -> None:
        with self.lock:
            self.misreported.setdefault(external_id, {}).update(fields)

    def transaction(self, external_id: str) -> dict[str, Any]:
        """The transaction as ``GET /transactions`` shows it (and a callback sends it)."""
        with self.lock:
            return self._view(external_id)

    # -- state (under self.lock) ---------------------------------------------------------------
    def _product(self, product_id: Any) -> dict[str, Any] | None:
        return next((p for p in self.products if p["id"] == product_id), None)

    def _create(
        self,
        external_id: str,
        product: dict[str, Any],
        number: str,
        callback_url: str,
        *,
        created_at: datetime | None = None,
        priced: dict[str, Any] | None = None,
    ) -> None:
        created = created_at or datetime.now(UTC)
        prices = (priced or {}).get("prices") or product["prices"]
        wholesale = prices["wholesale"]
        product_view = {
            key: product[key]
            for key in ("id", "name", "description", "tags", "service", "operator", "regions")
        }
        self.transactions[external_id] = {
            "id": next(self._ids),
            "external_id": external_id,
            "creation_date": timestamp(created),
            "confirmation_expiration_date": timestamp(created + timedelta(hours=1)),
            "confirmation_date": None,
            "status": status_object("CREATED"),
            "operator_reference": None,
            "pin": None,
            "product": {**product_view, "type": product["type"], "pin": product.get("pin")},
            "prices": prices,
            "rates": product["rates"],
            "benefits": product["benefits"],
            "promotions": product["promotions"],
            "requested_values": (priced or {}).get("requested_values"),
            "adjusted_values": None,
            "sender": None,
            "beneficiary": None,
            "debit_party_identifier": None,
            "credit_party_identifier": {"mobile_number": number},
            "statement_identifier": None,
            "additional_identifier": None,
        }
        self.costs[external_id] = Decimal(str(wholesale["amount"])) + Decimal(str(wholesale["fee"]))
        if callback_url:
            self.callback_urls[external_id] = callback_url

    def _move(self, external_id: str, status: str) -> None:
        """A status change and the balance movement the reference ties to it."""
        transaction = self.transactions[external_id]
        before = transaction["status"]["class"]["message"]
        after = status.split("-")[0]
        balance = self.balances[self.currency]
        cost = self.costs[external_id]
        if before == "CREATED" and after not in FAILED_CLASSES and after != "CREATED":
            transaction["confirmation_date"] = timestamp(datetime.now(UTC))
        if after == "COMPLETED":
            balance["holding"] -= cost  # capture
            transaction["operator_reference"] = f"OP{transaction['id']}"
            if transaction["product"]["type"] in PIN_TYPES and not transaction["pin"]:
                transaction["pin"] = self.pins[external_id] = pin_detail()
        elif after in FAILED_CLASSES:
            balance["holding"] -= cost  # void
            balance["available"] += cost
        elif after == "REVERSED":
            balance["available"] += cost
        transaction["status"] = status_object(status)

    def _view(self, external_id: str, *, with_callback: bool = True) -> dict[str, Any]:
        view = json.loads(json.dumps(self.transactions[external_id]))
        if with_callback and external_id in self.callback_urls:
            view["callback_url"] = self.callback_urls[external_id]
        return view

    def _finish_later(self, external_id: str, delay: float) -> None:
        timer = threading.Timer(delay, self.complete, args=(external_id,))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    # -- callbacks -------------------------------------------------------------------------------
    def _call_back(self, external_id: str, view: dict[str, Any]) -> None:
        with self.lock:
            url = self.callback_urls.get(external_id)
        if url:
            threading.Thread(target=self._post_callback, args=(url, view), daemon=True).start()

    def _post_callback(self, url: str, body: dict[str, Any], attempts: int = 3) -> None:
        opener = _callback_opener()
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        parts = urllib.parse.urlsplit(url)
        if parts.username is not None:
            # Credentials in the callback URL are sent as HTTP Basic, as DT One does.
            user = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
            url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
        for attempt in range(attempts):
            request = urllib.request.Request(url, data=data, method="POST", headers=headers)
            try:
                with opener.open(request, timeout=5) as answer:
                    status: int | str = answer.status
            except urllib.error.HTTPError as exc:
                status = exc.code
            except OSError as exc:
                status = repr(exc)
            with self.lock:
                self.callbacks.append({"url": url, "body": body, "answer": status})
            if isinstance(status, int) and 200 <= status < 300:
                return
            time.sleep(0.2 * (attempt + 1))  # DT One's callback retry back-off, simulated

    # -- HTTP --------------------------------------------------------------------------------------
    def _handler(self):
        fake = self

        class Handler(KeptHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def _error(self, code: int):
                status, message = ERRORS[code]
                return self._send(status, {"errors": [{"code": code, "message": message}]})

            def _authorised(self) -> bool:
                header = self.headers.get("Authorization", "")
                if not header.startswith("Basic "):
                    return False
                try:
                    user, _, password = base64.b64decode(header[6:]).decode().partition(":")
                except ValueError:
                    return False
                return (user, password) == (fake.api_key, fake.api_secret)

            def _route(self, method: str) -> tuple[str, dict[str, str]] | None:
                url = urlparse(self.path)
                with fake.lock:
                    fake.hits[f"{method} {url.path}"] += 1
                if not url.path.startswith("/v1/"):
                    self._error(1000404)
                    return None
                if not self._authorised():
                    self._error(1000401)
                    return None
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                if method == "GET":
                    with fake.lock:
                        fake.queries.append((url.path, query))
                return url.path.removeprefix("/v1"), query

            def _page(self, items: list[Any], query: dict[str, str]):
                try:
                    page = int(query.get("page", "1"))
                    per_page = int(query.get("per_page", "50"))
                except ValueError:
                    return self._error(1000400)
                if page < 1 or not 1 <= per_page <= 100:
                    return self._error(1000400)
                per_page = min(per_page, fake.max_per_page)
                pages = max(1, math.ceil(len(items) / per_page))
                headers = {
                    "X-Total": str(len(items)),
                    "X-Total-Pages": str(pages),
                    "X-Per-Page": str(per_page),
                    "X-Page": str(page),
                }
                if page < pages:
                    headers["X-Next-Page"] = str(page + 1)
                if page > 1:
                    headers["X-Prev-Page"] = str(page - 1)
                chunk = items[(page - 1) * per_page : page * per_page]
                return self._send(200, chunk, headers)

            def do_GET(self):
                route = self._route("GET")
                if route is None:
                    return None
                path, query = route
                if path == "/products":
                    return self._products(query)
                if path.startswith("/products/"):
                    with fake.lock:
                        product = fake._product(_int(path.rsplit("/", 1)[1]))
                    return self._send(200, product) if product else self._error(1000404)
                if path == "/transactions":
                    return self._transactions(query)
                if path.startswith("/transactions/"):
                    wanted = _int(path.rsplit("/", 1)[1])
                    with fake.lock:
                        found = [
                            fake._view(ref)
                            for ref, t in fake.transactions.items()
                            if t["id"] == wanted
                        ]
                    return self._send(200, found[0]) if found else self._error(1008004)
                if path == "/balances":
                    with fake.lock:
                        rows = [
                            {
                                "id": b["id"],
                                "unit_type": "CURRENCY",
                                "unit": unit,
                                "available": float(b["available"]),
                                "holding": float(b["holding"]),
                                "credit_limit": 0.0,
                            }
                            for unit, b in fake.balances.items()
                        ]
                    return self._page(rows, query)
                return self._error(1000404)

            def _products(self, query: dict[str, str]):
                country = query.get("country_iso_code")
                if country is not None and not ALPHA3.match(country):
                    return self._error(1000400)
                with fake.lock:
                    items = sorted(fake.products, key=lambda p: p["id"])
                if "type" in query:
                    items = [p for p in items if p["type"] == query["type"]]
                if "service_id" in query:
                    items = [p for p in items if p["service"]["id"] == _int(query["service_id"])]
                if "operator_id" in query:
                    items = [p for p in items if p["operator"]["id"] == _int(query["operator_id"])]
                if country is not None:
                    items = [p for p in items if p["operator"]["country"]["iso_code"] == country]
                return self._page(items, query)

            def _transactions(self, query: dict[str, str]):
                with fake.lock:
                    if fake._lookup_errors:
                        return self._error(fake._lookup_errors.pop(0))
                    views = sorted(
                        (fake._view(ref) for ref in fake.transactions), key=lambda t: t["id"]
                    )
                external_id = query.get("external_id")
                if external_id is not None:
                    views = [t for t in views if t["external_id"] == external_id]
                    if not views:
                        return self._error(1008004)
                    return self._page(views, query)
                try:
                    start = _moment(query.get("from_date"))
                    end = _moment(query.get("to_date"))
                except ValueError:
                    return self._error(1000400)
                if start is None and end is None:
                    end = datetime.now(UTC)
                    start = end - timedelta(hours=24)
                if start is None:
                    start = end - timedelta(hours=24)
                if end is None:
                    end = start + timedelta(hours=24)
                if end - start > timedelta(hours=24) or end < start:
                    return self._error(1000400)
                views = [
                    {**t, **fake.misreported.get(t["external_id"], {})}
                    for t in views
                    if start <= _moment(t["creation_date"]) <= end
                    and t["external_id"] not in fake.omitted
                ]
                return self._page(views, query)

            def do_POST(self):
                route = self._route("POST")
                if route is None:
                    return None
                path, _query = route
                if path == "/lookup/mobile-number":
                    return self._lookup_number()
                if path != "/async/transactions":
                    return self._error(1000404)
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length)
                try:
                    body = json.loads(data or b"{}")
                except ValueError:
                    return self._error(1000400)
                if len(data) < length or not isinstance(body, dict):
                    return self._error(1000400)
                return self._create(body)

            def _lookup_number(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    return self._error(1000400)
                number = body.get("mobile_number") if isinstance(body, dict) else None
                if not isinstance(number, str) or not re.fullmatch(r"\+[1-9][0-9]{6,14}", number):
                    return self._error(1005003)
                with fake.lock:
                    fake.lookups[number] += 1
                if fake.lookup_delay:
                    time.sleep(fake.lookup_delay)  # the provider's latency, simulated
                if fake.lookup_error is not None:
                    return self._error(fake.lookup_error)
                return self._page(fake._lookup(number), {})

            def _create(self, body: dict[str, Any]):
                external_id = body.get("external_id")
                product_id = body.get("product_id")
                party = body.get("credit_party_identifier") or {}
                callback_url = body.get("callback_url") or ""
                if (
                    not isinstance(external_id, str)
                    or not external_id.strip()
                    or len(external_id) > 40
                    or not isinstance(product_id, int)
                    or not isinstance(party, dict)
                ):
                    return self._error(1000400)
                number = party.get("mobile_number", "")
                with fake.lock:
                    fake.calls[external_id] += 1
                    fake.bodies.append(body)
                    if external_id in fake.transactions:
                        return self._error(1007001)
                    error = fake._errors.pop(0) if fake._errors else None
                    if error is not None and not error[1]:
                        return self._error(error[0])
                    product = fake._product(product_id)
                    if product is None:
                        return self._error(1003001)
                    if not isinstance(number, str) or not E164.match(number):
                        return self._error(1005003)
                    for party, code in (("sender", 1005503), ("beneficiary", 1006503)):
                        phone = (body.get(party) or {}).get("mobile_number")
                        if phone is not None and not E164.match(str(phone)):
                            return self._error(code)
                    if parties_missing(product, body):
                        # The reference publishes no code of its own for a required party
                        # field left out: its generic Bad Request.
                        return self._error(1000400)
                    priced: dict[str, Any] | None = None
                    if product["type"] in ("RANGED_VALUE_RECHARGE", "RANGED_VALUE_PIN_PURCHASE"):
                        priced, refused = ranged_price(product, body)
                        if refused:
                            return self._error(refused)
                    wholesale = (priced or product)["prices"]["wholesale"]
                    cost = Decimal(str(wholesale["amount"])) + Decimal(str(wholesale["fee"]))
                    if fake.balances[fake.currency]["available"] < cost:
                        return self._error(1006001)
                    refusal = fake._refused_numbers.get(number) or (
                        fake._refusals.pop(0) if fake._refusals else None
                    )
                    fake._create(external_id, product, number, callback_url, priced=priced)
                    fake.transactions[external_id]["sender"] = body.get("sender")
                    fake.transactions[external_id]["beneficiary"] = body.get("beneficiary")
                    balance = fake.balances[fake.currency]
                    balance["available"] -= cost  # authorize
                    balance["holding"] += cost
                    if refusal is not None:
                        fake._move(external_id, refusal.status)
                    elif body.get("auto_confirm") is True:
                        fake._move(external_id, "CONFIRMED")
                        if fake.async_mode or error is not None:
                            fake._move(external_id, "SUBMITTED")
                        else:
                            fake._move(external_id, "COMPLETED")
                        if fake.async_mode and fake.async_delay is not None:
                            fake._finish_later(external_id, fake.async_delay)
                    answer = fake._view(external_id, with_callback=False)
                    final = answer["status"]["class"]["message"] in ("COMPLETED", *FAILED_CLASSES)
                    view = fake._view(external_id)
                    slow = fake._slow.pop(0) if fake._slow else fake.delay
                if error is not None:  # after creating: it completes, the answer is an error
                    fake.complete(external_id)
                    return self._error(error[0])
                if final:
                    fake._call_back(external_id, view)
                if slow:
                    time.sleep(slow)  # the provider's latency, simulated: the point of the fake
                return self._send(201, answer)

        return Handler


@functools.cache
def _callback_opener() -> urllib.request.OpenerDirector:
    """One opener for every callback, built once: ``build_opener`` makes an HTTPS handler
    whose SSL context loads the system's CA certificates, ~35 ms of CPU per callback when
    built each time (the routing bench's DT One fake spent most of its time there)."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _int(value: str) -> int | None:
    try:
        return int(value)
    except ValueError:
        return None


def _moment(value: str | None) -> datetime | None:
    if value is None:
        return None
    moment = datetime.fromisoformat(value)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A local fake of DT One's DVS API.")
    parser.add_argument("--port", type=int, default=18611, help="0 picks a free port")
    parser.add_argument("--api-key", default=API_KEY)
    parser.add_argument("--api-secret", default=API_SECRET)
    parser.add_argument("--balance", default="10000.00", help="available balance, in USD")
    args = parser.parse_args(argv)
    fake = FakeDTOne(
        port=args.port, api_key=args.api_key, api_secret=args.api_secret, balance=args.balance
    ).start()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(fake.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
