"""Card checkouts and handled Stripe events become the checkout app's (checkout.CardCheckout,
checkout.StripeEvent) with the same tables: only Django's state changes here. Their content
types follow them, so permissions and the admin's history of those rows keep pointing at them."""

from django.db import migrations

MOVED = {"cardcheckout": "checkout", "stripeevent": "checkout"}


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
        ("orders", "0011_payments_and_recharges_move_out"),
        ("checkout", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="StripeEvent"),
                migrations.DeleteModel(name="CardCheckout"),
            ],
        ),
        migrations.RunPython(content_types_follow, content_types_back),
    ]
