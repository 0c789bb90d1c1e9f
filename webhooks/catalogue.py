"""The events a reseller's endpoint can subscribe to (docs/webhooks.md, docs/contract.md §11)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

RECHARGE_DELIVERED = "recharge.delivered"
RECHARGE_FAILED = "recharge.failed"
RECHARGE_WAITLISTED = "recharge.waitlisted"
RECHARGE_REVERSED = "recharge.reversed"
WALLET_CREDITED = "wallet.credited"
WALLET_BALANCE_LOW = "wallet.balance_low"
BATCH_COMPLETED = "batch.completed"
NETWORK_TRANSFER_COMPLETED = "network.transfer.completed"
# Sent only on demand ("send a test event" on the dashboard), whatever the endpoint selects.
WEBHOOK_TEST = "webhook.test"

EVENT_TYPES = {
    RECHARGE_DELIVERED: _("A recharge reached the recipient (sandbox: success)."),
    RECHARGE_FAILED: _(
        "A recharge failed for good and its amount was refunded (sandbox: rejected, timeout)."
    ),
    RECHARGE_WAITLISTED: _("A recharge waits for its promotion to start before it is sent."),
    RECHARGE_REVERSED: _(
        "A delivered recharge was taken back by the provider and its amount was refunded."
    ),
    WALLET_CREDITED: _("A top-up of the wallet was approved."),
    WALLET_BALANCE_LOW: _("A payment took the wallet below the account's threshold."),
    BATCH_COMPLETED: _("Every recharge of a batch reached its final status."),
    NETWORK_TRANSFER_COMPLETED: _(
        "Money moved between a parent's wallet and a direct agent's (sent to both accounts)."
    ),
}
