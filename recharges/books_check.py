"""The books against the recharges (``python manage.py check_books``; docs/books.md).

Proves that every journal balances in each currency, that every delivered live recharge has
its sale (its price) and, when its cost is known, its cost (cost and the margin recorded on
the recharge), that every reversed one also has its reversal, and that nothing else is booked.
It lives with the recharges because the books (below them) do not know them.
"""

from __future__ import annotations

from decimal import Decimal

from books.models import Entry
from books.selectors import books_of_sales, journals_unbalanced, references_booked
from recharges.models import Recharge

L, K = Entry.Ledger, Entry.Kind
S = Recharge.Status
CHUNK = 2000


def _sale_problems(recharge: Recharge, lines: dict) -> list[str]:
    ref, problems = recharge.public_id, []

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
        expect(kind, L.CUSTOMERS, sign * recharge.amount, recharge.currency)
        expect(kind, L.REVENUE, -sign * recharge.amount, recharge.currency)
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
        .only("public_id", "status", "amount", "currency", "cost", "cost_currency", "margin")
        .order_by("pk")
    )
    chunk: list[Recharge] = []

    def check(chunk: list[Recharge]) -> None:
        found = books_of_sales([r.public_id for r in chunk])
        for recharge in chunk:
            booked.discard(recharge.public_id)
            problems.extend(_sale_problems(recharge, found.get(recharge.public_id, {})))

    for recharge in sold.iterator(chunk_size=CHUNK):
        chunk.append(recharge)
        if len(chunk) == CHUNK:
            check(chunk)
            chunk = []
    check(chunk)
    problems += [f"{ref}: booked, but not a delivered or reversed recharge" for ref in booked]
    return problems
