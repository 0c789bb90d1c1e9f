"""The whole check of the books (``python manage.py check_books``; docs/books.md).

The recharges' part (``recharges.books_check``: every sale, cost and reversal against its
recharge) and the disputes' part, here because the disputes are the checkout's: every lost
dispute has its journal at its amount (and its fee's, once Stripe's fee is known), and every
dispute journal is of a dispute that was lost, at that dispute's amounts.
"""

from __future__ import annotations

from decimal import Decimal

from books.models import Entry
from books.selectors import dispute_lines
from books.services import dispute_journals
from checkout.disputes import LOST, dispute_amount, dispute_currency
from checkout.models import CardDispute
from recharges.books_check import books_check as recharges_books_check

L = Entry.Ledger


def _expect(problems: list[str], journal: str, lines: dict[str, Entry] | None, ledger: str,
            amount: Decimal, currency: str, reference: str) -> None:  # fmt: skip
    if lines is None:
        problems.append(f"{journal}: a lost dispute of {reference} is not booked")
        return
    for side, value in ((ledger, amount), (L.BANK, -amount)):
        line = lines.get(side)
        if line is None:
            problems.append(f"{journal}: no line on {side}")
        elif (line.amount, line.currency) != (value, currency):
            problems.append(
                f"{journal}: {side} is {line.amount} {line.currency}, "
                f"the dispute says {value} {currency}"
            )
        elif line.reference != reference:
            problems.append(f"{journal}: names {line.reference}, the dispute is of {reference}")
    for side in set(lines) - {ledger, L.BANK}:
        problems.append(f"{journal}: an unexpected line on {side}")


def disputes_books_check() -> list[str]:
    """Every problem of the dispute journals, one line each."""
    problems: list[str] = []
    booked = dispute_lines()
    lost = CardDispute.objects.filter(status=LOST, kind=CardDispute.Kind.DISPUTE).select_related(
        "checkout__payment", "checkout__topup"
    )
    for dispute in lost.order_by("pk").iterator(chunk_size=500):
        amount_journal, fee_journal = dispute_journals(str(dispute.pk))
        reference = dispute.checkout.public_id
        currency = dispute_currency(dispute)
        _expect(problems, amount_journal, booked.pop(amount_journal, None), L.DISPUTES_LOST,
                dispute_amount(dispute), currency, reference)  # fmt: skip
        fee_lines = booked.pop(fee_journal, None)
        if dispute.fee:
            _expect(problems, fee_journal, fee_lines, L.STRIPE_FEES, dispute.fee, currency,
                    reference)  # fmt: skip
        elif fee_lines is not None:
            problems.append(f"{fee_journal}: a fee booked, the dispute knows none")
    problems += [f"{journal}: booked, but not a lost dispute" for journal in sorted(booked)]
    return problems


def books_check() -> list[str]:
    """Every problem found in the books, one line each; empty when they are right."""
    return recharges_books_check() + disputes_books_check()
