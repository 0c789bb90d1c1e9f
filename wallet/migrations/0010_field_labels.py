# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_field_labels"),
        ("wallet", "0009_network_kinds"),
        ("accounts", "__first__"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="ledgerentry",
            labels={
                "amount": {"verbose_name": "amount"},
                "balance_after": {"verbose_name": "balance after"},
                "created_at": {"verbose_name": "created at"},
                "created_by": {"verbose_name": "created by"},
                "currency": {"verbose_name": "currency"},
                "kind": {"verbose_name": "kind"},
                "memo": {"verbose_name": "memo"},
                "public_id": {"verbose_name": "public ID"},
                "reference": {"verbose_name": "reference"},
                "wallet": {"verbose_name": "wallet"},
            },
        ),
        AlterFieldLabels(
            model_name="topup",
            labels={
                "amount": {"verbose_name": "amount"},
                "created_at": {"verbose_name": "created at"},
                "currency": {"verbose_name": "currency"},
                "decided_at": {"verbose_name": "decided at"},
                "decided_by": {"verbose_name": "decided by"},
                "external_reference": {"verbose_name": "external reference"},
                "method": {"verbose_name": "method"},
                "note": {"verbose_name": "note"},
                "public_id": {"verbose_name": "public ID"},
                "requested_by": {"verbose_name": "requested by"},
                "status": {"verbose_name": "status"},
                "wallet": {"verbose_name": "wallet"},
            },
        ),
        AlterFieldLabels(
            model_name="wallet",
            labels={
                "account": {"verbose_name": "account"},
                "api_key": {"verbose_name": "API key"},
                "balance": {"verbose_name": "balance"},
                "created_at": {"verbose_name": "created at"},
                "currency": {"verbose_name": "currency"},
                "dispute_owed": {"verbose_name": "dispute owed"},
                "kind": {"verbose_name": "kind"},
                "low_balance_threshold": {"verbose_name": "low balance threshold"},
                "public_id": {"verbose_name": "public ID"},
                "updated_at": {"verbose_name": "updated at"},
            },
        ),
    ]
