# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_field_labels"),
        ("catalog", "0006_product_kinds_benefits"),
        ("orders", "0018_field_labels"),
        ("payments", "0005_field_labels"),
        ("recharges", "0010_recharge_pin"),
        ("upstreams", "0009_route_field_names"),
        ("accounts", "__first__"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="recharge",
            labels={
                "account": {"verbose_name": "account"},
                "amount": {"verbose_name": "amount"},
                "attempts": {"verbose_name": "attempts"},
                "card_refund_id": {"verbose_name": "card refund ID"},
                "cost": {"verbose_name": "cost"},
                "cost_currency": {"verbose_name": "cost currency"},
                "currency": {"verbose_name": "currency"},
                "delivered_at": {"verbose_name": "delivered at"},
                "dispatched_at": {"verbose_name": "dispatched at"},
                "failed_at": {"verbose_name": "failed at"},
                "failure_code": {"verbose_name": "failure code"},
                "failure_message": {"verbose_name": "failure message"},
                "fields": {"verbose_name": "fields"},
                "local_amount": {"verbose_name": "local amount"},
                "margin": {"verbose_name": "margin"},
                "margin_currency": {"verbose_name": "margin currency"},
                "order": {"verbose_name": "order"},
                "payment": {"verbose_name": "payment"},
                "pin_encrypted": {"verbose_name": "encrypted PIN"},
                "pin_last4": {"verbose_name": "PIN last 4 digits"},
                "product": {"verbose_name": "product"},
                "promotion_wait": {"verbose_name": "promotion wait"},
                "provider_response": {"verbose_name": "provider response"},
                "provider_transaction_id": {"verbose_name": "provider transaction ID"},
                "public_id": {"verbose_name": "public ID"},
                "queued_at": {"verbose_name": "queued at"},
                "recipient_number": {"verbose_name": "recipient number"},
                "reference": {"verbose_name": "reference"},
                "released_at": {"verbose_name": "released at"},
                "retries": {"verbose_name": "retries"},
                "reversed_at": {"verbose_name": "reversed at"},
                "route": {"verbose_name": "route"},
                "sandbox_ready_at": {"verbose_name": "sandbox ready at"},
                "updated_at": {"verbose_name": "updated at"},
                "waitlisted_until": {"verbose_name": "waitlisted until"},
            },
        ),
        AlterFieldLabels(
            model_name="rechargeattempt",
            labels={
                "action": {"verbose_name": "action"},
                "code": {"verbose_name": "code"},
                "created_at": {"verbose_name": "created at"},
                "duration_ms": {"verbose_name": "duration (ms)"},
                "message": {"verbose_name": "message"},
                "outcome": {"verbose_name": "outcome"},
                "provider": {"verbose_name": "provider"},
                "recharge": {"verbose_name": "recharge"},
            },
        ),
        AlterFieldLabels(
            model_name="rechargeevent",
            labels={
                "actor": {"verbose_name": "actor"},
                "created_at": {"verbose_name": "created at"},
                "from_status": {"verbose_name": "from status"},
                "note": {"verbose_name": "note"},
                "recharge": {"verbose_name": "recharge"},
                "to_status": {"verbose_name": "to status"},
            },
        ),
    ]
