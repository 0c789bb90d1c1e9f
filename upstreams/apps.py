from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class UpstreamsConfig(AppConfig):
    name = "upstreams"
    verbose_name = _("Upstream providers")

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from catalog.detection import number_lookup_register
        from upstreams.cache import routes_changed
        from upstreams.lookup import number_lookup
        from upstreams.models import Provider, ProviderOperator, Route

        # The catalog (a layer below) asks the providers' number lookup through this
        # callable, passed down once at start-up (catalog/detection.py, docs/catalog.md).
        number_lookup_register(number_lookup)

        def changed(**_kwargs) -> None:
            routes_changed()

        # Every change the ORM reports renews the routes' version (upstreams/cache.py); bulk
        # ``update()`` calls renew it themselves (upstreams.services).
        for model in (Provider, ProviderOperator, Route):
            post_save.connect(changed, sender=model, weak=False, dispatch_uid=f"routes-{model}")
            post_delete.connect(
                changed, sender=model, weak=False, dispatch_uid=f"routes-del-{model}"
            )
