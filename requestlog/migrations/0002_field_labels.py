# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_field_labels"),
        ("requestlog", "0001_initial"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="apirequest",
            labels={
                "account": {"verbose_name": "account"},
                "api_key": {"verbose_name": "API key"},
                "public_id": {"verbose_name": "public ID"},
            },
        ),
    ]
