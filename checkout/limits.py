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
from django.utils.formats import date_format
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
from reseller.ratelimit import Decision

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


# What a counted payment adds to a window: (its checkout, since when it counts, for how long at
# most, its weight). A payment not paid yet (its charge in flight: waiting for 3-D Secure)
# counts until its price hold ends at the latest, when the sweeper cancels it.
@dataclass(frozen=True)
class _Entry:
    pk: int
    at: datetime
    expires_at: datetime | None
    weight: Decimal

    def leaves(self, window: timedelta) -> datetime:
        """When it leaves a window of this length."""
        end = self.at + window
        return min(end, self.expires_at) if self.expires_at is not None else end


# The fields of a counted CardCheckout an _Entry is made of (``prefix``: the path to it).
def _entry_fields(prefix: str = "") -> list[str]:
    return [f"{prefix}{name}" for name in ("pk", "limit_counted_at", "completed_at", "expires_at")]


def _entries(rows, *, weight: str | None = None, prefix: str = "") -> list[_Entry]:
    """The counted payments of ``rows`` (a CardCheckout queryset, or one that reaches it by
    ``prefix``), each weighing 1 or its ``weight`` field."""
    fields = _entry_fields(prefix) + ([weight] if weight else [])
    found = []
    for values in rows.values_list(*fields):
        pk, at, completed_at, expires_at = values[:4]
        if at is None:
            continue  # the filter says so; the type does not
        found.append(
            _Entry(
                pk=pk,
                at=at,
                expires_at=expires_at if completed_at is None else None,
                weight=Decimal(1) if weight is None else Decimal(values[4] or 0),
            )
        )
    return found


def _refusal_wait(
    entries: list[_Entry],
    *,
    cap: Decimal,
    adding: Decimal,
    now,
    window: timedelta = WINDOW,
    count: bool = False,
) -> float | None:
    """None when ``adding`` fits now; else the seconds to wait (``math.inf``: never).
    ``count``: every entry weighs 1 (a count of payments, not their amounts)."""
    weights = [(entry, Decimal(1) if count else entry.weight) for entry in entries]
    total = sum((weight for _entry, weight in weights), Decimal(0))
    if total + adding <= cap:
        return None
    if adding > cap:
        return math.inf
    for entry, weight in sorted(weights, key=lambda pair: pair[0].leaves(window)):
        total -= weight
        if total + adding <= cap:
            return max(1.0, (entry.leaves(window) - now).total_seconds())
    return math.inf  # not reached: the loop empties the window


def _duration(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    if minutes < 60:
        return _("%(minutes)d min") % {"minutes": minutes}
    return _("%(hours)d h %(minutes)d min") % {"hours": minutes // 60, "minutes": minutes % 60}


def _when(seconds: float, *, now) -> str:
    """ "in 2 h 5 min (at 17:07 UTC)", with the day when it is not today's (in UTC)."""
    if seconds == math.inf:
        return _("later")
    at = (now + timedelta(seconds=seconds)).astimezone(UTC)
    values = {"duration": _duration(seconds), "time": at.strftime("%H:%M")}
    if at.date() == now.astimezone(UTC).date():
        return _("in %(duration)s (at %(time)s UTC)") % values
    # Another day (tomorrow, for a 24-hour limit): the day too, as the reader's language
    # writes a day of a month ("November 28", "28 de noviembre", "28 novembre").
    return _("in %(duration)s (on %(day)s at %(time)s UTC)") % {
        **values,
        "day": date_format(at, "MONTH_DAY_FORMAT"),
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


@dataclass(frozen=True)
class _Refusal:
    wait: float
    detail: str
    entries: list[_Entry] = field(default_factory=list)  # what counted against it
    limit: int | Decimal = field(kw_only=True)  # the cap reached: payments, recharges or EUR
    window: timedelta = field(kw_only=True)  # what it is counted over


def _waiting_of(
    purchase: Purchase, *, now: datetime, exclude_pk: int | None
) -> dict[int, datetime]:
    """The buyer's own card payments waiting for the bank (3-D Secure), which count until
    finished, cancelled or expired: checkout pk -> when its price hold ends."""
    rows = CardCheckout.objects.filter(
        limit_counted_at__isnull=False,
        completed_at__isnull=True,
        expires_at__gt=now,
        payment__isnull=False,
    ).exclude(payment_intent_id="")
    if purchase.guest:
        rows = rows.filter(guest_email__iexact=purchase.guest_email)
    else:
        rows = rows.filter(account=purchase.account)
    if exclude_pk:
        rows = rows.exclude(pk=exclude_pk)
    return dict(rows.values_list("pk", "expires_at"))


def purchase_check(
    purchase: Purchase, *, now: datetime | None = None, exclude_pk: int | None = None
) -> None:
    """Refuse the purchase (``CardLimitReached``) if it would pass any limit. ``exclude_pk``:
    the checkout being paid, whose own earlier attempt must not count against it."""
    card_keys_check(numbers=purchase.numbers, fingerprint=purchase.fingerprint)
    now = now or timezone.now()
    since = now - WINDOW
    refusals: list[_Refusal] = []
    account = purchase.account
    caps = caps_for(account)
    new_until = account.created_at + timedelta(days=caps.new_account_days)
    if purchase.guest:
        refusals += _guest_refusals(purchase, since=since, now=now, exclude_pk=exclude_pk)
    elif new_until > now:
        rows = _entries(
            _counted(since=since, exclude_pk=exclude_pk).filter(account=account),
            weight="limit_amount_eur",
        )
        grown_up = (new_until - now).total_seconds()
        cap = caps.new_account_per_day
        wait = _refusal_wait(rows, cap=Decimal(cap), adding=Decimal(1), now=now, count=True)
        if wait is not None:
            wait = min(wait, grown_up)
            refusals.append(
                _Refusal(
                    wait,
                    ngettext(
                        "A new account can pay by card at most %(count)d time in 24 hours. "
                        "Nothing was charged; you can pay by card again %(when)s.",
                        "A new account can pay by card at most %(count)d times in 24 hours. "
                        "Nothing was charged; you can pay by card again %(when)s.",
                        cap,
                    )
                    % {"count": cap, "when": _when(wait, now=now)},
                    rows,
                    limit=cap,
                    window=WINDOW,
                )
            )
        cap_amount = Decimal(caps.new_account_amount_per_day)
        wait = _refusal_wait(rows, cap=cap_amount, adding=purchase.amount_eur, now=now)
        if wait is not None:
            wait = min(wait, grown_up)
            refusals.append(
                _Refusal(
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
                    rows,
                    limit=cap_amount,
                    window=WINDOW,
                )
            )
    # The house guest account's first payment and hour are every guest's: a guest has the
    # caps above instead.
    if not purchase.guest:
        first_cap = Decimal(caps.first_purchase_amount)
        if purchase.amount_eur > first_cap and _first_purchase(account, exclude_pk=exclude_pk):
            refusals.append(
                _Refusal(
                    math.inf,
                    _(
                        "A first card payment can be at most %(amount)s EUR, and this one is "
                        "%(this)s EUR. Nothing was charged; pay a smaller amount first."
                    )
                    % {"amount": first_cap, "this": purchase.amount_eur},
                    limit=first_cap,
                    window=WINDOW,
                )
            )
        cap = caps.per_account_per_hour
        entries = _entries(
            _counted(since=now - HOUR, exclude_pk=exclude_pk).filter(account=account)
        )
        wait = _refusal_wait(entries, cap=Decimal(cap), adding=Decimal(1), now=now, window=HOUR)
        if wait is not None:
            refusals.append(
                _Refusal(
                    wait,
                    ngettext(
                        "This account can pay by card at most %(count)d time in one hour. "
                        "Nothing was charged; you can pay by card again %(when)s.",
                        "This account can pay by card at most %(count)d times in one hour. "
                        "Nothing was charged; you can pay by card again %(when)s.",
                        cap,
                    )
                    % {"count": cap, "when": _when(wait, now=now)},
                    entries,
                    limit=cap,
                    window=HOUR,
                )
            )
    if purchase.address:
        rows = _entries(
            _counted(since=since, exclude_pk=exclude_pk).filter(client_address=purchase.address)
        )
        for window, cap in ((WINDOW, caps.per_address_per_day), (HOUR, caps.per_address_per_hour)):
            entries = [entry for entry in rows if entry.at >= now - window]
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
            refusals.append(
                _Refusal(
                    wait,
                    message % {"count": cap, "when": _when(wait, now=now)},
                    entries,
                    limit=cap,
                    window=window,
                )
            )
    cap = caps.per_number_per_day
    for number, units in sorted(purchase.numbers.items()):
        lines = OrderLine.objects.filter(
            recipient_number=number,
            order__payment__card_checkout__payment__isnull=False,
            order__payment__card_checkout__limit_counted_at__gte=since,
        )
        if exclude_pk:
            lines = lines.exclude(order__payment__card_checkout__pk=exclude_pk)
        entries = _entries(lines, weight="quantity", prefix="order__payment__card_checkout__")
        wait = _refusal_wait(entries, cap=Decimal(cap), adding=Decimal(units), now=now)
        if wait is not None:
            what = (
                _("you can pay by card for it again %(when)s.") % {"when": _when(wait, now=now)}
                if wait != math.inf
                else _("send fewer recharges to it in one payment.")
            )
            refusals.append(
                _Refusal(
                    wait,
                    ngettext(
                        "At most %(count)d card-paid recharge can go to %(number)s in 24 hours. "
                        "Nothing was charged; %(what)s",
                        "At most %(count)d card-paid recharges can go to %(number)s in 24 hours. "
                        "Nothing was charged; %(what)s",
                        cap,
                    )
                    % {"count": cap, "number": number, "what": what},
                    entries,
                    limit=cap,
                    window=WINDOW,
                )
            )
    if purchase.fingerprint:
        cap = caps.per_card_per_day
        entries = _entries(
            _counted(since=since, exclude_pk=exclude_pk).filter(
                card_fingerprint=purchase.fingerprint
            )
        )
        wait = _refusal_wait(entries, cap=Decimal(cap), adding=Decimal(1), now=now)
        if wait is not None:
            refusals.append(
                _Refusal(
                    wait,
                    ngettext(
                        "This card has reached its limit of %(count)d payment in 24 hours. "
                        "Nothing was charged; use another card or try again %(when)s.",
                        "This card has reached its limit of %(count)d payments in 24 hours. "
                        "Nothing was charged; use another card or try again %(when)s.",
                        cap,
                    )
                    % {"count": cap, "when": _when(wait, now=now)},
                    entries,
                    limit=cap,
                    window=WINDOW,
                )
            )
    if refusals:
        refusal = max(refusals, key=lambda found: found.wait)
        detail = refusal.detail
        waiting = _waiting_of(purchase, now=now, exclude_pk=exclude_pk)
        own = [waiting[entry.pk] for entry in refusal.entries if entry.pk in waiting]
        if own:  # the buyer's own payment waiting for the bank is in the way: say so
            detail += " " + _(
                "A card payment of yours waiting for your bank (3-D Secure) counts until you "
                "finish or cancel it on its page (Payments), or until it expires %(when)s."
            ) % {"when": _when((min(own) - now).total_seconds(), now=now)}
        seconds = WINDOW.total_seconds() if refusal.wait == math.inf else refusal.wait
        # Retry-After and the RateLimit headers of every 429 (contract section 2), as the
        # request limits give them: the cap reached, none left, over its window.
        decision = Decision(
            allowed=False,
            limit=int(refusal.limit),
            remaining=0,
            reset=max(1, math.ceil(seconds)),
            window=int(refusal.window.total_seconds()),
        )
        raise CardLimitReached(detail, retry_after=decision.reset, headers=decision.headers())


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
) -> list[_Refusal]:
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
    refusals: list[_Refusal] = []
    for rows in keys:
        entries = _entries(rows, weight="limit_amount_eur")
        wait = _refusal_wait(entries, cap=Decimal(cap), adding=Decimal(1), now=now, count=True)
        if wait is not None:
            refusals.append(
                _Refusal(
                    wait,
                    ngettext(
                        "Without an account you can pay by card at most %(count)d time in 24 "
                        "hours. Nothing was charged; log in or sign up, or try again %(when)s.",
                        "Without an account you can pay by card at most %(count)d times in 24 "
                        "hours. Nothing was charged; log in or sign up, or try again %(when)s.",
                        cap,
                    )
                    % {"count": cap, "when": _when(wait, now=now)},
                    entries,
                    limit=cap,
                    window=WINDOW,
                )
            )
        wait = _refusal_wait(entries, cap=cap_amount, adding=purchase.amount_eur, now=now)
        if wait is not None:
            refusals.append(
                _Refusal(
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
                    entries,
                    limit=cap_amount,
                    window=WINDOW,
                )
            )
    return refusals
