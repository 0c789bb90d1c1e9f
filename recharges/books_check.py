"""The books against the recharges (``python manage.py check_books``; docs/books.md).

Proves that every journal balances in each currency, that every delivered live recharge has
its sale (its price to the platform: an agent's recharge at its amount less the network's
commissions, which the wallets were credited exactly, and took back exactly once if it was
reversed; docs/network.md) and, when its cost is known, its cost (cost and the margin recorded on
the recharge), that every reversed one also has its reversal, and that nothing else is booked.
It lives with the recharges because the books (below them) do not know them.
"""

from __future__ import annotations

from decimal import Decimal

from books.models import Entry
from books.selectors import books_of_sales, journals_unbalanced, references_booked
from network.commissions import commissions_earners, commissions_taken
from recharges.models import Recharge
from reseller.money import ZERO
from wallet.models import LedgerEntry
from wallet.selectors import ledger_totals

L, K = Entry.Ledger, Entry.Kind
S = Recharge.Status
COMMISSION, COMMISSION_REVERSAL = LedgerEntry.Kind.COMMISSION, LedgerEntry.Kind.COMMISSION_REVERSAL
CHUNK = 2000


def _sale_problems(
    recharge: Recharge, lines: dict, *, earned: Decimal = ZERO, ledger: dict | None = None
) -> list[str]:
    """``earned``: the network's commissions on this sale (docs/network.md): the platform
    sold it at the amount less them, its top account's price. ``ledger``: the commission
    entries of its payment cycle in the wallets, by kind, which must credit exactly those
    commissions and, once reversed, take exactly them back."""
    ref, problems = recharge.public_id, []
    price = recharge.amount - earned
    ledger = ledger or {}
    credited = ledger.get(COMMISSION, ZERO)
    if credited != earned:
        problems.append(f"{ref}: wallets credited {credited} of commissions, earned {earned}")
    taken = -ledger.get(COMMISSION_REVERSAL, ZERO)
    expected_back = earned if recharge.status == S.REVERSED else ZERO
    if taken != expected_back:
        problems.append(f"{ref}: commissions taken back {taken}, expected {expected_back}")

    def expect(kind: str, ledger: str, amount: Decimal, currency: str) -> Entry | None:
        line = lines.get((kind, ledger))
        if line is None:
            problems.append(f"{ref}: no {kind} line on {ledger}")
        elif (line.amount, line.currency) != (amount, currency):
            problems.append(
                f"{ref}: {kind} {ledger} is {line.amount} {line.currency}, "
                f"the recharge says {amount} {currency}"
            )
        return line

    reversals = [(K.SALE, 1)] + ([(K.REVERSAL, -1)] if recharge.status == S.REVERSED else [])
    for kind, sign in reversals:
        expect(kind, L.CUSTOMERS, sign * price, recharge.currency)
        expect(kind, L.REVENUE, -sign * price, recharge.currency)
        if recharge.cost is not None and recharge.cost_currency:
            cost_kind = K.COST if kind == K.SALE else K.REVERSAL
            expect(cost_kind, L.COST_OF_SALES, sign * recharge.cost, recharge.cost_currency)
            expect(cost_kind, L.PROVIDER_FLOAT, -sign * recharge.cost, recharge.cost_currency)
    revenue, cost = lines.get((K.SALE, L.REVENUE)), lines.get((K.COST, L.COST_OF_SALES))
    if recharge.margin is not None and revenue is not None and cost is not None:
        booked = -revenue.reporting_amount - cost.reporting_amount
        if booked != recharge.margin:
            problems.append(f"{ref}: booked margin {booked}, the recharge says {recharge.margin}")
    return problems


def books_check() -> list[str]:
    """Every problem found, one line each; empty when the books are right."""
    problems = [
        f"journal {journal} does not balance in {currency}: {total}"
        for journal, currency, total in journals_unbalanced()
    ]
    booked = references_booked()
    sold = (
        Recharge.objects.filter(livemode=True, status__in=(S.DELIVERED, S.REVERSED))
        .only(
            *("public_id", "status", "amount", "currency", "cost", "cost_currency", "margin"),
            "retries",
        )
        .order_by("pk")
    )
    chunk: list[Recharge] = []

    def check(chunk: list[Recharge]) -> None:
        found = books_of_sales([r.public_id for r in chunk])
        references = [r.ledger_reference for r in chunk]
        earned = commissions_taken(references=references)
        earners = commissions_earners(references=references)
        ledger = (
            ledger_totals(
                account_ids=earners,
                references=references,
                kinds=(COMMISSION, COMMISSION_REVERSAL),
            )
            if earners
            else {}
        )
        for recharge in chunk:
            booked.discard(recharge.public_id)
            reference = recharge.ledger_reference
            problems.extend(
                _sale_problems(
                    recharge,
                    found.get(recharge.public_id, {}),
                    earned=earned.get(reference, ZERO),
                    ledger=ledger.get(reference),
                )
            )

    for recharge in sold.iterator(chunk_size=CHUNK):
        chunk.append(recharge)
        if len(chunk) == CHUNK:
            check(chunk)
            chunk = []
    check(chunk)
    problems += [f"{ref}: booked, but not a delivered or reversed recharge" for ref in booked]
    return problems
