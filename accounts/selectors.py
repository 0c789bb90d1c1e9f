"""Reads for users and accounts."""

from __future__ import annotations

from typing import Any

from accounts.models import BillingProfile, User
from accounts.serializers import MeOut


def user_with_account(user_id: int) -> User:
    return User.objects.select_related("account", "account__billing").get(pk=user_id)


def me_payload(request) -> dict[str, Any]:
    user = request.user
    BillingProfile.objects.get_or_create(account=user.account)
    return dict(MeOut(user).data)
