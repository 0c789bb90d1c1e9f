from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _

# Provider fields routing never reads: a save of only these keeps the routes' version (the
# balance task saves every provider every minute; each sync stamps its provider).
UNROUTED = frozenset({"synced_at", "balance_checked_at", "balance_alerted"})


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

        def changed(sender, update_fields=None, **_kwargs) -> None:
            if sender is Provider and update_fields is not None and update_fields <= UNROUTED:
                return  # a sync's stamp or a balance check that found the same balance
            routes_changed()

        # Every change the ORM reports renews the routes' version (upstreams/cache.py), but a
        # provider's save of fields routing never reads; bulk ``update()`` calls renew it
        # themselves (upstreams.services).
        for model in (Provider, ProviderOperator, Route):
            post_save.connect(changed, sender=model, weak=False, dispatch_uid=f"routes-{model}")
            post_delete.connect(
                changed, sender=model, weak=False, dispatch_uid=f"routes-del-{model}"
            )
