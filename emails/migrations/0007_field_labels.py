# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("emails", "0006_invitation_kind"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="email",
            labels={
                "attempts": {"verbose_name": "attempts"},
                "context": {"verbose_name": "context"},
                "created_at": {"verbose_name": "created at"},
                "kind": {"verbose_name": "kind"},
                "language": {"verbose_name": "language"},
                "last_error": {"verbose_name": "last error"},
                "next_attempt_at": {"verbose_name": "next attempt at"},
                "secret_context": {"verbose_name": "secret context"},
                "sent_at": {"verbose_name": "sent at"},
                "to": {"verbose_name": "to"},
            },
        ),
    ]
