"""``python manage.py rotate_field_encryption``: every value encrypted with
FIELD_ENCRYPTION_KEY re-encrypted with its first key (docs/security.md, "PINs"): recharges'
PINs, sealed webhook events, unsent emails' secret context, stored idempotency answers. Put
the new key first, keep the old ones after it, run this, then drop the old ones."""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db import transaction

from emails.models import Email
from orders.idempotency import pins_rotate
from recharges.models import Recharge
from reseller import crypto
from webhooks.models import Event


def _rotate(queryset, field: str) -> int:
    count = 0
    for pk, token in queryset.exclude(**{field: ""}).values_list("pk", field).iterator():
        with transaction.atomic():
            queryset.filter(pk=pk, **{field: token}).update(**{field: crypto.rotate(token)})
        count += 1
    return count


class Command(BaseCommand):
    help = "Re-encrypt every encrypted field with the first key of FIELD_ENCRYPTION_KEY."

    def handle(self, *args, **options) -> None:
        crypto.cipher()  # refuses, naming the setting, when no key is set
        counts = {
            "recharge PINs": _rotate(Recharge.objects.all(), "pin_encrypted"),
            "webhook events": _rotate(Event.objects.filter(sealed=True), "body"),
            "emails": _rotate(Email.objects.all(), "secret_context"),
            "idempotency answers": pins_rotate(),
        }
        self.stdout.write(", ".join(f"{what}: {n}" for what, n in counts.items()))
