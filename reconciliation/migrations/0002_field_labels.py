# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("recharges", "0011_field_labels"),
        ("reconciliation", "0001_initial"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="reconciliationitem",
            labels={
                "ours_currency": {"verbose_name": "ours currency"},
                "recharge": {"verbose_name": "recharge"},
                "run": {"verbose_name": "run"},
                "theirs_currency": {"verbose_name": "theirs currency"},
            },
        ),
        AlterFieldLabels(
            model_name="reconciliationrun",
            labels={"public_id": {"verbose_name": "public ID"}},
        ),
    ]
