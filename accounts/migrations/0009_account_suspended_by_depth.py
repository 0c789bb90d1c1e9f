# Who suspended an account (contract section 18): the level of the ancestor, 0 for staff.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_field_labels"),
    ]

    operations = [
        migrations.AddField(
            model_name="account",
            name="suspended_by_depth",
            field=models.PositiveSmallIntegerField(
                blank=True,
                help_text="0: staff; otherwise the level of the account that suspended it.",
                null=True,
                verbose_name="suspended by level",
            ),
        ),
    ]
