# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0007_account_network"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="account",
            labels={
                "created_at": {"verbose_name": "created at"},
                "public_id": {"verbose_name": "public ID"},
            },
        ),
        AlterFieldLabels(
            model_name="apikey",
            labels={
                "account": {"verbose_name": "account"},
                "public_id": {"verbose_name": "public ID"},
                "secret_hash": {"verbose_name": "secret hash"},
            },
        ),
        AlterFieldLabels(
            model_name="billingprofile",
            labels={"account": {"verbose_name": "account"}},
        ),
        AlterFieldLabels(
            model_name="invitation",
            labels={
                "accepted_at": {"verbose_name": "accepted at"},
                "account": {"verbose_name": "account"},
                "created_at": {"verbose_name": "created at"},
                "email": {"verbose_name": "email"},
                "invited_by": {"verbose_name": "invited by"},
                "role": {"verbose_name": "role"},
                "token_hash": {"verbose_name": "token hash"},
            },
        ),
        AlterFieldLabels(
            model_name="signuprequest",
            labels={
                "account_name": {"verbose_name": "account name"},
                "created_at": {"verbose_name": "created at"},
                "email": {"verbose_name": "email"},
                "first_name": {"verbose_name": "first name"},
                "language": {"verbose_name": "language"},
                "last_name": {"verbose_name": "last name"},
                "password": {"verbose_name": "password"},
                "token_hash": {"verbose_name": "token hash"},
            },
        ),
        AlterFieldLabels(
            model_name="user",
            labels={
                "account": {"verbose_name": "account"},
                "date_joined": {"verbose_name": "date joined"},
                "public_id": {"verbose_name": "public ID"},
            },
        ),
    ]
