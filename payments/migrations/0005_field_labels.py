# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_field_labels"),
        ("orders", "0018_field_labels"),
        ("payments", "0004_payment_canceled"),
        ("wallet", "0010_field_labels"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="payment",
            labels={
                "account": {"verbose_name": "account"},
                "amount": {"verbose_name": "amount"},
                "captured_at": {"verbose_name": "captured at"},
                "created_at": {"verbose_name": "created at"},
                "currency": {"verbose_name": "currency"},
                "dispute_amount": {"verbose_name": "dispute amount"},
                "dispute_reason": {"verbose_name": "dispute reason"},
                "dispute_status": {"verbose_name": "dispute status"},
                "expires_at": {"verbose_name": "expires at"},
                "failure_code": {"verbose_name": "failure code"},
                "livemode": {"verbose_name": "live mode"},
                "method": {"verbose_name": "method"},
                "order": {"verbose_name": "order"},
                "payment_intent_id": {"verbose_name": "payment intent ID"},
                "public_id": {"verbose_name": "public ID"},
                "refunded_amount": {"verbose_name": "refunded amount"},
                "setup_intent_id": {"verbose_name": "setup intent ID"},
                "status": {"verbose_name": "status"},
                "updated_at": {"verbose_name": "updated at"},
                "wallet": {"verbose_name": "wallet"},
            },
        ),
    ]
