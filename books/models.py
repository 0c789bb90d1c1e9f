"""The books of the business (docs/books.md): a double-entry journal of what the platform
earns and spends, beside the wallet ledger (what each customer holds).

Each journal is a few lines whose amounts sum to zero in each currency (debits positive,
credits negative). A line also carries its amount in the sale's currency
(``reporting_amount``/``reporting_currency``: a cost in USD of a sale in EUR, converted with
the FX table when the sale was delivered), so revenue, cost and margin per day, provider,
operator, country and reseller are sums of lines, never recomputed from recharges.
Append-only: a reversal is new lines, never an edit. Written only by ``books.services``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

AMOUNT: dict[str, Any] = {"max_digits": 16, "decimal_places": 4}
AMOUNT_MAX = Decimal("999999999999.9999")  # the largest AMOUNT holds, either way


class Entry(models.Model):
    class Ledger(models.TextChoices):
        # What customers paid for airtime (their wallet debit or their card charge).
        CUSTOMERS = "customers", _("Customers")
        REVENUE = "revenue", _("Revenue")
        COST_OF_SALES = "cost_of_sales", _("Cost of sales")
        # What we prepaid a provider and have not spent yet (per provider and currency).
        PROVIDER_FLOAT = "provider_float", _("Provider float")
        BANK = "bank", _("Bank")
        # What lost card disputes took back (an expense), and Stripe's dispute fees.
        DISPUTES_LOST = "disputes_lost", _("Disputes lost")
        STRIPE_FEES = "stripe_fees", _("Stripe fees")

    class Kind(models.TextChoices):
        SALE = "sale", _("Sale")
        COST = "cost", _("Cost")
        REVERSAL = "reversal", _("Reversal")
        FLOAT = "float", _("Provider float funded")
        DISPUTE = "dispute", _("Dispute lost")
        DISPUTE_FEE = "dispute_fee", _("Dispute fee")

    journal = models.CharField(max_length=64)
    kind = models.CharField(max_length=12, choices=Kind.choices)
    ledger = models.CharField(max_length=16, choices=Ledger.choices)
    amount = models.DecimalField(**AMOUNT, help_text=_("Debits positive, credits negative."))
    currency = models.CharField(max_length=3)
    reporting_amount = models.DecimalField(**AMOUNT)
    reporting_currency = models.CharField(max_length=3)
    # What the line is about (blank or null when it is not about a sale): the recharge's id; for
    # a dispute's lines, the disputed payment's or card top-up's id.
    reference = models.CharField(max_length=40, blank=True, db_index=True)
    provider = models.CharField(max_length=32, blank=True)
    customer_id = models.BigIntegerField(null=True, blank=True)  # the reseller's account
    operator_id = models.BigIntegerField(null=True, blank=True)
    country = models.CharField(max_length=2, blank=True)
    memo = models.CharField(max_length=255, blank=True)
    booked_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("book entry")
        verbose_name_plural = _("book entries")
        constraints = [
            # A journal is written once: a second sale or reversal of one recharge fails.
            models.UniqueConstraint(fields=["journal", "ledger"], name="books_entry_once"),
        ]
        indexes = [models.Index(fields=["ledger", "booked_at"])]

    def __str__(self) -> str:
        return f"{self.journal} {self.ledger} {self.amount} {self.currency}"
