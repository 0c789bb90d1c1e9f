"""The one writer of the books (``books.models.Entry``); docs/books.md has each journal.

- A delivered sale: ``sale:<recharge>`` (customers debit, revenue credit, in the sale's
  currency) and, when its cost is known, ``cost:<recharge>`` (cost of sales debit, the
  provider's float credit, in the provider account's currency).
- A reversal: ``reversal:<recharge>``, the sale's and the cost's lines with their signs turned.
- Funding a provider: ``float:<id>`` (the provider's float debit, the bank credit).
- A lost card dispute: ``dispute:<dispute>`` (disputes lost debit, the bank credit: the
  disputed amount the bank took back) and, when Stripe's fee is known,
  ``dispute_fee:<dispute>`` (Stripe fees debit, the bank credit).

Each is written in the transaction of the move it books (the recharge's, under its lock), so
the books and the recharges never disagree after a crash; a second write of one journal fails
on the ``(journal, ledger)`` constraint.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from books.models import AMOUNT_MAX, Entry
from reseller.errors import ValidationFailed

L, K = Entry.Ledger, Entry.Kind


@dataclass(frozen=True)
class Sale:
    """A delivered live recharge as the books see it (plain values)."""

    reference: str  # the recharge's public id
    customer_id: int  # the reseller's account
    price: Decimal  # what the customer paid, in ``currency``
    currency: str
    provider: str
    operator_id: int | None
    country: str
    cost: Decimal | None  # what the provider debited, in ``cost_currency``; None if unknown
    cost_currency: str
    margin: Decimal | None  # price less the cost converted into ``currency``; None if unknown


def _line(sale: Sale, journal: str, kind: str, ledger: str, amount: Decimal, currency: str,
          reporting: Decimal, reporting_currency: str, now) -> Entry:  # fmt: skip
    return Entry(
        journal=journal,
        kind=kind,
        ledger=ledger,
        amount=amount,
        currency=currency,
        reporting_amount=reporting,
        reporting_currency=reporting_currency,
        reference=sale.reference,
        provider=sale.provider,
        customer_id=sale.customer_id,
        operator_id=sale.operator_id,
        country=sale.country,
        booked_at=now,
    )


def _cost_in_sale_currency(sale: Sale) -> tuple[Decimal, str]:
    """The cost as the sale's margin counted it (price less margin), else in its own currency
    (no FX rate then: the report shows that cost apart, in its currency)."""
    assert sale.cost is not None
    if sale.margin is not None:
        return sale.price - sale.margin, sale.currency
    return sale.cost, sale.cost_currency


def _sale_lines(
    sale: Sale, *, sign: int, journals: tuple[str, str], kinds: tuple[str, str], now
) -> list[Entry]:
    """The sale's two lines and, with a known cost, the cost's two; ``sign`` -1 turns them
    round; ``journals`` and ``kinds``: (the sale's, the cost's)."""
    (sale_journal, cost_journal), (sale_kind, cost_kind) = journals, kinds
    price = sign * sale.price
    lines = [
        _line(sale, sale_journal, sale_kind, L.CUSTOMERS, price, sale.currency,
              price, sale.currency, now),
        _line(sale, sale_journal, sale_kind, L.REVENUE, -price, sale.currency,
              -price, sale.currency, now),
    ]  # fmt: skip
    if sale.cost is not None and sale.cost_currency:
        reporting, reporting_currency = _cost_in_sale_currency(sale)
        cost, reporting = sign * sale.cost, sign * reporting
        lines += [
            _line(sale, cost_journal, cost_kind, L.COST_OF_SALES, cost, sale.cost_currency,
                  reporting, reporting_currency, now),
            _line(sale, cost_journal, cost_kind, L.PROVIDER_FLOAT, -cost, sale.cost_currency,
                  -reporting, reporting_currency, now),
        ]  # fmt: skip
    return lines


def books_sales_record(*, sales: Sequence[Sale]) -> None:
    """Book delivered sales (price, and cost when known): one ``bulk_create`` for the batch."""
    now = timezone.now()
    lines: list[Entry] = []
    for sale in sales:
        journals = (f"sale:{sale.reference}", f"cost:{sale.reference}")
        lines += _sale_lines(sale, sign=1, journals=journals, kinds=(K.SALE, K.COST), now=now)
    if lines:
        Entry.objects.bulk_create(lines)


def books_reversal_record(*, sale: Sale) -> None:
    """Book a reversal: the sale's lines turned round, in one journal (the customer gets the
    price back, the provider returned the cost to our float)."""
    journal = f"reversal:{sale.reference}"
    Entry.objects.bulk_create(
        _sale_lines(
            sale,
            sign=-1,
            journals=(journal, journal),
            kinds=(K.REVERSAL, K.REVERSAL),
            now=timezone.now(),
        )
    )


@transaction.atomic
def books_float_fund(*, provider: str, amount: Decimal, currency: str, memo: str = "") -> str:
    """Book money prepaid to a provider (its float rises, the bank's falls); the journal."""
    if abs(amount) > AMOUNT_MAX:  # refused here, not by the database's numeric overflow
        raise ValidationFailed(f"The amount must be at most {AMOUNT_MAX} either way.")
    journal = f"float:{uuid.uuid4().hex[:16]}"
    now = timezone.now()
    Entry.objects.bulk_create(
        [
            Entry(journal=journal, kind=K.FLOAT, ledger=ledger, amount=value, currency=currency,
                  reporting_amount=value, reporting_currency=currency, provider=provider,
                  memo=memo[:255], booked_at=now)
            for ledger, value in ((L.PROVIDER_FLOAT, amount), (L.BANK, -amount))
        ]
    )  # fmt: skip
    return journal


@dataclass(frozen=True)
class LostDispute:
    """A lost card dispute as the books see it (plain values)."""

    key: str  # the dispute's own id in the journal names (``dispute:<key>``)
    reference: str  # the disputed payment's or card top-up's public id
    customer_id: int  # the account that paid by card
    amount: Decimal  # what the bank took back, in ``currency``
    currency: str
    fee: Decimal | None  # Stripe's dispute fee, in ``currency``; None while unknown
    memo: str = ""


def dispute_journals(key: str) -> tuple[str, str]:
    """The journal names of a lost dispute: (its amount's, its fee's)."""
    return f"dispute:{key}", f"dispute_fee:{key}"


def books_dispute_record(*, dispute: LostDispute) -> list[str]:
    """Book a lost dispute's amount and, once known, Stripe's fee, each once: a journal
    already written is left alone, so every event of the dispute may call this. In the
    caller's transaction (the dispute's, under its checkout's lock). The journals written."""
    amount_journal, fee_journal = dispute_journals(dispute.key)
    wanted = [(amount_journal, K.DISPUTE, L.DISPUTES_LOST, dispute.amount)]
    if dispute.fee is not None and dispute.fee > 0:
        wanted.append((fee_journal, K.DISPUTE_FEE, L.STRIPE_FEES, dispute.fee))
    done = set(
        Entry.objects.filter(journal__in=[journal for journal, *_ in wanted]).values_list(
            "journal", flat=True
        )
    )
    now = timezone.now()
    lines: list[Entry] = []
    written: list[str] = []
    for journal, kind, ledger, amount in wanted:
        if journal in done:
            continue
        written.append(journal)
        lines += [
            Entry(journal=journal, kind=kind, ledger=side, amount=value,
                  currency=dispute.currency, reporting_amount=value,
                  reporting_currency=dispute.currency, reference=dispute.reference,
                  customer_id=dispute.customer_id, memo=dispute.memo[:255], booked_at=now)
            for side, value in ((ledger, amount), (L.BANK, -amount))
        ]  # fmt: skip
    if lines:
        Entry.objects.bulk_create(lines)
    return written
