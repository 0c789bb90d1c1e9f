# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_field_labels"),
        ("checkout", "0007_guest_purchases"),
        ("orders", "0017_order_receipt_address"),
        ("payments", "0004_payment_canceled"),
        ("wallet", "0010_field_labels"),
        ("accounts", "__first__"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="cardcheckout",
            labels={
                "account": {"verbose_name": "account"},
                "amount": {"verbose_name": "amount"},
                "attempt_started_at": {"verbose_name": "attempt started at"},
                "attempts": {"verbose_name": "attempts"},
                "card_fingerprint": {"verbose_name": "card fingerprint"},
                "cart": {"verbose_name": "cart"},
                "cart_item_ids": {"verbose_name": "cart item IDs"},
                "client_address": {"verbose_name": "client address"},
                "completed_at": {"verbose_name": "completed at"},
                "created_at": {"verbose_name": "created at"},
                "currency": {"verbose_name": "currency"},
                "expires_at": {"verbose_name": "expires at"},
                "failure_code": {"verbose_name": "failure code"},
                "guest_email": {"verbose_name": "guest email"},
                "guest_language": {"verbose_name": "guest language"},
                "limit_amount_eur": {"verbose_name": "limit amount (EUR)"},
                "limit_counted_at": {"verbose_name": "limit counted at"},
                "payment": {"verbose_name": "payment"},
                "payment_intent_id": {"verbose_name": "payment intent ID"},
                "setup_intent_id": {"verbose_name": "setup intent ID"},
                "topup": {"verbose_name": "top-up"},
                "updated_at": {"verbose_name": "updated at"},
            },
        ),
        AlterFieldLabels(
            model_name="cardkeyfreeze",
            labels={
                "account": {"verbose_name": "account"},
                "cause": {"verbose_name": "cause"},
                "checkout": {"verbose_name": "checkout"},
                "frozen_at": {"verbose_name": "frozen at"},
                "kind": {"verbose_name": "kind"},
                "reason": {"verbose_name": "reason"},
                "reviewed_at": {"verbose_name": "reviewed at"},
                "reviewed_by": {"verbose_name": "reviewed by"},
                "status": {"verbose_name": "status"},
                "value": {"verbose_name": "value"},
            },
        ),
        AlterFieldLabels(
            model_name="cardlimitoverride",
            labels={
                "account": {"verbose_name": "account"},
                "first_purchase_amount": {"verbose_name": "first purchase amount"},
                "new_account_amount_per_day": {"verbose_name": "new account amount per day"},
                "new_account_days": {"verbose_name": "new account days"},
                "new_account_per_day": {"verbose_name": "new account per day"},
                "note": {"verbose_name": "note"},
                "per_account_per_hour": {"verbose_name": "per account per hour"},
                "per_address_per_day": {"verbose_name": "per address per day"},
                "per_address_per_hour": {"verbose_name": "per address per hour"},
                "per_card_per_day": {"verbose_name": "per card per day"},
                "per_number_per_day": {"verbose_name": "per number per day"},
                "updated_at": {"verbose_name": "updated at"},
                "updated_by": {"verbose_name": "updated by"},
            },
        ),
        AlterFieldLabels(
            model_name="stripeevent",
            labels={
                "event_id": {"verbose_name": "event ID"},
                "payment_intent_id": {"verbose_name": "payment intent ID"},
                "received_at": {"verbose_name": "received at"},
                "type": {"verbose_name": "type"},
            },
        ),
    ]
