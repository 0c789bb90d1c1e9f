"""Transfers between a parent and its direct agents (contract section 18, docs/network.md
"Transfers"): money moved from one live wallet to the other, both ways, in one transaction,
with a ledger entry on each side and a ``network.transfer.completed`` event to both
accounts; at most once per Idempotency-Key.

The money moves through ``wallet.services.wallet_transfer``, which locks the parent's wallet
before the agent's whichever way the money goes (the network's lock order, docs/network.md
"Lock order"): two transfers in opposite directions between the same wallets queue on the
parent's lock and never deadlock.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from accounts.models import Account, User
from network.models import Transfer, TransferKey
from reseller.errors import ApplicationError, NotFound
from reseller.idempotency import IdempotentReply, Keys
from wallet.errors import InsufficientBalance
from wallet.services import wallet_transfer
from webhooks.catalogue import NETWORK_TRANSFER_COMPLETED
from webhooks.outbox import event_emit

TRANSFER_KEYS = Keys(records=TransferKey)


def _when(value) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def transfer_body(transfer: Transfer) -> dict[str, Any]:
    """A transfer in its wire shape (camelCase), as the API and the webhook show it."""
    return {
        "object": "transfer",
        "id": transfer.public_id,
        "parent": transfer.parent.public_id,
        "agent": transfer.agent.public_id,
        "amount": f"{transfer.amount:.2f}",
        "currency": transfer.currency,
        "direction": transfer.direction,
        "memo": transfer.memo,
        "createdAt": _when(transfer.created_at),
    }


def direct_agent(*, parent: Account, agent_id: str) -> Account:
    """The caller's DIRECT agent of that id; anything else (a deeper descendant, another
    network's account, an unknown id) is 404, never telling which."""
    agent = Account.objects.filter(public_id=agent_id, parent=parent).first()
    if agent is None:
        raise NotFound(_("No agent of yours has this id."))
    return agent


def _hint(exc: ApplicationError) -> None:
    if isinstance(exc, InsufficientBalance):
        exc.detail += " " + _(
            "This Idempotency-Key keeps this answer for 24 hours: send the transfer again "
            "with a new Idempotency-Key."
        )


@transaction.atomic(savepoint=False)
def transfer_make(
    *,
    parent: Account,
    agent_id: str,
    amount: Decimal,
    currency: str,
    direction: str,
    memo: str,
    by: User | None,
) -> Transfer:
    """Move the money and record the transfer, in the caller's transaction: the agent found
    (404), both wallets locked parent first, the giving one checked (402), the currency
    checked (400), an entry on each side, the transfer row, and an event to each account."""
    agent = direct_agent(parent=parent, agent_id=agent_id)
    transfer = Transfer(
        parent=parent,
        agent=agent,
        direction=direction,
        amount=amount,
        currency=currency,
        memo=memo,
        created_by=by,
    )
    wallet_transfer(
        parent=parent,
        agent=agent,
        amount=amount,
        currency=currency,
        to_agent=direction == Transfer.Direction.TO_AGENT,
        reference=transfer.public_id,
        memo=memo or _("Transfer %(id)s") % {"id": transfer.public_id},
        by=by,
    )
    transfer.save()
    body = transfer_body(transfer)
    for account in (parent, agent):
        event_emit(
            account_id=account.pk,
            livemode=True,
            event_type=NETWORK_TRANSFER_COMPLETED,
            obj=body,
        )
    return transfer


def transfer_create(
    *,
    parent: Account,
    agent_id: str,
    amount: Decimal,
    currency: str,
    direction: str,
    memo: str,
    by: User | None,
    idempotency_key: str,
    request_fingerprint: str,
    request_id: str | None = None,
) -> IdempotentReply:
    """``POST /network/transfers``: ``transfer_make`` at most once per Idempotency-Key of the
    parent (contract section 5: a replay answers the first answer, a refusal included)."""

    def operation() -> tuple[int, dict[str, Any]]:
        transfer = transfer_make(
            parent=parent,
            agent_id=agent_id,
            amount=amount,
            currency=currency,
            direction=direction,
            memo=memo,
            by=by,
        )
        return 201, transfer_body(transfer)

    # One transaction (the runner's): the key's lock, the move and the stored answer.
    return TRANSFER_KEYS.run(
        account=parent,
        livemode=True,
        key=idempotency_key,
        request_fingerprint=request_fingerprint,
        operation=operation,
        request_id=request_id,
        on_refusal=_hint,
    )


def transfers_of(*, account: Account) -> QuerySet[Transfer]:
    """The transfers the account is a side of (as the parent or as the agent), newest
    first."""
    return (
        Transfer.objects.filter(Q(parent=account) | Q(agent=account))
        .select_related("parent", "agent")
        .order_by("-created_at", "-id")
    )


def transfer_keys_purge() -> int:
    """Forget the answers of keys older than a day (with the orders' keys, by beat)."""
    return TRANSFER_KEYS.purge_expired()
