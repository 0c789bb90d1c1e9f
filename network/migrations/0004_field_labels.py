# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_field_labels"),
        ("network", "0003_commissions"),
        ("accounts", "__first__"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="commission",
            labels={
                "created_at": {"verbose_name": "created at"},
                "reference": {"verbose_name": "reference"},
            },
        ),
        AlterFieldLabels(
            model_name="transfer",
            labels={
                "created_at": {"verbose_name": "created at"},
                "created_by": {"verbose_name": "created by"},
                "public_id": {"verbose_name": "public ID"},
            },
        ),
        AlterFieldLabels(
            model_name="transferkey",
            labels={
                "account": {"verbose_name": "account"},
                "created_at": {"verbose_name": "created at"},
                "fingerprint": {"verbose_name": "fingerprint"},
                "key": {"verbose_name": "key"},
                "livemode": {"verbose_name": "live mode"},
                "response_body": {"verbose_name": "response body"},
                "response_status": {"verbose_name": "response status"},
            },
        ),
    ]
