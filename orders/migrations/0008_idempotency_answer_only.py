"""The Idempotency-Key is taken in the order's transaction (orders/idempotency.py): a record
is only ever a finished request's answer. Claims of requests still running at deploy time
are dropped (their requests take the key again on retry); the claim's columns go."""

from django.db import migrations, models


def drop_unfinished_claims(apps, schema_editor):
    record = apps.get_model("orders", "IdempotencyRecord")
    record.objects.exclude(state="done").delete()
    record.objects.filter(response_status__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [("orders", "0007_recharge_by_status")]

    operations = [
        migrations.RunPython(drop_unfinished_claims, migrations.RunPython.noop),
        migrations.RemoveField(model_name="idempotencyrecord", name="token"),
        migrations.RemoveField(model_name="idempotencyrecord", name="state"),
        migrations.RemoveField(model_name="idempotencyrecord", name="claimed_at"),
        migrations.RemoveField(model_name="idempotencyrecord", name="holder_pid"),
        migrations.RemoveField(model_name="idempotencyrecord", name="holder_since"),
        migrations.AlterField(
            model_name="idempotencyrecord",
            name="response_status",
            field=models.PositiveSmallIntegerField(),
        ),
        migrations.AlterField(
            model_name="idempotencyrecord",
            name="response_body",
            field=models.JSONField(),
        ),
    ]
