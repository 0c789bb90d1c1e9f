from __future__ import annotations

from django.db import IntegrityError, transaction

from accounts.models import Account
from catalog.models import Operator
from recipients.models import SavedRecipient


def recipient_save(
    *, account: Account, name: str, phone_number: str, operator: Operator | None = None
) -> SavedRecipient:
    """Save a number (E.164, checked by the caller's form) under a name; saving a saved number
    renames it and keeps its operator unless another one is given."""
    with transaction.atomic():
        existing = (
            SavedRecipient.objects.select_for_update()
            .filter(account=account, phone_number=phone_number)
            .first()
        )
        if existing is not None:
            existing.name = name
            existing.operator = operator or existing.operator
            existing.save(update_fields=["name", "operator"])
            return existing
        try:
            with transaction.atomic():
                return SavedRecipient.objects.create(
                    account=account, name=name, phone_number=phone_number, operator=operator
                )
        except IntegrityError:  # saved at the same moment by another request
            return SavedRecipient.objects.get(account=account, phone_number=phone_number)


def recipient_delete(*, recipient: SavedRecipient) -> None:
    recipient.delete()
