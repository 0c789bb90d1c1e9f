"""Card purchase limits (docs/fraud.md, decisions section 16): read and locked; the one
write is checkout's record that a payment counts (``limits_reserve``).

What counts against a limit is a card payment of an order, or a card top-up of the wallet,
whose charge is in flight or captured: its ``CardCheckout.limit_counted_at`` is set (by
``limits_reserve``) when the PaymentIntent is about to be created, cleared again when that
attempt fails, and kept once the money is taken.
A payment prepared and never confirmed never counts.

- new account (younger than ``CARD_LIMIT_NEW_ACCOUNT_DAYS``): at most
  ``CARD_LIMIT_NEW_ACCOUNT_PER_DAY`` card payments and ``CARD_LIMIT_NEW_ACCOUNT_AMOUNT_PER_DAY``
  EUR in 24 h, per account;
- any account: ``CARD_LIMIT_PER_NUMBER_PER_DAY`` card-paid recharges (units) to one recipient
  number and ``CARD_LIMIT_PER_CARD_PER_DAY`` payments with one card (its Stripe fingerprint) in
  24 h, all accounts together.

``purchase_check`` refuses with ``CardLimitReached`` (429, ``Retry-After``). Prepare calls it
without locks (a limit already reached is refused early); checkout calls ``purchase_lock``
first, in the transaction that then records the payment as counted: PostgreSQL's
transaction-level advisory locks on the account, each number and the card, always taken in
the same (sorted) order, serialise every check-and-record of one key across processes, so
concurrent checkouts at a limit let exactly the allowed number through.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.models import Account, User
from catalog.errors import FxRateNotFound
from catalog.selectors import fx_convert
from checkout.disputes import card_keys_check
from checkout.errors import CardLimitReached, CardPurchasesFrozen
from checkout.models import CARD_LIMITS, CardCheckout, CardLimitOverride
from orders.models import OrderLine
from payments import gateway
from reseller.db import advisory_xact_lock
from reseller.errors import ApplicationError

logger = logging.getLogger(__name__)

WINDOW = timedelta(hours=24)
HOUR = timedelta(hours=1)
LIMIT_CURRENCY = "EUR"


@dataclass(frozen=True)
class Purchase:
    """What a card payment would add to the counts."""

    account: Account
    amount_eur: Decimal
    numbers: dict[str, int] = field(default_factory=dict)  # recipient number -> units
    fingerprint: str = ""
    address: str = ""  # the client's network address (per-address limits)
    # A guest's purchase (no account of its own): counted per email, client address and card
    # against the guest caps instead of the house account's own limits.
    guest_email: str = ""

    @property
    def guest(self) -> bool:
        return bool(self.guest_email)


def amount_in_eur(amount: Decimal, currency: str) -> Decimal:
    """The amount in the limits' currency; with no exchange rate, taken as it is (a cap is
    not worth refusing a sale over a missing rate; the FX table always has EUR's seeds)."""
    try:
        return fx_convert(amount=amount, from_currency=currency, to_currency=LIMIT_CURRENCY)[0]
    except FxRateNotFound:
        return Decimal(amount)


def numbers_of(lines: Iterable) -> dict[str, int]:
    """Units per recipient number of priced lines or order lines."""
    units: dict[str, int] = {}
    for line in lines:
        units[line.recipient_number] = units.get(line.recipient_number, 0) + line.quantity
    return units


def order_lines(*, order_id: int) -> list[OrderLine]:
    return list(OrderLine.objects.filter(order_id=order_id))


def _lock_id(kind: str, value: str) -> int:
    digest = hashlib.sha256(f"card-limit:{kind}:{value}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def purchase_lock(purchase: Purchase) -> None:
    """Inside the transaction that checks and records: wait for the advisory locks of every
    key the purchase counts against, in a fixed order (no two checkouts deadlock)."""
    keys = {_lock_id("account", str(purchase.account.pk))}
    keys |= {_lock_id("number", number) for number in purchase.numbers}
    if purchase.fingerprint:
        keys.add(_lock_id("card", purchase.fingerprint))
    if purchase.address:
        keys.add(_lock_id("address", purchase.address))
    if purchase.guest:
        keys.add(_lock_id("guest-email", purchase.guest_email.lower()))
    for key in sorted(keys):
        advisory_xact_lock(key, wait=True)


def _counted(*, since: datetime, exclude_pk: int | None):
    """Card payments and card top-ups counted since ``since``."""
    rows = CardCheckout.objects.filter(limit_counted_at__gte=since)
    return rows.exclude(pk=exclude_pk) if exclude_pk else rows


def _refusal_wait(
    entries: list[tuple[datetime, Decimal]],
    *,
    cap: Decimal,
    adding: Decimal,
    now,
    window: timedelta = WINDOW,
) -> float | None:
    """None when ``adding`` fits now; else the seconds to wait (``math.inf``: never)."""
    total = sum((weight for _at, weight in entries), Decimal(0))
    if total + adding <= cap:
        return None
    if adding > cap:
        return math.inf
    for at, weight in sorted(entries, key=lambda entry: entry[0]):
        total -= weight
        if total + adding <= cap:
            return max(1.0, (at + window - now).total_seconds())
    return math.inf  # not reached: the loop empties the window


def _duration(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    if minutes < 60:
        return _("%(minutes)d min") % {"minutes": minutes}
    return _("%(hours)d h %(minutes)d min") % {"hours": minutes // 60, "minutes": minutes % 60}


def _when(seconds: float, *, now) -> str:
    if seconds == math.inf:
        return _("later")
    at = (now + timedelta(seconds=seconds)).astimezone(UTC)
    return _("in %(duration)s (at %(time)s UTC)") % {
        "duration": _duration(seconds),
        "time": at.strftime("%H:%M"),
    }


@dataclass(frozen=True)
class Caps:
    """The limits one account's card purchases are held to: each setting, or the account's
    own value staff set (``CardLimitOverride``)."""

    new_account_days: int
    new_account_per_day: int
    new_account_amount_per_day: int
    per_number_per_day: int
    per_card_per_day: int
    per_account_per_hour: int
    per_address_per_day: int
    per_address_per_hour: int
    first_purchase_amount: int


def caps_for(account: Account) -> Caps:
    override = CardLimitOverride.objects.filter(account_id=account.pk).first()
    values = {}
    for name, setting in CARD_LIMITS:
        own = getattr(override, name) if override is not None else None
        values[name] = own if own is not None else getattr(settings, setting)
    return Caps(**values)


def _first_purchase(account: Account, *, exclude_pk: int | None) -> bool:
    """Has the account no card payment or top-up counted or taken yet (this one aside)?"""
    earlier = CardCheckout.objects.filter(account=account).filter(
        Q(limit_counted_at__isnull=False) | Q(completed_at__isnull=False)
    )
    if exclude_pk:
        earlier = earlier.exclude(pk=exclude_pk)
    return not earlier.exists()


def _times(rows) -> list[tuple[datetime, Decimal]]:
    return [(at, Decimal(1)) for at in rows if at is not None]


def purchase_check(
    purchase: Purchase, *, now: datetime | None = None, exclude_pk: int | None = None
) -> None:
    """Refuse the purchase (``CardLimitReached``) if it would pass any limit. ``exclude_pk``:
    the checkout being paid, whose own earlier attempt must not count against it."""
    card_keys_check(numbers=purchase.numbers, fingerprint=purchase.fingerprint)
    now = now or timezone.now()
    since = now - WINDOW
    refusals: list[tuple[float, str]] = []
    account = purchase.account
    caps = caps_for(account)
    new_until = account.created_at + timedelta(days=caps.new_account_days)
    if purchase.guest:
        refusals += _guest_refusals(purchase, since=since, now=now, exclude_pk=exclude_pk)
    elif new_until > now:
        rows = list(
            _counted(since=since, exclude_pk=exclude_pk)
            .filter(account=account)
            .values_list("limit_counted_at", "limit_amount_eur")
        )
        grown_up = (new_until - now).total_seconds()
        cap = caps.new_account_per_day
        wait = _refusal_wait(
            [(at, Decimal(1)) for at, _amount in rows], cap=Decimal(cap), adding=Decimal(1), now=now
        )
        if wait is not None:
            wait = min(wait, grown_up)
            refusals.append(
                (
                    wait,
                    ngettext(
                        "A new account can pay by card at most %(count)d time in 24 hours. "
                        "Nothing was charged; you can pay by card again %(when)s.",
                        "A new account can pay by card at most %(count)d times in 24 hours. "
                        "Nothing was charged; you can pay by card again %(when)s.",
                        cap,
                    )
                    % {"count": cap, "when": _when(wait, now=now)},
                )
            )
        cap_amount = Decimal(caps.new_account_amount_per_day)
        wait = _refusal_wait(
            [(at, amount or Decimal(0)) for at, amount in rows],
            cap=cap_amount,
            adding=purchase.amount_eur,
            now=now,
        )
        if wait is not None:
            wait = min(wait, grown_up)
            refusals.append(
                (
                    wait,
                    _(
                        "A new account can pay at most %(amount)s EUR by card in 24 hours, and "
                        "this payment is %(this)s EUR. Nothing was charged; you can pay it by "
                        "card %(when)s."
                    )
                    % {
                        "amount": cap_amount,
                        "this": purchase.amount_eur,
                        "when": _when(wait, now=now),
                    },
                )
            )
    # The house guest account's first payment and hour are every guest's: a guest has the
    # caps above instead.
    if not purchase.guest:
        first_cap = Decimal(caps.first_purchase_amount)
        if purchase.amount_eur > first_cap and _first_purchase(account, exclude_pk=exclude_pk):
            refusals.append(
                (
                    math.inf,
                    _(
                        "A first card payment can be at most %(amount)s EUR, and this one is "
                        "%(this)s EUR. Nothing was charged; pay a smaller amount first."
                    )
                    % {"amount": first_cap, "this": purchase.amount_eur},
                )
            )
        hour_ago = now - HOUR
        cap = caps.per_account_per_hour
        entries = _times(
            _counted(since=hour_ago, exclude_pk=exclude_pk)
            .filter(account=account)
            .values_list("limit_counted_at", flat=True)
        )
        wait = _refusal_wait(entries, cap=Decimal(cap), adding=Decimal(1), now=now, window=HOUR)
        if wait is not None:
            refusals.append(
                (
                    wait,
                    ngettext(
                        "This account can pay by card at most %(count)d time in one hour. "
                        "Nothing was charged; you can pay by card again %(when)s.",
                        "This account can pay by card at most %(count)d times in one hour. "
                        "Nothing was charged; you can pay by card again %(when)s.",
                        cap,
                    )
                    % {"count": cap, "when": _when(wait, now=now)},
                )
            )
    if purchase.address:
        rows_at = list(
            _counted(since=since, exclude_pk=exclude_pk)
            .filter(client_address=purchase.address)
            .values_list("limit_counted_at", flat=True)
        )
        for window, cap in ((WINDOW, caps.per_address_per_day), (HOUR, caps.per_address_per_hour)):
            entries = _times(at for at in rows_at if at is not None and at >= now - window)
            wait = _refusal_wait(
                entries, cap=Decimal(cap), adding=Decimal(1), now=now, window=window
            )
            if wait is None:
                continue
            message = (
                ngettext(
                    "At most %(count)d card payment can be made from one network address in 24 "
                    "hours. Nothing was charged; you can pay by card again %(when)s.",
                    "At most %(count)d card payments can be made from one network address in 24 "
                    "hours. Nothing was charged; you can pay by card again %(when)s.",
                    cap,
                )
                if window == WINDOW
                else ngettext(
                    "At most %(count)d card payment can be made from one network address in one "
                    "hour. Nothing was charged; you can pay by card again %(when)s.",
                    "At most %(count)d card payments can be made from one network address in one "
                    "hour. Nothing was charged; you can pay by card again %(when)s.",
                    cap,
                )
            )
            refusals.append((wait, message % {"count": cap, "when": _when(wait, now=now)}))
    cap = caps.per_number_per_day
    for number, units in sorted(purchase.numbers.items()):
        lines = OrderLine.objects.filter(
            recipient_number=number,
            order__payment__card_checkout__payment__isnull=False,
            order__payment__card_checkout__limit_counted_at__gte=since,
        )
        if exclude_pk:
            lines = lines.exclude(order__payment__card_checkout__pk=exclude_pk)
        entries = [
            (at, Decimal(quantity))
            for at, quantity in lines.values_list(
                "order__payment__card_checkout__limit_counted_at", "quantity"
            )
            if at is not None  # the filter says so; the type does not
        ]
        wait = _refusal_wait(entries, cap=Decimal(cap), adding=Decimal(units), now=now)
        if wait is not None:
            what = (
                _("you can pay by card for it again %(when)s.") % {"when": _when(wait, now=now)}
                if wait != math.inf
                else _("send fewer recharges to it in one payment.")
            )
            refusals.append(
                (
                    wait,
                    ngettext(
                        "At most %(count)d card-paid recharge can go to %(number)s in 24 hours. "
                        "Nothing was charged; %(what)s",
                        "At most %(count)d card-paid recharges can go to %(number)s in 24 hours. "
                        "Nothing was charged; %(what)s",
                        cap,
                    )
                    % {"count": cap, "number": number, "what": what},
                )
            )
    if purchase.fingerprint:
        cap = caps.per_card_per_day
        entries = [
            (at, Decimal(1))
            for at in _counted(since=since, exclude_pk=exclude_pk)
            .filter(card_fingerprint=purchase.fingerprint)
            .values_list("limit_counted_at", flat=True)
            if at is not None
        ]
        wait = _refusal_wait(entries, cap=Decimal(cap), adding=Decimal(1), now=now)
        if wait is not None:
            refusals.append(
                (
                    wait,
                    ngettext(
                        "This card has reached its limit of %(count)d payment in 24 hours. "
                        "Nothing was charged; use another card or try again %(when)s.",
                        "This card has reached its limit of %(count)d payments in 24 hours. "
                        "Nothing was charged; use another card or try again %(when)s.",
                        cap,
                    )
                    % {"count": cap, "when": _when(wait, now=now)},
                )
            )
    if refusals:
        wait, detail = max(refusals, key=lambda refusal: refusal[0])
        seconds = WINDOW.total_seconds() if wait == math.inf else wait
        raise CardLimitReached(detail, retry_after=math.ceil(seconds))


def three_d_secure_required(checkout: CardCheckout) -> bool:
    """Must the bank authenticate the cardholder (3-D Secure)? Above ``CARD_3DS_ABOVE_EUR``."""
    return amount_in_eur(checkout.amount, checkout.currency) > Decimal(settings.CARD_3DS_ABOVE_EUR)


def limits_reserve(checkout: CardCheckout, *, payment_method: str, address: str = "") -> None:
    """Before the PaymentIntent is created (no transaction open): read the card's fingerprint
    from Stripe, then under the limits' advisory locks count every limit again and either
    refuse (``CardLimitReached``, nothing charged, the attempt cleared) or record the payment
    as counted, and commit, so the next checkout at the limit sees it. The lock is released
    before Stripe is asked to charge; a failed attempt gives its place back."""
    try:
        fingerprint = gateway.card_fingerprint(payment_method=payment_method)
    except ApplicationError:
        CardCheckout.objects.filter(pk=checkout.pk).update(attempt_started_at=None)
        raise
    payment = checkout.payment  # None for a card top-up: it sends to no number
    purchase = Purchase(
        account=checkout.account,
        amount_eur=amount_in_eur(checkout.amount, checkout.currency),
        numbers=numbers_of(order_lines(order_id=payment.order_id)) if payment else {},
        fingerprint=fingerprint,
        address=address or checkout.client_address or "",
        guest_email=checkout.guest_email,
    )
    refused: CardLimitReached | CardPurchasesFrozen | None = None
    with transaction.atomic():
        purchase_lock(purchase)
        now = timezone.now()
        try:
            purchase_check(purchase, now=now, exclude_pk=checkout.pk)
        except (CardLimitReached, CardPurchasesFrozen) as exc:
            refused = exc
            CardCheckout.objects.filter(pk=checkout.pk).update(
                attempt_started_at=None,
                card_fingerprint=fingerprint,
                failure_code=exc.code,
                updated_at=now,
            )
        else:
            CardCheckout.objects.filter(pk=checkout.pk).update(
                card_fingerprint=fingerprint,
                client_address=purchase.address or None,
                limit_counted_at=now,
                limit_amount_eur=purchase.amount_eur,
                updated_at=now,
            )
    if refused is not None:
        logger.info("card checkout %s refused: %s", checkout.public_id, refused.detail)
        raise refused


# -- an account's own limits (staff) --------------------------------------------------------


def card_limits_of(account: Account) -> CardLimitOverride | None:
    return CardLimitOverride.objects.filter(account_id=account.pk).first()


@transaction.atomic
def card_limits_set(
    *, account: Account, values: dict[str, int | None], note: str = "", by: User | None = None
) -> CardLimitOverride | None:
    """Set the account's own card limits: each of ``values`` (a field of ``CARD_LIMITS``) an
    integer of at least 0, or None for the setting again; fields not named keep their value.
    With nothing left of its own, the account's row goes (None)."""
    names = {name for name, _setting in CARD_LIMITS}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"unknown card limits: {', '.join(unknown)}")
    for name, value in values.items():
        if value is not None and (isinstance(value, bool) or not 0 <= value <= 1_000_000):
            raise ValueError(f"{name}: a whole number from 0 to 1000000, or none")
    current = CardLimitOverride.objects.select_for_update().filter(account_id=account.pk).first()
    merged = {name: getattr(current, name) if current else None for name in names}
    merged.update(values)
    note = note[:255] if note else (current.note if current else "")
    if all(value is None for value in merged.values()):
        CardLimitOverride.objects.filter(account_id=account.pk).delete()
        return None
    row, _created = CardLimitOverride.objects.update_or_create(
        account_id=account.pk,
        defaults={**merged, "note": note, "updated_at": timezone.now(), "updated_by": by},
    )
    return row


def _guest_refusals(
    purchase: Purchase, *, since: datetime, now: datetime, exclude_pk: int | None
) -> list[tuple[float, str]]:
    """A guest's caps (``CARD_LIMIT_GUEST_*``), lower than a new account's: guest payments in
    24 h, and their amount, per email, per client address and per card. Any one of the three
    reached refuses, so a new email, a new address or a new card alone does not get around
    them (the per-number and per-card limits of every buyer apply as well)."""
    cap = settings.CARD_LIMIT_GUEST_PER_DAY
    cap_amount = Decimal(settings.CARD_LIMIT_GUEST_AMOUNT_PER_DAY)
    guests = _counted(since=since, exclude_pk=exclude_pk).exclude(guest_email="")
    keys = [guests.filter(guest_email__iexact=purchase.guest_email)]
    if purchase.address:
        keys.append(guests.filter(client_address=purchase.address))
    if purchase.fingerprint:
        keys.append(guests.filter(card_fingerprint=purchase.fingerprint))
    refusals: list[tuple[float, str]] = []
    for rows in keys:
        entries = [
            (at, amount or Decimal(0))
            for at, amount in rows.values_list("limit_counted_at", "limit_amount_eur")
            if at is not None
        ]
        wait = _refusal_wait(
            [(at, Decimal(1)) for at, _amount in entries],
            cap=Decimal(cap),
            adding=Decimal(1),
            now=now,
        )
        if wait is not None:
            refusals.append(
                (
                    wait,
                    ngettext(
                        "Without an account you can pay by card at most %(count)d time in 24 "
                        "hours. Nothing was charged; log in or sign up, or try again %(when)s.",
                        "Without an account you can pay by card at most %(count)d times in 24 "
                        "hours. Nothing was charged; log in or sign up, or try again %(when)s.",
                        cap,
                    )
                    % {"count": cap, "when": _when(wait, now=now)},
                )
            )
        wait = _refusal_wait(entries, cap=cap_amount, adding=purchase.amount_eur, now=now)
        if wait is not None:
            refusals.append(
                (
                    wait,
                    _(
                        "Without an account you can pay at most %(amount)s EUR by card in 24 "
                        "hours, and this payment is %(this)s EUR. Nothing was charged; log in "
                        "or sign up, or try again %(when)s."
                    )
                    % {
                        "amount": cap_amount,
                        "this": purchase.amount_eur,
                        "when": _when(wait, now=now),
                    },
                )
            )
    return refusals
