"""Saved recipients: the numbers an account tops up again and again, with a name it chose."""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from reseller.ids import make_id


def new_recipient_id() -> str:
    return make_id("rcp")


class SavedRecipient(models.Model):
    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_recipient_id
    )
    account = models.ForeignKey(
        "accounts.Account",
        on_delete=models.CASCADE,
        related_name="saved_recipients",
        verbose_name=_("account"),
    )
    name = models.CharField(_("name"), max_length=80)
    phone_number = models.CharField(_("phone number"), max_length=20)  # E.164
    # The operator last bought for: "top up again" opens its amounts (numbers move between
    # operators, so it is a remembered choice, never a check).
    operator = models.ForeignKey(
        "catalog.Operator",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("operator"),
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now)

    class Meta:
        verbose_name = _("saved recipient")
        verbose_name_plural = _("saved recipients")
        constraints = [
            models.UniqueConstraint(fields=["account", "phone_number"], name="recipient_once")
        ]
        ordering = ["name", "pk"]

    def __str__(self) -> str:
        return f"{self.name} ({self.phone_number})"
