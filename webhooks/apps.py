from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = _("Webhooks")

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from webhooks.kept_endpoints import endpoints_changed
        from webhooks.models import WebhookEndpoint

        def changed(**_kwargs) -> None:
            endpoints_changed()

        # Every change the ORM reports renews the kept endpoints' version
        # (webhooks.kept_endpoints);
        # the automatic disabling's ``update()`` renews it itself.
        post_save.connect(changed, sender=WebhookEndpoint, weak=False, dispatch_uid="endpoints")
        post_delete.connect(
            changed, sender=WebhookEndpoint, weak=False, dispatch_uid="endpoints-del"
        )
