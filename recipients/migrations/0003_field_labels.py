# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_field_labels"),
        ("catalog", "0006_product_kinds_benefits"),
        ("recipients", "0002_verbose_names"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="savedrecipient",
            labels={
                "account": {"verbose_name": "account"},
                "created_at": {"verbose_name": "created at"},
                "name": {"verbose_name": "name"},
                "operator": {"verbose_name": "operator"},
                "phone_number": {"verbose_name": "phone number"},
                "public_id": {"verbose_name": "public ID"},
            },
        ),
    ]
