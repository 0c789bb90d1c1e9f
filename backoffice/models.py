"""The audit trail of the back office: who did what to which object, and when."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class StaffAction(models.Model):
    """One staff action (approve a top-up, retry a recharge, revoke a key, export a list...).

    Written by ``backoffice.services.audit`` in the same transaction as the change it
    describes, so a change that rolls back leaves no record and a record never lies.
    Append-only, like the ledger: the admin shows it read-only.
    """

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("staff user"),
    )
    action = models.CharField(_("action"), max_length=64, db_index=True)
    target_type = models.CharField(_("object type"), max_length=64, blank=True)
    target_id = models.CharField(_("object id"), max_length=64, blank=True)
    target_repr = models.CharField(_("object"), max_length=200, blank=True)
    detail = models.JSONField(_("detail"), default=dict, blank=True)
    created_at = models.DateTimeField(_("when"), default=timezone.now, editable=False)

    class Meta:
        verbose_name = _("staff action")
        verbose_name_plural = _("staff actions")
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["-created_at"], name="staffaction_recent"),
            models.Index(fields=["target_type", "target_id"], name="staffaction_target"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.target_repr or self.target_id}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise RuntimeError("staff actions are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise RuntimeError("staff actions are append-only")
