from __future__ import annotations

from django.db.models import QuerySet
from django.urls import reverse
from django.utils.http import urlencode

from recipients.models import SavedRecipient


def recipients_of(*, account_id: int) -> QuerySet[SavedRecipient]:
    return SavedRecipient.objects.filter(account_id=account_id).select_related("operator")


def recipient_names(*, account_id: int) -> dict[str, str]:
    """Saved names by number, to label numbers on receipts and in history."""
    return dict(
        SavedRecipient.objects.filter(account_id=account_id).values_list("phone_number", "name")
    )


def top_up_url(*, phone_number: str, country: str | None = None, slug: str | None = None) -> str:
    """Where "top up again" goes: the operator's amounts for the number when the operator is
    known, else the finder, which detects it."""
    query = urlencode({"phone": phone_number})
    if country and slug:
        return f"{reverse('catalog:operator', args=[country, slug])}?{query}"
    return f"{reverse('catalog:find')}?{query}"
