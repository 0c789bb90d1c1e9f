# Labels only (verbose_name, help_text): reseller.field_labels.AlterFieldLabels changes
# the migration state a model at a time and nothing in the database.

from django.db import migrations

from reseller.field_labels import AlterFieldLabels


class Migration(migrations.Migration):
    dependencies = [
        ("catalog", "0006_product_kinds_benefits"),
        ("upstreams", "0009_route_field_names"),
    ]

    operations = [
        AlterFieldLabels(
            model_name="pricerule",
            labels={
                "created_at": {"verbose_name": "created at"},
                "updated_at": {"verbose_name": "updated at"},
            },
        ),
        AlterFieldLabels(
            model_name="provider",
            labels={
                "balance": {"verbose_name": "balance"},
                "balance_alerted": {"verbose_name": "balance alerted"},
                "balance_checked_at": {"verbose_name": "balance checked at"},
                "balance_currency": {"verbose_name": "balance currency"},
                "created_at": {"verbose_name": "created at"},
                "updated_at": {"verbose_name": "updated at"},
            },
        ),
        AlterFieldLabels(
            model_name="provideroperator",
            labels={
                "country": {"verbose_name": "country"},
                "mapped_by": {"verbose_name": "mapped by"},
                "name": {"verbose_name": "name"},
                "operator": {"verbose_name": "operator"},
                "provider": {"verbose_name": "provider"},
                "updated_at": {"verbose_name": "updated at"},
                "upstream_id": {"verbose_name": "upstream ID"},
            },
        ),
        AlterFieldLabels(
            model_name="route",
            labels={
                "active": {"verbose_name": "active"},
                "cost": {"verbose_name": "cost"},
                "cost_currency": {"verbose_name": "cost currency"},
                "cost_per_unit": {"verbose_name": "cost per unit"},
                "field_names": {"verbose_name": "field names"},
                "max_amount": {"verbose_name": "max amount"},
                "min_amount": {"verbose_name": "min amount"},
                "product": {"verbose_name": "product"},
                "provider": {"verbose_name": "provider"},
                "required_fields": {"verbose_name": "required fields"},
                "send_currency": {"verbose_name": "send currency"},
                "send_per_unit": {"verbose_name": "send per unit"},
                "send_value": {"verbose_name": "send value"},
                "sku": {"verbose_name": "SKU"},
                "step": {"verbose_name": "step"},
                "updated_at": {"verbose_name": "updated at"},
                "upstream_operator": {"verbose_name": "upstream operator"},
            },
        ),
        AlterFieldLabels(
            model_name="skippedoffer",
            labels={"provider": {"verbose_name": "provider"}},
        ),
    ]
