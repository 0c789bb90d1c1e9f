"""A range route's ``send_value`` is what its ``min_amount`` sends (``Route.send_value_at``,
rounded up to the cent), no longer the line's value at 0. The rows synced before move their
start to ``min_amount``, rounded up; their ``max_amount`` comes down where that start would
send more at the top than they sent before (at most Ding's Maximum: more is refused). The
next catalog sync rewrites them from Ding's own ends."""

from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

from django.db import migrations

CENT = Decimal("0.01")


def forwards(apps, schema_editor):
    Route = apps.get_model("upstreams", "Route")
    rows = Route.objects.filter(
        send_per_unit__isnull=False,
        send_value__isnull=False,
        min_amount__isnull=False,
        max_amount__isnull=False,
    )
    for route in rows:
        per_unit = route.send_per_unit
        # What the top sent before: the line at max_amount, to the nearest cent.
        top = (route.send_value + route.max_amount * per_unit).quantize(
            CENT, rounding=ROUND_HALF_EVEN
        )
        start = route.send_value + route.min_amount * per_unit
        route.send_value = start.quantize(CENT, rounding=ROUND_CEILING)
        if per_unit > 0:
            highest = route.min_amount + (top - route.send_value) / per_unit
            route.max_amount = min(route.max_amount, highest.quantize(CENT, rounding=ROUND_FLOOR))
        route.save(update_fields=["send_value", "max_amount"])


def backwards(apps, schema_editor):
    Route = apps.get_model("upstreams", "Route")
    rows = Route.objects.filter(
        send_per_unit__isnull=False, send_value__isnull=False, min_amount__isnull=False
    )
    for route in rows:
        zero = route.send_value - route.min_amount * route.send_per_unit
        route.send_value = zero.quantize(CENT)
        route.save(update_fields=["send_value"])


class Migration(migrations.Migration):
    dependencies = [("upstreams", "0010_field_labels")]

    operations = [migrations.RunPython(forwards, backwards)]
