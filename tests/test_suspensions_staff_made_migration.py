"""The accounts suspended when ``suspended_by_depth`` came (backoffice 0003): a suspension
staff made stays staff's to lift; one a parent made, or one staff lifted and a parent made
again, stays liftable by any ancestor."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Account
from backoffice.models import StaffAction
from tests.factories import UserFactory
from tests.migration_support import migrated
from tests.network_support import agent_of, top_account

BEFORE = [("backoffice", "0002_verbose_names")]
AFTER = [("backoffice", "0003_suspensions_staff_made")]


@pytest.mark.django_db(transaction=True)
def test_suspensions_staff_made_before_are_staffs_after(latest_after):
    migrated(BEFORE)
    staff = UserFactory(is_staff=True)
    top = top_account()
    by_staff, by_parent, again_by_parent = agent_of(top), agent_of(top), agent_of(top)
    now = timezone.now()

    def staff_did(action: str, account: Account, at) -> None:
        StaffAction.objects.create(
            actor=staff, action=action, target_type="account", target_id=account.public_id,
            created_at=at,
        )  # fmt: skip

    Account.objects.filter(pk=by_staff.pk).update(suspended_at=now - timedelta(hours=2))
    staff_did("account.suspend", by_staff, now - timedelta(hours=2) + timedelta(milliseconds=3))
    Account.objects.filter(pk=by_parent.pk).update(suspended_at=now - timedelta(hours=1))
    # Staff suspended and resumed it; its parent suspended it since.
    staff_did("account.suspend", again_by_parent, now - timedelta(days=2))
    staff_did("account.resume", again_by_parent, now - timedelta(days=1))
    Account.objects.filter(pk=again_by_parent.pk).update(suspended_at=now)
    migrated(AFTER)

    held = dict(Account.objects.filter(parent=top).values_list("pk", "suspended_by_depth"))
    assert held == {by_staff.pk: 0, by_parent.pk: None, again_by_parent.pk: None}
