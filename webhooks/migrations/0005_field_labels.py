# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_field_labels"),
        ("webhooks", "0004_event_sealed"),
        ("accounts", "__first__"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="delivery",
            labels={
                "attempts": {"verbose_name": "attempts"},
                "created_at": {"verbose_name": "created at"},
                "delivered_at": {"verbose_name": "delivered at"},
                "endpoint": {"verbose_name": "endpoint"},
                "event": {"verbose_name": "event"},
                "last_error": {"verbose_name": "last error"},
                "last_status_code": {"verbose_name": "last status code"},
                "next_attempt_at": {"verbose_name": "next attempt at"},
                "public_id": {"verbose_name": "public ID"},
                "state": {"verbose_name": "state"},
                "updated_at": {"verbose_name": "updated at"},
            },
        ),
        AlterFieldLabels(
            model_name="deliveryattempt",
            labels={
                "created_at": {"verbose_name": "created at"},
                "delivery": {"verbose_name": "delivery"},
                "error": {"verbose_name": "error"},
                "latency_ms": {"verbose_name": "latency (ms)"},
                "number": {"verbose_name": "number"},
                "response_head": {"verbose_name": "response head"},
                "status_code": {"verbose_name": "status code"},
            },
        ),
        AlterFieldLabels(
            model_name="event",
            labels={
                "account": {"verbose_name": "account"},
                "body": {"verbose_name": "body"},
                "created_at": {"verbose_name": "created at"},
                "livemode": {"verbose_name": "live mode"},
                "public_id": {"verbose_name": "public ID"},
                "sealed": {"verbose_name": "sealed"},
                "type": {"verbose_name": "type"},
            },
        ),
        AlterFieldLabels(
            model_name="webhookendpoint",
            labels={
                "account": {"verbose_name": "account"},
                "created_at": {"verbose_name": "created at"},
                "created_by": {"verbose_name": "created by"},
                "description": {"verbose_name": "description"},
                "disabled_at": {"verbose_name": "disabled at"},
                "disabled_reason": {"verbose_name": "disabled reason"},
                "events": {"verbose_name": "events"},
                "failing_since": {"verbose_name": "failing since"},
                "lease_token": {"verbose_name": "lease token"},
                "lease_until": {"verbose_name": "lease until"},
                "livemode": {"verbose_name": "live mode"},
                "previous_secret": {"verbose_name": "previous secret"},
                "previous_secret_expires_at": {"verbose_name": "previous secret expires at"},
                "public_id": {"verbose_name": "public ID"},
                "secret": {"verbose_name": "secret"},
                "status": {"verbose_name": "status"},
                "updated_at": {"verbose_name": "updated at"},
                "url": {"verbose_name": "URL"},
            },
        ),
    ]
