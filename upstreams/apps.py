from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class UpstreamsConfig(AppConfig):
    name = "upstreams"
    verbose_name = _("Upstream providers")

    def ready(self) -> None:
        # The catalog (a layer below) asks the providers' number lookup through this
        # callable, passed down once at start-up (catalog/detection.py, docs/catalog.md).
        from catalog.detection import number_lookup_register
        from upstreams.lookup import number_lookup

        number_lookup_register(number_lookup)
