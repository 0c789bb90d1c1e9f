from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _

# Provider fields routing never reads: a save of only these keeps the routes' version (the
# balance task saves every provider every minute; each sync stamps its provider).
UNROUTED = frozenset({"synced_at", "balance_checked_at", "balance_alerted"})


class UpstreamsConfig(AppConfig):
    name = "upstreams"
    verbose_name = _("Upstream providers")

    def ready(self) -> None:
        from catalog.detection import number_lookup_register
        from upstreams.cache import routes
        from upstreams.lookup import number_lookup
        from upstreams.models import Provider, ProviderOperator, Route

        # The catalog (a layer below) asks the providers' number lookup through this
        # callable, passed down once at start-up (catalog/detection.py, docs/catalog.md).
        number_lookup_register(number_lookup)
        # Every write the ORM reports renews the kept routes' version (upstreams/cache.py),
        # but a provider's save of fields routing never reads; the sync's bulk ``update()``
        # renews it itself (upstreams.services).
        routes.follow(Provider, ProviderOperator, Route, quiet={Provider: UNROUTED})
