"""Payments and recharges become apps of their own (payments, recharges) with the same tables:
only Django's state changes here. Their content types follow them, so permissions and the
admin's history of those rows keep pointing at them."""

import django.db.models.deletion
from django.db import migrations, models

MOVED = {"payment": "payments", "recharge": "recharges", "rechargeevent": "recharges"}


def content_types_follow(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model, label in MOVED.items():
        if not content_type.objects.filter(app_label=label, model=model).exists():
            content_type.objects.filter(app_label="orders", model=model).update(app_label=label)


def content_types_back(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    for model, label in MOVED.items():
        content_type.objects.filter(app_label=label, model=model).update(app_label="orders")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("orders", "0010_batches"),
        ("payments", "0001_initial"),
        ("recharges", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="cardcheckout",
                    name="payment",
                    field=models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="card_checkout",
                        to="payments.payment",
                    ),
                ),
                migrations.DeleteModel(name="RechargeEvent"),
                migrations.DeleteModel(name="Recharge"),
                migrations.DeleteModel(name="Payment"),
            ],
        ),
        migrations.RunPython(content_types_follow, content_types_back),
    ]
