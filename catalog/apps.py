from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = _("Catalog")

    def ready(self) -> None:
        from django.db.models.signals import m2m_changed

        from catalog import checks  # noqa: F401  (registers the FIELD_ENCRYPTION_KEY check)
        from catalog.cache import catalog_changed, products
        from catalog.models import Country, Operator, Product, Promotion

        def changed(**_kwargs) -> None:
            catalog_changed()

        # Every change the ORM reports renews the catalog's version (catalog/cache.py);
        # bulk ``update()`` calls renew it themselves (catalog.services).
        products.follow(Country, Operator, Product, Promotion)
        m2m_changed.connect(
            changed,
            sender=Promotion.products.through,
            weak=False,
            dispatch_uid="catalog-promotion-products",
        )
