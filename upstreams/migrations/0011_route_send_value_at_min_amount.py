"""A range route's ``send_value`` is what its ``min_amount`` sends (``Route.send_value_at``),
no longer the line's value at 0: the rows synced before move their start to ``min_amount``,
rounded up to the cent (the next catalog sync rewrites them from Ding's own ends)."""

from decimal import ROUND_CEILING, Decimal

from django.db import migrations


def forwards(apps, schema_editor):
    Route = apps.get_model("upstreams", "Route")
    rows = Route.objects.filter(
        send_per_unit__isnull=False, send_value__isnull=False, min_amount__isnull=False
    )
    for route in rows:
        start = route.send_value + route.min_amount * route.send_per_unit
        route.send_value = start.quantize(Decimal("0.01"), rounding=ROUND_CEILING)
        route.save(update_fields=["send_value"])


def backwards(apps, schema_editor):
    Route = apps.get_model("upstreams", "Route")
    rows = Route.objects.filter(
        send_per_unit__isnull=False, send_value__isnull=False, min_amount__isnull=False
    )
    for route in rows:
        zero = route.send_value - route.min_amount * route.send_per_unit
        route.send_value = zero.quantize(Decimal("0.01"))
        route.save(update_fields=["send_value"])


class Migration(migrations.Migration):
    dependencies = [("upstreams", "0010_field_labels")]

    operations = [migrations.RunPython(forwards, backwards)]
