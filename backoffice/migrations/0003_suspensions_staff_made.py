# Suspensions in force when accounts learnt who suspended them (accounts 0009): those staff
# made keep only staff able to lift them. Staff's last suspend action of the account, at or
# after the account's suspension date, says it was theirs (a staff suspension of an active
# account set that date; a later one by its parent would be after the action). The others
# stay unknown: any ancestor may resume them, as before.

from django.db import migrations

STAFF_LEVEL = 0


def staff_holds_marked(apps, schema_editor):
    Account = apps.get_model("accounts", "Account")
    StaffAction = apps.get_model("backoffice", "StaffAction")
    suspended = Account.objects.filter(suspended_at__isnull=False, suspended_by_depth__isnull=True)
    for account in suspended.only("pk", "public_id", "suspended_at"):
        last = (
            StaffAction.objects.filter(
                action__in=("account.suspend", "account.resume"), target_id=account.public_id
            )
            .order_by("-created_at", "-pk")
            .first()
        )
        staffs = last is not None and last.action == "account.suspend"
        if staffs and last.created_at >= account.suspended_at:
            Account.objects.filter(pk=account.pk).update(suspended_by_depth=STAFF_LEVEL)


class Migration(migrations.Migration):
    dependencies = [
        ("backoffice", "0002_verbose_names"),
        ("accounts", "0009_account_suspended_by_depth"),
    ]

    operations = [migrations.RunPython(staff_holds_marked, migrations.RunPython.noop)]
