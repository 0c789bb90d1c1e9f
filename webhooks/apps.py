from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = _("Webhooks")

    def ready(self) -> None:
        from webhooks.kept_endpoints import endpoints_kept
        from webhooks.models import WebhookEndpoint

        # Every write the ORM reports renews the kept endpoints' version
        # (webhooks/kept_endpoints.py); the automatic disabling's ``update()`` renews it itself.
        endpoints_kept.follow(WebhookEndpoint)
