"""Writes to the wallet ledger. The one place that locks wallet rows and moves money.

Every movement is a LedgerEntry and a change of the cached ``Wallet.balance`` in the same
transaction, under the wallet's row lock (``SELECT … FOR UPDATE``): concurrent debits queue on
the lock, see the balance left by the one before, and can never take it below zero (a
database CHECK is the last line of defence). The entry is unique per (wallet, kind,
reference), so a refund or an approval posted twice is posted once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Account, User
from accounts.services import email_queue_to_account
from emails.models import Email
from emails.outbox import email_queue_to_user
from reseller.ids import make_id
from reseller.money import MONEY_MAX, ZERO, fmt, quantize
from wallet.errors import (
    CardTopUpNeedsPayment,
    InsufficientBalance,
    InvalidAmount,
    TopUpNotPending,
    WalletCurrencyMismatch,
)
from wallet.models import LedgerEntry, TopUp, Wallet
from webhooks.catalogue import WALLET_BALANCE_LOW, WALLET_CREDITED
from webhooks.outbox import event_emit


def wallet_get_or_create(*, account: Account) -> Wallet:
    """The account's live wallet, created empty on first use."""
    # get_or_create survives a concurrent creation: the unique constraint decides, it re-reads.
    wallet, _created = Wallet.objects.get_or_create(
        account=account, kind=Wallet.Kind.LIVE, defaults={"currency": account.wallet_currency}
    )
    return wallet


# Bounds of one wallet top-up (bank transfer or card), in the wallet currency.
TOPUP_MIN = Decimal("1.00")
TOPUP_MAX = Decimal("5000.00")


def wallet_for(*, account: Account, api_key=None) -> Wallet:
    """The wallet a caller pays from: a test key's sandbox balance, else the live wallet."""
    if api_key is not None and not api_key.livemode:
        return sandbox_wallet_for_key(key=api_key)
    return wallet_get_or_create(account=account)


def balance_check(*, wallet: Wallet, amount: Decimal, refusal: str = "") -> None:
    """Refuse (402) a debit of ``amount`` that the (locked) wallet's balance does not cover.

    The refusal says what an order needs and where money comes from, or is ``refusal`` with
    the wallet's ``%(balance)s`` and the debit's ``%(amount)s`` put in (a transfer's)."""
    if wallet.balance >= amount:
        return
    balance, total = fmt(wallet.balance, wallet.currency), fmt(amount, wallet.currency)
    if refusal:
        raise InsufficientBalance(refusal % {"balance": balance, "amount": total})
    detail = _("Available balance %(balance)s is below the order total %(total)s.") % {
        "balance": balance,
        "total": total,
    }
    if wallet.kind == Wallet.Kind.SANDBOX:
        # A new test key's first order: say where test money comes from.
        detail += " " + _(
            "A test key's sandbox balance starts at 0: add test funds on the dashboard "
            "(API keys, then the key's sandbox) or with: python manage.py sandbox_topup "
            "--prefix %(prefix)s --amount 50"
        ) % {"prefix": wallet.api_key.prefix if wallet.api_key else "<key prefix>"}
    else:
        # The live wallet: say how much is missing and where money comes from.
        detail += " " + _(
            "Add at least %(missing)s: top up the wallet by card or bank transfer on the "
            "site's Wallet page, %(url)s"
        ) % {
            "missing": fmt(amount - wallet.balance, wallet.currency),
            "url": settings.SITE_URL.rstrip("/") + reverse("wallet:wallet"),
        }
    raise InsufficientBalance(detail)


def wallet_lock(*, wallet_id: int) -> Wallet:
    """Take the wallet's row lock for the rest of the transaction and read it fresh."""
    return Wallet.objects.select_for_update(of=("self",)).get(pk=wallet_id)


def wallet_lock_for(*, account: Account, api_key=None) -> Wallet:
    """The wallet a caller pays from (as ``wallet_for``), locked: found and locked in one
    read, created first on the caller's first payment."""
    if api_key is not None and not api_key.livemode:
        owner: dict = {"api_key_id": api_key.pk, "kind": Wallet.Kind.SANDBOX}
    else:
        owner = {"account_id": account.pk, "kind": Wallet.Kind.LIVE}
    locked = Wallet.objects.select_for_update(of=("self",)).filter(**owner).first()
    if locked is None:
        locked = wallet_lock(wallet_id=wallet_for(account=account, api_key=api_key).pk)
    return locked


def wallets_lock_top_down(*, accounts: Iterable[Account]) -> dict[int, Wallet]:
    """Lock the live wallets of several accounts of one network, by account id.

    THE LOCK ORDER (docs/network.md, "Lock order"): a transaction that locks more than one
    wallet locks them from the top of the network down: by the account's level (``depth``,
    a parent before its agents), then by account id. A transfer locks the parent's wallet
    before the agent's whichever way the money goes; a delivery's commissions and a
    reversal's take-backs lock the ancestors top down, and the buyer's wallet last (it is the
    deepest). Two transactions that follow this order can wait for each other but never
    deadlock. A transaction that locks one wallet (a purchase, a top-up) is in order anyway.
    """
    ordered = sorted(
        {account.pk: account for account in accounts}.values(),
        key=lambda account: (account.depth, account.pk),
    )
    for account in ordered:
        wallet_get_or_create(account=account)  # outside the lock order's concern: no lock
    return {
        account.pk: Wallet.objects.select_for_update(of=("self",)).get(
            account_id=account.pk, kind=Wallet.Kind.LIVE
        )
        for account in ordered  # one at a time, in this order: the dict keeps it
    }


@transaction.atomic(savepoint=False)  # joins the caller's transaction (and its other writes)
def wallet_transfer(
    *,
    parent: Account,
    agent: Account,
    amount: Decimal,
    currency: str,
    to_agent: bool,
    reference: str,
    memo: str = "",
    by: User | None = None,
) -> tuple[LedgerEntry, LedgerEntry]:
    """Move ``amount`` between a parent's live wallet and its agent's, both ways: a
    ``transfer_out`` entry on the giving wallet and a ``transfer_in`` on the other, in the
    caller's transaction, under both wallets' locks taken parent first (the lock order
    above). Returns ``(out, in)``. The giving wallet's balance is checked under its lock
    (402 ``insufficient_balance``, nothing written); wallets of another currency than
    ``currency`` are 400 ``currency_mismatch``. ``reference`` is new for this move (the
    transfer's id)."""
    amount = _positive(amount)
    wallets = wallets_lock_top_down(accounts=[parent, agent])
    parent_wallet, agent_wallet = wallets[parent.pk], wallets[agent.pk]
    for wallet in (parent_wallet, agent_wallet):
        if wallet.currency != currency:
            raise WalletCurrencyMismatch(
                _("The wallets of this transfer hold %(wallet)s, not %(currency)s.")
                % {"wallet": wallet.currency, "currency": currency}
            )
    giver, taker = (parent_wallet, agent_wallet) if to_agent else (agent_wallet, parent_wallet)
    balance_check(  # said as a transfer, not as an order to top the wallet up for
        wallet=giver,
        amount=amount,
        refusal=(
            _("Your balance %(balance)s is below the transfer's amount %(amount)s.")
            if to_agent
            else _(
                "The agent's balance %(balance)s is below the transfer's amount %(amount)s: "
                "an agent's balance never goes below zero."
            )
        ),
    )
    out, _created = ledger_post(
        wallet=giver,
        kind=LedgerEntry.Kind.TRANSFER_OUT,
        amount=-amount,
        reference=reference,
        memo=memo,
        by=by,
        fresh_reference=True,
    )
    into, _created = ledger_post(
        wallet=taker,
        kind=LedgerEntry.Kind.TRANSFER_IN,
        amount=amount,
        reference=reference,
        memo=memo,
        by=by,
        fresh_reference=True,
    )
    return out, into


@transaction.atomic(savepoint=False)  # the delivery's transaction
def wallet_commissions_post(
    *, credits: Sequence[tuple[Account, Decimal, str, str]]
) -> list[LedgerEntry]:
    """Credit commissions, each ``(account, amount, reference, memo)``: one ``commission``
    entry per account and reference (a second post of one is a no-op), their wallets locked
    from the top of the network down (the lock order above). Amounts are > 0."""
    wallets = wallets_lock_top_down(accounts=[account for account, *_rest in credits])
    posted = []
    for account, amount, reference, memo in credits:
        entry, created = ledger_post(
            wallet=wallets[account.pk],
            kind=LedgerEntry.Kind.COMMISSION,
            amount=_positive(amount),
            reference=reference,
            memo=memo,
        )
        if created:
            posted.append(entry)
    return posted


@transaction.atomic(savepoint=False)  # the reversal's transaction
def wallet_commissions_take_back(
    *, debits: Sequence[tuple[Account, Decimal, str, str]]
) -> list[LedgerEntry]:
    """Take commissions back, each ``(account, amount, reference, memo)`` (what the account
    was credited for a reversed recharge): a ``commission_reversal`` entry of -amount, once
    per wallet and reference (a retry posts nothing), the wallets locked top down, before
    the caller refunds the buyer (deeper). A wallet that spent its commission meanwhile is
    taken below zero and owes it (``MAY_OWE``)."""
    wallets = wallets_lock_top_down(accounts=[account for account, *_rest in debits])
    taken = []
    for account, amount, reference, memo in debits:
        back, created = ledger_post(
            wallet=wallets[account.pk],
            kind=LedgerEntry.Kind.COMMISSION_REVERSAL,
            amount=-_positive(amount),
            reference=reference,
            memo=memo,
        )
        if created:
            taken.append(back)
    return taken


def _positive(amount: Decimal) -> Decimal:
    try:
        value = quantize(amount)
    except Exception as exc:
        raise InvalidAmount() from exc
    if not value.is_finite() or value <= ZERO or value != Decimal(amount):  # NaN: not finite
        raise InvalidAmount()
    return _within_a_money_column(value)


def _within_a_money_column(value: Decimal) -> Decimal:
    """A finite amount a money column can hold; more is refused here, before the database
    (PostgreSQL's numeric overflow, or a row SQLite keeps but cannot read back)."""
    if value > MONEY_MAX:
        raise InvalidAmount(_("The amount must be at most %(max)s.") % {"max": MONEY_MAX})
    return value


# The kinds that may take a balance below zero: the wallet then owes the rest (``dispute_owed``)
# and every credit after repays it first.
MAY_OWE = frozenset({LedgerEntry.Kind.DISPUTE, LedgerEntry.Kind.COMMISSION_REVERSAL})


@transaction.atomic(savepoint=False)  # joins the caller's transaction, which holds the lock
def ledger_post(
    *,
    wallet: Wallet,
    kind: str,
    amount: Decimal,
    reference: str,
    memo: str = "",
    by: User | None = None,
    fresh_reference: bool = False,
) -> tuple[LedgerEntry, bool]:
    """Append one entry and move the cached balance; the caller holds the wallet lock.

    Returns ``(entry, created)``. If an entry of this kind and reference exists already, it is
    returned and nothing moves (``fresh_reference``: the caller vouches that the reference
    was made for this entry, e.g. a new payment id, so the check is left to the constraint).
    A debit that would take the balance below zero raises InsufficientBalance and writes
    nothing.
    """
    entry = _entry_new(
        wallet=wallet, kind=kind, amount=amount, reference=reference, memo=memo, by=by
    )
    amount = entry.amount
    if fresh_reference:  # a reference made for this very entry cannot collide: no savepoint
        entry.save()
    else:
        try:
            with transaction.atomic():
                entry.save()
        except IntegrityError:
            existing = LedgerEntry.objects.filter(
                wallet=wallet, kind=kind, reference=reference
            ).first()
            if existing is None:
                raise
            return existing, False
    fields: dict = {"balance": F("balance") + amount, "updated_at": timezone.now()}
    owed = wallet.dispute_owed
    if kind in MAY_OWE or owed > ZERO:
        # A dispute (or a commission taken back) may leave the wallet owing; every credit
        # after it repays the debt.
        owed = max(ZERO, -entry.balance_after)
        fields["dispute_owed"] = owed
    Wallet.objects.filter(pk=wallet.pk).update(**fields)
    wallet.dispute_owed = owed
    _entry_posted(wallet=wallet, entry=entry)
    return entry, True


def _entry_new(
    *, wallet: Wallet, kind: str, amount: Decimal, reference: str, memo: str = "", by=None
) -> LedgerEntry:
    """The entry ``ledger_post`` appends, not yet saved: a debit below the balance raises
    InsufficientBalance."""
    amount = quantize(amount)
    # Only a lost dispute may take the balance below zero (the card's bank took the money
    # back after it was spent): the wallet then owes it (docs/fraud.md); so may a commission
    # taken back by a reversal, once the ancestor spent it (docs/network.md).
    if amount < ZERO and kind not in MAY_OWE:
        balance_check(wallet=wallet, amount=-amount)
    return LedgerEntry(
        wallet=wallet,
        kind=kind,
        amount=amount,
        balance_after=wallet.balance + amount,
        currency=wallet.currency,
        reference=reference,
        memo=memo[:255],
        created_by=by,
    )


def _entry_posted(*, wallet: Wallet, entry: LedgerEntry) -> None:
    """After an entry and the balance it moved were written: the locked wallet in memory
    follows, and the wallet's events (a credit, a low-balance crossing) are recorded."""
    old_balance, wallet.balance = wallet.balance, entry.balance_after
    _emit_events(wallet=wallet, entry=entry, old_balance=old_balance)


def _balance_object(wallet: Wallet) -> dict:
    return {
        "available": f"{wallet.balance:.2f}",
        "currency": wallet.currency,
        "livemode": wallet.livemode,
    }


def _emit_events(*, wallet: Wallet, entry: LedgerEntry, old_balance: Decimal) -> None:
    """The wallet's webhook events, in the entry's transaction (docs/webhooks.md): a credited
    top-up, and a crossing of the low-balance threshold (once per crossing, from above)."""
    if entry.kind == LedgerEntry.Kind.TOPUP:
        event_emit(
            account_id=wallet.account_id,
            livemode=wallet.livemode,
            event_type=WALLET_CREDITED,
            obj=_balance_object(wallet),
            extra={
                "credit": {
                    "amount": f"{entry.amount:.2f}",
                    "currency": entry.currency,
                    "reference": entry.reference,
                }
            },
        )
    threshold = wallet.low_balance_threshold
    if threshold is not None and old_balance >= threshold > wallet.balance:
        event_emit(
            account_id=wallet.account_id,
            livemode=wallet.livemode,
            event_type=WALLET_BALANCE_LOW,
            obj=_balance_object(wallet),
            extra={"threshold": f"{threshold:.2f}"},
        )
        _tell_balance_low(wallet=wallet, threshold=threshold)


def _tell_balance_low(*, wallet: Wallet, threshold: Decimal) -> None:
    """The low-balance alert by email (docs/contract.md §12), in the same transaction."""
    email_queue_to_account(
        account_id=wallet.account_id,
        kind=Email.Kind.BALANCE_LOW,
        context={
            "balance": f"{wallet.balance:.2f}",
            "threshold": f"{threshold:.2f}",
            "currency": wallet.currency,
            "wallet_path": reverse("wallet:wallet"),
        },
    )


def wallet_set_threshold(*, account: Account, amount: Decimal | None) -> Wallet:
    """The live wallet's low-balance threshold (None: no alert)."""
    wallet = wallet_get_or_create(account=account)
    if amount is not None:
        try:
            amount = quantize(amount)
        except ArithmeticError as exc:  # 1e400: more digits than a Decimal context holds
            raise InvalidAmount() from exc
        if not amount.is_finite() or amount < ZERO:
            raise InvalidAmount()
        amount = _within_a_money_column(amount)
    Wallet.objects.filter(pk=wallet.pk).update(low_balance_threshold=amount)
    wallet.low_balance_threshold = amount
    return wallet


def wallet_debit(
    *, wallet: Wallet, amount: Decimal, reference: str, memo: str = "", fresh_reference=False
) -> LedgerEntry:
    """Capture a wallet payment. The caller holds the lock and owns the transaction."""
    entry, _created = ledger_post(
        wallet=wallet,
        kind=LedgerEntry.Kind.PAYMENT,
        amount=-_positive(amount),
        reference=reference,
        memo=memo,
        fresh_reference=fresh_reference,
    )
    return entry


@transaction.atomic
def wallet_refund(
    *, wallet_id: int, amount: Decimal, reference: str, memo: str = "", by: User | None = None
) -> tuple[LedgerEntry, bool]:
    """Give money back for a failed recharge (``reference`` = its id): exactly once."""
    wallet = wallet_lock(wallet_id=wallet_id)
    return ledger_post(
        wallet=wallet,
        kind=LedgerEntry.Kind.REFUND,
        amount=_positive(amount),
        reference=reference,
        memo=memo,
        by=by,
    )


@transaction.atomic
def wallet_dispute_debit(
    *, wallet_id: int, amount: Decimal, reference: str, memo: str = ""
) -> tuple[LedgerEntry, bool]:
    """Take back what a lost dispute of a card top-up (``reference``: the top-up) took from
    us, exactly once, even below zero: the wallet then owes it, and spending is refused
    (402) until a credit repays it (docs/fraud.md)."""
    wallet = wallet_lock(wallet_id=wallet_id)
    return ledger_post(
        wallet=wallet,
        kind=LedgerEntry.Kind.DISPUTE,
        amount=-_positive(amount),
        reference=reference,
        memo=memo,
    )


@transaction.atomic
def wallet_adjust(
    *, wallet_id: int, amount: Decimal, reason: str, by: User, reference: str | None = None
) -> LedgerEntry:
    """A staff correction: a new entry, never an edit of an old one."""
    if not reason.strip():
        raise InvalidAmount(_("An adjustment needs a reason."))
    amount = quantize(amount)
    if amount == ZERO:
        raise InvalidAmount()
    wallet = wallet_lock(wallet_id=wallet_id)
    entry, _created = ledger_post(
        wallet=wallet,
        kind=LedgerEntry.Kind.ADJUSTMENT,
        amount=amount,
        reference=reference or make_id("adj"),
        memo=reason,
        by=by,
    )
    return entry


@transaction.atomic
def topup_request(
    *,
    account: Account,
    amount: Decimal,
    method: str,
    by: User | None = None,
    external_reference: str = "",
) -> TopUp:
    """Record a top-up that waits for its money (a bank transfer, a card payment in flight)."""
    wallet = wallet_get_or_create(account=account)
    return TopUp.objects.create(
        wallet=wallet,
        method=method,
        amount=_positive(amount),
        currency=wallet.currency,
        requested_by=by,
        external_reference=external_reference,
    )


def topup_discard(*, topup_id: int) -> None:
    """Remove a pending top-up that never reached its payer (a card checkout that could not
    be started): nothing was credited, so nothing else moves."""
    TopUp.objects.filter(pk=topup_id, status=TopUp.Status.PENDING).delete()


def bank_details() -> dict[str, str] | None:
    """Where bank transfers go (settings), or None when no IBAN is configured."""
    if not settings.BANK_TRANSFER_IBAN:
        return None
    return {
        "beneficiary": settings.BANK_TRANSFER_BENEFICIARY,
        "iban": settings.BANK_TRANSFER_IBAN,
        "bic": settings.BANK_TRANSFER_BIC,
    }


@transaction.atomic
def bank_transfer_request(*, account: Account, amount: Decimal, by: User) -> TopUp:
    """A bank-transfer top-up, and the instructions by email (docs/contract.md §12): the
    beneficiary, IBAN, BIC, amount and the reference to quote. The caller checks that bank
    transfers are offered (``bank_details``)."""
    topup = topup_request(account=account, amount=amount, method=TopUp.Method.BANK_TRANSFER, by=by)
    email_queue_to_user(
        user=by,
        kind=Email.Kind.BANK_TRANSFER,
        context={
            "reference": topup.public_id,
            "amount": f"{topup.amount:.2f}",
            "currency": topup.currency,
            "wallet_path": reverse("wallet:wallet"),
            **(bank_details() or {}),
        },
    )
    return topup


@transaction.atomic
def topup_approve(
    *, topup_id: int, by: User | None = None, note: str = "", payment_intent_id: str = ""
) -> TopUp:
    """Credit the wallet for a pending top-up. Approving twice credits once.

    A card top-up is approved only with the id of its succeeded PaymentIntent (the card
    checkout passes it); staff can approve bank transfers, never a card top-up nobody paid.
    A database constraint holds the same rule.
    """
    topup = TopUp.objects.select_for_update(of=("self",)).get(pk=topup_id)
    if topup.status == TopUp.Status.APPROVED:
        return topup
    if topup.status != TopUp.Status.PENDING:
        raise TopUpNotPending()
    if topup.method == TopUp.Method.CARD:
        if not payment_intent_id:
            raise CardTopUpNeedsPayment()
        topup.external_reference = payment_intent_id
    wallet = wallet_lock(wallet_id=topup.wallet_id)
    ledger_post(
        wallet=wallet,
        kind=LedgerEntry.Kind.TOPUP,
        amount=topup.amount,
        reference=topup.public_id,
        memo=note or topup.get_method_display(),
        by=by,
    )
    topup.status = TopUp.Status.APPROVED
    topup.decided_by = by
    topup.decided_at = timezone.now()
    topup.note = note[:255] or topup.note
    topup.save(update_fields=["status", "decided_by", "decided_at", "note", "external_reference"])
    return topup


@transaction.atomic(savepoint=False)
def topup_credit_now(
    *, wallet: Wallet, method: str, amount: Decimal, memo: str, by: User | None = None
) -> TopUp:
    """A top-up approved as it is made (a test key's sandbox addition), its credit posted:
    the caller holds the wallet's lock and has checked its own limits."""
    now = timezone.now()
    topup = TopUp.objects.create(
        wallet=wallet,
        method=method,
        status=TopUp.Status.APPROVED,
        amount=amount,
        currency=wallet.currency,
        requested_by=by,
        decided_by=by,
        decided_at=now,
        created_at=now,
    )
    ledger_post(
        wallet=wallet,
        kind=LedgerEntry.Kind.TOPUP,
        amount=amount,
        reference=topup.public_id,
        memo=memo,
        by=by,
    )
    return topup


@transaction.atomic
def topup_reject(*, topup_id: int, by: User | None, note: str = "", failed: bool = False) -> TopUp:
    topup = TopUp.objects.select_for_update(of=("self",)).get(pk=topup_id)
    if topup.status != TopUp.Status.PENDING:
        raise TopUpNotPending()
    topup.status = TopUp.Status.FAILED if failed else TopUp.Status.REJECTED
    topup.decided_by = by
    topup.decided_at = timezone.now()
    topup.note = note[:255]
    topup.save(update_fields=["status", "decided_by", "decided_at", "note"])
    return topup


@transaction.atomic
def wallet_topup_manual(
    *, account: Account, amount: Decimal, by: User | None = None, note: str = ""
) -> TopUp:
    """An operator's approved top-up (the `wallet_topup` command)."""
    topup = topup_request(account=account, amount=amount, method=TopUp.Method.MANUAL, by=by)
    return topup_approve(topup_id=topup.pk, by=by, note=note or "operator top-up")


def sandbox_wallet_for_key(*, key) -> Wallet:
    """Each test key has its own fake EUR balance, starting at 0 (docs/contract.md §6)."""
    wallet, _created = Wallet.objects.get_or_create(
        api_key=key,
        kind=Wallet.Kind.SANDBOX,
        defaults={"account_id": key.account_id, "currency": "EUR"},
    )
    return wallet
