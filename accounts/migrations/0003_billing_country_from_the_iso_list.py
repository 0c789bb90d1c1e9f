"""Billing countries come from the ISO 3166-1 list (django-countries): codes saved as free
text before ("SP" for Spain, "XX") are cleared rather than kept as countries that do not
exist; the account sees an empty country on its profile and picks it from the list."""

import django_countries.fields
from django.db import migrations


def clear_unknown_countries(apps, schema_editor):
    from django_countries import countries

    billing = apps.get_model("accounts", "BillingProfile")
    for profile in billing.objects.exclude(country=""):
        if str(profile.country).upper() not in countries:
            billing.objects.filter(pk=profile.pk).update(country="")


class Migration(migrations.Migration):
    dependencies = [("accounts", "0002_api_keys")]

    operations = [
        migrations.AlterField(
            model_name="billingprofile",
            name="country",
            field=django_countries.fields.CountryField(
                blank=True, help_text="ISO 3166-1 alpha-2", max_length=2, verbose_name="country"
            ),
        ),
        migrations.RunPython(clear_unknown_countries, migrations.RunPython.noop),
    ]
