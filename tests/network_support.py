"""A small reseller network for the network's tests: a top account, its agents and theirs.

Agents are accounts with a parent (``accounts.Account.parent``/``depth``, contract section 18),
each with an owner who can sign in, made with the factories as any test account."""

from __future__ import annotations

import threading
from decimal import Decimal

from django.core.management import call_command
from django.db import connection

from accounts.models import Account
from tests.factories import AccountFactory, UserFactory
from tests.helpers import bearer
from wallet.models import LedgerEntry, Wallet
from wallet.services import wallet_get_or_create, wallet_topup_manual

TRANSFERS = "/api/v1/network/transfers"


def agent_of(parent: Account, **fields) -> Account:
    """A direct agent of ``parent`` (its wallet in the parent's currency), with an owner."""
    agent = AccountFactory(
        parent=parent, depth=parent.depth + 1, wallet_currency=parent.wallet_currency, **fields
    )
    UserFactory(account=agent)
    return agent


def owner_of(account: Account):
    return account.users.filter(role="owner").order_by("pk").first()


def top_account(funds: str = "0.00") -> Account:
    user = UserFactory()
    if Decimal(funds):
        wallet_topup_manual(account=user.account, amount=Decimal(funds))
    return user.account


def balance(account: Account) -> Decimal:
    return wallet_get_or_create(account=account).balance


def entries(account: Account, kind: str) -> list[LedgerEntry]:
    return list(
        LedgerEntry.objects.filter(
            wallet__account=account, wallet__kind=Wallet.Kind.LIVE, kind=kind
        )
    )


def hook(account: Account) -> None:
    """A live webhook endpoint of the account that wants every event."""
    call_command(
        "create_webhook_endpoint", "--email", owner_of(account).email,
        "--url", "https://hooks.example/network", "--mode", "live",
        stdout=open("/dev/null", "w"),  # noqa: SIM115
    )  # fmt: skip


def transfer(client, user, *, key: str, **body):
    """POST /network/transfers as ``user`` (JWT) with an Idempotency-Key."""
    headers = bearer(user)
    if key:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(TRANSFERS, body, format="json", **headers)


def run_concurrently(count: int, call) -> list:
    """``call(n)`` for n in 0..count-1, each on its own thread with its own database
    connection, all released together; their results (None for a thread that never ended)."""
    results: list = [None] * count
    barrier = threading.Barrier(count)

    def worker(n):
        try:
            barrier.wait()
            results[n] = call(n)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results
