from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class NetworkConfig(AppConfig):
    name = "network"
    verbose_name = _("Reseller networks")

    def ready(self) -> None:
        # The catalog (a layer below) shows a caller its own prices through this loader,
        # passed down once at start-up (catalog/pricing_hook.py, docs/network.md).
        from catalog.pricing_hook import pricing_hook_register
        from network.prices import catalog_prices

        pricing_hook_register(catalog_prices)
