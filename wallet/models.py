"""The wallet ledger: append-only entries and a cached balance that always equals their sum."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from reseller.ids import make_id
from reseller.money import MONEY


def new_wallet_id() -> str:
    return make_id("wal")


def new_entry_id() -> str:
    return make_id("txn")


def new_topup_id() -> str:
    return make_id("top")


class Wallet(models.Model):
    class Kind(models.TextChoices):
        LIVE = "live", _("Live wallet")
        SANDBOX = "sandbox", _("Sandbox balance")

    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_wallet_id, editable=False
    )
    account = models.ForeignKey(
        "accounts.Account",
        on_delete=models.PROTECT,
        related_name="wallets",
        verbose_name=_("account"),
    )
    kind = models.CharField(_("kind"), max_length=8, choices=Kind.choices, default=Kind.LIVE)
    # Sandbox balances belong to one test key; the live wallet to none.
    api_key = models.OneToOneField(
        "accounts.ApiKey",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="sandbox_wallet",
        verbose_name=_("API key"),
    )
    currency = models.CharField(_("currency"), max_length=3, default="EUR")
    # Changed only together with a LedgerEntry, under a row lock (wallet.services).
    balance = models.DecimalField(_("balance"), **MONEY, default=Decimal("0.00"))
    # What the wallet owes after a lost dispute of a card top-up whose money was spent: the
    # balance may be below zero by this much and no more (docs/fraud.md). Only a dispute
    # entry raises it; credits bring it back down as they repay the debt.
    dispute_owed = models.DecimalField(_("dispute owed"), **MONEY, default=Decimal("0.00"))
    # A payment that takes the balance below this emits wallet.balance_low (docs/webhooks.md).
    low_balance_threshold = models.DecimalField(
        _("low balance threshold"), **MONEY, null=True, blank=True
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("wallet")
        verbose_name_plural = _("wallets")
        constraints = [
            # Below zero only by what a lost dispute left owing (``dispute_owed``).
            models.CheckConstraint(
                condition=models.Q(balance__gte=-models.F("dispute_owed")),
                name="wallet_balance_not_negative",
            ),
            models.CheckConstraint(
                condition=models.Q(dispute_owed__gte=0), name="wallet_dispute_owed_not_negative"
            ),
            models.UniqueConstraint(
                fields=["account"],
                condition=models.Q(kind="live"),
                name="one_live_wallet_per_account",
            ),
            models.CheckConstraint(
                condition=(models.Q(kind="live") & models.Q(api_key__isnull=True))
                | (models.Q(kind="sandbox") & models.Q(api_key__isnull=False)),
                name="sandbox_wallets_have_a_test_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of {self.account} ({self.balance} {self.currency})"

    @property
    def livemode(self) -> bool:
        return self.kind == self.Kind.LIVE


class LedgerEntry(models.Model):
    """One movement of money. Never updated or deleted: corrections are new entries."""

    class Kind(models.TextChoices):
        TOPUP = "topup", pgettext_lazy("wallet", "Top-up")
        PAYMENT = "payment", _("Payment")
        REFUND = "refund", _("Refund")
        ADJUSTMENT = "adjustment", _("Adjustment")
        # A lost dispute of a card top-up: the money the card's bank took back.
        DISPUTE = "dispute", _("Dispute")
        # Reseller networks (docs/network.md): money moved between a parent and a direct
        # agent (one entry on each side, ``reference`` the transfer), and what an ancestor
        # earns on its branch's delivered recharges (``reference`` the recharge), taken back
        # once if the provider reverses the recharge.
        TRANSFER_IN = "transfer_in", _("Transfer in")
        TRANSFER_OUT = "transfer_out", _("Transfer out")
        COMMISSION = "commission", _("Commission")
        COMMISSION_REVERSAL = "commission_reversal", _("Commission reversal")

    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_entry_id, editable=False
    )
    wallet = models.ForeignKey(
        Wallet, on_delete=models.PROTECT, related_name="entries", verbose_name=_("wallet")
    )
    kind = models.CharField(_("kind"), max_length=20, choices=Kind.choices)
    amount = models.DecimalField(
        _("amount"), **MONEY, help_text=_("Positive credits, negative debits.")
    )
    balance_after = models.DecimalField(_("balance after"), **MONEY)
    currency = models.CharField(_("currency"), max_length=3)
    # What the entry is for (top_…, pay_…, rch_…, adj_…). One entry per kind and reference:
    # this constraint is what makes a refund or a top-up approval happen exactly once.
    reference = models.CharField(_("reference"), max_length=64)
    memo = models.CharField(_("memo"), max_length=255, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(
        _("created at"), default=timezone.now, editable=False, db_index=True
    )

    class Meta:
        verbose_name = _("ledger entry")
        verbose_name_plural = _("ledger entries")
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["wallet", "kind", "reference"], name="one_entry_per_reference"
            ),
            models.CheckConstraint(condition=~models.Q(amount=0), name="ledger_amount_not_zero"),
        ]
        indexes = [
            models.Index(fields=["wallet", "-id"], name="ledger_wallet_recent"),
            # Statements: a wallet's entries of a period (docs/contract.md §13).
            models.Index(fields=["wallet", "created_at"], name="ledger_wallet_period"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.amount} {self.currency} ({self.reference})"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise RuntimeError("ledger entries are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise RuntimeError("ledger entries are append-only")


class TopUp(models.Model):
    class Method(models.TextChoices):
        CARD = "card", _("Card")
        BANK_TRANSFER = "bank_transfer", _("Bank transfer")
        MANUAL = "manual", _("Manual (operator)")
        SANDBOX = "sandbox", _("Sandbox addition (test key)")

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")
        FAILED = "failed", _("Failed")

    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_topup_id, editable=False
    )
    wallet = models.ForeignKey(
        Wallet, on_delete=models.PROTECT, related_name="topups", verbose_name=_("wallet")
    )
    method = models.CharField(_("method"), max_length=16, choices=Method.choices)
    status = models.CharField(
        _("status"), max_length=10, choices=Status.choices, default=Status.PENDING
    )
    amount = models.DecimalField(_("amount"), **MONEY)
    currency = models.CharField(_("currency"), max_length=3)
    # Bank transfer reference the customer quotes, or the card processor's payment id.
    external_reference = models.CharField(
        _("external reference"), max_length=128, blank=True, db_index=True
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("requested by"),
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("decided by"),
    )
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    note = models.CharField(_("note"), max_length=255, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)

    class Meta:
        verbose_name = _("top-up")
        verbose_name_plural = _("top-ups")
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(amount__gt=0), name="topup_amount_positive"),
            # A card top-up is credited only for a card payment: its PaymentIntent id is set.
            models.CheckConstraint(
                condition=~models.Q(method="card", status="approved", external_reference=""),
                name="topup_card_approved_with_payment",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.public_id} {self.amount} {self.currency} {self.status}"
