# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_field_labels"),
        ("catalog", "0006_product_kinds_benefits"),
        ("orders", "0017_order_receipt_address"),
        ("accounts", "__first__"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="batch",
            labels={
                "account": {"verbose_name": "account"},
                "api_key": {"verbose_name": "API key"},
                "completed_at": {"verbose_name": "completed at"},
                "created_at": {"verbose_name": "created at"},
                "created_by": {"verbose_name": "created by"},
                "livemode": {"verbose_name": "live mode"},
                "order": {"verbose_name": "order"},
                "public_id": {"verbose_name": "public ID"},
                "recharge_count": {"verbose_name": "recharge count"},
            },
        ),
        AlterFieldLabels(
            model_name="cart",
            labels={
                "account": {"verbose_name": "account"},
                "created_at": {"verbose_name": "created at"},
                "livemode": {"verbose_name": "live mode"},
                "session_id": {"verbose_name": "session ID"},
                "updated_at": {"verbose_name": "updated at"},
            },
        ),
        AlterFieldLabels(
            model_name="cartitem",
            labels={
                "cart": {"verbose_name": "cart"},
                "created_at": {"verbose_name": "created at"},
                "fields": {"verbose_name": "fields"},
                "local_amount": {"verbose_name": "local amount"},
                "product": {"verbose_name": "product"},
                "public_id": {"verbose_name": "public ID"},
                "quantity": {"verbose_name": "quantity"},
                "recipient_number": {"verbose_name": "recipient number"},
            },
        ),
        AlterFieldLabels(
            model_name="idempotencyrecord",
            labels={
                "account": {"verbose_name": "account"},
                "created_at": {"verbose_name": "created at"},
                "fingerprint": {"verbose_name": "fingerprint"},
                "key": {"verbose_name": "key"},
                "livemode": {"verbose_name": "live mode"},
                "response_body": {"verbose_name": "response body"},
                "response_status": {"verbose_name": "response status"},
            },
        ),
        AlterFieldLabels(
            model_name="order",
            labels={
                "account": {"verbose_name": "account"},
                "api_key": {"verbose_name": "API key"},
                "channel": {"verbose_name": "channel"},
                "created_at": {"verbose_name": "created at"},
                "created_by": {"verbose_name": "created by"},
                "currency": {"verbose_name": "currency"},
                "livemode": {"verbose_name": "live mode"},
                "promotion_wait": {"verbose_name": "promotion wait"},
                "public_id": {"verbose_name": "public ID"},
                "receipt_email": {"verbose_name": "receipt email"},
                "receipt_language": {"verbose_name": "receipt language"},
                "total": {"verbose_name": "total"},
            },
        ),
        AlterFieldLabels(
            model_name="orderline",
            labels={
                "fields": {"verbose_name": "fields"},
                "line_total": {"verbose_name": "line total"},
                "local_amount": {"verbose_name": "local amount"},
                "order": {"verbose_name": "order"},
                "product": {"verbose_name": "product"},
                "promotion_name": {"verbose_name": "promotion name"},
                "quantity": {"verbose_name": "quantity"},
                "recipient_number": {"verbose_name": "recipient number"},
                "unit_price": {"verbose_name": "unit price"},
            },
        ),
    ]
