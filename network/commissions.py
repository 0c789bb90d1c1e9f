"""Commissions (contract section 18, docs/network.md "Commissions"): when an agent's recharge is
delivered, every ancestor earns the difference between what its child paid and what it would
have paid itself, credited to its wallet in the delivery's transaction; a reversal takes each
back exactly once; a failure or refund earns nothing (nothing is written until delivery).

The split of one sale, buyer B who paid ``paid`` (the recharge's amount), its chain top T …
parent P: walking up from B, each ancestor's own price is its price of the product and amount
now (``network.prices``, at the FX rate of the delivery) but never more than its child's:

    child = paid
    for X in P, …, T:   own = min(price(X), child);  commission(X) = child - own;  child = own

so every commission is ≥ 0 and they add up to ``paid - own(T)`` exactly: the platform's books
record the sale at ``own(T)`` (the top account's price), and what the buyer paid is that sale
plus the commissions, to the cent, whatever changed in the prices between the order and its
delivery (with prices unchanged, ``own(X)`` is X's price: a parent's markups are ≥ 0).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Count, QuerySet, Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Account
from accounts.suspension import account_chain, ancestors_path
from catalog.models import Product
from catalog.selectors import FxRateNotFound, fx_rate
from network.models import Commission
from network.prices import AccountPrices, account_prices_of
from reseller.money import ZERO
from wallet.services import wallet_commissions_post, wallet_commissions_take_back

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Purchase:
    """A delivered live recharge as the commissions see it (plain values: the recharges app
    is above this one)."""

    recharge: str  # its public id
    reference: str  # its payment cycle's ledger reference (the refund's)
    buyer_id: int  # the account that paid
    product: Product
    local_amount: Decimal | None  # a range product's amount; None for a fixed one
    paid: Decimal  # what the buyer paid for it, in ``currency``
    currency: str


@dataclass(frozen=True)
class Share:
    """One ancestor's commission on one sale, and the branch (its direct agent) that sold."""

    account_id: int
    branch_id: int
    amount: Decimal


def commissions_split(purchase: Purchase, *, prices: AccountPrices) -> list[Share]:
    """Each ancestor's share of ``purchase`` (parent first, top last), from the buyer's
    loaded chain; empty for a top account's purchase, or when the price cannot be computed
    now (no FX rate, a product without a price): the platform then keeps it all."""
    if len(prices.levels) < 2:
        return []
    product = purchase.product
    try:
        rate = fx_rate(from_currency=product.retail_currency, to_currency=purchase.currency).rate
        if not product.priced or (product.is_range and purchase.local_amount is None):
            raise ValueError("no price")
        chain = prices.chain(product=product, local_amount=purchase.local_amount, rate=rate)
    except (FxRateNotFound, ValueError):
        logger.error("%s: no commissions (its price cannot be computed)", purchase.recharge)
        return []
    shares: list[Share] = []
    child, branch = purchase.paid, chain[-1].account_id
    for level in reversed(chain[:-1]):
        own = min(level.price, child)
        shares.append(Share(account_id=level.account_id, branch_id=branch, amount=child - own))
        child, branch = own, level.account_id
    return shares


def commission_earners(*, buyer_ids: set[int]) -> list[Account]:
    """The accounts that may earn on these buyers' purchases: every ancestor of each agent
    among them (none for a top account), read with their chains in one query. The delivery
    batch that also refunds locks their wallets up front, in the lock order."""
    buyers = Account.objects.filter(pk__in=buyer_ids, parent__isnull=False).select_related(
        ancestors_path()
    )
    earners = {
        ancestor.pk: ancestor for buyer in buyers for ancestor in list(account_chain(buyer))[1:]
    }
    return list(earners.values())


@transaction.atomic(savepoint=False)  # the delivery's transaction
def commissions_book(*, purchases: Sequence[Purchase]) -> dict[str, Decimal]:
    """Book the commissions of delivered recharges: a ``Commission`` row per ancestor and
    sale, and a ``commission`` ledger entry on each ancestor's wallet for what it earned
    (> 0), the wallets locked from the top down. Returns each recharge's price for the books
    (its top account's: what was paid less the commissions); a top account's purchase is
    its own price."""
    top_price = {purchase.recharge: purchase.paid for purchase in purchases}
    agents = set(
        Account.objects.filter(
            pk__in={purchase.buyer_id for purchase in purchases}, parent__isnull=False
        ).values_list("pk", flat=True)
    )
    bought = [purchase for purchase in purchases if purchase.buyer_id in agents]
    if not bought:
        return top_price
    chains: dict[int, AccountPrices] = {}
    for buyer_id in {purchase.buyer_id for purchase in bought}:
        products = [purchase.product for purchase in bought if purchase.buyer_id == buyer_id]
        chains[buyer_id] = account_prices_of(account_id=buyer_id, products=products)
    rows: list[Commission] = []
    now = timezone.now()
    for purchase in bought:
        shares = commissions_split(purchase, prices=chains[purchase.buyer_id])
        top_price[purchase.recharge] = purchase.paid - sum((s.amount for s in shares), ZERO)
        rows += [
            Commission(
                account_id=share.account_id,
                branch_id=share.branch_id,
                buyer_id=purchase.buyer_id,
                recharge=purchase.recharge,
                reference=purchase.reference,
                amount=share.amount,
                sale=purchase.paid,
                currency=purchase.currency,
                created_at=now,
            )
            for share in shares
        ]
    Commission.objects.bulk_create(rows)
    earners = Account.objects.in_bulk({row.account_id for row in rows if row.amount > ZERO})
    wallet_commissions_post(
        credits=[
            (
                earners[row.account_id],
                row.amount,
                row.reference,
                _("Commission on %(recharge)s") % {"recharge": row.recharge},
            )
            for row in rows
            if row.amount > ZERO
        ]
    )
    return top_price


@transaction.atomic(savepoint=False)  # the reversal's transaction
def commissions_take_back(*, reference: str, recharge: str) -> Decimal:
    """A reversed recharge's commissions taken back, each once (a second call writes
    nothing): ``commission_reversal`` entries, ancestors' wallets locked top down (call it
    before the buyer's refund, which locks the deepest wallet). What was taken back."""
    earned = list(
        Commission.objects.filter(reference=reference, amount__gt=0).select_related("account")
    )
    memo = _("Commission on %(recharge)s taken back (reversed)") % {"recharge": recharge}
    taken = wallet_commissions_take_back(
        debits=[(row.account, row.amount, reference, memo) for row in earned]
    )
    Commission.objects.filter(reference=reference, reversed_at__isnull=True).update(
        reversed_at=timezone.now()
    )
    return -sum((entry.amount for entry in taken), ZERO)


def commissions_earners(*, references: Sequence[str]) -> set[int]:
    """The accounts that earned something on these payment cycles."""
    return set(
        Commission.objects.filter(reference__in=references, amount__gt=0).values_list(
            "account_id", flat=True
        )
    )


def commissions_taken(*, references: Sequence[str]) -> dict[str, Decimal]:
    """What the ancestors earned on each of these payment cycles (ledger references)."""
    rows = (
        Commission.objects.filter(reference__in=references)
        .values("reference")
        .annotate(total=Sum("amount"))
    )
    return {row["reference"]: row["total"] for row in rows}


def commissions_earned(*, account: Account) -> QuerySet[Commission]:
    """What the account earned, one row per recharge of its branches (its direct agent's
    in ``branch``, who bought it in ``buyer``), newest first; a reversed one keeps its row,
    with ``reversed_at``. The Network page lists them; ``commissions_report`` sums them."""
    return (
        Commission.objects.filter(account=account)
        .select_related("branch", "buyer")
        .order_by("-created_at", "-id")
    )


def commissions_report(*, account: Account, since, until, start, end) -> dict[str, Any]:
    """``GET /network/commissions``: per direct agent (every one, in the order they were
    created, zeros for a branch that sold nothing), the recharges delivered in its branch in
    [since, until) and not reversed since, what their buyers paid, and the caller's
    commission from them; and the total."""
    rows = {
        row["branch__public_id"]: row
        for row in Commission.objects.filter(
            account=account, created_at__gte=since, created_at__lt=until, reversed_at__isnull=True
        )
        .values("branch__public_id")
        .annotate(recharges=Count("id"), sales=Sum("sale"), commission=Sum("amount"))
        .order_by()
    }
    direct = Account.objects.filter(parent=account).order_by("pk")  # as GET /network/agents
    none: dict[str, Any] = {"recharges": 0, "sales": ZERO, "commission": ZERO}
    agents: list[dict[str, Any]] = [
        {
            "agent": agent_id,
            "recharges": row["recharges"],
            "sales": f"{row['sales']:.2f}",
            "commission": f"{row['commission']:.2f}",
        }
        for agent_id in direct.values_list("public_id", flat=True)
        for row in [rows.get(agent_id, none)]
    ]
    total = sum((Decimal(agent["commission"]) for agent in agents), ZERO)
    return {
        "from": start.isoformat(),
        "to": end.isoformat(),
        "currency": account.wallet_currency,
        "agents": agents,
        "total": f"{total:.2f}",
    }
