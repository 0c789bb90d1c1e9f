"""Reconciliation with the upstream providers (docs/providers.md, "Reconciliation").

- ``ReconciliationRun``: one comparison of a provider's transaction report for one UTC day
  with our recharges sent there: how many matched, what is missing on either side, what
  disagrees, and how many provider reversals it applied. A day may be run again: each run is
  kept.
- ``ReconciliationItem``: one discrepancy a run found (or a reversal it applied), with our
  side and the provider's side as each recorded it.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from reseller.ids import make_id

# Provider amounts keep their precision (a 7.5% discount on 5.00 is 4.625).
AMOUNT: dict[str, Any] = {"max_digits": 14, "decimal_places": 4, "null": True, "blank": True}


def new_run_id() -> str:
    return make_id("rcn")


class ReconciliationRun(models.Model):
    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_run_id, editable=False
    )
    provider = models.CharField(_("provider"), max_length=32)  # a ``Provider`` row's name
    provider_kind = models.CharField(_("kind"), max_length=16, blank=True)
    day = models.DateField(_("day (UTC)"))
    started_at = models.DateTimeField(_("started"), default=timezone.now)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    report_lines = models.PositiveIntegerField(_("lines in their report"), default=0)
    recharges = models.PositiveIntegerField(_("our recharges"), default=0)
    matched = models.PositiveIntegerField(_("matched"), default=0)
    missing_here = models.PositiveIntegerField(_("missing here"), default=0)
    missing_there = models.PositiveIntegerField(_("missing there"), default=0)
    mismatched = models.PositiveIntegerField(_("mismatched"), default=0)
    reversals_applied = models.PositiveIntegerField(_("reversals applied"), default=0)
    # Why the report could not be read ("" when it was): such a run compared nothing.
    error = models.CharField(_("error"), max_length=255, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["provider", "day"], name="reconciliation_by_day")]
        verbose_name = _("reconciliation run")
        verbose_name_plural = _("reconciliation runs")

    def __str__(self) -> str:
        return f"{self.provider} {self.day.isoformat()}"

    @property
    def discrepancies(self) -> int:
        return self.missing_here + self.missing_there + self.mismatched

    def line(self) -> str:
        """What ``reconcile_provider`` prints (docs/contract.md §14, CLI)."""
        return (
            f"matched {self.matched}, missing here {self.missing_here}, "
            f"missing there {self.missing_there}, mismatched {self.mismatched}"
        )


class ReconciliationItem(models.Model):
    class Kind(models.TextChoices):
        # The provider has it; we have no such recharge, or not at that provider.
        MISSING_HERE = "missing_here", _("Missing here")
        # We hold it delivered at that provider; its report has no such transaction.
        MISSING_THERE = "missing_there", _("Missing there")
        # What they debited (or delivered) differs from what we recorded.
        AMOUNT_MISMATCH = "amount_mismatch", _("Amount mismatch")
        # Delivered on one side, failed (or in flight, or reversed) on the other.
        STATUS_MISMATCH = "status_mismatch", _("Status mismatch")
        # The provider took a delivered top-up back, and this run applied it.
        REVERSED = "reversed", _("Reversal applied")

    run = models.ForeignKey(
        ReconciliationRun, on_delete=models.CASCADE, related_name="items", verbose_name=_("run")
    )
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    recharge = models.ForeignKey(
        "recharges.Recharge",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("recharge"),
    )
    our_reference = models.CharField(_("our reference"), max_length=64, blank=True)
    provider_reference = models.CharField(_("provider reference"), max_length=128, blank=True)
    ours_status = models.CharField(_("our status"), max_length=16, blank=True)
    theirs_status = models.CharField(_("their status"), max_length=16, blank=True)
    ours_amount = models.DecimalField(_("our amount"), **AMOUNT)
    ours_currency = models.CharField(_("ours currency"), max_length=3, blank=True)
    theirs_amount = models.DecimalField(_("their amount"), **AMOUNT)
    theirs_currency = models.CharField(_("theirs currency"), max_length=3, blank=True)
    detail = models.CharField(_("detail"), max_length=255, blank=True)

    class Meta:
        ordering = ["id"]
        verbose_name = _("reconciliation item")
        verbose_name_plural = _("reconciliation items")

    def __str__(self) -> str:
        return f"{self.kind} {self.our_reference or self.provider_reference}"
