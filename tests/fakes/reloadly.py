"""A local HTTP fake of Reloadly's Airtime API, on 127.0.0.1, for the tests and for a demo.

It follows Reloadly's public reference (repository ``Reloadly/reloadly-api-documentation``,
``openapi/paths/`` and ``openapi/components/schemas/airtime/``; paging and statuses as in
``Reloadly/reloadly-sdk-java``): ``POST /oauth/token`` and the API on one port, Spring pages
(``page`` from 1, ``size``; ``content``, ``totalPages``, ``last``, ``number`` from 0), errors
as ``{timeStamp, message, path, errorCode, infoLink, details}``, report times as
``yyyy-MM-dd HH:mm:ss`` without a zone (this fake writes UTC).

It keeps what a real provider keeps: issued tokens (and whose they are), an operator catalog
(seedable; ``default_operators()`` otherwise), top-ups by custom identifier, an account
balance that each top-up lowers by its cost (``requestedAmount`` less ``discount``), and a
count of POST /topups calls per reference, so tests can prove that nothing was sent twice.
Every API request is logged in ``requests`` (method, path, query, client id of its token).

Behaviour can be switched:
- ``fail_next(status, body, headers, made=False)``: the next top-up call answers ``status``
  (a 5xx, a 429, or a body that is not JSON when ``body`` is a string); with ``made`` the top-up
  is made first, as when a gateway fails after the provider did the work.
- ``refuse_next(n, error_code, message)`` / ``refuse_number(number, ...)``: a documented 4xx
  refusal with ``errorCode``, for the next ``n`` calls or for one recipient number.
- Extra fields: ``nauta_operator()`` (add it to ``operators``) is Cuba's Nauta, whose top-ups
  need ``recipientEmail``; one without it is refused with 400 (the reference's error body; the
  errorCode ``INVALID_RECIPIENT_EMAIL`` is the fake's, Reloadly publishes none). A top-up
  keeps the ``recipientEmail`` and ``senderPhone`` it was sent; ``received`` has each body.
- Kinds: ``kinds_operators()`` (add them to ``operators``) are Telcel's data, bundle and PIN
  operators, flagged ``data``/``bundle``/``pin``, what each amount gives in
  ``localFixedAmountsDescriptions`` or ``fixedAmountsDescriptions``.
- ``slow_next(seconds)``: answers after the client gave up, having made the top-up.
- ``refund(custom_identifier)``: Reloadly takes the top-up back: REFUNDED in the reports, and
  its cost back on the balance.
- Reconciliation: ``seed_topup(reference, ...)`` a top-up nobody sent through us;
  ``omit_from_reports(reference)`` leaves a top-up out of the day's report (the look-up by
  custom identifier still finds it); ``misreport(reference, **fields)`` changes what the
  report says of it (``requestedAmount=…``, ``discount=…``).
- ``outage(True)``: the port refuses connections (the listening socket is closed); ``outage
  (False)`` listens on the same port again.
- ``fail_next_lookup(status)``, ``expire_tokens()``, ``list_after_answer``, ``delay``, ``now``.
- Number lookup, ``GET /operators/auto-detect/phone/{phone}/countries/{iso}``
  (``openapi/paths/airtime-auto-detect-an-operator.yaml``): ``phone`` national (the
  reference's ``08147658721`` with ``NG``) or international; the answer is the operator as
  ``GET /operators`` shows it. ``number_range(prefix, operator_id)`` says which operator a
  range of E.164 numbers (digits, no plus) was given to, ``port_number(number, operator_id)``
  moves one number to another operator; a number of neither answers 404 (errorCode
  ``COULD_NOT_AUTO_DETECT_OPERATOR``: the fake's, the reference publishes the 404 only).
  ``lookup_delay`` (seconds before answering), ``lookup_status`` (answer every lookup with
  that HTTP status) and ``lookups`` (count per E.164 number).

Run alone (``python -m tests.fakes.reloadly --port 18610``) it prints its URL and serves until
killed: that URL is both the auth server and the API base URL.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
import secrets
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from urllib.parse import parse_qs, urlparse

import phonenumbers

from tests.fakes.server import KeptHandler, KeptServer, Tally
from tests.waiting import WaitTimeout, wait_until

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
CENT = Decimal("0.01")
DEFAULT_PORT = 18610


def _money(value: Any) -> Decimal:
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


def operator(
    operator_id: int,
    name: str,
    country: tuple[str, str],
    destination_currency: str,
    *,
    rate: float,
    discount: float,
    fixed: Iterable[float] = (),
    local: Iterable[float] = (),
    sender_currency: str = "EUR",
    denomination: str = "FIXED",
    data: bool = False,
    bundle: bool = False,
    pin: bool = False,
    supports_local: bool | None = None,
    min_amount: float | None = None,
    max_amount: float | None = None,
    local_min_amount: float | None = None,
    local_max_amount: float | None = None,
    descriptions: dict[str, str] | None = None,
    local_descriptions: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An operator as ``GET /operators`` shows it (the reference's fields). A RANGE operator
    takes any amount from ``minAmount`` to ``maxAmount`` (the account's currency) or, in local
    amounts, from ``localMinAmount`` to ``localMaxAmount``."""
    fixed, local = list(fixed), list(local)
    return {
        "id": operator_id,
        "operatorId": operator_id,
        "name": name,
        "bundle": bundle,
        "data": data,
        "pin": pin,
        "supportsLocalAmounts": bool(local) if supports_local is None else supports_local,
        "denominationType": denomination,
        "senderCurrencyCode": sender_currency,
        "senderCurrencySymbol": "",
        "destinationCurrencyCode": destination_currency,
        "destinationCurrencySymbol": "",
        "commission": discount,
        "internationalDiscount": discount,
        "localDiscount": 0.0,
        "mostPopularAmount": fixed[-1] if fixed else None,
        "minAmount": min_amount,
        "maxAmount": max_amount,
        "localMinAmount": local_min_amount,
        "localMaxAmount": local_max_amount,
        "country": {"isoName": country[0], "name": country[1]},
        "fx": {"rate": rate, "currencyCode": destination_currency},
        "logoUrls": [],
        "fixedAmounts": fixed,
        "fixedAmountsDescriptions": descriptions or {},
        "localFixedAmounts": local,
        "localFixedAmountsDescriptions": local_descriptions or {},
        "suggestedAmounts": [],
        "suggestedAmountsMap": {},
        "promotions": [],
    }


def default_operators(currency: str = "EUR") -> list[dict[str, Any]]:
    """Four FIXED operators in Mexico and Colombia (one with no local list, one for data) and
    one RANGE operator that a catalog must skip."""
    mx, co = ("MX", "Mexico"), ("CO", "Colombia")
    return [
        operator(
            341,
            "Telcel Mexico",
            mx,
            "MXN",
            rate=20.5,
            discount=6.5,
            fixed=[0.49, 0.98, 2.44, 4.88, 9.76],
            local=[10, 20, 50, 100, 200],
            sender_currency=currency,
        ),
        operator(
            342,
            "AT&T Mexico",
            mx,
            "MXN",
            rate=20.5,
            discount=5.0,
            fixed=[2.44, 4.88, 7.32, 9.76],
            local=[50, 100, 150, 200],
            sender_currency=currency,
        ),
        operator(
            621,
            "Claro Colombia",
            co,
            "COP",
            rate=4300,
            discount=8.0,
            fixed=[2.5, 5, 10],
            supports_local=True,  # no local list: the local amounts are fixed x fx.rate
            sender_currency=currency,
        ),
        operator(
            622,
            "Claro Colombia Data",
            co,
            "COP",
            rate=4300,
            discount=4.0,
            fixed=[1.16, 2.33, 4.65],
            local=[5000, 10000, 20000],
            data=True,
            sender_currency=currency,
        ),
        operator(
            88,
            "Movistar Colombia",
            co,
            "COP",
            rate=4300,
            discount=4.42,
            denomination="RANGE",
            min_amount=1,
            max_amount=50,
            sender_currency=currency,
        ),
    ]


def kinds_operators(currency: str = "EUR") -> list[dict[str, Any]]:
    """Telcel's data, bundle and PIN operators (contract section 17, "Kinds"), to add to
    ``operators``. Reloadly lists them as operators of their own, flagged ``data``,
    ``bundle`` or ``pin``, and says what each amount gives only in words:
    ``localFixedAmountsDescriptions`` keyed by the local amount, ``fixedAmountsDescriptions``
    by the sender amount (both ``"%.2f"``)."""
    mx = ("MX", "Mexico")
    return [
        operator(
            3411,
            "Telcel Mexico Data",
            mx,
            "MXN",
            rate=20.5,
            discount=5.0,
            fixed=[4.88, 7.32],
            local=[100, 150],
            data=True,
            local_descriptions={
                "100.00": "Internet 2GB, vigencia 15 días",
                "150.00": "Internet 3.5GB, vigencia 30 días",
            },
            sender_currency=currency,
        ),
        operator(
            3412,
            "Telcel Mexico Bundles",
            mx,
            "MXN",
            rate=20.5,
            discount=5.0,
            fixed=[9.76],
            local=[200],
            bundle=True,
            descriptions={"9.76": "5GB + 100 min + 50 SMS, 30 days"},
            sender_currency=currency,
        ),
        operator(
            3413,
            "Telcel Mexico PIN",
            mx,
            "MXN",
            rate=20.5,
            discount=4.0,
            fixed=[4.88],
            local=[100],
            pin=True,
            sender_currency=currency,
        ),
    ]


def nauta_operator(currency: str = "EUR") -> dict[str, Any]:
    """Cuba's Nauta, whose top-ups need the recipient's email (the reference's
    ``recipientEmail``: "only applicable to Nauta Cuba top-ups")."""
    return operator(
        1255,
        "Nauta Cuba",
        ("CU", "Cuba"),
        "CUP",
        rate=120,
        discount=3,
        fixed=[10, 20],
        local=[1200, 2400],
        sender_currency=currency,
    )


def needs_email(op: dict[str, Any] | None) -> bool:
    return bool(op) and op["country"]["isoName"] == "CU" and "nauta" in op["name"].lower()


def amount_pairs(op: dict[str, Any]) -> list[tuple[Decimal, Decimal | None]]:
    """(sender amount, local amount) of each fixed amount: the local list in the same order,
    or the fixed amount times ``fx.rate`` when the operator takes local amounts without one."""
    fixed = [Decimal(str(a)) for a in op.get("fixedAmounts") or []]
    local = [Decimal(str(a)) for a in op.get("localFixedAmounts") or []]
    rate = Decimal(str(op["fx"]["rate"]))
    if not local and op.get("supportsLocalAmounts"):
        local = [_money(a * rate) for a in fixed]
    if len(local) != len(fixed):
        return [(a, None) for a in fixed]
    return list(zip(fixed, local, strict=True))


def _within(op: dict[str, Any], amount: Decimal, *, local: bool) -> bool:
    """Is ``amount`` in a RANGE operator's range (local: ``localMinAmount``/``localMaxAmount``,
    else their sender amounts times ``fx.rate``)?"""
    rate = Decimal(str(op["fx"]["rate"]))
    low, high = op.get("minAmount"), op.get("maxAmount")
    if low is None or high is None:
        return True
    low, high = Decimal(str(low)), Decimal(str(high))
    if not local:
        return low <= amount <= high
    if op.get("localMinAmount") is not None and op.get("localMaxAmount") is not None:
        low, high = Decimal(str(op["localMinAmount"])), Decimal(str(op["localMaxAmount"]))
        return low <= amount <= high
    return low * rate <= amount <= high * rate


def page_of(items: list[dict[str, Any]], page: int, size: int) -> dict[str, Any]:
    """A Spring page as Reloadly answers its lists (``page`` asked from 1, ``number`` from 0)."""
    total_pages = math.ceil(len(items) / size)
    start = (page - 1) * size
    content = items[start : start + size]
    sort = {"sorted": False, "unsorted": True, "empty": True}
    return {
        "content": content,
        "pageable": {
            "sort": sort,
            "pageNumber": page - 1,
            "pageSize": size,
            "offset": start,
            "paged": True,
            "unpaged": False,
        },
        "totalPages": total_pages,
        "totalElements": len(items),
        "last": page >= total_pages,
        "sort": sort,
        "first": page == 1,
        "numberOfElements": len(content),
        "size": size,
        "number": page - 1,
        "empty": not content,
    }


class FakeReloadly:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        operators: list[dict[str, Any]] | None = None,
        balance: str = "550.75",
        currency: str = "EUR",
    ) -> None:
        self.lock = threading.Lock()
        self.host = host
        self.currency = currency
        self.balance = Decimal(balance)
        self.operators: list[dict[str, Any]] = (
            operators if operators is not None else default_operators(currency)
        )
        self.tokens: dict[str, str] = {}  # token -> the client id it was issued to
        self.token_requests = 0
        self.requests: list[tuple[str, str, dict[str, str], str]] = []
        self.topups: dict[str, dict] = {}
        self.received: dict[str, dict] = {}  # the last POST /topups body per reference
        self.costs: dict[str, Decimal] = {}
        self.calls: Counter[str] = Counter()
        self.script: deque[tuple[str, Any]] = deque()
        self.lookup_script: deque[int] = deque()
        self.refused_numbers: dict[str, tuple[str, str]] = {}
        self.ranges: dict[str, int] = {}  # E.164 digit prefix -> operator id
        self.ported: dict[str, int] = {}  # E.164 digits -> operator id
        self.lookup_delay = 0.0
        self.lookup_status: int | None = None
        self.lookups: Counter[str] = Counter()
        self.omitted: set[str] = set()  # left out of the day's report, not of a look-up
        self.delay = 0.0  # seconds every top-up takes, to keep work in flight
        # Opt-in: every top-up is a PIN top-up (besides those of operators marked ``pin``).
        self.pins = False
        # A provider that lists a top-up in its reports only once it has answered the call
        # (while it works, a lookup finds nothing, but the reference is already taken).
        self.list_after_answer = False
        self.answered: set[str] = set()
        self.active = 0  # top-up calls being answered now
        self.max_concurrent_topups = 0
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)
        self._ids = itertools.count(1000)
        self.tally = Tally()  # requests in progress, whichever server took them
        self.server: KeptServer | None = KeptServer((host, port), self._handler(), tally=self.tally)
        self.port = self.server.server_address[1]
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> FakeReloadly:
        assert self.server is not None
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            if self.thread is not None:  # serving: wait for its loop to end
                self.server.shutdown()
            self.server.server_close()
            self.server, self.thread = None, None

    def outage(self, down: bool = True) -> None:
        """Close the listening socket (connections are refused), or listen again on the
        same port."""
        if down:
            self.stop()
        elif self.server is None:
            self.server = KeptServer((self.host, self.port), self._handler(), tally=self.tally)
            self.start()

    def settle(self, *, quiet: float = 1.0, timeout: float = 60.0) -> bool:
        """Wait until every request already on the wire has been answered and nothing new has
        arrived for ``quiet`` seconds: what a killed client sent before it died still lands.
        Production's sweeper only reconciles a call after RECHARGE_STUCK_DISPATCHED_SECONDS
        (minutes, far past the provider timeout); a test that sets it to 0 settles first."""
        last = (-1, -1)
        calm_since = time.monotonic()

        def calm() -> bool:
            nonlocal last, calm_since
            with self.lock:
                now = (self.tally.value, sum(self.calls.values()))
            if now != last or now[0]:
                last, calm_since = now, time.monotonic()
                return False
            return time.monotonic() - calm_since >= quiet

        try:
            wait_until(calm, timeout=timeout, what=f"the fake quiet for {quiet:g} s")
        except WaitTimeout:
            return False
        return True

    # -- scripting --------------------------------------------------------------------
    def fail_next(
        self,
        status: int,
        body: dict | str | None = None,
        headers: dict | None = None,
        *,
        made: bool = False,
    ) -> None:
        """The next top-up call answers ``status`` with ``body`` (a string is sent as is,
        not as JSON); with ``made``, after making the top-up."""
        self.script.append(("fail", (status, {} if body is None else body, headers or {}, made)))

    def refuse_next(
        self,
        n: int = 1,
        *,
        error_code: str = "INVALID_RECIPIENT_PHONE",
        message: str = "Recipient phone number is not valid",
        status: int = 400,
    ) -> None:
        """The next ``n`` top-up calls are refused as the reference documents (4xx with an
        ``errorCode``); nothing is made."""
        for _ in range(n):
            self.script.append(("refuse", (status, error_code, message)))

    def refuse_number(
        self,
        number: str,
        *,
        error_code: str = "INVALID_RECIPIENT_PHONE",
        message: str = "Recipient phone number is not valid",
    ) -> None:
        """Every top-up to ``number`` (E.164, or the national digits the adapter sends) is
        refused."""
        self.refused_numbers[number.lstrip("+")] = (error_code, message)

    def fail_next_lookup(self, status: int) -> None:
        """The next status lookup (``GET /topups/reports/transactions``) answers ``status``."""
        self.lookup_script.append(status)

    def slow_next(self, seconds: float) -> None:
        self.script.append(("slow", seconds))

    def number_range(self, prefix: str, operator_id: int) -> None:
        """Numbers starting with ``prefix`` (E.164 digits) were given to ``operator_id``."""
        self.ranges[prefix.lstrip("+")] = operator_id

    def port_number(self, number: str, operator_id: int) -> None:
        """``number`` (E.164) is with ``operator_id`` now, whatever its range."""
        self.ported[number.lstrip("+")] = operator_id

    def operator_of_number(self, digits: str) -> dict | None:
        with self.lock:
            found = self.ported.get(digits)
            if found is None:
                prefixes = [p for p in self.ranges if digits.startswith(p)]
                found = self.ranges[max(prefixes, key=len)] if prefixes else None
        return self.operator_by_id(found) if found is not None else None

    def expire_tokens(self) -> None:
        with self.lock:
            self.tokens.clear()

    def refund(self, custom_identifier: str) -> dict:
        """Reloadly takes a top-up back: REFUNDED from now on, and its cost returns to the
        balance."""
        with self.lock:
            record = self.topups[custom_identifier]
            if record["status"] != "REFUNDED":
                record["status"] = "REFUNDED"
                self.balance += self.costs.get(custom_identifier, Decimal(0))
            return record

    def seed_topup(
        self,
        reference: str,
        *,
        operator_id: int = 341,
        amount: float = 100,
        number: str = "525500000001",
    ) -> dict:
        """A top-up made on this account without us (a local amount of ``operator_id``)."""
        body = {
            "operatorId": operator_id,
            "amount": amount,
            "useLocalAmount": True,
            "customIdentifier": reference,
            "recipientPhone": {"countryCode": "MX", "number": number},
        }
        with self.lock:
            made = self.make_topup(body, reference)
            assert isinstance(made, dict), made
            self.answered.add(reference)
            return made

    def omit_from_reports(self, reference: str) -> None:
        with self.lock:
            self.omitted.add(reference)

    def misreport(self, reference: str, **fields: Any) -> None:
        with self.lock:
            self.topups[reference].update(fields)

    # -- what the provider does ---------------------------------------------------------
    def error(self, status: int, path: str, error_code: str | None, message: str) -> dict:
        return {
            "timeStamp": self.now().strftime(TIME_FORMAT),
            "message": message,
            "path": path,
            "errorCode": error_code,
            "infoLink": None,
            "details": [],
        }

    def operator_by_id(self, operator_id: Any) -> dict | None:
        return next((o for o in self.operators if str(o["operatorId"]) == str(operator_id)), None)

    def price(self, body: dict) -> tuple[Decimal, Decimal, str, Decimal] | str:
        """(requested in our currency, delivered, its currency, discount) of a top-up, or why
        the amount is refused. An operator it does not know takes any amount, one for one."""
        amount = Decimal(str(body.get("amount")))
        op = self.operator_by_id(body.get("operatorId"))
        if op is None:
            return amount, amount, self.currency, Decimal(0)
        use_local = bool(body.get("useLocalAmount"))
        rate = Decimal(str(op["fx"]["rate"]))
        if use_local and not op.get("supportsLocalAmounts"):
            return "The operator does not take local amounts"
        if op["denominationType"] == "FIXED":
            pair = next(
                (p for p in amount_pairs(op) if (p[1] if use_local else p[0]) == amount), None
            )
            if pair is None:
                return "The amount is not one of the operator's fixed amounts"
            requested = pair[0]
            delivered = pair[1] if pair[1] is not None else _money(requested * rate)
        elif not _within(op, amount, local=use_local):
            return "The amount is out of the operator's range"
        elif use_local:
            requested, delivered = _money(amount / rate), amount
        else:
            requested, delivered = amount, _money(amount * rate)
        discount = _money(requested * Decimal(str(op["internationalDiscount"])) / 100)
        return requested, delivered, op["destinationCurrencyCode"], discount

    def pin_detail(self) -> dict[str, Any]:
        """A PIN as the reference shows one: ``code`` and ``serial`` integers, how to use it."""
        return {
            "serial": secrets.randbelow(10**6) + 10**5,
            "info": "DIAL *611",
            "value": None,
            "code": secrets.randbelow(9 * 10**14) + 10**14,
            "ivr": "1-888-888-8888",
            "validity": "30 days",
        }

    def make_topup(self, body: dict, reference: str) -> dict | tuple[int, dict]:
        """Make a top-up (under ``lock``): its record, or the refusal (status, body)."""
        number = str(body.get("recipientPhone", {}).get("number", "")).lstrip("+")
        if number.endswith("0000000"):
            return 400, self.error(
                400, "/topups", "INVALID_RECIPIENT_PHONE", "The phone number is not valid"
            )
        refused = next((r for n, r in self.refused_numbers.items() if n.endswith(number)), None)
        if number and refused:
            return 400, self.error(400, "/topups", *refused)
        priced = self.price(body)
        if isinstance(priced, str):
            return 400, self.error(400, "/topups", "INVALID_AMOUNT_FOR_OPERATOR", priced)
        requested, delivered, delivered_currency, discount = priced
        op = self.operator_by_id(body.get("operatorId"))
        email = body.get("recipientEmail")
        if needs_email(op) and not (isinstance(email, str) and "@" in email):
            # The reference documents the field ("only applicable to Nauta Cuba top-ups") and
            # the 400 body, but publishes no errorCode for it: this one is the fake's.
            return 400, self.error(
                400, "/topups", "INVALID_RECIPIENT_EMAIL", "Nauta Cuba top-ups need recipientEmail"
            )
        sender = body.get("senderPhone") or {}
        now = self.now().strftime(TIME_FORMAT)
        old = self.balance
        cost = requested - discount
        self.balance -= cost
        transaction_id = next(self._ids)
        record = {
            "transactionId": transaction_id,
            "status": "SUCCESSFUL",
            "operatorTransactionId": f"OP{transaction_id}",
            "customIdentifier": reference,
            "recipientPhone": number,
            "recipientEmail": email or None,
            "senderPhone": sender.get("number") if isinstance(sender, dict) else None,
            "countryCode": body.get("recipientPhone", {}).get("countryCode"),
            "operatorId": body.get("operatorId"),
            "operatorName": op["name"] if op else None,
            "discount": float(discount),
            "discountCurrencyCode": self.currency,
            "requestedAmount": float(requested),
            "requestedAmountCurrencyCode": self.currency,
            "deliveredAmount": float(delivered),
            "deliveredAmountCurrencyCode": delivered_currency,
            "transactionDate": now,
            # A PIN operator's top-up is a code (TopUpsResponse200.yaml's ``pinDetail``).
            "pinDetail": self.pin_detail() if self.pins or (op and op.get("pin")) else None,
            "balanceInfo": {
                "oldBalance": float(old),
                "newBalance": float(self.balance),
                "currencyCode": self.currency,
                "currencyName": self.currency,
                "updatedAt": now,
            },
        }
        self.topups[reference] = record
        self.costs[reference] = cost
        return record

    def report(self, query: dict[str, str]) -> list[dict]:
        """Report lines (no ``balanceInfo``, as the reference shows them) by custom identifier
        and ``startDate``/``endDate``, oldest first (under ``lock``)."""
        reference = query.get("customIdentifier")
        start, end = query.get("startDate"), query.get("endDate")
        lines = []
        for ref, record in self.topups.items():
            if self.list_after_answer and ref not in self.answered:
                continue
            if reference is not None and ref != reference:
                continue
            if reference is None and ref in self.omitted:
                continue
            if start and record["transactionDate"] < start:
                continue
            if end and record["transactionDate"] > end:
                continue
            lines.append({**record, "balanceInfo": None})
        return sorted(lines, key=lambda line: line["transactionId"])

    def _handler(self):
        fake = self

        class Handler(KeptHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, body: Any, headers: dict | None = None):
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header(
                    "Content-Type", "text/html" if isinstance(body, str) else "application/json"
                )
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)

            def _error(self, status: int, error_code: str | None, message: str):
                path = urlparse(self.path).path
                return self._send(status, fake.error(status, path, error_code, message))

            def _body(self) -> dict | None:
                """The JSON body, or None when it is cut short (a client killed mid-send):
                a provider acts on no half a request."""
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length)
                if len(data) < length:
                    return None
                try:
                    return json.loads(data or b"{}")
                except ValueError:
                    return None

            def _client(self) -> str | None:
                """The client id of the request's token, None when it has no valid one."""
                auth = self.headers.get("Authorization", "")
                with fake.lock:
                    return fake.tokens.get(auth[7:]) if auth.startswith("Bearer ") else None

            def _log(self, client: str) -> None:
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                with fake.lock:
                    fake.requests.append((self.command, url.path, query, client))

            def do_POST(self):
                path = urlparse(self.path).path
                if path == "/oauth/token":
                    body = self._body() or {}
                    if body.get("grant_type") != "client_credentials" or not body.get("client_id"):
                        return self._error(401, "INVALID_CREDENTIALS", "Access Denied")
                    with fake.lock:
                        fake.token_requests += 1
                        token = f"tok-{fake.token_requests}"
                        fake.tokens[token] = str(body["client_id"])
                    return self._send(
                        200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer"}
                    )
                if path == "/topups":
                    return self._topup()
                return self._send(404, {"status": 404, "error": "Not Found", "path": path})

            def _topup(self):
                with fake.lock:
                    fake.active += 1
                    fake.max_concurrent_topups = max(fake.max_concurrent_topups, fake.active)
                try:
                    return self._topup_answer()
                finally:
                    with fake.lock:
                        fake.active -= 1

            def _topup_answer(self):
                client = self._client()
                if client is None:
                    return self._error(401, "TOKEN_EXPIRED", "expired")
                self._log(client)
                body = self._body()
                if body is None or not body.get("customIdentifier"):
                    return self._error(400, "BAD_REQUEST", "bad body")
                reference = body["customIdentifier"]
                with fake.lock:
                    fake.received[reference] = body
                action = fake.script.popleft() if fake.script else None
                if action and action[0] == "refuse":
                    status, code, message = action[1]
                    with fake.lock:
                        fake.calls[reference] += 1
                    return self._error(status, code, message)
                if action and action[0] == "fail" and not action[1][3]:
                    status, fail_body, headers, _ = action[1]
                    with fake.lock:
                        fake.calls[reference] += 1
                    return self._send(status, fail_body, headers)
                with fake.lock:
                    fake.calls[reference] += 1
                    if reference in fake.topups:
                        return self._send(
                            409,
                            fake.error(409, "/topups", "DUPLICATED_CUSTOM_IDENTIFIER", "duplicate"),
                        )
                    made = fake.make_topup(body, reference)
                    if isinstance(made, tuple):
                        return self._send(*made)
                if action and action[0] == "fail":  # made, then the answer is an error
                    status, fail_body, headers, _ = action[1]
                    with fake.lock:
                        fake.answered.add(reference)
                    return self._send(status, fail_body, headers)
                # The provider's latency, simulated: the point of the fake, not a wait.
                if action and action[0] == "slow":
                    time.sleep(float(action[1]))
                elif fake.delay:
                    time.sleep(fake.delay)
                with fake.lock:
                    fake.answered.add(reference)
                return self._send(200, made)

            def do_GET(self):
                url = urlparse(self.path)
                client = self._client()
                if client is None:
                    return self._error(401, "TOKEN_EXPIRED", "expired")
                self._log(client)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/accounts/balance":
                    with fake.lock:
                        balance = float(fake.balance)
                    return self._send(
                        200,
                        {
                            "balance": balance,
                            "currencyCode": fake.currency,
                            "currencyName": fake.currency,
                            "updatedAt": fake.now().strftime(TIME_FORMAT),
                        },
                    )
                if url.path == "/topups/reports/transactions":
                    if fake.lookup_script:
                        return self._send(fake.lookup_script.popleft(), {"message": "down"})
                    with fake.lock:
                        lines = fake.report(query)
                    return self._paged(lines, query)
                if url.path == "/operators":
                    return self._paged(self._operators(fake.operators, query), query)
                if url.path.startswith("/operators/auto-detect/phone/"):
                    return self._auto_detect(url.path)
                if url.path.startswith("/operators/countries/"):
                    iso = url.path.rsplit("/", 1)[1].upper()
                    found = [o for o in fake.operators if o["country"]["isoName"] == iso]
                    if not found:
                        return self._error(
                            404,
                            "COUNTRY_NOT_SUPPORTED",
                            "Country not found and/or not currently supported",
                        )
                    return self._send(200, self._operators(found, query))
                return self._send(404, {"status": 404, "error": "Not Found", "path": url.path})

            def _auto_detect(self, path: str):
                parts = path.split("/")  # "", operators, auto-detect, phone, P, countries, ISO
                if len(parts) != 7 or parts[5] != "countries":
                    return self._send(404, {"status": 404, "error": "Not Found", "path": path})
                phone, iso = parts[4], parts[6].upper()
                if len(iso) != 2:
                    return self._error(
                        404,
                        None,
                        "Country code must be 2 characters ISO-Alpha-2 country code.",
                    )
                digits = _e164_digits(phone, iso)
                with fake.lock:
                    fake.lookups[f"+{digits}"] += 1
                if fake.lookup_delay:
                    time.sleep(fake.lookup_delay)  # the provider's latency, simulated
                if fake.lookup_status is not None:
                    return self._send(fake.lookup_status, {"message": "down"})
                found = fake.operator_of_number(digits)
                if found is None or found["country"]["isoName"] != iso:
                    return self._error(
                        404,
                        "COULD_NOT_AUTO_DETECT_OPERATOR",
                        "Could not retrieve/auto detect operator for the given phone number",
                    )
                return self._send(200, found)

            def _operators(self, operators: list[dict], query: dict[str, str]) -> list[dict]:
                """``includeBundles``, ``includeData`` and ``includePin`` (default true)."""
                shown = operators
                for param, flag in (
                    ("includeBundles", "bundle"),
                    ("includeData", "data"),
                    ("includePin", "pin"),
                ):
                    if query.get(param, "true").lower() == "false":
                        shown = [o for o in shown if not o.get(flag)]
                return shown

            def _paged(self, items: list[dict], query: dict[str, str]):
                try:
                    page, size = int(query.get("page", "1")), int(query.get("size", "200"))
                except ValueError:
                    page = size = 0
                if page < 1 or size < 1:
                    return self._error(400, "INVALID_PAGE", "page and size start at 1")
                return self._send(200, page_of(items, page, size))

        return Handler


def _e164_digits(phone: str, iso: str) -> str:
    """The E.164 digits of an auto-detect ``phone``: national (``08147658721`` with ``NG``) or
    international without the plus (``2348147658721``)."""
    candidates = [f"+{phone}", phone] if not phone.startswith("0") else [phone]
    for candidate in candidates:
        try:
            number = phonenumbers.parse(candidate, iso)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.region_code_for_number(number) == iso and phonenumbers.is_valid_number(
            number
        ):
            return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)[1:]
    return phone


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="A fake of Reloadly's Airtime API (auth and API on one port)."
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    fake = FakeReloadly(host=args.host, port=args.port).start()
    print(fake.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
